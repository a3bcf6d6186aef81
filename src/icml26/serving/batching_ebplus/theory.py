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

   the official code clamps dtheta to [0, 5 theta] and theta to [0.01, 0.8]. ``fit_hazard`` estimates (p0, eta)
   as the official estimator does: weighted least squares of the empirical hazard h_t = #{O = t} / #{O >= t}
   on t, weights #{O >= t}, over t in [t_5%, t_95%] (sample quantiles; t_95% >= t_5% + 10) and only where
   #{O >= t} >= 5; then eta >= 0 and p0 >= 1/mean (the memoryless rate of the same mean).
3. **Memory-safe N (Prop. 3).** Each running request holds its prompt plus its generated tokens. With
   D(theta) = mu_L + (1 - theta) / (theta p0) * ln(1 / (1 - theta)) the mean KV per request in steady state,
   the CLT form picks the largest N with N D + sigma sqrt(N ln(1/eps)) <= C, sigma^2 = 2 Lambda (1 + (p0 mu_L +
   Lambda / theta)^2) / p0^2 (the default, as in the code); the linear form is N = floor((C - nu ln(1/eps)) / D),
   nu = 1 / (p0^2 mu_L).
4. **Crossover (Prop. 4).** Per token, EB minus MB cost difference in the fluid limit:

       Delta(N) = [beta_MB(r) - beta_EB] - [(alpha_p - alpha_d ln(1 - theta0) mu_O) / k - alpha_MB (1 + mu_O) / N]
                  / (mu_L + mu_O),

   with r = mu_O / (mu_L + mu_O), beta_EB the token-weighted mean of beta_p and beta_d and k = theta0 N. We use the
   k the EB phase machine uses, k = max(1, floor(theta0 N)) (``switch_count``; Algorithm 1), and theta0 = k / N in
   the logarithm, so that the closed form and the simulator describe the same phases (review issue 21). The
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
    """Additive IFR correction dtheta for h(t) = p0 + eta t, clamped to [0, 5 theta] (official code)."""
    _check_probability(p0)
    if not 0 < theta < 1:
        raise ValueError(f"theta must be in (0, 1), got {theta!r}")
    lam = -math.log1p(-theta)
    rho = beta_d * n / alpha_d
    dtheta = eta * (1 - theta) ** 2 / (p0 * p0 * theta) * (lam * (theta / (1 - theta) - lam / 2) + rho * (lam - theta))
    return min(max(dtheta, 0.0), IFR_CAP * theta)


def corrected_theta(p0: float, eta: float, cost: LinearStepCost, n: int) -> float:
    """theta0 from Prop. 1 plus the capped IFR correction, clamped to [0.01, 0.8] (the official rule)."""
    theta0 = theta_star(p0, cost.alpha_p, cost.alpha_d)
    theta = theta0 + (ifr_correction(theta0, p0, eta, cost.beta_d, cost.alpha_d, n) if eta != 0 else 0.0)
    return min(max(theta, THETA_MIN), THETA_MAX)


@dataclass(frozen=True)
class HazardFit:
    """h(t) = p0 + eta t fitted to output lengths (t = tokens generated so far).

    ``window`` is the fitted range [t_5%, t_95%], ``points`` the number of t in it with >= 5 survivors, and
    ``reliable`` False when too little data was left to fit (then p0 = 1/mean, eta = 0: the official code keeps
    its previous estimate instead, which ``EBPlusScheduler`` does).
    """

    p0: float
    eta: float
    mean: float
    n: int
    window: tuple[int, int] = (0, 0)
    points: int = 0
    reliable: bool = True


MIN_SURVIVORS = 5  # official estimator: skip t with fewer survivors (unreliable hazard)
MIN_TOTAL_WEIGHT = 10  # official estimator: below this total weight, no fit


def _as_lengths(lengths: object) -> np.ndarray:
    x = np.asarray(lengths)
    if x.ndim != 1:
        raise ValueError(f"output lengths must be a 1-D sequence of token counts, got shape {x.shape}")
    if x.size and not (np.issubdtype(x.dtype, np.integer) or np.issubdtype(x.dtype, np.floating)):
        raise ValueError(f"output lengths must be numbers, got dtype {x.dtype}")
    if np.issubdtype(x.dtype, np.floating):
        if not np.all(np.isfinite(x)):
            raise ValueError("output lengths must be finite (found NaN or inf)")
        if np.any(x != np.round(x)):
            raise ValueError("output lengths must be whole token counts (found fractional values)")
    if np.any(x < 1):
        raise ValueError("output lengths must be >= 1")
    return x.astype(np.int64)


def fit_hazard(lengths: np.ndarray, min_samples: int = 30) -> HazardFit:
    """The official hazard estimator: weighted least squares of h_t = #{O = t} / #{O >= t} on t.

    Weights #{O >= t}; t runs over [t_5%, t_95%] with t_5% the sample's order statistic at index
    floor(0.05 n) (at least 1) and t_95% at floor(0.95 n), widened to t_5% + 10 if narrower; t with fewer than 5
    survivors are skipped. eta is clamped to >= 0 (a decreasing hazard is treated as constant) and p0 floored at
    1/mean. Needs ``min_samples`` whole, positive lengths.
    """
    x = _as_lengths(lengths)
    if x.size < min_samples:
        raise ValueError(f"need at least {min_samples} output lengths to fit a hazard, got {x.size}")
    n = int(x.size)
    mean = float(x.mean())
    ordered = np.sort(x)
    t_lo = max(int(ordered[int(n * 0.05)]), 1)
    t_hi = max(int(ordered[int(n * 0.95)]), t_lo + 10)
    counts = np.bincount(x)
    at_risk = counts[::-1].cumsum()[::-1]  # at_risk[t] = #{O >= t}
    t = np.arange(t_lo, min(t_hi, int(ordered[-1])) + 1)
    t = t[at_risk[t] >= MIN_SURVIVORS]
    w = at_risk[t].astype(float)
    fallback = HazardFit(1.0 / mean, 0.0, mean, n, (t_lo, t_hi), int(t.size), reliable=False)
    if w.sum() < MIN_TOTAL_WEIGHT or t.size < 2:
        return fallback
    h = counts[t] / at_risk[t]
    tf = t.astype(float)
    sw, swt, swt2 = w.sum(), (w * tf).sum(), (w * tf * tf).sum()
    swh, swth = (w * h).sum(), (w * tf * h).sum()
    det = sw * swt2 - swt * swt
    if abs(det) < 1e-10:
        return fallback
    p0 = (swt2 * swh - swt * swth) / det
    eta = (sw * swth - swt * swh) / det
    p0 = min(max(float(p0), 1.0 / mean), 0.999)  # the upper guard (p0 < 1 for Prop. 1) is ours
    return HazardFit(p0, max(float(eta), 0.0), mean, n, (t_lo, t_hi), int(t.size))


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
    """k = max(1, floor(theta N)): how many completions end a decode phase (Algorithm 1; official code)."""
    return max(1, math.floor(theta * n))


def crossover_delta(
    cost: LinearStepCost, mean_prompt: float, mean_output: float, n: int, theta: float | None = None
) -> float:
    """Prop. 4: Delta(N) in seconds per token; Delta > 0 means EB beats MB.

    ``theta`` defaults to Prop. 1 with the geometric hazard p0 = 1/mu_O. k = ``switch_count(theta, n)``, the
    integer threshold the EB phase machine uses, in both places Prop. 4 has theta N: the 1/k amortisation and
    the phase length mu_O ln(1 / (1 - k/N)) (so Delta < 0 without interference at every N; for N = 1 the phase
    is mu_O steps).
    """
    for label, value in (("mean_prompt", mean_prompt), ("mean_output", mean_output)):
        if not (isinstance(value, int | float) and math.isfinite(value)):
            raise ValueError(f"{label} must be a finite number, got {value!r}")
    if not (mean_prompt > 0 and mean_output > 1):
        raise ValueError(f"mean lengths must be positive (mu_O > 1), got {mean_prompt!r}, {mean_output!r}")
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"batch size N must be an integer >= 1, got {n!r}")
    if theta is not None and not (isinstance(theta, int | float) and math.isfinite(theta) and 0 < theta < 1):
        raise ValueError(f"theta must be in (0, 1) (the fraction of the batch that ends a phase), got {theta!r}")
    p0 = 1.0 / mean_output
    theta0 = theta_star(p0, cost.alpha_p, cost.alpha_d) if theta is None else float(theta)
    n = int(n)
    k = switch_count(theta0, n)
    # decode steps per phase = mu_O ln(1 / (1 - k/N)) at the k the phase machine really uses (= theta0 N when that
    # is a whole number); with k = N = 1 the phase is a whole request, mu_O steps
    phase_steps = mean_output * (-math.log1p(-k / n) if k < n else 1.0)
    tokens = mean_prompt + mean_output
    r = mean_output / tokens
    interference = float(cost.beta_mb(r)) - cost.beta_eb(mean_prompt, mean_output)
    overhead = ((cost.alpha_p + cost.alpha_d * phase_steps) / k - cost.alpha_mb * (1 + mean_output) / n) / tokens
    return interference - overhead
