"""Reference solutions and the metrics that compare particles with them.

- ``grid_fixed_point``: mu* = exp(-(delta F / delta mu)(mu*) / lam) / Z on a quadrature grid of the domain
  (dimension <= 2), by the damped self-consistent iteration in log space,
  log rho <- (1 - alpha) log rho + alpha (-(delta F / delta mu)(rho) / lam) (normalised), i.e. entropic mirror
  descent on the grid masses; alpha is halved whenever L would increase, so L decreases monotonically.
- ``BinnedObjective``: L = F + lam Ent of a histogram (1-D and 2-D), with the Miller-Madow correction of the
  plug-in entropy, for particles and for the reference on the same bins: the gap L(mu_N) - L(mu*) is then
  measured with the binning bias cancelled to first order.
- ``wasserstein1_to_reference``: W1 between 1-D particles and the grid solution (integral of |F_N - F*|).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import torch

from icml26.probabilistic.mmfld.domains import DTYPE, Box, Domain, DomainError, Grid, Simplex

__all__ = ["BinnedObjective", "GridSolution", "grid_fixed_point", "sample_reference", "wasserstein1_to_reference"]


@dataclass(frozen=True)
class GridSolution:
    """The reference measure on a grid: ``masses`` (sum 1), ``density`` = masses / volume, its ``mean``, the
    objective ``value`` L = F + lam Ent, and the iteration count and final change (``converged``)."""

    grid: Grid
    masses: torch.Tensor
    lam: float
    value: float
    iterations: int
    converged: bool

    @property
    def density(self) -> torch.Tensor:
        vol = self.grid.volumes
        return torch.where(vol > 0, self.masses / torch.where(vol > 0, vol, 1.0), 0.0)

    @property
    def mean(self) -> torch.Tensor:
        return (self.masses.unsqueeze(-1) * self.grid.points).sum(dim=0)

    def boundary_mass(self, domain: Domain, width: float) -> float:
        """Mass within ``width`` of the boundary (for comparison with particle boundary masses)."""
        return float(self.masses[domain.boundary_distance(self.grid.points) <= width].sum())


def _grid_value(objective: Any, grid: Grid, masses: torch.Tensor, lam: float) -> float:
    keep = masses > 0
    if hasattr(objective, "kernel") and hasattr(objective, "potential"):  # interaction energy: separable kernel
        f = float(objective.constant)
        if objective.potential is not None:
            f += float((masses * objective.potential(grid.points)).sum())
        if objective.kernel is not None:
            f += 0.5 * float((masses * objective.kernel.grid_mean(grid, masses)).sum())
    else:
        f = float(objective.value(grid.points[keep], masses[keep]))
    ent = float((masses[keep] * torch.log(masses[keep] / grid.volumes[keep])).sum())
    return f + lam * ent


def grid_fixed_point(
    objective: Any,
    lam: float,
    domain: Domain,
    n: int | None = None,
    *,
    tol: float = 1e-11,
    max_iter: int = 5000,
    alpha: float = 0.5,
) -> GridSolution:
    """The stationary point mu* of MMFLD (and of every baseline's continuous dynamics) on a midpoint grid with
    ``n`` cells per axis (default 4000 in 1-D, 200 in 2-D). Warns if the iteration has not converged."""
    if not lam > 0:
        raise ValueError(f"lam must be positive, got {lam!r}")
    n = n if n is not None else (4000 if domain.dim == 1 else 200)
    grid = domain.grid(n)
    inside = grid.volumes > 0
    log_vol = torch.where(inside, torch.log(torch.where(inside, grid.volumes, 1.0)), -math.inf)

    def gibbs(log_rho: torch.Tensor) -> torch.Tensor:
        return log_rho - torch.logsumexp(log_rho, dim=0)

    log_m = gibbs(log_vol.clone())  # uniform start
    value = _grid_value(objective, grid, log_m.exp(), lam)
    change, it = math.inf, 0
    for it in range(1, max_iter + 1):  # noqa: B007 - the count is reported
        target = gibbs(log_vol - objective.grid_first_variation(grid, log_m.exp()) / lam)
        while True:
            proposal = gibbs(torch.where(inside, (1 - alpha) * log_m + alpha * target, -math.inf))
            new_value = _grid_value(objective, grid, proposal.exp(), lam)
            if new_value <= value + 1e-15 * max(1.0, abs(value)) or alpha < 1e-6:
                break
            alpha /= 2
        change = float((proposal - log_m)[inside].abs().max())
        log_m, value = proposal, new_value
        if change < tol:
            break
    converged = change < tol
    if not converged:
        warnings.warn(
            f"grid_fixed_point: not converged after {it} iterations (max change of log density {change:.2e})",
            RuntimeWarning,
            stacklevel=2,
        )
    return GridSolution(grid, log_m.exp(), float(lam), value, it, converged)


class BinnedObjective:
    """L(mu) = F(mu) + lam Ent(mu) of a histogram with ``bins`` per axis over the domain (1-D and 2-D; simplex
    bins on the face sum x = 1 are half cells). ``of_samples`` pools particles (..., N, d) and applies the
    Miller-Madow correction -(K - 1) / (2 M) to the entropy (K non-empty bins, M samples); ``of_reference``
    aggregates a finer ``GridSolution`` (its n a multiple of ``bins``) onto the same bins."""

    def __init__(self, objective: Any, lam: float, domain: Domain, bins: int = 50):
        if domain.dim > 2:
            raise DomainError("a histogram objective is only credible in dimension 1 or 2")
        self.objective, self.lam, self.domain, self.bins = objective, float(lam), domain, int(bins)
        self.grid = domain.grid(self.bins)
        if isinstance(domain, Box):
            self.lo, self.width = domain.lo, domain.width
        elif isinstance(domain, Simplex):
            self.lo, self.width = torch.zeros(domain.dim, dtype=DTYPE), torch.ones(domain.dim, dtype=DTYPE)
        else:  # pragma: no cover - only two domain kinds exist
            raise DomainError(f"unsupported domain {domain!r}")

    def _bin_index(self, x: torch.Tensor) -> torch.Tensor:
        cell = torch.floor((x - self.lo) / self.width * self.bins).long().clamp(0, self.bins - 1)
        flat = cell[..., 0]
        for k in range(1, self.domain.dim):
            flat = flat * self.bins + cell[..., k]
        return flat

    def probabilities(self, samples: torch.Tensor) -> torch.Tensor:
        idx = self._bin_index(samples.reshape(-1, self.domain.dim))
        counts = torch.bincount(idx, minlength=len(self.grid.points)).to(DTYPE)
        return counts / counts.sum()

    def value(self, p: torch.Tensor, n_samples: int | None = None) -> float:
        keep = p > 0
        f = float(self.objective.value(self.grid.points[keep], p[keep]))
        vol = self.grid.volumes[keep]
        ent = float((p[keep] * torch.log(p[keep] / vol)).sum())
        if n_samples is not None:
            ent -= (int(keep.sum()) - 1) / (2 * n_samples)
        return f + self.lam * ent

    def of_samples(self, samples: torch.Tensor) -> float:
        return self.value(self.probabilities(samples), n_samples=samples.reshape(-1, self.domain.dim).shape[0])

    def reference_probabilities(self, solution: GridSolution) -> torch.Tensor:
        fine = solution.grid.shape[0]
        if fine % self.bins:
            raise ValueError(f"the reference grid ({fine} cells per axis) must be a multiple of bins={self.bins}")
        idx = self._bin_index(solution.grid.points)
        return torch.bincount(idx, weights=solution.masses, minlength=len(self.grid.points))

    def of_reference(self, solution: GridSolution) -> float:
        return self.value(self.reference_probabilities(solution))


def wasserstein1_to_reference(samples: torch.Tensor, solution: GridSolution) -> torch.Tensor:
    """W1 between each replica's 1-D empirical measure (samples (..., N, 1)) and the grid solution:
    the integral of |F_N - F*| over the domain, on the reference's cell edges refined 4x."""
    grid = solution.grid
    if grid.points.shape[1] != 1:
        raise ValueError("wasserstein1_to_reference is for 1-D problems")
    centres = grid.points[:, 0]
    h = float(centres[1] - centres[0])
    edges = torch.cat([centres - h / 2, centres[-1:] + h / 2])
    cdf_edges = torch.cat([torch.zeros(1, dtype=DTYPE), solution.masses.cumsum(0)])
    xs = torch.linspace(float(edges[0]), float(edges[-1]), 4 * len(centres) + 1, dtype=DTYPE)
    ref = torch.from_numpy(__import__("numpy").interp(xs.numpy(), edges.numpy(), cdf_edges.numpy()))
    s = torch.sort(samples[..., 0], dim=-1).values
    emp = torch.searchsorted(s.contiguous(), xs.expand(*s.shape[:-1], -1).contiguous(), right=True).to(DTYPE)
    emp = emp / s.shape[-1]
    return torch.trapezoid((emp - ref).abs(), xs, dim=-1)


def sample_reference(solution: GridSolution, shape: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
    """Draws from the grid solution of a box problem: a cell by its mass, then uniform inside the cell (so every
    draw lies in the open interior: the start of the stationary comparisons). Shape (*shape, d)."""
    grid = solution.grid
    n = int(math.prod(shape))
    idx = torch.multinomial(solution.masses, n, replacement=True, generator=generator)
    widths = torch.stack([a[1] - a[0] for a in grid.axes])
    jitter = (torch.rand(n, len(grid.axes), generator=generator, dtype=DTYPE) - 0.5) * widths
    return (grid.points[idx] + jitter).reshape(*shape, len(grid.axes))
