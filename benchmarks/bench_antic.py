"""ANTIC: solver speed and compression throughput.

Rows (ratio > 1: ours is better):
- solver, steps per second: our pseudo-spectral step (real FFTs, vectorised, integrating-factor RK4) against the
  same equations stepped naively: second-order finite differences with the streamfunction from a sparse Poisson
  solve (``scipy.sparse.linalg.spsolve``, no FFT, re-solved at every RK4 stage). No outside 2-D Navier-Stokes solver
  installs offline (jax-cfd needs jax), so this anchor is our own naive loop: a secondary row, said so.
- compression throughput, MB of raw float32 per second: ANTIC (selection + neural-field training, the whole encode)
  against the outside codecs SZ3 (pysz) and ZFP (zfpy), each compressing every frame of the same trajectory at the
  error ANTIC reaches (bisected beforehand, not timed). Expected far below 1: ANTIC trains a network per kept frame.
- decode throughput: ANTIC's ``decompress`` (network evaluation + interpolation) against SZ3 decompression.

    .venv/bin/python benchmarks/bench_antic.py [tiny|quick|full]
"""

from __future__ import annotations

import sys

import numpy as np
import scipy.sparse as sps
import scipy.sparse.linalg as spla

from icml26._core.bench import BenchRow, interleaved_medians, print_rows
from icml26._core.threads import single_torch_thread
from icml26.science.antic import ANTIC, EnstrophySelector, KolmogorovFlow2D, SZ3Codec, ZFPCodec, match_error
from icml26.science.antic.codecs import compress_frames

PAPER = "antic"
# grid, solver steps per timing, frames, steps_first, steps_next, repeats
SIZES = {"tiny": (16, 5, 8, 10, 3, 2), "quick": (32, 20, 40, 100, 20, 3), "full": (64, 20, 100, 200, 40, 3)}


class NaiveFD:
    """The same vorticity equation by finite differences: 5-point Laplacian, centred Jacobian u.grad(omega), the
    streamfunction from a sparse direct solve each stage, classical RK4 (viscous term explicit)."""

    def __init__(self, n: int, nu: float, kf: int, dt: float, omega: np.ndarray) -> None:
        self.n, self.nu, self.dt, self.h = n, nu, dt, 2 * np.pi / n
        one = sps.identity(n, format="csr")
        d2 = sps.diags([1.0, -2.0, 1.0], [-1, 0, 1], shape=(n, n), format="lil")
        d2[0, n - 1] = d2[n - 1, 0] = 1
        lap = (sps.kron(one, d2) + sps.kron(d2, one)).tocsc() / self.h**2
        pin = sps.csc_matrix(([1.0], ([0], [0])), shape=(n * n, n * n))  # fix psi's constant
        self.poisson = (lap + pin).tocsc()
        self.lap = lap
        y = self.h * np.arange(n)
        self.force = np.broadcast_to((-kf * np.cos(kf * y))[:, None], (n, n)).ravel()
        self.w = omega.ravel().astype(np.float64)

    def _rhs(self, w: np.ndarray) -> np.ndarray:
        n, h = self.n, self.h
        psi = spla.spsolve(self.poisson, -w).reshape(n, n)
        u = (np.roll(psi, -1, 0) - np.roll(psi, 1, 0)) / (2 * h)
        v = -(np.roll(psi, -1, 1) - np.roll(psi, 1, 1)) / (2 * h)
        w2 = w.reshape(n, n)
        wx = (np.roll(w2, -1, 1) - np.roll(w2, 1, 1)) / (2 * h)
        wy = (np.roll(w2, -1, 0) - np.roll(w2, 1, 0)) / (2 * h)
        return -(u * wx + v * wy).ravel() + self.nu * (self.lap @ w) + self.force

    def step(self, k: int) -> None:
        dt = self.dt
        for _ in range(k):
            a = self._rhs(self.w)
            b = self._rhs(self.w + 0.5 * dt * a)
            c = self._rhs(self.w + 0.5 * dt * b)
            d = self._rhs(self.w + dt * c)
            self.w = self.w + dt / 6 * (a + 2 * b + 2 * c + d)


def _trajectory(n: int, frames: int) -> np.ndarray:
    sim = KolmogorovFlow2D(n, re=40.0, seed=0, dt=0.2 / int(np.ceil(0.2 / KolmogorovFlow2D(n).dt)))
    sim.advance(15.0)
    return sim.snapshots(frames, 0.2)


@single_torch_thread()
def rows(size: str) -> list[BenchRow]:
    n, steps, n_frames, s_first, s_next, repeat = SIZES[size]
    out = []
    sim = KolmogorovFlow2D(n, re=40.0, seed=0)
    sim.advance(1.0)
    naive = NaiveFD(n, sim.nu, sim.kf, sim.dt, sim.omega)
    t = interleaved_medians({"ours": lambda: sim.step(steps), "naive": lambda: naive.step(steps)}, repeat=repeat)
    out.append(
        BenchRow(
            PAPER,
            f"Kolmogorov flow {n}^2, solver steps",
            "naive finite differences + sparse Poisson solve (ours, secondary)",
            steps / t["ours"],
            steps / t["naive"],
            "steps/s",
            better="higher",
            notes="no outside 2-D NS solver installs offline (jax-cfd needs jax); the anchor is our naive loop",
        )
    )
    frames = _trajectory(n, n_frames)
    mb = frames.nbytes / 1e6

    def encode() -> object:
        return ANTIC(EnstrophySelector(), steps_first=s_first, steps_next=s_next).compress(frames, 0.0, 0.2)

    traj = encode()
    target = float(np.linalg.norm(traj.decompress() - frames) / np.linalg.norm(frames))
    sz_bound = match_error(SZ3Codec, frames, target)[0]
    zfp_bound = match_error(ZFPCodec, frames, target)[0]
    t = interleaved_medians(
        {
            "antic": encode,
            "sz3": lambda: [SZ3Codec(sz_bound).encode(f) for f in frames],
            "zfp": lambda: [ZFPCodec(zfp_bound).encode(f) for f in frames],
        },
        repeat=max(1, repeat - 1),
        warmup=0,
    )
    note = f"{n_frames} frames {n}^2, all-frame relative L2 {target:.3f} for every contender"
    for anchor, name in (("sz3", "SZ3 (pysz), absolute bound"), ("zfp", "ZFP (zfpy), fixed accuracy")):
        out.append(
            BenchRow(
                PAPER, f"compress {n}^2 trajectory", name, mb / t["antic"], mb / t[anchor], "MB/s", "higher", notes=note
            )
        )
    sz_bufs = [SZ3Codec(sz_bound).encode(f) for f in frames]
    codec = SZ3Codec(sz_bound)
    t = interleaved_medians(
        {"antic": traj.decompress, "sz3": lambda: [codec.decode(b, shape=frames.shape[1:]) for b in sz_bufs]},
        repeat=repeat,
    )
    out.append(
        BenchRow(PAPER, f"decompress {n}^2 trajectory", "SZ3 (pysz)", mb / t["antic"], mb / t["sz3"], "MB/s", "higher")
    )
    assert compress_frames(SZ3Codec(sz_bound), frames)[0].shape == frames.shape
    return out


if __name__ == "__main__":
    print_rows(rows(sys.argv[1] if len(sys.argv) > 1 else "full"))
