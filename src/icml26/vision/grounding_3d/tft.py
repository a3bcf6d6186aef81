"""Text-Aware Feature Tuning (TFT): the sentence modulates the visual hierarchy, stage by stage, behind a gate.

At a stage with features h (per point or per object) and sentence embedding t (words w_1..w_L):

- ``mode="film"`` (default): h <- h + tanh(alpha) * (gamma(t) * h + beta(t)), (gamma, beta) = Linear(t);
- ``mode="xattn"``: h <- h + tanh(alpha) * CrossAttention(query = h, keys = values = words);

alpha is a per-channel gate initialised at 0, so a model with TFT starts as exactly the late-fusion model and
learns how much of the sentence to let into each stage (our reading: the abstract does not give the operator).
"""

from __future__ import annotations

import torch
from torch import nn


class TextAwareFeatureTuning(nn.Module):
    """One TFT adapter for features of width ``dim`` conditioned on text of width ``text_dim``."""

    def __init__(self, dim: int, text_dim: int, mode: str = "film", heads: int = 4) -> None:
        super().__init__()
        if mode not in ("film", "xattn"):
            raise ValueError(f"TFT mode must be 'film' or 'xattn', got {mode!r}")
        self.mode = mode
        self.gate = nn.Parameter(torch.zeros(dim))
        if mode == "film":
            self.film = nn.Linear(text_dim, 2 * dim)
        else:
            if dim % heads:
                raise ValueError(f"xattn TFT needs dim divisible by heads, got {dim} and {heads}")
            self.attn = nn.MultiheadAttention(dim, heads, kdim=text_dim, vdim=text_dim, batch_first=True)

    def forward(
        self,
        h: torch.Tensor,
        text: torch.Tensor,
        words: torch.Tensor | None = None,
        word_pad: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``h`` [B, ..., dim]; ``text`` [B, text_dim]; ``words`` [B, L, text_dim] and ``word_pad`` [B, L] for xattn."""
        if self.mode == "film":
            gamma, beta = self.film(text).chunk(2, dim=-1)
            shape = (h.shape[0],) + (1,) * (h.dim() - 2) + (h.shape[-1],)
            update = gamma.view(shape) * h + beta.view(shape)
        else:
            if words is None:
                raise ValueError("TFT in 'xattn' mode needs the word features")
            flat = h.reshape(h.shape[0], -1, h.shape[-1])
            update = self.attn(flat, words, words, key_padding_mask=word_pad, need_weights=False)[0].view_as(h)
        return h + torch.tanh(self.gate) * update
