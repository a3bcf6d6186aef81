"""Pairwise relation encoders: DSG (the method) and the relative-position codes it replaces.

Every encoder maps object centres ``[B, N, 3]`` to one or more *parts* ``[B, N, N, C]`` (C channels);
:class:`RelationCode` turns the parts into a text-gated attention bias per head and a value per pair, the same way
for every encoder, so that arms differ only in the pair code. Offsets are Delta_ij = c_j - c_i divided by the
scene's scale (the RMS distance of the valid centres from their mean): every code is invariant to translating the scene,
DSG also to scaling it.

- :class:`DecomposedSpectralGeometry` (DSG): a learnable Fourier basis W in R^{d x F}, W ~ N(0, sigma^2);
  S_ij = MLP_s(cos(Delta_ij W)) is even in Delta (S_ij = S_ji) and A_ij = tanh(W_a sin(Delta_ij W)), W_a linear
  without bias, is odd (A_ij = -A_ji): two parts, two gates;
- :class:`FourierRelPos`: fixed random Fourier features [cos, sin](Delta W) into an MLP (not decomposed);
- :class:`MLPRelPos`: an MLP on raw Delta (the spectral-bias baseline);
- :class:`HandcraftedRelPos`: ViL3DRel's five features (distance over the scene's largest distance, sin and cos
  of the vertical and horizontal angles) into an MLP;
- :class:`NoRelPos`: no geometry (a zero bias).
"""

from __future__ import annotations

import math

import torch
from torch import nn


def scene_scale(centers: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """RMS distance of the valid centres from their mean, [B] (1 for a scene whose objects all coincide)."""
    m = torch.ones(centers.shape[:2], dtype=centers.dtype) if mask is None else mask.to(centers.dtype)
    n = m.sum(1).clamp(min=1)
    mean = (centers * m[..., None]).sum(1) / n[:, None]
    rms = (((centers - mean[:, None]) ** 2).sum(-1) * m).sum(1).div(n).sqrt()
    return torch.where(rms > 1e-9, rms, torch.ones_like(rms))


def pairwise_offsets(
    centers: torch.Tensor, mask: torch.Tensor | None = None, sizes: torch.Tensor | None = None
) -> torch.Tensor:
    """Delta_ij = (c_j - c_i) / scale, [B, N, N, 3] (or 6 with the size differences s_j - s_i, same scale)."""
    scale = scene_scale(centers, mask)[:, None, None, None]
    delta = (centers[:, None, :, :] - centers[:, :, None, :]) / scale
    if sizes is not None:
        delta = torch.cat([delta, (sizes[:, None, :, :] - sizes[:, :, None, :]) / scale], dim=-1)
    return delta


def _mlp(d_in: int, hidden: int, d_out: int, depth: int = 2) -> nn.Sequential:
    layers: list[nn.Module] = []
    for k in range(depth):
        layers += [nn.Linear(d_in if k == 0 else hidden, hidden), nn.GELU()]
    return nn.Sequential(*layers, nn.Linear(hidden, d_out))


class DecomposedSpectralGeometry(nn.Module):
    """DSG: symmetric and antisymmetric spectral parts of the pairwise geometry.

    ``forward(centers, sizes=None, mask=None) -> (S, A)``, each ``[B, N, N, heads]``, with S_ij = S_ji and
    A_ij = -A_ji exactly (cos is even, sin odd, and the antisymmetric branch has no bias and an odd squashing).
    ``use_sym=False`` / ``use_anti=False`` zero a part (the ablations); ``learnable=False`` freezes the basis.
    ``in_dim=6`` adds the size differences to the offsets (both parts keep their symmetry).
    """

    def __init__(
        self,
        in_dim: int = 3,
        n_freq: int = 32,
        sigma: float = 1.0,
        heads: int = 4,
        hidden: int = 64,
        learnable: bool = True,
        use_sym: bool = True,
        use_anti: bool = True,
    ) -> None:
        super().__init__()
        if in_dim not in (3, 6):
            raise ValueError(f"in_dim must be 3 (centre offsets) or 6 (with size differences), got {in_dim}")
        if n_freq < 1 or heads < 1 or not (sigma > 0 and math.isfinite(sigma)):
            raise ValueError(f"need n_freq >= 1, heads >= 1 and sigma > 0; got {n_freq}, {heads}, {sigma}")
        if not (use_sym or use_anti):
            raise ValueError("DSG needs at least one part: use_sym or use_anti")
        self.in_dim, self.heads, self.use_sym, self.use_anti = in_dim, heads, use_sym, use_anti
        basis = torch.randn(in_dim, n_freq) * sigma
        if learnable:
            self.basis = nn.Parameter(basis)
        else:
            self.register_buffer("basis", basis)
        self.sym = _mlp(n_freq, hidden, heads, depth=1) if use_sym else None
        self.anti = nn.Linear(n_freq, heads, bias=False) if use_anti else None  # no bias: keeps A odd

    @property
    def n_parts(self) -> int:
        return 2

    def forward(
        self, centers: torch.Tensor, sizes: torch.Tensor | None = None, mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if (sizes is not None) != (self.in_dim == 6):
            raise ValueError(f"DSG built with in_dim={self.in_dim}: pass sizes if and only if in_dim == 6")
        proj = pairwise_offsets(centers, mask, sizes) @ self.basis  # [B, N, N, F]
        zeros = proj.new_zeros(*proj.shape[:3], self.heads)
        S = self.sym(torch.cos(proj)) if self.sym is not None else zeros
        A = torch.tanh(self.anti(torch.sin(proj))) if self.anti is not None else zeros
        return S, A


class FourierRelPos(nn.Module):
    """Fixed random Fourier features of the offset, [cos, sin](Delta W), W ~ N(0, sigma^2), into an MLP."""

    def __init__(self, n_freq: int = 32, sigma: float = 1.0, heads: int = 4, hidden: int = 64) -> None:
        super().__init__()
        self.register_buffer("basis", torch.randn(3, n_freq) * sigma)
        self.mlp = _mlp(2 * n_freq, hidden, heads)
        self.n_parts = 1

    def forward(self, centers: torch.Tensor, sizes: torch.Tensor | None = None, mask: torch.Tensor | None = None):
        proj = pairwise_offsets(centers, mask) @ self.basis
        return (self.mlp(torch.cat([torch.cos(proj), torch.sin(proj)], dim=-1)),)


class MLPRelPos(nn.Module):
    """An MLP on the raw (scale-normalised) offset Delta_ij."""

    def __init__(self, heads: int = 4, hidden: int = 64) -> None:
        super().__init__()
        self.mlp = _mlp(3, hidden, heads)
        self.n_parts = 1

    def forward(self, centers: torch.Tensor, sizes: torch.Tensor | None = None, mask: torch.Tensor | None = None):
        return (self.mlp(pairwise_offsets(centers, mask)),)


def vil3drel_features(centers: torch.Tensor, mask: torch.Tensor | None = None, eps: float = 1e-10) -> torch.Tensor:
    """ViL3DRel's pairwise features [B, N, N, 5]: d / max d, sin and cos of the elevation, sin and cos of the
    azimuth (Chen et al. 2022: distance normalised by the scene's largest pairwise distance)."""
    delta = centers[:, None, :, :] - centers[:, :, None, :]
    dist = torch.sqrt((delta**2).sum(-1) + eps)
    flat = dist if mask is None else dist * (mask[:, None, :] & mask[:, :, None])
    max_d = flat.flatten(1).max(1).values.clamp(min=1e-6)[:, None, None]
    dist_xy = torch.sqrt((delta[..., :2] ** 2).sum(-1) + eps)
    return torch.stack(
        [dist / max_d, delta[..., 2] / dist, dist_xy / dist, delta[..., 1] / dist_xy, delta[..., 0] / dist_xy], dim=-1
    )


class HandcraftedRelPos(nn.Module):
    """Handcrafted relative-position features (ViL3DRel) into an MLP: the main baseline."""

    def __init__(self, heads: int = 4, hidden: int = 64) -> None:
        super().__init__()
        self.mlp = _mlp(5, hidden, heads)
        self.n_parts = 1

    def forward(self, centers: torch.Tensor, sizes: torch.Tensor | None = None, mask: torch.Tensor | None = None):
        return (self.mlp(vil3drel_features(centers, mask)),)


class NoRelPos(nn.Module):
    """No geometry: a zero code (the object encoder and the text still act)."""

    def __init__(self, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.n_parts = 1

    def forward(self, centers: torch.Tensor, sizes: torch.Tensor | None = None, mask: torch.Tensor | None = None):
        B, N = centers.shape[:2]
        return (centers.new_zeros(B, N, N, self.heads),)


class RelationCode(nn.Module):
    """What the cross-modal layers read from a relation encoder: a text-gated bias per head and a value per pair.

    For each part p of the pair code (DSG: S and A; the baselines: one part) of width R, and each layer:

    - bias: b_ij^h = sum_p g_p^h(t) (u_p^h . part_p,ij), with bias-free heads u and gates g_p = 1 + Linear(t),
      zero-initialised (they start at 1: the geometry is on from the first step, and the sentence learns to turn
      each head's parts up, down or over);
    - value: r_ij = sum_p V_p part_p,ij (bias-free), added to the attended value of object j for query i
      (relative-position attention), so that an object that attends to its anchor also reads where it is.

    Bias-free heads keep the parity: the contribution of S is even in Delta, that of A odd.
    """

    def __init__(self, encoder: nn.Module, text_dim: int, channels: int, heads: int, layers: int, dim: int) -> None:
        super().__init__()
        self.encoder, self.heads, self.layers = encoder, heads, layers
        n = encoder.n_parts
        self.to_bias = nn.ModuleList(nn.Linear(channels, heads * layers, bias=False) for _ in range(n))
        self.to_value = nn.ModuleList(nn.Linear(channels, dim * layers, bias=False) for _ in range(n))
        self.gates = nn.ModuleList(nn.Linear(text_dim, heads * layers) for _ in range(n))
        for g in self.gates:
            nn.init.zeros_(g.weight)
            nn.init.zeros_(g.bias)

    def forward(
        self, centers: torch.Tensor, text: torch.Tensor, mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Bias [layers, B, heads, N, N] and values [layers, B, N, N, dim]."""
        parts = self.encoder(centers, mask=mask)
        B, N = centers.shape[:2]
        bias, value = 0.0, 0.0
        for head, val, gate, part in zip(self.to_bias, self.to_value, self.gates, parts, strict=True):
            bias = bias + (1.0 + gate(text))[:, None, None, :] * head(part)
            value = value + val(part)
        bias = bias.view(B, N, N, self.layers, self.heads).permute(3, 0, 4, 1, 2)
        return bias, value.view(B, N, N, self.layers, -1).permute(3, 0, 1, 2, 4)
