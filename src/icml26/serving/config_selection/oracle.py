"""The switching-aware fluid oracle: an exact LP over request types, or a smooth convex program for atomless ones.

Primal (fluid) problem, with y_theta_j = w_theta x (probability that theta accepts a type-j request):

    V_mix = max  sum_theta sum_j pi_theta_j r_theta_j y_theta_j
            s.t. sum_theta sum_j pi_theta_j a_theta_j y_theta_j <= b          (prices p >= 0)
                 0 <= y_theta_j <= w_theta,   sum_theta w_theta = 1,  w >= 0.

Its dual is the min-max problem  V_mix = min_{p >= 0} p.b + max_theta g_theta(p),  g_theta(p) = E_theta[(r - p.a)^+],
which we also solve as an LP (epigraph form), so that strong duality is *checked*, not assumed. Fixing w to a
vertex e_theta gives the single-configuration value V_theta; V_mix - max_theta V_theta >= 0 is the switching
(complementarity) gap: the value of mixing configurations over time.

Atomless instances (every configuration a :class:`JitteredRequestDist`) have a C^1 piecewise-quadratic g_theta with
gradient -h_theta: the epigraph problem min p.b + z s.t. z >= g_theta(p) is solved by SLSQP, whose multipliers are
the mixture w. The value is certified: for any p, p.b + max g(p) bounds V_mix from above, and the threshold rule
at p mixed by w earns sum w_theta E_theta[r 1{r > p.a}] (a lower bound when it is feasible); ``saddle_residuals``
measures the gap between the two.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csc_array

from icml26.serving.config_selection._lp import Basis, remap_basis, solve_lp
from icml26.serving.config_selection.instances import DiscreteRequestDist, Instance, JitteredRequestDist

CERTIFICATE_TOL = 1e-7  # primal-dual gap accepted from the smooth solver (recorded: ~1e-9 on the atomless instance)

__all__ = [
    "FluidSolution",
    "SaddleWarmStart",
    "complementarity_gap",
    "fluid_oracle",
    "minmax_dual",
    "saddle_lp",
    "saddle_residuals",
    "single_values",
]


@dataclass(frozen=True)
class FluidSolution:
    """value: V (per period); w: mixture; p: bid prices; y[theta][j] = w_theta x P(accept type j | theta)."""

    value: float
    w: np.ndarray
    p: np.ndarray
    y: tuple[np.ndarray, ...]


def _check_fixed(fixed: int | None, K: int) -> None:
    if fixed is not None and (isinstance(fixed, bool) or not isinstance(fixed, int | np.integer) or not 0 <= fixed < K):
        raise ValueError(f"fixed must be a configuration index in [0, {K}), got {fixed!r}")


def fluid_oracle(instance: Instance, fixed: int | None = None) -> FluidSolution:
    """Solve the switching-aware fluid problem (or, with ``fixed=theta``, the single-configuration one)."""
    _check_fixed(fixed, instance.K)
    if instance.is_jittered:
        return _fluid_smooth(instance, fixed)
    return _fluid_lp(instance, fixed)


def _fluid_lp(instance: Instance, fixed: int | None) -> FluidSolution:
    K, d = instance.K, instance.d
    dists = instance.discrete()
    sizes = [dist.n_types for dist in dists]
    n_y = sum(sizes)
    offsets = np.cumsum([0, *sizes])
    # variables: y (n_y), then w (K); maximise reward -> minimise its negative
    reward = np.concatenate([dist.probs * dist.rewards for dist in dists])
    c = np.concatenate([-reward, np.zeros(K)])
    usage = np.concatenate([(dist.probs[:, None] * dist.consumptions) for dist in dists]).T  # (d, n_y)
    # rows: budget (d), y_theta_j - w_theta <= 0 (n_y), sum w = 1 (1)
    owner = np.repeat(np.arange(K), sizes)
    A = np.zeros((d + n_y + 1, n_y + K))
    A[:d, :n_y] = usage
    A[d + np.arange(n_y), np.arange(n_y)] = 1.0
    A[d + np.arange(n_y), n_y + owner] = -1.0
    A[-1, n_y:] = 1.0
    row_lo = np.concatenate([np.full(d + n_y, -np.inf), [1.0]])
    row_hi = np.concatenate([instance.b, np.zeros(n_y), [1.0]])
    w_lo, w_hi = np.zeros(K), np.full(K, np.inf)
    if fixed is not None:
        w_lo[fixed] = w_hi[fixed] = 1.0
        w_hi[np.arange(K) != fixed] = 0.0
    col_lo = np.concatenate([np.zeros(n_y), w_lo])
    col_hi = np.concatenate([np.full(n_y, np.inf), w_hi])
    fun, x, duals, _ = solve_lp(c, csc_array(A), row_lo, row_hi, col_lo, col_hi)
    y_all, w = x[:n_y], x[n_y:]
    prices = -duals[:d]  # d(-value)/db <= 0: prices are its negatives
    y = tuple(y_all[offsets[k] : offsets[k + 1]] for k in range(K))
    return FluidSolution(value=-fun, w=np.clip(w, 0, None), p=np.clip(prices, 0, None), y=y)


def _fluid_smooth(instance: Instance, fixed: int | None) -> FluidSolution:
    dists: tuple[JitteredRequestDist, ...] = instance.dists  # type: ignore[assignment]
    active = range(instance.K) if fixed is None else (fixed,)
    p_max = instance.r_max / float(instance.b.min()) + 1.0  # p.b <= V <= r_max at any optimum
    value, p, w = _smooth_minmax(dists, instance.b, np.zeros(instance.K), p_max, active)
    y = tuple(wk * dist.acceptance(p) for wk, dist in zip(w, dists, strict=True))
    return FluidSolution(value=value, w=w, p=p, y=y)


def _smooth_minmax(
    dists: tuple[JitteredRequestDist, ...], b: np.ndarray, bonus: np.ndarray, p_max: float, active: range | tuple
) -> tuple[float, np.ndarray, np.ndarray]:
    """min_{0 <= p <= p_max} p.b + max_{theta in active} (g_theta(p) + bonus_theta) by SLSQP on the epigraph."""
    from scipy.optimize import minimize

    d, active = b.size, tuple(active)
    grad = np.concatenate([b, [1.0]])
    constraints = [
        {
            "type": "ineq",
            "fun": lambda x, k=k: x[d] - bonus[k] - dists[k].surplus(x[:d]),
            "jac": lambda x, k=k: np.concatenate([dists[k].threshold_consumption(x[:d]), [1.0]]),
        }
        for k in active
    ]
    x0 = np.concatenate([np.zeros(d), [max(dists[k].surplus(np.zeros(d)) + bonus[k] for k in active)]])
    res = minimize(
        lambda x: float(x[:d] @ b + x[d]),
        x0,
        jac=lambda x: grad,
        constraints=constraints,
        bounds=[(0.0, p_max)] * d + [(None, None)],
        method="SLSQP",
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    p = np.clip(res.x[:d], 0.0, p_max)
    multipliers = np.clip(np.asarray(getattr(res, "multipliers", np.zeros(len(active))), float), 0.0, None)
    w = np.zeros(len(dists))
    w[list(active)] = multipliers[: len(active)]
    w = w / w.sum() if w.sum() > 0 else np.eye(len(dists))[active[0]]
    value = float(p @ b + max(dists[k].surplus(p) + bonus[k] for k in active))  # an upper bound at any p
    # SLSQP may stop on a line-search message at the limit of precision: judge it by the certificate instead, the
    # gap to the threshold rule at p mixed by w and that rule's budget excess (both ~1e-9 at the optimum).
    primal = sum(wk * (dist.threshold_reward(p) + bk) for wk, dist, bk in zip(w, dists, bonus, strict=True))
    used = sum(wk * dist.threshold_consumption(p) for wk, dist in zip(w, dists, strict=True))
    if not (abs(value - primal) <= CERTIFICATE_TOL and np.all(used - b <= CERTIFICATE_TOL)):
        raise RuntimeError(
            f"the smooth fluid problem was not solved to {CERTIFICATE_TOL:g} ({res.message}): primal-dual gap "
            f"{value - primal:.3g}, budget excess {float(np.max(used - b)):.3g}"
        )
    return value, p, w


def single_values(instance: Instance) -> np.ndarray:
    """V_theta for every configuration (the best fixed-configuration fluid value is their max)."""
    return np.array([fluid_oracle(instance, fixed=k).value for k in range(instance.K)])


def complementarity_gap(instance: Instance) -> float:
    """V_mix - max_theta V_theta >= 0: what mixing configurations is worth per period."""
    return fluid_oracle(instance).value - float(single_values(instance).max())


def minmax_dual(
    instance: Instance,
    b: np.ndarray | None = None,
    bonus: np.ndarray | None = None,
    p_max: float | None = None,
) -> tuple[float, np.ndarray, np.ndarray]:
    """min_{0 <= p <= p_max} p.b + max_theta (g_theta(p) + bonus_theta): (value, p, w).

    Discrete types: an LP in epigraph form, s_theta_j >= r_theta_j - a_theta_j.p, s >= 0,
    z >= bonus_theta + pi_theta.s_theta; the mixture w is the vector of duals of the K epigraph rows (they sum to
    one): the optimal primal weights. Atomless (jittered) instances: the smooth program of ``fluid_oracle``.
    """
    K, d = instance.K, instance.d
    b = instance.b if b is None else np.asarray(b, float)
    bonus = np.zeros(K) if bonus is None else np.asarray(bonus, float)
    if b.shape != (d,) or np.any(b < 0) or not np.all(np.isfinite(b)):
        raise ValueError(f"b must be {d} finite nonnegative budgets, got {b}")
    if bonus.shape != (K,) or not np.all(np.isfinite(bonus)):
        raise ValueError(f"bonus must be {K} finite values, got {bonus}")
    if p_max is not None and not (np.isfinite(p_max) and p_max > 0):
        raise ValueError(f"p_max must be a positive finite bound, got {p_max}")
    if instance.is_jittered:
        bound = p_max if p_max is not None else instance.r_max / max(float(b.min()), 1e-12) + 1.0
        return _smooth_minmax(instance.dists, b, bonus, bound, range(K))  # type: ignore[arg-type]
    dists = instance.discrete()
    return saddle_lp(
        [dist.probs for dist in dists],
        [dist.rewards for dist in dists],
        [dist.consumptions for dist in dists],
        b,
        bonus,
        p_max,
    )


class SaddleWarmStart:
    """The last optimal basis of one learner's saddle LP, carried to its next re-solve.

    A learner's types only ever get appended (per group), so the previous basis maps onto the new LP: old types
    keep their status, a new type's hinge row starts basic and its slack column at zero, which is again a basis.
    Warm starts cut a re-solve of a few hundred types by about six; the optimum is the same LP's, and the run stays
    deterministic (the basis depends only on the learner's own history).
    """

    def __init__(self) -> None:
        self.sizes: np.ndarray | None = None
        self.basis: Basis | None = None

    def extend(self, sizes: np.ndarray, d: int, K: int) -> Basis | None:
        if self.basis is None or self.sizes is None or self.sizes.size != sizes.size or np.any(sizes < self.sizes):
            return None
        if np.array_equal(sizes, self.sizes):
            return self.basis
        # columns p, z, then one slack per type; rows one hinge per type, then the K epigraph rows
        old_off = np.concatenate([[0], np.cumsum(self.sizes)])
        type_from = np.concatenate(
            [
                np.where(np.arange(n) < m, old_off[g] + np.arange(n), -1)
                for g, (n, m) in enumerate(zip(sizes, self.sizes, strict=True))
            ]
        )
        n_old = int(self.sizes.sum())
        col_from = np.concatenate([np.arange(d + 1), np.where(type_from >= 0, d + 1 + type_from, -1)])
        row_from = np.concatenate([type_from, n_old + np.arange(K)])
        return remap_basis(self.basis, col_from, row_from)


def saddle_lp(
    probs: list[np.ndarray],
    rewards: list[np.ndarray],
    consumptions: list[np.ndarray],
    b: np.ndarray,
    bonus: np.ndarray,
    p_max: float | None,
    owner: np.ndarray | None = None,
    warm: SaddleWarmStart | None = None,
) -> tuple[float, np.ndarray, np.ndarray]:
    """The epigraph LP of :func:`minmax_dual` from raw arrays, one group of types per list entry (the learners'
    hot path: no validation, no distribution objects). Group g belongs to configuration ``owner[g]`` (default g;
    a pooled learner maps several groups to one row), ``warm`` carries the basis between calls.
    Returns (value, p, w)."""
    K, d = bonus.size, b.size
    sizes = np.array([q.size for q in probs])
    owner = np.arange(len(probs)) if owner is None else np.asarray(owner)
    n_s = int(sizes.sum())
    a_all, r_all = np.concatenate(consumptions), np.concatenate(rewards)
    # columns: p (d), z (1), s (n_s). Rows: -a.p - s <= -r (hinge, n_s), then pi_theta.s_theta - z <= -bonus (K).
    # Built column by column (CSC): p_j has -a_ij in every hinge row, z has -1 in every epigraph row, s_i has -1 in
    # its hinge row and pi_i in its configuration's epigraph row.
    hinge_rows = np.arange(n_s)
    epi_row = n_s + np.repeat(owner, sizes)
    indices = np.concatenate(
        [np.tile(hinge_rows, d), n_s + np.arange(K), np.stack([hinge_rows, epi_row], axis=1).ravel()]
    )
    data = np.concatenate(
        [-a_all.T.ravel(), -np.ones(K), np.stack([-np.ones(n_s), np.concatenate(probs)], axis=1).ravel()]
    )
    indptr = np.concatenate([np.arange(d + 1) * n_s, d * n_s + K + 2 * np.arange(n_s + 1)])
    A = csc_array((data, indices, indptr), shape=(n_s + K, d + 1 + n_s))
    c = np.concatenate([b, [1.0], np.zeros(n_s)])
    col_lo = np.concatenate([np.zeros(d), [-np.inf], np.zeros(n_s)])
    col_hi = np.concatenate([np.full(d, np.inf if p_max is None else p_max), np.full(n_s + 1, np.inf)])
    row_hi = np.concatenate([-r_all, -bonus])
    start = warm.extend(sizes, d, K) if warm is not None else None
    fun, x, duals, basis = solve_lp(c, A, np.full(n_s + K, -np.inf), row_hi, col_lo, col_hi, basis=start)
    if warm is not None:
        warm.sizes, warm.basis = sizes, basis
    w = np.clip(-duals[n_s:], 0, None)
    w = w / w.sum() if w.sum() > 0 else np.full(K, 1.0 / K)
    return fun, x[:d], w


def saddle_residuals(instance: Instance, sol: FluidSolution) -> dict[str, float]:
    """How far ``sol`` is from the primal-dual optimality conditions (all ~0 at the optimum).

    - equilibrium: w puts mass only on argmax_theta g_theta(p) (mass-weighted shortfall from the max);
    - feasibility: excess of the consumption sum_theta pi a y over b (0 if feasible);
    - complementarity: max_j p_j (b_j - consumption_j), with the solution's own (possibly fractional) acceptance y;
    - duality: V_mix - (p.b + max_theta g_theta(p)) and, for atomless instances, V_mix minus the reward of the
      threshold rule at p mixed by w (primal-dual gap: the value is certified within it).
    """
    dists: tuple[DiscreteRequestDist | JitteredRequestDist, ...] = (
        instance.dists if instance.is_jittered else instance.discrete()  # type: ignore[assignment]
    )
    g = np.array([dist.surplus(sol.p) for dist in dists])
    used = sum((dist.probs * y) @ dist.consumptions for dist, y in zip(dists, sol.y, strict=True))
    out = {
        "equilibrium": float(sol.w @ (g.max() - g)),
        "feasibility": float(np.maximum(used - instance.b, 0.0).max()),
        "complementarity": float(np.abs(sol.p * (instance.b - used)).max()),
        "duality": float(abs(sol.value - (sol.p @ instance.b + g.max()))),
    }
    if instance.is_jittered:
        primal = sum(wk * dist.threshold_reward(sol.p) for wk, dist in zip(sol.w, dists, strict=True))
        out["primal_gap"] = float(abs(sol.value - primal))
    return out
