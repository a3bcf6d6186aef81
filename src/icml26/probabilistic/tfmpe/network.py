"""The velocity field: a small masked transformer over tokens, one network for both modes.

Embedding of token k at flow time tau:
    h_k = W_v value_k + E_label[label_k] + E_flag[target_k] + W_t fourier(t_k) + MLP(fourier(tau)),
then ``n_layers`` pre-norm blocks (masked multi-head self-attention, GELU MLP) and a linear read-out to one
velocity per token (used on target tokens only).
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from icml26.probabilistic.tfmpe.tokens import Tokens, attention_mask

__all__ = ["TokenVelocityField"]


def fourier(x: torch.Tensor, n_freq: int, base: float) -> torch.Tensor:
    """``[..., 2 n_freq]`` sin/cos features of a scalar at geometrically spaced frequencies."""
    freqs = base * (2.0 ** torch.arange(n_freq, device=x.device, dtype=x.dtype))
    ang = x[..., None] * freqs
    return torch.cat([ang.sin(), ang.cos()], -1)


class Block(nn.Module):
    def __init__(self, d_model: int, n_heads: int, mlp_ratio: int = 4) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.norm1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, mlp_ratio * d_model), nn.GELU(), nn.Linear(mlp_ratio * d_model, d_model)
        )

    def forward(self, h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, n, d = h.shape
        q, k, v = self.qkv(self.norm1(h)).view(b, n, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None])
        h = h + self.proj(a.transpose(1, 2).reshape(b, n, d))
        return h + self.mlp(self.norm2(h))


class TokenVelocityField(nn.Module):
    """v_phi(z_tau, tau | tokens): one velocity per token; the attention mask keeps sites apart (see ``tokens``)."""

    def __init__(
        self, n_labels: int, d_model: int = 64, n_layers: int = 2, n_heads: int = 2, mlp_ratio: int = 4
    ) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        self.n_freq = 8
        self.value = nn.Linear(1, d_model)
        self.label = nn.Embedding(n_labels, d_model)
        self.flag = nn.Embedding(2, d_model)
        self.time = nn.Linear(2 * self.n_freq, d_model)
        self.flow_time = nn.Sequential(nn.Linear(2 * self.n_freq, d_model), nn.SiLU(), nn.Linear(d_model, d_model))
        self.blocks = nn.ModuleList(Block(d_model, n_heads, mlp_ratio) for _ in range(n_layers))
        self.norm = nn.LayerNorm(d_model)
        self.out = nn.Linear(d_model, 1)

    def forward(self, tokens: Tokens, tau: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Velocities ``[B, L]`` for token values ``tokens.value`` (targets at flow time ``tau [B]``)."""
        if mask is None:
            mask = attention_mask(tokens.site, tokens.pad)
        h = (
            self.value(tokens.value[..., None])
            + self.label(tokens.label)
            + self.flag(tokens.target.long())
            + self.time(fourier(tokens.time, self.n_freq, math.pi / 8))
            + self.flow_time(fourier(tau, self.n_freq, math.pi / 2))[:, None, :]
        )
        for block in self.blocks:
            h = block(h, mask)
        return self.out(self.norm(h))[..., 0]
