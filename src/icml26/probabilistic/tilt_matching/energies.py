"""Energies, the counting wrapper that proves the method never asks for a gradient, and the Boltzmann reward.

Targets (each with ``energy(x)`` for x of shape [n, d], and where known ``sample_reference`` and ``log_Z``):

- :class:`GaussianMixture` (normalised, so log Z = 0): :func:`ring8` (8 modes on a circle of radius 4, sd 0.4) and
  :func:`gmm40` (40 unit-variance modes with means uniform in [-40, 40]^2, DEM's benchmark, optionally rescaled);
- :class:`ManyWell`: d/2 copies of x1^4 - 6 x1^2 - 0.5 x1 + 0.5 x2^2, sampled exactly (inverse CDF on a fine grid);
- :class:`LennardJones`: sum_{i<j} eps [(r_m/r)^12 - 2 (r_m/r)^6] + (c/2) sum_i ||x_i - xbar||^2.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

__all__ = [
    "BoltzmannReward",
    "CountingEnergy",
    "EnergyError",
    "GaussianMixture",
    "LennardJones",
    "ManyWell",
    "boltzmann_reward",
    "gmm40",
    "ring8",
]


class EnergyError(ValueError):
    """An energy that returned non-finite values or was called with points of the wrong dimension."""


class CountingEnergy:
    """Wrap an energy E(x) -> [n]: count every evaluation, evaluate without autograd, reject bad values.

    ``calls`` / ``evaluations`` count the batched calls and the points they evaluated; ``grad_calls`` /
    ``grad_evaluations`` count requests for grad E (only :meth:`gradient` makes them, and Tilt Matching never calls
    it: its ``history_`` records zero). Points whose dimension differs from ``dim`` and non-finite energies raise
    :class:`EnergyError`.
    """

    def __init__(self, energy: Callable[[torch.Tensor], torch.Tensor], dim: int) -> None:
        if not callable(energy):
            raise TypeError(f"energy must be callable, got {type(energy).__name__}")
        if int(dim) < 1:
            raise ValueError(f"dim must be a positive integer, got {dim!r}")
        self.energy, self.dim = energy, int(dim)
        self.calls = self.evaluations = self.grad_calls = self.grad_evaluations = 0

    def _check(self, x: torch.Tensor) -> None:
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise EnergyError(f"the energy takes points of shape [n, {self.dim}], got {tuple(x.shape)}")

    def _finite(self, e: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        if e.shape != (x.shape[0],):
            raise EnergyError(f"the energy must return shape [{x.shape[0]}], got {tuple(e.shape)}")
        bad = ~torch.isfinite(e)
        if bad.any():
            i = int(bad.nonzero()[0])
            raise EnergyError(
                f"the energy returned {int(bad.sum())} non-finite value(s) of {len(e)}; first {float(e[i])} at "
                f"x = {x[i].tolist()}"
            )
        return e

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        self._check(x)
        self.calls += 1
        self.evaluations += x.shape[0]
        with torch.no_grad():
            return self._finite(self.energy(x.detach()), x)

    def gradient(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(E(x), grad E(x)): one energy evaluation and one gradient evaluation per point (baselines only)."""
        self._check(x)
        self.calls += 1
        self.evaluations += x.shape[0]
        self.grad_calls += 1
        self.grad_evaluations += x.shape[0]
        with torch.enable_grad():
            xr = x.detach().requires_grad_(True)
            e = self.energy(xr)
            (g,) = torch.autograd.grad(e.sum(), xr)
        return self._finite(e.detach(), x), g

    def counts(self) -> dict[str, int]:
        return {"energy_evals": self.evaluations, "grad_evals": self.grad_evaluations}


class BoltzmannReward:
    """r(x) = -E(x) - log rho_1(x): tilting the base rho_1 by e^r gives exactly pi ∝ e^{-E}.

    Using r = -E alone would target rho_1 e^{-E}, the wrong distribution (the notes' first trap). ``counts()``
    reports the wrapped :class:`CountingEnergy`'s energy and gradient evaluations.
    """

    def __init__(
        self, energy: Callable[[torch.Tensor], torch.Tensor], base_log_prob: Callable[[torch.Tensor], torch.Tensor]
    ) -> None:
        if not (callable(energy) and callable(base_log_prob)):
            raise TypeError("energy and base_log_prob must be callables x -> [n]")
        self.energy, self.base_log_prob = energy, base_log_prob

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return -self.energy(x) - self.base_log_prob(x)

    def counts(self) -> dict[str, int]:
        counts = getattr(self.energy, "counts", None)
        return counts() if callable(counts) else {"energy_evals": -1, "grad_evals": 0}


def boltzmann_reward(
    energy: Callable[[torch.Tensor], torch.Tensor], base_log_prob: Callable[[torch.Tensor], torch.Tensor]
) -> BoltzmannReward:
    """The reward that tilts the base rho_1 (log density ``base_log_prob``) into pi ∝ e^{-energy}."""
    return BoltzmannReward(energy, base_log_prob)


class GaussianMixture:
    """Equal-weight isotropic Gaussian mixture; energy = -log density (normalised: log Z = 0)."""

    log_Z = 0.0

    def __init__(self, means: torch.Tensor, sd: float) -> None:
        self.means = torch.as_tensor(means, dtype=torch.float32)
        self.sd = float(sd)
        self.dim = int(self.means.shape[1])

    def log_prob(self, x: torch.Tensor) -> torch.Tensor:
        d2 = torch.cdist(x.to(torch.float64), self.means.to(torch.float64)) ** 2  # [n, K]
        k = self.means.shape[0]
        log_norm = 0.5 * self.dim * math.log(2 * math.pi * self.sd**2) + math.log(k)
        return (torch.logsumexp(-0.5 * d2 / self.sd**2, dim=1) - log_norm).to(x.dtype)

    def energy(self, x: torch.Tensor) -> torch.Tensor:
        return -self.log_prob(x)

    def sample_reference(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        k = torch.randint(0, self.means.shape[0], (n,), generator=generator)
        return self.means[k] + self.sd * torch.randn(n, self.dim, generator=generator)

    def nearest_mode(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cdist(x, self.means).argmin(dim=1)


def ring8(radius: float = 4.0, sd: float = 0.4) -> GaussianMixture:
    angles = torch.arange(8, dtype=torch.float32) * (2 * math.pi / 8)
    return GaussianMixture(radius * torch.stack([angles.cos(), angles.sin()], dim=1), sd)


def gmm40(scale: float = 1.0, seed: int = 0) -> GaussianMixture:
    """40 unit-variance modes, means uniform in [-40, 40]^2 (fixed by ``seed``); everything times ``scale``."""
    g = torch.Generator().manual_seed(seed)
    means = (torch.rand(40, 2, generator=g) * 80 - 40) * scale
    return GaussianMixture(means, 1.0 * scale)


class ManyWell:
    """d/2 independent double wells x1^4 - 6 x1^2 - 0.5 x1 + 0.5 x2^2 (d even); exact samples and log Z."""

    def __init__(self, dim: int = 32) -> None:
        if dim < 2 or dim % 2:
            raise ValueError(f"ManyWell needs an even dimension >= 2, got {dim}")
        self.dim = dim
        grid = torch.linspace(-6, 6, 200_001, dtype=torch.float64)
        dens = torch.exp(-self._well(grid))
        step = float(grid[1] - grid[0])
        z1 = float(dens.sum()) * step
        self._grid, self._cdf = grid, torch.cumsum(dens, 0) / dens.sum()
        self.log_Z = (dim // 2) * (math.log(z1) + 0.5 * math.log(2 * math.pi))

    @staticmethod
    def _well(x1: torch.Tensor) -> torch.Tensor:
        return x1**4 - 6 * x1**2 - 0.5 * x1

    def energy(self, x: torch.Tensor) -> torch.Tensor:
        x1, x2 = x[:, 0::2], x[:, 1::2]
        return (self._well(x1) + 0.5 * x2**2).sum(-1)

    def sample_reference(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        half = self.dim // 2
        u = torch.rand(n * half, generator=generator, dtype=torch.float64)
        x1 = self._grid[torch.searchsorted(self._cdf, u).clamp(max=len(self._grid) - 1)].reshape(n, half)
        x2 = torch.randn(n, half, generator=generator, dtype=torch.float64)
        return torch.stack([x1, x2], dim=2).reshape(n, self.dim).to(torch.float32)


class LennardJones:
    """n particles in ``spatial`` dimensions: LJ pair energy (eps = r_m = 1) plus a harmonic tie to the centre.

    E(x) = eps sum_{i<j} [(r_m / r_ij)^12 - 2 (r_m / r_ij)^6] + (c / 2) sum_i ||x_i - xbar||^2 with c = 1 (DEM's
    LJ-13; some code scales the LJ part by 0.5: ``lj_scale``). x has shape [batch, n * spatial].
    """

    def __init__(
        self, n_particles: int = 13, spatial: int = 3, eps: float = 1.0, rm: float = 1.0, oscillator: float = 1.0
    ) -> None:
        self.n, self.spatial, self.eps, self.rm, self.c = n_particles, spatial, eps, rm, oscillator
        self.dim = n_particles * spatial
        self._i, self._j = torch.triu_indices(n_particles, n_particles, offset=1)

    def energy(self, x: torch.Tensor) -> torch.Tensor:
        pos = x.reshape(x.shape[0], self.n, self.spatial)
        r = (pos[:, self._i] - pos[:, self._j]).norm(dim=-1)
        inv6 = (self.rm / r) ** 6
        lj = self.eps * (inv6**2 - 2 * inv6).sum(-1)
        centred = pos - pos.mean(dim=1, keepdim=True)
        return lj + 0.5 * self.c * (centred**2).sum(dim=(1, 2))
