"""LATMiX: learnable invertible affine transforms for microscaling (MX) quantisation of LLMs.

Only the abstract is public (ICML 2026, arXiv 2602.17681; no official code): everything below marked *ours* is
our reading of it.

Setting: post-training W4A4 quantisation of every Linear layer (but lm_head) in MX formats, mainly MXFP4 (OCP v1.0:
32-element blocks along in_features share an E8M0 scale 2^(floor(log2 amax_B) - 2); E2M1 elements rounded half to
even and saturated at +-6), weights and activations alike (:func:`icml26.quant._common.mx_qdq`).

Algorithm:

1. Sites. Every decoder layer has four transform sites, the inputs of q/k/v (shared), o_proj, gate/up (shared)
   and down_proj (:func:`find_sites`; SmolLM2-135M has 30 x 4 = 120).
2. Transform. At each site an invertible affine map T(x) = x A + b (:class:`InvertibleAffine`). A = H + Delta,
   H the normalised 32 x 32 Hadamard matched to the MX block, Delta learned; A is block-diagonal with 32-blocks
   (*ours*, the default; ``structure="full"`` learns a d x d matrix). b = s * beta, s = rms(x H) a fixed scale.
3. Quantise and fold. The consumer weight becomes W' = W A^{-T} (block inverses in fp32), quantised in MX; the
   activation is quantised after the transform; the translation is cancelled after the quantiser:

       y = (Q(x A + b) - b) Q(W')^T = Q(x A + b) Q(W')^T - b Q(W')^T                                   (1)

   where the last term is a constant folded into the bias. With quantisation off, (1) is x W^T exactly (up to
   float rounding): the model's function is unchanged (:class:`TransformedQuantLinear`).
4. Fit. Per site, minimise the relative error of the quantised site output, ||(1) - x W^T||^2 / ||x W^T||^2, on
   the full-precision model's calibration activations (layer-wise, every site sees FP inputs: *ours*), with Adam
   and straight-through gradients through both quantisers (:func:`fit_latmix`). *Ours*: the estimator also passes
   the gradient through each block's shared scale (LSQ-style, ``ste="scale"``): with the plain straight-through
   estimator d(1)/db = 0 exactly (Q(z) - b passes I - I), so b could never be learned; beta starts at
   -mean(x H) / s (centred transformed activations); each step uses ``max_rows`` random rows of the stacked
   consumer weight (an unbiased loss estimate, for CPU budgets); the start is kept if it scores lower at the end;
   an optional penalty ``cond_penalty`` * mean log cond(A_n) and a hard cap ``max_cond`` on install.
5. A non-orthogonal A does not commute with RMSNorm, so nothing is fused into the residual stream: T runs online
   before each quantiser (32 multiply-adds per element for 32-blocks, a batched einsum), for every arm alike.

The bound (:func:`mx_error_bound`, our reconstruction of the abstract's "bound on the quantization error"): the
activation error mapped back, e A^{-1}, obeys ||e A^{-1}||_F^2 <= sum_n ||A_n^{-1}||_2^2 sum_{B in n} 32 u^2 4^{E_B}
with E_B the block's shared exponent and u the element format's worst rounding error in scale units (2 for E2M1
under the floor rule, from saturation). A good transform lowers block maxima (the MX structure) while keeping A
well conditioned (the activation distribution): a global rotation spreads an outlier into every block.

Baselines (the same quantiser, sites, calibration and budget): :class:`MXConfig` (no transform, RTN),
:class:`HadamardConfig` (QuaRot-like randomised d x d Hadamard online, Paley/Sylvester constructions for 576 and
1536 with no padding; or the block Hadamard-32 of MR-GPTQ / "block rotation"), :class:`CayleyConfig` (a learned
orthogonal block, SpinQuant-like). Left open by the abstract and not done here: GPTQ weights (RTN everywhere),
an end-to-end KL objective, MXINT4.

Use::

    from icml26.quant.latmix import LATMiXConfig, quantize_
    quantize_(model, LATMiXConfig(steps=30), calib_ids=ids)   # ids: (n, length) token ids of calibration text

References
----------
- Gordon, Dikstein, Netzer, Achituve, Habi. "LATMiX: Learnable Affine Transformations for Microscaling
  Quantization of LLMs", ICML 2026 (arXiv 2602.17681).
- OCP Microscaling Formats (MX) v1.0 specification, 2023.
- Ashkboos et al. "QuaRot: Outlier-Free 4-Bit Inference in Rotated LLMs", 2024; Liu et al. "SpinQuant: LLM
  Quantization with Learned Rotations", 2024; Sun et al. "FlatQuant", 2024; Egiazarian et al. (MR-GPTQ / FP-Quant,
  arXiv 2509.23202); "Block Rotation is All You Need for MXFP4" (arXiv 2511.04214).
- Paley, "On orthogonal matrices", J. Math. Phys. 12 (1933) (the Hadamard constructions).
"""

from icml26.quant._common import MXTensor, mx_dequantize, mx_qdq, quantize_mx
from icml26.quant.latmix.bound import element_error_unit, mx_activation_error, mx_error_bound
from icml26.quant.latmix.config import FORMATS, CayleyConfig, HadamardConfig, LATMiXConfig, MXConfig
from icml26.quant.latmix.hadamard import hadamard_matrix
from icml26.quant.latmix.quantize import (
    SiteFit,
    TransformedQuantLinear,
    find_sites,
    fit_latmix,
    fit_site,
    fold_and_quantize,
    quantize_,
)
from icml26.quant.latmix.transforms import CayleyOrthogonal, HadamardTransform, InvertibleAffine, SiteTransform

__all__ = [
    "FORMATS",
    "CayleyConfig",
    "CayleyOrthogonal",
    "HadamardConfig",
    "HadamardTransform",
    "InvertibleAffine",
    "LATMiXConfig",
    "MXConfig",
    "MXTensor",
    "SiteFit",
    "SiteTransform",
    "TransformedQuantLinear",
    "element_error_unit",
    "find_sites",
    "fit_latmix",
    "fit_site",
    "fold_and_quantize",
    "hadamard_matrix",
    "mx_activation_error",
    "mx_dequantize",
    "mx_error_bound",
    "mx_qdq",
    "quantize_",
    "quantize_mx",
]
