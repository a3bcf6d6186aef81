"""Per-sequence scores and the metrics the paper reports: AUROC (scikit-learn) for degradation and Spearman
(scipy) with repetition, concurrent (the whole sequence) or predictive (a prefix against what follows)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from icml26.serving.fatigue_index.config import FatigueConfig
from icml26.serving.fatigue_index.monitor import FatigueTrace
from icml26.serving.fatigue_index.signals import phi_attention, phi_drift, phi_entropy

__all__ = ["SCORES", "auroc", "evaluate_fatigue", "sequence_scores", "signal_features", "spearman"]

SCORES: tuple[str, ...] = ("fi", "phi_attention", "phi_entropy", "phi_drift", "neg_logprob")


def signal_features(traces: Sequence[FatigueTrace], config: FatigueConfig, upto: int | None = None) -> np.ndarray:
    """(n, 3): the mean of phi_A, phi_E and phi_D over each trace's probes at generation steps < ``upto``."""
    if not traces:
        raise ValueError("no traces to score")
    rows = []
    for t in traces:
        keep = slice(None) if upto is None else t.steps < upto
        a, e, d = t.attention[keep], t.entropy[keep], t.drift[keep]
        if len(a) == 0:
            raise ValueError(f"a trace has no probe before step {upto}: raise t0 or probe more often")
        rows.append(
            [
                phi_attention(a).mean(),
                phi_entropy(e, config.entropy_band, config.entropy_beta).mean(),
                phi_drift(d, config.drift_kappa).mean(),
            ]
        )
    return np.asarray(rows)


def sequence_scores(
    traces: Sequence[FatigueTrace], config: FatigueConfig | None = None, upto: int | None = None
) -> dict[str, np.ndarray]:
    """Per-sequence scores, higher = more suspect, signs fixed before any data (never flipped to win):
    mean FI under ``config`` (FI is linear in the phis, so its mean is w . mean phi), each mean phi, and the
    mean negative log-probability of the generated tokens (a perplexity monitor)."""
    cfg = config or FatigueConfig()
    f = signal_features(traces, cfg, upto)
    nll = np.array([-(t.logprob[:upto].mean() if len(t.logprob[:upto]) else 0.0) for t in traces])
    return {
        "fi": f @ np.asarray(cfg.weights),
        "phi_attention": f[:, 0],
        "phi_entropy": f[:, 1],
        "phi_drift": f[:, 2],
        "neg_logprob": nll,
    }


def auroc(labels: Any, scores: Any) -> float:
    """scikit-learn's ROC AUC of ``scores`` for the positive (degraded) class; one class only raises."""
    from sklearn.metrics import roc_auc_score

    y = np.asarray(labels, dtype=bool)
    s = np.asarray(scores, dtype=np.float64)
    if y.shape != s.shape:
        raise ValueError(f"{y.shape[0] if y.ndim else 0} labels for {s.shape[0] if s.ndim else 0} scores")
    if y.all() or not y.any():
        raise ValueError(f"AUROC needs both classes; all {y.size} labels are {bool(y[0]) if y.size else 'absent'}")
    return float(roc_auc_score(y, s))


def spearman(scores: Any, target: Any) -> float:
    """scipy's Spearman rho; a constant score or target carries no ranking and gives 0 (not NaN)."""
    from scipy.stats import spearmanr

    s, t = np.asarray(scores, dtype=np.float64), np.asarray(target, dtype=np.float64)
    if s.shape != t.shape or s.size < 3:
        raise ValueError(f"spearman needs two series of the same length >= 3, got {s.shape} and {t.shape}")
    if np.ptp(s) == 0 or np.ptp(t) == 0:
        return 0.0
    return float(spearmanr(s, t).statistic)


def evaluate_fatigue(
    traces: Sequence[FatigueTrace],
    degraded: Sequence[bool],
    repetition: Sequence[float],
    config: FatigueConfig | None = None,
    upto: int | None = None,
) -> dict[str, dict[str, float]]:
    """AUROC for ``degraded`` and Spearman with ``repetition`` of every score in :data:`SCORES`.

    Concurrent use: labels of the whole sequence, ``upto=None``. Predictive use: scores on the prefix of
    generation steps < ``upto`` (t0) and labels of what follows, among sequences still healthy at t0."""
    scores = sequence_scores(traces, config, upto)
    return {name: {"auroc": auroc(degraded, s), "spearman": spearman(s, repetition)} for name, s in scores.items()}
