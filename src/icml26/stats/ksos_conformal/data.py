"""Synthetic heteroscedastic regression with skewed noise, one-sided outliers and deliberately biased predictors.

    x ~ U(-1, 1)^d,   y = sin(3 x_1) + 0.5 sum_{j >= 2} x_j / sqrt(d - 1) + sigma(x) eps,   sigma(x) = 0.2 + 0.8 |x_1|

with eps standardised (mean 0, variance 1): ``normal`` N(0, 1); ``exponential`` E - 1; ``gamma`` (G - 2) / sqrt(2),
G ~ Gamma(2, 1); ``lognormal`` (exp(0.5 Z) - e^(1/8)) / sd. Optional contamination: with probability ``outliers``
a point gets + U(3, 6) sigma(x) (one-sided, right). A predictor "biased by b" under-predicts by b sigma(x) (the
residuals shift towards the long right tail, the side where a symmetric band wastes most).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["NOISES", "Split", "make_regression_data", "noise", "sigma"]

NOISES = ("normal", "exponential", "gamma", "lognormal")


def sigma(X: np.ndarray) -> np.ndarray:
    return 0.2 + 0.8 * np.abs(X[:, 0])


def mean_function(X: np.ndarray) -> np.ndarray:
    d = X.shape[1]
    rest = 0.5 * X[:, 1:].sum(1) / np.sqrt(d - 1) if d > 1 else 0.0
    return np.sin(3.0 * X[:, 0]) + rest


def noise(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Standardised noise (mean 0, variance 1) of the named kind."""
    if kind == "normal":
        return rng.standard_normal(n)
    if kind == "exponential":
        return rng.exponential(1.0, n) - 1.0
    if kind == "gamma":
        return (rng.gamma(2.0, 1.0, n) - 2.0) / np.sqrt(2.0)
    if kind == "lognormal":
        s = 0.5
        mean, var = np.exp(s**2 / 2), (np.exp(s**2) - 1) * np.exp(s**2)
        return (np.exp(s * rng.standard_normal(n)) - mean) / np.sqrt(var)
    raise ValueError(f"unknown noise {kind!r}; choose one of {NOISES}")


@dataclass(frozen=True)
class Split:
    X: np.ndarray
    y: np.ndarray
    sigma: np.ndarray


def make_regression_data(n: int, d: int, kind: str, rng: np.random.Generator, *, outliers: float = 0.0) -> Split:
    """n points of the model in the module docstring."""
    X = rng.uniform(-1.0, 1.0, (n, d))
    s = sigma(X)
    eps = noise(kind, n, rng)
    if outliers > 0:
        hit = rng.random(n) < outliers
        eps = eps + hit * rng.uniform(3.0, 6.0, n)
    return Split(X, mean_function(X) + s * eps, s)
