"""I-FCI's adjacency search over ``V u F``: a PC-style search, then possible-D-SEP (Spirtes et al. 2000).

Every test conditions on the F-nodes it can: ``X - Y`` (both observed) is tested given ``W u F`` (a test *within*
environments), ``F - Y`` given ``W u F'`` (``F'`` the other F-nodes: an *invariance* across two environments).
Conditioning on extra F-nodes never opens a path (they are parentless roots, so never a collider nor a
descendant of one), so the search below only chooses ``W``, a set of observed nodes. F-F pairs are never adjacent.

1. **PC stage** (the fast adjacency search of PC / causal-learn's ``fas``). Start from the complete graph
   without F-F edges. For depth ``d = 0, 1, 2, ...``: freeze every node's observed adjacents (*PC-stable*: the
   result does not depend on the order of the pairs), then for each still-adjacent pair ``(a, b)`` in index order
   test every ``W`` of size ``d`` drawn from ``adj(a) \\ {b}``, then from ``adj(b) \\ {a}``; the first
   separating ``W`` removes the edge and is kept as the sepset. Stop when no pair has ``d`` candidates left, or
   after ``d = max_cond_size``.
2. **Possible-D-SEP stage** (FCI's second pass). Orient the unshielded colliders of that skeleton (R0), and
   compute ``pds(v)`` for every node: the nodes reachable from ``v`` by a path on which every inner node is a
   collider or lies in a triangle (never an F-node: a root is never a collider). ``D-SEP(a, b)`` of the true MAG
   lies inside ``pds(a)`` (Spirtes et al. 2000), and ``a _||_ b | D-SEP(a, b) u F`` when ``a, b`` are not
   adjacent. Test the subsets of ``pds(a)`` and of ``pds(b)``, restricted to the nodes on some path between
   ``a`` and ``b`` that avoids the edge ``a - b`` and the F-nodes (``C(a, b)``, the blocks of the block-cut tree
   between them, like pcalg's ``biCC`` option), by growing size; sets inside ``adj(a)`` or ``adj(b)`` were
   tested in step 1 and are skipped. The sets ``pds`` and ``C`` come from the graph at the start of the stage
   (stable, as in pcalg). Why ``C`` loses nothing: a path that m-connects ``a`` and ``b`` given
   ``(D n C) u F`` cannot pass an F-node (a non-collider in the conditioning set), so all its nodes are in ``C``;
   its non-colliders are then outside ``D`` too and its colliders are ancestors of ``D``, so it would m-connect
   them given ``D u F`` as well -- a contradiction. The stage is exponential in ``|pds n C|`` (a warning says
   when that exceeds 20 nodes); ``max_cond_size`` caps it.

With an exact oracle the result is the skeleton of the I-MAG; sepsets can differ from another search's, but for
an unshielded or discriminating triple a node is in every separating set or in none, so the PAG is the same.
:func:`learn_skeleton_exhaustive` (every subset of the other observed nodes, by growing size) is the reference
the tests compare against on every small family; it does not scale past about 15 variables.

References
----------
- P. Spirtes, C. Glymour, R. Scheines, "Causation, Prediction, and Search", 2nd ed., MIT Press 2000 (PC, FCI,
  possible-D-SEP).
- D. Colombo, M. Maathuis, "Order-independent constraint-based causal structure learning", JMLR 2014 (PC-stable).
- D. Colombo, M. Maathuis, M. Kalisch, T. Richardson, "Learning high-dimensional directed acyclic graphs with
  latent and selection variables", Annals of Statistics 2012; pcalg ``fci(..., biCC = TRUE)``.
- M. Kocaoglu, A. Jaber, K. Shanmugam, E. Bareinboim, NeurIPS 2019 (the tests over ``V u F``).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np

from icml26.causal.ifci_completion.pag import ARROW, CIRCLE, PAG

if TYPE_CHECKING:
    from icml26.causal.ifci_completion.ifci import IndependenceOracle

_PDS_WARN = 20  # a possible-D-SEP pool above this size (no cap given) is warned about: 2^20 tests


def check_targets(names: list[str], f_targets: dict[int, frozenset[int]], known: bool = True) -> None:
    """F-node indices in range, target sets of observed nodes, non-empty unless the targets are unknown."""
    n = len(names)
    for f, targets in f_targets.items():
        if not 0 <= f < n:
            raise ValueError(f"F-node index {f} out of range")
        if known and not targets:
            raise ValueError(f"F-node {names[f]} has an empty target set (pass known_targets=False if unknown)")
        bad = [t for t in targets if not 0 <= t < n or t in f_targets]
        if bad:
            raise ValueError(f"F-node {names[f]} targets {bad}, which are not observed variables")


def _check_max_cond_size(max_cond_size: int | None) -> None:
    if max_cond_size is not None and (isinstance(max_cond_size, bool) or not isinstance(max_cond_size, int)):
        raise TypeError(f"max_cond_size must be an int or None, got {max_cond_size!r}")
    if max_cond_size is not None and max_cond_size < 0:
        raise ValueError(f"max_cond_size must be >= 0 or None, got {max_cond_size}")


class _Search:
    """The state shared by both stages: adjacency, sepsets, and the test with the F-nodes added."""

    def __init__(self, oracle: IndependenceOracle, known_targets: bool = True) -> None:
        self.oracle = oracle
        self.names, self.f_targets = list(oracle.names), dict(oracle.f_targets)
        check_targets(self.names, self.f_targets, known=known_targets)
        if not known_targets:
            self.f_targets = {f: frozenset() for f in self.f_targets}  # unknown: no rule may read them
        self.n = len(self.names)
        self.f_nodes = frozenset(self.f_targets)
        self.observed = np.array([v not in self.f_nodes for v in range(self.n)])
        self.adj = np.ones((self.n, self.n), bool)
        np.fill_diagonal(self.adj, False)
        self.sepsets: dict[tuple[int, int], frozenset[int]] = {}
        for a, b in combinations(sorted(self.f_nodes), 2):
            self.adj[a, b] = self.adj[b, a] = False
            self.sepsets[(a, b)] = frozenset()  # F-nodes are independent roots

    def always(self, a: int, b: int) -> frozenset[int]:
        return self.f_nodes - {a, b}

    def separated(self, a: int, b: int, w: Iterable[int]) -> bool:
        """Test ``a _||_ b | W u F``; on success remove the edge and keep the sepset."""
        cond = self.always(a, b) | frozenset(w)
        if self.oracle(a, b, cond):
            self.adj[a, b] = self.adj[b, a] = False
            self.sepsets[(min(a, b), max(a, b))] = cond
            return True
        return False

    def observed_adjacents(self, v: int) -> list[int]:
        return [int(u) for u in np.flatnonzero(self.adj[v] & self.observed)]

    def pairs(self) -> Iterator[tuple[int, int]]:
        for a, b in zip(*np.nonzero(np.triu(self.adj)), strict=True):
            yield int(a), int(b)

    def result(self) -> PAG:
        marks = np.where(self.adj, CIRCLE, 0).astype(np.int8)
        return PAG(marks, self.names, self.f_targets, dict(self.sepsets))


def _pc_stage(search: _Search, max_cond_size: int | None) -> None:
    depth = 0
    while max_cond_size is None or depth <= max_cond_size:
        frozen = [search.observed_adjacents(v) for v in range(search.n)]  # PC-stable: fixed for this depth
        testable = False
        for a, b in list(search.pairs()):
            tried: set[tuple[int, ...]] = set()
            for x, other in ((a, b), (b, a)):
                pool = [v for v in frozen[x] if v != other]
                if len(pool) < depth:
                    continue
                testable = True
                for w in combinations(pool, depth):
                    if w in tried:
                        continue
                    tried.add(w)
                    if search.separated(a, b, w):
                        break
                if not search.adj[a, b]:
                    break
        if not testable:
            return
        depth += 1


def possible_dsep(pag: PAG, v: int) -> set[int]:
    """``pds(v)``: nodes reachable by a path whose every inner triple is a collider or a triangle (v excluded).

    F-nodes are never inner nodes of such a path: an F-node is a root, so never a collider in the I-MAG, and the
    collider paths that define ``D-SEP`` cannot pass through one (they may start or end at one).
    """
    m = pag.marks
    reached: set[int] = set()
    seen: set[tuple[int, int]] = set()
    frontier = [(v, u) for u in pag.neighbours(v)]
    while frontier:
        prev, node = frontier.pop()
        if (prev, node) in seen:
            continue
        seen.add((prev, node))
        reached.add(node)
        if pag.is_f(node):
            continue
        for nxt in pag.neighbours(node):
            if nxt in (prev, v) or (node, nxt) in seen:
                continue
            collider = m[prev, node] == ARROW and m[nxt, node] == ARROW
            if collider or m[prev, nxt]:
                frontier.append((node, nxt))
    reached.discard(v)
    return reached


def on_paths_between(adj: np.ndarray, a: int, b: int, avoid: Iterable[int] = ()) -> set[int]:
    """Nodes on some simple path between ``a`` and ``b`` in ``adj`` without the edge ``a - b`` and the ``avoid``
    nodes: the blocks (biconnected components) along the path from ``a`` to ``b`` in the block-cut tree."""
    try:
        import networkx as nx
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("I-FCI's possible-D-SEP stage needs networkx: pip install 'icml26[causal]'") from err

    keep = np.ones(len(adj), bool)
    keep[list(avoid)] = False
    keep[[a, b]] = True
    g = nx.Graph()
    g.add_nodes_from(np.flatnonzero(keep).tolist())
    rows, cols = np.nonzero(np.triu(adj & keep[:, None] & keep[None, :]))
    g.add_edges_from((int(u), int(v)) for u, v in zip(rows, cols, strict=True) if {int(u), int(v)} != {a, b})
    if not nx.has_path(g, a, b):
        return set()
    blocks = [set(c) for c in nx.biconnected_components(g)]
    cuts = set(nx.articulation_points(g)) | {a, b}
    tree = nx.Graph()
    for i, block in enumerate(blocks):
        tree.add_edges_from((("block", i), ("node", v)) for v in block & cuts)
    path = nx.shortest_path(tree, ("node", a), ("node", b))
    return set().union(*(blocks[i] for kind, i in path if kind == "block")) - {a, b}


def _pds_stage(search: _Search, max_cond_size: int | None) -> None:
    from icml26.causal.ifci_completion.orientation import orient_unshielded_colliders

    oriented = search.result()
    oriented.conflicts = "keep"  # R0 only sets arrowheads; "keep" is only a guard for noisy tests
    orient_unshielded_colliders(oriented)
    with oriented.frozen_adjacency():
        pds = [possible_dsep(oriented, v) for v in range(search.n)]
    graph = search.adj.copy()  # fixed for the stage: a supergraph of the I-MAG's skeleton
    for a, b in list(search.pairs()):
        adj_a = set(search.observed_adjacents(a)) - {b}
        adj_b = set(search.observed_adjacents(b)) - {a}
        between = on_paths_between(graph, a, b, avoid=search.f_nodes)
        for x in (a, b):
            pool = sorted(u for u in pds[x] & between if search.observed[u])
            if max_cond_size is None and len(pool) > _PDS_WARN:
                warnings.warn(
                    f"possible-D-SEP of {search.names[x]} for the pair ({search.names[a]}, {search.names[b]}) has "
                    f"{len(pool)} nodes: up to 2^{len(pool)} tests; pass max_cond_size to cap the search",
                    RuntimeWarning,
                    stacklevel=4,
                )
            top = len(pool) if max_cond_size is None else min(max_cond_size, len(pool))
            found = False
            for size in range(1, top + 1):
                for w in combinations(pool, size):
                    s = set(w)
                    if s <= adj_a or s <= adj_b:
                        continue  # tested by the PC stage
                    if search.separated(a, b, w):
                        found = True
                        break
                if found:
                    break
            if found:
                break


def learn_skeleton(
    oracle: IndependenceOracle,
    max_cond_size: int | None = None,
    possible_dsep: bool = True,
    known_targets: bool = True,
) -> PAG:
    """I-FCI's adjacency search (module docstring): the circle-marked skeleton over ``V u F`` with its sepsets.

    ``max_cond_size`` caps the size of ``W`` in both stages (None: no cap); ``possible_dsep=False`` stops after
    the PC stage (a supergraph of the I-MAG's skeleton when latents make it needed). The search never reads the
    target sets; ``known_targets=False`` returns a PAG whose F-nodes have empty (unknown) target sets.
    """
    _check_max_cond_size(max_cond_size)
    search = _Search(oracle, known_targets)
    _pc_stage(search, max_cond_size)
    if possible_dsep:
        _pds_stage(search, max_cond_size)
    return search.result()


def learn_skeleton_exhaustive(oracle: IndependenceOracle, max_cond_size: int | None = None) -> PAG:
    """Reference search: for each pair, every subset ``W`` of the other observed nodes by growing size.

    Exponential in the number of variables (about 15 is the limit); kept as the check of :func:`learn_skeleton`.
    """
    _check_max_cond_size(max_cond_size)
    search = _Search(oracle)
    observed = [v for v in range(search.n) if search.observed[v]]
    for a, b in list(search.pairs()):
        pool = [v for v in observed if v not in (a, b)]
        top = len(pool) if max_cond_size is None else min(max_cond_size, len(pool))
        for size in range(top + 1):
            if any(search.separated(a, b, w) for w in combinations(pool, size)):
                break
    return search.result()
