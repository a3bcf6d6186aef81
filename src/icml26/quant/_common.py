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
  (torchao additionally clamps s_b to at least 2^-6, E4M3's smallest normal; we keep E4M3's subnormal scales,
  which differs only for blocks more than ~2^11 times smaller than the tensor's maximum block.)
- MXFP4: 32-element blocks, E8M0 scale 2^(floor(log2 amax_b) - 2) (emax of E2M1 is 2), E2M1 elements.
- MXFP8: 32-element blocks, E8M0 scale 2^(floor(log2 amax_b) - 8), E4M3 elements.

Packing: two 4-bit codes per uint8, the first element in the low nibble.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = [
    "E1M2_VALUES",
    "E2M1_VALUES",
    "E2M2_VALUES",
    "E4M3_MAX",
    "E5M2_MAX",
    "BlockTensor",
    "check_blockable",
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
    "mxfp4_quantize",
    "mxfp8_quantize",
    "nvfp4_quantize",
    "pack_nibbles",
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
def check_blockable(x: torch.Tensor, block: int) -> None:
    """Clear errors for what block quantisation cannot take."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"expected a torch.Tensor, got {type(x).__name__}")
    if not isinstance(block, int) or block < 1:
        raise ValueError(f"block size must be a positive integer, got {block!r}")
    if x.numel() == 0:
        raise ValueError("cannot quantise an empty tensor")
    if x.ndim == 0 or x.shape[-1] % block:
        raise ValueError(
            f"the last dimension ({x.shape[-1] if x.ndim else 'scalar'}) must be a multiple of the block size {block}"
        )
    _check_finite(x, "the tensor")


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


def nvfp4_global_scale(x: torch.Tensor, q_max: float = 6.0) -> torch.Tensor:
    """g = amax(x) / (448 * q_max) as FP32 (1.0 for an all-zero tensor)."""
    amax = x.detach().abs().amax().float()
    return torch.where(amax > 0, amax / (E4M3_MAX * q_max), torch.ones_like(amax))


def nvfp4_quantize(x: torch.Tensor, block: int = 16) -> BlockTensor:
    """NVFP4: E2M1 elements, E4M3 block scales over ``block`` (16) elements, FP32 tensor scale."""
    check_blockable(x, block)
    xb = _blocks(x, block)
    g = nvfp4_global_scale(x)
    scale_bits = e4m3_encode(xb.abs().amax(-1) / (6.0 * g), check=False)
    scale = e4m3_decode(scale_bits) * g
    codes = e2m1_encode(_safe_div(xb, scale[..., None]), check=False)
    return BlockTensor("nvfp4", pack_nibbles(codes.flatten(-2)), scale_bits, g, block, x.shape, x.dtype)


def four_over_six_qdq(x: torch.Tensor, block: int = 16, p: float = 2.0) -> torch.Tensor:
    """NVFP4 with "Four Over Six" block scaling (arXiv 2512.02010): each block's max is mapped to 6 (NVFP4) or to
    4, whichever gives the smaller block error sum |x - x^|^p; same E4M3 scales, E2M1 codes and tensor scale g,
    so storage is unchanged (the choice is implicit in the stored scale). Fake-quant values."""
    check_blockable(x, block)
    xb = _blocks(x, block)
    g = nvfp4_global_scale(x)
    amax = xb.abs().amax(-1)

    def candidate(target: float) -> tuple[torch.Tensor, torch.Tensor]:
        scale = (e4m3_decode(e4m3_encode(amax / (target * g), check=False)) * g)[..., None]
        values = e2m1_decode(e2m1_encode(_safe_div(xb, scale), check=False)) * scale
        return values, (xb - values).abs().pow(p).sum(-1)

    six, err6 = candidate(6.0)
    four, err4 = candidate(4.0)
    return torch.where((err4 < err6)[..., None], four, six).reshape(x.shape).to(x.dtype)


def _mx_quantize(x: torch.Tensor, block: int, emax: int, fp8: bool) -> BlockTensor:
    check_blockable(x, block)
    xb = _blocks(x, block)
    amax = xb.abs().amax(-1)
    # shared exponent floor(log2 amax) - emax; frexp gives amax = m 2^e with m in [0.5, 1): floor(log2) = e - 1
    exponent = torch.frexp(amax)[1] - 1 - emax
    exponent = torch.where(amax > 0, exponent, torch.full_like(exponent, -127))
    scale_bits = e8m0_encode(exponent)
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
