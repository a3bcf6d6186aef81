"""Predictive variational inference (Lai, Linero & Yao, ICML 2026): posteriors whose predictive is optimal.

    from icml26.probabilistic.pvi import PredictiveVI, normal_location
    est = PredictiveVI(normal_location(), scores={"log": 1.0}).fit(y)
    est.heterogeneity_report()          # sd of q vs the exact Bayes posterior sd, per parameter
    est.score(y_test, rule="crps")      # held-out -CRPS per datum (higher is better)

The method, step by step (``estimator`` has the details):

1. A model p(y | theta, x) (or only a reparameterised simulator y = g(theta, x, eps)), a prior pi(theta) and a
   variational family q_phi(theta): diagonal or full-rank Gaussian, or a neural spline flow.
2. The predictive of datum i is the mixture p_phi(. | x_i) = E_{theta ~ q_phi} p(. | theta, x_i).
3. Maximise J(phi) = (1/n) sum_i sum_r w_r S_r(p_phi(. | x_i), y_i) - (lambda/n) KL(q_phi || pi) over phi, with
   proper scoring rules S_r: the log score logsumexp_k log p(y_i | theta_k) - log K from K reparameterised draws,
   the CRPS / energy score from simulated observations (likelihood-free), or the quadratic score.
   With the log outside the mixture this would be the ELBO (``ELBOVI``), whose optimum is the Bayes posterior.
4. Optimise with Adam, fresh draws at every step, cosine-decayed step size, and a convergence check
   (``ConvergenceWarning``; ``loss_curve_``).
5. Diagnose: the per-parameter sd of q over the exact Bayes posterior sd (``heterogeneity_report``); a ratio >> 1
   flags a parameter that varies across the population (q acts as an implicit hierarchical expansion).

Our readings, where the paper leaves the estimator open: lambda = 1; several rules are put on one scale by the
spread of their per-datum values at the initial q; q is fitted over standardised coordinates (``model.Frame``: the
built-in models centre and scale y and X and start at the least-squares fit; other models start at their MAP), so
a fit does not depend on where the data sit, and the diagonal family is diagonal in those coordinates.

See ``scores`` for the scoring-rule estimators, ``model`` for model specifications (likelihood or simulator),
``families`` for the variational families and ``bayes`` for the exact baselines.

References:
    Y. Lai, A. Linero, Y. Yao, "Predictive variational inference: Learn the predictively optimal posterior
    distribution", arXiv:2410.14843 (ICML 2026).
    T. Gneiting, A. Raftery, "Strictly proper scoring rules, prediction, and estimation", JASA 2007.
"""

from icml26.probabilistic.pvi.bayes import ExactPosterior, exact_posterior
from icml26.probabilistic.pvi.estimator import (
    ELBOVI,
    RULES,
    ConvergenceWarning,
    HeterogeneityReport,
    PredictiveVI,
    particle_scores,
)
from icml26.probabilistic.pvi.families import Affine, DiagonalGaussian, Flow, FullRankGaussian, VariationalFamily
from icml26.probabilistic.pvi.model import (
    Conjugate,
    Frame,
    ModelSpec,
    NormalInverseGammaPrior,
    linear_regression,
    normal_location,
)
from icml26.probabilistic.pvi.scores import crps_ensemble, energy_score, gaussian_crps, mixture_log_score

__all__ = [
    "ELBOVI",
    "RULES",
    "Affine",
    "Conjugate",
    "ConvergenceWarning",
    "DiagonalGaussian",
    "ExactPosterior",
    "Flow",
    "Frame",
    "FullRankGaussian",
    "HeterogeneityReport",
    "ModelSpec",
    "NormalInverseGammaPrior",
    "PredictiveVI",
    "VariationalFamily",
    "crps_ensemble",
    "energy_score",
    "exact_posterior",
    "gaussian_crps",
    "linear_regression",
    "mixture_log_score",
    "normal_location",
    "particle_scores",
]
