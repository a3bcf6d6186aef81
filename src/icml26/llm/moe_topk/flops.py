"""Exact training FLOPs of the models in this room, per token and per step, split into the non-expert cost c0 and
the cost c_e of one active expert, so that one step costs (c0 + K c_e) x tokens (torch-free).

Convention (Kaplan et al. 2020, Hoffmann et al. 2022): 2 FLOPs per multiply-add of every matrix product; the
backward pass costs twice the forward for each product whose input needs a gradient and once (the weight gradient
only) for the first projection of data that needs none; elementwise work (softmax, activations, norms, gate
scaling, biases) is not counted. Attention counts what the kernel computes: the full (seq x seq) score and value
products, masked or not. Counting only active experts is what makes the cost depend on K; counting the router,
attention, embeddings' head and input projection is what makes c0 > 0. The counts are checked against torch's
``FlopCounterMode`` on the models' reference (eager) path in the tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

__all__ = ["FlopCount", "MoEConfig", "flops_per_step", "flops_per_token", "steps_for_budget"]


def _positive_int(name: str, value: Any, allow_zero: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if allow_zero else 1):
        raise ValueError(f"{name} must be a {'non-negative' if allow_zero else 'positive'} int, got {value!r}")


@dataclass(frozen=True)
class MoEConfig:
    """A small MoE model, with transformers' field names.

    ``num_attention_heads = 0`` makes a token-wise model (the synthetic regression: ``input_size`` features in,
    ``output_size`` targets out, inputs are data); otherwise a causal character LM over ``vocab_size`` symbols with
    context ``max_position_embeddings`` (its training windows). ``intermediate_size`` is one expert's SwiGLU width.
    """

    hidden_size: int = 16
    intermediate_size: int = 32
    num_experts: int = 16
    num_experts_per_tok: int = 2
    num_hidden_layers: int = 1
    num_attention_heads: int = 0
    max_position_embeddings: int = 1
    vocab_size: int = 0
    input_size: int = 16
    output_size: int = 8
    router_aux_loss_coef: float = 0.01
    norm_topk_prob: bool = True

    def __post_init__(self) -> None:
        for name in ("hidden_size", "intermediate_size", "num_experts", "num_hidden_layers", "max_position_embeddings"):
            _positive_int(name, getattr(self, name))
        for name in ("num_attention_heads", "vocab_size", "input_size", "output_size"):
            _positive_int(name, getattr(self, name), allow_zero=True)
        _positive_int("num_experts_per_tok", self.num_experts_per_tok)
        if self.num_experts_per_tok > self.num_experts:
            raise ValueError(
                f"num_experts_per_tok (K = {self.num_experts_per_tok}) cannot exceed num_experts "
                f"(M = {self.num_experts})"
            )
        if self.is_language_model:
            if self.vocab_size < 1:
                raise ValueError("a language model (num_attention_heads > 0) needs vocab_size >= 1")
            if self.hidden_size % self.num_attention_heads:
                raise ValueError(
                    f"hidden_size {self.hidden_size} is not divisible by num_attention_heads {self.num_attention_heads}"
                )
        elif self.input_size < 1 or self.output_size < 1:
            raise ValueError("a token-wise model (num_attention_heads = 0) needs input_size and output_size >= 1")
        if not (math.isfinite(self.router_aux_loss_coef) and self.router_aux_loss_coef >= 0):
            raise ValueError(f"router_aux_loss_coef must be finite and >= 0, got {self.router_aux_loss_coef}")

    @property
    def is_language_model(self) -> bool:
        return self.num_attention_heads > 0

    def with_k(self, k: int) -> MoEConfig:
        """The same model with K active experts per token."""
        return replace(self, num_experts_per_tok=k)


@dataclass(frozen=True)
class FlopCount:
    """FLOPs per token of one training step (forward + backward), by part; ``total = c0 + k * c_e``."""

    k: int
    router: float
    experts: float
    attention: float
    dense: float  # everything else that is not an expert: input projection or LM head, attention projections
    c0: float  # non-expert cost per token: router + attention + dense
    c_e: float  # cost of one active expert per token, summed over layers
    forward: float  # forward-only FLOPs per token
    total: float

    def as_dict(self) -> dict[str, float]:
        return {k: float(v) for k, v in self.__dict__.items()}


def flops_per_token(config: MoEConfig, k: int | None = None) -> FlopCount:
    """Training FLOPs per token at K = ``k`` (default ``config.num_experts_per_tok``); see the module docstring."""
    if not isinstance(config, MoEConfig):
        raise TypeError(f"config must be a MoEConfig, got {type(config).__name__}")
    k = config.num_experts_per_tok if k is None else k
    config.with_k(k)  # validates 1 <= k <= M
    h, i, m, layers = config.hidden_size, config.intermediate_size, config.num_experts, config.num_hidden_layers
    fwd_router = layers * 2 * h * m
    fwd_expert = layers * 2 * (h * 2 * i + i * h)  # gate_up (h -> 2i) and down (i -> h), one expert
    if config.is_language_model:
        s = config.max_position_embeddings
        fwd_attention_proj = layers * 2 * (h * 3 * h + h * h)  # qkv and output projections
        fwd_scores = layers * 2 * (2 * s * h)  # Q K^T and A V over the full (s x s) matrices
        fwd_head = 2 * h * config.vocab_size
        fwd_dense = fwd_attention_proj + fwd_head
        train_dense = 3 * fwd_dense
        fwd_attention = fwd_scores
    else:
        fwd_in = 2 * config.input_size * h
        fwd_head = 2 * h * config.output_size
        fwd_dense = fwd_in + fwd_head
        train_dense = 2 * fwd_in + 3 * fwd_head  # the inputs are data: no input gradient for the first product
        fwd_attention = 0
    router, attention, expert = 3 * fwd_router, 3 * fwd_attention, 3 * fwd_expert
    c0 = router + attention + train_dense
    return FlopCount(
        k=k,
        router=float(router),
        experts=float(k * expert),
        attention=float(attention),
        dense=float(train_dense),
        c0=float(c0),
        c_e=float(expert),
        forward=float(fwd_router + fwd_attention + fwd_dense + k * fwd_expert),
        total=float(c0 + k * expert),
    )


def flops_per_step(config: MoEConfig, tokens_per_step: int, k: int | None = None) -> float:
    """Training FLOPs of one optimiser step over ``tokens_per_step`` tokens (batch x sequence length)."""
    _positive_int("tokens_per_step", tokens_per_step)
    return flops_per_token(config, k).total * tokens_per_step


def steps_for_budget(budget: float, config: MoEConfig, k: int, tokens_per_step: int) -> int:
    """T(K) = floor(R / cost(K)): the optimiser steps a budget of R training FLOPs buys at K experts per token.

    Raises ``ValueError`` when R does not pay for a single step (or is not a positive finite number)."""
    if isinstance(budget, bool) or not isinstance(budget, int | float) or not math.isfinite(budget) or budget <= 0:
        raise ValueError(f"budget must be a positive finite number of FLOPs, got {budget!r}")
    step = flops_per_step(config, tokens_per_step, k)
    steps = math.floor(budget / step * (1 + 1e-12))  # R = T * cost exactly must buy T steps despite rounding
    if steps < 1:
        raise ValueError(
            f"budget {budget:.4g} FLOPs is too small for one training step at K = {k} "
            f"({step:.4g} FLOPs per step of {tokens_per_step} tokens)"
        )
    return steps
