"""MixFP4: NVFP4 with a per-block choice between two stored FP4 micro-formats, E2M1 and E1M2.

Storage is exactly NVFP4's (4.5 bits/element): 4-bit codes, one FP8 E4M3 scale byte per 16 consecutive elements
along the GEMM reduction dimension K, and one FP32 tensor scale g.

Algorithm ("MixFP4", ICML 2026, arXiv 2605.31035; our reading: no official code is public):

1. Tensor scale g = amax(x) / (448 * 6), NVFP4's own (``global_scale="nvfp4"``), so both formats share it.
2. For each 16-block b, two candidates that share g (torchao's arithmetic for both):
   - E2M1: s_b = E4M3(amax_b / 6 / g); codes = RNE(x * ((1 / g) / s_b)) onto {0, +-0.5, +-1, +-1.5, +-2, +-3,
     +-4, +-6}: exactly NVFP4's block;
   - E1M2: s_b = E4M3(amax_b / 3.5 / g); codes = RNE onto the uniform {0, +-0.5, ..., +-3.5} (bias 0: 0.5 x INT4).
3. Keep the candidate with the smaller block error sum |x - x^|^p, computed with its *stored* (E4M3) scale
   (p = 2 by default; the best rule is open, so p is a parameter; ties keep E2M1).
4. Store the choice in the sign bit of the (nonnegative) E4M3 scale byte: 0 = E2M1, 1 = E1M2. No extra metadata.
   A flagged all-zero block is 0x80, so decoding reads |scale byte|; 0x7F/0xFF (NaN) are never produced.
5. Decode: the flag drives a 4-bit -> 5-bit mux into E2M2 (bias 1, magnitudes 0, .25, ..., 1.75, 2, 2.5, 3, 3.5,
   4, 5, 6, 7), which holds every E2M1 and every E1M2 value exactly: one unchanged block-scaled MMA serves both
   (:func:`e2m2_matmul` emulates that arithmetic; it checks correctness, not the hardware).

Our readings and choices, each an option:

- The E4M3 trap: with g sized for E2M1, a block holding the tensor maximum would need an E1M2 scale of
  448 * 6 / 3.5 = 768 > 448; such blocks may only use E2M1 (``global_scale="e1m2_safe"`` sizes g with 3.5 instead).
- Small block scales: by default E4M3's subnormal scales (2^-9 .. 2^-6) are used, as the format allows. torchao 0.18
  clamps every NVFP4 block scale to at least 2^-6; ``scale_floor=2**-6`` does the same (on both candidates) and
  then NVFP4 equals torchao's ``NVFP4Tensor`` bit for bit. The two differ only in blocks ~2^15 times smaller than
  the tensor's largest. Tensors whose amax is below 2^-100 quantise to zero (their reciprocal scale overflows).
- Activations choose per block at run time with a dynamic tensor scale (like NVFP4's activation quantiser); every
  linear layer but lm_head (and embeddings) is quantised; rounding is RNE.
- ``compile=True`` (configs) or :func:`compiled` runs the tensor work through ``torch.compile``, checked bit for bit
  against eager on first use per shape, with no graph break (the NaN/inf check is a flag computed inside the graph
  and raised after it). Block errors are summed in a written-out order so that both choose alike: on the
  activations of two full windows p = 2 and p = 1 gave identical bits everywhere; p = 0.5 differed in one element
  of 420 tensors (a last-bit difference), so for p other than 2 and 1 expect rare last-bit differences.

The paper's headline numbers (+3.1% tensor-core area, +1.5% power) are hardware results, not reproduced here.

Use::

    from icml26.quant.mixfp4 import MixFP4Config, NVFP4Config, quantize_
    quantize_(model, MixFP4Config(weights=True, activations=True))   # every nn.Linear but lm_head
    quantize_(baseline, NVFP4Config(scale_floor=2**-6))              # torchao-identical NVFP4

References
----------
- "MixFP4: Enhancing NVFP4 with Adaptive FP4/INT4 Block Representations", ICML 2026 (arXiv 2605.31035).
- NVIDIA, NVFP4 (Blackwell) format; OCP Microscaling Formats (MX) v1.0 specification, 2023.
- torchao 0.18, ``torchao.prototype.mx_formats.nvfp4_tensor`` (the NVFP4 recipe we match).
- Four Over Six (arXiv 2512.02010): block max mapped to 6 or 4, a related per-block choice (:class:`FourOverSixConfig`).
"""

from icml26.quant._common import (
    BlockTensor,
    dequantize,
    four_over_six_qdq,
    mxfp4_quantize,
    nvfp4_qdq,
    nvfp4_quantize,
)
from icml26.quant.mixfp4.format import GlobalScale, compiled, e2m2_matmul, format_share, mixfp4_qdq, quantize_mixfp4
from icml26.quant.mixfp4.transform import (
    FakeQuantLinear,
    FourOverSixConfig,
    MixFP4Config,
    MXFP4Config,
    NVFP4Config,
    QuantConfig,
    quantize_,
)

__all__ = [
    "BlockTensor",
    "FakeQuantLinear",
    "FourOverSixConfig",
    "GlobalScale",
    "MXFP4Config",
    "MixFP4Config",
    "NVFP4Config",
    "QuantConfig",
    "compiled",
    "dequantize",
    "e2m2_matmul",
    "format_share",
    "four_over_six_qdq",
    "mixfp4_qdq",
    "mxfp4_quantize",
    "nvfp4_qdq",
    "nvfp4_quantize",
    "quantize_",
    "quantize_mixfp4",
]
