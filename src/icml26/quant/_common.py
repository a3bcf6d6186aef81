"""Bit-exact low-precision element formats and block-scaled formats shared by the quant group (torch, vectorised).

Element formats (sign-magnitude; ``code`` = sign bit above the magnitude bits):

==========  =====  ====  ==========================================  ==========================================
format      bits   bias  magnitudes                                  notes
==========  =====  ====  ==========================================  ==========================================
E2M1        4      1     0, .5, 1, 1.5, 2, 3, 4, 6                   OCP FP4; saturates at 6, no inf/NaN
E1M2        4      0     0, .5, 1, ..., 3.5 (uniform)                0.5 x sign-magnitude INT4 (MixFP4)
E2M2        5      1     0, .25, ..., 1.75, 2, 2.5, 3, 3.5, 4..7     the unified compute operand of MixFP4
E4M3 (fn)   8      7     2^-9 .. 448                                 no inf; S.1111.111 is NaN; we saturate
E5M2        8      15    2^-16 .. 57344                              IEEE-like: inf and NaN; we saturate
E8M0        8      127   2^-127 .. 2^127                             scale only; 0xFF is NaN
==========  =====  ====  ==========================================  ==========================================

All encoders round to nearest, ties to even (RNE) and *saturate* out-of-range finite values to the largest
magnitude; NaN inputs raise (a NaN scale or weight is a bug upstream, not something to encode silently).
E2M1 and E1M2 codes are both exactly representable in E2M2 (:func:`to_e2m2`), which is what lets MixFP4 share
one datapath. E4M3/E5M2 rounding is torch's own float8 cast (RNE), after clamping (torch saturates where
ml_dtypes returns NaN; clamping first makes the two agree); the tests check every code against ml_dtypes.

Block formats (Open Compute Project MX v1.0; NVIDIA NVFP4):

- NVFP4: 16 consecutive elements along the last (reduction) dimension share an E4M3 scale s_b; one FP32
  tensor scale g = amax(x) / (448 * 6); s_b = E4M3(amax_b / (6 g)); x ~ g s_b E2M1(x / (g s_b)). 4.5 bits/element.
  The arithmetic is torchao's (s_b from amax_b / 6 / g, elements rounded from x * ((1 / g) / s_b)). torchao 0.18
  also clamps s_b to at least 2^-6 (E4M3's smallest normal); by default we keep E4M3's subnormal scales (down to
  2^-9), which differs only in blocks ~2^15 times smaller than the tensor's largest block; ``scale_floor=2**-6``
  reproduces torchao bit for bit. Tensors with amax below 2^-100 quantise to zero (see ``TINY_AMAX``).
- MXFP4: 32-element blocks, E8M0 scale 2^(floor(log2 amax_b) - 2) (emax of E2M1 is 2), E2M1 elements.
- MXFP8: 32-element blocks, E8M0 scale 2^(floor(log2 amax_b) - 8), E4M3 elements.
- Generic MX (:func:`mx_qdq`, :func:`quantize_mx`): every OCP element format (FP4 E2M1, FP6 E2M3/E3M2, FP8
  E4M3/E5M2, INT8) with the OCP floor scale (or a ``ceil`` scale that never saturates) and an optional
  straight-through gradient; MXFP4 through it equals :func:`mxfp4_qdq_core` bit for bit.

Packing: two 4-bit codes per uint8, the first element in the low nibble.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

__all__ = [
    "E1M2_VALUES",
    "E2M1_VALUES",
    "E2M2_VALUES",
    "E4M3_MAX",
    "E4M3_SMALLEST_NORMAL",
    "E5M2_MAX",
    "MX_ELEMENTS",
    "MX_SCALE_MODES",
    "TINY_AMAX",
    "BlockTensor",
    "MXElement",
    "MXTensor",
    "block_error",
    "check_blockable",
    "check_scale_floor",
    "dequantize",
    "e1m2_decode",
    "e1m2_encode",
    "e2m1_decode",
    "e2m1_encode",
    "e2m2_decode",
    "e4m3_decode",
    "e4m3_encode",
    "e5m2_decode",
    "e5m2_encode",
    "e8m0_decode",
    "e8m0_encode",
    "four_over_six_qdq",
    "four_over_six_qdq_core",
    "mx_decode",
    "mx_dequantize",
    "mx_element",
    "mx_encode",
    "mx_qdq",
    "mx_round",
    "mx_scale_exponent",
    "mxfp4_qdq_core",
    "mxfp4_quantize",
    "mxfp8_quantize",
    "nvfp4_global_scale",
    "nvfp4_qdq",
    "nvfp4_qdq_core",
    "nvfp4_quantize",
    "optional_torchao",
    "pack_nibbles",
    "quantize_mx",
    "raise_if_not_finite",
    "to_e2m2",
    "unpack_nibbles",
]

E2M1_VALUES = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
E1M2_VALUES = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5])
E2M2_VALUES = torch.tensor([0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 7.0])
E4M3_MAX = 448.0
E5M2_MAX = 57344.0


_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _check_finite(x: torch.Tensor, what: str) -> None:
    if x.dtype not in _DTYPES:
        raise TypeError(f"{what} must be float16, bfloat16, float32 or float64, got {x.dtype}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{what} contains NaN or inf; refusing to quantise it")


def _sign_bit(x: torch.Tensor, bit: int) -> torch.Tensor:
    # signbit catches -0.0 too, as a hardware encoder would
    return torch.signbit(x).to(torch.uint8) << bit


# ------------------------------------------------------------------------------------------------ 4-bit elements
def e2m1_encode(x: torch.Tensor, check: bool = True) -> torch.Tensor:
    """FP4 E2M1 codes (uint8 in 0..15) of x, RNE, saturating at +-6.

    The grid is uniform per binade, so ``torch.round`` (half to even) on the scaled value rounds to the even
    *code* at every tie: steps of 0.5 below 2, of 1 in [2, 4), of 2 from 4 on.
    """
    if check:
        _check_finite(x, "x")
    a = x.abs().float().clamp(max=6.0)
    low = torch.round(a * 2.0)  # codes 0..4 (values 0..2)
    mid = torch.round(a) + 2.0  # values 2, 3, 4 -> codes 4, 5, 6
    high = torch.round(a * 0.5) + 4.0  # values 4, 6 -> codes 6, 7
    mag = torch.where(a < 2.0, low, torch.where(a < 4.0, mid, high)).to(torch.uint8)
    return mag | _sign_bit(x, 3)


def e2m1_decode(codes: torch.Tensor) -> torch.Tensor:
    values = E2M1_VALUES.to(codes.device)[(codes & 0x7).long()]
    return torch.where((codes & 0x8) != 0, -values, values)


def e1m2_encode(x: torch.Tensor, check: bool = True) -> torch.Tensor:
    """E1M2 (bias 0) codes: 0.5-step uniform grid 0..3.5, RNE (ties to the even code), saturating at +-3.5."""
    if check:
        _check_finite(x, "x")
    mag = torch.round(x.abs().float() * 2.0).clamp(max=7.0).to(torch.uint8)
    return mag | _sign_bit(x, 3)


def e1m2_decode(codes: torch.Tensor) -> torch.Tensor:
    values = (codes & 0x7).float() * 0.5
    return torch.where((codes & 0x8) != 0, -values, values)


def to_e2m2(codes: torch.Tensor, flag: torch.Tensor) -> torch.Tensor:
    """The 5-bit E2M2 operand (sign bit 4) of E2M1 codes (flag 0) or E1M2 codes (flag 1); lossless.

    Both maps are fixed 8-entry tables (the decode mux): E2M1 magnitude code c -> E2M2 index 2c (every E2M1
    value sits on the even E2M2 points); E1M2 code c (value c/2) -> 2c below 2.0, then 8, 9, 10, 11.
    """
    from_e2m1 = torch.tensor([0, 2, 4, 6, 8, 10, 12, 14], dtype=torch.uint8, device=codes.device)
    from_e1m2 = torch.tensor([0, 2, 4, 6, 8, 9, 10, 11], dtype=torch.uint8, device=codes.device)
    mag = torch.where(flag.bool(), from_e1m2[(codes & 0x7).long()], from_e2m1[(codes & 0x7).long()])
    return mag | ((codes & 0x8) << 1)


def e2m2_decode(codes: torch.Tensor) -> torch.Tensor:
    values = E2M2_VALUES.to(codes.device)[(codes & 0xF).long()]
    return torch.where((codes & 0x10) != 0, -values, values)


# ------------------------------------------------------------------------------------------------ 8-bit elements
def e4m3_encode(x: torch.Tensor, check: bool = True) -> torch.Tensor:
    """FP8 E4M3 (fn) bit patterns, RNE, saturating at +-448 (never the NaN codes 0x7F/0xFF)."""
    if check:
        _check_finite(x, "x")
    return x.float().clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn).view(torch.uint8)


def e4m3_decode(bits: torch.Tensor) -> torch.Tensor:
    return bits.to(torch.uint8).view(torch.float8_e4m3fn).float()


def e5m2_encode(x: torch.Tensor, check: bool = True) -> torch.Tensor:
    """FP8 E5M2 bit patterns, RNE, saturating at +-57344 (never inf or NaN)."""
    if check:
        _check_finite(x, "x")
    return x.float().clamp(-E5M2_MAX, E5M2_MAX).to(torch.float8_e5m2).view(torch.uint8)


def e5m2_decode(bits: torch.Tensor) -> torch.Tensor:
    return bits.to(torch.uint8).view(torch.float8_e5m2).float()


def e8m0_encode(exponent: torch.Tensor) -> torch.Tensor:
    """E8M0 bits of 2^exponent (integer exponents, clamped to the representable -127..127)."""
    return (exponent.clamp(-127, 127) + 127).to(torch.uint8)


def e8m0_decode(bits: torch.Tensor) -> torch.Tensor:
    b = bits.to(torch.int32)
    return torch.where(b == 255, torch.nan, torch.exp2((b - 127).float()))


# --------------------------------------------------------------------------------------------------- packing
def pack_nibbles(codes: torch.Tensor) -> torch.Tensor:
    """Two 4-bit codes per byte along the last dimension (even length), first element in the low nibble."""
    if codes.shape[-1] % 2:
        raise ValueError(f"the last dimension must be even to pack nibbles, got {codes.shape[-1]}")
    return (codes[..., 0::2] & 0xF) | ((codes[..., 1::2] & 0xF) << 4)


def unpack_nibbles(packed: torch.Tensor) -> torch.Tensor:
    return torch.stack([packed & 0xF, packed >> 4], dim=-1).flatten(-2)


# ---------------------------------------------------------------------------------------------- block formats
def check_blockable(x: torch.Tensor, block: int, finite: bool = True) -> None:
    """Clear errors for what block quantisation cannot take.

    ``finite=False`` checks only what is static (type, dtype, shape, block), never the data, so that it never
    breaks a ``torch.compile`` graph; the compiled paths check finiteness inside the graph instead.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"expected a torch.Tensor, got {type(x).__name__}")
    if isinstance(block, bool) or not isinstance(block, int) or block < 1:
        raise ValueError(f"block size must be a positive integer, got {block!r}")
    if x.dtype not in _DTYPES:
        raise TypeError(f"the tensor must be float16, bfloat16, float32 or float64, got {x.dtype}")
    if x.numel() == 0:
        raise ValueError("cannot quantise an empty tensor")
    if x.ndim == 0 or x.shape[-1] % block:
        raise ValueError(
            f"the last dimension ({x.shape[-1] if x.ndim else 'scalar'}) must be a multiple of the block size {block}"
        )
    if finite:
        _check_finite(x, "the tensor")


def raise_if_not_finite(all_finite: torch.Tensor) -> None:
    """The finiteness check of the compiled paths, read after the graph (``all_finite`` is a 0-d bool tensor)."""
    if not bool(all_finite):
        raise ValueError("the tensor contains NaN or inf; refusing to quantise it")


def check_scale_floor(scale_floor: float | None) -> None:
    if scale_floor is None:
        return
    if isinstance(scale_floor, bool) or not isinstance(scale_floor, int | float):
        raise TypeError(f"scale_floor must be None or a number, got {type(scale_floor).__name__} {scale_floor!r}")
    if not (0 < scale_floor <= E4M3_MAX):
        raise ValueError(f"scale_floor must be in (0, 448] (an E4M3 block scale) or None, got {scale_floor!r}")


@dataclass(frozen=True)
class BlockTensor:
    """A block-scaled tensor: packed 4-bit codes (or 8-bit codes), one scale byte per block, a tensor scale.

    ``fmt`` is one of "nvfp4", "mxfp4", "mxfp8", "mixfp4"; ``shape`` the original shape; ``dtype`` its dtype.
    """

    fmt: str
    codes: torch.Tensor
    scales: torch.Tensor
    global_scale: torch.Tensor
    block: int
    shape: torch.Size
    dtype: torch.dtype

    def nbytes(self) -> int:
        return self.codes.numel() * self.codes.element_size() + self.scales.numel() + 4


def _blocks(x: torch.Tensor, block: int) -> torch.Tensor:
    return x.float().reshape(*x.shape[:-1], x.shape[-1] // block, block)


def _safe_div(num: torch.Tensor, den: torch.Tensor) -> torch.Tensor:
    """num / den with 0 where den == 0 (all-zero blocks quantise to zero codes)."""
    return torch.where(den == 0, torch.zeros_like(num), num / torch.where(den == 0, torch.ones_like(den), den))


TINY_AMAX = 2.0**-100
"""Tensors whose largest magnitude is below this quantise to zero in the NVFP4-family formats (their reciprocal
tensor scale 448 q_max / amax would overflow FP32); documented and tested behaviour."""

E4M3_SMALLEST_NORMAL = 2.0**-6
"""torchao's ``E4M3_EPS``: the floor it puts under every NVFP4 block scale (``scale_floor=2**-6`` matches it)."""


def nvfp4_global_scale(x: torch.Tensor, q_max: float = 6.0) -> torch.Tensor:
    """g = amax(x) / (448 * q_max) as FP32 (1.0 for an all-zero tensor or one below :data:`TINY_AMAX`)."""
    amax = x.detach().abs().amax().float()
    return torch.where(amax >= TINY_AMAX, amax / (E4M3_MAX * q_max), torch.ones_like(amax))


def _e4m3_block_scale(
    amax: torch.Tensor, q_max: float, g: torch.Tensor, scale_floor: float | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(E4M3 bits, decoded block scale s_b, unrounded amax_b / q_max / g) in torchao's order of operations."""
    raw = amax / q_max / g
    clamped = raw if scale_floor is None else raw.clamp(min=scale_floor)
    bits = e4m3_encode(clamped, check=False)
    return bits, e4m3_decode(bits), raw


def _multiplier(g: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """What x is multiplied by before rounding to the element grid: (1 / g) / s_b, torchao's (and the MSLK
    kernel's) arithmetic; 0 in blocks whose stored scale is 0 (they decode to zero anyway)."""
    zero = s == 0
    return torch.where(zero, torch.zeros_like(s), (1.0 / g) / torch.where(zero, torch.ones_like(s), s))


def _e2m1_round(y: torch.Tensor) -> torch.Tensor:
    """Values of y rounded onto the signed E2M1 grid (RNE, saturating at +-6): the same binade steps as
    :func:`e2m1_encode` (0.5 below 2, 1 below 4, then 2), on values, so fake-quant needs no codes."""
    a = y.abs().clamp(max=6.0)
    step = torch.where(a < 2.0, 0.5, torch.where(a < 4.0, 1.0, 2.0))
    return torch.copysign(torch.round(a / step) * step, y)


def block_error(d: torch.Tensor, p: float) -> torch.Tensor:
    """sum |d|^p over the last dimension (a block), in a fixed pairwise order.

    The order is written out (halves added, then halves of those...) so that eager ATen kernels and
    ``torch.compile`` kernels add the same numbers in the same order and agree bit for bit (a plain ``sum`` is
    reduced in a kernel-dependent order, which flips the choice of near-tied candidates). |d|^p is computed exactly
    rounded for p in {2, 1, 0.5} (square, abs, sqrt); other p use ``pow``, whose last bit may differ by kernel.
    """
    e = d.square() if p == 2 else d.abs() if p == 1 else d.abs().sqrt() if p == 0.5 else d.abs().pow(p)
    n = e.shape[-1]
    while n > 1:
        half = n // 2
        pairs = e[..., :half] + e[..., half : 2 * half]
        e = torch.cat([pairs, e[..., 2 * half :]], dim=-1) if n % 2 else pairs
        n = e.shape[-1]
    return e[..., 0]


def _nvfp4_parts(
    xb: torch.Tensor, g: torch.Tensor, q_max: float, scale_floor: float | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """One E2M1 candidate of blocked x whose block max maps to ``q_max`` (6: NVFP4; 4: Four Over Six's other
    choice): (scale bits, unrounded scale, grid values, dequantised values)."""
    amax = xb.abs().amax(-1)
    bits, s, raw = _e4m3_block_scale(amax, q_max, g, scale_floor)
    grid = _e2m1_round(xb * _multiplier(g, s)[..., None])
    return bits, raw, grid, grid * (s * g)[..., None]


def nvfp4_quantize(x: torch.Tensor, block: int = 16, scale_floor: float | None = None) -> BlockTensor:
    """NVFP4: E2M1 elements, E4M3 block scales over ``block`` (16) elements, FP32 tensor scale.

    g = amax / (448 * 6); s_b = E4M3(amax_b / 6 / g); codes = RNE(x * ((1 / g) / s_b)), torchao's arithmetic.
    ``scale_floor=None`` keeps E4M3's subnormal block scales (down to 2^-9; ours, the format's full range);
    ``scale_floor=2**-6`` clamps them to E4M3's smallest normal like torchao 0.18's ``NVFP4Tensor.to_nvfp4``,
    and then equals it bit for bit. The two differ only in blocks whose amax is below ~2^-6 * 6 g, i.e. more than
    ~2^15 times smaller than the tensor's maximum; the floor makes those blocks coarser (often all zero).
    """
    check_blockable(x, block)
    check_scale_floor(scale_floor)
    xb = _blocks(x, block)
    g = nvfp4_global_scale(x)
    bits, _, grid, _ = _nvfp4_parts(xb, g, 6.0, scale_floor)
    codes = e2m1_encode(grid, check=False)
    return BlockTensor("nvfp4", pack_nibbles(codes.flatten(-2)), bits, g, block, x.shape, x.dtype)


def nvfp4_qdq_core(
    x: torch.Tensor, block: int = 16, scale_floor: float | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(fake-quantised x, all-finite flag): pure tensor code, no check, no graph break (``torch.compile``-able)."""
    xb = _blocks(x, block)
    _, raw, _, values = _nvfp4_parts(xb, nvfp4_global_scale(x), 6.0, scale_floor)
    return values.reshape(x.shape).to(x.dtype), torch.isfinite(raw).all()


def nvfp4_qdq(x: torch.Tensor, block: int = 16, scale_floor: float | None = None) -> torch.Tensor:
    """NVFP4 fake-quant: exactly ``dequantize(nvfp4_quantize(x))`` without packing."""
    check_blockable(x, block, finite=False)
    check_scale_floor(scale_floor)
    values, finite = nvfp4_qdq_core(x, block, scale_floor)
    raise_if_not_finite(finite)
    return values


def four_over_six_qdq_core(
    x: torch.Tensor, block: int = 16, p: float = 2.0, scale_floor: float | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(fake-quantised x, all-finite flag) of :func:`four_over_six_qdq`, compile-friendly."""
    xb = _blocks(x, block)
    g = nvfp4_global_scale(x)
    _, raw, _, six = _nvfp4_parts(xb, g, 6.0, scale_floor)
    _, _, _, four = _nvfp4_parts(xb, g, 4.0, scale_floor)
    values = torch.where((block_error(xb - four, p) < block_error(xb - six, p))[..., None], four, six)
    return values.reshape(x.shape).to(x.dtype), torch.isfinite(raw).all()


def four_over_six_qdq(
    x: torch.Tensor, block: int = 16, p: float = 2.0, scale_floor: float | None = None
) -> torch.Tensor:
    """NVFP4 with "Four Over Six" block scaling (arXiv 2512.02010): each block's max is mapped to 6 (NVFP4) or to
    4, whichever gives the smaller block error sum |x - x^|^p (ties keep 6); same E4M3 scales, E2M1 codes and
    tensor scale g, so storage is unchanged (the choice is implicit in the stored scale). Fake-quant values."""
    check_blockable(x, block, finite=False)
    check_scale_floor(scale_floor)
    values, finite = four_over_six_qdq_core(x, block, p, scale_floor)
    raise_if_not_finite(finite)
    return values


def _mx_exponent(amax: torch.Tensor, emax: int) -> torch.Tensor:
    # shared exponent floor(log2 amax) - emax; frexp gives amax = m 2^e with m in [0.5, 1): floor(log2) = e - 1
    exponent = torch.frexp(amax)[1] - 1 - emax
    return torch.where(amax > 0, exponent, torch.full_like(exponent, -127)).clamp(-127, 127)


def _mx_quantize(x: torch.Tensor, block: int, emax: int, fp8: bool) -> BlockTensor:
    check_blockable(x, block)
    xb = _blocks(x, block)
    scale_bits = e8m0_encode(_mx_exponent(xb.abs().amax(-1), emax))
    scale = e8m0_decode(scale_bits)
    scaled = xb / scale[..., None]
    if fp8:
        packed = e4m3_encode(scaled, check=False).flatten(-2)
    else:
        packed = pack_nibbles(e2m1_encode(scaled, check=False).flatten(-2))
    return BlockTensor("mxfp8" if fp8 else "mxfp4", packed, scale_bits, torch.ones(()), block, x.shape, x.dtype)


def mxfp4_quantize(x: torch.Tensor, block: int = 32) -> BlockTensor:
    """OCP MXFP4: E2M1 elements, E8M0 scale 2^(floor(log2 amax_b) - 2) per 32-element block."""
    return _mx_quantize(x, block, emax=2, fp8=False)


def mxfp4_qdq_core(x: torch.Tensor, block: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    """(``dequantize(mxfp4_quantize(x))``, all-finite flag) without packing, compile-friendly."""
    xb = _blocks(x, block)
    amax = xb.abs().amax(-1)
    scale = torch.exp2(_mx_exponent(amax, 2).float())[..., None]  # E8M0 decode (never 0xFF: exponent <= 127)
    values = _e2m1_round(xb / scale) * scale
    return values.reshape(x.shape).to(x.dtype), torch.isfinite(amax).all()


def mxfp8_quantize(x: torch.Tensor, block: int = 32) -> BlockTensor:
    """OCP MXFP8 (E4M3): E8M0 scale 2^(floor(log2 amax_b) - 8) per 32-element block."""
    return _mx_quantize(x, block, emax=8, fp8=True)


def dequantize(t: BlockTensor) -> torch.Tensor:
    """Decode any :class:`BlockTensor` back to its dtype and shape (exact: every step is a table lookup)."""
    if t.fmt == "mxfp8":
        values = e4m3_decode(t.codes)
        scale = e8m0_decode(t.scales)
    else:
        codes = unpack_nibbles(t.codes)
        if t.fmt == "mxfp4":
            values, scale = e2m1_decode(codes), e8m0_decode(t.scales)
        elif t.fmt == "nvfp4":
            values, scale = e2m1_decode(codes), e4m3_decode(t.scales) * t.global_scale
        elif t.fmt == "mixfp4":
            flag = (t.scales >> 7).repeat_interleave(t.block, dim=-1)
            values = e2m2_decode(to_e2m2(codes, flag))
            scale = e4m3_decode(t.scales & 0x7F) * t.global_scale
        else:
            raise ValueError(f"unknown block format {t.fmt!r}")
    out = values.reshape(*values.shape[:-1], -1, t.block) * scale[..., None]
    return out.reshape(t.shape).to(t.dtype)


# -------------------------------------------------------------------------------- generic MX (OCP v1.0) formats
@dataclass(frozen=True)
class MXElement:
    """An MX element format: sign-magnitude FP with ``mbits`` mantissa bits, smallest normal exponent ``emin``,
    largest exponent ``emax`` and largest magnitude ``max_norm`` (no inf/NaN used: we saturate), or MXINT8
    (``int``: two's complement with an implicit 2^-6, magnitudes up to 127 * 2^-6)."""

    name: str
    bits: int
    mbits: int
    emin: int
    emax: int
    max_norm: float
    int: bool = False

    @property
    def bias(self) -> int:
        return 1 - self.emin


MX_ELEMENTS: dict[str, MXElement] = {
    "fp4_e2m1": MXElement("fp4_e2m1", 4, 1, 0, 2, 6.0),
    "fp6_e2m3": MXElement("fp6_e2m3", 6, 3, 0, 2, 7.5),
    "fp6_e3m2": MXElement("fp6_e3m2", 6, 2, -2, 4, 28.0),
    "fp8_e4m3": MXElement("fp8_e4m3", 8, 3, -6, 8, 448.0),
    "fp8_e5m2": MXElement("fp8_e5m2", 8, 2, -14, 15, 57344.0),
    "int8": MXElement("int8", 8, 6, 0, 0, 127 / 64, int=True),
}
"""The OCP MX v1.0 element formats by name (MXFP4, MXFP6 E2M3/E3M2, MXFP8 E4M3/E5M2, MXINT8)."""

MX_SCALE_MODES = ("floor", "ceil")


def mx_element(elem: str | MXElement) -> MXElement:
    if isinstance(elem, MXElement):
        return elem
    if elem not in MX_ELEMENTS:
        raise ValueError(f"unknown MX element format {elem!r}; choose one of {sorted(MX_ELEMENTS)}")
    return MX_ELEMENTS[elem]


def mx_round(y: torch.Tensor, elem: str | MXElement) -> torch.Tensor:
    """y rounded onto the element grid (RNE, saturating at +-max_norm), as fp32 values.

    FP: in the binade of |y| (exponent e = max(floor(log2|y|), emin)) the grid step is 2^(e - mbits) and uniform,
    so ``torch.round`` (half to even) of |y| / step rounds to the even code at every tie; a value that rounds up
    to the next binade lands on its first point, which is on the grid too. e and the powers of two are read and
    built from the fp32 bit fields (no frexp/exp2: this is the hot path of calibration). INT8: steps of 2^-6.
    """
    f = mx_element(elem)
    a = y.float().abs()
    if f.int:
        return torch.copysign((torch.round(a * 64.0) / 64.0).clamp(max=f.max_norm), y.float())
    e = ((a.view(torch.int32) >> 23) - 127).clamp(min=f.emin, max=127 + f.mbits - 1)
    inv_step = ((f.mbits - e + 127) << 23).view(torch.float32)  # 2^(mbits - e), exact
    step = ((e - f.mbits + 127) << 23).view(torch.float32)  # 2^(e - mbits), exact
    return torch.copysign((torch.round(a * inv_step) * step).clamp(max=f.max_norm), y.float())


def mx_scale_exponent(amax: torch.Tensor, elem: str | MXElement, scale_mode: str = "floor") -> torch.Tensor:
    """The shared E8M0 exponent of blocks with largest magnitude ``amax`` (int32, clamped to -127..127).

    ``floor`` (OCP v1.0): floor(log2 amax) - emax, so the block maximum may exceed max_norm and saturate;
    ``ceil``: the smallest power of two s with amax / s <= max_norm (no saturation, coarser steps; our option).
    All-zero blocks get the smallest scale 2^-127 (their codes are 0 anyway; no log2 of 0 is taken).
    """
    f = mx_element(elem)
    if scale_mode == "floor":
        exponent = torch.frexp(amax)[1] - 1 - f.emax
    elif scale_mode == "ceil":
        m, k = torch.frexp(amax.double() / f.max_norm)  # amax / max_norm = m 2^k, m in [0.5, 1)
        exponent = torch.where(m == 0.5, k - 1, k).to(torch.int32)
    else:
        raise ValueError(f"scale_mode must be one of {MX_SCALE_MODES}, got {scale_mode!r}")
    return torch.where(amax > 0, exponent, torch.full_like(exponent, -127)).clamp(-127, 127)


def mx_qdq(
    x: torch.Tensor,
    elem: str = "fp4_e2m1",
    block_size: int = 32,
    scale_mode: str = "floor",
    ste: bool | str = False,
) -> torch.Tensor:
    """MX fake-quant of x along its last dimension: blocks of ``block_size`` share an E8M0 scale 2^e
    (:func:`mx_scale_exponent`), elements are rounded RNE onto ``elem``'s grid and saturated.

    Exactly ``mx_dequantize(quantize_mx(x, ...))`` (a test checks it) without forming codes. Keeps x's dtype.
    Gradients (the forward value is the same in every case):

    - ``ste=False``: none beyond what torch gives (rounding has zero gradient almost everywhere);
    - ``ste=True``: the straight-through estimator, d q / d x = identity;
    - ``ste="scale"``: identity plus the gradient through the shared scale, LSQ-style: q = s * round(x / s) with
      s = 2^e treated as proportional to the block maximum (d s / d amax = s / amax) and d q / d s = round(x / s)
      - x / s. Unlike the plain STE it tells a transform how moving a block maximum changes the rounding error:
      a translation b cancelled after the quantiser, (Q(x + b) - b), gets exactly zero gradient from the plain STE.
    """
    f = mx_element(elem)
    if ste not in (False, True, "scale"):
        raise ValueError(f"ste must be False, True or 'scale', got {ste!r}")
    check_blockable(x, block_size, finite=False)  # finiteness: read from the block maxima below (one pass less)
    xb = x.float().reshape(*x.shape[:-1], x.shape[-1] // block_size, block_size)
    amax = xb.detach().abs().amax(-1)
    if not bool(torch.isfinite(amax).all()):
        raise ValueError("the tensor contains NaN or inf; refusing to quantise it")
    scale = torch.exp2(mx_scale_exponent(amax, f, scale_mode).float())[..., None]
    u = xb.detach() / scale
    r = mx_round(u, f)
    q = r * scale
    if ste is True:
        q = q + (xb - xb.detach())
    elif ste == "scale":
        live = xb.abs().amax(-1, keepdim=True)
        ratio = torch.where(amax[..., None] > 0, live / amax[..., None].clamp_min(1e-38), torch.ones_like(live))
        q = q + (xb - xb.detach()) + (scale * (ratio - ratio.detach())) * (r - u)
    return q.reshape(x.shape).to(x.dtype)


@dataclass(frozen=True)
class MXTensor:
    """An MX-quantised tensor: one code per element (uint8; FP sign-magnitude bit patterns, INT8 two's
    complement), one E8M0 scale byte per block along the last dimension."""

    codes: torch.Tensor
    scales: torch.Tensor
    elem: str
    block_size: int
    shape: torch.Size
    dtype: torch.dtype

    def dequantize(self) -> torch.Tensor:
        return mx_dequantize(self)


def mx_encode(values: torch.Tensor, elem: str | MXElement) -> torch.Tensor:
    """Bit patterns (uint8) of values already on ``elem``'s grid (sign bit at ``bits - 1``; INT8 two's complement).

    Normal values: exponent field floor(log2|v|) + bias, mantissa (|v| / 2^e - 1) 2^mbits; subnormals (below
    2^emin): exponent field 0, mantissa |v| / 2^emin * 2^mbits.
    """
    f = mx_element(elem)
    if f.int:
        return torch.round(values.float() * 64.0).to(torch.int8).view(torch.uint8)
    a = values.abs().float()
    e = torch.frexp(a)[1] - 1
    normal = a >= 2.0**f.emin
    field_e = torch.where(normal, e + f.bias, torch.zeros_like(e))
    mant = torch.where(normal, a / torch.exp2(e.float()) - 1.0, a / 2.0**f.emin) * 2**f.mbits
    mag = (field_e << f.mbits) + torch.round(mant).to(torch.int32)
    sign = torch.signbit(values).to(torch.int32) << (f.bits - 1)
    return (mag | sign).to(torch.uint8)


def mx_decode(codes: torch.Tensor, elem: str | MXElement) -> torch.Tensor:
    f = mx_element(elem)
    if f.int:
        return codes.view(torch.int8).float() / 64.0
    c = codes.to(torch.int32)
    field_e = (c >> f.mbits) & ((1 << (f.bits - 1 - f.mbits)) - 1)
    mant = (c & ((1 << f.mbits) - 1)).float() / 2**f.mbits
    a = torch.where(field_e > 0, (1.0 + mant) * torch.exp2((field_e - f.bias).float()), mant * 2.0**f.emin)
    return torch.where((c >> (f.bits - 1)) & 1 == 1, -a, a)


def quantize_mx(x: torch.Tensor, elem: str = "fp4_e2m1", block_size: int = 32, scale_mode: str = "floor") -> MXTensor:
    """MX quantisation with codes: E8M0 scale bytes per block and one element code per value (see :func:`mx_qdq`)."""
    f = mx_element(elem)
    check_blockable(x, block_size)
    xb = _blocks(x, block_size)
    exponent = mx_scale_exponent(xb.abs().amax(-1), f, scale_mode)
    values = mx_round(xb / torch.exp2(exponent.float())[..., None], f)
    return MXTensor(mx_encode(values, f), e8m0_encode(exponent), f.name, block_size, x.shape, x.dtype)


def mx_dequantize(t: MXTensor) -> torch.Tensor:
    values = mx_decode(t.codes, t.elem) * e8m0_decode(t.scales)[..., None]
    return values.reshape(t.shape).to(t.dtype)


def optional_torchao(module: str) -> Any | None:
    """``torchao.<module>`` if torchao imports (from the environment or an aside install named by
    ``$ICML26_TORCHAO_PATH``, which is put on sys.path), else None: the test and benchmark oracle of the quant group,
    kept out of the environment because transformers imports torchao whenever it is installed."""
    import importlib
    import os
    import sys

    path = os.environ.get("ICML26_TORCHAO_PATH")
    if path and path not in sys.path:
        sys.path.insert(0, path)
    try:
        return importlib.import_module(f"torchao.{module}")
    except ImportError:
        return None
