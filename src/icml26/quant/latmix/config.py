"""torchao-style configs: which MX format, which transform at every site, how learned transforms are fitted."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from icml26.quant._common import MX_ELEMENTS, MX_SCALE_MODES
from icml26.quant.latmix.transforms import (
    INITS,
    CayleyOrthogonal,
    HadamardTransform,
    InvertibleAffine,
    SiteTransform,
)

__all__ = ["FORMATS", "CayleyConfig", "HadamardConfig", "LATMiXConfig", "MXConfig"]

FORMATS: dict[str, str] = {
    "mxfp4": "fp4_e2m1",
    "mxfp6_e2m3": "fp6_e2m3",
    "mxfp6_e3m2": "fp6_e3m2",
    "mxfp8_e4m3": "fp8_e4m3",
    "mxfp8_e5m2": "fp8_e5m2",
    "mxint8": "int8",
}
"""MX format names (OCP v1.0) -> element format of :data:`icml26.quant._common.MX_ELEMENTS`."""
OBJECTIVES = ("layer_mse", "row_scale")


def _positive_int(kind: str, name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{kind}.{name} must be a positive integer, got {value!r}")


@dataclass(frozen=True)
class MXConfig:
    """MX fake-quantisation of every ``nn.Linear`` (but ``skip``) with no transform: round-to-nearest (RTN).

    ``fmt``: one of :data:`FORMATS` (MXFP4 by default); ``block_size``: elements per shared E8M0 scale, along
    in_features (the GEMM reduction dimension) for weights and activations alike; ``scale_mode``: ``"floor"``
    (OCP) or ``"ceil"``. ``weights``/``activations`` choose the sides quantised (W4A4 by default).
    """

    fmt: str = "mxfp4"
    block_size: int = 32
    scale_mode: str = "floor"
    weights: bool = True
    activations: bool = True
    skip: tuple[str, ...] = ("lm_head",)
    name: str = field(default="rtn", init=False)
    learned: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        kind = type(self).__name__
        if self.fmt not in FORMATS:
            raise ValueError(f"{kind}.fmt must be one of {sorted(FORMATS)}, got {self.fmt!r}")
        _positive_int(kind, "block_size", self.block_size)
        if self.scale_mode not in MX_SCALE_MODES:
            raise ValueError(f"{kind}.scale_mode must be one of {MX_SCALE_MODES}, got {self.scale_mode!r}")
        for flag in ("weights", "activations"):
            if not isinstance(getattr(self, flag), bool):
                raise TypeError(f"{kind}.{flag} must be True or False, got {getattr(self, flag)!r}")
        skip = (self.skip,) if isinstance(self.skip, str) else self.skip
        if not isinstance(skip, tuple | list) or not all(isinstance(s, str) for s in skip):
            raise TypeError(f"{kind}.skip must be a tuple of layer-name suffixes, got {self.skip!r}")
        object.__setattr__(self, "skip", tuple(skip))

    @property
    def elem(self) -> str:
        return FORMATS[self.fmt]

    def make_transform(self, dim: int, site_index: int) -> SiteTransform | None:
        """The transform of one site before any fitting (None: no transform)."""
        return None


@dataclass(frozen=True)
class HadamardConfig(MXConfig):
    """MX with a fixed Hadamard transform at every site: ``transform_block=None`` is QuaRot-like (one randomised
    d x d Hadamard per site, applied online), ``transform_block=32`` the block Hadamard matched to MX blocks."""

    transform_block: int | None = None
    randomized: bool = True
    seed: int = 0
    name: str = field(default="hadamard", init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.transform_block is not None:
            _positive_int(type(self).__name__, "transform_block", self.transform_block)

    def make_transform(self, dim: int, site_index: int) -> SiteTransform:
        return HadamardTransform(dim, self.transform_block, self.randomized, self.seed + site_index)


@dataclass(frozen=True)
class _Learned(MXConfig):
    """Options shared by the learned transforms: Adam on the layer-output error through the quantiser (STE)."""

    transform_block: int | None = 32
    init: str = "hadamard"
    steps: int = 30
    lr: float = 5e-3
    n_calib_tokens: int = 512
    objective: str = "layer_mse"
    cond_penalty: float = 0.0
    keep_best: bool = True
    max_rows: int | None = 512
    seed: int = 0
    ste: bool | str = "scale"
    learned: bool = field(default=True, init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        kind = type(self).__name__
        if self.transform_block is not None:
            _positive_int(kind, "transform_block", self.transform_block)
        if self.init not in INITS:
            raise ValueError(f"{kind}.init must be one of {INITS}, got {self.init!r}")
        _positive_int(kind, "n_calib_tokens", self.n_calib_tokens)
        if isinstance(self.steps, bool) or not isinstance(self.steps, int) or self.steps < 0:
            raise ValueError(f"{kind}.steps must be a non-negative integer, got {self.steps!r}")
        if not (isinstance(self.lr, int | float) and self.lr > 0):
            raise ValueError(f"{kind}.lr must be a positive number, got {self.lr!r}")
        if self.max_rows is not None:
            _positive_int(kind, "max_rows", self.max_rows)
        if self.ste not in (True, "scale"):
            raise ValueError(f"{kind}.ste must be True (plain straight-through) or 'scale', got {self.ste!r}")
        if self.objective not in OBJECTIVES:
            raise ValueError(f"{kind}.objective must be one of {OBJECTIVES}, got {self.objective!r}")
        if not (isinstance(self.cond_penalty, int | float) and self.cond_penalty >= 0):
            raise ValueError(f"{kind}.cond_penalty must be a number >= 0, got {self.cond_penalty!r}")


@dataclass(frozen=True)
class CayleyConfig(_Learned):
    """A learned orthogonal block per site (SpinQuant-like Cayley parameterisation), same loss and budget as
    LATMiX: the "rotations only" baseline."""

    name: str = field(default="cayley", init=False)

    def make_transform(self, dim: int, site_index: int) -> SiteTransform:
        return CayleyOrthogonal(dim, self.transform_block, self.init)


@dataclass(frozen=True)
class LATMiXConfig(_Learned):
    """LATMiX: a learned invertible affine map x A + b at every site, fitted through the MX quantiser.

    ``structure``: ``"block_diag"`` (A has ``transform_block`` x ``transform_block`` blocks, 32 by default,
    aligned with the MX blocks) or ``"full"`` (one d x d matrix). ``init``: the start of A ("hadamard", the
    normalised block Hadamard, or "identity"). ``learn_bias``: learn b (translation cancelled after the quantiser).
    ``steps``/``lr``/``n_calib_tokens``: Adam budget per site; ``objective``: ``"layer_mse"`` (relative error of
    the quantised layer output, the default) or ``"row_scale"`` (our ablation: the same loss with the MX blocks
    replaced by one scale per row, a quantiser that ignores MX's block structure); ``cond_penalty``: weight of
    mean log cond(A_n) in the loss; ``max_cond``: installing a transform with a larger cond(A) raises;
    ``keep_best``: keep the start instead of the last iterate if it scores lower on the calibration
    loss (every row); ``max_rows``: rows of
    the stacked consumer weight drawn (without replacement, from ``seed``) at each step, an unbiased estimate of
    the loss that makes wide sites (gate/up: 3072 rows) affordable on a CPU (``None``: every row; our choice);
    ``ste``: the gradient through the quantisers, ``"scale"`` (straight-through plus the gradient through the
    shared block scale, LSQ-style; our choice: with the plain straight-through estimator, ``True``, the bias b gets
    exactly zero gradient because (Q(xA + b) - b) passes d/db = I - I).
    """

    structure: str = "block_diag"
    learn_bias: bool = True
    max_cond: float = 1e4
    name: str = field(default="latmix", init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.structure not in ("block_diag", "full"):
            raise ValueError(f"LATMiXConfig.structure must be 'block_diag' or 'full', got {self.structure!r}")
        if not isinstance(self.learn_bias, bool):
            raise TypeError(f"LATMiXConfig.learn_bias must be True or False, got {self.learn_bias!r}")
        if not (isinstance(self.max_cond, int | float) and self.max_cond > 1):
            raise ValueError(f"LATMiXConfig.max_cond must be a number > 1, got {self.max_cond!r}")

    def make_transform(self, dim: int, site_index: int) -> SiteTransform:
        block = None if self.structure == "full" else self.transform_block
        return InvertibleAffine(dim, block, self.init, self.learn_bias)


assert set(FORMATS.values()) <= set(MX_ELEMENTS)
