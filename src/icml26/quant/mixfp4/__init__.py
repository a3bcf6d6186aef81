"""MixFP4: NVFP4 with a per-block choice between two stored FP4 micro-formats, E2M1 and E1M2.

Storage is exactly NVFP4's (4.5 bits/element): 4-bit codes, one FP8 E4M3 scale byte per 16 consecutive elements
along the GEMM reduction dimension K, and one FP32 tensor scale g.

Algorithm ("MixFP4", ICML 2026, arXiv 2605.31035; our reading: no official code is public):

1. Tensor scale g = amax(x) / (448 * 6), NVFP4's own (``global_scale="nvfp4"``), so both formats share it.
2. For each 16-block b, two candidates that share g:
   - E2M1: s_b = E4M3(amax_b / (6 g)), codes = RNE onto {0, +-0.5, +-1, +-1.5, +-2, +-3, +-4, +-6} (NVFP4's block);
   - E1M2: s_b = E4M3(amax_b / (3.5 g)), codes = RNE onto the uniform {0, +-0.5, ..., +-3.5} (bias 0: 0.5 x INT4).
3. Keep the candidate with the smaller block error sum |x - x^|^p, computed with its *stored* (E4M3) scale
   (p = 2 by default; the best rule is open, so p is a parameter; ties keep E2M1).
4. Store the choice in the sign bit of the (nonnegative) E4M3 scale byte: 0 = E2M1, 1 = E1M2. No extra metadata.
   A flagged all-zero block is 0x80, so decoding reads |scale byte|; 0x7F/0xFF (NaN) are never produced.
5. Decode: the flag drives a 4-bit -> 5-bit mux into E2M2 (bias 1, magnitudes 0, .25, ..., 1.75, 2, 2.5, 3, 3.5,
   4, 5, 6, 7), which holds every E2M1 and every E1M2 value exactly: one unchanged block-scaled MMA serves both
   (:func:`e2m2_matmul` emulates that arithmetic).

The E4M3 trap: with g sized for E2M1, a block holding the tensor maximum would need an E1M2 scale of
448 * 6 / 3.5 = 768 > 448; such blocks may only use E2M1 (``global_scale="e1m2_safe"`` sizes g with 3.5 instead).
The paper's headline numbers (+3.1% tensor-core area, +1.5% power) are hardware results, not reproduced here.

Use::

    from icml26.quant.mixfp4 import MixFP4Config, NVFP4Config, quantize_
    quantize_(model, MixFP4Config(weights=True, activations=True))   # every nn.Linear but lm_head

References
----------
- "MixFP4: Enhancing NVFP4 with Adaptive FP4/INT4 Block Representations", ICML 2026 (arXiv 2605.31035).
- NVIDIA, NVFP4 (Blackwell) format; OCP Microscaling Formats (MX) v1.0 specification, 2023.
- Four Over Six (arXiv 2512.02010): block max mapped to 6 or 4, a related per-block choice.
"""

from icml26.quant._common import BlockTensor, dequantize, mxfp4_quantize, nvfp4_quantize
from icml26.quant.mixfp4.format import GlobalScale, compiled, e2m2_matmul, format_share, mixfp4_qdq, quantize_mixfp4
from icml26.quant.mixfp4.transform import (
    FakeQuantLinear,
    MixFP4Config,
    MXFP4Config,
    NVFP4Config,
    QuantConfig,
    quantize_,
)

__all__ = [
    "BlockTensor",
    "FakeQuantLinear",
    "GlobalScale",
    "MXFP4Config",
    "MixFP4Config",
    "NVFP4Config",
    "QuantConfig",
    "compiled",
    "dequantize",
    "e2m2_matmul",
    "format_share",
    "mixfp4_qdq",
    "mxfp4_quantize",
    "nvfp4_quantize",
    "quantize_",
    "quantize_mixfp4",
]
