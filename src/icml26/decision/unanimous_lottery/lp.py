"""The linear programs: max-slack (Chebyshev-style) points of halfspaces intersected with the simplex (HiGHS).

For rows w_i and p in Δ_m, the Euclidean distance inside the simplex's plane from p to {w_i·p = 0} is
w_i·p / ||P w_i||, with P w = w - mean(w) 1 the projection on the plane's directions, and the distance to the
facet {p_j = 0} is p_j / sqrt(1 - 1/m). The max-slack point solves

    max_{p, s}  s   s.t.  w_i·p >= s ||P w_i||  (every i),   [p_j >= s sqrt(1 - 1/m)  (every j, "facets")],
                          sum_j p_j = 1,  p >= 0,  s <= 1,

whose optimum s* > 0 iff the region has an interior, s* = 0 iff it is non-empty but flat, s* < 0 iff it is empty.
With the facet rows the point is the Chebyshev centre of the region (the loop's centring rule); without them
it is the lottery that clears every constraint by the most, the quantity certificates speak about.
Coordinates in ``forbidden`` are fixed to 0 (inner constraints with an infinite negative coefficient).

``max_min_value`` is the unnormalised variant, max_p min_i w_i·p: how far the best lottery clears every
constraint in the rows' own scale (what a "thin" certificate's band states).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

__all__ = ["SlackSolution", "max_min_value", "max_slack_point", "plane_norms"]


@dataclass(frozen=True)
class SlackSolution:
    """p: the maximiser (None if even the simplex is excluded); slack: s*; multipliers: one >= 0 dual per row
    (a Farkas combination when s* < 0)."""

    p: np.ndarray | None
    slack: float
    multipliers: np.ndarray


def plane_norms(W: np.ndarray) -> np.ndarray:
    """||P w_i|| for every row (1 where a row is constant: it then has no direction inside the simplex)."""
    norms = np.linalg.norm(W - W.mean(axis=1, keepdims=True), axis=1)
    return np.where(norms > 0, norms, 1.0)


def max_slack_point(W: np.ndarray, *, facets: bool = True, forbidden: np.ndarray | None = None) -> SlackSolution:
    """Solve the max-slack LP above for the rows of ``W`` (k, m), finite entries only."""
    W = np.asarray(W, dtype=float)
    k, m = W.shape
    forbidden = np.zeros(m, bool) if forbidden is None else np.asarray(forbidden, bool)
    allowed = ~forbidden
    if not allowed.any():
        return SlackSolution(None, -np.inf, np.zeros(k))
    if k == 0 and facets and allowed.all():  # the simplex's own centre: no LP needed
        return SlackSolution(np.full(m, 1.0 / m), 1.0 / (m * np.sqrt(1 - 1 / m)) if m > 1 else 1.0, np.zeros(0))
    facet_rows = np.flatnonzero(allowed) if facets and m > 1 else np.zeros(0, np.intp)
    # variables (p_1..p_m, s); rows: -w_i·p + s ||P w_i|| <= 0, then -p_j + s sqrt(1 - 1/m) <= 0
    A = np.zeros((k + facet_rows.size, m + 1))
    A[:k, :m], A[:k, m] = -W, plane_norms(W) if k else 0.0
    A[k + np.arange(facet_rows.size), facet_rows] = -1.0
    A[k:, m] = np.sqrt(1.0 - 1.0 / m)
    c = np.zeros(m + 1)
    c[m] = -1.0
    # no p <= 1 bounds (implied): their duals would spoil the Farkas reading of the multipliers
    bounds = [(0.0, 0.0) if f else (0.0, None) for f in forbidden] + [(None, 1.0)]
    res = linprog(
        c,
        A_ub=A if A.shape[0] else None,
        b_ub=np.zeros(A.shape[0]) if A.shape[0] else None,
        A_eq=np.r_[np.ones(m), 0.0][None, :],
        b_eq=[1.0],
        bounds=bounds,
        method="highs",
    )
    if res.status != 0:
        raise RuntimeError(f"max-slack LP failed: {res.message}")
    p = np.clip(res.x[:m], 0.0, None)
    p[forbidden] = 0.0
    p /= p.sum()  # remove the solver's ~1e-12 infeasibilities: the oracle wants an exact lottery
    multipliers = -np.asarray(res.ineqlin.marginals[:k]) if k else np.zeros(0)
    return SlackSolution(p, float(res.x[m]), np.clip(multipliers, 0.0, None))


def max_min_value(W: np.ndarray) -> tuple[np.ndarray, float]:
    """max over lotteries p of min_i W_i·p, and a maximiser (rows finite; +inf with no rows)."""
    W = np.asarray(W, dtype=float)
    k, m = W.shape
    if k == 0:
        return np.full(m, 1.0 / m), np.inf
    # variables (p_1..p_m, s): -W p + s <= 0, sum p = 1, p >= 0, s free
    res = linprog(
        np.r_[np.zeros(m), -1.0],
        A_ub=np.c_[-W, np.ones(k)],
        b_ub=np.zeros(k),
        A_eq=np.r_[np.ones(m), 0.0][None, :],
        b_eq=[1.0],
        bounds=[(0.0, None)] * m + [(None, None)],
        method="highs",
    )
    if res.status != 0:
        raise RuntimeError(f"max-min LP failed: {res.message}")
    p = np.clip(res.x[:m], 0.0, None)
    return p / p.sum(), float(res.x[m])
