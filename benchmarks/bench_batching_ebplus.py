"""EB+ simulator speed: simulated requests per second of wall time, 10k requests at concurrency 1024.

Two anchors, measured in the same run on the same requests:

- ``naive``: the obvious simulator, one step per loop iteration over per-request Python lists (below; MB and
  EB with exactly the engine's semantics, so its finish times must equal ours bit for bit);
- ``stepwise``: our engine with ``jump=False`` (vectorised, but one decode step per iteration): the ratio to it
  isolates what advancing a decode stretch in one jump buys.

The goal is >= 20x against the naive loop.

    .venv/bin/python benchmarks/bench_batching_ebplus.py
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

import numpy as np

from icml26.serving.batching_ebplus import (
    ClosedLoopWorkload,
    LinearStepCost,
    ServingSimulator,
    kv_capacity_tokens,
    make_scheduler,
)

N_REQUESTS, CONCURRENCY, GPU = 10_000, 1024, "rtx_pro_6000"


def naive_step_loop(cost: Any, capacity: int, requests: Any, policy: str, sched: Any) -> np.ndarray:
    """Finish times from a per-request, one-step-per-iteration loop (closed loop; "mb" or "eb" semantics)."""
    prompt, output = requests.prompt.tolist(), requests.output.tolist()
    n, concurrency = len(prompt), int(requests.concurrency[0])
    computed, generated, target, finish = [0] * n, [0] * n, [0] * n, [float("nan")] * n
    waiting: deque[int] = deque()
    running: list[int] = []
    now, kv, done, issued = 0.0, 0, 0, 0
    cap = sched.running_cap if policy == "mb" else 2048
    phase, to_admit, k_phase, completions = "prefill", -1, 1, 0

    def issue() -> None:
        nonlocal issued
        while issued < n and issued - done < concurrency:
            waiting.append(issued)
            issued += 1

    def decoding() -> list[int]:
        return [r for r in running if computed[r] >= target[r]]

    def preempt() -> int:
        nonlocal kv
        count = 0
        while running and kv + len(decoding()) > capacity:
            r = running.pop()
            kv -= computed[r]
            computed[r] = target[r] = 0
            waiting.appendleft(r)
            count += 1
        return count

    def need(r: int) -> int:
        return target[r] - computed[r] if 0 < target[r] > computed[r] else prompt[r] + generated[r]

    def plan(budget: int, free: int, limit: int, seats: int) -> tuple[list[tuple[int, int]], int]:
        chunks = []
        for r in running:
            if computed[r] < target[r]:
                t = min(need(r), budget)
                if t <= 0 or t > free:
                    break
                chunks.append((r, t))
                budget, free = budget - t, free - t
        admitted = 0
        for r in waiting:
            if admitted >= min(limit, seats - len(running)) or budget <= 0:
                break
            t = min(need(r), budget)
            if t > free:
                break
            chunks.append((r, t))
            budget, free, admitted = budget - t, free - t, admitted + 1
        return chunks, admitted

    issue()
    while done < n:
        chunks: list[tuple[int, int]] = []
        decode = False
        if policy == "mb":
            preempted = preempt()
            n_dec = len(decoding())
            chunks, _ = plan(8192 - n_dec, capacity - kv - n_dec, 0 if preempted else len(waiting), cap)
            decode = n_dec > 0
        else:
            if phase == "decode" and completions < k_phase and decoding():
                preempt()
                decode = bool(decoding())
            if not decode:
                if phase == "decode":
                    phase, to_admit = "prefill", -1
                if to_admit < 0:
                    to_admit = max(0, min(sched.batch_size - len(running), len(waiting)))
                chunks, admitted = plan(8192, capacity - kv, to_admit, 2048)
                to_admit -= admitted
                if not chunks:
                    phase, completions = "decode", 0
                    k_phase = max(1, round(sched.theta_used * max(len(decoding()), 1)))
                    preempt()
                    decode = True
        dec = decoding() if decode else []
        for r, _ in chunks:
            if r not in running:
                waiting.remove(r)
                target[r], computed[r] = prompt[r] + generated[r], 0
                running.append(r)
        n_p = sum(t for _, t in chunks)
        dt = cost.step_time(n_p, len(dec)) if chunks else cost.step_time(np.zeros(1, int), np.array([len(dec)]))[0]
        now = now + float(dt)
        finished = []
        for r, t in chunks:
            computed[r] += t
            if computed[r] == target[r]:
                generated[r] += 1
                if generated[r] >= output[r]:
                    finished.append(r)
        kv += n_p + len(dec)
        for r in dec:
            computed[r] += 1
            generated[r] += 1
            if generated[r] >= output[r]:
                finished.append(r)
        for r in finished:
            finish[r] = now
            kv -= computed[r]
            running.remove(r)
            done += 1
            completions += phase == "decode"
            issue()
    return np.array(finish)


def timed(fn: Any, *args: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - start, out


def main() -> None:
    cost = LinearStepCost.paper_qwen3_8b(GPU)
    capacity = kv_capacity_tokens(GPU, "qwen3_8b")
    print(f"{N_REQUESTS:,} requests, closed loop c = {CONCURRENCY}, Qwen3-8B on {GPU} (paper-calibrated cost)")
    print(f"{'load':>13} {'policy':>6} | {'jumped req/s':>12} | {'stepwise req/s':>14} {'ratio':>6} | "
          f"{'naive req/s':>11} {'ratio':>6}")  # fmt: skip
    for mu_l, mu_o in ((128, 1024), (512, 512)):
        requests = ClosedLoopWorkload(N_REQUESTS, CONCURRENCY, mu_l, mu_o).sample(np.random.default_rng(0))
        for policy in ("mb", "eb"):
            runs = {}
            for jump in (True, False):
                sched = make_scheduler(policy, mu_l, mu_o)
                runs[jump] = timed(ServingSimulator(cost, capacity, sched, jump=jump).run, requests)
            sched = make_scheduler(policy, mu_l, mu_o)
            sched.bind(type("Engine", (), {"capacity": capacity, "max_num_seqs": 2048})(), cost)  # resolve auto N
            naive_s, naive_finish = timed(naive_step_loop, cost, capacity, requests, policy, sched)
            (fast_s, fast), (step_s, step) = runs[True], runs[False]
            assert np.array_equal(fast.finish, step.finish), "jumped and stepwise runs must agree exactly"
            assert np.array_equal(fast.finish, naive_finish), "the naive loop must agree exactly"
            print(
                f"{f'({mu_l}, {mu_o})':>13} {policy:>6} | {N_REQUESTS / fast_s:12,.0f} | {N_REQUESTS / step_s:14,.0f} "
                f"{step_s / fast_s:5.1f}x | {N_REQUESTS / naive_s:11,.0f} {naive_s / fast_s:5.1f}x"
            )


if __name__ == "__main__":
    main()
