"""An event-driven, deterministic, iteration-level serving simulator (numpy).

The engine holds a KV cache of ``C`` tokens. Each request i has a prompt L_i and an output O_i; it waits, is
admitted (its prompt is prefilled, possibly in chunks), then decodes one token per step until O_i tokens exist.
One loop iteration:

1. Move requests that have arrived into the waiting queue (open loop), or issue the next request whenever a
   closed-loop client's request finishes.
2. Ask the scheduler for a ``StepPlan``: prefill chunks (request, tokens) and whether the decoding requests step.
   Before a decode the scheduler calls ``EngineState.preempt_for_decode``, which frees room for one KV slot per
   decoding request by *recompute preemption* (vLLM): the newest running requests lose their KV and go back to
   the front of the queue; when re-admitted they prefill prompt + generated tokens again.
3. A plan with prefill chunks is one step: its time is ``cost.step_time(n_p, n_d, context)``. A chunk that
   completes a prefill samples a token (the first token: TTFT).
4. A decode-only plan is a **stretch**, advanced in one jump. With the sorted remaining lengths of the k
   decoding requests, step j has k_j = #{remaining >= j} requests; the jump length m is the first of: the
   scheduler's q-th completion (``stop_after_completions``), the KV cache running out (used + consumed - freed
   + k_j > C), the next arrival (if the plan wakes on arrivals), ``max_steps``. Step times are one vectorised
   call, times a ``cumsum`` (sequential, so bit-identical to adding them one by one), and every request that
   finishes inside the stretch gets its exact finish time. ``jump=False`` takes one step per iteration: the
   step-by-step reference the tests compare with exactly.

Metrics: steady-state total-token throughput (prompt + output tokens of the requests completed between the
k-th and the (n-k)-th completion, divided by the time between them; k = c in closed loop when n >= 4c, so the
first wave and the drain are cut; n // 10 in open loop; otherwise tokens / makespan), TTFT, TPOT,
preemptions, steps, and the trace of scheduler modes.

References: Kwon et al. 2023 (vLLM, PagedAttention, recompute preemption); Agrawal et al. 2024 (Sarathi-Serve);
Zhong et al. 2024 (DistServe: prefill-decode interference); arXiv 2606.00516 (EB+).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from icml26.serving.batching_ebplus.cost import RooflineStepCost, StepCost
from icml26.serving.batching_ebplus.workload import RequestSet

__all__ = [
    "EngineState",
    "Scheduler",
    "ServingSimulator",
    "SimulationError",
    "SimulationResult",
    "StepPlan",
]

UNTIL_ALL = 1 << 60  # stop_after_completions meaning "until every decoding request has finished"


class SimulationError(RuntimeError):
    """A scheduler returned a plan the engine cannot run (a bug in the scheduler, not in the workload)."""


@dataclass(frozen=True)
class StepPlan:
    """What the scheduler wants next.

    ``prefill``: (request id, tokens) chunks; ids not yet running must be the head of the waiting queue, in
    order (admission). ``decode``: the decoding requests take a step. A plan without prefill is a decode
    stretch that lasts until ``stop_after_completions`` requests finish (or ``max_steps``, the KV limit, an
    arrival when ``wake_on_arrival``). ``mode`` labels the step for the mode trace ("MB" or "EB").
    """

    prefill: tuple[tuple[int, int], ...] = ()
    decode: bool = False
    stop_after_completions: int = 1
    max_steps: int = UNTIL_ALL
    wake_on_arrival: bool = True
    mode: str = "MB"


class Scheduler(Protocol):
    name: str

    def schedule(self, state: EngineState) -> StepPlan | None:
        """The next plan, or None when there is nothing to do until a request arrives."""
        ...

    def on_finish(self, request_id: int, state: EngineState) -> None:
        """Called once per completed request, in completion order."""
        ...


@dataclass
class EngineState:
    """The engine as schedulers see it (they read it and call ``preempt_for_decode``; the simulator writes it)."""

    capacity: int
    prompt: np.ndarray
    output: np.ndarray
    token_budget: int
    max_num_seqs: int
    now: float = 0.0
    kv_used: int = 0
    completed: int = 0
    preemptions: int = 0
    preempted_this_step: bool = False
    discarded_kv: int = 0  # KV tokens thrown away by preemption (recomputed later)
    overflow_events: int = 0  # steps at which the KV cache overflowed (preempt_for_decode had to preempt)
    prefill_completions: int = 0  # prefills that sampled a token (fresh or after a preemption)
    waiting: deque[int] = field(default_factory=deque)
    running: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    prefilling: list[int] = field(default_factory=list)  # running requests whose prefill is incomplete

    def __post_init__(self) -> None:
        n = len(self.prompt)
        self.computed = np.zeros(n, np.int64)  # tokens with KV in the cache (the request's KV footprint)
        self.generated = np.zeros(n, np.int64)  # output tokens sampled so far
        self.target = np.zeros(n, np.int64)  # tokens to prefill at (re-)admission: prompt + generated
        self.preempt_count = np.zeros(n, np.int64)
        self.finished = np.zeros(n, bool)

    @property
    def free_kv(self) -> int:
        return self.capacity - self.kv_used

    @property
    def n_running(self) -> int:
        return len(self.running)

    @property
    def n_decoding(self) -> int:
        return len(self.running) - len(self.prefilling)

    def prefill_need(self, request_id: int) -> int:
        """Tokens still to prefill for a running request, or the full (re)prefill for a waiting one."""
        if self.target[request_id] > 0 and self.computed[request_id] < self.target[request_id]:
            return int(self.target[request_id] - self.computed[request_id])
        return int(self.prompt[request_id] + self.generated[request_id])

    def decoding_ids(self) -> np.ndarray:
        run = self.running
        return run[self.computed[run] >= self.target[run]] if self.prefilling else run

    def preempt_for_decode(self) -> int:
        """Recompute-preempt the newest running requests until every decoding request has a free KV slot."""
        n = 0
        while self.n_running and self.kv_used + self.n_decoding > self.capacity:
            rid = int(self.running[-1])
            self.running = self.running[:-1]
            if rid in self.prefilling:
                self.prefilling.remove(rid)
            self.kv_used -= int(self.computed[rid])
            self.discarded_kv += int(self.computed[rid])
            self.computed[rid] = 0
            self.target[rid] = 0
            self.preempt_count[rid] += 1
            self.waiting.appendleft(rid)
            n += 1
        if n:
            self.preemptions += n
            self.overflow_events += 1
            self.preempted_this_step = True
        return n


@dataclass
class SimulationResult:
    """Per-request times and aggregate metrics of one run."""

    scheduler: str
    arrival: np.ndarray
    first_token: np.ndarray
    finish: np.ndarray
    prompt: np.ndarray
    output: np.ndarray
    preemptions: int
    steps: int
    prefill_tokens: int
    decode_tokens: int
    discarded_kv_tokens: int
    overflow_events: int
    prefill_completions: int
    loop_iterations: int
    mode_trace: list[tuple[float, str]]
    mode_time: dict[str, float]
    window: tuple[float, float]
    throughput: float
    phase: np.ndarray | None = None

    @property
    def makespan(self) -> float:
        return float(self.finish.max())

    @property
    def ttft(self) -> np.ndarray:
        return np.asarray(self.first_token - self.arrival)

    @property
    def tpot(self) -> np.ndarray:
        many = self.output > 1
        return np.asarray((self.finish[many] - self.first_token[many]) / (self.output[many] - 1))

    def summary(self) -> dict[str, float]:
        ttft, tpot = self.ttft, self.tpot
        total = sum(self.mode_time.values()) or 1.0
        return {
            "throughput": self.throughput,
            "ttft_mean": float(ttft.mean()),
            "ttft_p99": float(np.quantile(ttft, 0.99)),
            "tpot_mean": float(tpot.mean()) if tpot.size else 0.0,
            "preemptions": float(self.preemptions),
            "steps": float(self.steps),
            "makespan": self.makespan,
            "eb_time_share": self.mode_time.get("EB", 0.0) / total,
        }


def steady_throughput(finish: np.ndarray, tokens: np.ndarray, warm: int) -> tuple[float, tuple[float, float]]:
    """Tokens of the requests completed between the k-th and the (n-k)-th completion over that time.

    Closed loop: k = c (the first wave and the drain are cut), used when n >= 4c; shorter runs have no steady
    state and fall back to all tokens / makespan. Open loop (``warm=0``): k = n // 10.
    """
    n = len(finish)
    order = np.argsort(finish, kind="stable")
    t = finish[order]
    cum = np.cumsum(tokens[order])
    k = warm if warm > 0 else n // 10
    lo, hi = k - 1, n - 1 - k
    if k < 1 or n < 4 * k or t[hi] <= t[lo]:
        return float(cum[-1] / t[-1]) if t[-1] > 0 else 0.0, (0.0, float(t[-1]))
    return float((cum[hi] - cum[lo]) / (t[hi] - t[lo])), (float(t[lo]), float(t[hi]))


class ServingSimulator:
    """``ServingSimulator(cost, kv_capacity_tokens, scheduler, seed).run(requests)``.

    ``seed`` is recorded for provenance only: the simulator is deterministic and all randomness lives in the
    workload's sample. ``jump=False`` advances decode stretches one step per iteration (the reference loop).
    """

    def __init__(
        self,
        cost: StepCost,
        kv_capacity_tokens: int,
        scheduler: Scheduler,
        seed: int = 0,
        *,
        token_budget: int = 8192,
        max_num_seqs: int = 2048,
        jump: bool = True,
        check_invariants: bool = False,
    ) -> None:
        if not (isinstance(kv_capacity_tokens, int | np.integer) and kv_capacity_tokens > 0):
            raise ValueError(f"kv_capacity_tokens must be a positive integer, got {kv_capacity_tokens!r}")
        if token_budget < 1 or max_num_seqs < 1:
            raise ValueError(f"token_budget and max_num_seqs must be >= 1, got {token_budget}, {max_num_seqs}")
        self.cost = cost
        self.capacity = int(kv_capacity_tokens)
        self.scheduler = scheduler
        self.seed = seed
        self.token_budget = int(token_budget)
        self.max_num_seqs = int(max_num_seqs)
        self.jump = jump
        self.check_invariants = check_invariants
        self._needs_context = isinstance(cost, RooflineStepCost)

    # ------------------------------------------------------------------------------------------------ run
    def run(self, requests: RequestSet | Any, rng: np.random.Generator | None = None) -> SimulationResult:
        """Serve every request; ``requests`` is a RequestSet or a workload (sampled with ``rng`` or ``seed``)."""
        if not isinstance(requests, RequestSet):
            requests = requests.sample(rng if rng is not None else np.random.default_rng(self.seed))
        self._validate(requests)
        n = len(requests)
        s = EngineState(self.capacity, requests.prompt, requests.output, self.token_budget, self.max_num_seqs)
        self.state = s
        arrival = np.full(n, np.nan)
        first = np.full(n, np.nan)
        finish = np.full(n, np.nan)
        closed = requests.closed_loop
        self._issued = 0
        self._arrival = arrival
        if closed:
            self._issue_closed(requests, 0.0)
        else:
            arrival[:] = requests.arrival
        next_arrival = 0
        steps = prefill_tokens = decode_tokens = iterations = 0
        mode_trace: list[tuple[float, str]] = []
        mode_time: dict[str, float] = {}
        bind = getattr(self.scheduler, "bind", None)
        if bind is not None:
            bind(s, self.cost)

        while s.completed < n:
            iterations += 1
            if not closed:
                while next_arrival < n and arrival[next_arrival] <= s.now:
                    s.waiting.append(next_arrival)
                    next_arrival += 1
            s.preempted_this_step = False
            plan = self.scheduler.schedule(s) if (s.n_running or s.waiting) else None
            if plan is None or (not plan.prefill and not (plan.decode and s.n_decoding)):
                if not closed and next_arrival < n:
                    s.now = max(s.now, float(arrival[next_arrival]))
                    continue
                raise SimulationError(
                    f"{self.scheduler.name}: no progress possible at t={s.now:.3f}s with {s.n_running} running, "
                    f"{len(s.waiting)} waiting and {s.free_kv} free KV tokens"
                )
            if not mode_trace or mode_trace[-1][1] != plan.mode:
                mode_trace.append((s.now, plan.mode))
            t0 = s.now
            if plan.prefill:
                done, n_p, n_d = self._single_step(plan, first)
                steps += 1
                prefill_tokens += n_p
                decode_tokens += n_d
            else:
                upcoming = float(arrival[next_arrival]) if (not closed and next_arrival < n) else math.inf
                done, m, n_d = self._decode_stretch(plan, upcoming)
                steps += m
                decode_tokens += n_d
            mode_time[plan.mode] = mode_time.get(plan.mode, 0.0) + (s.now - t0)
            for rid, t_done in done:
                finish[rid] = t_done
                s.completed += 1
                self.scheduler.on_finish(rid, s)
                if closed:
                    self._issue_closed(requests, t_done)
            if self.check_invariants:
                self._check(s)

        tokens = requests.prompt + requests.output
        conc = int(requests.concurrency.max()) if requests.concurrency is not None else 0
        throughput, window = steady_throughput(finish, tokens, conc)
        return SimulationResult(
            scheduler=self.scheduler.name,
            arrival=arrival,
            first_token=first,
            finish=finish,
            prompt=requests.prompt,
            output=requests.output,
            preemptions=s.preemptions,
            steps=steps,
            prefill_tokens=prefill_tokens,
            decode_tokens=decode_tokens,
            discarded_kv_tokens=s.discarded_kv,
            overflow_events=s.overflow_events,
            prefill_completions=s.prefill_completions,
            loop_iterations=iterations,
            mode_trace=mode_trace,
            mode_time=mode_time,
            window=window,
            throughput=throughput,
            phase=requests.phase,
        )

    # ------------------------------------------------------------------------------------------ helpers
    def _validate(self, requests: RequestSet) -> None:
        worst = int(np.argmax(requests.prompt + requests.output))
        need = int(requests.prompt[worst] + requests.output[worst])
        if need > self.capacity:
            raise ValueError(
                f"impossible workload: request {worst} needs {need} KV tokens (prompt {int(requests.prompt[worst])} "
                f"+ output {int(requests.output[worst])}) but the KV capacity is {self.capacity} tokens"
            )

    def _issue_closed(self, requests: RequestSet, t: float) -> None:
        """Issue requests while fewer are in flight than the concurrency of the next one."""
        s, n = self.state, len(requests)
        assert requests.concurrency is not None
        while self._issued < n and self._issued - s.completed < requests.concurrency[self._issued]:
            self._arrival[self._issued] = t
            s.waiting.append(self._issued)
            self._issued += 1

    def _admit(self, rid: int) -> None:
        """Move the head of the queue into the prefilling set (``_single_step`` appends it to ``running``)."""
        s = self.state
        if not s.waiting or s.waiting[0] != rid:
            raise SimulationError(f"{self.scheduler.name}: admitted request {rid} is not at the head of the queue")
        s.waiting.popleft()
        s.target[rid] = s.prompt[rid] + s.generated[rid]
        s.computed[rid] = 0
        s.prefilling.append(rid)

    def _single_step(self, plan: StepPlan, first: np.ndarray) -> tuple[list[tuple[int, float]], int, int]:
        """One prefill-only or mixed step."""
        s = self.state
        decoding = s.decoding_ids() if plan.decode else np.zeros(0, np.int64)
        running_set = set(s.prefilling)
        admitted = []
        for rid, _tokens in plan.prefill:
            if rid not in running_set:
                self._admit(rid)
                running_set.add(rid)
                admitted.append(rid)
        if admitted:  # one concatenation per step, not one np.append per request
            s.running = np.concatenate([s.running, np.asarray(admitted, np.int64)])
        n_p = sum(t for _, t in plan.prefill)
        n_d = len(decoding)
        if s.kv_used + n_p + n_d > s.capacity:
            raise SimulationError(
                f"{self.scheduler.name}: step needs {n_p + n_d} KV tokens but only {s.free_kv} are free"
            )
        ctx = float(s.computed[decoding].sum()) if self._needs_context else 0.0
        s.now = s.now + float(self.cost.step_time(n_p, n_d, ctx))
        done: list[tuple[int, float]] = []
        for rid, tokens in plan.prefill:
            need = int(s.target[rid] - s.computed[rid])
            if not 0 < tokens <= need:
                raise SimulationError(
                    f"{self.scheduler.name}: chunk of {tokens} tokens for request {rid} (needs {need})"
                )
            s.computed[rid] += tokens
            if s.computed[rid] == s.target[rid]:
                s.prefilling.remove(rid)
                s.generated[rid] += 1
                s.prefill_completions += 1
                if math.isnan(first[rid]):
                    first[rid] = s.now
                if s.generated[rid] >= s.output[rid]:
                    done.append((rid, s.now))
        s.kv_used += n_p + n_d
        if n_d:
            s.computed[decoding] += 1
            s.generated[decoding] += 1
            finished = decoding[s.generated[decoding] >= s.output[decoding]]
            done.extend((int(rid), s.now) for rid in finished)
        if done:
            self._retire([rid for rid, _ in done])
        return done, n_p, n_d

    def _retire(self, ids: list[int]) -> None:
        s = self.state
        ids_arr = np.asarray(ids, np.int64)
        s.kv_used -= int(s.computed[ids_arr].sum())
        s.finished[ids_arr] = True
        s.running = s.running[~s.finished[s.running]]

    def _decode_stretch(self, plan: StepPlan, upcoming_arrival: float) -> tuple[list[tuple[int, float]], int, int]:
        """Advance m decode-only steps at once (m = 1 with jump=False); see the module docstring."""
        s = self.state
        dec = s.decoding_ids()
        k = len(dec)
        rem = s.output[dec] - s.generated[dec]
        q = plan.stop_after_completions
        if q >= k:
            horizon = int(rem.max())
        elif q == 1:  # mixed batching: until the first completion
            horizon = int(rem.min())
        else:
            horizon = int(np.partition(rem, q - 1)[q - 1])
        horizon = min(horizon, plan.max_steps, horizon if self.jump else 1)
        if horizon == 1:
            return self._decode_one_step(dec, rem)
        # Only the requests that finish inside the window need sorting (MB stretches end at the first one).
        within = np.nonzero(rem <= horizon)[0]
        fin_pos = within[np.argsort(rem[within], kind="stable")]  # positions in dec, by (remaining, order)
        rem_sorted = rem[fin_pos]
        j = np.arange(1, horizon + 1)
        gone_before = np.searchsorted(rem_sorted, j, side="left")  # requests finished before step j
        k_j = k - gone_before
        # KV: used before step j = used + slots consumed by steps < j - KV freed by requests finished before j.
        ctx_fin = s.computed[dec[fin_pos]]
        freed_at = np.bincount(rem_sorted, weights=ctx_fin + rem_sorted, minlength=horizon + 1)[1:]
        used_before = s.kv_used + (np.cumsum(k_j) - k_j) - (np.cumsum(freed_at) - freed_at)
        over = np.nonzero(used_before + k_j > s.capacity)[0]
        m = horizon if over.size == 0 else int(over[0])
        if m == 0:
            raise SimulationError(f"{self.scheduler.name}: decode planned without a free KV slot per request")
        context: np.ndarray | int = 0
        if self._needs_context:
            csum = np.concatenate([[0], np.cumsum(ctx_fin)])
            total_context = float(s.computed[dec].sum())
            context = (total_context - csum[gone_before[:m]]) + (j[:m] - 1) * k_j[:m]
        dts = np.asarray(self.cost.step_time(np.zeros(m, np.int64), k_j[:m], context), dtype=float)
        times = np.cumsum(np.concatenate([[s.now], dts]))
        if plan.wake_on_arrival and upcoming_arrival < times[-1]:
            m = min(m, int(np.searchsorted(times[1:], upcoming_arrival, side="left")) + 1)
        advance = np.minimum(rem, m)
        s.computed[dec] += advance
        s.generated[dec] += advance
        s.kv_used += int(advance.sum())
        s.now = float(times[m])
        fin = fin_pos[rem_sorted <= m]
        done = [(int(dec[i]), float(times[rem[i]])) for i in fin]
        if done:
            self._retire([rid for rid, _ in done])
        return done, m, int(advance.sum())

    def _decode_one_step(self, dec: np.ndarray, rem: np.ndarray) -> tuple[list[tuple[int, float]], int, int]:
        """A stretch of one decode step (mixed batching at high concurrency): the same arithmetic, fewer calls."""
        s = self.state
        k = len(dec)
        if s.kv_used + k > s.capacity:
            raise SimulationError(f"{self.scheduler.name}: decode planned without a free KV slot per request")
        ctx = float(s.computed[dec].sum()) if self._needs_context else 0
        s.now = s.now + float(self.cost.step_time(0, k, ctx))
        s.computed[dec] += 1
        s.generated[dec] += 1
        s.kv_used += k
        fin = dec[rem == 1]
        done = [(int(rid), s.now) for rid in fin]
        if done:
            self._retire([rid for rid, _ in done])
        return done, 1, k

    def _check(self, s: EngineState) -> None:
        run = s.running
        assert s.kv_used == int(s.computed[run].sum()), "KV accounting drifted"
        assert 0 <= s.kv_used <= s.capacity, f"KV {s.kv_used} outside [0, {s.capacity}]"
        assert len(set(run.tolist())) == len(run), "a request is running twice"
        assert not set(run.tolist()) & set(s.waiting), "a request is both running and waiting"
