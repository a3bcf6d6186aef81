"""LATMiX's online path (block transform + MXFP4 fake-quant) and its fold, against outside approaches, one thread.

Workload: an fp32 activation (tokens x d, heavy-tailed with a few large channels) at SmolLM2's sizes d = 576 (the
q/k/v, o and gate/up sites) and d = 1536 (down_proj), tokens = 64 (tiny), 512 (quick), 2048 (full). Rows (each two
contenders alternated, :func:`icml26._core.bench.interleaved_medians`):

- online transform x A + b with 32 x 32 blocks: ours (a batched einsum over the blocks) against the dense
  ``torch.block_diag`` + d x d matmul a straightforward implementation writes (outputs asserted equal);
- the block Hadamard-32 (LATMiX's start and the MR-GPTQ baseline): ours (the same einsum) against the fast
  Walsh-Hadamard transform, the butterfly algorithm of the ``fast-hadamard-transform`` kernel QuaRot uses,
  re-implemented here in torch (log2(32) = 5 stages; outputs asserted equal);
- online transform + MXFP4 fake-quant, the whole per-call activation path: ours against the dense transform
  followed by torchao 0.18's ``MXTensor.to_mx(..., float4_e2m1fn_x2, 32).dequantize()`` when torchao imports
  (``ICML26_TORCHAO_PATH=/path/to/torchao`` puts an aside install on sys.path; it is not in the project's
  environment because transformers imports it whenever it is installed), else the microxcaling recipe
  (floor(log2) shared exponent, per-element private exponent, round, clamp) re-implemented here; outputs asserted
  bit-identical (torchao) or equal outside exact ties (microxcaling rounds ties away from zero, OCP to even);
- MXFP4 fake-quant alone, ours against the same anchor;
- the fold W A^{-T} of a consumer weight (3072 x 576, gate/up): ours (32 x 32 block inverses + einsum) against
  inverting the dense d x d ``block_diag``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import torch

from icml26._core.bench import SIZES, BenchRow, interleaved_medians, print_rows
from icml26.quant._common import mx_qdq, optional_torchao
from icml26.quant.latmix import HadamardTransform, InvertibleAffine

PAPER = "latmix"
TOKENS = {"tiny": 64, "quick": 512, "full": 2048}
REPEATS = {"tiny": 3, "quick": 5, "full": 7}


def _torchao_mx() -> Any | None:
    module = optional_torchao("prototype.mx_formats.mx_tensor")
    return None if module is None else module.MXTensor


def microxcaling_mxfp4_qdq(x: torch.Tensor, block: int = 32) -> torch.Tensor:
    """MXFP4 fake-quant the way microsoft/microxcaling's ``_quantize_mx`` computes it (re-implemented, not copied):
    shared exponent floor(log2 amax) - emax, per-element private exponent floor(log2 |x|) clamped at emin, scale to
    mbits, round half away from zero ("nearest"), clamp to max_norm, scale back."""
    xb = x.reshape(*x.shape[:-1], -1, block)
    amax = xb.abs().amax(-1, keepdim=True)
    shared = torch.floor(torch.log2(amax + (amax == 0).float() * 2.0**-127)) - 2
    a = xb / torch.exp2(shared)
    private = torch.floor(torch.log2(a.abs() + (a == 0).float())).clamp(min=0)
    scale = torch.exp2(1 - private)  # mbits = 1: steps of 2^(private - 1)
    q = torch.sign(a) * torch.floor(a.abs() * scale + 0.5) / scale
    return (q.clamp(-6.0, 6.0) * torch.exp2(shared)).reshape(x.shape)


def fwht_blocks(x: torch.Tensor, block: int = 32) -> torch.Tensor:
    """Normalised Walsh-Hadamard transform of every ``block`` of the last dimension by butterflies (Sylvester order)."""
    y = x.reshape(-1, x.shape[-1] // block, block)
    h = 1
    while h < block:
        y = y.reshape(*y.shape[:-1], block // (2 * h), 2, h)
        a, b = y[..., 0, :], y[..., 1, :]
        y = torch.stack([a + b, a - b], dim=-2).reshape(*y.shape[:-3], block)
        h *= 2
    return (y * block**-0.5).reshape(x.shape)


def _activations(tokens: int, d: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(tokens, d, generator=g) * torch.exp(torch.randn(1, d, generator=g) * 0.5)
    x[:, torch.randperm(d, generator=g)[:3]] += 30.0
    return x


def _affine(d: int) -> InvertibleAffine:
    t = InvertibleAffine(d, 32)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        t.delta.add_(torch.randn(t.delta.shape, generator=g) * 0.02)
        t.beta.add_(torch.randn(d, generator=g) * 0.1)
    return t.requires_grad_(False)


def _row(workload: str, anchor: str, t: dict[str, float], notes: str = "", **extra: Any) -> BenchRow:
    return BenchRow(PAPER, workload, anchor, t["ours"], t["anchor"], "s", notes=notes, extra=extra)


def _site_rows(d: int, n: int, repeat: int, anchor_qdq: Callable[..., Any], anchor_name: str, notes: str) -> list:
    """The online-path rows at one width d (every contender closes over this call's tensors)."""
    exact = "bit-identical" in notes
    x = _activations(n, d)
    t = _affine(d)
    dense = torch.block_diag(*t.blocks())
    b = t.shift()
    assert torch.allclose(t(x), x @ dense + b, atol=1e-4)
    out = []
    timed = interleaved_medians({"ours": lambda: t(x), "anchor": lambda: x @ dense + b}, repeat=repeat)
    out.append(_row(f"online affine x A + b, {n}x{d}, 32-blocks", "dense block_diag + d x d matmul", timed))
    h = HadamardTransform(d, 32, randomized=False)
    assert torch.allclose(h(x), fwht_blocks(x), atol=1e-3)
    timed = interleaved_medians({"ours": lambda: h(x), "anchor": lambda: fwht_blocks(x)}, repeat=repeat)
    out.append(_row(f"block Hadamard-32, {n}x{d}", "fast Walsh-Hadamard butterflies (re-implemented)", timed))
    q, r = mx_qdq(x), anchor_qdq(x)
    assert torch.equal(q, r) if exact else float((q != r).float().mean()) < 1e-3
    timed = interleaved_medians(
        {"ours": lambda: mx_qdq(t(x)), "anchor": lambda: anchor_qdq(x @ dense + b)}, repeat=repeat
    )
    out.append(_row(f"transform + MXFP4 qdq, {n}x{d}", f"dense block_diag + {anchor_name}", timed, notes))
    timed = interleaved_medians({"ours": lambda: mx_qdq(x), "anchor": lambda: anchor_qdq(x)}, repeat=repeat)
    out.append(_row(f"MXFP4 qdq, {n}x{d}", anchor_name, timed, notes))
    return out


def rows(size: str = "full") -> list[BenchRow]:
    if size not in SIZES:
        raise ValueError(f"size must be one of {SIZES}, got {size!r}")
    torch.set_num_threads(1)
    n, repeat = TOKENS[size], REPEATS[size]
    torchao = _torchao_mx()
    if torchao is not None:
        anchor_name, notes = "torchao 0.18 MXTensor.to_mx + dequantize (emulated)", "bit-identical output"

        def anchor_qdq(z: torch.Tensor) -> torch.Tensor:
            return torchao.to_mx(z, torch.float4_e2m1fn_x2, 32).dequantize(torch.float32)
    else:
        anchor_name, notes = "microxcaling MX recipe (re-implemented)", "equal outside exact ties (torchao absent)"
        anchor_qdq = microxcaling_mxfp4_qdq
    out: list[BenchRow] = []
    with torch.no_grad():
        for d in (576, 1536):
            out += _site_rows(d, n, repeat, anchor_qdq, anchor_name, notes)
        w = torch.randn(3072 if size != "tiny" else 256, 576, generator=torch.Generator().manual_seed(2)) * 0.05
        t = _affine(576)

        def dense_fold() -> torch.Tensor:
            return w @ torch.linalg.inv(torch.block_diag(*t.blocks())).T

        assert torch.allclose(t.fold(w), dense_fold(), atol=1e-4)
        timed = interleaved_medians({"ours": lambda: t.fold(w), "anchor": dense_fold}, repeat=repeat)
        out.append(_row(f"fold W A^-T, {w.shape[0]}x576", "dense block_diag + d x d inverse", timed))
    return out


def _main(argv: list[str]) -> None:
    print_rows(rows(argv[1] if len(argv) > 1 else "full"))


if __name__ == "__main__":
    _main(sys.argv)
