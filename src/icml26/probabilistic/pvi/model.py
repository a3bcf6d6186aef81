"""Model specifications for PVI: a prior and a likelihood, or a prior and only a simulator.

A model is anything that maps parameters theta (a batch of K particles, [K, d]) and covariates X ([n, p] or None) to
either log-likelihoods of observations y ([K, n]) or simulated observations ([K, n] for scalar y, [K, n, dy] else),
with a prior over R^d. Simulators must be *reparameterised*, y~ = g(theta, x, eps) with eps drawn by the caller,
so that the CRPS / energy score have pathwise gradients.

Built in: ``normal_location`` (y ~ N(theta, sigma^2), the protocol's toy) and ``linear_regression`` with the
Normal-Inverse-Gamma conjugate prior on (beta, sigma^2), parameterised for VI as theta = (beta, log sigma), so that
the exact Bayes posterior of the *same* model and prior is available as the baseline (``icml26...pvi.bayes``).
Each built-in model declares its conjugate form explicitly (``ModelSpec.conjugate``) and a ``standardize`` hook:
the affine map theta = shift + scale @ u from standardised coordinates u (y centred and scaled, covariates centred
and scaled, the intercept at the covariate means) together with the least-squares start, in which the estimators fit
q so that a fit does not depend on where the data sit (``Frame``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

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
class Frame:
    """Standardised coordinates of the parameters: theta = shift + scale @ u, and where u starts.

    ``shift`` [d], ``scale`` [d, d] (invertible) and ``start`` [d] (the initial location of q, in u) are computed
    from the data by a model's ``standardize`` hook. The estimators fit q over u: an affine reparameterisation,
    so the objective is unchanged; only the optimiser's coordinates and starting point move with the data.
    """

    shift: Tensor
    scale: Tensor
    start: Tensor

    def __post_init__(self) -> None:
        d = self.shift.shape[0]
        if self.shift.shape != (d,) or self.scale.shape != (d, d) or self.start.shape != (d,):
            raise ValueError(
                f"a Frame needs shift [d], scale [d, d] and start [d]; got {tuple(self.shift.shape)}, "
                f"{tuple(self.scale.shape)}, {tuple(self.start.shape)}"
            )
        finite = all(bool(torch.isfinite(t).all()) for t in (self.shift, self.scale, self.start))
        sign, log_det = torch.linalg.slogdet(self.scale.double())
        if not finite or float(sign) == 0.0 or not math.isfinite(float(log_det)):
            raise ValueError("a Frame needs finite values and an invertible scale")


Standardize = Callable[[Tensor, Tensor | None], Frame]  # (y, X) -> Frame


@dataclass(frozen=True)
class Conjugate:
    """The closed form a built-in model declares, so that ``exact_posterior`` never guesses the model.

    ``kind`` is ``"normal_location"`` (params ``sigma``, ``prior_mean``, ``prior_sd``) or ``"linear_regression"``
    (params ``fit_intercept`` and the ``NormalInverseGammaPrior`` ``prior``).
    """

    kind: str
    params: Mapping[str, Any]


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
        n_features: number of covariate columns the model expects (None or 0: no covariates, X must be None).
        obs_dim: size of one observation: 1 = scalar y ([n]); dy > 1 = vector y ([n, dy]).
        standardize: ``(y, X) -> Frame``: standardised coordinates and a start for q (see ``Frame``); None = the
            estimators start at the MAP with the Laplace unit-information scale (likelihood models) or at the
            prior's mean and sd (simulator-only models).
        conjugate: the closed form of a built-in conjugate model (``Conjugate``), or None.
    """

    dim: int
    prior: Prior
    log_lik: LogLik | None = None
    simulate: Simulator | None = None
    noise_dim: int = 1
    gaussian_predictive: GaussianPredictive | None = None
    param_names: tuple[str, ...] = field(default=())
    n_features: int | None = None
    obs_dim: int = 1
    standardize: Standardize | None = None
    conjugate: Conjugate | None = None

    def __post_init__(self) -> None:
        if self.log_lik is None and self.simulate is None:
            raise ValueError("a ModelSpec needs a log_lik or a simulate function (or both)")
        if self.dim < 1:
            raise ValueError(f"dim must be >= 1, got {self.dim}")
        if self.noise_dim < 1:
            raise ValueError(f"noise_dim must be >= 1, got {self.noise_dim}")
        if self.obs_dim < 1:
            raise ValueError(f"obs_dim must be >= 1, got {self.obs_dim}")
        if self.n_features is not None and self.n_features < 0:
            raise ValueError(f"n_features must be >= 0 or None, got {self.n_features}")
        if not self.param_names:
            object.__setattr__(self, "param_names", tuple(f"theta[{j}]" for j in range(self.dim)))
        if len(self.param_names) != self.dim:
            raise ValueError(f"{len(self.param_names)} param_names for dim {self.dim}")

    @property
    def covariates(self) -> int:
        """Number of covariate columns (0 when the model takes none)."""
        return self.n_features or 0

    def likelihood_free(self) -> ModelSpec:
        """The same model seen only through its simulator (drops the log-likelihood and the Gaussian form).

        The ``standardize`` hook (a least-squares summary of the data, not a likelihood evaluation) is kept, so
        that both arms of a comparison start by the same rule; so is the conjugate form, used only for reports.
        """
        if self.simulate is None:
            raise ValueError("this model has no simulator")
        return replace(self, log_lik=None, gaussian_predictive=None)


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

    def standardize(y: Tensor, X: Tensor | None) -> Frame:
        centre, spread = _centre_and_spread(y.double())
        return Frame(centre.reshape(1), spread.reshape(1, 1), torch.zeros(1, dtype=torch.float64))

    conjugate = Conjugate("normal_location", {"sigma": sigma, "prior_mean": prior_mean, "prior_sd": prior_sd})
    return ModelSpec(
        1, prior, log_lik, simulate, 1, predictive, ("theta",), standardize=standardize, conjugate=conjugate
    )


def _centre_and_spread(values: Tensor) -> tuple[Tensor, Tensor]:
    """Column means and standard deviations (a zero spread, e.g. a constant column, counts as 1)."""
    centre = values.mean(0)
    spread = values.std(0, correction=0) if values.shape[0] > 1 else torch.ones_like(centre)
    return centre, torch.where(spread > 0, spread, torch.ones_like(spread))


# ------------------------------------------------------------------------------------------ linear regression
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


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
    prior: NormalInverseGammaPrior | None = None,
) -> ModelSpec:
    """y = [1, x] beta + sigma eps with the conjugate prior beta | sigma^2 ~ N(0, sigma^2 prior_sd^2 I), sigma^2 ~
    InvGamma(a0, b0); parameters theta = (beta, log sigma). ``prior`` replaces that default by any
    ``NormalInverseGammaPrior`` (mean m0, covariance factor V0) over the same coefficients.
    """
    if n_features < 0:
        raise ValueError(f"n_features must be >= 0, got {n_features}")
    p = n_features + int(fit_intercept)
    if p == 0:
        raise ValueError("a regression needs an intercept or at least one feature")
    if prior is None:
        if not prior_sd > 0:
            raise ValueError(f"prior_sd must be > 0, got {prior_sd}")
        prior = NormalInverseGammaPrior(torch.zeros(p), prior_sd**2 * torch.eye(p), a0, b0)
    elif prior.m0.shape != (p,):
        raise ValueError(f"the prior is over {prior.m0.shape[0]} coefficients; this regression has {p}")
    names = list(feature_names) if feature_names is not None else [f"x{j}" for j in range(n_features)]
    if len(names) != n_features:
        raise ValueError(f"{len(names)} feature_names for {n_features} features")
    names = (["intercept"] if fit_intercept else []) + names + ["log_sigma"]

    def mean_of(theta: Tensor, X: Tensor | None) -> Tensor:  # [K, n]; [K, 1] without covariates
        if X is None:
            if n_features:
                raise ValueError(f"this model needs X with {n_features} columns")
            return theta[:, :1]
        X = X.to(theta.dtype)
        if fit_intercept:
            return torch.addmm(theta[:, :1], theta[:, 1:-1], X.T)
        return theta[:, :-1] @ X.T

    def predictive(theta: Tensor, X: Tensor | None) -> tuple[Tensor, Tensor]:
        mean = mean_of(theta, X)
        return mean, torch.exp(theta[:, -1:]).expand_as(mean)

    def log_lik(theta: Tensor, y: Tensor, X: Tensor | None) -> Tensor:
        log_sigma = theta[:, -1:]  # the log of sd directly: no log over the [K, n] grid
        z = (y - mean_of(theta, X)) * torch.exp(-log_sigma)
        return -0.5 * z.square() - log_sigma - _HALF_LOG_2PI

    def simulate(theta: Tensor, X: Tensor | None, eps: Tensor) -> Tensor:
        mean, sd = predictive(theta, X)
        return mean + sd * eps[..., 0]

    def standardize(y: Tensor, X: Tensor | None) -> Frame:
        return _regression_frame(y.double(), None if X is None else X.double(), fit_intercept)

    conjugate = Conjugate("linear_regression", {"fit_intercept": fit_intercept, "prior": prior})
    return ModelSpec(
        p + 1,
        prior,
        log_lik,
        simulate,
        1,
        predictive,
        tuple(names),
        n_features,
        standardize=standardize,
        conjugate=conjugate,
    )


def _regression_frame(y: Tensor, X: Tensor | None, fit_intercept: bool) -> Frame:
    """theta = (beta, log sigma) from u = the regression of standardised y on standardised X.

    With an intercept, y and the columns of X are centred and scaled (u_0 is then the mean response at the covariate
    means); without one only scaled (a shift could not be absorbed). In original units
    intercept = ybar + s_y (u_0 - sum_j u_j xbar_j / s_j), beta_j = s_y u_j / s_j, log sigma = log s_y + u_sigma.
    The start is the least-squares fit on the standardised data and the log of its residual sd.
    """
    n, p = y.shape[0], 0 if X is None else X.shape[1]
    y_centre, y_spread = _centre_and_spread(y)
    if X is None:
        x_centre, x_spread = torch.zeros(0, dtype=y.dtype), torch.ones(0, dtype=y.dtype)
        X = torch.zeros(n, 0, dtype=y.dtype)
    else:
        x_centre, x_spread = _centre_and_spread(X)
    if not fit_intercept:  # scale only: the root mean square of y
        y_centre, x_centre = torch.zeros_like(y_centre), torch.zeros_like(x_centre)
        rms = y.square().mean().sqrt()
        y_spread = rms if rms > 0 else torch.ones_like(rms)
    design = (X - x_centre) / x_spread
    if fit_intercept:
        design = add_intercept(design)
    y_std = (y - y_centre) / y_spread
    coef = torch.linalg.lstsq(design, y_std[:, None], driver="gelsd").solution[:, 0]
    residual_sd = ((y_std - design @ coef).square().mean()).clamp_min(1e-4).sqrt()
    k = p + int(fit_intercept)
    scale = torch.zeros(k + 1, k + 1, dtype=y.dtype)
    slopes = slice(int(fit_intercept), k)
    scale[slopes, slopes] = torch.diag(y_spread / x_spread)
    if fit_intercept:
        scale[0, 0] = y_spread
        scale[0, 1:k] = -y_spread * x_centre / x_spread
    scale[k, k] = 1.0
    shift = torch.zeros(k + 1, dtype=y.dtype)
    if fit_intercept:
        shift[0] = y_centre
    shift[k] = torch.log(y_spread)
    return Frame(shift, scale, torch.cat([coef, torch.log(residual_sd).reshape(1)]))
