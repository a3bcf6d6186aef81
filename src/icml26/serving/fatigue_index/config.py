"""The Fatigue Index's constants: the paper's defaults, and a one-time calibration that returns a frozen copy."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from icml26.serving.fatigue_index.monitor import FatigueTrace

__all__ = ["FatigueConfig"]

AttentionReduce = Literal["mean", "mass"]


@dataclass(frozen=True)
class FatigueConfig:
    """Constants of the Fatigue Index (defaults: the paper's, as stated in the notes on the official code).

    - ``weights``: (w_A, w_E, w_D) = (0.40, 0.35, 0.25), non-negative and summing to 1 (boundedness);
    - ``entropy_band``: [H_low, H_high] = [3.8, 5.0] nats, the healthy entropy band (calibrated on OPT-2.7B);
    - ``entropy_beta``: beta = 5 nats, the scale of phi_E above the band (code default);
    - ``drift_kappa``: kappa = 20, the drift at which phi_D saturates (code default; the code also uses 150);
    - ``prompt_slice_k``: K = 64 first prompt positions that A_t attends to;
    - ``probe_every``: k = 2, one probe every k generated tokens;
    - ``smooth_window``: 5 probes of trailing moving average;
    - ``hysteresis``: (on, off) = (0.50, 0.40): the alert turns on at smoothed FI >= on, off at <= off;
    - ``attention_reduce``: "mean" (the paper: the mean weight over the K positions; uniform attention over L keys
      gives 1/L) or "mass" (ours, documented variant: the summed weight over the K positions).
    """

    weights: tuple[float, float, float] = (0.40, 0.35, 0.25)
    entropy_band: tuple[float, float] = (3.8, 5.0)
    entropy_beta: float = 5.0
    drift_kappa: float = 20.0
    prompt_slice_k: int = 64
    probe_every: int = 2
    smooth_window: int = 5
    hysteresis: tuple[float, float] = (0.50, 0.40)
    attention_reduce: AttentionReduce = "mean"

    def __post_init__(self) -> None:
        w = tuple(float(v) for v in self.weights)
        if len(w) != 3 or any(not math.isfinite(v) or v < 0 for v in w) or abs(sum(w) - 1.0) > 1e-9:
            raise ValueError(f"weights must be three non-negative numbers summing to 1, got {self.weights!r}")
        low, high = (float(v) for v in self.entropy_band)
        if not (math.isfinite(low) and math.isfinite(high) and 0 < low < high):
            raise ValueError(f"entropy_band must be (low, high) with 0 < low < high, got {self.entropy_band!r}")
        for name in ("entropy_beta", "drift_kappa"):
            v = float(getattr(self, name))
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a positive number, got {v!r}")
        for name in ("prompt_slice_k", "probe_every", "smooth_window"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        on, off = (float(v) for v in self.hysteresis)
        if not (0 <= off < on <= 1):
            raise ValueError(f"hysteresis must be (on, off) with 0 <= off < on <= 1, got {self.hysteresis!r}")
        if self.attention_reduce not in ("mean", "mass"):
            raise ValueError(f"attention_reduce must be 'mean' or 'mass', got {self.attention_reduce!r}")
        object.__setattr__(self, "weights", w)
        object.__setattr__(self, "entropy_band", (low, high))
        object.__setattr__(self, "hysteresis", (on, off))

    def replace(self, **changes: Any) -> FatigueConfig:
        return dataclasses.replace(self, **changes)

    def calibrate(
        self,
        traces: Sequence[FatigueTrace],
        healthy: Sequence[bool] | None = None,
        prefix_fraction: float = 0.25,
    ) -> FatigueConfig:
        """A new config whose band, beta and kappa are fitted once on ``traces`` (a calibration split), then frozen.

        Our reading of the notes' protocol: band = [q10, q90] of the entropies of healthy prefixes (the first
        ``prefix_fraction`` of the probes of every trace marked healthy; all traces when ``healthy`` is None),
        kappa = q95 of every drift, beta = q99 of every entropy - H_high (at least 1e-3). Weights, K, the
        smoothing and the hysteresis are kept. Never call this on the traces you evaluate on.
        """
        import numpy as np

        if not traces:
            raise ValueError("calibrate needs at least one trace (the calibration split is empty)")
        if not 0 < prefix_fraction <= 1:
            raise ValueError(f"prefix_fraction must be in (0, 1], got {prefix_fraction!r}")
        if healthy is None:
            healthy = [True] * len(traces)
        if len(healthy) != len(traces):
            raise ValueError(f"{len(healthy)} health labels for {len(traces)} traces")
        keep = [t for t, ok in zip(traces, healthy, strict=True) if ok] or list(traces)  # no healthy trace: all
        prefix = np.concatenate([t.entropy[: max(1, math.ceil(prefix_fraction * len(t.entropy)))] for t in keep])
        entropy = np.concatenate([t.entropy for t in traces])
        drift = np.concatenate([t.drift for t in traces])
        if prefix.size < 2 or drift.size < 2:
            raise ValueError("calibrate needs at least two probes")
        low, high = np.quantile(prefix, [0.10, 0.90])
        if not high > low:  # a degenerate split (every prefix entropy equal): widen minimally, never invert
            high = low + 1e-3
        low = max(float(low), 1e-3)
        kappa = max(float(np.quantile(drift, 0.95)), 1e-6)
        beta = max(float(np.quantile(entropy, 0.99)) - float(high), 1e-3)
        return self.replace(entropy_band=(low, max(float(high), low + 1e-3)), entropy_beta=beta, drift_kappa=kappa)
