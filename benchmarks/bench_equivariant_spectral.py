"""eNCP against non-equivariant NCP, the equivariant layer against symmetrisation by averaging, and our plain MLP
baseline against scikit-learn's MLPRegressor.

Workload: the D3-invariant Gaussian mixture (``benchmark_problem("D3")``), n = 1000 training pairs (128 at size
``tiny``), 2000 test pairs with the exact E[y | x]. Width 66 (64 rounded up to a multiple of |D3| = 6), depth 2,
Adam at 1e-3, batch 256, one torch thread, the same number of steps for every fit.

Rows (ratio = anchor time / our time; > 1 when ours is faster):

1. eNCP fit (``NCPRegressor(rep_x, rep_y)``) against NCP at the same width and rank (the issue's comparison); both
   fits' MSE against the exact E[y | x] are in the notes (the equivariant constraint costs time and buys error).
2. One forward + backward pass of the equivariant MLP (Reynolds-projected weights) against symmetrisation by
   averaging (f_sym(x) = 1/|G| sum_g rho_Y(g)^-1 f(rho_X(g) x), the frame/group-averaging approach of Yarotsky 2018
   and Puny et al. 2022, written here) on a plain MLP of the same width: both exactly equivariant.
3. Our plain MLP regression baseline (``EMLPRegressor()``) against scikit-learn's ``MLPRegressor`` (adam, the same
   widths, batch, learning rate and number of steps; ReLU, as scikit-learn has no ELU); MSEs in the notes.

    .venv/bin/python benchmarks/bench_equivariant_spectral.py [tiny|quick|full]
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import torch

from icml26._core import single_torch_thread
from icml26._core.bench import BenchRow, interleaved_medians, print_rows
from icml26.stats.equivariant_spectral import EMLPRegressor, NCPRegressor, benchmark_problem, equivariant_mlp, mlp

SIZES = {  # n_train, steps, timing repeats
    "tiny": (128, 10, 1),
    "quick": (1000, 200, 2),
    "full": (1000, 1000, 3),
}
PAPER = "equivariant_spectral"


def _mse(est, X, truth) -> float:
    return float(np.mean((est.predict(X) - truth) ** 2))


def rows(size: str) -> list[BenchRow]:
    if size not in SIZES:
        raise ValueError(f"size must be one of {tuple(SIZES)}, got {size!r}")
    n, steps, repeat = SIZES[size]
    prob = benchmark_problem("D3")
    rng = np.random.default_rng(0)
    X, y = prob.sample(n, rng)
    Xt, _ = prob.sample(2000, rng)
    truth = prob.conditional_mean(Xt)
    rx, ry = prob.rep_x, prob.rep_y
    out: list[BenchRow] = []
    with single_torch_thread():
        fits = {
            "encp": NCPRegressor(rx, ry, n_steps=steps, random_state=0),
            "ncp": NCPRegressor(n_steps=steps, width=66, rank=36, random_state=0),
        }
        for warm in (NCPRegressor(rx, ry, n_steps=2), NCPRegressor(n_steps=2), EMLPRegressor(n_steps=2)):
            warm.fit(X[:64], y[:64])  # first-call imports (torch.optim, linalg) stay out of the timings
        t = interleaved_medians({k: (lambda e=e: e.fit(X, y)) for k, e in fits.items()}, repeat=repeat, warmup=0)
        errs = {k: _mse(e, Xt, truth) for k, e in fits.items()}
        out.append(
            BenchRow(
                PAPER,
                f"fit n={n}, {steps} steps, D3, rank 36, width 66",
                "NCP (same width and rank, no symmetry)",
                t["encp"],
                t["ncp"],
                "s",
                notes=f"MSE vs exact E[y|x]: eNCP {errs['encp']:.4f}, NCP {errs['ncp']:.4f}",
                extra={"mse_encp": errs["encp"], "mse_ncp": errs["ncp"]},
            )
        )
        out.append(_layer_row(rx, ry, repeat=max(3, repeat)))
        out.append(_sklearn_row(X, y, Xt, truth, steps, repeat))
    return out


def _layer_row(rx, ry, repeat: int, batch: int = 256) -> BenchRow:
    """Forward + backward of the equivariant MLP against group averaging of a plain MLP (same widths)."""
    torch.manual_seed(0)
    emlp = equivariant_mlp(rx, ry, 66)
    plain = mlp(rx.dim, 1, 66)
    gx = torch.as_tensor(rx.matrices, dtype=torch.float32)
    gy = torch.as_tensor(ry.matrices, dtype=torch.float32)
    x = torch.randn(batch, rx.dim)

    def symmetrised(x: torch.Tensor) -> torch.Tensor:
        moved = torch.einsum("gij,nj->gni", gx, x)  # rho_X(g) x for every g: one batched pass over |G| n points
        return torch.einsum("gji,gnj->ni", gy, plain(moved)) / len(gx)  # rho_Y(g)^T f(rho_X(g) x), averaged

    g = 1
    err = (symmetrised(x @ gx[g].T) - symmetrised(x) @ gy[g].T).abs().max()
    assert float(err.detach()) < 1e-4, "the averaging anchor must itself be equivariant"

    def step(f) -> None:
        f(x).square().mean().backward()

    reps = 20
    t = interleaved_medians(
        {"ours": lambda: [step(emlp) for _ in range(reps)], "avg": lambda: [step(symmetrised) for _ in range(reps)]},
        repeat=repeat,
    )
    return BenchRow(
        PAPER,
        f"equivariant MLP fwd+bwd, batch {batch}, D3, width 66 (x{reps})",
        "symmetrisation by group averaging of a plain MLP",
        t["ours"],
        t["avg"],
        "s",
        notes="both exactly equivariant; ours projects the weights (cost independent of the batch), the anchor "
        "evaluates the network on |G| = 6 moved copies of the batch",
    )


def _sklearn_row(X, y, Xt, truth, steps: int, repeat: int) -> BenchRow:
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPRegressor

    batch = min(256, len(X))
    epochs = max(1, round(steps / int(np.ceil(len(X) / batch))))
    ours = EMLPRegressor(width=66, n_steps=steps, random_state=0)
    theirs = MLPRegressor(
        hidden_layer_sizes=(66, 66),
        batch_size=batch,
        learning_rate_init=1e-3,
        max_iter=epochs,
        random_state=0,
        alpha=0.0,
        tol=0.0,
        n_iter_no_change=10**9,
    )
    ys = (y - y.mean()) / y.std()

    def fit_sklearn() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            theirs.fit(X, ys)

    t = interleaved_medians({"ours": lambda: ours.fit(X, y), "sk": fit_sklearn}, repeat=repeat, warmup=0)
    sk_mse = float(np.mean((theirs.predict(Xt) * y.std() + y.mean() - truth) ** 2))
    return BenchRow(
        PAPER,
        f"plain MLP regression fit n={len(X)}, {steps} steps, width 66",
        "scikit-learn MLPRegressor (adam, same widths/batch/lr/steps)",
        t["ours"],
        t["sk"],
        "s",
        notes=f"MSE vs exact E[y|x]: ours {_mse(ours, Xt, truth):.4f}, scikit-learn {sk_mse:.4f} (ReLU; {epochs} "
        "epochs of shuffled batches)",
    )


if __name__ == "__main__":
    print_rows(rows(sys.argv[1] if len(sys.argv) > 1 else "full"))
