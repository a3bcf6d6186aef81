"""Proper scoring rules of a *mixture* predictive, estimated from particles, in torch (differentiable).

PVI scores each datum y_i against the posterior-predictive mixture p_q(. | x_i) = E_{theta ~ q} p(. | theta, x_i).
With K reparameterised draws theta_1..theta_K the estimators are (all *positively* oriented by the estimator that
calls them: PVI maximises log score, -CRPS, -energy score, quadratic score):

- log score, from likelihoods:   log p_q(y_i) ~= logsumexp_k log p(y_i | theta_k) - log K
  (Jensen biases it low for finite K; consistent as K grows);
- CRPS, from simulations y~_k ~ p(. | theta_k) (likelihood-free), the "fair" ensemble estimator
  CRPS_i = (1/K) sum_k |y~_k - y_i| - 1/(2K(K-1)) sum_{k != l} |y~_k - y~_l|,
  whose pairwise term is computed in O(K log K) from the order statistics:
  sum_{k != l} |x_k - x_l| = 2 sum_k (2k - K - 1) x_(k);
- energy score (multivariate CRPS), the same with Euclidean norms (O(K^2) per datum);
- quadratic (Brier) score 2 p_q(y) - ||p_q||^2 for Gaussian components, where ||p_q||^2 has a closed form.

Closed forms for Gaussian predictives (log score, CRPS) are here too: they are the ground truth the tests use.

References: Gneiting & Raftery (2007), "Strictly proper scoring rules, prediction, and estimation", JASA;
Ferro (2014), "Fair scores for ensemble forecasts", QJRMS.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

_SQRT_PI = math.sqrt(math.pi)


def mixture_log_score(log_lik: Tensor) -> Tensor:
    """Log score of the K-particle mixture, per datum: ``log_lik`` is [K, n] -> [n]."""
    return torch.logsumexp(log_lik, dim=0) - math.log(log_lik.shape[0])


def crps_ensemble(samples: Tensor, y: Tensor, fair: bool = True) -> Tensor:
    """CRPS of an ensemble per datum (lower is better): ``samples`` [K, n], ``y`` [n] -> [n].

    ``fair=True`` is the unbiased estimator of the CRPS of the distribution the samples come from (divides the
    spread term by K(K-1)); ``fair=False`` is the CRPS of the empirical distribution of the samples (K^2).
    """
    K = samples.shape[0]
    if K < 2 and fair:
        raise ValueError("the fair CRPS needs at least 2 samples per datum")
    ordered = samples.sort(dim=0).values
    weights = 2.0 * torch.arange(1, K + 1, dtype=samples.dtype, device=samples.device) - K - 1
    half_spread = (weights[:, None] * ordered).sum(0)  # = (1/2) sum_{k != l} |x_k - x_l|
    mean_error = (samples - y).abs().mean(0)
    return mean_error - half_spread / (K * (K - 1) if fair else K * K)


def energy_score(samples: Tensor, y: Tensor, fair: bool = True) -> Tensor:
    """Energy score per datum (lower is better): ``samples`` [K, n, d], ``y`` [n, d] -> [n]; d = 1 is the CRPS."""
    if samples.ndim == 2:
        return crps_ensemble(samples, y, fair)
    K = samples.shape[0]
    if samples.shape[-1] == 1:
        return crps_ensemble(samples[..., 0], y[..., 0], fair)
    per_datum = samples.transpose(0, 1)  # [n, K, d]
    mean_error = torch.linalg.vector_norm(samples - y, dim=-1).mean(0)
    # cdist's backward is defined (zero) at the zero diagonal, so no NaN gradients leak from k == l
    pair_sum = torch.cdist(per_datum, per_datum).sum(dim=(1, 2))
    return mean_error - pair_sum / (2 * (K * (K - 1) if fair else K * K))


def gaussian_mixture_quadratic_score(mean: Tensor, sd: Tensor, y: Tensor) -> Tensor:
    """Quadratic score 2 p(y) - int p^2 of the equal-weight mixture of N(mean_k, sd_k^2) (higher is better).

    ``mean``, ``sd`` are [K, n]; ``y`` is [n]. int p^2 = (1/K^2) sum_{k,l} N(mean_k - mean_l; 0, sd_k^2 + sd_l^2).
    """
    K = mean.shape[0]
    density = torch.exp(normal_log_prob(y, mean, sd)).mean(0)
    var = sd[:, None] ** 2 + sd[None] ** 2  # [K, K, n]
    diff = mean[:, None] - mean[None]
    overlap = torch.exp(-0.5 * diff**2 / var) / torch.sqrt(2 * math.pi * var)
    return 2 * density - overlap.sum(dim=(0, 1)) / K**2


def normal_log_prob(y: Tensor, mean: Tensor, sd: Tensor) -> Tensor:
    """log N(y; mean, sd^2), broadcasting."""
    z = (y - mean) / sd
    return -0.5 * z**2 - torch.log(sd) - 0.5 * math.log(2 * math.pi)


def gaussian_crps(mean: Tensor, sd: Tensor, y: Tensor) -> Tensor:
    """Closed-form CRPS of N(mean, sd^2) at y: sd [z (2 Phi(z) - 1) + 2 phi(z) - 1/sqrt(pi)], z = (y - mean)/sd."""
    z = (y - mean) / sd
    cdf = 0.5 * (1 + torch.erf(z / math.sqrt(2)))
    pdf = torch.exp(-0.5 * z**2) / math.sqrt(2 * math.pi)
    return sd * (z * (2 * cdf - 1) + 2 * pdf - 1 / _SQRT_PI)


def expected_gaussian_crps(sd_forecast: float, sd_truth: float, bias: float = 0.0) -> float:
    """E_y CRPS(N(bias, sd_forecast^2), y) for y ~ N(0, sd_truth^2) (analytic; reference values for the toy).

    E|X - Y| - E|X - X'| / 2 with X ~ N(bias, s_f^2), Y ~ N(0, s_t^2): the folded-normal mean of N(bias, s_f^2 + s_t^2)
    minus s_f / sqrt(pi).
    """
    s = math.sqrt(sd_forecast**2 + sd_truth**2)
    folded = s * math.sqrt(2 / math.pi) * math.exp(-(bias**2) / (2 * s**2)) + bias * math.erf(bias / (s * math.sqrt(2)))
    return folded - sd_forecast / _SQRT_PI


def expected_gaussian_log_score(sd_forecast: float, sd_truth: float, bias: float = 0.0) -> float:
    """E_y log N(y; bias, sd_forecast^2) for y ~ N(0, sd_truth^2) (analytic)."""
    return -0.5 * math.log(2 * math.pi * sd_forecast**2) - (sd_truth**2 + bias**2) / (2 * sd_forecast**2)
