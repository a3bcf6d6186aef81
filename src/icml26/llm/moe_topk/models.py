"""The two models of the reproduction, built on :class:`TopKMoE`: a token-wise MoE regressor (the synthetic
mixture of regressions) and a small causal character-level MoE transformer (the language-model profile).

Both return ``(task_loss, aux_loss)`` from ``loss(batch)`` so that training adds them and the gradient-norm probe
reads the task loss alone; their architecture is exactly what :func:`icml26.llm.moe_topk.flops_per_token` counts.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from icml26.llm.moe_topk.flops import MoEConfig
from icml26.llm.moe_topk.layer import TopKMoE

__all__ = ["CharMoELM", "MoERegressor", "build_model"]


def _moe(config: MoEConfig, experts_implementation: str) -> TopKMoE:
    return TopKMoE(
        config.hidden_size,
        config.intermediate_size,
        config.num_experts,
        config.num_experts_per_tok,
        router_aux_loss_coef=config.router_aux_loss_coef,
        norm_topk_prob=config.norm_topk_prob,
        experts_implementation=experts_implementation,
    )


class MoERegressor(nn.Module):
    """x -> in_proj -> [h + MoE(RMSNorm(h))] x layers -> RMSNorm -> head; loss = mean squared error."""

    def __init__(self, config: MoEConfig, experts_implementation: str = "grouped_mm") -> None:
        super().__init__()
        if config.is_language_model:
            raise ValueError("MoERegressor needs a token-wise config (num_attention_heads = 0)")
        self.config = config
        self.in_proj = nn.Linear(config.input_size, config.hidden_size)
        self.norms = nn.ModuleList(nn.RMSNorm(config.hidden_size) for _ in range(config.num_hidden_layers))
        self.moes = nn.ModuleList(_moe(config, experts_implementation) for _ in range(config.num_hidden_layers))
        self.norm = nn.RMSNorm(config.hidden_size)
        self.head = nn.Linear(config.hidden_size, config.output_size)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if x.ndim < 1 or x.shape[-1] != self.config.input_size:
            raise ValueError(f"inputs must have shape (..., input_size={self.config.input_size}), got {tuple(x.shape)}")
        h = self.in_proj(x)
        aux = h.new_zeros(())
        for norm, moe in zip(self.norms, self.moes, strict=True):
            out, a = moe(norm(h))
            h, aux = h + out, aux + a
        return self.head(self.norm(h)), aux

    def loss(self, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = batch
        pred, aux = self(x)
        return F.mse_loss(pred, y), aux


class _Attention(nn.Module):
    """Causal multi-head self-attention, written out (the full score matrix, masked): what the FLOP count counts."""

    def __init__(self, hidden_size: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden_size, 3 * hidden_size, bias=False)
        self.out = nn.Linear(hidden_size, hidden_size, bias=False)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        b, s, d = h.shape
        q, k, v = self.qkv(h).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(d // self.heads)
        causal = torch.ones(s, s, dtype=torch.bool, device=h.device).triu(1)
        att = torch.softmax(scores.masked_fill(causal, float("-inf")), dim=-1)
        return self.out((att @ v).transpose(1, 2).reshape(b, s, d))


class CharMoELM(nn.Module):
    """Pre-norm causal transformer: token + learned position embeddings, [attention, MoE FFN] x layers, untied LM
    head; ``loss(ids)`` is the mean next-character cross-entropy (nats) over a (batch, seq + 1) id tensor."""

    def __init__(self, config: MoEConfig, experts_implementation: str = "grouped_mm") -> None:
        super().__init__()
        if not config.is_language_model:
            raise ValueError("CharMoELM needs num_attention_heads > 0 and vocab_size > 0")
        self.config = config
        h = config.hidden_size
        self.embed = nn.Embedding(config.vocab_size, h)
        self.position = nn.Embedding(config.max_position_embeddings, h)
        self.attn_norms = nn.ModuleList(nn.RMSNorm(h) for _ in range(config.num_hidden_layers))
        self.attns = nn.ModuleList(_Attention(h, config.num_attention_heads) for _ in range(config.num_hidden_layers))
        self.moe_norms = nn.ModuleList(nn.RMSNorm(h) for _ in range(config.num_hidden_layers))
        self.moes = nn.ModuleList(_moe(config, experts_implementation) for _ in range(config.num_hidden_layers))
        self.norm = nn.RMSNorm(h)
        self.head = nn.Linear(h, config.vocab_size, bias=False)
        nn.init.normal_(self.embed.weight, std=0.02)
        nn.init.normal_(self.position.weight, std=0.02)

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if ids.ndim != 2 or ids.dtype not in (torch.int32, torch.int64):
            raise ValueError(f"ids must be an integer tensor (batch, sequence), got {ids.dtype} {tuple(ids.shape)}")
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.config.vocab_size):
            raise ValueError(f"ids must lie in [0, vocab_size={self.config.vocab_size})")
        s = ids.shape[1]
        if s > self.config.max_position_embeddings:
            raise ValueError(
                f"sequence length {s} exceeds max_position_embeddings {self.config.max_position_embeddings}"
            )
        h = self.embed(ids) + self.position.weight[:s]
        aux = h.new_zeros(())
        for an, attn, mn, moe in zip(self.attn_norms, self.attns, self.moe_norms, self.moes, strict=True):
            h = h + attn(an(h))
            out, a = moe(mn(h))
            h, aux = h + out, aux + a
        return self.head(self.norm(h)), aux

    def loss(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits, aux = self(ids[:, :-1])
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1)), aux


def build_model(config: MoEConfig, experts_implementation: str = "grouped_mm") -> nn.Module:
    """The model the config describes: a :class:`CharMoELM` with attention heads, else a :class:`MoERegressor`."""
    cls = CharMoELM if config.is_language_model else MoERegressor
    return cls(config, experts_implementation)
