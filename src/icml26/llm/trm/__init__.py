"""Trust Region Masking (TRM): drop whole sequences whose max token divergence leaves the trust region.

LLM-RL samples completions with an inference engine pi_roll and differentiates a trainer pi_theta; the two never
agree exactly (precision, MoE routing, top-p, staleness). The policy-gradient surrogate L is then only an
approximation of the true objective J, and its error is controlled by the *largest* token-level divergence along
the sequence, not by any single token's ratio. TRM enforces that trust region at sequence level:

1. For every completion token compute a divergence d_t between pi_roll and pi_theta, with
   rho_t = pi_theta(y_t|c_t) / pi_roll(y_t|c_t): the exact KL(pi_roll || pi_theta)(c_t) from stored logits, or a
   one-sample detector |log rho_t|, k2 = (log rho_t)^2 / 2, k3 = rho_t - 1 - log rho_t
   (:func:`token_divergence`).
2. Keep sequence i iff max_t d_it <= delta over its valid tokens, M_i = 1[max_t d_it <= delta] (TRM-max; TRM-avg
   uses the mean) (:func:`trust_region_mask`). The rule ignores the advantage's sign, unlike TRL's OPSM.
3. Train with the usual PPO/GRPO clipped surrogate on the kept sequences only (:func:`masked_policy_loss`):
   masking composes with clipping, it does not replace it.
4. Why whole sequences: |J - L| <= min of three bounds (:mod:`icml26.llm.trm.bounds`), classical
   eps D_max T(T-1) = O(T^2), Pinsker-marginal 2 eps D_max sum_{k<T} sqrt(k) = O(T^1.5) and mixed
   2 sqrt(2) eps T sqrt(D_max) = O(T), all in D_max = max_{t,c} KL_t: a sequence-level quantity that per-token
   clipping cannot bound, and that TRM bounds by delta on the sequences it trains on.

What the abstract leaves open, and our reading:

- the reference policy for rho: pi_roll (the engine's own log-probs), never a recomputed pi_old, which equals
  pi_theta at the first step and would leave nothing to mask;
- the estimator: ``k2`` by default (verl's ``seq_max_k2``); k3 is asymmetric and a poor detector under a max;
- normalisation after masking: by all valid tokens of the batch (masking never raises the step size);
  ``normalize="kept_tokens"`` is available and the masked fraction is always reported;
- delta: no default in the abstract; ours, 0.05 on k2 (|log rho| <= 0.32), is a placeholder to tune per
  pipeline so that a small share (<~ 20%) of sequences is dropped;
- NaN (ours, one rule for the core functions and the TRL hook): a NaN engine log-prob at a valid token (a token
  the engine could not score) carries no evidence (divergence 0, importance weight 1, as TRL does); a NaN
  trained-policy log-prob there raises ``ValueError``; padding may hold anything.

Integration: :class:`TRMGRPOTrainer` (TRL 1.16 ``GRPOTrainer`` with TRM in its ``get_off_policy_mask`` hook),
configured by :class:`TRMGRPOConfig` (a ``GRPOConfig`` with ``trm_delta``/``trm_estimator``/``trm_reduce``),
imported lazily so the core needs torch only. Off-policy data
for experiments: :class:`MismatchedRollout` (bf16 logits, routing spikes, rollout-only top-p, staleness).

References
----------
- Y. Li, J. Liu, J. Xu, Y. Tong, Z. Li, B. Wang, "Trust Region Masking for Long-Horizon LLM Reinforcement
  Learning", ICML 2026, arXiv 2512.23075; official code: verl PR #4544 ("trust region sequence masking").
- J. Schulman, S. Levine, P. Moritz, M. Jordan, P. Abbeel, "Trust Region Policy Optimization", ICML 2015.
- S. Kakade, J. Langford, "Approximately Optimal Approximate Reinforcement Learning", ICML 2002.
- J. Schulman, F. Wolski, P. Dhariwal, A. Radford, O. Klimov, "Proximal Policy Optimization Algorithms", 2017.
- Z. Shao et al., "DeepSeekMath: Pushing the Limits of Mathematical Reasoning in Open Language Models" (GRPO), 2024.
"""

from typing import TYPE_CHECKING

from icml26._core.lazy import lazy_exports

# Public name -> submodule. Imports are lazy so that ``icml26.llm.trm.reproduce`` (the CARD) and ``icml26 list``
# load neither torch nor TRL; ``TRMGRPOTrainer`` and ``make_rollout_func`` need TRL, everything else torch only.
_MODULE_OF = {
    **dict.fromkeys(
        (
            "BOUNDS",
            "ExactCheck",
            "TabularPolicy",
            "classical",
            "exact_surrogate_error",
            "mixed",
            "pinsker_marginal",
            "worst_case_reward",
        ),
        "bounds",
    ),
    **dict.fromkeys(
        (
            "DIVERGENCES",
            "PolicyLoss",
            "masked_policy_loss",
            "opsm_mask",
            "sequence_ratio_mask",
            "token_divergence",
            "token_mask",
            "trust_region_mask",
        ),
        "masking",
    ),
    **dict.fromkeys(("GRUPolicy", "MismatchedRollout", "Rollout", "top_p_filter"), "rollout"),
    **dict.fromkeys(("TRMGRPOConfig", "TRMGRPOTrainer", "make_rollout_func"), "trainer"),
}
__all__ = [
    "BOUNDS",
    "DIVERGENCES",
    "ExactCheck",
    "GRUPolicy",
    "MismatchedRollout",
    "PolicyLoss",
    "Rollout",
    "TRMGRPOConfig",
    "TRMGRPOTrainer",
    "TabularPolicy",
    "classical",
    "exact_surrogate_error",
    "make_rollout_func",
    "masked_policy_loss",
    "mixed",
    "opsm_mask",
    "pinsker_marginal",
    "sequence_ratio_mask",
    "token_divergence",
    "token_mask",
    "top_p_filter",
    "trust_region_mask",
    "worst_case_reward",
]

if TYPE_CHECKING:
    from icml26.llm.trm.bounds import (
        BOUNDS,
        ExactCheck,
        TabularPolicy,
        classical,
        exact_surrogate_error,
        mixed,
        pinsker_marginal,
        worst_case_reward,
    )
    from icml26.llm.trm.masking import (
        DIVERGENCES,
        PolicyLoss,
        masked_policy_loss,
        opsm_mask,
        sequence_ratio_mask,
        token_divergence,
        token_mask,
        trust_region_mask,
    )
    from icml26.llm.trm.rollout import GRUPolicy, MismatchedRollout, Rollout, top_p_filter
    from icml26.llm.trm.trainer import TRMGRPOConfig, TRMGRPOTrainer, make_rollout_func


__getattr__, __dir__ = lazy_exports(
    globals(), _MODULE_OF, {**dict.fromkeys(set(_MODULE_OF.values()), "torch"), "trainer": "torch and trl"}, "llm"
)
