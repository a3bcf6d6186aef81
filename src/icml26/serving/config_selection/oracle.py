"""The switching-aware fluid oracle: an exact LP over request types (HiGHS through scipy).

Primal (fluid) problem, with y_theta_j = w_theta x (probability that theta accepts a type-j request):

    V_mix = max  sum_theta sum_j pi_theta_j r_theta_j y_theta_j
            s.t. sum_theta sum_j pi_theta_j a_theta_j y_theta_j <= b          (prices p >= 0)
                 0 <= y_theta_j <= w_theta,   sum_theta w_theta = 1,  w >= 0.

Its dual is the min-max problem  V_mix = min_{p >= 0} p.b + max_theta g_theta(p),  g_theta(p) = E_theta[(r - p.a)^+],
which we also solve as an LP (epigraph form), so that strong duality is *checked*, not assumed. Fixing w to a
vertex e_theta gives the single-configuration value V_theta; V_mix - max_theta V_theta >= 0 is the switching
(complementarity) gap: the value of mixing configurations over time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import csr_array, hstack, vstack

from icml26.serving.config_selection.instances import Instance

__all__ = ["FluidSolution", "complementarity_gap", "fluid_oracle", "minmax_dual", "saddle_residuals", "single_values"]


@dataclass(frozen=True)
class FluidSolution:
    """value: V (per period); w: mixture; p: bid prices; y[theta][j] = w_theta x P(accept type j | theta)."""

    value: float
    w: np.ndarray
    p: np.ndarray
    y: tuple[np.ndarray, ...]


def _solve(c, A_ub, b_ub, A_eq=None, b_eq=None, bounds=None):  # type: ignore[no-untyped-def]
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds, method="highs")
    if res.status != 0:
        raise RuntimeError(f"LP solver failed: {res.message}")
    return res


def fluid_oracle(instance: Instance, fixed: int | None = None) -> FluidSolution:
    """Solve the switching-aware fluid LP (or, with ``fixed=theta``, the single-configuration LP)."""
    K, d = instance.K, instance.d
    dists = instance.discrete()
    sizes = [dist.n_types for dist in dists]
    n_y = sum(sizes)
    offsets = np.cumsum([0, *sizes])
    # variables: y (n_y), then w (K); maximise reward -> minimise its negative
    reward = np.concatenate([dist.probs * dist.rewards for dist in dists])
    c = np.concatenate([-reward, np.zeros(K)])
    usage = np.concatenate([(dist.probs[:, None] * dist.consumptions) for dist in dists]).T  # (d, n_y)
    budget_rows = hstack([csr_array(usage), csr_array((d, K))])
    # y_theta_j - w_theta <= 0
    link = np.zeros((n_y, K))
    for k in range(K):
        link[offsets[k] : offsets[k + 1], k] = -1.0
    cap_rows = hstack([csr_array(np.eye(n_y)), csr_array(link)])
    A_ub = vstack([budget_rows, cap_rows]).tocsr()
    b_ub = np.concatenate([instance.b, np.zeros(n_y)])
    A_eq = csr_array(np.concatenate([np.zeros(n_y), np.ones(K)])[None, :])
    bounds = [(0, None)] * (n_y + K)
    if fixed is not None:
        if not isinstance(fixed, int | np.integer) or not 0 <= fixed < K:
            raise ValueError(f"fixed must be a configuration index in [0, {K}), got {fixed}")
        bounds[n_y:] = [(1.0, 1.0) if k == fixed else (0.0, 0.0) for k in range(K)]
    res = _solve(c, A_ub, b_ub, A_eq, np.array([1.0]), bounds)
    y_all, w = res.x[:n_y], res.x[n_y:]
    prices = -np.asarray(res.ineqlin.marginals[:d])  # d(-value)/db <= 0: prices are its negatives
    y = tuple(y_all[offsets[k] : offsets[k + 1]] for k in range(K))
    return FluidSolution(value=float(-res.fun), w=np.clip(w, 0, None), p=np.clip(prices, 0, None), y=y)


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
    """min_{0 <= p <= p_max} p.b + max_theta (g_theta(p) + bonus_theta) as an LP: (value, p, w).

    Epigraph form over the types: s_theta_j >= r_theta_j - a_theta_j.p, s >= 0, z >= bonus_theta + pi_theta.s_theta.
    The mixture w is the vector of duals of the K epigraph rows (they sum to one): the optimal primal weights.
    """
    K, d = instance.K, instance.d
    dists = instance.discrete()
    b = instance.b if b is None else np.asarray(b, float)
    bonus = np.zeros(K) if bonus is None else np.asarray(bonus, float)
    if b.shape != (d,) or np.any(b < 0) or not np.all(np.isfinite(b)):
        raise ValueError(f"b must be {d} finite nonnegative budgets, got {b}")
    if bonus.shape != (K,) or not np.all(np.isfinite(bonus)):
        raise ValueError(f"bonus must be {K} finite values, got {bonus}")
    sizes = [dist.n_types for dist in dists]
    n_s = sum(sizes)
    # variables: p (d), z (1), s (n_s)
    c = np.concatenate([b, [1.0], np.zeros(n_s)])
    a_all = np.concatenate([dist.consumptions for dist in dists])
    r_all = np.concatenate([dist.rewards for dist in dists])
    # Rows: -a.p - s <= -r (hinge), then pi_theta.s_theta - z <= -bonus_theta (epigraph). A few types (discrete
    # instances) build faster dense; hundreds of types (snapped continuous requests) need a sparse matrix.
    rows = np.concatenate([np.repeat(np.arange(n_s), d), np.arange(n_s), n_s + np.arange(K)])
    cols = np.concatenate([np.tile(np.arange(d), n_s), d + 1 + np.arange(n_s), np.full(K, d)])
    vals = np.concatenate([-a_all.ravel(), -np.ones(n_s), -np.ones(K)])
    epi_rows = np.concatenate([np.full(dist.n_types, n_s + k) for k, dist in enumerate(dists)])
    rows = np.concatenate([rows, epi_rows])
    cols = np.concatenate([cols, d + 1 + np.arange(n_s)])
    vals = np.concatenate([vals, np.concatenate([dist.probs for dist in dists])])
    shape = (n_s + K, d + 1 + n_s)
    if n_s <= 200:
        A_ub = np.zeros(shape)
        np.add.at(A_ub, (rows, cols), vals)
    else:
        A_ub = csr_array((vals, (rows, cols)), shape=shape)
    b_ub = np.concatenate([-r_all, -bonus])
    bounds = [(0, p_max)] * d + [(None, None)] + [(0, None)] * n_s
    res = _solve(c, A_ub, b_ub, bounds=bounds)
    w = np.clip(-np.asarray(res.ineqlin.marginals[n_s:]), 0, None)
    w = w / w.sum() if w.sum() > 0 else np.full(K, 1.0 / K)
    return float(res.fun), res.x[:d], w


def saddle_residuals(instance: Instance, sol: FluidSolution) -> dict[str, float]:
    """How far ``sol`` is from the primal-dual optimality conditions (all ~0 at the optimum).

    - equilibrium: w puts mass only on argmax_theta g_theta(p) (mass-weighted shortfall from the max);
    - feasibility: excess of the consumption sum_theta pi a y over b (0 if feasible);
    - complementarity: max_j p_j (b_j - consumption_j), with the LP's own (possibly fractional) acceptance y;
    - duality: V_mix - (p.b + max_theta g_theta(p)).
    """
    dists = instance.discrete()
    g = np.array([dist.surplus(sol.p) for dist in dists])
    used = sum((dist.probs * y) @ dist.consumptions for dist, y in zip(dists, sol.y, strict=True))
    return {
        "equilibrium": float(sol.w @ (g.max() - g)),
        "feasibility": float(np.maximum(used - instance.b, 0.0).max()),
        "complementarity": float(np.abs(sol.p * (instance.b - used)).max()),
        "duality": float(abs(sol.value - (sol.p @ instance.b + g.max()))),
    }
