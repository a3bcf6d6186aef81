"""PaiNN (Schütt, Unke & Gastegger 2021): equivariant message passing with scalar and vector features per atom.

A second interaction backbone for :class:`TriForces` (the framework is model-agnostic): ``forward(batch)`` returns
:class:`BackboneOutputs` whose node features are PaiNN's invariant scalars; the vectors stay internal.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from icml26.science.triforces.graph import MAX_Z, AtomsBatch
from icml26.science.triforces.streams import BackboneOutputs, bessel_basis, cosine_cutoff, scatter_sum

_EPS = 1e-8  # inside the vector norm's square root: v = 0 at the first layer would give an infinite gradient


class _Message(nn.Module):
    def __init__(self, dim: int, n_rbf: int, cutoff: float) -> None:
        super().__init__()
        self.dim, self.cutoff = dim, cutoff
        self.phi = nn.Sequential(nn.Linear(dim, dim), nn.SiLU(), nn.Linear(dim, 3 * dim))
        self.filter = nn.Linear(n_rbf, 3 * dim)

    def forward(self, s, v, rbf, r, unit, edges):
        i, j = edges
        x = self.phi(s)[j] * self.filter(rbf) * cosine_cutoff(r, self.cutoff)[:, None]
        a_vv, a_s, a_vs = x.split(self.dim, dim=-1)
        ds = scatter_sum(a_s, i, len(s))
        dv = scatter_sum(a_vv[:, None, :] * v[j] + a_vs[:, None, :] * unit[:, :, None], i, len(s))
        return s + ds, v + dv


class _Update(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim
        self.U, self.V = nn.Linear(dim, dim, bias=False), nn.Linear(dim, dim, bias=False)
        self.mlp = nn.Sequential(nn.Linear(2 * dim, dim), nn.SiLU(), nn.Linear(dim, 3 * dim))

    def forward(self, s, v):
        uv, vv = self.U(v), self.V(v)  # (N, 3, F): linear maps act on the feature axis only (equivariant)
        a = self.mlp(torch.cat([s, torch.sqrt((vv * vv).sum(1) + _EPS)], dim=-1))
        a_vv, a_sv, a_ss = a.split(self.dim, dim=-1)
        return s + a_sv * (uv * vv).sum(1) + a_ss, v + a_vv[:, None, :] * uv


class PaiNN(nn.Module):
    """PaiNN backbone: ``n_interactions`` message + update blocks on scalars s (N, F) and vectors v (N, 3, F),
    a Bessel radial basis of ``n_rbf`` functions with a cosine cutoff. Rotation invariant scalars, equivariant vectors.
    """

    def __init__(self, hidden: int = 64, n_interactions: int = 3, n_rbf: int = 20, cutoff: float = 4.5) -> None:
        super().__init__()
        self.hidden, self.cutoff, self.n_rbf = hidden, cutoff, n_rbf
        self.embedding = nn.Embedding(MAX_Z + 1, hidden)  # row 0 is the mask token
        self.messages = nn.ModuleList(_Message(hidden, n_rbf, cutoff) for _ in range(n_interactions))
        self.updates = nn.ModuleList(_Update(hidden) for _ in range(n_interactions))

    def forward(self, batch: AtomsBatch) -> BackboneOutputs:
        vec = batch.edge_vectors()
        r = torch.linalg.norm(vec, dim=-1)
        unit = vec / r[:, None].clamp(min=1e-9)
        rbf = bessel_basis(r, self.n_rbf, self.cutoff) * math.sqrt(self.cutoff / 2.0)
        s = self.embedding(batch.z)
        v = s.new_zeros((len(s), 3, self.hidden))
        for message, update in zip(self.messages, self.updates, strict=True):
            s, v = message(s, v, rbf, r, unit, batch.edges)
            s, v = update(s, v)
        return BackboneOutputs(node=s)
