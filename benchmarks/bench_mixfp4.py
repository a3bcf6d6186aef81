"""MixFP4 and NVFP4 fake-quant (quantise + dequantise) and encode speed against torchao's NVFP4, like for like.

Workload: an fp32 tensor of heavy-tailed values (N(0, 1) times a log-normal row scale), M x K = 256 x 256 (tiny),
1024 x 1024 (quick) or 4096 x 4096 (full), one thread. Every row times two contenders in the same mode, alternated
(:func:`icml26._core.bench.interleaved_medians`; compile time is excluded and reported in ``extra``):

- eager vs eager and compiled vs compiled (``torch.compile``, inductor): MixFP4 against torchao's NVFP4 (the anchor a
  user would otherwise reach for), and our NVFP4 against torchao's NVFP4 (same format, bit-identical output with
  ``scale_floor=2**-6``, asserted before timing);
- MixFP4 against our own NVFP4 in the same mode: the price of the second (E1M2) candidate and the selection;
- secondary: our NVFP4 against a straightforward argmin-over-the-grid NVFP4 written here.

The anchor. torchao 0.18's ``NVFP4Tensor.to_nvfp4`` (with ``per_tensor_scale = amax / (448 * 6)``) and
``.dequantize()``, called on CPU. torchao is not in the project's environment (transformers imports it whenever it is
installed), so install it aside and name its folder; the benchmark then puts it on ``sys.path`` itself:

    pip install --no-deps --target /tmp/torchao_pkg torchao==0.18.0
    ICML26_TORCHAO_PATH=/tmp/torchao_pkg .venv/bin/python benchmarks/bench_mixfp4.py full

Without it (the test suite runs the tiny size that way), the anchor is torchao's NVFP4 recipe re-implemented below
(:func:`torchao_recipe_qdq`: its clamped E4M3 block scale, its reciprocal multiply, its bit-level round-to-nearest-even
to E2M1, its nibble packing, a table decode), and the rows say so.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import torch

from icml26._core.bench import SIZES, BenchRow, interleaved_medians, print_rows
from icml26.quant._common import E2M1_VALUES, dequantize, e4m3_decode, e4m3_encode, nvfp4_quantize, optional_torchao
from icml26.quant.mixfp4 import NVFP4Config, compiled, mixfp4_qdq, quantize_mixfp4

SHAPES = {"tiny": (256, 256), "quick": (1024, 1024), "full": (4096, 4096)}
REPEATS = {"tiny": 3, "quick": 5, "full": 7}
PAPER = "mixfp4"


# ------------------------------------------------------------------------------------------------ the anchor
def _torchao() -> Any | None:
    """torchao's NVFP4 module if it is importable (from the environment or ``$ICML26_TORCHAO_PATH``), else None."""
    return optional_torchao("prototype.mx_formats.nvfp4_tensor")


def _f32_to_e2m1_bits(y: torch.Tensor) -> torch.Tensor:
    """E2M1 codes of fp32 y (already clamped to +-6) by integer round-to-nearest-even on the fp32 bit pattern, the
    technique of torchao's ``_f32_to_floatx_unpacked`` (written here, not copied): subnormals (|y| < 1) through a
    float add of a magic constant, normals by adding the rounding bias to the bits and shifting out 22 bits."""
    bits = y.view(torch.int32)
    sign = (bits >> 28) & 0x8  # fp32 sign bit -> bit 3 of the code
    a = (bits & 0x7FFFFFFF).view(torch.float32)
    # |y| < 1: adding 2^-1 * 2^23 ... aligns the 0.5-step grid on the last mantissa bit (RNE by the FPU)
    magic = torch.tensor((127 - 1 + 23 - 1 + 1) << 23, dtype=torch.int32).view(torch.float32)
    sub = ((a + magic).view(torch.int32) - magic.view(torch.int32)).to(torch.uint8)
    m = a.view(torch.int32)
    odd = (m >> 22) & 1
    normal = ((m + ((1 - 127) << 23) + (1 << 21) - 1 + odd) >> 22).to(torch.uint8)
    code = torch.where(a < 1.0, sub, normal)
    code = torch.where(a >= 6.0, torch.full_like(code, 7), code)
    return code | sign.to(torch.uint8)


def torchao_recipe_qdq(x: torch.Tensor) -> torch.Tensor:
    """torchao 0.18's NVFP4 quantise + dequantise on CPU, re-implemented (two-level scaling, scale floor 2^-6)."""
    xb = x.float().reshape(x.shape[0], -1, 16)
    per_tensor = x.abs().amax().float() / (448.0 * 6.0)
    block = (xb.abs().amax(-1) / 6.0) / per_tensor
    s8 = block.clamp(min=2.0**-6, max=448.0).to(torch.float8_e4m3fn)
    scaled = (xb * ((1.0 / per_tensor) / s8.float()).unsqueeze(-1)).clamp(-6.0, 6.0).reshape(x.shape)
    codes = _f32_to_e2m1_bits(scaled)
    packed = codes[..., 0::2] | (codes[..., 1::2] << 4)
    unpacked = torch.stack([packed & 0xF, packed >> 4], dim=-1).flatten(-2)
    mag = E2M1_VALUES[(unpacked & 0x7).long()]
    values = torch.where((unpacked & 0x8) != 0, -mag, mag).reshape(xb.shape)
    return (values * (per_tensor * s8.float()).unsqueeze(-1)).reshape(x.shape)


def _anchors(size: str) -> tuple[str, Callable[..., Any], Callable[..., Any] | None, str]:
    """(name, eager qdq, eager encode or None, what the rows must say about the anchor)."""
    tao = _torchao()
    if tao is None:
        note = "anchor: torchao 0.18's NVFP4 recipe re-implemented here (torchao not importable)"
        return "torchao NVFP4 recipe (re-implemented)", torchao_recipe_qdq, None, note

    def encode(x: torch.Tensor) -> Any:
        return tao.NVFP4Tensor.to_nvfp4(x, per_tensor_scale=tao.per_tensor_amax_to_scale(x.abs().amax()))

    def qdq(x: torch.Tensor) -> torch.Tensor:
        return encode(x).dequantize(torch.float32)

    return "torchao 0.18 NVFP4Tensor", qdq, encode, "anchor: torchao 0.18 NVFP4Tensor.to_nvfp4 / dequantize on CPU"


def nvfp4_argmin_reference(x: torch.Tensor) -> torch.Tensor:
    """A straightforward NVFP4: E4M3 block scales, then the nearest E2M1 value by an argmin over the 8-point grid
    (ties to the even code). The naive secondary anchor."""
    xb = x.reshape(x.shape[0], -1, 16)
    g = x.abs().max() / (448 * 6)
    s = e4m3_decode(e4m3_encode(xb.abs().amax(-1) / 6 / g)) * g
    scaled = (xb / torch.where(s == 0, torch.ones_like(s), s)[..., None]).abs().clamp(max=6)
    dist = (scaled[..., None] - E2M1_VALUES).abs()  # (..., 16, 8)
    best = dist.min(-1, keepdim=True).values
    candidates = (dist == best) & (torch.arange(8) % 2 == 0)  # prefer the even code on ties
    idx = torch.where(candidates.any(-1), candidates.float().argmax(-1), dist.argmin(-1))
    return (E2M1_VALUES[idx] * xb.sign() * s[..., None]).reshape(x.shape)


# ------------------------------------------------------------------------------------------------------ rows
def _workload(size: str) -> torch.Tensor:
    m, k = SHAPES[size]
    gen = torch.Generator().manual_seed(0)
    return torch.randn(m, k, generator=gen) * torch.exp(torch.randn(m, 1, generator=gen))


def _compiled(fn: Callable[..., Any], x: torch.Tensor) -> tuple[Callable[..., Any], float]:
    start = time.perf_counter()
    fn(x)
    return fn, time.perf_counter() - start


def rows(size: str) -> list[BenchRow]:
    if size not in SIZES:
        raise ValueError(f"size must be one of {SIZES}, got {size!r}")
    torch.set_num_threads(1)
    x = _workload(size)
    shape = "x".join(map(str, x.shape))
    anchor_name, anchor_qdq, anchor_encode, anchor_note = _anchors(size)
    nv_floor = NVFP4Config(scale_floor=2.0**-6)
    # like for like: our NVFP4 with torchao's scale floor is the anchor's output, bit for bit
    ref = dequantize(nvfp4_quantize(x, scale_floor=2.0**-6))
    if not torch.equal(anchor_qdq(x), ref):
        raise AssertionError("our NVFP4 (scale_floor=2**-6) differs from the anchor: the rows would not compare alike")
    repeat = REPEATS[size]
    out: list[BenchRow] = []

    def row(workload: str, ours: str, anchor: str, t: dict[str, float], notes: str, **extra: Any) -> None:
        out.append(
            BenchRow(
                PAPER,
                f"{workload} {shape} fp32",
                anchor,
                t[ours],
                t[anchor],
                "s",
                ours_name=ours,
                notes=notes,
                extra=extra,
            )
        )

    # eager vs eager
    contenders = {
        "MixFP4 qdq (eager)": lambda: mixfp4_qdq(x),
        "icml26 NVFP4 qdq (eager)": lambda: nv_floor.qdq(x),
        f"{anchor_name} qdq (eager)": lambda: anchor_qdq(x),
        "NVFP4 argmin loop (eager)": lambda: nvfp4_argmin_reference(x),
    }
    t = interleaved_medians(contenders, repeat=repeat)
    a = f"{anchor_name} qdq (eager)"
    row("fake-quant", "MixFP4 qdq (eager)", a, t, f"eager vs eager; {anchor_note}")
    row("fake-quant", "icml26 NVFP4 qdq (eager)", a, t, f"same format, bit-identical output; {anchor_note}")
    row("fake-quant", "MixFP4 qdq (eager)", "icml26 NVFP4 qdq (eager)", t, "the price of the E1M2 candidate, eager")
    row("fake-quant", "icml26 NVFP4 qdq (eager)", "NVFP4 argmin loop (eager)", t, "secondary: a naive NVFP4")
    if anchor_encode is not None:
        t = interleaved_medians(
            {"MixFP4 encode (eager)": lambda: quantize_mixfp4(x), "torchao to_nvfp4 (eager)": lambda: anchor_encode(x)},
            repeat=repeat,
        )
        note = "eager vs eager; anchor: torchao 0.18 NVFP4Tensor.to_nvfp4 on CPU (codes and scales, no decode)"
        row("encode (packed codes + scales)", "MixFP4 encode (eager)", "torchao to_nvfp4 (eager)", t, note)
    if size == "tiny":
        return out  # compiling takes tens of seconds: the tiny size checks the eager rows only

    # compiled vs compiled (compile time measured on the first call, then excluded)
    mix_c, mix_s = _compiled(compiled("qdq"), x)
    nv_c, nv_s = _compiled(NVFP4Config(scale_floor=2.0**-6, compile=True).qdq, x)
    anchor_c, anchor_s, anchor_state = None, None, "compiled"
    try:
        anchor_c, anchor_s = _compiled(torch.compile(anchor_qdq, dynamic=False), x)
    except Exception as exc:  # torchao's tensor subclass may not compile: say so in the rows
        anchor_state = f"torch.compile failed ({type(exc).__name__}); anchor eager"
        anchor_c, anchor_s = anchor_qdq, 0.0
    assert torch.equal(mix_c(x), mixfp4_qdq(x)) and torch.equal(nv_c(x), ref) and torch.equal(anchor_c(x), ref)
    t = interleaved_medians(
        {
            "MixFP4 qdq (compiled)": lambda: mix_c(x),
            "icml26 NVFP4 qdq (compiled)": lambda: nv_c(x),
            f"{anchor_name} qdq ({anchor_state})": lambda: anchor_c(x),
        },
        repeat=repeat,
    )
    a = f"{anchor_name} qdq ({anchor_state})"
    compile_s = {"compile_s_ours": round(mix_s, 1), "compile_s_anchor": round(anchor_s, 1)}
    row("fake-quant", "MixFP4 qdq (compiled)", a, t, f"compiled vs {anchor_state}; {anchor_note}", **compile_s)
    row("fake-quant", "icml26 NVFP4 qdq (compiled)", a, t, f"same format; {anchor_note}", compile_s_ours=round(nv_s, 1))
    row("fake-quant", "MixFP4 qdq (compiled)", "icml26 NVFP4 qdq (compiled)", t, "the price of the E1M2 candidate")
    return out


if __name__ == "__main__":
    print_rows(rows(sys.argv[1] if len(sys.argv) > 1 else "full"))
