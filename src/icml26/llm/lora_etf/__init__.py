"""LoRA with ETF initialisation: initialise LoRA's A as an (approximately) equiangular tight frame.

LoRA trains W = W0 + s B A with A ∈ R^{r x n}, B ∈ R^{m x r}, B = 0 at init (s = α/r, α/√r for rsLoRA).

Why the shape of A matters ("Towards Understanding the Dynamics of Low-Rank Adaptation", ICML 2026):

1. With B = 0 the first update is ΔW = −η s² ∇f(W) AᵀA: the gradient is seen through AᵀA; later updates
   ΔW = s B A stay in the row space of A, i.e. the range of P_A = Aᵀ (A Aᵀ)^† A (:func:`subspace_projector`).
2. When the gradient is unknown at init, pick A so that AᵀA ∝ P_A (A Aᵀ ∝ I, a *tight* frame): the gradient
   is then projected, not distorted (:mod:`.dynamics` measures both). The paper asks for an *equiangular*
   tight frame (ETF): tight, unit columns, all |⟨a_i, a_j⟩| equal to the Welch bound.
3. Algorithm: build the frame (:func:`etf_matrix`), rescale it to the baseline's row norm, keep B = 0, train
   as usual (:func:`apply_etf_init` on a PEFT model; LoRA, DoRA, rsLoRA).

What the abstract leaves open, and our reading:

- *Which vectors form the frame.* (i) the n columns of A in R^r (frame theory; ``kind="untf"``, our reading);
  (ii) the r rows as a simplex ETF, rank r − 1 (``kind="simplex"``, ablation); (iii) orthonormal rows
  (``kind="orthogonal"``, ablation, a degenerate tight frame). Under (i) a real ETF exists only for
  n ≤ r(r+1)/2 and special (r, n) — LoRA's n = in_features is far beyond — so we return an exact ETF when a
  classical construction exists and otherwise a unit-norm tight frame with minimised coherence (a UNTF, *not*
  an ETF). :func:`frame_stats` reports the achieved coherence against the Welch bound and, beyond r(r+1)/2
  columns where Welch cannot be attained, the orthoplex and Levenshtein bounds (:func:`coherence_bounds`; at
  r = 8, n = 576: Welch 0.351, Levenshtein 0.539, our UNTF ~0.77); nothing here calls a Gaussian, orthogonal or
  UNTF A an "ETF".
- *What is credited.* Step 2's argument needs only tightness (A Aᵀ ∝ I): orthonormal rows do as well. Our
  reproduction (``icml26 reproduce lora_etf``) credits tightness where that is what is measured (C1, C2) and
  tests the paper's credit to equiangularity separately, against orthonormal rows, where an exact ETF exists
  (C1c).
- *Scale.* Every row of A gets the expected row norm of PEFT's default (E‖row‖² = 1/3 for kaiming-uniform
  with a = √5), so no gain comes from a hidden learning-rate change (``scale="match_gaussian"``: n/r²).

Use::

    from peft import LoraConfig, get_peft_model
    from icml26.llm.lora_etf import apply_etf_init, save_etf_adapter

    model = get_peft_model(base, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"]))
    apply_etf_init(model, kind="untf", scale="match_kaiming", seed=0)   # B stays 0: a no-op at init
    ...train...
    save_etf_adapter(model, "out/")   # PEFT's files + etf_init.json (kind, scale, coherence vs Welch)

References
----------
- "Towards Understanding the Dynamics of Low-Rank Adaptation", ICML 2026 (no official code public).
- E. J. Hu et al., "LoRA: Low-Rank Adaptation of Large Language Models", 2021.
- S.-Y. Liu et al., "DoRA: Weight-Decomposed Low-Rank Adaptation", ICML 2024.
- L. R. Welch, IEEE Trans. IT, 1974; T. Strohmer, R. W. Heath, ACHA, 2003; J. A. Tropp et al., IEEE Trans. IT,
  2005; J. J. Benedetto, M. Fickus, Adv. Comput. Math., 2003 (frame potential).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from icml26._core.lazy import lazy_exports

# Lazy exports (PEP 562): importing this package, or its torch-free ``reproduce.CARD``, does not import torch.
_EXPORTS = {
    "dynamics": (
        "lora_regression_problem",
        "projector_energy",
        "row_space_residual",
        "train_lora_regression",
        "train_lora_regressions",
        "update_alignment",
        "worst_coordinate_energy",
    ),
    "frames": (
        "coherence",
        "coherence_bounds",
        "etf_matrix",
        "frame_stats",
        "gerzon_bound",
        "known_etf",
        "minimise_coherence",
        "orthonormal_rows",
        "project_to_untf",
        "simplex_rows",
        "subspace_projector",
        "untf",
        "welch_bound",
    ),
    "peft_init": (
        "apply_etf_init",
        "lora_a_init",
        "lora_linear_layers",
        "peft_default_lora_a",
        "read_etf_sidecar",
        "save_etf_adapter",
        "target_row_norm",
    ),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = [
    "apply_etf_init",
    "coherence",
    "coherence_bounds",
    "etf_matrix",
    "frame_stats",
    "gerzon_bound",
    "known_etf",
    "lora_a_init",
    "lora_linear_layers",
    "lora_regression_problem",
    "minimise_coherence",
    "orthonormal_rows",
    "peft_default_lora_a",
    "project_to_untf",
    "projector_energy",
    "read_etf_sidecar",
    "row_space_residual",
    "save_etf_adapter",
    "simplex_rows",
    "subspace_projector",
    "target_row_norm",
    "train_lora_regression",
    "train_lora_regressions",
    "untf",
    "update_alignment",
    "welch_bound",
    "worst_coordinate_energy",
]

if TYPE_CHECKING:
    from icml26.llm.lora_etf.dynamics import (
        lora_regression_problem,
        projector_energy,
        row_space_residual,
        train_lora_regression,
        train_lora_regressions,
        update_alignment,
        worst_coordinate_energy,
    )
    from icml26.llm.lora_etf.frames import (
        coherence,
        coherence_bounds,
        etf_matrix,
        frame_stats,
        gerzon_bound,
        known_etf,
        minimise_coherence,
        orthonormal_rows,
        project_to_untf,
        simplex_rows,
        subspace_projector,
        untf,
        welch_bound,
    )
    from icml26.llm.lora_etf.peft_init import (
        apply_etf_init,
        lora_a_init,
        lora_linear_layers,
        peft_default_lora_a,
        read_etf_sidecar,
        save_etf_adapter,
        target_row_norm,
    )


__getattr__, __dir__ = lazy_exports(
    globals(), _MODULE_OF, dict.fromkeys(set(_MODULE_OF.values()), "torch (and peft for the PEFT plug-in)"), "llm"
)
