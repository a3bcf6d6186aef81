"""GPU and model specifications, and the KV-cache capacity they leave.

A serving step reads the weights once and the KV cache of every decoding request, and multiplies every token by
every weight. Two numbers per GPU (peak dense bf16 FLOP/s, HBM bandwidth) and a few per model (parameter count,
KV bytes per token) are enough for the roofline backend (``cost.RooflineStepCost``) and for the KV capacity

    C = (memory - weight bytes) * gpu_memory_utilization / (KV bytes per token),      (notes: util = 0.9)

which is what bounds concurrency in the simulator (``simulator.ServingSimulator``).

All GPU numbers are public spec-sheet values, rounded, and **approximate**: dense (not sparse) bf16 tensor
throughput, and the vendor's peak bandwidth. Model configs use Hugging Face / vLLM ``config.json`` names, so
``ModelSpec.from_hf_config(json.load(f))`` works on a real checkpoint's config.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["GPUS", "MODELS", "GPUSpec", "ModelSpec", "get_gpu", "get_model", "kv_capacity_tokens"]


@dataclass(frozen=True)
class GPUSpec:
    """One accelerator: memory (bytes), HBM bandwidth (bytes/s), dense bf16 tensor FLOP/s. Approximate."""

    name: str
    memory_bytes: float
    bandwidth_bytes_per_s: float
    bf16_flops: float

    def __post_init__(self) -> None:
        for field_name in ("memory_bytes", "bandwidth_bytes_per_s", "bf16_flops"):
            value = getattr(self, field_name)
            if not value > 0:
                raise ValueError(f"GPUSpec {self.name!r}: {field_name} must be positive, got {value!r}")

    @property
    def ridge_point(self) -> float:
        """Arithmetic intensity (FLOP/byte) above which a kernel is compute-bound (Williams et al. 2009)."""
        return self.bf16_flops / self.bandwidth_bytes_per_s


# Spec sheets (approximate; dense bf16). The notes give memory and bandwidth for H200, RTX PRO 6000 and L40S.
GPUS: dict[str, GPUSpec] = {
    "h200": GPUSpec("h200", 141e9, 4.8e12, 989e12),
    "h100": GPUSpec("h100", 80e9, 3.35e12, 989e12),
    "rtx_pro_6000": GPUSpec("rtx_pro_6000", 96e9, 1.792e12, 500e12),
    "l40s": GPUSpec("l40s", 48e9, 0.864e12, 362e12),
}


@dataclass(frozen=True)
class ModelSpec:
    """A dense decoder-only transformer, in Hugging Face config terms (bf16 by default)."""

    name: str
    num_hidden_layers: int
    hidden_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_word_embeddings: bool = False
    bytes_per_param: int = 2

    def __post_init__(self) -> None:
        for field_name in (
            "num_hidden_layers",
            "hidden_size",
            "num_attention_heads",
            "num_key_value_heads",
            "head_dim",
            "intermediate_size",
            "vocab_size",
            "bytes_per_param",
        ):
            value = getattr(self, field_name)
            if not (isinstance(value, int) and value > 0):
                raise ValueError(f"ModelSpec {self.name!r}: {field_name} must be a positive integer, got {value!r}")

    @classmethod
    def from_hf_config(cls, config: Mapping[str, Any], name: str | None = None) -> ModelSpec:
        """Build from a ``config.json`` mapping (``head_dim`` defaults to hidden_size / num_attention_heads)."""
        try:
            heads = int(config["num_attention_heads"])
            hidden = int(config["hidden_size"])
            return cls(
                name=name or str(config.get("_name_or_path", config.get("model_type", "model"))),
                num_hidden_layers=int(config["num_hidden_layers"]),
                hidden_size=hidden,
                num_attention_heads=heads,
                num_key_value_heads=int(config.get("num_key_value_heads", heads)),
                head_dim=int(config.get("head_dim") or hidden // heads),
                intermediate_size=int(config["intermediate_size"]),
                vocab_size=int(config["vocab_size"]),
                tie_word_embeddings=bool(config.get("tie_word_embeddings", False)),
            )
        except KeyError as exc:
            raise ValueError(f"HF config lacks {exc.args[0]!r}, which a ModelSpec needs") from None

    @property
    def layer_params(self) -> int:
        """Weights of one layer: q, k, v, o projections and a gated (SwiGLU) MLP; norms are negligible."""
        q_o = 2 * self.hidden_size * self.num_attention_heads * self.head_dim
        k_v = 2 * self.hidden_size * self.num_key_value_heads * self.head_dim
        return q_o + k_v + 3 * self.hidden_size * self.intermediate_size

    @property
    def matmul_params(self) -> int:
        """Weights every token multiplies: all layers plus the LM head (the input embedding is a lookup)."""
        return self.num_hidden_layers * self.layer_params + self.vocab_size * self.hidden_size

    @property
    def num_params(self) -> int:
        embeddings = self.vocab_size * self.hidden_size * (1 if self.tie_word_embeddings else 2)
        return self.num_hidden_layers * self.layer_params + embeddings

    @property
    def weight_bytes(self) -> int:
        return self.num_params * self.bytes_per_param

    @property
    def kv_bytes_per_token(self) -> int:
        """K and V of every layer: 2 * layers * kv_heads * head_dim * bytes (Qwen3-8B: 144 KiB in bf16)."""
        return 2 * self.num_hidden_layers * self.num_key_value_heads * self.head_dim * self.bytes_per_param

    @property
    def attention_flops_per_context_token(self) -> int:
        """FLOPs one query token spends per cached token: QK^T and PV, 2 * 2 * heads * head_dim per layer."""
        return 4 * self.num_hidden_layers * self.num_attention_heads * self.head_dim


MODELS: dict[str, ModelSpec] = {
    # meta-llama/Meta-Llama-3-8B config.json
    "llama3_8b": ModelSpec("llama3_8b", 32, 4096, 32, 8, 128, 14336, 128256),
    # meta-llama/Meta-Llama-3-70B config.json
    "llama3_70b": ModelSpec("llama3_70b", 80, 8192, 64, 8, 128, 28672, 128256),
    # Qwen/Qwen3-8B config.json (explicit head_dim 128; untied embeddings)
    "qwen3_8b": ModelSpec("qwen3_8b", 36, 4096, 32, 8, 128, 12288, 151936),
}


def _lookup(table: Mapping[str, Any], name: str, what: str) -> Any:
    key = name.lower().replace("-", "_").replace(" ", "_")
    if key not in table:
        raise ValueError(f"unknown {what} {name!r}; known: {sorted(table)}")
    return table[key]


def get_gpu(name: str | GPUSpec) -> GPUSpec:
    """A preset by name (``"h200"``, ``"rtx_pro_6000"``, ``"l40s"``, ``"h100"``), or the spec itself."""
    return name if isinstance(name, GPUSpec) else _lookup(GPUS, name, "GPU preset")


def get_model(name: str | ModelSpec) -> ModelSpec:
    """A preset by name (``"qwen3_8b"``, ``"llama3_8b"``, ``"llama3_70b"``), or the spec itself."""
    return name if isinstance(name, ModelSpec) else _lookup(MODELS, name, "model preset")


def kv_capacity_tokens(
    gpu: str | GPUSpec, model: str | ModelSpec, gpu_memory_utilization: float = 0.9, num_gpus: int = 1
) -> int:
    """KV-cache capacity in tokens: (memory - weights) * utilisation / KV bytes per token (notes' protocol).

    ``num_gpus`` > 1 is tensor parallelism: memory adds up and each GPU holds a shard of weights and KV.
    """
    g, m = get_gpu(gpu), get_model(model)
    if not 0 < gpu_memory_utilization <= 1:
        raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {gpu_memory_utilization}")
    if num_gpus < 1:
        raise ValueError(f"num_gpus must be >= 1, got {num_gpus}")
    free = g.memory_bytes * num_gpus - m.weight_bytes
    capacity = int(free * gpu_memory_utilization // m.kv_bytes_per_token)
    if capacity <= 0:
        raise ValueError(
            f"{m.name} ({m.weight_bytes / 1e9:.0f} GB of weights) does not fit on {num_gpus} x {g.name} "
            f"({g.memory_bytes / 1e9:.0f} GB each): no room left for a KV cache"
        )
    return capacity
