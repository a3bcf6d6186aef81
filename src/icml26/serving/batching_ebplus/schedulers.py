"""Schedulers with one interface: ``schedule(state) -> StepPlan`` and ``on_finish(request_id, state)``.

**Mixed batching (MB, vLLM v1-like).** Every step: (1) every decoding request gets one token (recompute-preempt
the newest running requests if their KV slots do not fit); (2) partially prefilled running requests continue,
then waiting requests are admitted first-come-first-served, each taking ``min(prompt left, budget left)``
tokens of the ``token_budget`` (8192, chunked prefill as in Sarathi-Serve), as long as the chunk fits in free
KV and fewer than ``max_num_seqs`` requests run; no admission in a step that preempted (vLLM v1).

**Exclusive batching (EB, the paper's phase machine).** (1) Prefill up to N requests (prefill-only steps,
chunked at the token budget). (2) Decode only, until k of them finish. (3) Prefill min(N - running, waiting)
requests (= the paper's "exactly min(k, waiting)" after a full refill). (4) Back to (2). ``k = theta * n`` with
n the batch at the start of the decode phase (so that at concurrency below N the threshold scales with the
real batch); ``theta="auto"`` is Prop. 1 (geometric hazard p0 = 1/mu_O), ``n="auto"`` is Prop. 3 (CLT, eps);
both auto rules use the workload means given to the constructor (the static EB of the paper is tuned to the
dataset). Steps never mix phases.

**EB+ (online).** Starts as MB. Every ``update_interval`` (100) completions: EMAs (factor 0.3) of mu_L and
mu_O over the latest completions; a weighted least-squares hazard fit h(t) = p0 + eta t over the last
``window`` (500) output lengths (at least 30; p0 >= 1/mean); theta = Prop. 1 + capped IFR correction, smoothed
by an EMA (0.3); Delta(N) from Prop. 4 with the cost model's linear parameters. Switch MB -> EB when
Delta > delta, EB -> MB when Delta < -sticky * delta (leaving EB takes 3 delta), and not within ``cooldown`` (3)
evaluations of the last switch. On MB -> EB, N = min(decoding + waiting, max_num_seqs), further capped (our
addition) by the memory-safe N of the current estimates, which also caps the MB mode's running set: without
it, EB+ overflows the KV cache as EB with N = 1024 does, and its gains would be admission effects. While in
EB, every evaluation hands the smoothed theta to the EB phase machine and re-applies the cap, N = min(N at the
switch, memory-safe N of the current estimates) (both take effect at the next prefill/decode phase).

References: arXiv 2606.00516 (EB, EB+; official code weifang231/eb-vllm); Kwon et al. 2023 (vLLM);
Agrawal et al. 2024 (Sarathi-Serve).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from icml26.serving.batching_ebplus.cost import LinearStepCost, StepCost
from icml26.serving.batching_ebplus.simulator import UNTIL_ALL, EngineState, StepPlan
from icml26.serving.batching_ebplus.theory import (
    corrected_theta,
    crossover_delta,
    fit_hazard,
    memory_safe_batch_size,
    switch_count,
    theta_star,
)

__all__ = ["EBPlusScheduler", "ExclusiveBatchingScheduler", "MixedBatchingScheduler", "make_scheduler"]


def _continue_prefills(state: EngineState, budget: int, free: int) -> tuple[list[tuple[int, int]], int, int]:
    """Chunks for running requests whose prefill is incomplete, oldest first."""
    chunks: list[tuple[int, int]] = []
    for rid in state.prefilling:
        tokens = min(state.prefill_need(rid), budget)
        if tokens <= 0 or tokens > free:
            break
        chunks.append((rid, tokens))
        budget -= tokens
        free -= tokens
    return chunks, budget, free


def _admit_waiting(
    state: EngineState, budget: int, free: int, limit: int, seats: int
) -> tuple[list[tuple[int, int]], int]:
    """FCFS admissions: at most ``limit`` requests and ``seats`` free sequence slots, within budget and KV."""
    chunks: list[tuple[int, int]] = []
    for rid in state.waiting:
        if len(chunks) >= min(limit, seats) or budget <= 0:
            break
        tokens = min(state.prefill_need(rid), budget)
        if tokens > free:
            break
        chunks.append((rid, tokens))
        budget -= tokens
        free -= tokens
    return chunks, budget


@dataclass
class MixedBatchingScheduler:
    """vLLM v1-like mixed batching with chunked prefill (see the module docstring).

    ``max_running`` caps the running set below ``max_num_seqs``: None (stock vLLM: admit while KV is free, and
    preempt when decodes outgrow it), an int, or "auto" = the memory-safe N of Prop. 3 for the given workload
    means (the same N the auto EB uses), so that MB and EB differ only in how they batch, not in admission.
    """

    mean_prompt: float | None = None
    mean_output: float | None = None
    max_running: int | Literal["auto"] | None = None
    eps: float = 0.01
    name: str = "mb"
    running_cap: int = field(default=1 << 30, init=False)

    def __post_init__(self) -> None:
        if self.max_running == "auto" and not (self.mean_prompt and self.mean_output):
            raise ValueError("max_running='auto' needs the workload's mean_prompt and mean_output")
        if isinstance(self.max_running, int) and self.max_running < 1:
            raise ValueError(f"max_running must be >= 1, got {self.max_running}")

    def bind(self, state: EngineState, cost: StepCost) -> None:
        if self.max_running == "auto":
            lin = cost.linear()
            p0 = 1.0 / self.mean_output  # type: ignore[operator]
            theta = theta_star(p0, lin.alpha_p, lin.alpha_d)
            self.running_cap = memory_safe_batch_size(state.capacity, self.mean_prompt, p0, theta, self.eps)  # type: ignore[arg-type]
        elif isinstance(self.max_running, int):
            self.running_cap = self.max_running

    def schedule(self, state: EngineState) -> StepPlan | None:
        preempted = state.preempt_for_decode()
        n_dec = state.n_decoding
        budget = state.token_budget - n_dec
        free = state.free_kv - n_dec
        chunks, budget, free = _continue_prefills(state, budget, free)
        if not preempted:
            seats = min(state.max_num_seqs, self.running_cap) - state.n_running
            more, budget = _admit_waiting(state, budget, free, len(state.waiting), seats)
            chunks += more
        if chunks:
            return StepPlan(prefill=tuple(chunks), decode=n_dec > 0, mode="MB")
        if n_dec == 0:
            return None
        # Nothing can be prefilled: decode until something finishes or arrives (one step after a preemption,
        # since the freed KV may admit someone next step).
        return StepPlan(decode=True, stop_after_completions=1, max_steps=1 if preempted else UNTIL_ALL, mode="MB")

    def on_finish(self, request_id: int, state: EngineState) -> None:
        pass


@dataclass
class ExclusiveBatchingScheduler:
    """Threshold-based exclusive batching: ``k``/``theta`` and ``n`` are "auto" (Props. 1 and 3) or fixed.

    ``mean_prompt`` and ``mean_output`` feed the auto rules; ``theta`` overrides Prop. 1 with a fixed fraction;
    ``k`` (an int) fixes the number of completions per decode phase outright.
    """

    mean_prompt: float | None = None
    mean_output: float | None = None
    k: int | Literal["auto"] = "auto"
    n: int | Literal["auto"] = "auto"
    theta: float | None = None
    eps: float = 0.01
    n_method: Literal["clt", "linear"] = "clt"
    name: str = "eb"
    batch_size: int = field(default=0, init=False)
    theta_used: float = field(default=0.0, init=False)
    phase: str = field(default="prefill", init=False)
    to_admit: int = field(default=-1, init=False)
    k_phase: int = field(default=1, init=False)
    completions_in_phase: int = field(default=0, init=False)
    cycles: int = field(default=0, init=False)  # decode phases started
    overflowed_cycles: int = field(default=0, init=False)  # decode phases that had to preempt (KV overflow)

    def __post_init__(self) -> None:
        if self.k != "auto" and not (isinstance(self.k, int) and self.k >= 1):
            raise ValueError(f"k must be 'auto' or a positive integer, got {self.k!r}")
        if self.n != "auto" and not (isinstance(self.n, int) and self.n >= 1):
            raise ValueError(f"n must be 'auto' or a positive integer, got {self.n!r}")
        if self.theta is not None and not 0 < self.theta < 1:
            raise ValueError(f"theta must be in (0, 1), got {self.theta!r}")
        needs_means = (self.k == "auto" and self.theta is None) or self.n == "auto"
        if needs_means and not (self.mean_prompt and self.mean_output):
            raise ValueError("auto k/theta or n needs the workload's mean_prompt and mean_output")

    def bind(self, state: EngineState, cost: StepCost) -> None:
        """Resolve the auto rules once the engine (capacity, limits) and the cost model are known."""
        lin = cost.linear()
        if self.theta is not None:
            self.theta_used = self.theta
        elif self.k == "auto":
            self.theta_used = theta_star(1.0 / self.mean_output, lin.alpha_p, lin.alpha_d)  # type: ignore[operator]
        n = self.n
        if n == "auto":
            theta = self.theta_used or 0.05
            n = memory_safe_batch_size(state.capacity, self.mean_prompt, 1.0 / self.mean_output, theta, self.eps,  # type: ignore[arg-type, operator]
                                       self.n_method)  # fmt: skip
        self.batch_size = min(int(n), state.max_num_seqs)
        self.reset(self.batch_size)

    def reset(self, batch_size: int) -> None:
        """Start a new cycle with batch size N (used by EB+ on a switch to EB)."""
        self.batch_size = max(1, int(batch_size))
        self.phase, self.to_admit, self.completions_in_phase = "prefill", -1, 0

    def _switch_count(self, n_batch: int) -> int:
        return self.k if isinstance(self.k, int) else switch_count(self.theta_used, max(n_batch, 1))

    def schedule(self, state: EngineState) -> StepPlan | None:
        if self.phase == "decode":
            if self.completions_in_phase < self.k_phase and state.n_decoding > 0:
                self._preempt(state)
                if state.n_decoding > 0:
                    return self._decode_plan()
            self.phase, self.to_admit = "prefill", -1
        if self.to_admit < 0:
            self.to_admit = max(0, min(self.batch_size - state.n_running, len(state.waiting)))
        chunks, budget, free = _continue_prefills(state, state.token_budget, state.free_kv)
        if self.to_admit > 0 and budget > 0:
            seats = state.max_num_seqs - state.n_running
            more, _ = _admit_waiting(state, budget, free, self.to_admit, seats)
            self.to_admit -= len(more)
            chunks += more
        if chunks:
            return StepPlan(prefill=tuple(chunks), decode=False, mode="EB")
        # Prefill phase over (or blocked by KV): decode until k of the batch finish.
        self.phase, self.completions_in_phase = "decode", 0
        self.k_phase = self._switch_count(state.n_decoding)
        self.cycles += 1
        self._overflowed = False
        self._preempt(state)
        return self._decode_plan() if state.n_decoding > 0 else None

    def _preempt(self, state: EngineState) -> None:
        if state.preempt_for_decode() and not getattr(self, "_overflowed", False):
            self._overflowed = True
            self.overflowed_cycles += 1

    def _decode_plan(self) -> StepPlan:
        left = self.k_phase - self.completions_in_phase
        return StepPlan(decode=True, stop_after_completions=left, wake_on_arrival=False, mode="EB")

    def on_finish(self, request_id: int, state: EngineState) -> None:
        if self.phase == "decode":
            self.completions_in_phase += 1


@dataclass
class EBPlusScheduler:
    """EB+: MB or EB, chosen online by the sign of the crossover Delta with hysteresis and cooldown.

    ``mean_prompt`` / ``mean_output`` are optional priors: they set the memory-safe cap of the MB mode before
    the first evaluation; afterwards the cap follows the online estimates. Both modes admit at most the
    memory-safe N (Prop. 3, CLT) of the current estimates, like the ``"mb"`` and ``"eb"`` baselines, so that
    switching changes how requests are batched, not how many are admitted (the notes' switch rule
    N = min(decoding + waiting, max_num_seqs) is applied, then capped by that N).
    """

    mean_prompt: float | None = None
    mean_output: float | None = None
    update_interval: int = 100
    delta: float = 1e-4
    cooldown: int = 3
    sticky: float = 3.0
    window: int = 500
    min_samples: int = 30
    ema: float = 0.3
    eps: float = 0.01
    name: str = "ebplus"
    mode: str = field(default="MB", init=False)
    switches: int = field(default=0, init=False)
    delta_trace: list[tuple[float, float, str]] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        if self.update_interval < 1 or self.window < max(self.min_samples, self.update_interval) or self.cooldown < 0:
            raise ValueError(
                "update_interval >= 1, window >= max(min_samples, update_interval) and cooldown >= 0 are required"
            )
        if not (self.delta >= 0 and self.sticky >= 0 and 0 < self.ema <= 1):
            raise ValueError("delta >= 0, sticky >= 0 and ema in (0, 1] are required")
        self.mb = MixedBatchingScheduler(name="ebplus/mb")
        self.eb = ExclusiveBatchingScheduler(theta=0.05, n=1, name="ebplus/eb")
        self._prompts: deque[int] = deque(maxlen=self.window)
        self._outputs: deque[int] = deque(maxlen=self.window)
        self._since_update = 0
        self._cooldown_left = 0
        self._mu_l = self._mu_o = self._theta = 0.0
        self._safe_n = 1 << 30
        self._switch_n = 1  # the notes' N at the last MB -> EB switch, before the memory-safe cap

    def bind(self, state: EngineState, cost: StepCost) -> None:
        self.cost: LinearStepCost = cost.linear()
        self._capacity = state.capacity
        if self.mean_prompt and self.mean_output:
            p0 = 1.0 / self.mean_output
            theta = theta_star(p0, self.cost.alpha_p, self.cost.alpha_d)
            self._set_safe_n(self.mean_prompt, p0, theta)

    def _set_safe_n(self, mean_prompt: float, p0: float, theta: float) -> None:
        try:
            self._safe_n = memory_safe_batch_size(self._capacity, mean_prompt, p0, theta, self.eps)
        except ValueError:
            self._safe_n = 1
        self.mb.running_cap = self._safe_n

    def schedule(self, state: EngineState) -> StepPlan | None:
        return (self.eb if self.mode == "EB" else self.mb).schedule(state)

    def _candidate_batch(self, state: EngineState) -> int:
        return max(1, min(state.n_decoding + len(state.waiting), state.max_num_seqs, self._safe_n))

    def on_finish(self, request_id: int, state: EngineState) -> None:
        self.eb.on_finish(request_id, state)
        self._prompts.append(int(state.prompt[request_id]))
        self._outputs.append(int(state.output[request_id]))
        self._since_update += 1
        if self._since_update >= self.update_interval:
            self._since_update = 0
            self._evaluate(state)

    def _evaluate(self, state: EngineState) -> None:
        recent = slice(len(self._outputs) - self.update_interval, None)
        mu_l = float(np.mean(list(self._prompts)[recent]))
        mu_o = float(np.mean(list(self._outputs)[recent]))
        first = self._mu_l == 0.0
        self._mu_l = mu_l if first else (1 - self.ema) * self._mu_l + self.ema * mu_l
        self._mu_o = mu_o if first else (1 - self.ema) * self._mu_o + self.ema * mu_o
        if len(self._outputs) < self.min_samples or self._mu_o <= 1:
            return
        n = self.eb.batch_size if self.mode == "EB" else self._candidate_batch(state)
        hazard = fit_hazard(np.fromiter(self._outputs, np.int64), self.min_samples)
        theta = corrected_theta(hazard.p0, hazard.eta, self.cost, max(n, 1))
        self._theta = theta if self._theta == 0.0 else (1 - self.ema) * self._theta + self.ema * theta
        self._set_safe_n(self._mu_l, min(0.5, 1.0 / self._mu_o), self._theta)
        if self.mode == "EB":  # the running EB follows the current estimates from its next decode phase on
            self.eb.theta_used = self._theta
            self.eb.batch_size = max(1, min(self._switch_n, self._safe_n))
        delta = crossover_delta(self.cost, self._mu_l, self._mu_o, max(n, 1), self._theta)
        self.delta_trace.append((state.now, delta, self.mode))
        if self._cooldown_left > 0:
            self._cooldown_left -= 1
            return
        if self.mode == "MB" and delta > self.delta:
            self.mode = "EB"
            self.eb.theta_used = self._theta
            self._switch_n = max(1, min(state.n_decoding + len(state.waiting), state.max_num_seqs))
            self.eb.reset(min(self._switch_n, self._safe_n))
        elif self.mode == "EB" and delta < -self.sticky * self.delta:
            self.mode = "MB"
        else:
            return
        self.switches += 1
        self._cooldown_left = self.cooldown


def make_scheduler(name: str, mean_prompt: float, mean_output: float, **kwargs: float) -> object:
    """Policies by name: "mb" (memory-safe cap), "mb_vllm" (stock: no cap), "eb" (auto theta and N),
    "eb_n1024" (auto theta, N = 1024), "eb_theta<x>" (fixed theta), "ebplus"."""
    if name == "mb":
        return MixedBatchingScheduler(mean_prompt, mean_output, max_running="auto", name="mb")
    if name == "mb_vllm":
        return MixedBatchingScheduler(name="mb_vllm")
    if name == "eb":
        return ExclusiveBatchingScheduler(mean_prompt, mean_output, name="eb")
    if name == "eb_n1024":
        return ExclusiveBatchingScheduler(mean_prompt, mean_output, n=1024, name="eb_n1024")
    if name.startswith("eb_theta"):
        return ExclusiveBatchingScheduler(mean_prompt, mean_output, theta=float(kwargs["theta"]), name=name)
    if name == "ebplus":
        return EBPlusScheduler(mean_prompt, mean_output, **kwargs)  # type: ignore[arg-type]
    raise ValueError(f"unknown scheduler {name!r}; choose mb, eb, eb_n1024, eb_theta*, ebplus")
