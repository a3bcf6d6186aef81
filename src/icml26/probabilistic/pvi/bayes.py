"""Exact Bayes for the built-in conjugate models: the baseline PVI is compared with (same model, same prior).

- ``normal_location``: theta | y ~ N(m_n, v_n), v_n = 1 / (1/s0^2 + n/sigma^2), m_n = v_n (m0/s0^2 + sum y / sigma^2).
- ``linear_regression`` (Normal-Inverse-Gamma): V_n = (V0^-1 + X'X)^-1, m_n = V_n (V0^-1 m0 + X'y),
  a_n = a0 + n/2, b_n = b0 + (y'y + m0' V0^-1 m0 - m_n' V_n^-1 m_n)/2; the posterior predictive is Student-t with
  2 a_n degrees of freedom, location x'm_n and squared scale (b_n/a_n)(1 + x' V_n x).

Both return an ``ExactPosterior`` with the same ``sample_posterior`` / ``sd`` surface as the variational fits, so
every method is scored by the same particle estimators. Reference: Murphy (2007), "Conjugate Bayesian analysis of
the Gaussian distribution".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy import stats
from torch import Tensor

from icml26.probabilistic.pvi.model import ModelSpec, add_intercept


@dataclass(frozen=True)
class ExactPosterior:
    """A conjugate posterior over theta (same parameterisation as the ModelSpec's)."""

    model: ModelSpec
    kind: str
    params: dict[str, np.ndarray]

    def sample_posterior(self, n: int, seed: int = 0) -> Tensor:
        """n exact draws of theta, [n, d] (float64)."""
        rng = np.random.default_rng(seed)
        p = self.params
        if self.kind == "normal_location":
            draws = rng.normal(p["mean"], p["sd"], size=(n, 1))
        else:
            sigma2 = p["b"] / rng.gamma(p["a"], size=n)
            z = rng.multivariate_normal(np.zeros(len(p["mean"])), p["V"], size=n, method="cholesky")
            beta = p["mean"] + z * np.sqrt(sigma2)[:, None]  # N(m, s^2 V)
            draws = np.column_stack([beta, 0.5 * np.log(sigma2)])
        return torch.as_tensor(draws, dtype=torch.float64)

    def sd(self) -> np.ndarray:
        """Posterior standard deviation of each parameter (beta: multivariate t; log sigma: of 0.5 log InvGamma)."""
        p = self.params
        if self.kind == "normal_location":
            return np.array([p["sd"]])
        beta_sd = np.sqrt(np.diag(p["V"]) * p["b"] / (p["a"] - 1)) if p["a"] > 1 else np.full(len(p["mean"]), np.inf)
        from scipy.special import polygamma

        log_sigma_sd = 0.5 * np.sqrt(float(polygamma(1, p["a"])))  # Var log(1/Gamma(a)) = trigamma(a)
        return np.append(beta_sd, log_sigma_sd)

    def predictive_logpdf(self, y: np.ndarray, X: np.ndarray | None = None) -> np.ndarray:
        """Exact log posterior-predictive density of each y_i (Gaussian or Student-t)."""
        p = self.params
        if self.kind == "normal_location":
            return stats.norm.logpdf(y, p["mean"], np.sqrt(p["sd"] ** 2 + p["sigma"] ** 2))
        D = _design(self.model, X, len(y))
        loc = D @ p["mean"]
        scale = np.sqrt(p["b"] / p["a"] * (1 + np.einsum("ij,jk,ik->i", D, p["V"], D)))
        return stats.t.logpdf(y, df=2 * p["a"], loc=loc, scale=scale)


def _design(model: ModelSpec, X: np.ndarray | None, n: int) -> np.ndarray:
    """The regression's design matrix, checked against the model's covariates."""
    p = model.covariates
    X = np.zeros((n, 0)) if X is None else np.asarray(X, float)
    if X.ndim == 1:
        X = X[:, None]
    if X.shape != (n, p) or not np.all(np.isfinite(X)):
        raise ValueError(f"X must be a finite array of shape [{n}, {p}] for this model, got {X.shape}")
    fit_intercept = model.conjugate.params["fit_intercept"]  # type: ignore[union-attr]
    return add_intercept(torch.as_tensor(X, dtype=torch.float64)).numpy() if fit_intercept else X


def exact_posterior(model: ModelSpec, y: np.ndarray, X: np.ndarray | None = None) -> ExactPosterior:
    """The conjugate posterior of a model that declares its closed form (``model.conjugate``: the built-in
    ``normal_location`` and ``linear_regression``)."""
    if model.conjugate is None:
        raise ValueError(
            "exact_posterior needs a model with a declared conjugate form (normal_location or linear_regression); "
            "this ModelSpec has none (for heterogeneity_report, pass bayes_sd explicitly)"
        )
    y = np.asarray(y, float)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1 or y.shape[0] == 0 or not np.all(np.isfinite(y)):
        raise ValueError(f"y must be a non-empty finite array of shape [n], got shape {y.shape}")
    kind, params = model.conjugate.kind, model.conjugate.params
    if kind == "normal_location":
        if X is not None:
            raise ValueError("the normal location model takes no covariates: X must be None")
        m0, s0, sigma = float(params["prior_mean"]), float(params["prior_sd"]), float(params["sigma"])
        v = 1.0 / (1 / s0**2 + len(y) / sigma**2)
        m = v * (m0 / s0**2 + y.sum() / sigma**2)
        return ExactPosterior(
            model, kind, {"mean": np.float64(m), "sd": np.float64(np.sqrt(v)), "sigma": np.float64(sigma)}
        )
    if kind != "linear_regression":
        raise ValueError(f"unknown conjugate model kind {kind!r}")
    prior = params["prior"]
    D = _design(model, X, len(y))
    m0 = prior.m0.double().numpy()
    V0_inv = np.linalg.inv(prior.V0.double().numpy())
    V = np.linalg.inv(V0_inv + D.T @ D)
    m = V @ (V0_inv @ m0 + D.T @ y)
    a = prior.a0 + len(y) / 2
    b = prior.b0 + 0.5 * (y @ y + m0 @ V0_inv @ m0 - m @ np.linalg.solve(V, m))
    return ExactPosterior(model, kind, {"mean": m, "V": V, "a": np.float64(a), "b": np.float64(b)})
