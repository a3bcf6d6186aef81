"""Optimal top-K for mixture-of-experts training: the convergence bounds, their fitted constants, and a vectorised
top-K MoE layer with exact FLOP accounting.

An MoE layer has M experts; a softmax router sends each token to its top K. The abstract bounds the average squared
gradient norm of MoE training by O((1 + M/K)/sqrt(T)) after T steps, and, with the FLOP budget R fixed, by
O(sqrt(K/R) + M/sqrt(KR)), convex in K with an optimal K* in [1, M]. This package implements both sides:

1. **The layer** (:class:`TopKMoE`, transformers' argument names): router logits z = W_r x; p = softmax(z); the K
   largest p_i are kept and, with ``norm_topk_prob`` (default, Mixtral), renormalised, g_i = p_i / sum_{j in top-K}
   p_j; y = sum_{i in top-K} g_i E_i(x) with SwiGLU experts E_i(x) = W2_i (silu(W1_i x) * (W3_i x)). The N*K (token,
   expert) pairs are sorted by expert and each projection is one ``grouped_mm`` (no Python loop over experts). The
   Switch load-balancing loss (M/K) sum_e f_e P_e (f_e: selections of e per token, P_e: mean router probability)
   is 1 at perfect balance for every K (ours: transformers' form is K times larger), scaled by
   ``router_aux_loss_coef`` and returned with the output.
2. **Exact cost** (:func:`flops_per_token`): training FLOPs per token = c0 + K c_e, c0 = router + attention +
   projections and head (non-expert), c_e = one active expert, counted as 2 FLOPs per multiply-add, backward = 2x
   forward except the input gradient of data (checked against torch's FlopCounterMode). At budget R a run gets
   T(K) = floor(R / ((c0 + K c_e) x tokens per step)) steps (:func:`steps_for_budget`).
3. **The bounds** (:mod:`.theory`): B_T(K) = (a + b M/K)/sqrt(T) and B_R(K) = (a + b M/K) sqrt((c0 + K c_e)/R),
   the abstract's forms at a = b = 1, c0 = 0 (:func:`bound_fixed_steps`, :func:`bound`).
4. **K*** (:func:`optimal_k`): B_R is unimodal with K* = clip(b M / a, 1, M) at c0 = 0 (closed form for c0 > 0).
   With unit constants K* = M: an interior optimum exists only through the ratio b / a, which the abstract omits.
5. **Convexity** (:func:`convexity`): B_R is convex in u = sqrt(K) for all constants (a u + b M / u at c0 = 0; with
   c0 > 0 a sum of norms of (sqrt(c0), sqrt(c_e) u) and (sqrt(c0)/u^2, sqrt(c_e)/u)), but convex in K only for
   K < 3 b M / a at c0 = 0: the abstract's "convex in K" holds on all of [1, M] only when K* >= M/3.
6. **Fit** (:func:`fit_constants`, :func:`optimal_topk`): short fixed-T runs at several K give the bound's quantity
   Q (running average of ||grad f||^2, or training loss); Q sqrt(T) = a + b M/K is fitted by non-negative least
   squares on relative errors; K* follows from the fitted a, b and the model's exact c0, c_e.

Our readings (the abstract leaves them open; no official code is public): gates renormalised over the top K (the
notes' reading and Mixtral's; at K = 1 a renormalised gate is identically 1, so the router then learns only from
the balancing loss; ``norm_topk_prob=False`` gives Switch/OLMoE softmax gates); SwiGLU experts; dropless routing
(no capacity factor); the balancing loss normalised per K; the bound's constants a, b fitted as above; "one step
costs c0 + K c_e" with exact matrix-product FLOPs; matched schedules (same peak rate, warm-up and cosine shape over
each run's own horizon) for every K.

Also here: :class:`MoERegressor` and :class:`CharMoELM` (the reproduction's models), :class:`MixtureOfRegressions`
(the synthetic world), :func:`train_run` and :func:`sweep` (fixed-T and fixed-R runs; ``sweep`` returns JSON).

References
----------
- Optimal top-K for MoE (this paper), ICML 2026; abstract only, title unknown, no public code.
- N. Shazeer et al., "Outrageously Large Neural Networks: The Sparsely-Gated Mixture-of-Experts Layer", ICLR 2017.
- W. Fedus, B. Zoph, N. Shazeer, "Switch Transformers", JMLR 2022 (load-balancing loss).
- A. Q. Jiang et al., "Mixtral of Experts", 2024 (renormalised top-2 gates, SwiGLU experts).
- N. Muennighoff et al., "OLMoE: Open Mixture-of-Experts Language Models", 2024.
- J. Kaplan et al., "Scaling Laws for Neural Language Models", 2020; J. Hoffmann et al., "Training Compute-Optimal
  Large Language Models", 2022 (FLOP convention, matched schedules).
- S. Ghadimi, G. Lan, "Stochastic first- and zeroth-order methods for nonconvex stochastic programming", SIAM J.
  Optim. 2013 (the O(1/sqrt(T)) average-gradient-norm rate).
"""

from typing import TYPE_CHECKING

from icml26._core.lazy import lazy_exports

# Public name -> submodule; lazy so that the CARD (reproduce.py) and the theory load without torch.
_MODULE_OF = {
    **dict.fromkeys(("EXPERTS_IMPLEMENTATIONS", "TopKMoE", "load_balancing_loss", "route"), "layer"),
    **dict.fromkeys(("FlopCount", "MoEConfig", "flops_per_step", "flops_per_token", "steps_for_budget"), "flops"),
    **dict.fromkeys(
        (
            "Convexity",
            "FittedConstants",
            "OptimalTopK",
            "bound",
            "bound_fixed_steps",
            "convexity",
            "fit_constants",
            "optimal_k",
            "optimal_topk",
        ),
        "theory",
    ),
    **dict.fromkeys(("CharMoELM", "MoERegressor", "build_model"), "models"),
    **dict.fromkeys(("CharCorpus", "MixtureOfRegressions", "char_corpus"), "data"),
    **dict.fromkeys(("CharLMTask", "RegressionTask", "lr_at", "sweep", "train_run"), "training"),
}
_NEEDS_TORCH = {"layer", "models", "data", "training"}
__all__ = [
    "EXPERTS_IMPLEMENTATIONS",
    "CharCorpus",
    "CharLMTask",
    "CharMoELM",
    "Convexity",
    "FittedConstants",
    "FlopCount",
    "MixtureOfRegressions",
    "MoEConfig",
    "MoERegressor",
    "OptimalTopK",
    "RegressionTask",
    "TopKMoE",
    "bound",
    "bound_fixed_steps",
    "build_model",
    "char_corpus",
    "convexity",
    "fit_constants",
    "flops_per_step",
    "flops_per_token",
    "load_balancing_loss",
    "lr_at",
    "optimal_k",
    "optimal_topk",
    "route",
    "steps_for_budget",
    "sweep",
    "train_run",
]

if TYPE_CHECKING:
    from icml26.llm.moe_topk.data import CharCorpus, MixtureOfRegressions, char_corpus
    from icml26.llm.moe_topk.flops import FlopCount, MoEConfig, flops_per_step, flops_per_token, steps_for_budget
    from icml26.llm.moe_topk.layer import EXPERTS_IMPLEMENTATIONS, TopKMoE, load_balancing_loss, route
    from icml26.llm.moe_topk.models import CharMoELM, MoERegressor, build_model
    from icml26.llm.moe_topk.theory import (
        Convexity,
        FittedConstants,
        OptimalTopK,
        bound,
        bound_fixed_steps,
        convexity,
        fit_constants,
        optimal_k,
        optimal_topk,
    )
    from icml26.llm.moe_topk.training import CharLMTask, RegressionTask, lr_at, sweep, train_run


__getattr__, __dir__ = lazy_exports(globals(), _MODULE_OF, dict.fromkeys(_NEEDS_TORCH, "torch"), "llm")
