"""Source screening for shared subspaces: which sources to learn a shared low-dimensional subspace from.

Model (Wang, Mclaughlin & Su, ICML 2026; the linear setting of the abstract). T sources; source t has n_t samples
x ~ N(0, I_d) and y = x^T B* w_t + eps, eps ~ N(0, sigma^2), with B* (d x k) orthonormal and shared and w_t the
source's own head. The "good" collection: every source has the same noise, sample size and head norm.

1. Diversity. For a subset S of sources, D_S = (1/|S|) sum_{t in S} w_t w_t^T (k x k). How well S pins down B*
   depends on how well-conditioned D_S is, through lambda_k(D_S). Error metric: the sin-theta distance
   ||(I - B_hat B_hat^T) B*||_2 in [0, 1] (:func:`sin_theta_distance`).
2. Estimators (:class:`SharedSubspaceEstimator`):
   - method of moments (MoM): the top-k eigenvectors of M = (1/N) sum y^2 x x^T, since
     E[y^2 x x^T] = (|B* w_t|^2 + sigma^2) I + 2 B* w_t w_t^T B*^T; its error is of order
     sqrt(d / N_S) / lambda_k(D_S) = sqrt(d |S| / n) / lambda_k(sum_{t in S} w_t w_t^T);
   - alternating minimisation (AltMin, FedRep-style least squares): heads given B by per-source least squares,
     B given the heads by the normal equations sum_t G_t B w_t w_t^T = sum_t X_t^T y_t w_t^T, QR after each step;
     started from the MoM estimate. Its error is of order sqrt(dk / (n lambda_k(sum_{t in S} w_t w_t^T))).
   Both are vectorised over sources (one einsum for the per-source statistics, batched k x k solves).
3. Why screening. For imbalanced heads (a fraction f on one axis), lambda_k(sum_S w w^T) is fixed by the minority
   sources; adding majority sources grows N but not lambda_k, so MoM gets *worse* with them, while least squares
   neither gains nor loses much. A subset S with a well-conditioned D_S (an informative subpopulation) reaches the
   rate of all the data with a fraction of it: MoM on S beats MoM on all, AltMin on S matches AltMin on all.
4. Screening rules (:func:`screen_sources`; the exact algorithm is left open by the abstract, ours is a reading of
   the bound in 2): forward greedy D-optimal order of the sources by their heads (add the source maximising
   log det(sum_S w w^T + eps I)), then the prefix minimising sqrt(|S|) / lambda_k(sum_S w w^T).
   - genie: on the true heads w_t (an oracle for simulations);
   - greedy (data-driven): on heads w_hat_t fitted by per-source least squares inside a pilot subspace fitted on all
     the sources (default pilot: AltMin; "mom" or any basis may be given). The pilot reuses the data; to avoid
     it, screen on one half of each source and fit on the other (:func:`split_sources`).

Our readings (not fixed by the abstract): the greedy criterion and search in 4, the AltMin pilot, AltMin's
stopping rule (subspace change < tol), and the ``whiten`` option (centre and whiten a design that is not
N(0, I); off by default, so the estimators are the paper's, with a warning on a design far from isotropic).
k is assumed known. Inputs: a list of (X_t, y_t) pairs, a stacked pair (X (T, n, d), y (T, n)), or scikit-learn
style ``fit(X, y, groups=...)``; sources with different dimensions, k > d, a source with fewer samples than k and
fewer sources than k each raise one clear ``ValueError``.

Example::

    from icml26.stats.source_screening import (
        SharedSubspaceEstimator, make_shared_subspace_sources, screen_sources, sin_theta_distance)

    data = make_shared_subspace_sources(100, 100, 20, 2, head_fractions=(0.9, 0.1), random_state=0)
    sources = data.to_list()
    chosen = screen_sources(sources, n_components=2)            # greedy, AltMin pilot
    est = SharedSubspaceEstimator(2, method="mom").fit(chosen.select(sources))
    sin_theta_distance(data.basis, est.basis_)                   # 0.41 (21 sources); 0.73 with all 100

References
----------
- X. Wang, ... Mclaughlin, ... Su, "Source screening for shared subspaces", ICML 2026 (arXiv 2602.16125).
- N. Tripuraneni, C. Jin, M. Jordan, "Provable meta-learning of linear representations", ICML 2021.
- L. Collins, H. Hassani, A. Mokhtari, S. Shakkottai, "Exploiting shared representations for personalized
  federated learning" (FedRep), ICML 2021.
- C. Davis, W. Kahan, "The rotation of eigenvectors by a perturbation. III", SIAM J. Numer. Anal. 7, 1970.
"""

from icml26.stats.source_screening.data import (
    SharedSubspaceData,
    digits_features,
    head_counts,
    make_shared_subspace_sources,
)
from icml26.stats.source_screening.distance import orthonormal_basis, sin_theta_distance
from icml26.stats.source_screening.estimator import METHODS, SharedSubspaceEstimator
from icml26.stats.source_screening.estimators import (
    AltMinResult,
    Whitening,
    altmin_subspace,
    fit_heads,
    mom_matrix,
    mom_subspace,
    source_moments,
)
from icml26.stats.source_screening.screening import (
    ScreeningResult,
    diversity_matrix,
    greedy_order,
    screen_sources,
    screening_criterion,
    select_prefix,
)
from icml26.stats.source_screening.sources import SourceArrays, as_source_arrays, split_sources

__all__ = [
    "METHODS",
    "AltMinResult",
    "ScreeningResult",
    "SharedSubspaceData",
    "SharedSubspaceEstimator",
    "SourceArrays",
    "Whitening",
    "altmin_subspace",
    "as_source_arrays",
    "digits_features",
    "diversity_matrix",
    "fit_heads",
    "greedy_order",
    "head_counts",
    "make_shared_subspace_sources",
    "mom_matrix",
    "mom_subspace",
    "orthonormal_basis",
    "screen_sources",
    "screening_criterion",
    "select_prefix",
    "sin_theta_distance",
    "source_moments",
    "split_sources",
]
