"""torchao-style configs and ``quantize_``: swap every ``nn.Linear`` for a fake-quantised one."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from icml26.quant._common import dequantize, mxfp4_quantize, nvfp4_quantize
from icml26.quant.mixfp4.format import GlobalScale, compiled, mixfp4_qdq

__all__ = ["FakeQuantLinear", "MXFP4Config", "MixFP4Config", "NVFP4Config", "QuantConfig", "quantize_"]


@dataclass(frozen=True)
class QuantConfig:
    """Which side of each Linear to fake-quantise, and which layers (by name suffix) to leave alone."""

    weights: bool = True
    activations: bool = True
    skip: tuple[str, ...] = ("lm_head",)
    name: str = field(default="fp", init=False)
    block: int = field(default=16, init=False)

    def qdq(self, x: torch.Tensor) -> torch.Tensor:  # pragma: no cover - overridden
        raise NotImplementedError


@dataclass(frozen=True)
class NVFP4Config(QuantConfig):
    """NVFP4 RNE fake-quant (16-blocks, E4M3 scales, dynamic FP32 tensor scale): the baseline."""

    name: str = field(default="nvfp4", init=False)

    def qdq(self, x: torch.Tensor) -> torch.Tensor:
        return dequantize(nvfp4_quantize(x, self.block))


@dataclass(frozen=True)
class MXFP4Config(QuantConfig):
    """OCP MXFP4 fake-quant (32-blocks, E8M0 power-of-two scales)."""

    name: str = field(default="mxfp4", init=False)
    block: int = field(default=32, init=False)

    def qdq(self, x: torch.Tensor) -> torch.Tensor:
        return dequantize(mxfp4_quantize(x, self.block))


@dataclass(frozen=True)
class MixFP4Config(QuantConfig):
    """MixFP4 fake-quant: per 16-block E2M1 or E1M2 by block Lp error (``p``), NVFP4's scale hierarchy."""

    p: float = 2.0
    global_scale: GlobalScale = "nvfp4"
    compile: bool = False  # torch.compile the fake-quant (bit-identical; a one-off compile per input shape)
    name: str = field(default="mixfp4", init=False)

    def qdq(self, x: torch.Tensor) -> torch.Tensor:
        fn = compiled("qdq") if self.compile else mixfp4_qdq
        return fn(x, self.block, self.p, self.global_scale)


class FakeQuantLinear(nn.Module):
    """A Linear whose weight is stored fake-quantised and whose input is fake-quantised on every call.

    Both are blocked along in_features, the GEMM reduction dimension. Activations use a dynamic tensor scale
    computed over the whole input of the call (like NVFP4's activation quantiser: batch mates share it).
    Gradients pass straight through the activation quantiser; the stored weight is frozen.
    """

    def __init__(self, linear: nn.Linear, config: QuantConfig) -> None:
        super().__init__()
        self.config = config
        self.in_features, self.out_features = linear.in_features, linear.out_features
        with torch.no_grad():
            weight = config.qdq(linear.weight) if config.weights else linear.weight.detach().clone()
        self.weight = nn.Parameter(weight, requires_grad=False)
        self.bias = None if linear.bias is None else nn.Parameter(linear.bias.detach().clone(), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.config.activations:
            q = self.config.qdq(x.detach())
            # straight-through estimator when a gradient is wanted (quantisation-aware training, probing)
            x = x + (q - x).detach() if x.requires_grad and torch.is_grad_enabled() else q
        return nn.functional.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        c = self.config
        return f"in={self.in_features}, out={self.out_features}, {c.name}, weights={c.weights}, acts={c.activations}"


def quantize_(model: nn.Module, config: QuantConfig) -> nn.Module:
    """Replace, in place, every ``nn.Linear`` not matched by ``config.skip`` with a :class:`FakeQuantLinear`.

    Raises if the model has no Linear layer to quantise, or if a layer's in_features is not a multiple of the
    block size (name it in ``skip`` to keep it in full precision).
    """
    if not isinstance(config, QuantConfig):
        raise TypeError(f"config must be an NVFP4Config, MXFP4Config or MixFP4Config, got {type(config).__name__}")
    targets: list[tuple[nn.Module, str, nn.Linear, str]] = []
    for name, module in model.named_modules():
        for child_name, child in module.named_children():
            full = f"{name}.{child_name}" if name else child_name
            if isinstance(child, nn.Linear) and not any(full.endswith(s) for s in config.skip):
                targets.append((module, child_name, child, full))
    if not targets:
        raise ValueError("the model has no nn.Linear layer to quantise (or all are in config.skip)")
    bad = [full for _, _, lin, full in targets if lin.in_features % config.block]
    if bad:
        raise ValueError(f"in_features not a multiple of {config.block} in {bad[:5]}; add them to skip")
    for parent, child_name, child, _ in targets:
        setattr(parent, child_name, FakeQuantLinear(child, config))
    return model
