"""The MX quantisation-error bound of a transformed activation (our reconstruction), and the measured error.

With T(x) = x A + b and the MX quantiser Q, the error that reaches the layer, mapped back to x's space, is
e A^{-1} with e = Q(xA + b) - (xA + b). Per MX block B with shared scale 2^E_B (E_B = floor(log2 max_B |z|) -
emax under the OCP floor rule) every element error obeys |e_i| <= u 2^E_B, where u (in element units) is the
larger of half the top binade's step and the saturation gap 2^(emax+1) - max_norm (E2M1: max(1, 8 - 6) = 2).
Summing over the blocks of each transform block n:

    ||e A^{-1}||_F^2 <= sum_n ||A_n^{-1}||_2^2 sum_{B in n} |B| u^2 4^{E_B}                            (1)

So a transform helps when it lowers the per-block maxima (the MX structure: 4^{floor(log2 max_B)}) without
inflating ||A^{-1}|| (the conditioning): a global rotation that spreads one outlier over every block raises
many block maxima, which is how it can hurt under MX. (1) is a worst-case bound: it always holds (tests check
it), and the reproduction measures how well it ranks sites by their actual error.
"""

from __future__ import annotations

import torch

from icml26.quant._common import mx_element, mx_qdq, mx_scale_exponent
from icml26.quant.latmix.config import FORMATS
from icml26.quant.latmix.transforms import SiteTransform

__all__ = ["element_error_unit", "mx_activation_error", "mx_error_bound"]


def element_error_unit(elem: str, scale_mode: str = "floor") -> float:
    """u: the largest |rounding error| of one element in units of its block scale (see the module docstring)."""
    f = mx_element(elem)
    top_step = 2.0**-6 if f.int else 2.0 ** (f.emax - f.mbits)
    saturation = 2.0 ** (f.emax + 1) - f.max_norm if scale_mode == "floor" else 0.0
    return max(top_step / 2, saturation)


def _prepare(
    x: torch.Tensor, transform: SiteTransform | None, fmt: str, block_size: int
) -> tuple[str, torch.Tensor, torch.Tensor]:
    """(element format, x as (tokens, d) fp32, T(x)), with one clear error for a width the blocks do not tile."""
    x = x.detach().float().reshape(-1, x.shape[-1])
    if x.shape[-1] % block_size:
        raise ValueError(f"the last dimension {x.shape[-1]} is not a multiple of the MX block size {block_size}")
    with torch.no_grad():
        z = x if transform is None else transform(x)
    return FORMATS.get(fmt, fmt), x, z


def mx_error_bound(
    x: torch.Tensor,
    transform: SiteTransform | None = None,
    fmt: str = "mxfp4",
    block_size: int = 32,
    scale_mode: str = "floor",
) -> float:
    """Right-hand side of (1), square-rooted: a bound on ||(Q(T(x)) - b) A^{-1} - x||_F for inputs x (..., d)."""
    elem, x, z = _prepare(x, transform, fmt, block_size)
    zb = z.reshape(z.shape[0], -1, block_size)
    exponent = mx_scale_exponent(zb.abs().amax(-1), elem, scale_mode).double()
    per_block = block_size * element_error_unit(elem, scale_mode) ** 2 * torch.exp2(2 * exponent)  # (tokens, blocks)
    if transform is None:
        return float(per_block.sum().sqrt())
    k = transform.k
    if k % block_size and block_size % k:
        raise ValueError(f"transform blocks of {k} and MX blocks of {block_size} do not nest")
    inv_norm2 = transform.inverse_norms().double() ** 2  # (n,)
    if k >= block_size:  # each transform block holds k / block_size MX blocks
        per_transform_block = per_block.reshape(z.shape[0], transform.n_blocks, -1).sum(-1)
        return float((per_transform_block * inv_norm2).sum().sqrt())
    # transform blocks smaller than MX blocks: an MX block's error spreads over several transform blocks
    return float((per_block.sum(-1) * inv_norm2.max()).sum().sqrt())


def mx_activation_error(
    x: torch.Tensor,
    transform: SiteTransform | None = None,
    fmt: str = "mxfp4",
    block_size: int = 32,
    scale_mode: str = "floor",
) -> float:
    """The measured ||(Q(T(x)) - b) A^{-1} - x||_F (the left-hand side of (1))."""
    elem, x, z = _prepare(x, transform, fmt, block_size)
    with torch.no_grad():
        q = mx_qdq(z, elem, block_size, scale_mode)
        back = q if transform is None else transform.inverse(q)
    return float((back.double() - x.double()).norm())
