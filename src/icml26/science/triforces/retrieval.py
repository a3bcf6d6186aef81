"""Similar-structure retrieval from graph embeddings: cosine nearest neighbours, Recall@k and MRR."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from icml26.science.triforces.graph import AtomsBatch, Structure
from icml26.science.triforces.model import TriForces
from icml26.science.triforces.streams import scatter_mean


@torch.no_grad()
def embed(
    encoder: TriForces, structures: Sequence[Structure], batch_size: int = 64, features: str = "graph"
) -> np.ndarray:
    """Embeddings of structures in eval mode, without gradients: ``"graph"`` the projected graph embedding g
    (B, out_dim; retrieval, LeJEPA) or ``"pooled"`` the mean-pooled fused atom features (B, dim; linear probes)."""
    if features not in ("graph", "pooled"):
        raise ValueError(f"features must be 'graph' or 'pooled', got {features!r}")
    if not structures:
        raise ValueError("embed needs at least one structure")
    encoder.eval()
    chunks = []
    for k in range(0, len(structures), batch_size):
        batch = AtomsBatch.collate(list(structures[k : k + batch_size]))
        out = encoder(batch)
        chunks.append(out.graph if features == "graph" else scatter_mean(out.node, batch.batch, batch.n_structures))
    return torch.cat(chunks).double().numpy()


def retrieval_metrics(
    database: np.ndarray, queries: np.ndarray, targets: Sequence[int], ks: Sequence[int] = (1, 5, 10)
) -> dict[str, float]:
    """Rank of each query's target in the database by cosine similarity: Recall@k and mean reciprocal rank.

    Ties count against the query (the target's rank is 1 + the number of entries at least as similar).
    """
    db, q = np.asarray(database, float), np.asarray(queries, float)
    if db.ndim != 2 or q.ndim != 2 or db.shape[1] != q.shape[1] or len(targets) != len(q):
        raise ValueError(f"need database (M, d), queries (Q, d) and Q targets; got {db.shape}, {q.shape}")
    if not (np.isfinite(db).all() and np.isfinite(q).all()):
        raise ValueError("embeddings contain NaN or infinite values")
    db = db / np.maximum(np.linalg.norm(db, axis=1, keepdims=True), 1e-12)
    q = q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-12)
    sim = q @ db.T
    t = np.asarray(targets)
    own = sim[np.arange(len(q)), t]
    others = sim.copy()
    others[np.arange(len(q)), t] = -np.inf
    rank = 1 + (others >= own[:, None] - 1e-12).sum(1)
    out = {f"recall@{k}": float(np.mean(rank <= k)) for k in ks}
    out["mrr"] = float(np.mean(1.0 / rank))
    return out
