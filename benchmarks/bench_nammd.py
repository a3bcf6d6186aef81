"""NAMMD closeness test: time and peak memory of ours against the official estimator's formula.

Anchor (the official code's approach, re-implemented here for timing, not copied): the estimator and closed-form
variance of zhijianzhouml/NAMMD (``MMDu`` / ``h1_mean_var_gram`` / ``_asymptotic_values``) evaluated as that code
does, in torch on whole matrices: the three m x m Gaussian Gram matrices from |x|^2 + |y|^2 - 2 x.y, their
concatenation into the 2m x 2m matrix, MMD^2_u and Reg_u from its blocks, copies of the blocks with zeroed
diagonals, and the closed form from norms and vector-matrix products; then z = (NAMMD_u - epsilon) / sqrt(Var /
Reg^2). Ours: ``NAMMDClosenessTest(variance="official").test`` (numpy, one pass over row blocks of the Gram
matrices, ``block=None``: whole matrices for small m, cache-sized row blocks beyond). Both give the same z
(asserted to 1e-8).

Rows (ratio > 1: ours is better):
- time, ours (numpy) vs the anchor (torch CPU float64, one thread); and our torch path vs the anchor (same
  framework);
- peak memory, ours vs the same formula transcribed to numpy (tracemalloc sees numpy, not torch, allocations);
- secondary: our automatic block size vs the former fixed 256-row blocks and vs whole Gram matrices.

    .venv/bin/python benchmarks/bench_nammd.py [tiny|quick|full]
"""

from __future__ import annotations

import sys
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np

from icml26._core.bench import BenchRow, interleaved_medians, print_rows
from icml26._core.threads import single_torch_thread
from icml26.stats.nammd import GaussianKernel, NAMMDClosenessTest, auto_block

PAPER = "nammd"
D, EPSILON = 10, 0.001
SIZES = {"tiny": ((200,), 5), "quick": ((1000,), 5), "full": ((2000, 3000), 7)}  # sample sizes m, timing repeats
ANCHOR = "official NAMMD formula, whole matrices (torch CPU)"


def official_formula(X: Any, Y: Any, bandwidth: float, epsilon: float, lib: Any) -> float:
    """z of the NAMMD closeness test, the official code's way (see the module docstring), on torch tensors
    (``lib=torch``, as the official code runs) or numpy arrays (``lib=numpy``)."""
    cat = lib.cat if lib.__name__ == "torch" else lib.concatenate

    def sq_dists(a: Any, b: Any) -> Any:
        d = (a**2).sum(1)[:, None] + (b**2).sum(1)[None, :] - 2.0 * a @ b.T
        d[d < 0] = 0
        return d

    m = X.shape[0]
    kx, ky, kxy = (lib.exp(-sq_dists(a, b) / bandwidth**2) for a, b in ((X, X), (Y, Y), (X, Y)))
    kxyxy = cat((cat((kx, kxy), 1), cat((kxy.T, ky), 1)), 0)
    xx = (kx.sum() - kx.diagonal().sum()) / (m * (m - 1))
    yy = (ky.sum() - ky.diagonal().sum()) / (m * (m - 1))
    xy = (kxy.sum() - kxy.diagonal().sum()) / (m * (m - 1))
    mmd2, reg = xx - 2 * xy + yy, 4 - xx - yy
    ix, iy = np.arange(m), np.arange(m, 2 * m)
    kx, ky, kxy = kxyxy[np.ix_(ix, ix)], kxyxy[np.ix_(iy, iy)], kxyxy[np.ix_(ix, iy)]
    e = lib.ones(m, dtype=X.dtype)
    off = 1 - lib.eye(m, dtype=X.dtype)
    kx0, ky0 = kx * off, ky * off
    m3, m4 = m * (m - 1) * (m - 2), m * (m - 1) * (m - 2) * (m - 3)
    a, b, c = m**2 * (m - 1), m**2 * (m - 1) * (m - 2), m**2 * (m - 1) ** 2

    def sq(v: Any) -> Any:  # squared Euclidean / Frobenius norm
        return (v * v).sum()

    def xi(k: Any) -> Any:
        rows = sq(k @ e)
        return (rows - sq(k)) / m3 - ((e @ k @ e) ** 2 - 4 * (rows + 2 * sq(k))) / m4

    r2, c2, f = sq(kxy @ e), sq(kxy.T @ e), sq(kxy)
    t = ((e @ kxy @ e) ** 2 - c2 - r2 + f) / c
    ux, uy = e @ kx0 @ kxy @ e, e @ ky0 @ kxy.T @ e
    vx, vy = (e @ kx0 @ e) * (e @ kxy @ e) - 2 * ux, (e @ ky0 @ e) * (e @ kxy.T @ e) - 2 * uy
    base = xi(kx0) + xi(ky0) - 2 * t
    zeta1 = base + (r2 - f) / a + (c2 - f) / a - 2 * (ux + uy) / a + 2 * (vx + vy) / b
    zeta2 = base + 2 * f / m**2 - 4 * (ux + uy) / a + 4 * (vx + vy) / b
    var = 4 * (m - 2) / (m * (m - 1)) * zeta1 + 2 / (m * (m - 1)) * zeta2
    return float((mmd2 / reg - epsilon) / (var / reg**2) ** 0.5)


def peak_mb(fn: Callable[[], object]) -> float:
    """Peak memory traced by tracemalloc during one call, in MB."""
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return peak


def rows_at(m: int, repeat: int) -> list[BenchRow]:
    """The rows of one sample size m (torch at one thread)."""
    import torch

    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(m, D)), rng.normal(size=(m, D)) + 0.1
    Xt, Yt = torch.tensor(X), torch.tensor(Y)
    bw = float(np.sqrt(D))
    test = NAMMDClosenessTest(EPSILON, kernel=GaussianKernel(bw), variance="official")
    old = NAMMDClosenessTest(EPSILON, kernel=GaussianKernel(bw), variance="official", block=256)
    whole = NAMMDClosenessTest(EPSILON, kernel=GaussianKernel(bw), variance="official", block=m)
    z_ref = official_formula(Xt, Yt, bw, EPSILON, torch)
    for z in (test.test(X, Y).statistic, test.test(Xt, Yt).statistic, official_formula(X, Y, bw, EPSILON, np)):
        assert np.isclose(z, z_ref, rtol=1e-8), (z, z_ref)
    t = interleaved_medians(
        {
            "ours": lambda: test.test(X, Y),
            "ours_torch": lambda: test.test(Xt, Yt),
            "anchor": lambda: official_formula(Xt, Yt, bw, EPSILON, torch),
            "block256": lambda: old.test(X, Y),
            "whole": lambda: whole.test(X, Y),
        },
        repeat=repeat,
    )
    mem = {
        "ours": peak_mb(lambda: test.test(X, Y)),
        "anchor": peak_mb(lambda: official_formula(X, Y, bw, EPSILON, np)),
    }
    block = auto_block(m)
    work = f"NAMMD test, official variance, m={m}, d={D}"
    return [
        BenchRow(PAPER, work, ANCHOR, t["ours"], t["anchor"], "s", notes=f"same z (rtol 1e-8); block {block} rows"),
        BenchRow(
            PAPER,
            work,
            ANCHOR,
            t["ours_torch"],
            t["anchor"],
            "s",
            ours_name="icml26 torch path",
            notes="same framework",
        ),
        BenchRow(
            PAPER,
            work,
            "official NAMMD formula, whole matrices (numpy)",
            mem["ours"],
            mem["anchor"],
            "MB",
            notes=f"tracemalloc peak of one call; block {block} rows",
        ),
        BenchRow(
            PAPER,
            work,
            "icml26, fixed 256-row blocks (former default)",
            t["ours"],
            t["block256"],
            "s",
            notes=f"secondary: automatic block ({block} rows) vs 256",
        ),
        BenchRow(
            PAPER,
            work,
            "icml26, whole Gram matrices (block = m)",
            t["ours"],
            t["whole"],
            "s",
            notes=f"secondary: automatic block ({block} rows) vs whole matrices",
        ),
    ]


def rows(size: str = "full") -> list[BenchRow]:
    sizes, repeat = SIZES[size]
    with single_torch_thread():
        return [row for m in sizes for row in rows_at(m, repeat)]


if __name__ == "__main__":
    print_rows(rows(sys.argv[1] if len(sys.argv) > 1 else "full"))
