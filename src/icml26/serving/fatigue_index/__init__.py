"""Fatigue Index (FI): an online diagnostic of degradation during long-horizon autoregressive generation.

While a causal LM generates, three signals are read from the forward on generated token t, at t = k, 2k, ...
with k = 2 (forward hooks on the last self-attention, the final norm and the output embeddings;
:class:`FatigueProbe`); the prompt's forward (t = 0) only fixes the reference h_0 and is not a probe (the
official code drops it too):

1. prompt attention A_t = mean over heads h and the first K = 64 prompt positions j of the last layer's attention
   of the newest query, A_t = (1/K') sum_{j < K'} (1/H) sum_h alpha_{t,j}^h with K' = min(K, prompt length); left
   padding is skipped, so a padded and an unpadded prompt give the same A_t (:func:`prompt_attention`);
2. representational drift D_t = ||h_t - h_0||_2 between top-layer hidden states, h_0 the last prompt token's
   (:func:`embedding_drift`);
3. entropy E_t = -sum_v p_t(v) log p_t(v) of the next-token distribution from the *raw* logits (before
   temperature and top-p) (:func:`predictive_entropy`).

They are mapped to [0, 1], higher = more fatigued (:func:`phi_attention`, :func:`phi_entropy`, :func:`phi_drift`):

4. phi_A = 1 - clip(A, 0, 1); phi_D = clip(D / kappa, 0, 1); phi_E = (H_low - E) / H_low below the band,
   0 inside [H_low, H_high], (E - H_high) / beta above it, clipped to [0, 1] (both too little and too much
   entropy are miscalibration);
5. FI_t = 0.40 phi_A + 0.35 phi_E + 0.25 phi_D (:func:`fatigue_index`): monotone in each phi, bounded in [0, 1]
   (weights >= 0, summing to 1), and each term reads as a share of the index (the paper's axioms);
6. smoothing: a trailing moving average over 5 probes; alert: on when the smoothed FI >= 0.50, off when <= 0.40
   (hysteresis, no chatter) (:class:`FatigueMonitor`, :func:`fatigue_trajectory`).

The constants (band [3.8, 5.0] nats, kappa = 20, beta = 5) are the paper's, calibrated on OPT-2.7B; they are
model-specific. :meth:`FatigueConfig.calibrate` fits them once on a calibration split (band = [q10, q90] of
healthy-prefix entropies, kappa = q95 of drift, beta = q99 of entropy - H_high) and returns a frozen config;
never per sequence, never on the evaluated traces.

Use: ``generate_with_fatigue(model, tokenizer, prompts, FatigueConfig(), max_new_tokens=120, do_sample=True,
top_p=0.95)`` returns one :class:`FatigueTrace` per prompt (probes, FI, smoothed FI, alert, onset); or attach
:class:`FatigueStoppingCriteria` (a ``transformers.StoppingCriteria``, optionally stopping on alert) to your own
``generate`` call. The model must use ``attn_implementation="eager"`` (sdpa returns no attention weights).
Evaluation: :func:`evaluate_fatigue` (AUROC with scikit-learn, Spearman with scipy); tasks and labels:
:func:`make_suite` (enumeration, counting, IFEval-style constraints, needle recall), :func:`repetition_ratio`,
:func:`distinct_n`.

What the abstract leaves open, and our readings:

- the constants and the three divergent FI versions of the official code: we follow the notes (band [3.8, 5.0],
  kappa = 20, beta = 5, hysteresis (0.50, 0.40); never per-run min-max normalisation);
- "attention to the original prompt": the *mean* weight over the first K prompt positions (the paper; uniform
  attention over L keys gives 1/L, so phi_A sits near 1 on a long context); ``attention_reduce="mass"`` (ours)
  sums the weight instead;
- h_0: the top hidden state after the final norm (what the output embeddings read) at the last prompt token;
- the chosen token's log-probability (for the perplexity baseline) is read from the raw logits too;
- calibration quantiles and the "healthy prefix" (the first quarter of the probes of sequences whose task passes),
  and how degradation is binarised (the task's programmatic check fails): ours, after the notes;
- traces end at the first EOS token; ``reproduce`` suppresses EOS to get a fixed horizon.

References
----------
- R. Marwah et al., "Cognitive Fatigue in Autoregressive Transformers: Formalization and Measurement", ICML 2026,
  arXiv 2605.30981; official code: github.com/rijumarwah/cognitive-fatigue-llms.
- A. Holtzman, J. Buys, L. Du, M. Forbes, Y. Choi, "The Curious Case of Neural Text Degeneration", ICLR 2020.
- N. F. Liu et al., "Lost in the Middle: How Language Models Use Long Contexts", TACL 2024.
- G. Xiao, Y. Tian, B. Chen, S. Han, M. Lewis, "Efficient Streaming Language Models with Attention Sinks", ICLR 2024.
"""

from typing import TYPE_CHECKING

from icml26._core.lazy import lazy_exports

_MODULE_OF = {
    "FatigueConfig": "config",
    **dict.fromkeys(
        (
            "embedding_drift",
            "fatigue_index",
            "fatigue_trajectory",
            "hysteresis_alert",
            "phi_attention",
            "phi_drift",
            "phi_entropy",
            "predictive_entropy",
            "prompt_attention",
            "smooth",
        ),
        "signals",
    ),
    **dict.fromkeys(
        ("FatigueMonitor", "FatigueProbe", "FatigueStoppingCriteria", "FatigueTrace", "generate_with_fatigue"),
        "monitor",
    ),
    **dict.fromkeys(("FAMILIES", "Task", "distinct_n", "make_suite", "needle_task", "repetition_ratio"), "tasks"),
    **dict.fromkeys(
        ("SCORES", "auroc", "evaluate_fatigue", "sequence_scores", "signal_features", "spearman"), "evaluate"
    ),
}
__all__ = [
    "FAMILIES",
    "SCORES",
    "FatigueConfig",
    "FatigueMonitor",
    "FatigueProbe",
    "FatigueStoppingCriteria",
    "FatigueTrace",
    "Task",
    "auroc",
    "distinct_n",
    "embedding_drift",
    "evaluate_fatigue",
    "fatigue_index",
    "fatigue_trajectory",
    "generate_with_fatigue",
    "hysteresis_alert",
    "make_suite",
    "needle_task",
    "phi_attention",
    "phi_drift",
    "phi_entropy",
    "predictive_entropy",
    "prompt_attention",
    "repetition_ratio",
    "sequence_scores",
    "signal_features",
    "smooth",
    "spearman",
]

if TYPE_CHECKING:
    from icml26.serving.fatigue_index.config import FatigueConfig
    from icml26.serving.fatigue_index.evaluate import (
        SCORES,
        auroc,
        evaluate_fatigue,
        sequence_scores,
        signal_features,
        spearman,
    )
    from icml26.serving.fatigue_index.monitor import (
        FatigueMonitor,
        FatigueProbe,
        FatigueStoppingCriteria,
        FatigueTrace,
        generate_with_fatigue,
    )
    from icml26.serving.fatigue_index.signals import (
        embedding_drift,
        fatigue_index,
        fatigue_trajectory,
        hysteresis_alert,
        phi_attention,
        phi_drift,
        phi_entropy,
        predictive_entropy,
        prompt_attention,
        smooth,
    )
    from icml26.serving.fatigue_index.tasks import FAMILIES, Task, distinct_n, make_suite, needle_task, repetition_ratio

__getattr__, __dir__ = lazy_exports(
    globals(),
    _MODULE_OF,
    {"monitor": "torch and transformers", "evaluate": "scikit-learn and scipy", "signals": "numpy"},
    "serving",
)
