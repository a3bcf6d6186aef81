"""Drift metrics on a performance curve (return or reward rate per step) with known phase boundaries.

For each change point c with phase length K (the previous phase is [c - K, c), the new one [c, c + K)):

- degradation fraction  DF = (R_pre - mean R over the first ``frac`` of the new phase) / |R_pre|, with R_pre the
  mean over the last ``frac`` of the previous phase (0: no loss; 1: everything lost);
- recovery time  RT = the first step k >= 0 of the new phase at which the trailing mean of ``window`` steps
  (within the new phase) reaches R_pre - ``tol`` |R_pre|, capped at K;
- steady-state normalised AUC = the mean of R over the last ``frac`` of every phase, divided by a reference
  (the optimal rate, or the stationary learner's).

Curves are arrays of shape (..., T): the metrics are computed for every leading index at once.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["degradation_fraction", "recovery_time", "steady_nauc"]


def _check(curve: np.ndarray, change_points: Sequence[int], phase: int) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(curve, dtype=float)
    if y.ndim == 0 or y.shape[-1] == 0:
        raise ValueError("curve must be a non-empty array whose last axis is time")
    if not np.isfinite(y).all():
        raise ValueError("curve contains NaN or infinite values")
    cps = np.asarray(change_points, dtype=int).reshape(-1)
    if cps.size == 0:
        raise ValueError("give at least one change point")
    if phase < 1:
        raise ValueError(f"phase length must be >= 1, got {phase}")
    if (cps - phase < 0).any() or (cps + phase > y.shape[-1]).any():
        raise ValueError(f"every change point needs a full phase ({phase} steps) before and after it in the curve")
    return y, cps


def _pre(y: np.ndarray, cps: np.ndarray, phase: int, frac: float) -> np.ndarray:
    n = max(1, round(frac * phase))
    return np.stack([y[..., c - n : c].mean(axis=-1) for c in cps], axis=-1)


def degradation_fraction(
    curve: np.ndarray, change_points: Sequence[int], phase: int, frac: float = 0.2, floor: float = 1e-12
) -> np.ndarray:
    """DF per change point (last axis); |R_pre| is floored at ``floor`` so that R_pre = 0 gives a finite DF (the
    form is unstable near R_pre = 0: prefer a common reference there)."""
    y, cps = _check(curve, change_points, phase)
    n = max(1, round(frac * phase))
    pre = _pre(y, cps, phase, frac)
    post = np.stack([y[..., c : c + n].mean(axis=-1) for c in cps], axis=-1)
    return (pre - post) / np.maximum(np.abs(pre), floor)


def recovery_time(
    curve: np.ndarray,
    change_points: Sequence[int],
    phase: int,
    frac: float = 0.2,
    tol: float = 0.1,
    window: int = 100,
) -> np.ndarray:
    """RT per change point (last axis), in steps, capped at ``phase``."""
    y, cps = _check(curve, change_points, phase)
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    pre = _pre(y, cps, phase, frac)
    out = np.empty(pre.shape)
    for i, c in enumerate(cps):
        seg = y[..., c : c + phase]
        csum = np.cumsum(seg, axis=-1)
        k = np.arange(1, phase + 1)
        shifted = np.concatenate([np.zeros((*seg.shape[:-1], 1)), csum[..., :-1]], axis=-1)
        lagged = np.where(k > window, shifted[..., np.clip(k - window, 0, phase - 1)], 0.0)
        trailing = (csum - lagged) / np.minimum(k, window)
        ok = trailing >= (pre[..., i] - tol * np.abs(pre[..., i]))[..., None]
        out[..., i] = np.where(ok.any(axis=-1), ok.argmax(axis=-1), phase)
    return out


def steady_nauc(curve: np.ndarray, phase: int, reference: float, frac: float = 0.5) -> np.ndarray:
    """Mean of the last ``frac`` of every complete phase, over phases, divided by ``reference``."""
    y = np.asarray(curve, dtype=float)
    if not np.isfinite(y).all():
        raise ValueError("curve contains NaN or infinite values")
    if not (np.isfinite(reference) and reference > 0):
        raise ValueError(f"reference must be a positive finite number, got {reference!r}")
    n_phases = y.shape[-1] // phase
    if n_phases < 1:
        raise ValueError(f"the curve ({y.shape[-1]} steps) is shorter than one phase ({phase})")
    n = max(1, round(frac * phase))
    tails = [y[..., (p + 1) * phase - n : (p + 1) * phase].mean(axis=-1) for p in range(n_phases)]
    return np.mean(tails, axis=0) / reference
