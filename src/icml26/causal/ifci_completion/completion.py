"""Enumeration completion (Zhou & Kocaoglu 2026, method (i)): the exact I-PAG from an I-FCI output.

Every member of the interventional equivalence class is compatible with the (sound) I-FCI PAG, so:

1. **Resolve** each circle to a tail or an arrowhead (an ``o-o`` edge has three resolutions: tail-tail is an
   undirected edge, excluded without selection bias).
2. **Keep** a candidate iff it is
   - a valid MAG: no directed cycle, no almost-directed cycle (``a <-> b`` with ``a`` an ancestor of ``b``), and
     maximal (non-adjacent pairs are m-separated by ``An({a, b}) \\ {a, b}``, i.e. no inducing path);
   - Markov equivalent to the class over ``V u F``: its FCI PAG (skeleton + ancestral sepsets, Zhang's rules)
     equals the FCI PAG of the learned skeleton and sepsets (a PAG identifies its Markov class);
   - realisable as an I-MAG: some ADMG made of the candidate's V-part plus a set of bows (``a -> b`` and
     ``a <-> b``), with each F-node pointing only into ``S_F``, has exactly this MAG. Bows do not change
     ancestry, and only add inducing paths, so only bows between ancestors of an F-neighbour the plain V-part
     cannot reach are tried, by an exact search over the maximal harmless sets (no cap: see
     :func:`is_realisable`).
3. **Intersect**: a mark is kept iff every surviving candidate has it; otherwise it is a circle.

Sound and complete, but exponential in the number of circles: ``max_circles`` caps it, and a skipped graph is
reported as such (the input is returned unchanged).

References
----------
- Z. Zhou, M. Kocaoglu, ICML 2026; T. Richardson, P. Spirtes, Annals of Statistics 2002 (MAGs, inducing paths).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations, product

import numpy as np

from icml26.causal.ifci_completion.admg import ADMG, members
from icml26.causal.ifci_completion.ifci import fci_pag_from_sepsets
from icml26.causal.ifci_completion.orientation import orient
from icml26.causal.ifci_completion.pag import ARROW, CIRCLE, NONE, PAG, TAIL


@dataclass
class CompletionReport:
    """What the enumeration did: candidates tried, class members found, and whether the cap skipped it."""

    circles_in: int
    candidates: int = 0
    members: int = 0
    skipped: bool = False


def mag_as_admg(mag: PAG, keep_f: bool = True) -> ADMG:
    """A circle-free MAG read as an ADMG (``->`` directed, ``<->`` bidirected). Raises ValueError if cyclic."""
    m = mag.marks
    directed = (m == ARROW) & (m.T == TAIL)
    bidirected = (m == ARROW) & (m.T == ARROW)
    return ADMG(list(mag.names), directed, bidirected, dict(mag.f_targets) if keep_f else {})


def is_valid_mag(mag: PAG) -> bool:
    """Ancestral (acyclic, no almost-directed cycle, no undirected edge) and maximal."""
    m = mag.marks
    if (m == CIRCLE).any() or ((m == TAIL) & (m.T == TAIL)).any():
        return False
    try:
        g = mag_as_admg(mag)
    except ValueError:
        return False
    anc_of = [g.ancestors(1 << v) for v in range(g.n)]
    for a, b in zip(*np.nonzero(np.triu(g.bidirected)), strict=True):
        if anc_of[b] >> a & 1 or anc_of[a] >> b & 1:
            return False
    for a, b in combinations(range(g.n), 2):
        if m[a, b] == NONE:
            z = (anc_of[a] | anc_of[b]) & ~((1 << a) | (1 << b))
            if not g.m_separated(a, b, z):
                return False  # an inducing path between non-adjacent nodes: not maximal
    return True


def fci_pag_of_mag(mag: PAG) -> PAG:
    """The FCI PAG (Markov class over all nodes, no F knowledge) of a valid MAG, via ancestral sepsets."""
    g = mag_as_admg(mag)
    anc_of = [g.ancestors(1 << v) for v in range(g.n)]
    sepsets = {
        (a, b): frozenset(members((anc_of[a] | anc_of[b]) & ~((1 << a) | (1 << b))))
        for a, b in combinations(range(g.n), 2)
        if mag.marks[a, b] == NONE
    }
    skeleton = np.where(mag.marks != NONE, CIRCLE, NONE)
    return orient(PAG(skeleton, list(mag.names), dict(mag.f_targets), sepsets))


def is_realisable(mag: PAG) -> bool:
    """Whether ``mag`` is the MAG of some ADMG made of its V-part, a set of bows, and ``F -> S_F`` for each F-node.

    Exact, with no cap on the bows: adding a bidirected edge never changes ancestry and never removes an inducing
    path, so the MAG's adjacencies grow monotonically with the set of bows. A search over the candidate bows
    therefore only needs the *maximal* sets that create no forbidden adjacency: at each step, if all the
    remaining bows together are harmless, they are the best this branch can do (one check decides it);
    otherwise branch on the next bow (with it, if it is harmless so far; without it).
    """
    m, f_targets = mag.marks, mag.f_targets
    n = mag.n
    observed = [v for v in range(n) if v not in f_targets]
    directed = (m == ARROW) & (m.T == TAIL)
    bidirected = (m == ARROW) & (m.T == ARROW)
    for f in f_targets:
        directed[f, :] = False
        directed[:, f] = False
        bidirected[f, :] = bidirected[:, f] = False
        for s in f_targets[f]:
            if m[f, s] == NONE:
                return False
            directed[f, s] = True
    base = ADMG(list(mag.names), directed, bidirected, dict(f_targets))
    anc_of = [base.ancestors(1 << v) for v in range(n)]
    # marks: bows do not change ancestry, so MAG marks are fixed by the base graph
    for a, b in zip(*np.nonzero(m), strict=True):
        want_tail_at_b = m[a, b] == TAIL
        if want_tail_at_b != bool(anc_of[a] >> b & 1):
            return False
    f_pairs = [(f, y) for f in f_targets for y in observed]
    required = [(f, y) for f, y in f_pairs if m[f, y]]
    forbidden = [(f, y) for f, y in f_pairs if not m[f, y]] + [
        (a, b) for a, b in combinations(observed, 2) if m[a, b] == NONE
    ]

    def with_bows(chosen: Iterable[tuple[int, int]]) -> ADMG:
        b2 = bidirected.copy()
        for a, b in chosen:
            b2[a, b] = b2[b, a] = True
        return ADMG(list(mag.names), directed, b2, dict(f_targets))

    def harmless(g: ADMG) -> bool:
        return not any(g.adjacent_in_mag(a, b) for a, b in forbidden)

    def complete(g: ADMG) -> bool:
        return all(g.adjacent_in_mag(f, y) for f, y in required)

    if not harmless(base):
        return False  # bows only add adjacencies
    if complete(base):
        return True
    missing = [y for f, y in required if not base.adjacent_in_mag(f, y)]
    reach = 0
    for y in missing:
        reach |= anc_of[y]
    bows = [
        (int(a), int(b))
        for a, b in zip(*np.nonzero(directed), strict=True)
        if a not in f_targets and reach >> int(a) & 1 and reach >> int(b) & 1
    ]

    def search(chosen: tuple[tuple[int, int], ...], rest: tuple[tuple[int, int], ...]) -> bool:
        everything = with_bows((*chosen, *rest))
        if harmless(everything):
            return complete(everything)  # the largest set of this branch: no subset does better
        if not rest:
            return False
        head, tail = rest[0], rest[1:]
        if harmless(with_bows((*chosen, head))) and search((*chosen, head), tail):
            return True
        return search(chosen, tail)

    return search((), tuple(bows))


def _resolutions(pag: PAG) -> tuple[list[tuple[int, int]], list[list[tuple[int, int]]]]:
    """Edges with a circle and, per edge, the admissible (mark at b, mark at a) pairs."""
    m = pag.marks
    edges, options = [], []
    for a, b in pag.edges():
        at_b, at_a = int(m[a, b]), int(m[b, a])
        if CIRCLE not in (at_a, at_b):
            continue
        choices_b = (TAIL, ARROW) if at_b == CIRCLE else (at_b,)
        choices_a = (TAIL, ARROW) if at_a == CIRCLE else (at_a,)
        pairs = [(x, y) for x in choices_b for y in choices_a if not (x == TAIL and y == TAIL)]
        edges.append((a, b))
        options.append(pairs)
    return edges, options


def complete_by_enumeration(pag: PAG, max_circles: int = 14) -> tuple[PAG, CompletionReport]:
    """The endpoint-wise intersection of all realisable MAGs in the class of ``pag`` (needs its sepsets)."""
    if any(not t for t in pag.f_targets.values()):
        raise ValueError("the completion checks realisability with F -> S_F: it needs known (non-empty) targets")
    report = CompletionReport(circles_in=pag.n_circles())
    if report.circles_in == 0:
        report.members = 1
        return pag.copy(), report
    if report.circles_in > max_circles:
        report.skipped = True
        return pag.copy(), report
    if not pag.sepsets and any(pag.marks[a, b] == NONE for a, b in combinations(range(pag.n), 2)):
        raise ValueError("complete_by_enumeration needs the sepsets recorded by I-FCI (pag.sepsets)")
    reference = fci_pag_from_sepsets(pag).marks
    edges, options = _resolutions(pag)
    agreed: np.ndarray | None = None
    for choice in product(*options):
        report.candidates += 1
        cand = pag.copy()
        for (a, b), (at_b, at_a) in zip(edges, choice, strict=True):
            cand.marks[a, b], cand.marks[b, a] = at_b, at_a
        if not is_valid_mag(cand):
            continue
        if not np.array_equal(fci_pag_of_mag(cand).marks, reference):
            continue
        if not is_realisable(cand):
            continue
        report.members += 1
        agreed = cand.marks.copy() if agreed is None else np.where(agreed == cand.marks, agreed, CIRCLE)
    out = pag.copy()
    if agreed is None:
        raise RuntimeError("no realisable MAG is compatible with this PAG: the input is not a sound I-PAG")
    out.marks = agreed.astype(np.int8)
    return out, report


__all__ = ["CompletionReport", "complete_by_enumeration", "fci_pag_of_mag", "is_realisable", "is_valid_mag"]
