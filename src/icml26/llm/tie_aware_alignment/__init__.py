"""Tie-aware (silent-aware) preference alignment: let labelers stay silent, and model the ties they leave.

Forced-choice preference data assumes a definite winner for every pair; when two responses differ by less than the
labeler's resolution limit, a forced label is noise, and a systematic tie-break (a judge's length or position
bias) is worse than noise. The silent-aware framework:

1. **Label with a resolution limit.** A labeler perceives the gap ``g = r*(y_a) - r*(y_b) + noise`` and says
   ``a > b`` or ``b > a`` when ``|g| >= tau``, and stays silent (a tie, label 0) below it
   (:class:`ResolutionLimitedLabeler`; forced labelers break sub-resolution pairs at random, by a spurious feature,
   or by position).
2. **Margin.** DPO's implicit reward ``h(y) = beta log(pi_theta(y|x) / pi_ref(y|x))`` and margin
   ``d = h(y_a) - h(y_b)``.
3. **Tie-aware likelihood** with tie propensity ``nu`` (``alpha = log nu``), in log space (:mod:`.likelihoods`):
   Rao-Kupper ``P(a > b) = sigma(d - alpha)``, ``P(tie) = (nu^2 - 1) e^d / ((e^d + nu)(1 + nu e^d))``;
   Davidson ``P(a > b) = e^{d/2} / (e^{d/2} + e^{-d/2} + nu)``, ``P(tie) = nu / (e^{d/2} + e^{-d/2} + nu)``.
   Both are Bradley-Terry at ``nu = 1`` (Rao-Kupper) or ``nu = 0`` (Davidson).
4. **Loss** ``-log P(label | d)``, weighted mean over pairs with ties weighted by ``tie_weight``
   (:func:`tie_aware_loss` on margins, :func:`tie_dpo_loss` on DPO log-probs). A tie needs no orientation.
5. **Guards (ours).** A tie pulls ``d`` to 0 and either response may move to satisfy it. The abstract's "objectives
   that mitigate unreliable updates" are not specified; our variants, on tie terms only: down-weighting
   (``tie_weight < 1``); ``guard="stop_higher"`` (the tie's gradient reaches only the lower-rated response, so a
   tie never pushes a response down); ``guard="anchor"`` (a BCO-style ``softplus(-h)`` on both tied responses).
6. **TRL.** :class:`TiesDPOTrainer` / :class:`TiesDPOConfig` (``tie_model``, ``nu``, ``tie_weight``,
   ``tie_guard``): TRL 1.16's ``DPOTrainer`` on ``prompt``/``chosen``/``rejected``/``is_tie`` rows, the flag kept
   through column pruning and the collator.

What the abstract leaves open, and our reading:

- the tie likelihoods: Rao-Kupper and Davidson as extended to DPO by Chen et al. (2024); ``nu`` fixed (default
  2.0, ours), a tensor may be learned (parameterise ``1 + softplus(u)`` for Rao-Kupper);
- the "several optimization objectives": the guards above, named as ours; the public default is no guard;
- the evaluation: no preference data exists offline, so the claims are tested in :class:`PreferenceWorld`, a
  procedural world with a known true reward (a spurious "length" feature the true reward slightly dislikes),
  linear-softmax policies with exact expected reward and KL; and on SmolLM2-135M-Instruct with a programmatic
  reward (full profile). Policies are compared at matched KL to the reference (the true reward grows without
  limit as a policy sharpens, so a raw reward at one ``beta`` rewards whichever objective regularises least).

References
----------
- "When Labelers Stay Silent: The Power of Ties in Cost-Effective Preference Learning", ICML 2026 (abstract only;
  no public code).
- J. Chen, G. Yang, W. Lin, J. Mei, B. Byrne, "On Extending Direct Preference Optimization to Accommodate Ties",
  NeurIPS 2025, arXiv 2409.17431 (DPO-RK, DPO-D; ties as a KL regulariser).
- P. V. Rao, L. L. Kupper, "Ties in paired-comparison experiments: a generalization of the Bradley-Terry model",
  JASA 1967. R. R. Davidson, "On extending the Bradley-Terry model to accommodate ties in paired comparison
  experiments", JASA 1970.
- R. Rafailov et al., "Direct Preference Optimization: Your Language Model is Secretly a Reward Model", NeurIPS 2023.
- S. R. Chowdhury et al., "Provably Robust DPO" (rDPO), 2024; E. Mitchell, "A note on DPO with noisy preferences"
  (cDPO), 2023; M. G. Azar et al., "A General Theoretical Paradigm to Understand Learning from Human Preferences"
  (IPO), 2023; S. Jung et al., "Binary Classifier Optimization" (BCO), 2024.
"""

from typing import TYPE_CHECKING

from icml26._core.lazy import lazy_exports

# Public name -> submodule. Lazy, so that ``reproduce`` (the CARD) and ``icml26 list`` load neither torch nor TRL;
# the trainer needs TRL, the rest torch (and numpy) only.
_MODULE_OF = {
    **dict.fromkeys(
        (
            "TIE_MODELS",
            "OutcomeLogProbs",
            "davidson_log_probs",
            "outcome_log_probs",
            "rao_kupper_log_probs",
            "tie_aware_loss",
        ),
        "likelihoods",
    ),
    **dict.fromkeys(("GUARDS", "labels_from_is_tie", "tie_dpo_loss"), "dpo"),
    **dict.fromkeys(("TIEBREAKS", "PairSet", "PreferenceWorld", "ResolutionLimitedLabeler"), "world"),
    **dict.fromkeys(("Arm", "Objective", "TrainedArms", "train_arms"), "toy"),
    **dict.fromkeys(("DataCollatorForTiePreference", "TiesDPOConfig", "TiesDPOTrainer"), "trainer"),
}
__all__ = [
    "GUARDS",
    "TIEBREAKS",
    "TIE_MODELS",
    "Arm",
    "DataCollatorForTiePreference",
    "Objective",
    "OutcomeLogProbs",
    "PairSet",
    "PreferenceWorld",
    "ResolutionLimitedLabeler",
    "TiesDPOConfig",
    "TiesDPOTrainer",
    "TrainedArms",
    "davidson_log_probs",
    "labels_from_is_tie",
    "outcome_log_probs",
    "rao_kupper_log_probs",
    "tie_aware_loss",
    "tie_dpo_loss",
    "train_arms",
]

if TYPE_CHECKING:
    from icml26.llm.tie_aware_alignment.dpo import GUARDS, labels_from_is_tie, tie_dpo_loss
    from icml26.llm.tie_aware_alignment.likelihoods import (
        TIE_MODELS,
        OutcomeLogProbs,
        davidson_log_probs,
        outcome_log_probs,
        rao_kupper_log_probs,
        tie_aware_loss,
    )
    from icml26.llm.tie_aware_alignment.toy import Arm, Objective, TrainedArms, train_arms
    from icml26.llm.tie_aware_alignment.trainer import DataCollatorForTiePreference, TiesDPOConfig, TiesDPOTrainer
    from icml26.llm.tie_aware_alignment.world import TIEBREAKS, PairSet, PreferenceWorld, ResolutionLimitedLabeler


__getattr__, __dir__ = lazy_exports(
    globals(), _MODULE_OF, {**dict.fromkeys(set(_MODULE_OF.values()), "torch"), "trainer": "torch and trl"}, "llm"
)
