"""Drawing a PAG with matplotlib (``PAG.plot()``), with the marks where the reader expects them.

Every edge is a line between two nodes; at each end its mark is drawn: an arrowhead (``>``), an open circle
(``o``) or nothing (a tail, ``-``). Observed variables are round, F-nodes square and grey (their targets are in
the title of the node, ``F01 -> {X0}``). Positions come from ``pos`` (node name or index -> ``(x, y)``), else from
networkx's Kamada-Kawai layout when networkx is installed, else a circle.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from icml26.causal.ifci_completion.pag import ARROW, CIRCLE, PAG

NODE_RADIUS = 0.09  # in layout units (the layout is scaled to fit [-1, 1])
CIRCLE_RADIUS = 0.028


def layout(pag: PAG, pos: Mapping[Any, tuple[float, float]] | None = None) -> np.ndarray:
    """Node positions, one row per node, scaled into [-1, 1]."""
    n = pag.n
    if pos is not None:
        xy = np.array([pos[name] if name in pos else pos[i] for i, name in enumerate(pag.names)], float)
    else:
        try:
            import networkx as nx

            g = nx.Graph()
            g.add_nodes_from(range(n))
            g.add_edges_from(pag.edges())
            placed = nx.kamada_kawai_layout(g) if n > 1 else {0: (0.0, 0.0)}
            xy = np.array([placed[i] for i in range(n)], float)
        except ImportError:  # a circle is a fine layout for small graphs
            angle = 2 * np.pi * np.arange(n) / max(n, 1)
            xy = np.c_[np.cos(angle), np.sin(angle)]
    span = np.abs(xy - xy.mean(axis=0)).max() if n > 1 else 1.0
    return (xy - xy.mean(axis=0)) / (span or 1.0)


def plot_pag(
    pag: PAG,
    ax: Any = None,
    pos: Mapping[Any, tuple[float, float]] | None = None,
    *,
    title: str | None = None,
    node_colour: str = "white",
    f_colour: str = "0.85",
) -> Any:
    """Draw ``pag`` on ``ax`` (a new figure if None) and return the axes."""
    from matplotlib.patches import Circle, FancyArrowPatch, Rectangle

    if ax is None:
        from matplotlib.figure import Figure

        ax = Figure(figsize=(4.8, 4.8), dpi=150, layout="constrained").add_subplot()
    xy = layout(pag, pos)
    m = pag.marks
    for a, b in pag.edges():
        u = xy[b] - xy[a]
        length = math.hypot(*u)
        if length == 0:
            raise ValueError(f"nodes {pag.names[a]} and {pag.names[b]} share a position")
        u = u / length
        start, end = xy[a] + u * NODE_RADIUS, xy[b] - u * NODE_RADIUS
        head_a, head_b = m[b, a] == ARROW, m[a, b] == ARROW
        style = {(False, False): "-", (False, True): "-|>", (True, False): "<|-", (True, True): "<|-|>"}
        ax.add_patch(
            FancyArrowPatch(
                tuple(start),
                tuple(end),
                arrowstyle=style[(bool(head_a), bool(head_b))],
                mutation_scale=12,
                shrinkA=0,
                shrinkB=0,
                color="black",
                lw=1.1,
                zorder=1,
            )
        )
        for at, tip, sign in ((b, end, -1.0), (a, start, 1.0)):
            mark = m[a, b] if at == b else m[b, a]
            if mark == CIRCLE:
                centre = tip + sign * u * CIRCLE_RADIUS
                ax.add_patch(Circle(tuple(centre), CIRCLE_RADIUS, fc="white", ec="black", lw=1.0, zorder=2))
    for v, (x, y) in enumerate(xy):
        if pag.is_f(v):
            side = 2 * NODE_RADIUS * 0.9
            ax.add_patch(Rectangle((x - side / 2, y - side / 2), side, side, fc=f_colour, ec="black", zorder=3))
        else:
            ax.add_patch(Circle((x, y), NODE_RADIUS, fc=node_colour, ec="black", zorder=3))
        ax.text(x, y, pag.names[v], ha="center", va="center", fontsize=8, zorder=4)
    pad = 2 * NODE_RADIUS
    ax.set_xlim(xy[:, 0].min() - pad, xy[:, 0].max() + pad)
    ax.set_ylim(xy[:, 1].min() - pad, xy[:, 1].max() + pad)
    ax.set_aspect("equal")
    ax.set_axis_off()
    if title is None and pag.f_targets:
        title = "; ".join(
            f"{pag.names[f]} -> {{{', '.join(pag.names[t] for t in sorted(s)) or '?'}}}"
            for f, s in sorted(pag.f_targets.items())
        )
    if title:
        ax.set_title(title, fontsize=8)
    return ax
