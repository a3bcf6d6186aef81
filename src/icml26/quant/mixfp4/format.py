"""MixFP4 encode/decode: per 16-block, E2M1 or E1M2 under NVFP4's scales, the choice in the scale's sign bit."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from functools import cache
from typing import Any, Literal

import torch

from icml26.quant._common import (
    E4M3_MAX,
    BlockTensor,
    _blocks,
    _e2m1_round,
    _e4m3_block_scale,
    _multiplier,
    block_error,
    check_blockable,
    check_scale_floor,
    e2m2_decode,
    e4m3_decode,
    nvfp4_global_scale,
    pack_nibbles,
    raise_if_not_finite,
    to_e2m2,
    unpack_nibbles,
)

__all__ = [
    "GlobalScale",
    "check_options",
    "compile_core",
    "compiled",
    "e2m2_matmul",
    "format_share",
    "mixfp4_qdq",
    "mixfp4_qdq_core",
    "quantize_mixfp4",
    "run_core",
]

GlobalScale = Literal["nvfp4", "e1m2_safe"]
_GLOBAL_SCALES = ("nvfp4", "e1m2_safe")


def check_options(p: float, global_scale: str, scale_floor: float | None = None) -> None:
    """One clear error for each bad option (called by the functions and by :class:`MixFP4Config` at construction)."""
    if isinstance(p, bool) or not isinstance(p, int | float):
        raise TypeError(f"the selection exponent p must be a number, got {type(p).__name__} {p!r}")
    if not (p > 0 and math.isfinite(p)):
        raise ValueError(f"the selection exponent p must be positive and finite, got {p!r}")
    if not isinstance(global_scale, str) or global_scale not in _GLOBAL_SCALES:
        raise ValueError(f"global_scale must be 'nvfp4' or 'e1m2_safe', got {global_scale!r}")
    check_scale_floor(scale_floor)


def _e1m2_round(y: torch.Tensor) -> torch.Tensor:
    return torch.copysign(torch.round(y.abs() * 2.0).clamp(max=7.0) * 0.5, y)


def _codes_of(values: torch.Tensor, e1m2: torch.Tensor) -> torch.Tensor:
    """4-bit codes of grid values (E1M2 blocks where ``e1m2``): the inverse of the decode tables."""
    a = values.abs()
    e2m1 = torch.where(a < 2.0, a * 2.0, torch.where(a < 4.0, a + 2.0, a * 0.5 + 4.0))
    mag = torch.where(e1m2, a * 2.0, e2m1).to(torch.uint8)
    return mag | (torch.signbit(values).to(torch.uint8) << 3)


def _select(
    x: torch.Tensor, block: int, p: float, global_scale: str, scale_floor: float | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The per-block choice, pure tensor code (no check, no graph break):
    (use_e1m2, scale bytes, grid values (unscaled), dequantised values, g, all-finite flag)."""
    xb = _blocks(x, block)
    g = nvfp4_global_scale(x, q_max=6.0 if global_scale == "nvfp4" else 3.5)
    amax = xb.abs().amax(-1)
    # E2M1 candidate: exactly NVFP4's block (same g, E4M3 scale, arithmetic)
    s1_bits, s1, raw1 = _e4m3_block_scale(amax, 6.0, g, scale_floor)
    v1 = _e2m1_round(xb * _multiplier(g, s1)[..., None])
    x1 = v1 * (s1 * g)[..., None]
    # E1M2 candidate under the same g; where its scale would pass E4M3's 448 it is not allowed (see the trap)
    s2_bits, s2, raw2 = _e4m3_block_scale(amax, 3.5, g, scale_floor)
    v2 = _e1m2_round(xb * _multiplier(g, s2)[..., None])
    x2 = v2 * (s2 * g)[..., None]
    # ties keep E2M1, NVFP4's own choice; the fixed summation order makes compiled and eager choose alike
    use2 = (raw2 <= E4M3_MAX) & (block_error(xb - x2, p) < block_error(xb - x1, p))
    scale_bits = torch.where(use2, s2_bits | 0x80, s1_bits)
    grid = torch.where(use2[..., None], v2, v1)
    values = torch.where(use2[..., None], x2, x1)
    return use2, scale_bits, grid, values, g, torch.isfinite(raw1).all()


def _encode_core(
    x: torch.Tensor, block: int, p: float, global_scale: str, scale_floor: float | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    use2, scale_bits, grid, _, g, finite = _select(x, block, p, global_scale, scale_floor)
    codes = _codes_of(grid, use2[..., None].expand_as(grid))
    return pack_nibbles(codes.flatten(-2)), scale_bits, g, finite


def mixfp4_qdq_core(
    x: torch.Tensor, block: int = 16, p: float = 2.0, global_scale: str = "nvfp4", scale_floor: float | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(fake-quantised x, all-finite flag): :func:`mixfp4_qdq` without its checks, ``torch.compile``-able."""
    _, _, _, values, _, finite = _select(x, block, p, global_scale, scale_floor)
    return values.reshape(x.shape).to(x.dtype), finite


def _run(
    name: str, compile: bool, x: torch.Tensor, block: int, p: float, global_scale: str, scale_floor: float | None
) -> list[torch.Tensor]:
    """Check the options and the tensor's static properties, run the pure core (eager or compiled), then raise if
    the in-graph flag says the tensor held NaN or inf; returns the core's outputs without the flag."""
    check_options(p, global_scale, scale_floor)
    check_blockable(x, block, finite=False)
    core = {"qdq": mixfp4_qdq_core, "encode": _encode_core}[name]
    *out, finite = run_core(core, compile, x, block, p, global_scale, scale_floor)
    raise_if_not_finite(finite)
    return out


def quantize_mixfp4(
    x: torch.Tensor,
    block: int = 16,
    p: float = 2.0,
    global_scale: GlobalScale = "nvfp4",
    scale_floor: float | None = None,
    *,
    compile: bool = False,
) -> BlockTensor:
    """Encode x in MixFP4: packed 4-bit codes, one E4M3 scale byte per block (sign bit = E1M2), FP32 g.

    ``p`` is the exponent of the block error used to choose (2: MSE). ``global_scale="nvfp4"`` keeps NVFP4's
    g = amax / (448 * 6) so both formats share every scale; E1M2 is then not allowed in the few blocks whose E1M2
    scale amax_b / 3.5 / g would exceed 448. ``"e1m2_safe"`` sizes g with 3.5 instead (no block is excluded).
    ``scale_floor`` as in :func:`icml26.quant._common.nvfp4_quantize` (None: E4M3 subnormal scales allowed;
    2**-6: torchao's floor, applied to both candidates). ``compile=True``: see :func:`compiled`.
    """
    packed, scale_bits, g = _run("encode", compile, x, block, p, global_scale, scale_floor)
    return BlockTensor("mixfp4", packed, scale_bits, g, block, x.shape, x.dtype)


def mixfp4_qdq(
    x: torch.Tensor,
    block: int = 16,
    p: float = 2.0,
    global_scale: GlobalScale = "nvfp4",
    scale_floor: float | None = None,
    ste: bool = False,
    *,
    compile: bool = False,
) -> torch.Tensor:
    """Fake-quantise: the values ``dequantize(quantize_mixfp4(x))`` would give, without packing.

    ``ste=True`` passes gradients straight through (x + (q(x) - x).detach()). ``compile=True``: see :func:`compiled`.
    """
    (q,) = _run("qdq", compile, x.detach() if ste else x, block, p, global_scale, scale_floor)
    return x + (q - x).detach() if ste else q


def format_share(t: BlockTensor) -> float:
    """Fraction of the blocks stored as E1M2 (the sign bit of their scale byte)."""
    if t.fmt != "mixfp4":
        raise ValueError(f"format_share needs a MixFP4 tensor, got {t.fmt}")
    return float(((t.scales >> 7) & 1).float().mean())


def e2m2_matmul(a: BlockTensor, b: BlockTensor) -> torch.Tensor:
    """a @ b.T through the unified datapath: decode both operands to E2M2, multiply-accumulate inside each block,
    then apply the product of the two block scales and the two tensor scales (block-scaled MMA semantics).

    ``a`` is (M, K) and ``b`` is (N, K) (a weight, blocked along K like ``a``). An emulation of the arithmetic,
    not of the hardware: it checks that one E2M2 datapath serves both stored micro-formats exactly.
    """
    for t in (a, b):
        if t.fmt != "mixfp4" or len(t.shape) != 2:
            raise ValueError("e2m2_matmul takes two 2-d MixFP4 tensors")
    if a.shape[1] != b.shape[1] or a.block != b.block:
        raise ValueError(f"inner dimensions/blocks differ: {tuple(a.shape)} vs {tuple(b.shape)}")

    def operand(t: BlockTensor) -> tuple[torch.Tensor, torch.Tensor]:
        flag = (t.scales >> 7).repeat_interleave(t.block, dim=-1)
        values = e2m2_decode(to_e2m2(unpack_nibbles(t.codes), flag)).double()
        scale = e4m3_decode(t.scales & 0x7F).double()
        return values.reshape(t.shape[0], -1, t.block), scale

    va, sa = operand(a)
    vb, sb = operand(b)
    partial = torch.einsum("mkb,nkb->mnk", va, vb)  # exact: E2M2 products and 16-term sums fit in float64
    out = torch.einsum("mnk,mk,nk->mn", partial, sa, sb) * (a.global_scale.double() * b.global_scale.double())
    return out.float()


@cache
def compile_core(core: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.compile`` of a pure ``*_core`` function (one compiled object per core, shared by every caller)."""
    return torch.compile(core, dynamic=False)


_VERIFIED: set[tuple[Any, ...]] = set()


def run_core(core: Callable[..., Any], compile: bool, x: torch.Tensor, *options: Any) -> Any:
    """``core(x, *options)``, eager or compiled. A compiled core is checked against eager, bit for bit, the first
    time it meets a new input shape, dtype, layout or option set in this process, and raises if they differ: an
    inductor kernel must never silently change the numbers. (Seen with torch 2.13: a process with
    ``ATEN_CPU_CAPABILITY=avx2`` reusing kernels that an AVX-512 process had put in the shared on-disk inductor
    cache computed wrong block scales; a separate ``TORCHINDUCTOR_CACHE_DIR`` fixed it.)"""
    if not compile:
        return core(x, *options)
    out = compile_core(core)(x, *options)
    key = (core, tuple(x.shape), tuple(x.stride()), x.dtype, x.device.type, options, torch.is_grad_enabled())
    if key not in _VERIFIED and bool(out[-1]):  # a non-finite input raises in the caller instead
        ref = core(x, *options)
        if not all(torch.equal(a, b) for a, b in zip(out, ref, strict=True)):
            raise RuntimeError(
                f"torch.compile of {core.__name__} gave different numbers from eager on a {tuple(x.shape)} input; "
                "a stale or foreign inductor cache is the usual cause (point TORCHINDUCTOR_CACHE_DIR at an empty "
                "folder), else use compile=False"
            )
        _VERIFIED.add(key)
    return out


def compiled(name: Literal["qdq", "encode"] = "qdq") -> Callable[..., Any]:
    """:func:`mixfp4_qdq` or :func:`quantize_mixfp4` with ``compile=True``: its tensor work compiled by
    ``torch.compile``; same arguments, same errors, and the same bits as eager for p = 2 and p = 1 in our checks
    (the block errors are summed in a written-out order). For other p, rare last-bit differences remain: p = 0.5
    changed one element of 420 real activation tensors; ``pow`` may differ in its last bit by kernel.

    Only the pure tensor code is compiled (the finiteness check is a flag computed inside the graph and read
    after it, so there is no graph break). Inductor fuses the two candidates, the error comparison and the
    selection into a few loops: on one CPU core a 4096 x 4096 fake-quant runs several times faster than eager
    (see ``benchmarks/bench_mixfp4.py``), after a one-off compile of ~5-20 s per input shape and ``p``.
    Needs a working C++ compiler (CPU) or Triton (GPU).
    """
    if name == "qdq":
        return functools.partial(mixfp4_qdq, compile=True)
    if name == "encode":
        return functools.partial(quantize_mixfp4, compile=True)
    raise ValueError(f"name must be 'qdq' or 'encode', got {name!r}")
