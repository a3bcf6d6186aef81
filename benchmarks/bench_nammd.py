"""NAMMD closeness test at m = 2000, d = 10: time and peak memory, blocked pass vs the full-matrix formula.

Anchor: the approach of the official code, re-implemented here for timing (not copied): build the three m x m
Gram matrices, form H = Kxx + Kyy - Kxy - Kxy^T with a zeroed diagonal, and take MMD^2_u, Reg_u and the
variance from the full matrices. Ours: ``NAMMDClosenessTest.test`` with one blocked pass (block rows at a time,
peak memory O(block * m)) and with a single block (O(m^2), the k(Y, X) = k(X, Y)^T shortcut).

    .venv/bin/python benchmarks/bench_nammd.py
"""

from __future__ import annotations

import time
import tracemalloc

import numpy as np

from icml26.stats.nammd import GaussianKernel, NAMMDClosenessTest


def full_matrix_nammd_test(X: np.ndarray, Y: np.ndarray, bandwidth: float, epsilon: float) -> tuple[float, float]:
    """The full-matrix formula: (NAMMD_u, z) with the unbiased U-statistic variance, all m x m at once."""

    def gram(A: np.ndarray, B: np.ndarray) -> np.ndarray:
        d2 = (A**2).sum(1)[:, None] + (B**2).sum(1)[None, :] - 2 * A @ B.T
        return np.exp(-np.maximum(d2, 0) / bandwidth**2)

    m = len(X)
    kxx, kyy, kxy = gram(X, X), gram(Y, Y), gram(X, Y)
    H = kxx + kyy - kxy - kxy.T
    np.fill_diagonal(H, 0.0)
    np.fill_diagonal(kxx, 0.0)
    np.fill_diagonal(kyy, 0.0)
    pairs = m * (m - 1)
    mmd2 = H.sum() / pairs
    reg = 4.0 - (kxx.sum() + kyy.sum()) / pairs
    r = H.sum(1)
    h2 = (H * H).sum()
    theta2 = (H.sum() ** 2 - 4 * (r * r).sum() + 2 * h2) / (pairs * (m - 2) * (m - 3))
    e13 = ((r * r).sum() - h2) / (pairs * (m - 2))
    var = 4 * (m - 2) / pairs * (e13 - theta2) + 2 / pairs * (h2 / pairs - theta2)
    return mmd2 / reg, (mmd2 / reg - epsilon) / (np.sqrt(var) / reg)


def measure(fn, repeat: int = 3) -> tuple[float, float, object]:
    """(best wall time in s, peak traced memory in MB, result)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return min(times), peak, out


def main(m: int = 2000, d: int = 10) -> None:
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(m, d)), rng.normal(size=(m, d)) + 0.1
    bw, eps = float(np.sqrt(d)), 0.001
    kernel = GaussianKernel(bw)
    t_ref, mem_ref, (ref_est, ref_z) = measure(lambda: full_matrix_nammd_test(X, Y, bw, eps))
    print(f"m={m}, d={d}")
    print(f"full-matrix formula (anchor):   {t_ref * 1e3:7.1f} ms  peak {mem_ref:6.1f} MB")
    for block in (m, 512, 256):
        test = NAMMDClosenessTest(eps, kernel=kernel, block=block)
        t, mem, res = measure(lambda test=test: test.test(X, Y))
        assert np.isclose(res.estimate, ref_est) and np.isclose(res.statistic, ref_z)
        print(
            f"icml26, block={block:<5}             {t * 1e3:7.1f} ms  peak {mem:6.1f} MB"
            f"  (time x{t / t_ref:.2f}, memory x{mem / mem_ref:.2f} of the anchor)"
        )
    try:
        import torch
    except ImportError:
        return
    Xt, Yt = torch.tensor(X), torch.tensor(Y)
    test = NAMMDClosenessTest(eps, kernel=kernel)
    t, _, res = measure(lambda: test.test(Xt, Yt))
    assert np.isclose(res.statistic, ref_z)
    print(f"icml26, torch CPU float64, block=256 {t * 1e3:7.1f} ms  (time x{t / t_ref:.2f}; memory not traced)")


if __name__ == "__main__":
    main()
