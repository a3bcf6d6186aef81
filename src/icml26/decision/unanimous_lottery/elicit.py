"""Learning one stakeholder's halfspace by queries: vertices, then bisection along a spanning tree of edges.

Write the constraint as w·p >= 0 with w = u - τ1 (known only up to a positive scale).

1. **Vertices.** Ask about the m pure lotteries e_1..e_m. A stakeholder who accepts all of them accepts every
   lottery (*vacuous*: no constraint); one who rejects all of them rejects every lottery (*empty*: a proof of
   infeasibility on its own). Otherwise the accepted set A and the rejected set R are both non-empty.
2. **Tree of edges.** Every edge (a, r), a in A, r in R, crosses the boundary exactly once. Take the double star
   a0 -> r for every r in R, then r0 -> a for every a in A minus a0: |R| + |A| - 1 = m - 1 edges that span all
   m vertices. On the edge (1 - t) e_a + t e_r the crossing t* satisfies (1 - t*) w_a + t* w_r = 0.
3. **Bisection.** ⌈log2(1/ε)⌉ queries per edge locate t* in a bracket [lo, hi] of width <= ε, with lo accepted
   and hi rejected. All edges of all stakeholders being elicited are bisected together, one vectorised oracle
   call per step.
4. **Boxes, not point estimates.** Fix the scale by w_a0 = 1. Then, exactly,

       w_r = -(1 - t*)/t*           in [-(1 - lo)/lo, -(1 - hi)/hi]          (edge a0 -> r)
       w_a = |w_r0| s*/(1 - s*)      in [|w_r0|⁻ lo/(1 - lo), |w_r0|⁺ hi/(1 - hi)]  (edge a -> r0)

   so the true w lies in a box [w⁻, w⁺] coordinate by coordinate. Because p >= 0, w⁻·p >= 0 *implies* that
   the stakeholder accepts p (the inner constraint) and w⁺·p >= 0 is *implied by* acceptance (the outer
   constraint). The loop centres on inner constraints, so an elicited stakeholder never rejects again (no
   endless reject/elicit cycles, whatever the margin), and certificates use outer constraints, so an "exact"
   infeasibility certificate is a proof. r0 is the rejected vertex whose crossing is closest to the middle of
   its edge, which keeps the products in the second line well conditioned.

Cost: m + (m - 1)⌈log2(1/ε)⌉ queries for a stakeholder with a cut, m for a vacuous or empty one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from icml26.decision.unanimous_lottery.oracle import Oracle

__all__ = [
    "CUT",
    "EMPTY",
    "VACUOUS",
    "LearnedConstraints",
    "bisection_steps",
    "check_precision",
    "elicit_halfspace",
    "elicit_halfspaces",
    "elicitation_cost",
]

VACUOUS, CUT, EMPTY = 0, 1, 2  # accepts every vertex / a boundary crosses the simplex / rejects every vertex


def check_precision(eps: float) -> float:
    """``eps`` as a float in (0, 1], or a ValueError that says what is wrong."""
    try:
        value = float(eps)
    except (TypeError, ValueError):
        raise ValueError(f"precision eps must be a number in (0, 1], got {eps!r}") from None
    if not (math.isfinite(value) and 0.0 < value <= 1.0):
        raise ValueError(f"precision eps must be in (0, 1] (a bracket width along an edge), got {eps!r}")
    return value


def bisection_steps(eps: float) -> int:
    """⌈log2(1/ε)⌉: halvings of [0, 1] until the bracket is at most ε wide."""
    eps = check_precision(eps)
    return max(0, math.ceil(math.log2(1.0 / eps) - 1e-12))


def elicitation_cost(n_options: int, eps: float) -> int:
    """Worst-case queries to elicit one stakeholder: m vertices and m - 1 bisected edges."""
    return n_options + (n_options - 1) * bisection_steps(eps)


@dataclass(frozen=True)
class LearnedConstraints:
    """What queries revealed about some stakeholders' constraints w_i·p >= 0, scaled so w_i[anchor_i] = 1.

    ``kind[k]`` is VACUOUS, CUT or EMPTY; for CUT rows the true w lies in the box [lower, upper] coordinate-wise
    (``lower`` may hold -inf and ``upper`` +inf where a crossing sits in the first or last bracket of an edge).
    Rows of other kinds hold nan.
    """

    stakeholders: np.ndarray  # (k,) indices into the oracle
    kind: np.ndarray  # (k,) int8
    anchor: np.ndarray  # (k,) the accepted vertex a0 with w = 1 (-1 if not CUT)
    lower: np.ndarray  # (k, m)
    upper: np.ndarray  # (k, m)

    def __len__(self) -> int:
        return int(self.stakeholders.size)

    @property
    def n_options(self) -> int:
        return int(self.lower.shape[1])

    def select(self, mask: ArrayLike) -> LearnedConstraints:
        m = np.asarray(mask)
        return LearnedConstraints(self.stakeholders[m], self.kind[m], self.anchor[m], self.lower[m], self.upper[m])

    def cuts(self) -> LearnedConstraints:
        return self.select(self.kind == CUT)

    @staticmethod
    def concatenate(parts: list[LearnedConstraints], n_options: int) -> LearnedConstraints:
        if not parts:
            return LearnedConstraints(
                np.zeros(0, np.intp), np.zeros(0, np.int8), np.zeros(0, np.intp), *(np.zeros((0, n_options)),) * 2
            )
        return LearnedConstraints(
            *(np.concatenate([getattr(p, f) for p in parts]) for f in ("stakeholders", "kind", "anchor")),
            np.concatenate([p.lower for p in parts]),
            np.concatenate([p.upper for p in parts]),
        )


def _bisect_edges(oracle: Oracle, who: np.ndarray, start: np.ndarray, end: np.ndarray, m: int, steps: int):  # type: ignore[no-untyped-def]
    """Bracket the crossing on every edge (1 - t) e_start + t e_end, t in [0, 1]: start accepted, end rejected.

    One oracle call per step for all edges together. Returns (lo, hi): lo accepted, hi rejected, hi - lo = 2^-steps.
    """
    lo, hi = np.zeros(who.size), np.ones(who.size)
    rows = np.arange(who.size)
    points = np.zeros((who.size, m))
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        points[:] = 0.0
        points[rows, start] = 1.0 - mid
        points[rows, end] += mid
        accepted = oracle.ask_each(who, points)
        lo = np.where(accepted, mid, lo)
        hi = np.where(accepted, hi, mid)
    return lo, hi


def _ratio_interval(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Interval of (1 - t)/t for t in [lo, hi] (decreasing in t; +inf at t = 0)."""
    with np.errstate(divide="ignore"):
        return (1.0 - hi) / hi, np.where(lo > 0, (1.0 - lo) / np.where(lo > 0, lo, 1.0), np.inf)


def elicit_halfspaces(oracle: Oracle, stakeholders: ArrayLike, n_options: int, eps: float) -> LearnedConstraints:
    """Elicit several stakeholders at once (vectorised; the same queries as eliciting them one by one)."""
    who = np.atleast_1d(np.asarray(stakeholders, dtype=np.intp))
    m, k, steps = int(n_options), who.size, bisection_steps(eps)
    if m < 1:
        raise ValueError("the menu is empty: n_options must be >= 1")
    lower, upper = np.full((k, m), np.nan), np.full((k, m), np.nan)
    anchor = np.full(k, -1, dtype=np.intp)
    if k == 0:
        return LearnedConstraints(who, np.zeros(0, np.int8), anchor, lower, upper)

    # 1. the m vertices of every stakeholder, in one call
    vertex_ok = oracle.ask_each(np.repeat(who, m), np.tile(np.eye(m), (k, 1))).reshape(k, m)
    kind = np.where(vertex_ok.all(1), VACUOUS, np.where(vertex_ok.any(1), CUT, EMPTY)).astype(np.int8)
    cut = np.flatnonzero(kind == CUT)
    if cut.size == 0:
        return LearnedConstraints(who, kind, anchor, lower, upper)
    ok = vertex_ok[cut]
    a0 = np.argmax(ok, axis=1)  # first accepted vertex
    anchor[cut] = a0

    # 2-3a. star a0 -> r over every rejected r
    row_r, r = np.nonzero(~ok)
    lo, hi = _bisect_edges(oracle, who[cut[row_r]], a0[row_r], r, m, steps)
    ratio_lo, ratio_hi = _ratio_interval(lo, hi)  # |w_r| / w_a0
    lower[cut[row_r], r], upper[cut[row_r], r] = -ratio_hi, -ratio_lo
    lower[cut, a0] = upper[cut, a0] = 1.0

    # r0: the rejected vertex whose crossing is nearest the middle of its edge (best-conditioned |w_r0|)
    badness = np.full(ok.shape, np.inf)
    badness[row_r, r] = np.abs(0.5 * (lo + hi) - 0.5)
    r0 = np.argmin(badness, axis=1)
    r0_lo, r0_hi = -upper[cut, r0], -lower[cut, r0]

    # 3b. star a -> r0 over every other accepted a
    others = ok.copy()
    others[np.arange(cut.size), a0] = False
    row_a, a = np.nonzero(others)
    if row_a.size:
        s_lo, s_hi = _bisect_edges(oracle, who[cut[row_a]], a, r0[row_a], m, steps)
        inv_lo, inv_hi = _ratio_interval(s_lo, s_hi)  # (1 - s)/s; w_a / |w_r0| = s/(1 - s) is its inverse
        with np.errstate(divide="ignore", invalid="ignore"):
            odds_lo = np.where(inv_hi == np.inf, 0.0, 1.0 / inv_hi)
            odds_hi = np.where(inv_lo == 0, np.inf, 1.0 / np.where(inv_lo == 0, 1.0, inv_lo))
        lower[cut[row_a], a] = r0_lo[row_a] * odds_lo
        upper[cut[row_a], a] = r0_hi[row_a] * odds_hi
    return LearnedConstraints(who, kind, anchor, lower, upper)


def elicit_halfspace(oracle: Oracle, stakeholder: int, n_options: int, eps: float) -> LearnedConstraints:
    """Elicit one stakeholder's constraint to precision ``eps`` (see the module docstring)."""
    return elicit_halfspaces(oracle, [stakeholder], n_options, eps)
