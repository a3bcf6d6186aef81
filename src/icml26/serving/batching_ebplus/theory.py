"""The paper's closed forms: EB threshold (Prop. 1), IFR correction, memory-safe N (Prop. 3), crossover (Prop. 4).

Exclusive batching (EB) runs N requests through a prefill phase, then decodes only, until k of them finish, then
prefills k new ones. Each refill costs a prefill step and breaks decode batching, so k trades refill overhead
against a shrinking decode batch.

1. **Threshold (Prop. 1).** With geometric output lengths (constant hazard p0 ~ 1/mu_O), the optimal fraction
   theta0 = k*/N solves

       theta / (1 - theta) + ln(1 - theta) = -ln(1 - p0) * alpha_p / alpha_d,

   whose left side is increasing (derivative theta / (1 - theta)^2), so bisection is exact. For small right side
   x the left side is theta^2 / 2 + O(theta^3), hence the asymptotic theta0 ~ sqrt(2 x).
2. **IFR correction.** For an increasing failure rate h(t) = p0 + eta t, with Lambda = -ln(1 - theta) and
   rho = beta_d N / alpha_d,

       dtheta = eta (1 - theta)^2 / (p0^2 theta) * [Lambda (theta / (1 - theta) - Lambda / 2) + rho (Lambda - theta)];

   the official code caps dtheta at 5 theta and clamps theta to [0.01, 0.8]. ``fit_hazard`` estimates (p0, eta)
   from output lengths by weighted least squares on the empirical hazard, p0 floored at 1/mean.
3. **Memory-safe N (Prop. 3).** Each running request holds its prompt plus its generated tokens. With
   D(theta) = mu_L + (1 - theta) / (theta p0) * ln(1 / (1 - theta)) the mean KV per request in steady state,
   the CLT form picks the largest N with N D + sigma sqrt(N ln(1/eps)) <= C, sigma^2 = 2 Lambda (1 + (p0 mu_L +
   Lambda / theta)^2) / p0^2 (the default, as in the code); the linear form is N = floor((C - nu ln(1/eps)) / D),
   nu = 1 / (p0^2 mu_L).
4. **Crossover (Prop. 4).** Per token, EB minus MB cost difference in the fluid limit:

       Delta(N) = [beta_MB(r) - beta_EB] - [(alpha_p - alpha_d ln(1 - theta0) mu_O) / k - alpha_MB (1 + mu_O) / N]
                  / (mu_L + mu_O),

   with r = mu_O / (mu_L + mu_O), beta_EB the token-weighted mean of beta_p and beta_d and k = theta0 N. The
   first bracket is interference (what MB pays per token on top of EB); the second is EB's switching overhead,
   shrinking like 1/N. **Delta > 0 means EB is faster.**

References: arXiv 2606.00516 (Props. 1, 3, 4; official code weifang231/eb-vllm).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from icml26.serving.batching_ebplus.cost import LinearStepCost

__all__ = [
    "THETA_MAX",
    "THETA_MIN",
    "HazardFit",
    "crossover_delta",
    "fit_hazard",
    "ifr_correction",
    "memory_safe_batch_size",
    "switch_count",
    "theta_asymptotic",
    "theta_star",
]

THETA_MIN, THETA_MAX = 0.01, 0.8  # the official code's clamp
IFR_CAP = 5.0  # the official code caps the IFR correction at 5 theta


def _check_probability(p0: float) -> None:
    if not (math.isfinite(p0) and 0 < p0 < 1):
        raise ValueError(f"the hazard p0 must be in (0, 1), got {p0!r}")


def _check_alphas(alpha_p: float, alpha_d: float) -> None:
    if not (alpha_p > 0 and alpha_d > 0):
        raise ValueError(f"alpha_p and alpha_d must be positive, got {alpha_p!r}, {alpha_d!r}")


def _threshold_rhs(p0: float, alpha_p: float, alpha_d: float) -> float:
    return -math.log1p(-p0) * alpha_p / alpha_d


def theta_star(p0: float, alpha_p: float, alpha_d: float, tol: float = 1e-13) -> float:
    """Prop. 1 exactly: the root of theta/(1-theta) + ln(1-theta) = -ln(1-p0) alpha_p/alpha_d, by bisection."""
    _check_probability(p0)
    _check_alphas(alpha_p, alpha_d)
    rhs = _threshold_rhs(p0, alpha_p, alpha_d)
    lo, hi = 0.0, 1.0 - 1e-15
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if mid / (1 - mid) + math.log1p(-mid) < rhs:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def theta_asymptotic(p0: float, alpha_p: float, alpha_d: float) -> float:
    """The small-p0 limit of Prop. 1: theta0 ~ sqrt(2 (-ln(1 - p0)) alpha_p / alpha_d)."""
    _check_probability(p0)
    _check_alphas(alpha_p, alpha_d)
    return math.sqrt(2.0 * _threshold_rhs(p0, alpha_p, alpha_d))


def ifr_correction(theta: float, p0: float, eta: float, beta_d: float, alpha_d: float, n: int) -> float:
    """Additive IFR correction dtheta for h(t) = p0 + eta t, capped at 5 theta (official code)."""
    _check_probability(p0)
    if not 0 < theta < 1:
        raise ValueError(f"theta must be in (0, 1), got {theta!r}")
    lam = -math.log1p(-theta)
    rho = beta_d * n / alpha_d
    dtheta = eta * (1 - theta) ** 2 / (p0 * p0 * theta) * (lam * (theta / (1 - theta) - lam / 2) + rho * (lam - theta))
    return min(dtheta, IFR_CAP * theta)


def corrected_theta(p0: float, eta: float, cost: LinearStepCost, n: int) -> float:
    """theta0 from Prop. 1 plus the capped IFR correction, clamped to [0.01, 0.8] (the official rule)."""
    theta0 = theta_star(p0, cost.alpha_p, cost.alpha_d)
    theta = theta0 + (ifr_correction(theta0, p0, eta, cost.beta_d, cost.alpha_d, n) if eta != 0 else 0.0)
    return min(max(theta, THETA_MIN), THETA_MAX)


@dataclass(frozen=True)
class HazardFit:
    """h(t) = p0 + eta t fitted to output lengths (t = tokens generated so far)."""

    p0: float
    eta: float
    mean: float
    n: int


def fit_hazard(lengths: np.ndarray, min_samples: int = 30) -> HazardFit:
    """Weighted least squares of the empirical hazard h_t = #{len = t} / #{len >= t} on t, weights #{len >= t}.

    p0 is floored at 1/mean (so that a hazard that is zero before a minimum length, like uniform +-25%, still
    gives a usable constant part), as in the official code. Needs ``min_samples`` lengths.
    """
    x = np.asarray(lengths, dtype=np.int64)
    if x.size < min_samples:
        raise ValueError(f"need at least {min_samples} output lengths to fit a hazard, got {x.size}")
    if np.any(x < 1):
        raise ValueError("output lengths must be >= 1")
    mean = float(x.mean())
    counts = np.bincount(x)
    at_risk = counts[::-1].cumsum()[::-1]  # at_risk[t] = #{len >= t}
    t = np.nonzero(at_risk)[0]
    t = t[t >= 1]
    h = counts[t] / at_risk[t]
    w = at_risk[t].astype(float)
    design = np.c_[np.ones_like(t, dtype=float), t.astype(float)]
    sw = np.sqrt(w)
    coef = np.linalg.lstsq(design * sw[:, None], h * sw, rcond=None)[0]
    p0 = min(max(float(coef[0]), 1.0 / mean), 0.999)
    return HazardFit(p0=p0, eta=float(coef[1]), mean=mean, n=int(x.size))


def _kv_per_request(theta: float, p0: float, mean_prompt: float) -> float:
    """D(theta) = mu_L + (1 - theta) / (theta p0) ln(1 / (1 - theta))."""
    return mean_prompt + (1 - theta) / (theta * p0) * -math.log1p(-theta)


def memory_safe_batch_size(
    capacity_tokens: float,
    mean_prompt: float,
    p0: float,
    theta: float,
    eps: float = 0.01,
    method: Literal["clt", "linear"] = "clt",
) -> int:
    """Prop. 3: the largest N whose KV use exceeds ``capacity_tokens`` with probability about ``eps``.

    ``"clt"`` (default, as the code and the paper's results): N D + sigma sqrt(N ln(1/eps)) <= C;
    ``"linear"``: N = floor((C - nu ln(1/eps)) / D), nu = 1 / (p0^2 mu_L). Returns at least 1 only if one
    request fits on average; otherwise raises.
    """
    if not capacity_tokens > 0:
        raise ValueError(f"KV capacity must be positive, got {capacity_tokens!r}")
    if not mean_prompt > 0:
        raise ValueError(f"mean prompt length must be positive, got {mean_prompt!r}")
    if not 0 < eps < 1:
        raise ValueError(f"eps must be in (0, 1), got {eps!r}")
    _check_probability(p0)
    if not 0 < theta < 1:
        raise ValueError(f"theta must be in (0, 1), got {theta!r}")
    log_eps = math.log(1.0 / eps)
    d = _kv_per_request(theta, p0, mean_prompt)
    if method == "linear":
        nu = 1.0 / (p0 * p0 * mean_prompt)
        n = math.floor((capacity_tokens - nu * log_eps) / d)
    elif method == "clt":
        lam = -math.log1p(-theta)
        sigma = math.sqrt(2 * lam * (1 + (p0 * mean_prompt + lam / theta) ** 2)) / p0
        b = sigma * math.sqrt(log_eps)
        x = (-b + math.sqrt(b * b + 4 * d * capacity_tokens)) / (2 * d)  # sqrt(N) solving D x^2 + b x = C
        n = math.floor(x * x)
    else:
        raise ValueError(f"method must be 'clt' or 'linear', got {method!r}")
    if n < 1:
        raise ValueError(
            f"no memory-safe batch: capacity {capacity_tokens:.0f} tokens is below one request's expected "
            f"footprint ({d:.0f} tokens) plus the safety margin"
        )
    return int(n)


def switch_count(theta: float, n: int) -> int:
    """k = max(1, round(theta N)): how many completions end a decode phase."""
    return max(1, round(theta * n))


def crossover_delta(
    cost: LinearStepCost, mean_prompt: float, mean_output: float, n: int, theta: float | None = None
) -> float:
    """Prop. 4: Delta(N) in seconds per token; Delta > 0 means EB beats MB.

    ``theta`` defaults to Prop. 1 with the geometric hazard p0 = 1/mu_O.
    """
    if not (mean_prompt > 0 and mean_output > 1):
        raise ValueError(f"mean lengths must be positive (mu_O > 1), got {mean_prompt!r}, {mean_output!r}")
    if n < 1:
        raise ValueError(f"batch size N must be >= 1, got {n!r}")
    p0 = 1.0 / mean_output
    theta0 = theta_star(p0, cost.alpha_p, cost.alpha_d) if theta is None else theta
    k = theta0 * n
    tokens = mean_prompt + mean_output
    r = mean_output / tokens
    interference = float(cost.beta_mb(r)) - cost.beta_eb(mean_prompt, mean_output)
    overhead = ((cost.alpha_p - cost.alpha_d * math.log1p(-theta0) * mean_output) / k
                - cost.alpha_mb * (1 + mean_output) / n) / tokens  # fmt: skip
    return interference - overhead
