"""The baseline a user would pick: causal-learn's FCI on ``V u F`` with F exogeneity as background knowledge.

``causallearn.search.ConstraintBased.FCI.fci(data, "d_separation", true_dag=...)`` is an exact d-separation
oracle on a ``networkx.DiGraph``; latent nodes may take indices beyond the data columns. We turn every
bidirected edge ``a <-> b`` of the augmented ADMG into a latent ``L -> a, L -> b`` and forbid every edge into an
F-node (``Y -> F``) and between F-nodes. causal-learn applies this knowledge once, up front, and has no
"single target" rule (Kocaoglu's Rule 9); its result is read back with :meth:`.pag.PAG.from_causallearn`.

causal-learn is optional: importing this module does not import it.
"""

from __future__ import annotations

import contextlib
import io

import numpy as np

from icml26.causal.ifci_completion.admg import ADMG
from icml26.causal.ifci_completion.pag import PAG


def _require_causallearn() -> None:
    try:
        import causallearn  # noqa: F401
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the causal-learn baseline needs causal-learn: pip install 'icml26[causal]' causal-learn"
        ) from err


def latent_dag(augmented: ADMG) -> object:
    """A ``networkx.DiGraph`` over ``0..n-1`` (observed and F) plus one latent per bidirected edge."""
    import networkx as nx

    dag = nx.DiGraph()
    n = augmented.n
    dag.add_nodes_from(range(n))
    for a, b in zip(*np.nonzero(augmented.directed), strict=True):
        dag.add_edge(int(a), int(b))
    latent = n
    for a, b in zip(*np.nonzero(np.triu(augmented.bidirected)), strict=True):
        dag.add_edge(latent, int(a))
        dag.add_edge(latent, int(b))
        latent += 1
    return dag


def causallearn_fci(augmented: ADMG, depth: int = -1) -> PAG:
    """causal-learn FCI with the d-separation oracle and F exogeneity as background knowledge."""
    _require_causallearn()
    from causallearn.graph.GraphNode import GraphNode
    from causallearn.search.ConstraintBased.FCI import fci
    from causallearn.utils.PCUtils.BackgroundKnowledge import BackgroundKnowledge

    n = augmented.n
    names = list(augmented.names)
    bk = BackgroundKnowledge()
    nodes = [GraphNode(name) for name in names]
    for f in augmented.f_targets:
        for v in range(n):
            if v != f:
                bk.add_forbidden_by_node(nodes[v], nodes[f])
    placeholder = np.zeros((max(2 * n, 10), n))
    with contextlib.redirect_stdout(io.StringIO()):
        graph, _ = fci(
            placeholder,
            "d_separation",
            true_dag=latent_dag(augmented),
            background_knowledge=bk,
            depth=depth,
            show_progress=False,
            node_names=names,
            verbose=False,
        )
    return PAG.from_causallearn(graph, f_targets=dict(augmented.f_targets), names=names)
