"""Model specifications for PVI: a prior and a likelihood, or a prior and only a simulator.

A model is anything that maps parameters theta (a batch of K particles, [K, d]) and covariates X ([n, p] or None) to
either log-likelihoods of observations y ([K, n]) or simulated observations ([K, n] for scalar y, [K, n, dy] else),
with a prior over R^d. Simulators must be *reparameterised*, y~ = g(theta, x, eps) with eps drawn by the caller,
so that the CRPS / energy score have pathwise gradients.

Built in: ``normal_location`` (y ~ N(theta, sigma^2), the protocol's toy) and ``linear_regression`` with the
Normal-Inverse-Gamma conjugate prior on (beta, sigma^2), parameterised for VI as theta = (beta, log sigma), so that
the exact Bayes posterior of the *same* model and prior is available as the baseline (``icml26...pvi.bayes``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import torch
from torch import Tensor

from icml26.probabilistic.pvi.scores import normal_log_prob


class Prior(Protocol):
    """What PVI needs of a prior over R^d: a log density of a batch [K, d] -> [K] and a sampler."""

    def log_prob(self, theta: Tensor) -> Tensor: ...

    def sample(self, sample_shape: torch.Size | tuple[int, ...] = ...) -> Tensor: ...


LogLik = Callable[[Tensor, Tensor, Tensor | None], Tensor]  # (theta [K,d], y [n(,dy)], X) -> [K, n]
Simulator = Callable[[Tensor, Tensor | None, Tensor], Tensor]  # (theta [K,d], X, eps [K,n,noise_dim]) -> [K,n(,dy)]
GaussianPredictive = Callable[[Tensor, Tensor | None], tuple[Tensor, Tensor]]  # (theta, X) -> mean, sd [K, n]


@dataclass(frozen=True)
class ModelSpec:
    """A parametric model p(y | theta, x) with a prior, given by a log-likelihood, a simulator, or both.

    Attributes:
        dim: number of parameters d.
        prior: a ``Prior`` (e.g. a ``torch.distributions`` object with event shape [d]).
        log_lik: ``(theta [K, d], y [n] or [n, dy], X [n, p] or None) -> [K, n]``; needed for the log score.
        simulate: ``(theta [K, d], X or None, eps [K, n, noise_dim]) -> [K, n]`` or ``[K, n, dy]``; reparameterised.
        noise_dim: size of the standard-normal eps per datum that ``simulate`` consumes.
        gaussian_predictive: ``(theta, X) -> (mean, sd)`` each [K, n] when p(y | theta, x) is Gaussian; enables
            the quadratic score and closed-form evaluation.
        param_names: names of the d parameters, for reports.
        n_features: number of covariate columns the model expects (None: no covariates).
    """

    dim: int
    prior: Prior
    log_lik: LogLik | None = None
    simulate: Simulator | None = None
    noise_dim: int = 1
    gaussian_predictive: GaussianPredictive | None = None
    param_names: tuple[str, ...] = field(default=())
    n_features: int | None = None

    def __post_init__(self) -> None:
        if self.log_lik is None and self.simulate is None:
            raise ValueError("a ModelSpec needs a log_lik or a simulate function (or both)")
        if self.dim < 1:
            raise ValueError(f"dim must be >= 1, got {self.dim}")
        if self.noise_dim < 1:
            raise ValueError(f"noise_dim must be >= 1, got {self.noise_dim}")
        if not self.param_names:
            object.__setattr__(self, "param_names", tuple(f"theta[{j}]" for j in range(self.dim)))
        if len(self.param_names) != self.dim:
            raise ValueError(f"{len(self.param_names)} param_names for dim {self.dim}")

    def likelihood_free(self) -> ModelSpec:
        """The same model seen only through its simulator (drops the log-likelihood and the Gaussian form)."""
        if self.simulate is None:
            raise ValueError("this model has no simulator")
        return ModelSpec(
            dim=self.dim,
            prior=self.prior,
            simulate=self.simulate,
            noise_dim=self.noise_dim,
            param_names=self.param_names,
            n_features=self.n_features,
        )


# ------------------------------------------------------------------------------------------ normal location
def normal_location(sigma: float = 1.0, prior_mean: float = 0.0, prior_sd: float = 10.0) -> ModelSpec:
    """y ~ N(theta, sigma^2) with known sigma and prior theta ~ N(prior_mean, prior_sd^2) (the protocol's toy)."""
    if sigma <= 0 or prior_sd <= 0:
        raise ValueError("sigma and prior_sd must be > 0")
    prior = torch.distributions.Independent(
        torch.distributions.Normal(torch.tensor([float(prior_mean)]), torch.tensor([float(prior_sd)])), 1
    )

    def predictive(theta: Tensor, X: Tensor | None) -> tuple[Tensor, Tensor]:
        return theta[:, :1], torch.full_like(theta[:, :1], sigma)

    def log_lik(theta: Tensor, y: Tensor, X: Tensor | None) -> Tensor:
        return normal_log_prob(y, theta[:, :1], torch.as_tensor(sigma, dtype=theta.dtype))

    def simulate(theta: Tensor, X: Tensor | None, eps: Tensor) -> Tensor:
        return theta[:, :1] + sigma * eps[..., 0]

    return ModelSpec(1, prior, log_lik, simulate, 1, predictive, ("theta",))


# ------------------------------------------------------------------------------------------ linear regression
class NormalInverseGammaPrior:
    """sigma^2 ~ InvGamma(a0, b0), beta | sigma^2 ~ N(m0, sigma^2 V0), as a density over theta = (beta, log sigma).

    log p(theta) = log N(beta; m0, sigma^2 V0) + log IG(sigma^2; a0, b0) + log(2 sigma^2), the last term being the
    Jacobian of sigma^2 = exp(2 log sigma).
    """

    def __init__(self, m0: Tensor, V0: Tensor, a0: float, b0: float) -> None:
        if a0 <= 0 or b0 <= 0:
            raise ValueError("a0 and b0 must be > 0")
        self.m0, self.V0, self.a0, self.b0 = m0, V0, float(a0), float(b0)
        self._chol = torch.linalg.cholesky(V0)

    def log_prob(self, theta: Tensor) -> Tensor:
        beta, log_sigma = theta[:, :-1], theta[:, -1]
        p = beta.shape[1]
        sigma2 = torch.exp(2 * log_sigma)
        chol = self._chol.to(theta.dtype)
        z = torch.linalg.solve_triangular(chol, (beta - self.m0.to(theta.dtype)).T, upper=False)  # [p, K]
        log_normal = (
            -0.5 * (z**2).sum(0) / sigma2
            - p * log_sigma
            - torch.log(torch.diagonal(chol)).sum()
            - 0.5 * p * math.log(2 * math.pi)
        )
        log_ig = self.a0 * math.log(self.b0) - math.lgamma(self.a0) - (self.a0 + 1) * 2 * log_sigma - self.b0 / sigma2
        return log_normal + log_ig + math.log(2.0) + 2 * log_sigma

    def sample(self, sample_shape: torch.Size | tuple[int, ...] = ()) -> Tensor:
        n = int(torch.Size(sample_shape).numel())
        sigma2 = 1.0 / torch.distributions.Gamma(self.a0, self.b0).sample((n,))
        beta = self.m0 + (torch.randn(n, len(self.m0), dtype=self.m0.dtype) @ self._chol.T) * sigma2.sqrt()[:, None]
        theta = torch.cat([beta, 0.5 * torch.log(sigma2)[:, None].to(beta.dtype)], dim=1)
        return theta.reshape(*torch.Size(sample_shape), -1)


def add_intercept(X: Tensor) -> Tensor:
    """Prepend a column of ones."""
    return torch.cat([torch.ones(X.shape[0], 1, dtype=X.dtype, device=X.device), X], dim=1)


def linear_regression(
    n_features: int,
    fit_intercept: bool = True,
    prior_sd: float = 10.0,
    a0: float = 1.0,
    b0: float = 1.0,
    feature_names: Sequence[str] | None = None,
) -> ModelSpec:
    """y = [1, x] beta + sigma eps with the conjugate prior beta | sigma^2 ~ N(0, sigma^2 prior_sd^2 I), sigma^2 ~
    InvGamma(a0, b0); parameters theta = (beta, log sigma).
    """
    if n_features < 0:
        raise ValueError(f"n_features must be >= 0, got {n_features}")
    p = n_features + int(fit_intercept)
    if p == 0:
        raise ValueError("a regression needs an intercept or at least one feature")
    prior = NormalInverseGammaPrior(torch.zeros(p), prior_sd**2 * torch.eye(p), a0, b0)
    names = list(feature_names) if feature_names is not None else [f"x{j}" for j in range(n_features)]
    if len(names) != n_features:
        raise ValueError(f"{len(names)} feature_names for {n_features} features")
    names = (["intercept"] if fit_intercept else []) + names + ["log_sigma"]

    def design(X: Tensor | None, like: Tensor) -> Tensor:
        if X is None:
            if n_features:
                raise ValueError(f"this model needs X with {n_features} columns")
            return torch.ones(1, 1, dtype=like.dtype)
        return add_intercept(X) if fit_intercept else X

    def predictive(theta: Tensor, X: Tensor | None) -> tuple[Tensor, Tensor]:
        mean = theta[:, :-1] @ design(X, theta).T.to(theta.dtype)  # [K, n]
        return mean, torch.exp(theta[:, -1:]).expand_as(mean)

    def log_lik(theta: Tensor, y: Tensor, X: Tensor | None) -> Tensor:
        mean, sd = predictive(theta, X)
        return normal_log_prob(y, mean, sd)

    def simulate(theta: Tensor, X: Tensor | None, eps: Tensor) -> Tensor:
        mean, sd = predictive(theta, X)
        return mean + sd * eps[..., 0]

    return ModelSpec(p + 1, prior, log_lik, simulate, 1, predictive, tuple(names), n_features)
