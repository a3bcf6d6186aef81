"""The convergence bounds, their constants fitted from short runs, the optimal K, and the convexity statement.

Fixed steps T:   B_T(K) = (a + b M / K) / sqrt(T)                    (abstract: O((1 + M/K) / sqrt T))
Fixed FLOPs R, one step costing c0 + K c_e, so T(K) = R / (c0 + K c_e):
                 B_R(K) = (a + b M / K) sqrt((c0 + K c_e) / R)
                 c0 = 0, c_e = 1: a sqrt(K/R) + b M / sqrt(K R)       (abstract: O(sqrt(K/R) + M / sqrt(KR)))

Minimiser (d log B_R / dK has the sign of a c_e K^2 - b M c_e K - 2 b M c0, one positive root, so B_R is unimodal):
    K* = clip( [b M c_e + sqrt((b M c_e)^2 + 8 a b M c_e c0)] / (2 a c_e), 1, M ),   = clip(b M / a, 1, M) at c0 = 0.
With a = b (unit constants) K* = M: the interior optimum comes entirely from the fitted ratio b / a (and c0 > 0 only
moves K* up).

Convexity: B_R is convex in u = sqrt(K) for every constant (at c0 = 0, a u + b M / u; with c0 > 0, a sum of the
norms ||(sqrt(c0), sqrt(c_e) u)|| and ||(sqrt(c0) / u^2, sqrt(c_e) / u)||, convex non-decreasing functions of convex
non-negative ones). In K itself, at c0 = 0, B_R'' > 0 iff K < 3 b M / a: "convex in K" holds on [1, M] only when
b M / a >= M / 3 (else it is unimodal, not convex); with c0 > 0 the K-range is found numerically (:func:`convexity`).

The constants are not in the abstract: :func:`fit_constants` fits them to a quantity Q measured after short
fixed-T runs at several K (the running average of ||grad f||^2, the bound's left side, or the training loss):
Q sqrt(T) = a + b (M / K), by non-negative least squares on relative errors.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "Convexity",
    "FittedConstants",
    "OptimalTopK",
    "bound",
    "bound_fixed_steps",
    "convexity",
    "fit_constants",
    "optimal_k",
    "optimal_topk",
]


def _num_experts(m: Any) -> int:
    if isinstance(m, bool) or not isinstance(m, int | np.integer) or m < 1:
        raise ValueError(f"num_experts (M) must be a positive int, got {m!r}")
    return int(m)


def _k_array(k: Any, m: int) -> np.ndarray:
    ks = np.asarray(k, dtype=float)
    if not np.all(np.isfinite(ks)):
        raise ValueError(f"K must be finite, got {k!r}")
    if np.any(ks < 1):
        raise ValueError(f"K must be >= 1 (at least one expert per token), got {k!r}")
    if np.any(ks > m):
        raise ValueError(f"K must be <= M = {m} (a token cannot use more experts than the layer has), got {k!r}")
    return ks


def _constants(a: float, b: float, c0: float = 0.0, c_e: float = 1.0) -> tuple[float, float, float, float]:
    values = {"a": a, "b": b, "c0": c0, "c_e": c_e}
    for name, v in values.items():
        if isinstance(v, bool) or not isinstance(v, int | float | np.floating | np.integer) or not math.isfinite(v):
            raise ValueError(f"{name} must be a finite number, got {v!r}")
        if v < 0:
            raise ValueError(f"{name} must be >= 0, got {v}")
    if a == 0 and b == 0:
        raise ValueError("a and b cannot both be 0 (the bound would be identically 0)")
    if c_e <= 0:
        raise ValueError(f"c_e (the cost of one active expert) must be > 0, got {c_e}")
    return float(a), float(b), float(c0), float(c_e)


def _out(x: np.ndarray, like: Any) -> Any:
    return float(x) if np.ndim(like) == 0 else x


def bound_fixed_steps(k: Any, num_experts: int, steps: Any, a: float = 1.0, b: float = 1.0) -> Any:
    """(a + b M / K) / sqrt(T): the fixed-T bound on (1/T) sum_t E ||grad f(theta_t)||^2, up to its constants."""
    m = _num_experts(num_experts)
    ks = _k_array(k, m)
    a, b, _, _ = _constants(a, b)
    t = np.asarray(steps, dtype=float)
    if not np.all(np.isfinite(t)) or np.any(t < 1):
        raise ValueError(f"steps (T) must be >= 1, got {steps!r}")
    return _out((a + b * m / ks) / np.sqrt(t), np.broadcast_to(ks, np.broadcast(ks, t).shape))


def bound(
    k: Any, num_experts: int, budget: float, a: float = 1.0, b: float = 1.0, c0: float = 0.0, c_e: float = 1.0
) -> Any:
    """(a + b M / K) sqrt((c0 + K c_e) / R): the fixed-budget bound (the abstract's form at c0 = 0, c_e = 1)."""
    m = _num_experts(num_experts)
    ks = _k_array(k, m)
    a, b, c0, c_e = _constants(a, b, c0, c_e)
    if isinstance(budget, bool) or not isinstance(budget, int | float) or not math.isfinite(budget) or budget <= 0:
        raise ValueError(f"budget (R) must be a positive finite number, got {budget!r}")
    return _out((a + b * m / ks) * np.sqrt((c0 + ks * c_e) / budget), k)


def optimal_k(num_experts: int, a: float = 1.0, b: float = 1.0, c0: float = 0.0, c_e: float = 1.0) -> float:
    """K* in [1, M], the minimiser of :func:`bound` (closed form; continuous K). Unit constants give K* = M."""
    m = _num_experts(num_experts)
    a, b, c0, c_e = _constants(a, b, c0, c_e)
    if a == 0:
        return float(m)  # the bound falls in K everywhere
    if b == 0:
        return 1.0  # the bound grows in K everywhere
    p = b * m * c_e
    root = (p + math.sqrt(p * p + 8.0 * a * b * m * c_e * c0)) / (2.0 * a * c_e)
    return float(min(max(root, 1.0), m))


@dataclass(frozen=True)
class Convexity:
    """Shape of the fixed-budget bound on K in [1, M].

    ``unimodal`` is always true (one sign change of the derivative, see the module docstring); ``convex_in_sqrt_k``
    and ``convex_in_k`` say whether the bound is convex on all of [1, M] in u = sqrt(K) and in K;
    ``convex_in_k_below`` is the K below which it is convex in K (3 b M / a at c0 = 0; numerical otherwise).
    """

    unimodal: bool
    convex_in_sqrt_k: bool
    convex_in_k: bool
    convex_in_k_below: float
    method: str


def convexity(num_experts: int, a: float = 1.0, b: float = 1.0, c0: float = 0.0, c_e: float = 1.0) -> Convexity:
    """Check the abstract's "convex in K" on [1, M]: exactly at c0 = 0, on a fine grid (second differences) else."""
    m = _num_experts(num_experts)
    a, b, c0, c_e = _constants(a, b, c0, c_e)
    if c0 == 0:
        below = math.inf if a == 0 else 3.0 * b * m / a
        return Convexity(True, True, below >= m, below, "exact (c0 = 0)")
    k = np.linspace(1.0, float(m), 4001)
    fk = (a + b * m / k) * np.sqrt(c0 + k * c_e)
    second = fk[2:] - 2 * fk[1:-1] + fk[:-2]
    bad = np.nonzero(second < -1e-12 * float(np.max(fk)))[0]
    below = math.inf if bad.size == 0 else float(k[bad[0] + 1])
    # convex in sqrt(K): proven for every constant (module docstring); the K-range is numerical
    return Convexity(True, True, bad.size == 0, below, "K-range numerical (second differences on 4001 points)")


@dataclass(frozen=True)
class FittedConstants:
    """a and b of Q sqrt(T) = a + b (M / K), fitted by non-negative least squares on relative errors."""

    a: float
    b: float
    num_experts: int
    n_points: int
    relative_rmse: float

    def optimal_k(self, c0: float = 0.0, c_e: float = 1.0) -> float:
        return optimal_k(self.num_experts, self.a, self.b, c0, c_e)


Record = Mapping[str, Any] | Sequence[Any]


def _parse(records: Iterable[Record]) -> np.ndarray:
    rows = []
    for r in records:
        if isinstance(r, Mapping):
            missing = [key for key in ("k", "steps", "value") if key not in r]
            if missing:
                raise ValueError(f"a record needs 'k', 'steps' and 'value'; {dict(r)} lacks {missing}")
            rows.append((r["k"], r["steps"], r["value"]))
        else:
            if len(r) != 3:
                raise ValueError(f"a record is (k, steps, value) or a mapping with those keys, got {r!r}")
            rows.append(tuple(r))
    arr = np.asarray(rows, dtype=float).reshape(-1, 3)
    return arr


def fit_constants(records: Iterable[Record], num_experts: int) -> FittedConstants:
    """Fit a, b >= 0 of the fixed-T bound to measurements after short runs.

    ``records``: (k, steps, value) tuples or mappings with those keys, ``value`` the bound's quantity after
    ``steps`` steps at K = ``k`` (the running average of ||grad f||^2 or the training loss; positive). At least two
    distinct K are needed (three or more make the fit checkable: ``relative_rmse``).
    """
    m = _num_experts(num_experts)
    arr = _parse(records)
    if arr.shape[0] == 0:
        raise ValueError("fit_constants needs measurements; got none")
    ks, steps, values = arr.T
    _k_array(ks, m)
    if not np.all(np.isfinite(values)) or np.any(values <= 0):
        raise ValueError(f"every value must be positive and finite (NaN or <= 0 found): {values.tolist()}")
    if not np.all(np.isfinite(steps)) or np.any(steps < 1):
        raise ValueError(f"steps must be >= 1, got {steps.tolist()}")
    if np.unique(ks).size < 2:
        raise ValueError(f"fit_constants needs runs at two or more distinct K, got K = {np.unique(ks).tolist()}")
    from scipy.optimize import nnls

    y = values * np.sqrt(steps)
    design = np.column_stack([np.ones_like(ks), m / ks]) / y[:, None]
    (a, b), _ = nnls(design, np.ones_like(y))
    rel = (a + b * m / ks) / y - 1.0
    return FittedConstants(float(a), float(b), m, int(arr.shape[0]), float(np.sqrt(np.mean(rel**2))))


@dataclass(frozen=True)
class OptimalTopK:
    """The answer of :func:`optimal_topk`: the continuous K*, the best allowed integer K, the fitted constants,
    the cost split and the convexity check (scipy-style result object)."""

    k: int
    k_star: float
    constants: FittedConstants
    c0: float
    c_e: float
    candidates: tuple[int, ...]
    convexity: Convexity

    @property
    def a(self) -> float:
        return self.constants.a

    @property
    def b(self) -> float:
        return self.constants.b


def optimal_topk(
    runs: Iterable[Record],
    num_experts: int,
    *,
    config: Any = None,
    c0: float | None = None,
    c_e: float | None = None,
    candidates: Iterable[int] | None = None,
) -> OptimalTopK:
    """How many experts per token to train with under a fixed FLOP budget, from short fixed-T runs.

    1. fit a, b to the runs (:func:`fit_constants`); 2. take the cost of one step per token as c0 + K c_e, from
    ``config`` (a :class:`~icml26.llm.moe_topk.MoEConfig`: exact FLOPs) or given directly (default c0 = 0,
    c_e = 1, the abstract's form); 3. K* = :func:`optimal_k`; 4. ``k``: the allowed K (``candidates``, default
    1..M) with the smallest bound (the bound is unimodal, so this is next to K*).
    """
    m = _num_experts(num_experts)
    if config is not None:
        if c0 is not None or c_e is not None:
            raise ValueError("give either config or c0/c_e, not both")
        from icml26.llm.moe_topk.flops import flops_per_token

        if config.num_experts != m:
            raise ValueError(f"config.num_experts = {config.num_experts} disagrees with num_experts = {m}")
        cost = flops_per_token(config, 1)
        c0, c_e = cost.c0, cost.c_e
    c0 = 0.0 if c0 is None else c0
    c_e = 1.0 if c_e is None else c_e
    fitted = fit_constants(runs, m)
    ks = tuple(range(1, m + 1)) if candidates is None else tuple(sorted({int(k) for k in candidates}))
    if not ks:
        raise ValueError("candidates is empty")
    _k_array(ks, m)
    values = bound(np.asarray(ks, dtype=float), m, 1.0, fitted.a, fitted.b, c0, c_e)
    return OptimalTopK(
        k=int(ks[int(np.argmin(values))]),
        k_star=fitted.optimal_k(c0, c_e),
        constants=fitted,
        c0=float(c0),
        c_e=float(c_e),
        candidates=ks,
        convexity=convexity(m, fitted.a, fitted.b, c0, c_e),
    )
