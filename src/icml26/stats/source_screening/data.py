"""Data: the paper's synthetic model with imbalanced heads, and a semi-synthetic design from real images.

Synthetic (the paper file's protocol): x ~ N(0, I_d), B* a uniformly random orthonormal d x k matrix, unit-norm heads
along the k axes of the head space, a fraction f_j of the sources on axis j, y = x^T B* w_t + sigma eps.

Semi-synthetic (no real multi-source data set ships offline): x is drawn from a pool of real feature vectors,
scikit-learn's 8x8 digits reduced to their top-d principal components and whitened (so the pooled design is
centred and isotropic, but neither Gaussian nor independent across coordinates); y is generated from a planted
subspace exactly as above. Each source draws its n rows from the 1797 images without replacement.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from icml26.stats.source_screening.sources import SourceArrays

__all__ = ["SharedSubspaceData", "digits_features", "head_counts", "make_shared_subspace_sources"]


@dataclass(frozen=True, eq=False)
class SharedSubspaceData:
    """A simulated collection: ``sources`` (padded arrays; ``.to_list()`` for (X_t, y_t) pairs), the true ``basis``
    B* (d, k), the true ``heads`` w_t (T, k), each head's axis ``labels`` (T,) and the noise level."""

    sources: SourceArrays
    basis: np.ndarray
    heads: np.ndarray
    labels: np.ndarray
    noise: float

    def to_list(self) -> list[tuple[np.ndarray, np.ndarray]]:
        return self.sources.to_list()


def head_counts(n_sources: int, fractions: Any) -> np.ndarray:
    """How many of ``n_sources`` heads lie on each axis: largest-remainder rounding of ``fractions * T`` (a tie
    goes to the lower axis)."""
    f = np.asarray(fractions, dtype=np.float64)
    if f.ndim != 1 or f.size == 0 or np.any(f < 0) or not np.isclose(f.sum(), 1.0):
        raise ValueError(f"head_fractions must be k non-negative numbers summing to 1, got {fractions!r}")
    raw = f * n_sources
    counts = np.floor(raw).astype(int)
    extra = n_sources - counts.sum()
    counts[np.argsort(-(raw - counts), kind="stable")[:extra]] += 1
    return counts


@lru_cache(maxsize=4)
def _digits_pcs(n_features: int) -> np.ndarray:
    from sklearn.datasets import load_digits

    Z = load_digits().data.astype(np.float64)
    Z = Z - Z.mean(axis=0)
    U, _, _ = np.linalg.svd(Z, full_matrices=False)
    P = U[:, :n_features] * np.sqrt(len(Z))  # unit variance, uncorrelated: whitened top-d principal components
    P.setflags(write=False)
    return P


def digits_features(n_features: int = 20) -> np.ndarray:
    """The whitened top-``n_features`` principal components of scikit-learn's digits (1797, n_features)."""
    if not 1 <= int(n_features) <= 60:
        raise ValueError(f"n_features must lie in [1, 60] (the digits have 61 non-constant pixels), got {n_features}")
    return _digits_pcs(int(n_features))


def make_shared_subspace_sources(
    n_sources: int = 100,
    n_samples: int = 100,
    n_features: int = 20,
    n_components: int = 2,
    head_fractions: Any = None,
    noise: float = 0.5,
    *,
    features: Any = None,
    random_state: Any = None,
) -> SharedSubspaceData:
    """T sources sharing a k-dimensional subspace of R^d, with unit heads on the k axes in ``head_fractions``
    (default: balanced; ``(0.9, 0.1)`` puts 90% of the heads on axis 0). ``features`` (P, d) replaces the Gaussian
    design by rows drawn from that pool (semi-synthetic), each source without replacement."""
    T, n, d, k = int(n_sources), int(n_samples), int(n_features), int(n_components)
    if min(T, n, d, k) < 1:
        raise ValueError("n_sources, n_samples, n_features and n_components must be positive")
    if k > d:
        raise ValueError(f"n_components={k} is larger than n_features={d}")
    if not (np.isfinite(noise) and noise >= 0):
        raise ValueError(f"noise must be a finite number >= 0, got {noise!r}")
    fractions = np.full(k, 1.0 / k) if head_fractions is None else head_fractions
    counts = head_counts(T, fractions)
    if counts.size != k:
        raise ValueError(f"head_fractions must have n_components={k} entries, got {counts.size}")
    labels = np.repeat(np.arange(k), counts)
    heads = np.eye(k)[labels]
    rng = np.random.default_rng(random_state)
    basis = np.linalg.qr(rng.standard_normal((d, k)))[0]
    if features is None:
        X = rng.standard_normal((T, n, d))
    else:
        pool = np.asarray(features, dtype=np.float64)
        if pool.ndim != 2 or pool.shape[1] != d:
            raise ValueError(f"features must be a (P, n_features={d}) pool, got shape {pool.shape}")
        if n > pool.shape[0]:
            raise ValueError(f"n_samples={n} exceeds the {pool.shape[0]} rows of the feature pool")
        rows = np.argsort(rng.random((T, pool.shape[0])), axis=1)[:, :n]  # n distinct rows per source
        X = pool[rows]
    y = np.einsum("tnd,dk,tk->tn", X, basis, heads, optimize=True) + noise * rng.standard_normal((T, n))
    return SharedSubspaceData(SourceArrays(X, y, np.full(T, n)), basis, heads, labels, float(noise))
