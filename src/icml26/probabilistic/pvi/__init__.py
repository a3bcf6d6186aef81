"""Predictive variational inference (Lai, Linero & Yao, ICML 2026): posteriors whose predictive is optimal.

    from icml26.probabilistic.pvi import PredictiveVI, normal_location
    est = PredictiveVI(normal_location(), scores={"log": 1.0}).fit(y)
    est.heterogeneity_report()          # sd of q vs the exact Bayes posterior sd, per parameter
    est.score(y_test, rule="crps")      # held-out -CRPS per datum (higher is better)

See ``estimator`` for the method, ``scores`` for the scoring-rule estimators, ``model`` for model specifications
(likelihood or simulator), ``families`` for the variational families and ``bayes`` for the exact baselines.
"""

from icml26.probabilistic.pvi.bayes import ExactPosterior, exact_posterior
from icml26.probabilistic.pvi.estimator import ELBOVI, RULES, HeterogeneityReport, PredictiveVI, particle_scores
from icml26.probabilistic.pvi.families import DiagonalGaussian, Flow, FullRankGaussian, VariationalFamily
from icml26.probabilistic.pvi.model import ModelSpec, NormalInverseGammaPrior, linear_regression, normal_location
from icml26.probabilistic.pvi.scores import crps_ensemble, energy_score, gaussian_crps, mixture_log_score

__all__ = [
    "ELBOVI",
    "RULES",
    "DiagonalGaussian",
    "ExactPosterior",
    "Flow",
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
