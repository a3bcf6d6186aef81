"""PVI on n = 10^4 points with K = 64 particles: fit time against ELBO-VI (same family, particles, steps) and the
exact conjugate Bayes posterior, and one objective evaluation against a per-datum Python loop.

Data: the radon-like regression y = 1 + 0.5 x1 - x2 + N(0, 1) noise whose intercept varies (sd 0.5) across points,
n = 10,000, X ~ N(0, I_2); model: ``linear_regression(2)`` (conjugate NIG prior). Every fit: diagonal Gaussian,
K = 64, 2000 Adam steps, full batch, one thread.

The anchor for vectorisation is the objective written point by point (a Python loop over data, each datum's
mixture log score from the K particles), as one would transcribe the formula; timed on one evaluation and its
backward pass, compared with the vectorised ``rule_score`` on the same particles.

    .venv/bin/python benchmarks/bench_pvi.py
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch

from icml26.probabilistic.pvi import ELBOVI, PredictiveVI, exact_posterior, linear_regression
from icml26.probabilistic.pvi.estimator import rule_score


def timed(fn, repeat: int = 1) -> float:
    best = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    n = 10_000
    X = rng.normal(size=(n, 2))
    y = 1.0 + rng.normal(0, 0.5, n) + X @ np.array([0.5, -1.0]) + rng.normal(0, 1.0, n)
    model = linear_regression(2)

    fits = {
        "PVI (log score)": lambda: PredictiveVI(model, random_state=0).fit(y, X),
        "PVI (CRPS, simulator only)": lambda: PredictiveVI(
            model.likelihood_free(), scores={"crps": 1.0}, random_state=0
        ).fit(y, X),
        "ELBO-VI": lambda: ELBOVI(model, random_state=0).fit(y, X),
        "exact Bayes (closed form)": lambda: exact_posterior(model, y, X),
    }
    times = {name: timed(fn) for name, fn in fits.items()}
    print(f"n = {n}, K = 64, 2000 Adam steps, 1 thread")
    for name, t in times.items():
        print(f"  {name:30s} {t * 1e3:9.1f} ms   ({t / times['ELBO-VI']:.2f}x ELBO-VI)")
    per_step = times["PVI (log score)"] / 2000
    print(f"  PVI per step: {per_step * 1e3:.2f} ms = {per_step / (n * 64) * 1e9:.1f} ns per (datum, particle)")

    theta = (torch.randn(64, 4) * 0.1).requires_grad_(True)
    y_t, X_t = torch.tensor(y, dtype=torch.float32), torch.tensor(X, dtype=torch.float32)

    def vectorised() -> None:
        rule_score(model, "log", theta, y_t, X_t).mean().backward()

    def loop(points: int = 1000) -> None:
        total = torch.zeros(())
        for i in range(points):
            ll = model.log_lik(theta, y_t[i : i + 1], X_t[i : i + 1])[:, 0]
            total = total + torch.logsumexp(ll, 0) - math.log(64)
        (total / points).backward()

    t_vec = timed(vectorised, repeat=5)
    t_loop = timed(loop, repeat=2) * n / 1000  # the loop over 1000 points, scaled to n
    print(
        f"one objective + backward: vectorised {t_vec * 1e3:.2f} ms, per-datum loop {t_loop * 1e3:.0f} ms "
        f"(extrapolated from 1000 points): {t_loop / t_vec:.0f}x"
    )


if __name__ == "__main__":
    main()
