"""ANTIC: Adaptive Neural Temporal In situ Compressor, for time-evolving PDE fields, in one streaming pass.

A solver emits snapshots u_0, u_1, ..., u_{T-1} (equally spaced in time). ANTIC never stores the trajectory:

1. **Temporal selection (in situ).** A selector sees each snapshot once and keeps a subset K of frame indices.
   The released code's Navier-Stokes selector (``EnstrophySelector``, "PATS") tracks the activity E_t = mean(omega_t^2)
   and, since the anchor frame a, keeps skipping while both
   (i)  |E_t - E_a| / |E_{a+1} - E_a| <= sqrt(max_j F_j / mean_{j in window} F_j),  F_j = |E_j - E_{j-1}|, and
   (ii) corr(omega_t, omega_a) >= 0.9
   hold; when either breaks it keeps frame t and re-anchors on the last in-bounds frame; after ``window_size`` frames
   in bounds it keeps frame t. Ours: ``InterpolationErrorSelector`` keeps the frame before the first one at which
   linear interpolation from the anchor misses a buffered frame by more than a relative L2 tolerance (one frame of lag).
2. **Spatial neural field.** Each kept frame is min-max normalised to [-1, 1] and fitted by
   f_theta(x) = W_L sigma(LN(... sigma(LN(W_1 gamma(x))))),  gamma(x) = [sin(B x), cos(B x)],
   with B an integer matrix (round(7 N(0, 1)): periodic features, no seam on the torus), SiLU, LayerNorm; about 8k
   weights (32 frequencies, 3 hidden layers of 48), MSE, AdamW with cosine decay.
3. **Continual residual updates.** The first kept frame trains every weight (``steps_first``); every later kept frame
   adds W <- W + B_l A_l (LoRA, rank r, A he-uniform, B = 0) to the hidden layers and trains only A, B
   (``steps_next``), continuing from the previous frame's A, B: the residual is in parameter space. Every
   ``keyframe_every`` kept frames the LoRA is merged, every weight retrained, and a keyframe stored. Decoding kept
   frame k = its keyframe's weights + its own A, B.
4. **Reconstruction and storage.** A dropped frame is linearly interpolated in time between the decoded kept frames
   around it. Stored: a JSON header, the frequencies (int8), kept indices, keyframe ids (int32), min-max ranges,
   keyframe weights and LoRA tensors (float32); ``CompressedTrajectory.nbytes == len(to_bytes())`` and the
   compression ratio is raw float32 bytes of ALL T frames over that.

Our readings (the abstract leaves them open): the selector is the released code's rule, not a formula from the
paper; a broken bound keeps the current frame (the released code's comment) and the stream's last frame is always
kept so every dropped frame lies between kept ones; per-frame (not running) min-max normalisation; LoRA on hidden
layers only is the default (``lora_targets="input_hidden"``, ours, adds the first layer); keyframes store full
weights and the keyframe frame stores no LoRA. The baselines: ``FixedSelector(uniform_indices(T, |K|))`` (uniform
subsampling at equal frame count), ``ANTIC(continual=False)`` (independent per-frame fields at an equal step
schedule), ``ZFPCodec`` / ``SZ3Codec`` per frame with ``match_error`` bisecting the bound to the same all-frame
relative L2 error. The solver (``KolmogorovFlow2D``) is a pseudo-spectral vorticity-streamfunction code (2/3
dealiasing, integrating-factor RK4 with the forcing integrated exactly), forced Kolmogorov flow
(forcing sin(k_f y), Re = 1/nu) or decaying turbulence.

References:
    ANTIC: Adaptive Neural Temporal in situ Compressor (ICML 2026); official code AndreiB137/ANTIC (JAX).
    Farazmand & Sapsis, A variational approach to probing extreme events in turbulent dynamical systems,
    Science Advances 3 (2017) (Kolmogorov flow at Re = 40, k_f = 4).
    Hu et al., LoRA: Low-Rank Adaptation of Large Language Models, ICLR 2022.
    Tancik et al., Fourier Features Let Networks Learn High Frequency Functions, NeurIPS 2020.
    Lindstrom, Fixed-Rate Compressed Floating-Point Arrays (ZFP), IEEE TVCG 2014; Liang et al., SZ3, IEEE TBD 2022.
"""

from icml26.science.antic.codecs import SZ3Codec, ZFPCodec, match_error, relative_l2
from icml26.science.antic.compressor import ANTIC, CompressedTrajectory, FixedSelector, interpolate_frames
from icml26.science.antic.field import FourierFeatures, LoRALinear, NeuralField
from icml26.science.antic.selector import (
    EnstrophySelector,
    InterpolationErrorSelector,
    TemporalSelector,
    UniformSelector,
    uniform_indices,
)
from icml26.science.antic.solver import CFLError, KolmogorovFlow2D, taylor_green_vorticity

ANTICCompressor = ANTIC

__all__ = [
    "ANTIC",
    "ANTICCompressor",
    "CFLError",
    "CompressedTrajectory",
    "EnstrophySelector",
    "FixedSelector",
    "FourierFeatures",
    "InterpolationErrorSelector",
    "KolmogorovFlow2D",
    "LoRALinear",
    "NeuralField",
    "SZ3Codec",
    "TemporalSelector",
    "UniformSelector",
    "ZFPCodec",
    "interpolate_frames",
    "match_error",
    "relative_l2",
    "taylor_green_vorticity",
    "uniform_indices",
]
