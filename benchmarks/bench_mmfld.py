"""MMFLD benchmark: the vectorised particle step (torch, all particles and replicas at once) against the same mirror
Euler-Maruyama step written with an outside kernel implementation, and against a per-particle Python loop.

Workload: the reproduction's problem (X = [0, 1], V = -1.5 x, Gaussian interaction of bandwidth 0.2, lam = 0.05,
log-barrier mirror, eta = 0.01), ``steps`` steps of N particles from the same start.

- Anchor (outside): NumPy with scikit-learn's ``rbf_kernel`` (the field's standard kernel-matrix routine) for the
  O(N^2) interaction, then the closed-form log-barrier step of the notes: there is no MMFLD library (the paper's code
  is not released), so the anchor re-implements the method's step around an outside kernel.
- Secondary: a per-particle loop (each particle's drift by a NumPy reduction over the others), the naive reading of
  the particle system; the issue asks for this ratio.
Every contender draws its Gaussian noise from its own generator; the timing is what is compared, not the paths.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import torch

from icml26._core.bench import BenchRow, interleaved_medians, print_rows
from icml26.probabilistic.mmfld import Box, GaussianKernel, InteractionEnergy, LinearPotential, MirrorMFLD

LAM, STEP, BANDWIDTH, SLOPE = 0.05, 0.01, 0.2, -1.5
SIZES = {  # N, steps, repeats, N of the per-particle loop
    "tiny": (100, 20, 2, 50),
    "quick": (500, 50, 5, 200),
    "full": (2000, 50, 7, 500),
}


def _start(n: int) -> np.ndarray:
    return np.random.default_rng(0).uniform(0.05, 0.95, size=(n, 1))


def _grad_conj(y: np.ndarray) -> np.ndarray:
    near = 2 / (np.sqrt(y * y + 4) + np.abs(y) + 2)
    return np.where(y <= 0, near, 1 - near)


def _mirror_step(x: np.ndarray, y: np.ndarray, drift: np.ndarray, rng: np.random.Generator):
    hess = 1 / x**2 + 1 / (1 - x) ** 2
    y = y - STEP * drift + math.sqrt(2 * LAM * STEP) * np.sqrt(hess) * rng.standard_normal(x.shape)
    return _grad_conj(y), y


def anchor_sklearn(x0: np.ndarray, steps: int) -> np.ndarray:
    """MMFLD with scikit-learn's rbf_kernel for the interaction: drift = V' + (1/N) sum_j grad_1 K(x_i, x_j)."""
    from sklearn.metrics.pairwise import rbf_kernel

    rng = np.random.default_rng(1)
    x = x0.copy()
    y = 1 / (1 - x) - 1 / x
    gamma = 1 / (2 * BANDWIDTH**2)
    for _ in range(steps):
        k = rbf_kernel(x, x, gamma=gamma) / len(x)
        drift = SLOPE + (k @ x - x * k.sum(axis=1, keepdims=True)) / BANDWIDTH**2
        x, y = _mirror_step(x, y, drift, rng)
    return x


def naive_loop(x0: np.ndarray, steps: int) -> np.ndarray:
    """MMFLD with one Python iteration per particle for the drift."""
    rng = np.random.default_rng(2)
    x = x0.copy()
    y = 1 / (1 - x) - 1 / x
    n = len(x)
    for _ in range(steps):
        drift = np.empty_like(x)
        for i in range(n):
            diff = x[i, 0] - x[:, 0]
            drift[i, 0] = SLOPE - (np.exp(-(diff**2) / (2 * BANDWIDTH**2)) * diff).sum() / (n * BANDWIDTH**2)
        x, y = _mirror_step(x, y, drift, rng)
    return x


def ours(x0: np.ndarray, steps: int) -> torch.Tensor:
    obj = InteractionEnergy(LinearPotential([SLOPE]), GaussianKernel(BANDWIDTH))
    solver = MirrorMFLD(obj, Box(0.0, 1.0), LAM, STEP, len(x0), seed=3)
    return solver.run(steps, torch.as_tensor(x0), record_every=steps).particles


def _check_drift_agrees(n: int = 64) -> None:
    """The three implementations compute the same drift (else the timing compares different work)."""
    from sklearn.metrics.pairwise import rbf_kernel

    x = _start(n)
    obj = InteractionEnergy(LinearPotential([SLOPE]), GaussianKernel(BANDWIDTH))
    ours_drift = obj.first_variation_grad(torch.as_tensor(x)).numpy()
    k = rbf_kernel(x, x, gamma=1 / (2 * BANDWIDTH**2)) / n
    anchor = SLOPE + (k @ x - x * k.sum(axis=1, keepdims=True)) / BANDWIDTH**2
    np.testing.assert_allclose(ours_drift, anchor, rtol=1e-10, atol=1e-12)


def rows(size: str) -> list[BenchRow]:
    if size not in SIZES:
        raise ValueError(f"size must be one of {tuple(SIZES)}, got {size!r}")
    torch.set_num_threads(1)
    n, steps, repeat, n_loop = SIZES[size]
    _check_drift_agrees()
    x0, x_loop = _start(n), _start(n_loop)
    t = interleaved_medians(
        {"ours": lambda: ours(x0, steps), "sklearn": lambda: anchor_sklearn(x0, steps)}, repeat=repeat
    )
    t_loop = interleaved_medians(
        {"ours": lambda: ours(x_loop, steps), "loop": lambda: naive_loop(x_loop, steps)}, repeat=repeat
    )
    note = (
        f"{steps} MMFLD steps, 1-D box, Gaussian interaction, float64, 1 thread; ours includes run() set-up and "
        "two records of the objective (O(N^2) each)"
    )
    return [
        BenchRow(
            "mmfld",
            f"MMFLD steps N={n}",
            "NumPy + scikit-learn rbf_kernel (same step)",
            t["ours"] / steps,
            t["sklearn"] / steps,
            "s/step",
            notes=note,
        ),
        BenchRow(
            "mmfld",
            f"MMFLD steps N={n_loop}",
            "per-particle Python loop (naive)",
            t_loop["ours"] / steps,
            t_loop["loop"] / steps,
            "s/step",
            notes=note,
        ),
    ]


if __name__ == "__main__":
    print_rows(rows(sys.argv[1] if len(sys.argv) > 1 else "full"))
