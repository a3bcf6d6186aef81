"""TFT + DSG 3D visual grounding: text-aware feature tuning and decomposed spectral geometry.

A 3D grounder reads a scene (objects as point clouds and boxes) and an utterance, and picks the object the
utterance refers to (3DREC: scored by accuracy on ground-truth objects, or by Acc@0.25/0.5, the share of chosen
boxes with IoU >= 0.25/0.5 against the true box, on detector proposals). The paper adds two things:

1. Text-Aware Feature Tuning (TFT, :class:`TextAwareFeatureTuning`): the sentence enters the *visual hierarchy*,
   not only the late cross-modal layers. After each stage of the object encoder (two point-wise stages, then the
   pooled object stage) with features h and sentence embedding t,
   h <- h + tanh(alpha) * (gamma(t) * h + beta(t))        (FiLM; ``mode="xattn"``: a cross-attention to the words),
   with a per-channel gate alpha initialised at 0 (the model starts as late fusion).
2. Decomposed Spectral Geometry (DSG, :class:`DecomposedSpectralGeometry`): a learnable Fourier basis over the
   pairwise geometry, split by parity. With Delta_ij = (c_j - c_i) / s (centre offsets over the scene's RMS
   radius s) and W in R^{3 x F}, W ~ N(0, sigma^2) and trained,
   S_ij = MLP_s(cos(Delta_ij W)),   S_ij = S_ji   (even: distances, "closest", "between"),
   A_ij = tanh(W_a sin(Delta_ij W)),  A_ij = -A_ji  (odd, W_a without bias: direction, "left of", "on").
3. Each attention head h of the object self-attention gets the bias
   b_ij^h = g_s^h(t) S_ij^h + g_a^h(t) A_ij^h,  g = 1 + Linear(t)  (gates start at 1),
   so the utterance chooses which spectral parts, and which sign of the odd part, each head listens to.
4. The grounder (:class:`TFTGrounding`): PointNet-tiny objects (with TFT), a 2-layer transformer over trainable
   word embeddings, 2 cross-modal layers (biased object self-attention, object-to-word cross-attention,
   feed-forward), one logit per object; trained by cross-entropy on the target (or on the proposal that overlaps
   it most).

Why the split matters: a code that is even in Delta cannot tell "left of" from "right of". In a scene symmetric
under the point reflection through the anchor, the symmetric-only model gives the two mirrored candidates the same
score (a test checks it), so it is at chance on left/right minimal pairs, whatever it learned.

What the abstract leaves open, and our reading (none of it is the authors' code: none is public):

- the base model: a compact grounder (d = 64) standing in for the paper's DETR-style 3DREC/3DRES model; no
  segmentation head (3DRES, mIoU) and no box-refinement head;
- TFT's operator (FiLM by default, cross-attention as an option), its stages (after each encoder stage) and the
  zero-initialised gate; without pretrained unimodal encoders the domain shift TFT targets cannot occur, so only
  early against late fusion is measured;
- DSG's input (centre offsets normalised by the scene's RMS radius; size differences optional, ``in_dim=6``),
  F = 32 frequencies, sigma = 1, one hidden layer in MLP_s, a single bias-free layer and tanh in the odd branch,
  the text gates, and where the bias goes (object self-attention only);
- the data: ScanRefer, Nr3D and Sr3D (ScanNet scans) are not available offline; the claims run on a procedural
  Sr3D-like benchmark (:class:`ProceduralReferDataset`: rooms of parametric furniture with colours, six relation
  families, view-dependent relations from a stated viewpoint, same-class distractors, minimal pairs, a
  left/right mirror probe, and a simulated detector for Acc@0.25/0.5). Nothing here measures ScanRefer.

Baselines (the same encoders, transformer, gates, data and budget; only the pair code differs):
:class:`HandcraftedRelPos` (ViL3DRel's distance and angle features), :class:`MLPRelPos` (an MLP on Delta),
:class:`FourierRelPos` (fixed random Fourier features, not decomposed), DSG with the symmetric part only, no
geometry.

References
----------
- The paper: "TFT and DSG for 3D visual grounding", ICML 2026 (abstract only; no public code found).
- D. Z. Chen, A. X. Chang, M. Niessner, "ScanRefer: 3D Object Localization in RGB-D Scans using Natural Language",
  ECCV 2020.
- P. Achlioptas, A. Abdelreheem, F. Xia, M. Elhoseiny, L. Guibas, "ReferIt3D: Neural Listeners for Fine-Grained 3D
  Object Identification in Real-World Scenes" (Nr3D, Sr3D), ECCV 2020.
- S. Chen, P.-L. Guhur, M. Tapaswi, C. Schmid, I. Laptev, "Language Conditioned Spatial Relation Reasoning for 3D
  Object Grounding" (ViL3DRel), NeurIPS 2022.
- Y. Li, S. Si, G. Li, C.-J. Hsieh, S. Bengio, "Learnable Fourier Features for Multi-Dimensional Spatial
  Positional Encoding", NeurIPS 2021.
- M. Tancik et al., "Fourier Features Let Networks Learn High Frequency Functions in Low Dimensional Domains",
  NeurIPS 2020.
- E. Perez, F. Strub, H. de Vries, V. Dumoulin, A. Courville, "FiLM: Visual Reasoning with a General
  Conditioning Layer", AAAI 2018.
- C. R. Qi, H. Su, K. Mo, L. J. Guibas, "PointNet", CVPR 2017.
"""

from typing import TYPE_CHECKING

from icml26._core.lazy import lazy_exports

# Public name -> submodule. Lazy, so that ``reproduce`` (the CARD) and ``icml26 list`` never import torch.
_MODULE_OF = {
    **dict.fromkeys(
        (
            "DecomposedSpectralGeometry",
            "FourierRelPos",
            "HandcraftedRelPos",
            "MLPRelPos",
            "NoRelPos",
            "RelationCode",
            "pairwise_offsets",
            "vil3drel_features",
        ),
        "geometry",
    ),
    "TextAwareFeatureTuning": "tft",
    **dict.fromkeys(("RELATIONS", "TFTGrounding"), "model"),
    "ProceduralReferDataset": "dataset",
    **dict.fromkeys(("DetectorNoise", "propose"), "proposals"),
    **dict.fromkeys(("acc_at_iou", "accuracy", "iou3d_aabb"), "metrics"),
    **dict.fromkeys(("Evaluation", "TrainConfig", "evaluate", "fit"), "training"),
    **dict.fromkeys(("Solution", "solve"), "solver"),
    **dict.fromkeys(("Scene", "generate_scene", "mirror_probe"), "scenes"),
    **dict.fromkeys(("Vocabulary", "parse"), "vocab"),
}
_NEEDS_TORCH = {"geometry", "tft", "model", "dataset", "training"}
__all__ = [
    "RELATIONS",
    "DecomposedSpectralGeometry",
    "DetectorNoise",
    "Evaluation",
    "FourierRelPos",
    "HandcraftedRelPos",
    "MLPRelPos",
    "NoRelPos",
    "ProceduralReferDataset",
    "RelationCode",
    "Scene",
    "Solution",
    "TFTGrounding",
    "TextAwareFeatureTuning",
    "TrainConfig",
    "Vocabulary",
    "acc_at_iou",
    "accuracy",
    "evaluate",
    "fit",
    "generate_scene",
    "iou3d_aabb",
    "mirror_probe",
    "pairwise_offsets",
    "parse",
    "propose",
    "solve",
    "vil3drel_features",
]

if TYPE_CHECKING:
    from icml26.vision.grounding_3d.dataset import ProceduralReferDataset
    from icml26.vision.grounding_3d.geometry import (
        DecomposedSpectralGeometry,
        FourierRelPos,
        HandcraftedRelPos,
        MLPRelPos,
        NoRelPos,
        RelationCode,
        pairwise_offsets,
        vil3drel_features,
    )
    from icml26.vision.grounding_3d.metrics import acc_at_iou, accuracy, iou3d_aabb
    from icml26.vision.grounding_3d.model import RELATIONS, TFTGrounding
    from icml26.vision.grounding_3d.proposals import DetectorNoise, propose
    from icml26.vision.grounding_3d.scenes import Scene, generate_scene, mirror_probe
    from icml26.vision.grounding_3d.solver import Solution, solve
    from icml26.vision.grounding_3d.tft import TextAwareFeatureTuning
    from icml26.vision.grounding_3d.training import Evaluation, TrainConfig, evaluate, fit
    from icml26.vision.grounding_3d.vocab import Vocabulary, parse


__getattr__, __dir__ = lazy_exports(globals(), _MODULE_OF, dict.fromkeys(_NEEDS_TORCH, "torch"), "vision")
