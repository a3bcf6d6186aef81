"""The three streams: a SchNet interaction backbone, the composition stream (count-weighted attention over the
elements present) and the element-blind structure stream (power spectrum of a Bessel x real-harmonic density)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from icml26.science.triforces.graph import MAX_Z, AtomsBatch

MASK_TOKEN = 0  # atomic number 0: a masked atom (self-supervised element reconstruction) in every stream


def ssp(x: torch.Tensor) -> torch.Tensor:
    """Shifted softplus, SchNet's activation: softplus(x) - log 2 (zero at zero)."""
    return nn.functional.softplus(x) - math.log(2.0)


class SSP(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ssp(x)


def cosine_cutoff(r: torch.Tensor, cutoff: float) -> torch.Tensor:
    return 0.5 * (torch.cos(math.pi * r / cutoff) + 1.0) * (r < cutoff)


def scatter_sum(src: torch.Tensor, index: torch.Tensor, size: int) -> torch.Tensor:
    out = src.new_zeros((size, *src.shape[1:]))
    return out.index_add(0, index, src)


def scatter_mean(src: torch.Tensor, index: torch.Tensor, size: int) -> torch.Tensor:
    counts = torch.bincount(index, minlength=size).clamp(min=1).to(src.dtype)
    return scatter_sum(src, index, size) / counts.view(-1, *([1] * (src.dim() - 1)))


@dataclass
class BackboneOutputs:
    """What an interaction backbone hands to the streams: per-atom features (N, dim)."""

    node: torch.Tensor


# ---------------------------------------------------------------------------------------------------- SchNet
class _Interaction(nn.Module):
    def __init__(self, hidden: int, n_rbf: int, cutoff: float) -> None:
        super().__init__()
        self.cutoff = cutoff
        self.filter = nn.Sequential(nn.Linear(n_rbf, hidden), SSP(), nn.Linear(hidden, hidden))
        self.in2f = nn.Linear(hidden, hidden, bias=False)
        self.f2out = nn.Sequential(nn.Linear(hidden, hidden), SSP(), nn.Linear(hidden, hidden))

    def forward(self, h: torch.Tensor, rbf: torch.Tensor, r: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
        i, j = edges
        w = self.filter(rbf) * cosine_cutoff(r, self.cutoff)[:, None]  # continuous filter W(r_ij)
        msg = scatter_sum(self.in2f(h)[j] * w, i, len(h))
        return h + self.f2out(msg)


class SchNet(nn.Module):
    """SchNet (Schütt et al. 2018): element embedding, Gaussian radial basis, continuous-filter convolutions.

    ``forward(batch) -> BackboneOutputs``; the energy is read out by :class:`EnergyForceModel`.
    """

    def __init__(self, hidden: int = 64, n_interactions: int = 3, n_rbf: int = 32, cutoff: float = 4.5) -> None:
        super().__init__()
        self.hidden, self.cutoff = hidden, cutoff
        self.embedding = nn.Embedding(MAX_Z + 1, hidden)  # row 0 is the mask token
        self.register_buffer("centers", torch.linspace(0.0, cutoff, n_rbf))
        self.gamma = 0.5 / float(self.centers[1] - self.centers[0]) ** 2
        self.interactions = nn.ModuleList(_Interaction(hidden, n_rbf, cutoff) for _ in range(n_interactions))

    def forward(self, batch: AtomsBatch) -> BackboneOutputs:
        r = torch.linalg.norm(batch.edge_vectors(), dim=-1)
        rbf = torch.exp(-self.gamma * (r[:, None] - self.centers) ** 2)
        h = self.embedding(batch.z)
        for block in self.interactions:
            h = block(h, rbf, r, batch.edges)
        return BackboneOutputs(node=h)


# ----------------------------------------------------------------------------------------- composition stream
def count_weighted_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, counts: torch.Tensor, pad: torch.Tensor
) -> torch.Tensor:
    """softmax(q k^T / sqrt(d) + log c_key) v over (B, H, T, d) tensors; ``pad`` (B, T) marks absent tokens.

    Adding log c_t to key t's logit weighs the token as if it appeared c_t times: with all counts 1 this is plain
    scaled dot-product attention.
    """
    logits = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    logits = logits + torch.log(counts.clamp(min=1).to(q.dtype))[:, None, None, :]
    logits = logits.masked_fill(pad[:, None, None, :], float("-inf"))
    return torch.softmax(logits, dim=-1) @ v


class _Block(nn.Module):
    """Pre-LayerNorm transformer block with count-weighted multi-head attention."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.out = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x: torch.Tensor, counts: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        att = count_weighted_attention(q, k, v, counts, pad).transpose(1, 2).reshape(b, t, d)
        x = x + self.out(att)
        return x + self.mlp(self.ln2(x))


def composition_tokens(z: torch.Tensor, batch: torch.Tensor, n_structures: int) -> tuple[torch.Tensor, ...]:
    """Per structure: CLS then one token per element present, with counts; and each atom's token position.

    Returns ``(elements (B, T), counts (B, T), pad (B, T), atom_token (N,))``; CLS has element -1 and count 1.
    """
    counts_full = torch.zeros(n_structures, MAX_Z + 1, dtype=torch.long, device=z.device)
    counts_full.index_put_((batch, z), torch.ones_like(z), accumulate=True)
    present = counts_full > 0
    rank = torch.cumsum(present.long(), dim=1) * present  # 1-based slot of each present element (0: absent)
    t = int(present.sum(1).max()) + 1
    elements = torch.full((n_structures, t), -1, dtype=torch.long, device=z.device)
    counts = torch.ones(n_structures, t, dtype=torch.long, device=z.device)
    b_idx, e_idx = torch.nonzero(present, as_tuple=True)
    slot = rank[b_idx, e_idx]
    elements[b_idx, slot] = e_idx
    counts[b_idx, slot] = counts_full[b_idx, e_idx]
    pad = torch.ones(n_structures, t, dtype=torch.bool, device=z.device)
    pad[:, 0] = False
    pad[b_idx, slot] = False
    return elements, counts, pad, rank[batch, z]


class CompositionStream(nn.Module):
    """Geometry-free stream: element tokens with counts and a CLS token through pre-LN transformer blocks."""

    def __init__(self, dim: int = 64, heads: int = 4, blocks: int = 2) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim={dim} must be divisible by heads={heads}")
        self.dim = dim
        self.embedding = nn.Embedding(MAX_Z + 1, dim)
        self.cls = nn.Parameter(torch.randn(dim) * 0.02)
        self.blocks = nn.ModuleList(_Block(dim, heads) for _ in range(blocks))
        self.ln = nn.LayerNorm(dim)

    def forward(self, z: torch.Tensor, batch: torch.Tensor, n_structures: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(per-atom features (N, dim), per-structure CLS (B, dim)); never reads positions."""
        elements, counts, pad, atom_token = composition_tokens(z, batch, n_structures)
        x = self.embedding(elements.clamp(min=0))
        x = torch.where((elements < 0)[..., None], self.cls.expand_as(x), x)
        for block in self.blocks:
            x = block(x, counts, pad)
        x = self.ln(x)
        return x[batch, atom_token], x[:, 0]


# ------------------------------------------------------------------------------------------- structure stream
_C0 = 0.5 / math.sqrt(math.pi)
_C1 = math.sqrt(3.0 / (4 * math.pi))
_C2 = math.sqrt(15.0 / (4 * math.pi))
_C20 = math.sqrt(5.0 / (16 * math.pi))


def real_spherical_harmonics(unit: torch.Tensor, l_max: int) -> torch.Tensor:
    """Orthonormal real spherical harmonics Y_lm(u) for l <= l_max (<= 2), shape (E, (l_max + 1)^2), l-major."""
    if not 0 <= l_max <= 2:
        raise ValueError(f"l_max must be 0, 1 or 2, got {l_max}")
    x, y, z = unit.unbind(-1)
    out = [torch.full_like(x, _C0)]
    if l_max >= 1:
        out += [_C1 * y, _C1 * z, _C1 * x]
    if l_max >= 2:
        out += [_C2 * x * y, _C2 * y * z, _C20 * (3 * z * z - 1), _C2 * x * z, 0.5 * _C2 * (x * x - y * y)]
    return torch.stack(out, dim=-1)


def bessel_basis(r: torch.Tensor, n: int, cutoff: float) -> torch.Tensor:
    """sqrt(2 / r_c) sin(k pi r / r_c) / r for k = 1..n, times a cosine envelope (smooth at the cutoff)."""
    k = torch.arange(1, n + 1, dtype=r.dtype, device=r.device)
    sin_over = torch.sin(k * math.pi * r[:, None] / cutoff) / r[:, None].clamp(min=1e-6)
    return math.sqrt(2.0 / cutoff) * sin_over * cosine_cutoff(r, cutoff)[:, None]


class StructureStream(nn.Module):
    """Element-blind local geometry: density c_{i,a,lm} = sum_j R_a(r_ij) Y_lm(r_ij / r), learnable radial mix,
    invariant power spectrum p_{i,ab,l} = sum_m c_{i,a,lm} c_{i,b,lm}, LayerNorm + MLP, residual message passing.

    It receives only edge vectors: atomic numbers are never an input.
    """

    def __init__(
        self, dim: int = 64, l_max: int = 2, n_radial: int = 6, cutoff: float = 4.5, n_message: int = 2
    ) -> None:
        super().__init__()
        self.dim, self.l_max, self.n_radial, self.cutoff = dim, l_max, n_radial, cutoff
        self.radial_mix = nn.Parameter(torch.eye(n_radial) + 0.1 * torch.randn(n_radial, n_radial))
        n_p = n_radial * n_radial * (l_max + 1)
        self.ln = nn.LayerNorm(n_p)
        self.skip = nn.Linear(n_p, dim, bias=False)
        nn.init.orthogonal_(self.skip.weight)
        self.mlp = nn.Sequential(nn.Linear(n_p, dim), nn.SiLU(), nn.Linear(dim, dim), nn.SiLU(), nn.Linear(dim, dim))
        self.msg_filter = nn.ModuleList(nn.Linear(n_radial, dim) for _ in range(n_message))
        self.msg_update = nn.ModuleList(
            nn.Sequential(nn.Linear(dim, dim), nn.SiLU(), nn.Linear(dim, dim)) for _ in range(n_message)
        )
        self.register_buffer(
            "l_of_m", torch.repeat_interleave(torch.arange(l_max + 1), 2 * torch.arange(l_max + 1) + 1)
        )

    def forward(self, vec: torch.Tensor, edges: torch.Tensor, n_atoms: int) -> torch.Tensor:
        i, j = edges
        r = torch.linalg.norm(vec, dim=-1)
        radial = bessel_basis(r, self.n_radial, self.cutoff)  # (E, A)
        ylm = real_spherical_harmonics(vec / r[:, None].clamp(min=1e-9), self.l_max)  # (E, M)
        density = scatter_sum((radial @ self.radial_mix.T)[:, :, None] * ylm[:, None, :], i, n_atoms)  # (N, A, M)
        prod = density[:, :, None, :] * density[:, None, :, :]  # (N, A, A, M)
        power = prod.new_zeros((*prod.shape[:3], self.l_max + 1)).index_add(3, self.l_of_m, prod)
        p = self.ln(power.reshape(n_atoms, -1))
        h = self.skip(p) + self.mlp(p)
        for filt, update in zip(self.msg_filter, self.msg_update, strict=True):
            h = h + update(scatter_sum(filt(radial) * h[j], i, n_atoms))
        return h
