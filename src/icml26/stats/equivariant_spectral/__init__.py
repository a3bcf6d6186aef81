"""Equivariant spectral representation learning of conditional expectation operators (Ordonez-Apraez et al., ICML 2026).

    from icml26.stats.equivariant_spectral import NCPRegressor, Representation, dihedral
    G = dihedral(3)
    rep_x = Representation.standard(G)                      # D3 acting on R^2
    rep_y = Representation(G, np.linalg.det(G.elements))    # y flips sign under reflections
    est = NCPRegressor(rep_x, rep_y).fit(X, y)             # eNCP; NCPRegressor() without reps is plain NCP
    est.predict(X_new)                                      # E[y | x]
    est.predict_cdf(X_new), est.grid_                       # F(t | x) on a 100-point grid, monotone
    est.predict_interval(X_new, alpha=0.1)                  # shortest 90% interval
    est.predict_quantiles(X_new, [0.05, 0.5, 0.95])

The method, step by step:

1. Data (x, y) ~ p, and a finite group G acting on x and y by orthogonal representations rho_X, rho_Y with
   p(rho_X(g) x, rho_Y(g) y) = p(x, y).
2. NCP (Kostic et al. 2024): learn centred embeddings u: X -> R^r, v: Y -> R^r and S with ||S||_2 <= 1 (started at
   I) so that p(x, y) / (p(x) p(y)) ~ 1 + u(x)^T S v(y): a rank-r truncated SVD of the conditional expectation
   operator (E h)(x) = E[h(Y) | x].
3. Loss (factorised, no n x n Gram matrix): L = -2 E_{p(x,y)}[k] + E_{p(x)p(y)}[k^2] with k = u^T S v, the second
   term over the batch's off-diagonal pairs, plus 0.1 (||C_u - I||^2 + ||C_v - I||^2) + 0.01 * 2 (||E u||^2 +
   ||E v||^2); running means (EMA, momentum 0.995) centre the embeddings at evaluation.
4. Inference from one model: E[z(Y) | x] = E z + u(x)^T S Cov(v(Y), z(Y)). z = y gives the regression; z = 1{y <= t}
   on a 100-point quantile grid of the training targets gives the conditional CDF, clipped to [0, 1] and made
   monotone by a running maximum; intervals are the shortest grid intervals of mass >= 1 - alpha.
5. eNCP: the latent space carries copies of the regular representation; u and v are equivariant MLPs (Reynolds-
   projected weights, invariant biases, pointwise activations on permutation representations); S is equivariant,
   hence block-diagonal S_k (x) I_{d_k} over isotypic components (Schur); means live on the invariant subspace,
   covariances are group-averaged, and the decoder is estimated on the orbit {rho_Y(g) y_i} (group-averaged).
6. Isotypic projectors come from the real central idempotents of the group algebra, found as eigenspaces of a
   generic central element in the regular representation (``groups``): no character table and no escnn needed.

Our readings, where the abstract leaves the method open: "disentangled along independent symmetry quotient groups"
is read as isotypic-component disentanglement (the Schur block structure of S); the latent representation is a
multiple of the regular representation; S is clamped to spectral norm <= 1 by rescaling (not a spectral-norm
parametrisation); data are standardised by the invariant part of the mean and one scalar scale per variable (so the
frame commutes with the group); the decoder uses Cov(v, z) without whitening (exact when C_v = I).

Baselines: ``EMLPRegressor`` (a least-squares MLP; equivariant with ``rep_x``/``rep_y``). CQR / eCQR are not
implemented here. ``EquivariantSpectral`` is an alias of :class:`NCPRegressor` (the registry's API name).

References:
    D. Ordonez-Apraez, V. Kostic, D. Frohlich, V. Brandt, K. Lounici, M. Pontil, "Equivariant representation
    learning for symmetry-aware inference with guarantees", ICML 2026.
    V. Kostic, K. Lounici, G. Pacreau, P. Novelli, G. Turri, M. Pontil, "Neural conditional probability for
    uncertainty quantification", NeurIPS 2024.
    Official code: github.com/Danfoa/symm_rep_learn (read for the protocol; nothing copied).
"""

from icml26.stats.equivariant_spectral.data import SymmetricGMM, benchmark_problem
from icml26.stats.equivariant_spectral.estimators import EMLPRegressor, NCPConditionalCDF, NCPRegressor
from icml26.stats.equivariant_spectral.groups import (
    FiniteGroup,
    GroupError,
    Representation,
    cyclic,
    dihedral,
    klein4,
)
from icml26.stats.equivariant_spectral.layers import EquivariantLinear, equivariant_mlp, mlp, reynolds
from icml26.stats.equivariant_spectral.ncp import NCP, EquivariantNCP

EquivariantSpectral = NCPRegressor

__all__ = [
    "NCP",
    "EMLPRegressor",
    "EquivariantLinear",
    "EquivariantNCP",
    "EquivariantSpectral",
    "FiniteGroup",
    "GroupError",
    "NCPConditionalCDF",
    "NCPRegressor",
    "Representation",
    "SymmetricGMM",
    "benchmark_problem",
    "cyclic",
    "dihedral",
    "equivariant_mlp",
    "klein4",
    "mlp",
    "reynolds",
]
