"""Learning one stakeholder's halfspace by queries: vertices, a spanning tree of bisected edges, refinement.

Write the constraint as w·p >= 0 with w = u - τ1 (known only up to a positive scale).

1. **Vertices.** Ask about the m pure lotteries e_1..e_m. A stakeholder who accepts all of them accepts every
   lottery (*vacuous*: no constraint); one who rejects all of them rejects every lottery (*empty*: a proof of
   infeasibility on its own). Otherwise the accepted set A and the rejected set R are both non-empty.
2. **Tree of edges.** Every edge (a, r), a in A, r in R, crosses the boundary exactly once, at the t* with
   (1 - t*) w_a + t* w_r = 0 on (1 - t) e_a + t e_r, so that log(w_a/|w_r|) = logit(t*). The tree is a double
   star rooted at the first rejected vertex r0 (|w_r0| > 0: a rejection is strict): first every edge a -> r0,
   then, from the accepted vertex a* that these edges show to be the largest, every edge a* -> r, r != r0.
   That is |A| + |R| - 1 = m - 1 edges spanning the m vertices, and every coefficient's magnitude relative
   to r0 is a product of at most two edge ratios.
3. **Bisection.** ⌈log2(1/ε)⌉ halvings per edge locate t* in a bracket [lo, hi] (lo accepted, hi rejected)
   at most ε wide. All edges of all stakeholders being elicited are bisected together, one vectorised
   oracle call per halving.
4. **Boxes in the scale of the largest coefficient.** Each bracket bounds its edge's log ratio exactly, so
   every log(|w_j| / |w_z|) lies in an interval: the sum of the bounds of the edges on the tree path from z
   to j (the edges the two share cancel). We normalise by the coefficient z of largest estimated magnitude
   (the *anchor*, |w_z| = 1 exactly), so that the true w lies in a box [w⁻, w⁺] coordinate by coordinate.
   Because p >= 0, w⁻·p >= 0 *implies* acceptance (the inner constraint) and w⁺·p >= 0 is *implied by* it
   (the outer constraint).
5. **Refinement of ill-conditioned edges.** A bracket ε wide pins a ratio to relative precision
   ε / (t*(1 - t*)): poor when a crossing sits near a vertex, i.e. when one coefficient dwarfs the other,
   and a path through such an edge can blow a box up (to infinity when the crossing is in an end bracket).
   So while some coordinate's box is wider than WIDTH·ε (WIDTH = 4: what a well-centred edge gives), the
   widest-in-log edge on its path is halved once more (again one oracle call per round for everyone), up to
   MAX_REFINE extra halvings per edge. Every box then is at most 4ε wide in units of the largest
   coefficient, so the inner constraint loses at most 4ε of slack anywhere in the simplex. Only a
   degenerate stakeholder (a coefficient ratio beyond 2^MAX_REFINE / ε, e.g. every accepted vertex exactly
   on the bar) keeps a wider box, and then only on the safe side (an infinite w⁻_j forbids option j).

Cost: m queries for a vacuous or empty stakeholder; for one with a cut, the nominal m + (m - 1)⌈log2(1/ε)⌉
(``elicitation_cost``) plus the refinement halvings, at most m + (m - 1)(⌈log2(1/ε)⌉ + MAX_REFINE)
(``max_elicitation_cost``).
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
    "MAX_REFINE",
    "VACUOUS",
    "WIDTH",
    "LearnedConstraints",
    "bisection_steps",
    "check_precision",
    "elicit_halfspace",
    "elicit_halfspaces",
    "elicitation_cost",
    "max_elicitation_cost",
]

VACUOUS, CUT, EMPTY = 0, 1, 2  # accepts every vertex / a boundary crosses the simplex / rejects every vertex
WIDTH = 4.0  # target box width, in units of ε and of the largest coefficient
MAX_REFINE = 40  # most extra halvings of one edge beyond the nominal ⌈log2(1/ε)⌉


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
    """Nominal queries to elicit one stakeholder with a cut: m vertices and m - 1 edges of ⌈log2(1/ε)⌉ halvings
    (what a well-conditioned stakeholder costs; refinement adds halvings, see ``max_elicitation_cost``)."""
    return n_options + (n_options - 1) * bisection_steps(eps)


def max_elicitation_cost(n_options: int, eps: float) -> int:
    """The most queries one elicitation can cost: every edge refined MAX_REFINE times beyond the nominal."""
    return n_options + (n_options - 1) * (bisection_steps(eps) + MAX_REFINE)


@dataclass(frozen=True)
class LearnedConstraints:
    """What queries revealed about some stakeholders' constraints w_i·p >= 0, scaled so |w_i[anchor_i]| = 1.

    ``kind[k]`` is VACUOUS, CUT or EMPTY; for CUT rows the true scaled w lies in the box [lower, upper]
    coordinate-wise, and ``anchor`` is the coefficient of largest estimated magnitude (accepted or rejected).
    ``lower`` may hold -inf and ``upper`` +inf only for degenerate stakeholders (see the module docstring).
    Rows of other kinds hold nan and anchor -1.
    """

    stakeholders: np.ndarray  # (k,) indices into the oracle
    kind: np.ndarray  # (k,) int8
    anchor: np.ndarray  # (k,) the coefficient with |w| = 1 (-1 if not CUT)
    lower: np.ndarray  # (k, m)
    upper: np.ndarray  # (k, m)

    def __len__(self) -> int:
        return int(self.stakeholders.size)

    @property
    def n_options(self) -> int:
        return int(self.lower.shape[1])

    @property
    def widths(self) -> np.ndarray:
        """(k,) the widest box coordinate of each row (nan for rows that are not CUT)."""
        return (self.upper - self.lower).max(axis=1) if len(self) else np.zeros(0)

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


class _Edges:
    """Brackets [lo, hi] on edges (1 - t) e_acc + t e_rej of several stakeholders; lo accepted, hi rejected.

    Edge e belongs to row ``row[e]`` of the stakeholders being elicited and is the tree edge above node
    ``node[e]``; ``sign[e]`` is +1 when that node is the accepted end (its ratio to the parent is odds(t*)) and
    -1 when it is the rejected end (ratio 1 / odds(t*)).
    """

    def __init__(
        self,
        oracle: Oracle,
        who: np.ndarray,
        rows: np.ndarray,
        acc: np.ndarray,
        rej: np.ndarray,
        node: np.ndarray,
        sign: float,
        m: int,
    ) -> None:
        self.oracle, self.m = oracle, m
        self.who, self.row, self.acc, self.rej, self.node = who[rows], rows, acc, rej, node
        self.sign = np.full(rows.size, sign)
        self.lo, self.hi = np.zeros(rows.size), np.ones(rows.size)
        self.halvings = np.zeros(rows.size, dtype=np.int64)

    def extend(self, other: _Edges) -> None:
        for name in ("who", "row", "acc", "rej", "node", "sign", "lo", "hi", "halvings"):
            setattr(self, name, np.concatenate([getattr(self, name), getattr(other, name)]))

    def halve(self, which: np.ndarray | None = None, times: int = 1) -> None:
        """Halve the brackets of edges ``which`` (all if None) ``times`` times: one oracle call per halving."""
        idx = np.arange(self.who.size) if which is None else which
        if idx.size == 0:
            return
        rows = np.arange(idx.size)
        for _ in range(times):
            mid = 0.5 * (self.lo[idx] + self.hi[idx])
            points = np.zeros((idx.size, self.m))
            points[rows, self.acc[idx]] = 1.0 - mid
            points[rows, self.rej[idx]] += mid
            accepted = self.oracle.ask_each(self.who[idx], points)
            self.lo[idx] = np.where(accepted, mid, self.lo[idx])
            self.hi[idx] = np.where(accepted, self.hi[idx], mid)
            self.halvings[idx] += 1

    def log_ratios(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Bounds and midpoint estimate of log(|w_node| / |w_parent|) = sign * logit(t*) on edges ``idx``."""
        lo, hi = self.lo[idx], self.hi[idx]
        with np.errstate(divide="ignore"):
            a, b = np.log(lo) - np.log1p(-lo), np.log(hi) - np.log1p(-hi)  # logit; ±inf at 0 and 1
        mid = 0.5 * (lo + hi)
        sign = self.sign[idx]
        return np.where(sign > 0, a, -b), np.where(sign > 0, b, -a), sign * (np.log(mid) - np.log1p(-mid))

    def exhausted(self, idx: np.ndarray, max_halvings: int) -> np.ndarray:
        mid = 0.5 * (self.lo[idx] + self.hi[idx])
        return (self.halvings[idx] >= max_halvings) | (mid <= self.lo[idx]) | (mid >= self.hi[idx])


def _boxes(
    parent: np.ndarray, L: np.ndarray, U: np.ndarray, est: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Log-magnitude intervals of every coefficient relative to the anchor (the largest estimate).

    ``parent`` (k, m): each node's parent in the tree (-1 at the root). ``L``, ``U``, ``est`` (k, m): bounds
    and estimate of log(|w_c| / |w_parent(c)|) for every non-root node c (0 at the root). Returns (anchor,
    lower, upper, path): lower/upper (k, m) bound log(|w_j| / |w_anchor|); path (k, j, c) in {-1, 0, 1} is
    the signed incidence of the edges (named by their child node c) on the tree path from the anchor to j.
    """
    k, m = parent.shape
    # root path of node j: the edge above j, and the edge above its parent unless that is the root (depth <= 2)
    incidence = np.zeros((k, m, m), dtype=np.int8)
    s, j = np.nonzero(parent >= 0)
    incidence[s, j, j] = 1
    p = parent[s, j]
    up = parent[s, p] >= 0
    incidence[s[up], j[up], p[up]] = 1
    anchor = np.argmax(np.einsum("kjc,kc->kj", incidence, est), axis=1)
    path = incidence - incidence[np.arange(k), anchor][:, None, :]  # shared edges cancel
    lower = np.where(path > 0, L[:, None, :], np.where(path < 0, -U[:, None, :], 0.0)).sum(axis=2)
    upper = np.where(path > 0, U[:, None, :], np.where(path < 0, -L[:, None, :], 0.0)).sum(axis=2)
    return anchor, lower, upper, path


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
    ok, c = vertex_ok[cut], cut.size
    r0 = np.argmin(ok, axis=1)  # the root: first rejected vertex

    # 2-3a. every accepted a -> r0
    row_a, a = np.nonzero(ok)
    edges = _Edges(oracle, who[cut], row_a, a, r0[row_a], a, 1.0, m)
    edges.halve(times=steps)
    # a*: the accepted vertex with the largest w_a / |w_r0| (largest logit of the crossing)
    score = np.full(ok.shape, -np.inf)
    score[row_a, a] = edges.log_ratios(np.arange(row_a.size))[2]
    a_star = np.argmax(score, axis=1)

    # 2-3b. a* -> every other rejected r
    rejected = ~ok
    rejected[np.arange(c), r0] = False
    row_r, r = np.nonzero(rejected)
    star1 = _Edges(oracle, who[cut], row_r, a_star[row_r], r, r, -1.0, m)
    star1.halve(times=steps)
    edges.extend(star1)

    # the tree: parent of a is r0, parent of r != r0 is a*; edge_of[row, node]: the edge above the node
    parent = np.full((c, m), -1, dtype=np.intp)
    parent[row_a, a] = r0[row_a]
    parent[row_r, r] = a_star[row_r]
    edge_of = np.full((c, m), -1, dtype=np.intp)
    edge_of[edges.row, edges.node] = np.arange(edges.row.size)

    # 4-5. boxes, refined until every coordinate is at most WIDTH·eps wide (or its path is exhausted);
    # each round recomputes only the rows that had a wide coordinate in the previous one
    target, max_halvings = WIDTH * eps, steps + MAX_REFINE
    z = np.zeros(c, dtype=np.intp)
    lo_log, up_log = np.zeros((c, m)), np.zeros((c, m))
    active = np.arange(c)
    while active.size:
        eid = edge_of[active]
        has = eid >= 0
        L, U, est, width_log = (np.zeros(eid.shape) for _ in range(4))
        exhausted = np.ones(eid.shape, dtype=bool)
        L[has], U[has], est[has] = edges.log_ratios(eid[has])
        width_log[has] = U[has] - L[has]
        exhausted[has] = edges.exhausted(eid[has], max_halvings)
        z[active], lo_log[active], up_log[active], path = _boxes(parent[active], L, U, est)
        with np.errstate(invalid="ignore", over="ignore"):
            box_width = np.exp(up_log[active]) - np.exp(lo_log[active])
        candidate = np.where((path != 0) & ~exhausted[:, None, :], width_log[:, None, :], -np.inf)  # (k, j, c)
        best = np.argmax(candidate, axis=2)  # the widest-in-log refinable edge on each coordinate's path
        wide = (box_width > target) & (np.take_along_axis(candidate, best[:, :, None], 2)[:, :, 0] > -np.inf)
        k_wide, j_wide = np.nonzero(wide)
        edges.halve(np.unique(eid[k_wide, best[k_wide, j_wide]]))
        active = active[np.unique(k_wide)]

    sign = np.where(ok, 1.0, -1.0)
    with np.errstate(over="ignore"):
        lo_mag, up_mag = np.exp(lo_log), np.exp(up_log)
    lower[cut] = np.where(ok, lo_mag, -up_mag)
    upper[cut] = np.where(ok, up_mag, -lo_mag)
    lower[cut, z] = upper[cut, z] = sign[np.arange(c), z]  # exact: the scale is fixed by the anchor
    anchor[cut] = z
    return LearnedConstraints(who, kind, anchor, lower, upper)


def elicit_halfspace(oracle: Oracle, stakeholder: int, n_options: int, eps: float) -> LearnedConstraints:
    """Elicit one stakeholder's constraint to precision ``eps`` (see the module docstring)."""
    return elicit_halfspaces(oracle, [stakeholder], n_options, eps)
