"""Partial ancestral graphs (PAGs) over observed nodes and F-nodes, and their causal-learn / pcalg encodings.

A PAG is an endpoint matrix. **Our convention is pcalg's** (``amat.pag``): ``marks[a, b]`` is the mark *at b* on
the edge ``a *-* b``, with codes

====  ========  =========================
code  name      drawn
====  ========  =========================
0     NONE      no edge
1     CIRCLE    ``o``
2     ARROW     ``>``
3     TAIL      ``-``
====  ========  =========================

so ``a -> b`` is ``marks[a, b] = ARROW, marks[b, a] = TAIL`` and ``a o-> b`` is ``marks[a, b] = ARROW,
marks[b, a] = CIRCLE``.

**causal-learn's convention is the transpose, with other codes**: in a ``GeneralGraph``, ``G.graph[a, b]`` is the
mark *at a* on the edge ``a *-* b``: -1 tail, 1 arrow, 2 circle. So ``causallearn[a, b] = code(marks[b, a])``.
Mixing the two up swaps every edge's ends; :meth:`PAG.to_causallearn` / :meth:`PAG.from_causallearn` are the only
places that translate, and the tests pin the translation on ``a -> b``.

F-node metadata: ``f_targets`` maps the index of each F-node to its target set ``S_F`` (indices of observed
nodes). ``sepsets`` (optional) keeps the separating set found for each non-adjacent pair, which the orientation
rules and the enumeration completion read.

References
----------
- J. Zhang, "On the completeness of orientation rules for causal discovery in the presence of latent confounders
  and selection bias", Artificial Intelligence 2008.
- M. Kalisch et al., pcalg (``amat.pag`` codes); Y. Zheng et al., causal-learn (``GeneralGraph``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

NONE, CIRCLE, ARROW, TAIL = 0, 1, 2, 3
MARK_NAMES = {NONE: "none", CIRCLE: "circle", ARROW: "arrow", TAIL: "tail"}
_DRAW_AT_END = {CIRCLE: "o", ARROW: ">", TAIL: "-"}
_DRAW_AT_START = {CIRCLE: "o", ARROW: "<", TAIL: "-"}

# pcalg code -> causal-learn code (for the same endpoint)
_TO_CAUSALLEARN = {TAIL: -1, ARROW: 1, CIRCLE: 2}
_FROM_CAUSALLEARN = {-1: TAIL, 1: ARROW, 2: CIRCLE}

# Deterministic work counter (adjacency scans), read by the study to compare costs without wall clocks.
WORK = {"adjacency_scans": 0, "m_separation_evaluations": 0}


@dataclass
class PAG:
    """A PAG (or a MAG: a PAG without circles) over ``names``; see the module docstring for the convention."""

    marks: np.ndarray
    names: list[str]
    f_targets: dict[int, frozenset[int]] = field(default_factory=dict)
    sepsets: dict[tuple[int, int], frozenset[int]] = field(default_factory=dict)
    conflicts: str = "raise"  # what a rule does when it would overwrite a non-circle mark: "raise" or "keep"
    _frozen: list[list[int]] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.marks = np.asarray(self.marks, dtype=np.int8).copy()
        n = len(self.names)
        if self.marks.shape != (n, n):
            raise ValueError(f"marks must be {n}x{n}, got {self.marks.shape}")
        if not np.isin(self.marks, (NONE, CIRCLE, ARROW, TAIL)).all():
            raise ValueError("marks must use the codes 0 none, 1 circle, 2 arrow, 3 tail")
        if not np.array_equal(self.marks == NONE, self.marks.T == NONE):
            raise ValueError("an edge must have a mark at both ends (marks[a,b]==0 iff marks[b,a]==0)")
        if np.any(np.diag(self.marks)):
            raise ValueError("self loops are not allowed")
        self.f_targets = {int(f): frozenset(int(s) for s in t) for f, t in self.f_targets.items()}

    # ------------------------------------------------------------------ basics
    @property
    def n(self) -> int:
        return len(self.names)

    def copy(self) -> PAG:
        return PAG(self.marks.copy(), list(self.names), dict(self.f_targets), dict(self.sepsets), self.conflicts)

    def adjacent(self, a: int, b: int) -> bool:
        return bool(self.marks[a, b])

    def neighbours(self, a: int) -> list[int]:
        """Nodes adjacent to ``a`` (ascending). Read-only inside :meth:`frozen_adjacency`."""
        WORK["adjacency_scans"] += 1
        if self._frozen is not None:
            return self._frozen[a]
        return [int(b) for b in np.flatnonzero(self.marks[a])]

    @contextmanager
    def frozen_adjacency(self) -> Iterator[PAG]:
        """Promise that no edge is added or removed inside the block (marks may change): neighbour lists are
        computed once. The orientation rules run inside it; they only ever turn circles into arrows or tails."""
        if self._frozen is not None:  # nested: the outer block already froze it
            yield self
            return
        self._frozen = [[int(b) for b in np.flatnonzero(row)] for row in self.marks]
        try:
            yield self
        finally:
            self._frozen = None

    def is_f(self, v: int) -> bool:
        return v in self.f_targets

    @property
    def observed(self) -> list[int]:
        return [v for v in range(self.n) if v not in self.f_targets]

    def possible_targets(self, f: int) -> list[int]:
        """Observed nodes adjacent to F-node ``f``: every target of ``f`` is among them (``F -> X`` is an edge of
        the I-MAG for each ``X`` in ``S_F``), which is what is known of the targets when they are unknown."""
        if f not in self.f_targets:
            raise ValueError(f"{self.names[f] if 0 <= f < self.n else f} is not an F-node")
        return [v for v in self.neighbours(f) if v not in self.f_targets]

    def edges(self) -> list[tuple[int, int]]:
        return [(int(a), int(b)) for a, b in zip(*np.nonzero(np.triu(self.marks)), strict=True)]

    def n_circles(self) -> int:
        """Circle marks over all edges, F-edges included (they carry none once Rule 8 has run)."""
        return int((self.marks == CIRCLE).sum())

    def sepset(self, a: int, b: int) -> frozenset[int] | None:
        return self.sepsets.get((min(a, b), max(a, b)))

    def same_graph(self, other: PAG) -> bool:
        return self.names == other.names and np.array_equal(self.marks, other.marks)

    def edge_string(self, a: int, b: int) -> str:
        return f"{self.names[a]} {_DRAW_AT_START[self.marks[b, a]]}-{_DRAW_AT_END[self.marks[a, b]]} {self.names[b]}"

    def __str__(self) -> str:
        return "; ".join(self.edge_string(a, b) for a, b in self.edges()) or "(no edges)"

    def to_dict(self) -> dict[str, Any]:
        return {
            "names": self.names,
            "marks": self.marks.tolist(),
            "f_targets": {str(k): sorted(v) for k, v in self.f_targets.items()},
        }

    def plot(self, ax: Any = None, pos: Any = None, **kwargs: Any) -> Any:
        """Draw the PAG with matplotlib (arrowheads, open circles, tails; F-nodes square); returns the axes.

        ``pos`` maps node names (or indices) to ``(x, y)``; see :func:`.draw.plot_pag` for the rest.
        Save with ``ax.figure.savefig("pag.png")``.
        """
        from icml26.causal.ifci_completion.draw import plot_pag

        return plot_pag(self, ax, pos, **kwargs)

    # ------------------------------------------------------------------ interop
    def to_pcalg(self) -> np.ndarray:
        """pcalg ``amat.pag``: identical codes and orientation (amat[a, b] is the mark at b)."""
        return self.marks.copy()

    def to_causallearn(self) -> Any:
        """A causal-learn ``GeneralGraph`` with the same edges (``G.graph[a, b]`` is the mark at a)."""
        from causallearn.graph.GeneralGraph import GeneralGraph
        from causallearn.graph.GraphNode import GraphNode

        graph = GeneralGraph([GraphNode(name) for name in self.names])
        # Written into the matrix directly: GeneralGraph.add_edge silently drops some edges (e.g. ``o-``).
        for a, b in self.edges():
            graph.graph[a, b] = _TO_CAUSALLEARN[int(self.marks[b, a])]  # causal-learn [a, b]: the mark at a
            graph.graph[b, a] = _TO_CAUSALLEARN[int(self.marks[a, b])]
        graph.reconstitute_dpath(graph.get_graph_edges())
        return graph

    @classmethod
    def from_causallearn(
        cls, graph: Any, f_targets: dict[int, frozenset[int]] | None = None, names: list[str] | None = None
    ) -> PAG:
        """Read a ``GeneralGraph`` (or its ``.graph`` matrix) into our convention (transpose + recode)."""
        matrix = np.asarray(getattr(graph, "graph", graph))
        if names is None:
            names = (
                graph.get_node_names() if hasattr(graph, "get_node_names") else [f"X{i}" for i in range(len(matrix))]
            )
        n = len(names)
        marks = np.zeros((n, n), np.int8)
        for a in range(n):
            for b in range(n):
                code = int(matrix[a, b])
                if code == 0:
                    continue
                if code not in _FROM_CAUSALLEARN:
                    raise ValueError(f"unsupported causal-learn endpoint code {code} at ({a}, {b})")
                marks[b, a] = _FROM_CAUSALLEARN[code]  # causal-learn [a, b] is the mark at a = our [b, a]
        return cls(marks, list(names), dict(f_targets or {}))
