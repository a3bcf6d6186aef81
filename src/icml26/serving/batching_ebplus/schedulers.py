"""Schedulers with one interface: ``schedule(state) -> StepPlan`` and ``on_finish(request_id, state)``.

**Mixed batching (MB, vLLM v1-like).** Every step: (1) every decoding request gets one token (recompute-preempt
the newest running requests if their KV slots do not fit); (2) partially prefilled running requests continue,
then waiting requests are admitted first-come-first-served, each taking ``min(prompt left, budget left)``
tokens of the ``token_budget`` (8192, chunked prefill as in Sarathi-Serve), as long as the chunk fits in free
KV and fewer than ``max_num_seqs`` requests run; no admission in a step that preempted (vLLM v1).

**Exclusive batching (EB, the paper's phase machine).** (1) Prefill up to N requests (prefill-only steps,
chunked at the token budget). (2) Decode only, until k of them finish. (3) Prefill min(N - running, waiting)
requests (= the paper's "exactly min(k, waiting)" after a full refill). (4) Back to (2). ``k = max(1,
floor(theta n))`` (Algorithm 1) with n the batch at the start of the decode phase (so that at concurrency below
N the threshold scales with the real batch); ``theta="auto"`` is Prop. 1 (geometric hazard p0 = 1/mu_O),
``n="auto"`` is Prop. 3 (CLT, eps); both auto rules use the workload means given to the constructor (the static
EB of the paper is tuned to the dataset). Steps never mix phases.

**EB+ (online; the official ``auto`` mode).** Starts as MB (stock vLLM v1). Every ``update_interval`` (100)
completions: EMAs (``mean_ema`` 0.2, the official factor for mu_O; ours for mu_L) of mu_L and mu_O over the
latest completions; the official hazard estimator (``theory.fit_hazard``) over the last ``window`` (500) output
lengths (at least 30); theta = Prop. 1 + IFR correction clamped to [0, 5 theta] and theta to [0.01, 0.8],
smoothed by an EMA (0.3); the memory-safe N (Prop. 3) from (mu_L, p0, theta); Delta(N) from Prop. 4 with
``calibration`` (the profiled constants; default the engine's cost) at N = running + waiting (the official
N_obs, read at the evaluation instead of an EMA over steps: our reading, since decode stretches are jumped).
Switch MB -> EB when Delta > delta, EB -> MB when Delta < -sticky * delta (leaving EB takes 3 delta), not within
``cooldown`` (3) evaluations of the last switch and not while N < ``min_batch`` (16; the official drain gate).
On MB -> EB, N = min(decoding + waiting, max_num_seqs); afterwards every evaluation hands the smoothed theta and
N = min(memory-safe N, max_num_seqs) to the EB phase machine (the authors' scripts run with auto-N on), from
its next phase on. The official demand-surge trigger (an extra evaluation when demand doubles) is not modelled.
``memory_safe_cap=True`` (our variant) also caps the N in Delta and the MB mode's running set at the memory-safe
N, so that switching changes how requests are batched, not how many are admitted.

References: arXiv 2606.00516 (EB, EB+; official code weifang231/eb-vllm); Kwon et al. 2023 (vLLM);
Agrawal et al. 2024 (Sarathi-Serve).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

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

    ``calibration`` is the seven-number model EB+ evaluates Delta with (the official code reads a calibration
    file and the profiled beta_MB(r)); None uses the engine's cost model. ``mean_prompt`` / ``mean_output`` are
    optional priors (only used by ``memory_safe_cap`` before the first evaluation). ``memory_safe_cap=True`` is
    our variant: the N in Delta and the MB mode's running set are capped at the memory-safe N (Prop. 3); the
    official rule (default) takes N = running + waiting requests and leaves MB as stock vLLM.
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
    mean_ema: float = 0.2
    min_batch: int = 16
    eps: float = 0.01
    memory_safe_cap: bool = False
    calibration: LinearStepCost | None = None
    name: str = "ebplus"
    mode: str = field(default="MB", init=False)
    switches: int = field(default=0, init=False)
    delta_trace: list[tuple[float, float, str]] = field(default_factory=list, init=False)
    batch_trace: list[int] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        if not all(isinstance(v, int) for v in (self.update_interval, self.window, self.cooldown, self.min_batch)):
            raise ValueError("update_interval, window, cooldown and min_batch must be integers")
        if self.update_interval < 1 or self.window < max(self.min_samples, self.update_interval) or self.cooldown < 0:
            raise ValueError(
                "update_interval >= 1, window >= max(min_samples, update_interval) and cooldown >= 0 are required"
            )
        finite = all(math.isfinite(v) for v in (self.delta, self.sticky, self.ema, self.mean_ema, self.eps))
        if not (finite and self.delta >= 0 and self.sticky >= 0 and 0 < self.ema <= 1 and 0 < self.mean_ema <= 1):
            raise ValueError("delta >= 0, sticky >= 0 and ema, mean_ema in (0, 1] (all finite) are required")
        if self.calibration is not None and not isinstance(self.calibration, LinearStepCost):
            raise ValueError(f"calibration must be a LinearStepCost, got {type(self.calibration).__name__}")
        self.mb = MixedBatchingScheduler(name="ebplus/mb")
        self.eb = ExclusiveBatchingScheduler(theta=0.05, n=1, name="ebplus/eb")
        self._prompts: deque[int] = deque(maxlen=self.window)
        self._outputs: deque[int] = deque(maxlen=self.window)
        self._since_update = 0
        self._cooldown_left = 0
        self._mu_l = self._mu_o = self._theta = 0.0
        self._p0 = 0.0
        self._safe_n = 1 << 30

    def bind(self, state: EngineState, cost: StepCost) -> None:
        self.cost: LinearStepCost = self.calibration if self.calibration is not None else cost.linear()
        self._capacity = state.capacity
        self._max_seqs = state.max_num_seqs
        if self.mean_prompt and self.mean_output:
            p0 = 1.0 / self.mean_output
            self._set_safe_n(self.mean_prompt, p0, theta_star(p0, self.cost.alpha_p, self.cost.alpha_d))

    def _set_safe_n(self, mean_prompt: float, p0: float, theta: float) -> None:
        try:
            self._safe_n = min(memory_safe_batch_size(self._capacity, mean_prompt, p0, theta, self.eps), self._max_seqs)
        except ValueError:
            self._safe_n = 1
        if self.memory_safe_cap:
            self.mb.running_cap = self._safe_n

    def schedule(self, state: EngineState) -> StepPlan | None:
        return (self.eb if self.mode == "EB" else self.mb).schedule(state)

    def _batch(self, state: EngineState) -> int:
        """N in Delta: the demand (running + waiting; official N_obs), capped in the memory-safe variant."""
        demand = state.n_running + len(state.waiting)
        return max(1, min(demand, state.max_num_seqs, self._safe_n) if self.memory_safe_cap else demand)

    def on_finish(self, request_id: int, state: EngineState) -> None:
        self.eb.on_finish(request_id, state)
        self._prompts.append(int(state.prompt[request_id]))
        self._outputs.append(int(state.output[request_id]))
        self._since_update += 1
        if self._since_update >= self.update_interval:
            self._since_update = 0
            self._evaluate(state)

    def _update_estimates(self) -> None:
        recent = slice(len(self._outputs) - self.update_interval, None)
        mu_l = float(np.mean(list(self._prompts)[recent]))
        mu_o = float(np.mean(list(self._outputs)[recent]))
        first = self._mu_o == 0.0
        self._mu_l = mu_l if first else (1 - self.mean_ema) * self._mu_l + self.mean_ema * mu_l
        self._mu_o = mu_o if first else (1 - self.mean_ema) * self._mu_o + self.mean_ema * mu_o
        hazard = fit_hazard(np.fromiter(self._outputs, np.int64), self.min_samples)
        if hazard.reliable or self._p0 == 0.0:  # official: an unreliable fit keeps the previous estimate
            self._p0, self._eta = hazard.p0, hazard.eta

    def _evaluate(self, state: EngineState) -> None:
        if len(self._outputs) < self.min_samples:
            return
        self._update_estimates()
        if self._mu_o <= 1:
            return
        # rho = beta_d N / alpha_d uses the EB batch (official: pd_batch_size_N, the memory-safe N in MB mode)
        n_eb = self.eb.batch_size if self.mode == "EB" else min(self._max_seqs, self._safe_n)
        theta = corrected_theta(self._p0, self._eta, self.cost, max(n_eb, 1))
        self._theta = theta if self._theta == 0.0 else (1 - self.ema) * self._theta + self.ema * theta
        self._set_safe_n(self._mu_l, self._p0, self._theta)
        if self.mode == "EB":  # official with auto-N: the running EB takes theta and N = memory-safe N
            self.eb.theta_used = self._theta
            self.eb.batch_size = max(1, self._safe_n)
        n = self._batch(state)
        delta = crossover_delta(self.cost, self._mu_l, self._mu_o, n, self._theta)
        self.delta_trace.append((state.now, delta, self.mode))
        self.batch_trace.append(n)
        if self._cooldown_left > 0:
            self._cooldown_left -= 1
            return
        if n < self.min_batch:  # official drain gate: Delta ~ 1/N is not informative on a draining engine
            return
        if self.mode == "MB" and delta > self.delta:
            self.mode = "EB"
            self.eb.theta_used = self._theta
            self.eb.reset(max(1, min(state.n_decoding + len(state.waiting), state.max_num_seqs)))
        elif self.mode == "EB" and delta < -self.sticky * self.delta:
            self.mode = "MB"
        else:
            return
        self.switches += 1
        self._cooldown_left = self.cooldown


_POLICIES = ("mb", "mb_vllm", "eb", "eb_n1024", "eb_theta<x>", "ebplus")


def make_scheduler(name: str, mean_prompt: float, mean_output: float, **kwargs: Any) -> Any:
    """Policies by name: "mb" (memory-safe cap), "mb_vllm" (stock: no cap), "eb" (auto theta and N),
    "eb_n1024" (auto theta, N = 1024), "eb_theta<x>" (fixed theta x, e.g. "eb_theta0.1"; or theta=...),
    "ebplus" (kwargs go to ``EBPlusScheduler``)."""
    if not isinstance(name, str):
        raise ValueError(f"scheduler name must be a string, got {name!r}")
    if name == "mb":
        return MixedBatchingScheduler(mean_prompt, mean_output, max_running="auto", name="mb")
    if name == "mb_vllm":
        return MixedBatchingScheduler(name="mb_vllm")
    if name == "eb":
        return ExclusiveBatchingScheduler(mean_prompt, mean_output, name="eb")
    if name == "eb_n1024":
        return ExclusiveBatchingScheduler(mean_prompt, mean_output, n=1024, name="eb_n1024")
    if name.startswith("eb_theta"):
        text = name.removeprefix("eb_theta")
        if text and "theta" in kwargs:
            raise ValueError(f"{name!r} names theta already; do not also pass theta={kwargs['theta']!r}")
        try:
            theta = float(text) if text else float(kwargs["theta"])
        except (KeyError, ValueError, TypeError):
            raise ValueError(f"{name!r}: give the fixed theta in the name (eb_theta0.1) or as theta=...") from None
        return ExclusiveBatchingScheduler(mean_prompt, mean_output, theta=theta, name=name)
    if name == "ebplus":
        return EBPlusScheduler(mean_prompt, mean_output, **kwargs)
    raise ValueError(f"unknown scheduler {name!r}; choose one of {', '.join(_POLICIES)}")
