"""Convex domains X of the constrained problems: boxes and simplices.

A domain knows its interior (``contains``), its boundary (``boundary_distance``), the Euclidean projection onto its
closure (projected MFLD), the reflection back into it (reflected MFLD, boxes only), a bijection from R^d onto its
interior with the log-Jacobian's gradient (unconstrained MFLD on the reparameterised problem), uniform sampling,
and a quadrature grid for the reference solution (dimension <= 2).

Points are float64 tensors of shape ``(..., N, d)``: N particles, optionally a leading batch of independent
replicas. ``check_points`` turns user input into that shape and raises one clear ``DomainError`` for each bad input.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

__all__ = ["Box", "Domain", "DomainError", "Grid", "Simplex", "check_points"]

DTYPE = torch.float64


class DomainError(ValueError):
    """Points outside the domain, a malformed domain, or an operation the domain does not support."""


@dataclass(frozen=True)
class Grid:
    """A quadrature rule on a tensor grid: ``points`` (M, d), cell ``volumes`` (M,) (0 outside the domain), and the
    per-axis cell centres ``axes`` (so separable kernels can act axis by axis)."""

    axes: tuple[torch.Tensor, ...]
    points: torch.Tensor
    volumes: torch.Tensor

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(a) for a in self.axes)


class Domain:
    """Base class: a closed convex set in R^d with a non-empty interior."""

    dim: int
    name: str = "domain"

    # -- membership -------------------------------------------------------------------------------------------
    def contains(self, x: torch.Tensor) -> torch.Tensor:
        """Boolean (..., N): the point lies in the open interior."""
        return self.boundary_distance(x) > 0

    def boundary_distance(self, x: torch.Tensor) -> torch.Tensor:
        """Signed Euclidean distance to the boundary (..., N): positive inside, 0 on it, negative outside."""
        raise NotImplementedError

    # -- baselines ---------------------------------------------------------------------------------------------
    def project(self, x: torch.Tensor) -> torch.Tensor:
        """Euclidean projection onto the closed domain."""
        raise NotImplementedError

    def reflect(self, x: torch.Tensor) -> torch.Tensor:
        raise DomainError(f"reflection is implemented for boxes only, not for {self.name}; use ProjectedMFLD")

    def from_unconstrained(self, z: torch.Tensor) -> torch.Tensor:
        """A smooth bijection R^d -> interior (sigmoid per coordinate for boxes, softmax for simplices)."""
        raise NotImplementedError

    def to_unconstrained(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def jacobian_t_mul(self, z: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        """J(z)^T g for x = from_unconstrained(z) (the chain rule of the reparameterised drift)."""
        raise NotImplementedError

    def grad_log_det_jacobian(self, z: torch.Tensor) -> torch.Tensor:
        """Gradient in z of log |det J(z)| (the entropy's change of variables)."""
        raise NotImplementedError

    # -- sampling and quadrature ---------------------------------------------------------------------------------
    def uniform(self, shape: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
        """Uniform points of shape (*shape, d)."""
        raise NotImplementedError

    def grid(self, n: int) -> Grid:
        """Midpoint quadrature with n cells per axis over the bounding box (volume 0 outside the domain)."""
        raise NotImplementedError

    @property
    def diameter(self) -> float:
        raise NotImplementedError

    def _grid_axes(self, lo: torch.Tensor, hi: torch.Tensor, n: int) -> tuple[tuple[torch.Tensor, ...], torch.Tensor]:
        if self.dim > 2:
            raise DomainError(f"quadrature grids are provided for dimension <= 2, not {self.dim}")
        if n < 2:
            raise DomainError(f"a grid needs at least 2 cells per axis, got {n}")
        axes = tuple(lo[k] + (hi[k] - lo[k]) * (torch.arange(n, dtype=DTYPE) + 0.5) / n for k in range(self.dim))
        mesh = torch.meshgrid(*axes, indexing="ij")
        return axes, torch.stack([m.reshape(-1) for m in mesh], dim=-1)


class Box(Domain):
    """The box [lo, hi]^d (``lo``, ``hi`` scalars or length-d sequences)."""

    name = "box"

    def __init__(self, lo: float | list[float] = 0.0, hi: float | list[float] = 1.0, dim: int | None = None):
        lo_t, hi_t = torch.as_tensor(lo, dtype=DTYPE).reshape(-1), torch.as_tensor(hi, dtype=DTYPE).reshape(-1)
        d = dim if dim is not None else max(len(lo_t), len(hi_t))
        if not isinstance(d, int) or d < 1:
            raise DomainError(f"dim must be a positive integer, got {d!r}")
        if len(lo_t) not in (1, d) or len(hi_t) not in (1, d):
            raise DomainError(f"lo and hi must be scalars or of length dim = {d}")
        self.lo, self.hi, self.dim = lo_t.expand(d).clone(), hi_t.expand(d).clone(), d
        if not (torch.isfinite(self.lo).all() and torch.isfinite(self.hi).all()):
            raise DomainError("box bounds must be finite (an unbounded domain needs no constraint: use MFLD)")
        if not (self.lo < self.hi).all():
            raise DomainError(
                f"a box needs lo < hi in every coordinate, got lo={self.lo.tolist()}, hi={self.hi.tolist()}"
            )
        self.width = self.hi - self.lo

    def __repr__(self) -> str:
        lo, hi = self.lo.tolist(), self.hi.tolist()
        if len(set(lo)) == 1 and len(set(hi)) == 1:
            return f"Box({lo[0]:g}, {hi[0]:g}, dim={self.dim})"
        return f"Box({lo}, {hi})"

    def boundary_distance(self, x: torch.Tensor) -> torch.Tensor:
        return torch.minimum(x - self.lo, self.hi - x).amin(dim=-1)

    def project(self, x: torch.Tensor) -> torch.Tensor:
        return torch.minimum(torch.maximum(x, self.lo), self.hi)

    def reflect(self, x: torch.Tensor) -> torch.Tensor:
        # Fold R onto [lo, hi] by the triangle wave: exact for any overshoot, not only one reflection.
        u = torch.remainder(x - self.lo, 2 * self.width)
        return self.lo + torch.where(u <= self.width, u, 2 * self.width - u)

    def from_unconstrained(self, z: torch.Tensor) -> torch.Tensor:
        return self.lo + self.width * torch.sigmoid(z)

    def to_unconstrained(self, x: torch.Tensor) -> torch.Tensor:
        u = (x - self.lo) / self.width
        return torch.log(u) - torch.log1p(-u)

    def jacobian_t_mul(self, z: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        s = torch.sigmoid(z)
        return self.width * s * (1 - s) * g

    def grad_log_det_jacobian(self, z: torch.Tensor) -> torch.Tensor:
        return 1 - 2 * torch.sigmoid(z)  # d/dz [log s + log(1 - s)]

    def uniform(self, shape: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
        return self.lo + self.width * torch.rand(*shape, self.dim, generator=generator, dtype=DTYPE)

    def grid(self, n: int) -> Grid:
        axes, points = self._grid_axes(self.lo, self.hi, n)
        volume = float(torch.prod(self.width / n))
        return Grid(axes, points, torch.full((len(points),), volume, dtype=DTYPE))

    @property
    def diameter(self) -> float:
        return float(torch.linalg.vector_norm(self.width))


class Simplex(Domain):
    """The corner simplex {x in R^d : x_k > 0, sum_k x_k < 1}: the probability simplex in R^(d+1) written in its
    first d coordinates (x_(d+1) = 1 - sum x is the slack)."""

    name = "simplex"

    def __init__(self, dim: int = 2):
        if not isinstance(dim, int) or dim < 1:
            raise DomainError(f"dim must be a positive integer, got {dim!r}")
        self.dim = dim

    def __repr__(self) -> str:
        return f"Simplex(dim={self.dim})"

    @staticmethod
    def slack(x: torch.Tensor) -> torch.Tensor:
        return 1 - x.sum(dim=-1)

    def boundary_distance(self, x: torch.Tensor) -> torch.Tensor:
        return torch.minimum(x.amin(dim=-1), self.slack(x) / math.sqrt(self.dim))

    def project(self, x: torch.Tensor) -> torch.Tensor:
        # KKT: x = max(v - tau, 0) with tau >= 0; tau = 0 if the clamp already satisfies sum <= 1, else the
        # probability-simplex projection (sort-based threshold, Duchi et al. 2008), vectorised over points.
        clamped = x.clamp_min(0)
        u, _ = torch.sort(x, dim=-1, descending=True)
        css = u.cumsum(dim=-1) - 1
        k = torch.arange(1, self.dim + 1, dtype=DTYPE)
        rho = ((u - css / k) > 0).sum(dim=-1, keepdim=True)
        tau = css.gather(-1, rho - 1) / rho
        on_face = (x - tau).clamp_min(0)
        return torch.where((clamped.sum(dim=-1, keepdim=True) <= 1), clamped, on_face)

    def from_unconstrained(self, z: torch.Tensor) -> torch.Tensor:
        full = torch.cat([z, torch.zeros_like(z[..., :1])], dim=-1)
        return torch.softmax(full, dim=-1)[..., :-1]

    def to_unconstrained(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(x) - torch.log(self.slack(x)).unsqueeze(-1)

    def jacobian_t_mul(self, z: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        x = self.from_unconstrained(z)  # J = diag(x) - x x^T (symmetric)
        return x * g - x * (x * g).sum(dim=-1, keepdim=True)

    def grad_log_det_jacobian(self, z: torch.Tensor) -> torch.Tensor:
        return 1 - (self.dim + 1) * self.from_unconstrained(z)  # log det J = sum_{k <= d+1} log x_k

    def uniform(self, shape: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
        e = -torch.log(torch.rand(*shape, self.dim + 1, generator=generator, dtype=DTYPE))
        return (e / e.sum(dim=-1, keepdim=True))[..., :-1]

    def grid(self, n: int) -> Grid:
        # Cells of the unit square's grid: inside (volume h^d), cut by the face sum x = 1 (the diagonal cells of a
        # 2-D grid: half a cell, centre on the face) or outside (volume 0).
        lo, hi = torch.zeros(self.dim, dtype=DTYPE), torch.ones(self.dim, dtype=DTYPE)
        axes, points = self._grid_axes(lo, hi, n)
        index_sum = torch.round(points * n - 0.5).sum(dim=-1)
        h = 1.0 / n
        volumes = torch.where(index_sum < n - 1, h**self.dim, torch.where(index_sum == n - 1, h**self.dim / 2, 0.0))
        return Grid(axes, points, volumes.to(DTYPE))

    @property
    def diameter(self) -> float:
        return math.sqrt(2.0)


def check_points(x: object, domain: Domain, name: str = "init", *, closed: bool = False) -> torch.Tensor:
    """User points as a float64 tensor of shape (..., N, d) inside the domain, or one clear ``DomainError``.

    A 1-D input is read as N points of a 1-D domain. ``closed=True`` admits boundary points (projection)."""
    try:
        t = torch.as_tensor(x, dtype=DTYPE)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise DomainError(
            f"{name} must be an array of points of shape (N, {domain.dim}), got {type(x).__name__}"
        ) from exc
    if t.ndim == 1 and domain.dim == 1:
        t = t.unsqueeze(-1)
    if t.ndim < 2 or t.shape[-1] != domain.dim:
        raise DomainError(
            f"{name} must have shape (N, {domain.dim}) or (replicas, N, {domain.dim}), got {tuple(t.shape)}"
        )
    if t.shape[-2] == 0:
        raise DomainError(f"{name} is empty: at least one particle is needed")
    if not torch.isfinite(t).all():
        raise DomainError(f"{name} contains NaN or infinite coordinates")
    dist = domain.boundary_distance(t)
    outside = (dist < 0) if closed else (dist <= 0)
    if outside.any():
        where = "outside the closed" if closed else "outside the open interior of the"
        raise DomainError(
            f"{int(outside.sum())} of {outside.numel()} points of {name} lie {where} {domain!r} "
            f"(worst signed distance to the boundary {float(dist.min()):.3g}); the mirror map is defined on the "
            "interior only"
        )
    return t
