"""Sources as one zero-padded array, validated once: every estimator reads (T, n_max, d) and per-source counts.

Padding rows are zeros in both X and y, so they add nothing to X^T X, X^T y or sum y^2 x x^T: the estimators are
sums over rows and need no mask. Unequal sample sizes therefore cost memory (T * n_max * d), never a Python loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["SourceArrays", "as_source_arrays", "split_sources"]


@dataclass(frozen=True, eq=False)
class SourceArrays:
    """T sources in one padded layout: ``X[t, :counts[t]]`` and ``y[t, :counts[t]]`` are source t's rows."""

    X: np.ndarray  # (T, n_max, d), zero-padded
    y: np.ndarray  # (T, n_max), zero-padded
    counts: np.ndarray  # (T,) rows per source

    @property
    def n_sources(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[2])

    @property
    def n_total(self) -> int:
        return int(self.counts.sum())

    def subset(self, indices: Any) -> SourceArrays:
        """The sources at ``indices`` (in that order), as a new padded layout."""
        idx = np.asarray(indices, dtype=int).reshape(-1)
        if idx.size == 0:
            raise ValueError("a subset of sources must contain at least one source")
        if idx.min() < -self.n_sources or idx.max() >= self.n_sources:
            raise ValueError(f"source indices must lie in [0, {self.n_sources}), got {idx.min()}..{idx.max()}")
        counts = self.counts[idx]
        n_max = int(counts.max())
        return SourceArrays(self.X[idx, :n_max], self.y[idx, :n_max], counts)

    def rows(self, start: np.ndarray, stop: np.ndarray) -> SourceArrays:
        """Rows ``start[t]:stop[t]`` of each source t (0 <= start < stop <= counts), shifted to the front."""
        start, stop = np.asarray(start, dtype=int), np.asarray(stop, dtype=int)
        counts = stop - start
        n_max = int(counts.max())
        offsets = start[:, None] + np.arange(n_max)[None, :]
        valid = np.arange(n_max)[None, :] < counts[:, None]
        take = np.where(valid, offsets, 0)
        X = np.take_along_axis(self.X, take[..., None], axis=1) * valid[..., None]
        y = np.take_along_axis(self.y, take, axis=1) * valid
        return SourceArrays(X, y, counts)

    def to_list(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """The sources as a list of ``(X_t, y_t)`` pairs (views, no padding)."""
        return [(self.X[t, :c], self.y[t, :c]) for t, c in enumerate(self.counts)]


def _check_finite(a: np.ndarray, what: str) -> None:
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what} contains non-finite values (NaN or inf)")


def _from_pairs(pairs: Sequence[Any]) -> SourceArrays:
    Xs, ys = [], []
    for t, pair in enumerate(pairs):
        try:
            X_t, y_t = pair
        except (TypeError, ValueError):
            raise ValueError(f"source {t} must be a pair (X_t, y_t), got {type(pair).__name__}") from None
        X_t = np.asarray(X_t, dtype=np.float64)
        y_t = np.asarray(y_t, dtype=np.float64)
        if X_t.ndim != 2:
            raise ValueError(f"source {t}: X_t must be 2-d (n_t, d), got shape {X_t.shape}")
        if y_t.ndim != 1:
            raise ValueError(f"source {t}: y_t must be 1-d (n_t,), got shape {y_t.shape}")
        if X_t.shape[0] != y_t.shape[0]:
            raise ValueError(f"source {t}: X_t has {X_t.shape[0]} rows but y_t has {y_t.shape[0]}")
        if X_t.shape[0] == 0:
            raise ValueError(f"source {t} is empty (no rows)")
        if Xs and X_t.shape[1] != Xs[0].shape[1]:
            raise ValueError(
                f"sources have different dimensions: source {t} has {X_t.shape[1]} features, source 0 has "
                f"{Xs[0].shape[1]}; every source must live in the same feature space"
            )
        _check_finite(X_t, f"source {t}: X_t")
        _check_finite(y_t, f"source {t}: y_t")
        Xs.append(X_t)
        ys.append(y_t)
    counts = np.array([len(y_t) for y_t in ys], dtype=int)
    n_max, d = int(counts.max()), Xs[0].shape[1]
    if np.all(counts == n_max):
        return SourceArrays(np.stack(Xs), np.stack(ys), counts)
    X = np.zeros((len(Xs), n_max, d))
    y = np.zeros((len(Xs), n_max))
    for t, (X_t, y_t) in enumerate(zip(Xs, ys, strict=True)):  # a copy per source, once, at the API boundary
        X[t, : len(y_t)] = X_t
        y[t, : len(y_t)] = y_t
    return SourceArrays(X, y, counts)


def _from_groups(X: Any, y: Any, groups: Any) -> SourceArrays:
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-d (n_samples, n_features), got shape {X.shape}")
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"y must be 1-d with one value per row of X ({X.shape[0]}), got shape {y.shape}")
    if X.shape[0] == 0:
        raise ValueError("X is empty (no rows)")
    _check_finite(X, "X")
    _check_finite(y, "y")
    if groups is None:
        return SourceArrays(X[None], y[None], np.array([X.shape[0]]))
    groups = np.asarray(groups)
    if groups.shape != y.shape:
        raise ValueError(f"groups must give one source label per row ({y.shape[0]}), got shape {groups.shape}")
    labels, inverse, counts = np.unique(groups, return_inverse=True, return_counts=True)
    order = np.argsort(inverse, kind="stable")
    # position of each row within its source: rank inside the sorted block
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    within = np.arange(len(order)) - np.repeat(starts, counts)
    Xp = np.zeros((len(labels), int(counts.max()), X.shape[1]))
    yp = np.zeros((len(labels), int(counts.max())))
    Xp[inverse[order], within] = X[order]
    yp[inverse[order], within] = y[order]
    return SourceArrays(Xp, yp, counts.astype(int))


def _is_3d(a: Any) -> bool:
    if isinstance(a, tuple):  # a (X_t, y_t) pair
        return False
    try:
        return np.ndim(a) == 3
    except ValueError:  # ragged nesting: not one array
        return False


def as_source_arrays(sources: Any = None, *, X: Any = None, y: Any = None, groups: Any = None) -> SourceArrays:
    """Validate and stack sources given as any of:

    - a list of ``(X_t, y_t)`` pairs (X_t of shape (n_t, d), y_t of shape (n_t,));
    - a pair ``(X, y)`` of stacked arrays of shapes (T, n, d) and (T, n) (equal sample sizes);
    - a :class:`SourceArrays` (returned as is);
    - keywords ``X`` (N, d), ``y`` (N,) and ``groups`` (N,) labelling each row's source (scikit-learn style;
      without ``groups`` all rows form one source).

    Raises one clear ``ValueError`` for sources with different dimensions, empty sources, mismatched lengths,
    non-finite values or a wrong number of dimensions.
    """
    if isinstance(sources, SourceArrays):
        return sources
    if sources is None:
        if X is None or y is None:
            raise ValueError("give the sources as a list of (X_t, y_t) pairs, or X and y (with groups)")
        return _from_groups(X, y, groups)
    if isinstance(sources, np.ndarray):
        raise ValueError(
            "sources must be a list of (X_t, y_t) pairs or a pair of stacked arrays (X (T, n, d), y (T, n)); "
            "for one design matrix use fit(X, y, groups=...)"
        )
    if len(sources) == 2 and _is_3d(sources[0]):  # stacked (X (T, n, d), y (T, n))
        X3, y2 = np.asarray(sources[0], dtype=np.float64), np.asarray(sources[1], dtype=np.float64)
        if y2.shape != X3.shape[:2]:
            raise ValueError(f"stacked y must have shape (T, n) = {X3.shape[:2]}, got {y2.shape}")
        return _from_pairs(list(zip(X3, y2, strict=True)))
    if len(sources) == 0:
        raise ValueError("no sources given (an empty list)")
    return _from_pairs(list(sources))


def split_sources(sources: Any, fraction: float = 0.5) -> tuple[SourceArrays, SourceArrays]:
    """Split every source's rows in two: the first ``ceil(fraction * n_t)`` rows, then the rest.

    Screen on the first part and fit on the second, so that the selection does not reuse the data the final
    estimate is fitted on (the pilot-leakage remedy). Every source keeps at least one row on each side.
    """
    src = as_source_arrays(sources)
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"fraction must lie strictly between 0 and 1, got {fraction!r}")
    if np.any(src.counts < 2):
        raise ValueError("every source needs at least 2 rows to be split")
    cut = np.clip(np.ceil(fraction * src.counts).astype(int), 1, src.counts - 1)
    return src.rows(np.zeros_like(cut), cut), src.rows(cut, src.counts)
