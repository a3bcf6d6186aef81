"""Mirror mean-field Langevin dynamics (MMFLD, ICML 2026): optimising probability measures on a convex domain.

    from icml26.probabilistic.mmfld import Box, GaussianKernel, InteractionEnergy, LinearPotential, MirrorMFLD
    obj = InteractionEnergy(LinearPotential([-1.5]), GaussianKernel(0.2))
    res = MirrorMFLD(obj, Box(0.0, 1.0), lam=0.05, step=0.02, n_particles=400, seed=0).run(4000)
    res.particles; res.history["objective"]; res.history["boundary_mass"]
    ref = grid_fixed_point(obj, 0.05, Box(0.0, 1.0))   # mu* on a grid, for comparison

The algorithm (abstract and the project's notes; equation numbers are ours):

1. Problem. Minimise L(mu) = F(mu) + lam Ent(mu) over probability measures mu on a convex set X in R^d, F convex in
   mu (an interaction energy int V dmu + 1/2 iint K dmu dmu with K positive definite, an MMD, a mean-field two-layer
   network). Its minimiser is the Gibbs fixed point mu* ~ exp(-(delta F / delta mu)(mu*) / lam) on X.
2. Mirror map. phi of Legendre type on X: y = grad phi(x) maps the interior onto R^d and x = grad phi*(y) back. The
   default is the self-concordant log-barrier (box: phi = -sum log(x - lo) + log(hi - x), closed-form inverse;
   simplex: phi = -sum log x_k - log(1 - sum x_k), inverse by a vectorised 1-D Newton solve).
3. MMFLD (continuous): dY_t = -grad_x (delta F / delta mu)(mu_t)(X_t) dt + sqrt(2 lam) Hess phi(X_t)^(1/2) dB_t,
   X_t = grad phi*(Y_t). Its stationary law is mu*; the paper proves linear convergence of L under a uniform
   mirror log-Sobolev inequality.
4. Discretisation (what runs): N particles, empirical measure mu_N, Euler-Maruyama in the dual,
   Y_i <- Y_i - eta g(X_i) + sqrt(2 lam eta) Hess phi(X_i)^(1/2) xi_i, X_i <- grad phi*(Y_i), with
   g = grad_x (delta F / delta mu)(mu_N); the paper proves uniform-in-time propagation of chaos for this scheme.
   Every particle stays in the open domain by construction.
5. Baselines on the same objective, step and noise: ``ProjectedMFLD`` (Euler step, then Euclidean projection),
   ``ReflectedMFLD`` (Euler step folded back into a box; exact in continuous time), ``ReparameterizedMFLD`` (plain
   MFLD in z with x = sigmoid / softmax(z), the entropy carried by the log-Jacobian) and ``MFLD`` (ignores X).

Our readings (the abstract leaves them open): log-barrier maps (the entropic maps ``EntropicBox`` /
``EntropicSimplex`` are options: not self-concordant, particles stick to the boundary under Euler-Maruyama);
Euler-Maruyama in the dual; a step is rejected as unstable (``StepSizeError``) when it moves particles more than half
the Dikin radius (mirror) or half the diameter (Euclidean) per step in root mean square; the reference mu* is a
damped fixed-point iteration on a grid (``grid_fixed_point``); the experiments (problems, N, eta) are ours
(``problems``), as the abstract reports none.

Bad inputs raise one clear error each: points outside the open domain or of the wrong shape (``DomainError``),
an unsupported domain or a mirror map on the wrong domain (``DomainError``), an unstable step (``StepSizeError``).

References: Mirror mean-field Langevin dynamics (arXiv 2505.02621, ICML 2026); Mei, Montanari & Nguyen (2018),
Chizat (2022), Nitanda, Wu & Suzuki (2022) for MFLD; Hsieh et al. (2018), Zhang et al. (2020), Ahn & Chewi (2021)
for mirror Langevin.
"""

from icml26.probabilistic.mmfld.domains import Box, Domain, DomainError, Simplex, check_points
from icml26.probabilistic.mmfld.dynamics import (
    MFLD,
    BoundaryHitError,
    MFLDResult,
    MirrorMFLD,
    ProjectedMFLD,
    ReflectedMFLD,
    ReparameterizedMFLD,
    StepSizeError,
)
from icml26.probabilistic.mmfld.mirrors import (
    BoxLogBarrier,
    EntropicBox,
    EntropicSimplex,
    MirrorMap,
    SimplexLogBarrier,
    default_mirror,
)
from icml26.probabilistic.mmfld.objectives import (
    FunctionPotential,
    GaussianKernel,
    InteractionEnergy,
    KnownOptimumDensity,
    LinearPotential,
    MeanFieldTwoLayerNet,
    MMDObjective,
    QuadraticPotential,
    TruncatedExponential,
)
from icml26.probabilistic.mmfld.reference import (
    BinnedObjective,
    GridSolution,
    grid_fixed_point,
    sample_reference,
    wasserstein1_to_reference,
)

__all__ = [
    "MFLD",
    "BinnedObjective",
    "BoundaryHitError",
    "Box",
    "BoxLogBarrier",
    "Domain",
    "DomainError",
    "EntropicBox",
    "EntropicSimplex",
    "FunctionPotential",
    "GaussianKernel",
    "GridSolution",
    "InteractionEnergy",
    "KnownOptimumDensity",
    "LinearPotential",
    "MFLDResult",
    "MMDObjective",
    "MeanFieldTwoLayerNet",
    "MirrorMFLD",
    "MirrorMap",
    "ProjectedMFLD",
    "QuadraticPotential",
    "ReflectedMFLD",
    "ReparameterizedMFLD",
    "Simplex",
    "SimplexLogBarrier",
    "StepSizeError",
    "TruncatedExponential",
    "check_points",
    "default_mirror",
    "grid_fixed_point",
    "sample_reference",
    "wasserstein1_to_reference",
]
