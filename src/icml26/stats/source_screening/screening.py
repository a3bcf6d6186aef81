"""Source screening: which subset S of the sources to learn the shared subspace from.

Diversity matrix D_S = (1/|S|) sum_{t in S} w_t w_t^T (k x k). The method of moments estimates B* with error of
order sqrt(d / (n |S|)) / lambda_k(D_S) = sqrt(d |S| / n) / lambda_k(sum_{t in S} w_t w_t^T); the greedy rule
(our reading) minimises the data-dependent part of that bound, sqrt(|S|) / lambda_k(sum_{t in S} w_t w_t^T):

1. order the sources by forward greedy D-optimal design: start from S = {}, and add the source t maximising
   log det(Sigma_S + w_t w_t^T + eps I), i.e. w_t^T (Sigma_S + eps I)^{-1} w_t (rank-one update; one vectorised
   quadratic form over all candidates per step), which fills the direction that lags behind first;
2. return the prefix of that order with the smallest criterion sqrt(|S|) / lambda_k(Sigma_S).

The genie rule runs the same two steps on the true heads; the empirical rule on heads w_hat_t fitted by per-source
least squares inside a pilot subspace estimated from all the sources.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "ScreeningResult",
    "diversity_matrix",
    "greedy_order",
    "screen_sources",
    "screening_criterion",
    "select_prefix",
]

_EPS = 1e-8  # relative ridge of the greedy's log det: breaks the tie of a rank-deficient Sigma_S


def _as_heads(heads: Any, name: str = "heads") -> np.ndarray:
    W = np.asarray(heads, dtype=np.float64)
    if W.ndim != 2 or W.shape[0] == 0 or W.shape[1] == 0:
        raise ValueError(f"{name} must be a (T, k) array with one head per source, got shape {W.shape}")
    if not np.all(np.isfinite(W)):
        raise ValueError(f"{name} contain non-finite values (NaN or inf)")
    return W


def diversity_matrix(heads: Any, subset: Any = None) -> np.ndarray:
    """D_S = (1/|S|) sum_{t in S} w_t w_t^T for the heads (T, k) of the sources in ``subset`` (default: all)."""
    W = _as_heads(heads)
    if subset is not None:
        W = W[np.asarray(subset, dtype=int).reshape(-1)]
        if W.shape[0] == 0:
            raise ValueError("the subset is empty")
    return W.T @ W / W.shape[0]


def screening_criterion(heads: Any, subset: Any = None) -> float:
    """sqrt(|S|) / lambda_k(sum_{t in S} w_t w_t^T): lower is better; inf when the heads span fewer than k
    directions (the subspace is not identifiable from S)."""
    D = diversity_matrix(heads, subset)
    size = len(_as_heads(heads)) if subset is None else np.asarray(subset).size
    lam = float(np.linalg.eigvalsh(D * size)[0])
    scale = float(np.trace(D * size))
    return float(np.sqrt(size) / lam) if lam > 1e-12 * max(scale, np.finfo(float).tiny) else float("inf")


def greedy_order(heads: Any) -> np.ndarray:
    """The forward greedy D-optimal order of all T sources (step 1 of the rule; ties go to the lower index)."""
    W = _as_heads(heads)
    T, k = W.shape
    eps = _EPS * float(np.max(np.sum(W * W, axis=1))) + np.finfo(float).tiny
    sigma = np.zeros((k, k))
    free = np.ones(T, dtype=bool)
    order = np.empty(T, dtype=int)
    for step in range(T):  # T steps, each one vectorised over all candidates
        A_inv_W = np.linalg.solve(sigma + eps * np.eye(k), W.T)  # (k, T)
        gain = np.where(free, np.einsum("tk,kt->t", W, A_inv_W), -np.inf)
        best = int(np.argmax(gain))
        order[step] = best
        free[best] = False
        sigma += np.outer(W[best], W[best])
    return order


def select_prefix(heads: Any, order: np.ndarray) -> tuple[int, np.ndarray]:
    """Step 2: the prefix size minimising sqrt(|S|) / lambda_k(Sigma_S) along ``order``, and the criterion of every
    prefix (inf where Sigma_S has rank < k)."""
    W = _as_heads(heads)[order]
    sums = np.cumsum(np.einsum("ta,tb->tab", W, W), axis=0)  # Sigma of every prefix, (T, k, k)
    lam = np.linalg.eigvalsh(sums)[:, 0]
    scale = np.trace(sums, axis1=1, axis2=2)
    sizes = np.arange(1, len(W) + 1)
    ok = lam > 1e-12 * np.maximum(scale, np.finfo(float).tiny)
    path = np.where(ok, np.sqrt(sizes) / np.where(ok, lam, 1.0), np.inf)
    if not np.any(ok):
        raise ValueError(
            f"the heads of all {len(W)} sources span fewer than k = {W.shape[1]} directions: no subset identifies "
            "the subspace (lambda_k of the diversity matrix is 0)"
        )
    return int(np.argmin(path)) + 1, path


@dataclass(frozen=True)
class ScreeningResult:
    """The chosen sources and what the choice rests on.

    ``indices``: the selected sources, in the order the greedy added them; ``diversity_matrix``: D_S of the heads the
    rule used (k x k); ``lambda_min``: lambda_k(D_S); ``criterion``: sqrt(|S|) / lambda_k(sum_S w w^T);
    ``order`` and ``path``: the greedy order of all sources and the criterion of each prefix; ``heads``: the
    heads the rule used (true heads for the genie, pilot estimates otherwise); ``data_fraction``: the share of all
    rows that the selected sources hold.
    """

    indices: np.ndarray
    diversity_matrix: np.ndarray
    lambda_min: float
    criterion: float
    order: np.ndarray = field(repr=False)
    path: np.ndarray = field(repr=False)
    heads: np.ndarray = field(repr=False)
    strategy: str = "greedy"
    data_fraction: float = 1.0
    pilot_basis: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_selected(self) -> int:
        return int(self.indices.size)

    def select(self, sources: Any) -> Any:
        """The selected sources out of ``sources`` (a list of pairs -> a list; a SourceArrays -> a SourceArrays)."""
        from icml26.stats.source_screening.sources import SourceArrays

        if isinstance(sources, SourceArrays):
            return sources.subset(self.indices)
        return [sources[int(t)] for t in self.indices]


STRATEGIES = ("greedy", "genie")
PILOTS = ("altmin", "mom")


def _pilot_basis(src: Any, k: int, pilot: Any, whiten: bool) -> tuple[np.ndarray, Any]:
    """(d x k pilot basis, the SourceArrays the heads are fitted on: centred when whitening)."""
    from icml26.stats.source_screening.estimator import SharedSubspaceEstimator
    from icml26.stats.source_screening.estimators import Whitening

    centred = Whitening.fit(src).centre(src) if whiten else src
    if isinstance(pilot, SharedSubspaceEstimator):
        if not hasattr(pilot, "basis_"):
            raise ValueError("the pilot estimator is not fitted; fit it first or pass pilot='altmin' or 'mom'")
        B = pilot.basis_
    elif isinstance(pilot, str):
        if pilot not in PILOTS:
            raise ValueError(f"pilot must be one of {PILOTS}, a (d, k) basis or a fitted SharedSubspaceEstimator")
        B = SharedSubspaceEstimator(k, method=pilot, whiten=whiten).fit(src).basis_
    else:
        from icml26.stats.source_screening.distance import orthonormal_basis

        B = np.asarray(pilot, dtype=np.float64)
        if B.ndim != 2:
            raise ValueError(f"pilot must be a (d, k) basis, got shape {B.shape}")
        B = orthonormal_basis(B, name="pilot")
    if B.shape != (src.n_features, k):
        raise ValueError(f"the pilot basis must have shape (d, k) = ({src.n_features}, {k}), got {B.shape}")
    return B, centred


def screen_sources(
    sources: Any,
    n_components: int,
    strategy: str = "greedy",
    *,
    heads: Any = None,
    pilot: Any = "altmin",
    whiten: bool = False,
) -> ScreeningResult:
    """Choose an informative subset of sources to estimate the shared k-dimensional subspace from.

    ``strategy="greedy"`` (the data-driven rule, our reading): fit a pilot subspace on all the sources (``pilot``:
    "altmin", the default, "mom", a (d, k) basis, or a fitted :class:`SharedSubspaceEstimator`), fit each source's
    head by least squares in it, then run the greedy rule of this module on those heads. The pilot reuses the data
    the subset will be fitted on; to avoid that, screen on one half of each source and fit on the other
    (:func:`split_sources`). ``strategy="genie"``: the same rule on the true heads ``heads`` (T, k) (an oracle, for
    simulations). Returns a :class:`ScreeningResult` (``.indices``, ``.diversity_matrix``, ``.select(sources)``).
    """
    from icml26.stats.source_screening.estimators import check_identifiable, fit_heads, source_moments
    from icml26.stats.source_screening.sources import as_source_arrays

    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    src = as_source_arrays(sources)
    k = n_components
    check_identifiable(src, k)
    pilot_basis = None
    if strategy == "genie":
        if heads is None:
            raise ValueError("the genie rule needs the true heads: pass heads=<(T, k) array>")
        W = _as_heads(heads)
        if W.shape != (src.n_sources, k):
            raise ValueError(f"heads must have shape (T, k) = ({src.n_sources}, {k}), got {W.shape}")
    else:
        if heads is not None:
            raise ValueError(
                "heads are the genie's oracle input; the greedy rule estimates them (pass strategy='genie')"
            )
        pilot_basis, centred = _pilot_basis(src, k, pilot, whiten)
        W = fit_heads(*source_moments(centred), pilot_basis)
    order = greedy_order(W)
    size, path = select_prefix(W, order)
    indices = order[:size].copy()
    D = diversity_matrix(W, indices)
    return ScreeningResult(
        indices=indices,
        diversity_matrix=D,
        lambda_min=float(np.linalg.eigvalsh(D)[0]),
        criterion=float(path[size - 1]),
        order=order,
        path=path,
        heads=W,
        strategy=strategy,
        data_fraction=float(src.counts[indices].sum() / src.n_total),
        pilot_basis=pilot_basis,
    )
