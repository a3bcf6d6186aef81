"""torchao-style configs and ``quantize_``: swap every ``nn.Linear`` for a fake-quantised one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from icml26.quant._common import (
    check_blockable,
    check_scale_floor,
    four_over_six_qdq_core,
    mxfp4_qdq_core,
    nvfp4_qdq_core,
    raise_if_not_finite,
)
from icml26.quant.mixfp4.format import GlobalScale, check_options, mixfp4_qdq_core, run_core

__all__ = [
    "FakeQuantLinear",
    "FourOverSixConfig",
    "MXFP4Config",
    "MixFP4Config",
    "NVFP4Config",
    "QuantConfig",
    "quantize_",
]


@dataclass(frozen=True)
class QuantConfig:
    """Which side of each Linear to fake-quantise, which layers (by name suffix) to leave alone, and whether to
    ``torch.compile`` the activation quantiser (checked bit for bit against eager on first use per shape; the same
    bits for p = 2 and 1 in our checks, rare last-bit differences for other p; a one-off compile per input shape).

    Every option is checked when the config is built: a bad value is one clear error there, not a failure later.
    """

    weights: bool = True
    activations: bool = True
    skip: tuple[str, ...] = ("lm_head",)
    compile: bool = False
    name: str = field(default="fp", init=False)
    block: int = field(default=16, init=False)

    def __post_init__(self) -> None:
        kind = type(self).__name__
        for flag in ("weights", "activations", "compile"):
            if not isinstance(getattr(self, flag), bool):
                raise TypeError(f"{kind}.{flag} must be True or False, got {getattr(self, flag)!r}")
        if not (self.weights or self.activations):
            raise ValueError(f"{kind}(weights=False, activations=False) would quantise nothing")
        skip = (self.skip,) if isinstance(self.skip, str) else self.skip  # one name is a common slip
        if not isinstance(skip, tuple | list) or not all(isinstance(s, str) for s in skip):
            raise TypeError(f"{kind}.skip must be a tuple of layer-name suffixes, got {self.skip!r}")
        object.__setattr__(self, "skip", tuple(skip))

    def _core(self) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:  # pragma: no cover - overridden
        raise NotImplementedError

    def _options(self) -> tuple[Any, ...]:
        return ()

    def qdq(self, x: torch.Tensor, compile: bool | None = None) -> torch.Tensor:
        """Fake-quantise x along its last dimension (``compile`` defaults to the config's own flag)."""
        check_blockable(x, self.block, finite=False)
        use_compile = self.compile if compile is None else compile
        values, finite = run_core(self._core(), use_compile, x, self.block, *self._options())
        raise_if_not_finite(finite)
        return values


@dataclass(frozen=True)
class NVFP4Config(QuantConfig):
    """NVFP4 RNE fake-quant (16-blocks, E4M3 scales, dynamic FP32 tensor scale): the baseline.

    ``scale_floor=2**-6`` matches torchao 0.18 bit for bit (see :func:`icml26.quant._common.nvfp4_quantize`).
    """

    scale_floor: float | None = None
    name: str = field(default="nvfp4", init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_scale_floor(self.scale_floor)

    def _core(self) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
        return nvfp4_qdq_core

    def _options(self) -> tuple[Any, ...]:
        return (self.scale_floor,)


@dataclass(frozen=True)
class FourOverSixConfig(QuantConfig):
    """Four Over Six (arXiv 2512.02010): NVFP4 storage, each block's max mapped to 6 or 4 by block error ``p``."""

    p: float = 2.0
    scale_floor: float | None = None
    name: str = field(default="four_over_six", init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_options(self.p, "nvfp4", self.scale_floor)

    def _core(self) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
        return four_over_six_qdq_core

    def _options(self) -> tuple[Any, ...]:
        return (self.p, self.scale_floor)


@dataclass(frozen=True)
class MXFP4Config(QuantConfig):
    """OCP MXFP4 fake-quant (32-blocks, E8M0 power-of-two scales)."""

    name: str = field(default="mxfp4", init=False)
    block: int = field(default=32, init=False)

    def _core(self) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
        return mxfp4_qdq_core


@dataclass(frozen=True)
class MixFP4Config(QuantConfig):
    """MixFP4 fake-quant: per 16-block E2M1 or E1M2 by block Lp error (``p``), NVFP4's scale hierarchy."""

    p: float = 2.0
    global_scale: GlobalScale = "nvfp4"
    scale_floor: float | None = None
    name: str = field(default="mixfp4", init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_options(self.p, self.global_scale, self.scale_floor)

    def _core(self) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
        return mixfp4_qdq_core

    def _options(self) -> tuple[Any, ...]:
        return (self.p, self.global_scale, self.scale_floor)


class FakeQuantLinear(nn.Module):
    """A Linear whose weight is stored fake-quantised and whose input is fake-quantised on every call.

    Both are blocked along in_features, the GEMM reduction dimension. Activations use a dynamic tensor scale
    computed over the whole input of the call (like NVFP4's activation quantiser: batch mates share it).
    Gradients pass straight through the activation quantiser; the stored weight is frozen. The weight is
    quantised once, eagerly (``config.compile`` only concerns the per-call activation quantiser).
    """

    def __init__(self, linear: nn.Linear, config: QuantConfig) -> None:
        super().__init__()
        self.config = config
        self.in_features, self.out_features = linear.in_features, linear.out_features
        with torch.no_grad():
            w = linear.weight.detach()
            weight = config.qdq(w, compile=False) if config.weights else w.clone()
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

    Raises if the model is already quantised (quantise a fresh full-precision copy instead: quantising twice
    would stack two quantisers), if it has no Linear layer to quantise, or if a layer's in_features is not a
    multiple of the block size (name it in ``skip`` to keep it in full precision).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"quantize_ takes a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(config, QuantConfig):
        raise TypeError(
            "config must be an NVFP4Config, MixFP4Config, FourOverSixConfig or MXFP4Config, "
            f"got {type(config).__name__}"
        )
    done = [name for name, m in model.named_modules() if isinstance(m, FakeQuantLinear)]
    if done:
        first = model.get_submodule(done[0]).config.name
        raise ValueError(
            f"the model is already quantised ({len(done)} FakeQuantLinear layers, e.g. {done[0]!r} with {first}); "
            "quantise a fresh full-precision copy instead"
        )
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
