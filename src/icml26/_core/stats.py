"""Paired statistics for claims: effects, a paired bootstrap interval, and an exact sign test.

Every comparison in icml26 is paired: the method and its baseline ran on the same data in the same cell, so
the unit of analysis is the per-cell difference ``d_i``. We report

- the mean effect ``mean(d)``;
- a 95% interval for it: the envelope of the percentile bootstrap, resampling cells (Efron & Tibshirani,
  1993, ch. 13; generator seeded from the comparison's identity, so reruns give the same interval), and the
  Student-t interval. At small n the percentile bootstrap alone is far too narrow (it cannot reach beyond the
  range of the data: with 3 pairs it is about [min, max], and three positive pairs would "prove" any claim);
  the t interval covers that case, and at large n the two agree;
- the exact two-sided sign test on the signs of ``d`` (ties dropped; Dixon & Mood, 1946).

With a single pair (an exact, deterministic claim) the interval degenerates to the point, which is the truth.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["Comparison", "bootstrap_mean_ci", "compare", "mean_ci", "paired_effects", "sign_test", "t_mean_ci"]


def paired_effects(method: ArrayLike, baseline: ArrayLike, direction: str, relative: bool = False) -> np.ndarray:
    """Per-pair effects oriented so that positive means "the method is better".

    ``relative=True`` divides each difference by ``|baseline|`` (a pair with a zero baseline is an error:
    the relative effect is undefined, and silently dropping it would bias the mean).
    """
    m = np.asarray(method, dtype=float)
    b = np.asarray(baseline, dtype=float)
    if m.shape != b.shape or m.ndim != 1:
        raise ValueError(f"method and baseline must be 1-d and paired, got shapes {m.shape} and {b.shape}")
    sign = {"higher": 1.0, "lower": -1.0}[direction]
    d = sign * (m - b)
    if relative:
        if np.any(b == 0):
            raise ValueError("relative effect is undefined for a zero baseline value")
        d = d / np.abs(b)
    return np.asarray(d, dtype=float)


def bootstrap_mean_ci(d: ArrayLike, level: float = 0.95, n_boot: int = 10_000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``d`` (vectorised: one (n_boot, n) index draw)."""
    x = np.asarray(d, dtype=float)
    if x.size == 0:
        return (math.nan, math.nan)
    if x.size == 1 or np.all(x == x[0]):
        return (float(x[0]), float(x[0]))
    rng = np.random.default_rng(seed)
    # Chunk the draws so memory stays bounded for large n (n_boot x n int64 indices).
    chunk = max(1, min(n_boot, 4_000_000 // x.size))
    means = np.concatenate(
        [
            x[rng.integers(0, x.size, size=(min(chunk, n_boot - i), x.size))].mean(axis=1)
            for i in range(0, n_boot, chunk)
        ]
    )
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return (float(lo), float(hi))


def t_mean_ci(d: ArrayLike, level: float = 0.95) -> tuple[float, float]:
    """Student-t interval of the mean of ``d`` (degenerate at the point for n = 1 or zero spread)."""
    from scipy.stats import t as student_t

    x = np.asarray(d, dtype=float)
    if x.size == 0:
        return (math.nan, math.nan)
    mean = float(x.mean())
    if x.size == 1 or np.all(x == x[0]):
        return (mean, mean)
    half = float(student_t.ppf(0.5 + level / 2.0, df=x.size - 1)) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return (mean - half, mean + half)


def mean_ci(d: ArrayLike, level: float = 0.95, n_boot: int = 10_000, seed: int = 0) -> tuple[float, float]:
    """The envelope of the percentile-bootstrap and Student-t intervals of the mean (see the module docstring)."""
    b_lo, b_hi = bootstrap_mean_ci(d, level, n_boot, seed)
    t_lo, t_hi = t_mean_ci(d, level)
    return (min(b_lo, t_lo), max(b_hi, t_hi))


def sign_test(d: ArrayLike) -> tuple[int, int, int, float]:
    """Exact two-sided sign test of ``median(d) = 0``: returns (wins, losses, ties, p-value)."""
    x = np.asarray(d, dtype=float)
    wins, losses = int(np.sum(x > 0)), int(np.sum(x < 0))
    ties = int(x.size - wins - losses)
    n = wins + losses
    if n == 0:
        return wins, losses, ties, 1.0
    k = min(wins, losses)
    # integer true division: exact and correctly rounded for any n (2.0**n overflows a float beyond n = 1023 pairs)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / (1 << n)
    return wins, losses, ties, float(min(1.0, 2.0 * tail))


@dataclass(frozen=True)
class Comparison:
    """The paired comparison of a claim's method against one baseline (or a reference value)."""

    baseline: str
    metric: str
    n: int
    effect: float
    ci_low: float
    ci_high: float
    ci_method: str
    wins: int
    losses: int
    ties: int
    sign_p: float
    method_mean: float
    baseline_mean: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def compare(
    method: ArrayLike,
    baseline: ArrayLike,
    *,
    baseline_name: str,
    metric: str,
    direction: str,
    relative: bool = False,
    seed: int = 0,
    n_boot: int = 10_000,
) -> Comparison:
    """Paired comparison of two equal-length samples: effect, bootstrap CI, sign test, and the two means."""
    m = np.asarray(method, dtype=float)
    b = np.asarray(baseline, dtype=float)
    d = paired_effects(m, b, direction, relative)
    lo, hi = mean_ci(d, n_boot=n_boot, seed=seed)
    wins, losses, ties, p = sign_test(d)
    nan = math.nan
    return Comparison(
        baseline=baseline_name,
        metric=metric,
        n=int(d.size),
        effect=float(d.mean()) if d.size else nan,
        ci_low=lo,
        ci_high=hi,
        ci_method=f"95%, envelope of paired percentile bootstrap (B={n_boot}) and Student-t",
        wins=wins,
        losses=losses,
        ties=ties,
        sign_p=p,
        method_mean=float(m.mean()) if m.size else nan,
        baseline_mean=float(b.mean()) if b.size else nan,
    )
