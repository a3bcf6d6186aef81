"""PVI fit time against Pyro's SVI, the library a user would otherwise reach for, on the same model, data and steps.

Workload: the regression y = 1 + 0.5 x1 - x2 + N(0, 1) noise whose intercept varies (sd 0.5) across points,
X ~ N(0, I_2), n = 10,000 (1,000 at size ``tiny``); model: Gaussian linear regression with the conjugate
Normal-Inverse-Gamma prior (``linear_regression(2)``: beta | sigma^2 ~ N(0, 100 sigma^2 I), sigma^2 ~ IG(1, 1)).
Every fit: K = 64 particles per step, Adam at lr 1e-2, the same number of steps, full batch, one torch thread.

Rows (ratio = anchor time / our time; > 1 when ours is faster):

1. PVI (``PredictiveVI``, log score) against Pyro SVI with ``Trace_ELBO(num_particles=64, vectorize_particles=True)``
   and an ``AutoNormal`` guide on the same model written in Pyro (the anchor: what a Pyro user runs; it optimises
   the ELBO, not PVI's objective, so the row compares the cost of a fit, not its answer).
2. ELBO-VI (``ELBOVI``: the same objective as the anchor) against the same Pyro fit.
3. Secondary: one evaluation of PVI's objective and its backward pass, vectorised, against the per-datum Python
   loop a transcription of the formula gives (timed on 1,000 points and scaled to n).

Pyro (``pyro-ppl``) is a benchmark-only dependency; without it rows 1-2 are skipped. Our fits include their
standardisation and convergence bookkeeping; Pyro's Adam has no cosine decay (the schedule costs nothing).

    .venv/bin/python benchmarks/bench_pvi.py [tiny|quick|full]
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Callable

import numpy as np
import torch

from icml26._core import single_torch_thread
from icml26._core.bench import BenchRow, interleaved_medians, print_rows
from icml26.probabilistic.pvi import ELBOVI, ConvergenceWarning, PredictiveVI, linear_regression
from icml26.probabilistic.pvi.estimator import rule_score

K, LR = 64, 1e-2
SIZES = {  # n, steps, timing repeats
    "tiny": (1_000, 20, 1),
    "quick": (10_000, 100, 3),
    "full": (10_000, 1_000, 3),
}


def regression_data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = 1.0 + rng.normal(0, 0.5, n) + X @ np.array([0.5, -1.0]) + rng.normal(0, 1.0, n)
    return y, X


def pyro_svi_fit(y: np.ndarray, X: np.ndarray, steps: int) -> Callable[[], None] | None:
    """The same regression and prior in Pyro, fitted by SVI (Trace_ELBO, AutoNormal); None without pyro-ppl."""
    try:
        import pyro
        import pyro.distributions as dist
        from pyro.infer import SVI, Trace_ELBO
        from pyro.infer.autoguide import AutoNormal
    except ImportError:
        return None
    D = torch.cat([torch.ones(len(y), 1), torch.as_tensor(X, dtype=torch.float32)], dim=1)  # [n, p]
    y_t = torch.as_tensor(y, dtype=torch.float32)
    p = D.shape[1]

    def model(D: torch.Tensor, y: torch.Tensor) -> None:
        sigma2 = pyro.sample("sigma2", dist.InverseGamma(1.0, 1.0))
        beta = pyro.sample("beta", dist.Normal(torch.zeros(p), 10.0 * sigma2.sqrt()[..., None]).to_event(1))
        mean = (beta * D).sum(-1)  # [n], or [K, n] with the particle plate at dim -2
        with pyro.plate("data", D.shape[0], dim=-1):
            pyro.sample("y", dist.Normal(mean, sigma2.sqrt()), obs=y)

    def fit() -> None:
        pyro.clear_param_store()
        pyro.set_rng_seed(0)
        guide = AutoNormal(model)
        elbo = Trace_ELBO(num_particles=K, vectorize_particles=True, max_plate_nesting=1)
        svi = SVI(model, guide, pyro.optim.Adam({"lr": LR}), loss=elbo)
        for _ in range(steps):
            svi.step(D, y_t)

    return fit


def _quiet(fit: Callable[[], object]) -> Callable[[], None]:
    def run() -> None:
        with warnings.catch_warnings():  # short benchmark fits stop before converging, by design
            warnings.simplefilter("ignore", ConvergenceWarning)
            fit()

    return run


def rows(size: str) -> list[BenchRow]:
    if size not in SIZES:
        raise ValueError(f"size must be one of {tuple(SIZES)}, got {size!r}")
    n, steps, repeat = SIZES[size]
    y, X = regression_data(n)
    model = linear_regression(2)
    workload = f"fit n={n}, K={K}, {steps} Adam steps"
    out: list[BenchRow] = []
    with single_torch_thread():
        contenders = {
            "pvi": _quiet(lambda: PredictiveVI(model, n_particles=K, lr=LR, n_iter=steps, random_state=0).fit(y, X)),
            "elbo": _quiet(lambda: ELBOVI(model, n_particles=K, lr=LR, n_iter=steps, random_state=0).fit(y, X)),
        }
        pyro_fit = pyro_svi_fit(y, X, steps)
        if pyro_fit is not None:
            contenders["pyro"] = pyro_fit
        t = interleaved_medians(contenders, repeat=repeat)
        if pyro_fit is not None:
            anchor = "Pyro SVI (Trace_ELBO, AutoNormal, vectorised particles)"
            note = "the anchor optimises the ELBO: this compares the cost of a fit, not its answer"
            out.append(BenchRow("pvi", f"PVI {workload}", anchor, t["pvi"], t["pyro"], "s", notes=note))
            out.append(BenchRow("pvi", f"ELBO-VI {workload}", anchor, t["elbo"], t["pyro"], "s"))
        out.append(_objective_row(model, y, X))
    return out


def _objective_row(model, y: np.ndarray, X: np.ndarray, loop_points: int = 1000) -> BenchRow:
    """Secondary: the vectorised objective + backward against a per-datum Python loop (scaled from loop_points)."""
    theta = (torch.randn(K, model.dim, generator=torch.Generator().manual_seed(0)) * 0.1).requires_grad_(True)
    y_t, X_t = torch.tensor(y, dtype=torch.float32), torch.tensor(X, dtype=torch.float32)
    points = min(loop_points, len(y))

    def vectorised() -> None:
        rule_score(model, "log", theta, y_t, X_t).mean().backward()

    def loop() -> None:
        total = torch.zeros(())
        for i in range(points):
            ll = model.log_lik(theta, y_t[i : i + 1], X_t[i : i + 1])[:, 0]
            total = total + torch.logsumexp(ll, 0) - math.log(K)
        (total / points).backward()

    t = interleaved_medians({"vectorised": vectorised, "loop": loop}, repeat=3)
    return BenchRow(
        "pvi",
        f"PVI objective + backward, n={len(y)}, K={K}",
        "per-datum Python loop (naive transcription)",
        t["vectorised"],
        t["loop"] * len(y) / points,
        "s",
        notes=f"secondary row; the loop is timed on {points} points and scaled to n",
    )


if __name__ == "__main__":
    print_rows(rows(sys.argv[1] if len(sys.argv) > 1 else "full"))
