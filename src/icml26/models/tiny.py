"""A tiny random Llama for smoke profiles and tests: the real architecture, no download, fixed weights."""

from __future__ import annotations

from typing import Any

_DEFAULTS: dict[str, Any] = {
    "vocab_size": 64,
    "hidden_size": 48,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 64,
}


def tiny_llama(seed: int = 0, **config: Any) -> Any:
    """``LlamaForCausalLM`` in eval mode with random weights drawn under ``torch.manual_seed(seed)`` inside a forked
    RNG (the caller's global generator is left alone); ``config`` overrides the small ``LlamaConfig`` defaults."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return LlamaForCausalLM(LlamaConfig(**(_DEFAULTS | config))).eval()
