"""The compact grounder: a PointNet-tiny object encoder with TFT, a word-level text encoder, and a cross-modal
transformer whose object self-attention carries a text-gated relation bias (DSG or a baseline code).

Shapes: ``points`` [B, N, P, 6] (xyz relative to each box centre in metres, RGB in [0, 1]); ``boxes`` [B, N, 6]
(centre, size); ``tokens`` [B, L] (ids of :class:`.vocab.Vocabulary`, 0 = padding); ``mask`` [B, N] (valid
objects). ``forward`` returns one logit per object, [B, N], with -inf on padding.
"""

from __future__ import annotations

import torch
from torch import nn

from icml26.vision.grounding_3d.geometry import (
    DecomposedSpectralGeometry,
    FourierRelPos,
    HandcraftedRelPos,
    MLPRelPos,
    NoRelPos,
    RelationCode,
)
from icml26.vision.grounding_3d.metrics import check_boxes
from icml26.vision.grounding_3d.tft import TextAwareFeatureTuning
from icml26.vision.grounding_3d.vocab import MAX_TOKENS, Vocabulary

PAIR_CHANNELS = 32  # width of each part of the pair code
RELATIONS = ("none", "mlp", "handcrafted", "fourier", "dsg", "dsg_sym", "dsg_anti")


def relation_encoder(relation: str, channels: int, n_freq: int = 32, sigma: float = 1.0, hidden: int = 64) -> nn.Module:
    """The pair code of an arm, ``channels`` wide per part."""
    if relation == "none":
        return NoRelPos(channels)
    if relation == "mlp":
        return MLPRelPos(channels, hidden)
    if relation == "handcrafted":
        return HandcraftedRelPos(channels, hidden)
    if relation == "fourier":
        return FourierRelPos(n_freq, sigma, channels, hidden)
    if relation in ("dsg", "dsg_sym", "dsg_anti"):
        return DecomposedSpectralGeometry(
            3, n_freq, sigma, channels, hidden, use_sym=relation != "dsg_anti", use_anti=relation != "dsg_sym"
        )
    raise ValueError(f"unknown relation encoder {relation!r}; choose one of {RELATIONS}")


class TextEncoder(nn.Module):
    """Trainable word embeddings, learned positions and a 2-layer transformer; returns words and their mean."""

    def __init__(self, vocab_size: int, dim: int, heads: int, layers: int = 2, max_tokens: int = MAX_TOKENS) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim, padding_idx=0)
        self.pos = nn.Parameter(torch.randn(max_tokens, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, 2 * dim, dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)

    def forward(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        pad = tokens == 0
        words = self.norm(self.encoder(self.embed(tokens) + self.pos[: tokens.shape[1]], src_key_padding_mask=pad))
        keep = (~pad).to(words.dtype)[..., None]
        return words, (words * keep).sum(1) / keep.sum(1).clamp(min=1), pad


class PointEncoder(nn.Module):
    """PointNet-tiny: two point-wise stages, max-pooling, an object stage (with the box's log-size); TFT after
    each stage when ``tft`` is on (the visual hierarchy: points, points, object)."""

    def __init__(self, dim: int, text_dim: int, tft: bool, tft_mode: str = "film", widths=(32, 64)) -> None:
        super().__init__()
        w1, w2 = widths
        self.stage1 = nn.Sequential(nn.Linear(6, w1), nn.ReLU())
        self.stage2 = nn.Sequential(nn.Linear(w1, w2), nn.ReLU())
        self.stage3 = nn.Sequential(nn.Linear(w2 + 3, dim), nn.GELU(), nn.Linear(dim, dim))
        self.norm = nn.LayerNorm(dim)
        self.tft = nn.ModuleList(TextAwareFeatureTuning(w, text_dim, tft_mode) for w in (w1, w2, dim)) if tft else None

    def forward(self, points, sizes, text, words=None, word_pad=None) -> torch.Tensor:
        x = torch.cat([points[..., :3], points[..., 3:] - 0.5], dim=-1)
        h = self.stage1(x)  # [B, N, P, w1]
        if self.tft is not None:
            h = self.tft[0](h, text, words, word_pad)
        h = self.stage2(h)
        if self.tft is not None:
            h = self.tft[1](h, text, words, word_pad)
        h = self.stage3(torch.cat([h.max(dim=2).values, torch.log(sizes)], dim=-1))  # [B, N, dim]
        if self.tft is not None:
            h = self.tft[2](h, text, words, word_pad)
        return self.norm(h)


class CrossModalLayer(nn.Module):
    """Object-to-word cross-attention, then object self-attention with the relation bias and pair values
    (y_i = sum_j a_ij (v_j + r_ij), a_ij = softmax_j(q_i k_j / sqrt(d_h) + b_ij)), then a feed-forward block."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.cross = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2, self.qkv, self.proj = nn.LayerNorm(dim), nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.norm3 = nn.LayerNorm(dim)
        self.ffn = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, o, bias, pair_value, mask, words, word_pad) -> torch.Tensor:
        o = o + self.cross(self.norm1(o), words, words, key_padding_mask=word_pad, need_weights=False)[0]
        B, N, D = o.shape
        H = self.heads
        q, k, v = self.qkv(self.norm2(o)).view(B, N, 3, H, D // H).permute(2, 0, 3, 1, 4)  # [B, H, N, dh]
        logits = q @ k.transpose(-1, -2) / (D // H) ** 0.5 + bias
        attn = torch.softmax(logits.masked_fill(~mask[:, None, None, :], float("-inf")), dim=-1)  # [B, H, N, N]
        rel = pair_value.view(B, N, N, H, D // H).permute(0, 3, 1, 2, 4)  # [B, H, N, N, dh]
        y = attn @ v + (attn[..., None] * rel).sum(-2)
        o = o + self.proj(y.transpose(1, 2).reshape(B, N, D))
        return o + self.ffn(self.norm3(o))


class TFTGrounding(nn.Module):
    """A 3D visual grounder with Text-Aware Feature Tuning and Decomposed Spectral Geometry (the defaults).

    ``relation`` picks the pair code: ``"dsg"`` (the method), ``"dsg_sym"`` / ``"dsg_anti"`` (one part only),
    ``"fourier"``, ``"mlp"``, ``"handcrafted"`` or ``"none"``; ``tft=False`` is late fusion (text enters only in the
    cross-modal layers). ``dim``, ``heads``, ``layers``: the cross-modal transformer; ``n_freq``, ``sigma``: the
    Fourier basis. Call with ``(points, boxes, tokens, mask=None)``; :meth:`tokenize` turns sentences into tokens.
    """

    def __init__(
        self,
        relation: str = "dsg",
        tft: bool = True,
        tft_mode: str = "film",
        dim: int = 64,
        heads: int = 4,
        layers: int = 2,
        n_freq: int = 32,
        sigma: float = 1.0,
        vocab: Vocabulary | None = None,
    ) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim must be divisible by heads, got {dim} and {heads}")
        self.vocab = vocab or Vocabulary()
        self.relation, self.tft, self.heads, self.layers = relation, tft, heads, layers
        self.text = TextEncoder(len(self.vocab), dim, heads)
        self.objects = PointEncoder(dim, dim, tft, tft_mode)
        code = relation_encoder(relation, PAIR_CHANNELS, n_freq, sigma)
        self.geometry = RelationCode(code, dim, PAIR_CHANNELS, heads, layers, dim)
        self.fusion = nn.ModuleList(CrossModalLayer(dim, heads) for _ in range(layers))
        self.score = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 1))

    def tokenize(self, texts: str | list[str]) -> torch.Tensor:
        """Token ids [B, L] of sentences in the benchmark's vocabulary (an unknown word raises ValueError)."""
        return torch.from_numpy(self.vocab.encode(texts))

    def forward(
        self, points: torch.Tensor, boxes: torch.Tensor, tokens: torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        mask = self._check(points, boxes, tokens, mask)
        words, sentence, word_pad = self.text(tokens)
        sizes = torch.where(mask[..., None], boxes[..., 3:], torch.ones_like(boxes[..., 3:]))
        o = self.objects(points, sizes, sentence, words, word_pad)
        bias, pair_value = self.geometry(boxes[..., :3], sentence, mask)  # per layer: [B, H, N, N], [B, N, N, dim]
        for layer, b, r in zip(self.fusion, bias, pair_value, strict=True):
            o = layer(o, b, r, mask, words, word_pad)
        return self.score(o).squeeze(-1).masked_fill(~mask, float("-inf"))

    def _check(self, points, boxes, tokens, mask) -> torch.Tensor:
        """One clear ValueError per bad input; returns the object mask."""
        if points.dim() != 4 or points.shape[-1] != 6:
            raise ValueError(f"points must be [B, N, P, 6] (local xyz, rgb), got {tuple(points.shape)}")
        B, N = points.shape[:2]
        if boxes.shape != (B, N, 6):
            raise ValueError(f"boxes must be [B, N, 6] = {(B, N, 6)} to match points, got {tuple(boxes.shape)}")
        if tokens.dim() != 2 or tokens.shape[0] != B or tokens.dtype not in (torch.int64, torch.int32):
            raise ValueError(
                f"tokens must be integer ids [B, L] with B = {B}, got {tuple(tokens.shape)} {tokens.dtype}"
            )
        if tokens.shape[1] > self.text.pos.shape[0] or bool((tokens < 0).any() | (tokens >= len(self.vocab)).any()):
            raise ValueError(f"tokens must be ids in [0, {len(self.vocab)}) and at most {self.text.pos.shape[0]} long")
        if bool((tokens == 0).all(1).any()):
            raise ValueError("an utterance is empty (all padding)")
        mask = torch.ones(B, N, dtype=torch.bool) if mask is None else mask.to(torch.bool)
        if mask.shape != (B, N):
            raise ValueError(f"mask must be [B, N] = {(B, N)}, got {tuple(mask.shape)}")
        if N == 0 or bool((~mask.any(1)).any()):
            empty = [] if N == 0 else torch.nonzero(~mask.any(1)).flatten().tolist()
            raise ValueError(f"empty scene(s) {empty or list(range(B))}: every scene needs at least one object")
        if not bool(torch.isfinite(points[mask]).all()):
            raise ValueError("points contain NaN or infinite values")
        check_boxes(boxes[mask], "boxes")
        return mask

    def n_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters() if p.requires_grad)
