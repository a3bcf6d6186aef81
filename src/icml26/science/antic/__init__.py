"""ANTIC: Adaptive Neural Temporal In situ Compressor (placeholder docstring, expanded below)."""

from icml26.science.antic.codecs import SZ3Codec, ZFPCodec, match_error, relative_l2
from icml26.science.antic.compressor import ANTIC, CompressedTrajectory, FixedSelector, interpolate_frames
from icml26.science.antic.field import FourierFeatures, LoRALinear, NeuralField
from icml26.science.antic.selector import (
    EnstrophySelector,
    InterpolationErrorSelector,
    TemporalSelector,
    UniformSelector,
    uniform_indices,
)
from icml26.science.antic.solver import CFLError, KolmogorovFlow2D, taylor_green_vorticity

ANTICCompressor = ANTIC

__all__ = [
    "ANTIC",
    "ANTICCompressor",
    "CFLError",
    "CompressedTrajectory",
    "EnstrophySelector",
    "FixedSelector",
    "FourierFeatures",
    "InterpolationErrorSelector",
    "KolmogorovFlow2D",
    "LoRALinear",
    "NeuralField",
    "SZ3Codec",
    "TemporalSelector",
    "UniformSelector",
    "ZFPCodec",
    "interpolate_frames",
    "match_error",
    "relative_l2",
    "taylor_green_vorticity",
    "uniform_indices",
]
