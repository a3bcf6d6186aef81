"""Fake-quant throughput of NVFP4 and MixFP4 on a 4096 x 4096 fp32 tensor (GB/s of fp32 input processed).

Anchors, measured in the same run: torchao's NVFP4 CPU emulation (``NVFP4Tensor.to_nvfp4``) when torchao is
importable, and a straightforward NVFP4 (E4M3 block scales, then the nearest E2M1 value by an argmin over the
8-point grid, ties to the even code). torchao is kept out of the project's environment (transformers imports it
whenever it is installed), so install it aside and point PYTHONPATH at it for this script only:

    pip install --no-deps --target /tmp/tao torchao
    PYTHONPATH=/tmp/tao .venv/bin/python benchmarks/bench_mixfp4.py
"""

from __future__ import annotations

import time

import torch

from icml26.quant._common import E2M1_VALUES, dequantize, e4m3_decode, e4m3_encode, nvfp4_quantize
from icml26.quant.mixfp4 import mixfp4_qdq


def nvfp4_argmin_reference(x: torch.Tensor) -> torch.Tensor:
    xb = x.reshape(x.shape[0], -1, 16)
    g = x.abs().max() / (448 * 6)
    s = e4m3_decode(e4m3_encode(xb.abs().amax(-1) / (6 * g))) * g
    scaled = (xb / torch.where(s == 0, torch.ones_like(s), s)[..., None]).abs().clamp(max=6)
    dist = (scaled[..., None] - E2M1_VALUES).abs()  # (..., 16, 8)
    best = dist.min(-1, keepdim=True).values
    candidates = (dist == best) & (torch.arange(8) % 2 == 0)  # prefer the even code on ties
    idx = torch.where(candidates.any(-1), candidates.float().argmax(-1), dist.argmin(-1))
    return (E2M1_VALUES[idx] * xb.sign() * s[..., None]).reshape(x.shape)


def gbps(fn, x: torch.Tensor, repeat: int = 3) -> float:  # type: ignore[no-untyped-def]
    fn(x)
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(x)
        best = min(best, time.perf_counter() - start)
    return x.numel() * 4 / best / 1e9


def main() -> None:
    from icml26.quant.mixfp4 import quantize_mixfp4

    torch.manual_seed(0)
    x = torch.randn(4096, 4096)
    assert torch.equal(nvfp4_argmin_reference(x[:64]), dequantize(nvfp4_quantize(x[:64])))
    print(f"threads={torch.get_num_threads()}  4096x4096 fp32, quantise (encode) throughput")
    rows = [
        ("NVFP4 straightforward argmin qdq", gbps(nvfp4_argmin_reference, x)),
        ("NVFP4 icml26 encode", gbps(nvfp4_quantize, x)),
        ("MixFP4 icml26 encode (both candidates)", gbps(quantize_mixfp4, x)),
        ("MixFP4 icml26 fake-quant (qdq)", gbps(mixfp4_qdq, x)),
    ]
    from icml26.quant.mixfp4 import compiled

    enc, qdq = compiled("encode"), compiled("qdq")
    assert torch.equal(qdq(x), mixfp4_qdq(x)) and torch.equal(enc(x).codes, quantize_mixfp4(x).codes)
    rows += [("MixFP4 icml26 encode, torch.compile", gbps(enc, x)), ("MixFP4 icml26 qdq, torch.compile", gbps(qdq, x))]
    try:
        from torchao.prototype.mx_formats.nvfp4_tensor import NVFP4Tensor

        rows.insert(0, ("NVFP4 torchao to_nvfp4 (anchor)", gbps(NVFP4Tensor.to_nvfp4, x)))
    except ImportError:
        print("(torchao not importable: see the docstring)")
    anchor = rows[0][1]
    for name, value in rows:
        print(f"{name:<42} {value:6.3f} GB/s  (x{value / anchor:.2f} of {rows[0][0].split(' (')[0]})")


if __name__ == "__main__":
    main()
