"""Particle solvers: mirror MFLD and the baselines, one Euler-Maruyama step for all particles (and replicas) at once.

All solvers share one signature, ``Solver(objective, domain_or_mirror, lam, step, n_particles, *, n_replicas, seed)``,
and ``run(n_steps, init=None, record_every=None, callback=None) -> MFLDResult``. With the same seed every solver
starts from the same uniform particles (paired comparisons); the Gaussian draws then follow the same stream.

- ``MirrorMFLD``: Y <- Y - step * g(X) + sqrt(2 lam step) * Hess phi(X)^(1/2) xi;  X <- grad phi*(Y), with
  g(X_i) = grad_x (delta F / delta mu)(mu_N)(X_i) the mean-field drift of the empirical measure mu_N.
- ``ProjectedMFLD``: X <- Proj_X(X - step * g(X) + sqrt(2 lam step) xi) (Euclidean projection; boxes and simplices).
- ``ReflectedMFLD``: the same step folded back into a box by reflection (exact in continuous time; boxes only).
- ``ReparameterizedMFLD``: unconstrained MFLD on Z with X = s(Z) (sigmoid / softmax): the drift is
  J(Z)^T g(X) - lam grad log|det J(Z)|, so the law of s(Z) has the same stationary point mu*.
- ``MFLD``: plain MFLD ignoring the constraint (the objective is evaluated outside X); reports infeasibility.

Stability. Each step's displacement is measured in the solver's own metric: the Dikin (local) norm
||dY||_(Hess phi(X)^(-1)) for the mirror step (the barrier's unit ellipsoid lies inside X), the step length over the
domain's diameter for Euclidean steps, and z-units for the reparameterised one. A root-mean-square ratio above
``max_step_ratio`` (0.5: half the Dikin radius per step) is an unstable step size and raises ``StepSizeError``,
before the run (noise alone: sqrt(2 lam step d)) or at the first step (drift and noise).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from icml26.probabilistic.mmfld.domains import DTYPE, Box, Domain, DomainError, check_points
from icml26.probabilistic.mmfld.mirrors import MirrorMap, default_mirror

__all__ = [
    "MFLD",
    "BoundaryHitError",
    "MFLDResult",
    "MirrorMFLD",
    "ProjectedMFLD",
    "ReflectedMFLD",
    "ReparameterizedMFLD",
    "StepSizeError",
]

BOUNDARY_TOL = 1e-9


class StepSizeError(ValueError):
    """A step size that breaks the discretisation's stability (see the module docstring)."""


class BoundaryHitError(FloatingPointError):
    """A particle of an interior-point scheme reached the boundary (the mirror map is not defined there)."""


@dataclass
class MFLDResult:
    """Final particles ((N, d), or (R, N, d) with replicas) and the recorded history: ``step``, ``time``,
    ``objective`` (F of each replica's empirical measure), ``boundary_mass`` (fraction within 1e-9 of the boundary),
    ``infeasible_fraction`` and ``mean``, one row per record."""

    method: str
    particles: torch.Tensor
    lam: float
    step: float
    n_steps: int
    history: dict[str, np.ndarray] = field(default_factory=dict)

    def __repr__(self) -> str:
        shape = tuple(self.particles.shape)
        last = {k: np.round(v[-1], 4).tolist() for k, v in self.history.items() if k in ("objective", "boundary_mass")}
        return f"MFLDResult({self.method}, particles={shape}, steps={self.n_steps}, last={last})"

    @property
    def time(self) -> np.ndarray:
        return self.history["time"]


class _Solver:
    """Shared set-up, validation, recording and the run loop; subclasses define ``_start`` and ``_advance``."""

    method = "solver"
    closed_init = False  # whether initial points may lie on the boundary

    def __init__(
        self,
        objective: Any,
        domain: Domain | MirrorMap,
        lam: float = 0.05,
        step: float = 0.01,
        n_particles: int = 500,
        *,
        n_replicas: int | None = None,
        seed: int = 0,
        max_step_ratio: float = 0.5,
    ):
        if not (hasattr(objective, "first_variation_grad") and hasattr(objective, "value")):
            raise TypeError(
                f"objective must provide first_variation_grad(x) and value(particles), got {type(objective).__name__}"
            )
        if isinstance(domain, MirrorMap):
            self.mirror: MirrorMap | None = domain
            domain = domain.domain
        else:
            self.mirror = None
        if not isinstance(domain, Domain):
            raise DomainError(f"unsupported domain {domain!r}: give a Box, a Simplex or a mirror map on one")
        for name, v in (("lam", lam), ("step", step)):
            if not (isinstance(v, int | float) and math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a positive finite number, got {v!r}")
        if not (isinstance(n_particles, int) and n_particles >= 1):
            raise ValueError(f"n_particles must be a positive integer, got {n_particles!r}")
        if n_replicas is not None and not (isinstance(n_replicas, int) and n_replicas >= 1):
            raise ValueError(f"n_replicas must be None or a positive integer, got {n_replicas!r}")
        self.objective, self.domain = objective, domain
        self.lam, self.step, self.n_particles, self.n_replicas = float(lam), float(step), n_particles, n_replicas
        self.seed, self.max_step_ratio = int(seed), float(max_step_ratio)
        self.noise_scale = math.sqrt(2 * self.lam * self.step)
        noise_ratio = self.noise_scale * math.sqrt(domain.dim) / self._length_scale()
        if noise_ratio > self.max_step_ratio:
            raise StepSizeError(self._unstable_message(noise_ratio, "the noise alone"))

    # -- hooks ---------------------------------------------------------------------------------------------------
    def _length_scale(self) -> float:
        return self.domain.diameter

    def _start(self, x: torch.Tensor) -> Any:
        return x

    def _advance(self, state: Any, x: torch.Tensor, gen: torch.Generator) -> tuple[Any, torch.Tensor, torch.Tensor]:
        """One step: (new state, new particles, squared displacement ratio per particle)."""
        raise NotImplementedError

    # -- helpers -------------------------------------------------------------------------------------------------
    def _unstable_message(self, ratio: float, what: str) -> str:
        safe = self.step * (self.max_step_ratio / ratio) ** 2
        return (
            f"step={self.step:g} breaks the stability of {self.method}: {what} moves particles {ratio:.3g} "
            f"(root mean square) of the method's unit length per step, above max_step_ratio={self.max_step_ratio:g} "
            f"(lam={self.lam:g}); use step <= {safe:.3g}"
        )

    def _drift(self, x: torch.Tensor) -> torch.Tensor:
        try:
            g = self.objective.first_variation_grad(x)
        except RuntimeError as exc:  # a shape clash inside the objective (its potential or data in another dimension)
            raise ValueError(
                f"the objective's drift failed on particles of shape {tuple(x.shape)} ({exc}): "
                f"is the objective defined in dimension {self.domain.dim}?"
            ) from exc
        if g.shape != x.shape:
            raise ValueError(
                f"the objective's drift has shape {tuple(g.shape)} for particles of shape {tuple(x.shape)}: "
                f"is the objective defined in dimension {self.domain.dim}?"
            )
        return g

    def _normal(self, x: torch.Tensor, dim: int, gen: torch.Generator) -> torch.Tensor:
        return torch.randn(*x.shape[:-1], dim, generator=gen, dtype=DTYPE)

    def _initial(self, init: object, gen: torch.Generator) -> torch.Tensor:
        if init is None:
            shape = (self.n_particles,) if self.n_replicas is None else (self.n_replicas, self.n_particles)
            return self.domain.uniform(shape, gen)
        return check_points(init, self.domain, "init", closed=self.closed_init)

    def _record(self, hist: dict[str, list], k: int, x: torch.Tensor) -> None:
        dist = self.domain.boundary_distance(x)
        hist["step"].append(k)
        hist["time"].append(k * self.step)
        hist["objective"].append(self.objective.value(x).numpy().copy())
        hist["boundary_mass"].append((dist.abs() <= BOUNDARY_TOL).double().mean(dim=-1).numpy().copy())
        hist["infeasible_fraction"].append((dist < 0).double().mean(dim=-1).numpy().copy())
        hist["mean"].append(x.mean(dim=-2).numpy().copy())

    # -- public --------------------------------------------------------------------------------------------------
    def run(
        self,
        n_steps: int,
        init: object = None,
        *,
        record_every: int | None = None,
        callback: Callable[[int, torch.Tensor], None] | None = None,
    ) -> MFLDResult:
        """Run ``n_steps`` steps from ``init`` (points inside the domain; uniform by default). History and
        ``callback(step, particles)`` at step 0, every ``record_every`` steps (default: about 100 records) and the
        last step."""
        if not (isinstance(n_steps, int) and n_steps >= 0):
            raise ValueError(f"n_steps must be a non-negative integer, got {n_steps!r}")
        every = record_every if record_every is not None else max(1, n_steps // 100)
        if not (isinstance(every, int) and every >= 1):
            raise ValueError(f"record_every must be a positive integer, got {record_every!r}")
        gen = torch.Generator().manual_seed(self.seed)
        x = self._initial(init, gen)
        state = self._start(x)
        hist: dict[str, list] = {k: [] for k in ("step", "time", "objective", "boundary_mass", "infeasible_fraction")}
        hist["mean"] = []
        with torch.no_grad():
            self._record(hist, 0, x)
            if callback is not None:
                callback(0, x)
            for k in range(1, n_steps + 1):
                state, x, ratio_sq = self._advance(state, x, gen)
                if k == 1 or k % every == 0:
                    if not torch.isfinite(x).all():
                        raise StepSizeError(f"{self.method} diverged (non-finite particles) at step {k}")
                    ratio = float(ratio_sq.mean().sqrt())
                    if ratio > self.max_step_ratio:
                        raise StepSizeError(self._unstable_message(ratio, f"drift and noise (at step {k})"))
                if k % every == 0 or k == n_steps:
                    self._record(hist, k, x)
                    if callback is not None:
                        callback(k, x)
        history = {k: np.asarray(v) for k, v in hist.items()}
        return MFLDResult(self.method, x, self.lam, self.step, n_steps, history)


class MirrorMFLD(_Solver):
    """Mirror mean-field Langevin dynamics (the log-barrier of the domain by default; any ``MirrorMap``).

    Feasibility is structural: X = grad phi*(Y) lies in the open domain for every finite Y; a particle that
    reaches the boundary in floating point (entropic maps under a large step) raises ``BoundaryHitError``."""

    method = "mmfld"

    def __init__(self, objective: Any, mirror: MirrorMap | Domain, *args: Any, **kwargs: Any):
        if isinstance(mirror, Domain):
            mirror = default_mirror(mirror)
        if not isinstance(mirror, MirrorMap):
            raise DomainError(f"unsupported domain or mirror map {mirror!r}: give a Box, a Simplex or a MirrorMap")
        super().__init__(objective, mirror, *args, **kwargs)

    def _length_scale(self) -> float:
        return 1.0  # the Dikin ellipsoid's radius

    def _start(self, x: torch.Tensor) -> torch.Tensor:
        assert self.mirror is not None
        return self.mirror.grad(x)

    def _advance(
        self, y: torch.Tensor, x: torch.Tensor, gen: torch.Generator
    ) -> tuple[Any, torch.Tensor, torch.Tensor]:
        mirror = self.mirror
        assert mirror is not None
        xi = self._normal(x, mirror.noise_dim, gen)
        dy = -self.step * self._drift(x) + self.noise_scale * mirror.hess_sqrt_mul(x, xi)
        y = y + dy
        x_new = mirror.grad_conj(y)
        inside = self.domain.boundary_distance(x_new) > 0
        if not bool(inside.all()):
            raise BoundaryHitError(
                f"{int((~inside).sum())} particle(s) reached the boundary of {self.domain!r} under {mirror!r} "
                f"(step={self.step:g}); a non-self-concordant map (entropic) is unstable under Euler-Maruyama near "
                "the boundary: use the log-barrier map or a smaller step"
            )
        return y, x_new, mirror.local_norm_sq(x, dy)


class _EuclideanSolver(_Solver):
    """An Euler-Maruyama step in x, then ``_fold`` back onto the domain (the baselines differ only there)."""

    closed_init = True  # initial points may lie on the boundary

    def _fold(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def _advance(self, state: Any, x: torch.Tensor, gen: torch.Generator) -> tuple[Any, torch.Tensor, torch.Tensor]:
        dx = -self.step * self._drift(x) + self.noise_scale * self._normal(x, self.domain.dim, gen)
        x_new = self._fold(x + dx)
        return x_new, x_new, (dx * dx).sum(dim=-1) / self.domain.diameter**2


class ProjectedMFLD(_EuclideanSolver):
    """Euler-Maruyama step, then the Euclidean projection onto the closed domain (boxes and simplices)."""

    method = "projected"

    def _fold(self, x: torch.Tensor) -> torch.Tensor:
        return self.domain.project(x)


class ReflectedMFLD(_EuclideanSolver):
    """Euler-Maruyama step folded back into a box by reflection at the faces (boxes only)."""

    method = "reflected"

    def __init__(self, objective: Any, domain: Domain | MirrorMap, *args: Any, **kwargs: Any):
        dom = domain.domain if isinstance(domain, MirrorMap) else domain
        if not isinstance(dom, Box):
            raise DomainError(f"ReflectedMFLD supports boxes only, not {dom!r}; use ProjectedMFLD or MirrorMFLD")
        super().__init__(objective, domain, *args, **kwargs)

    def _fold(self, x: torch.Tensor) -> torch.Tensor:
        return self.domain.reflect(x)


class MFLD(_EuclideanSolver):
    """Plain MFLD that ignores the constraint (the objective must be defined outside the domain)."""

    method = "mfld"


class ReparameterizedMFLD(_Solver):
    """Unconstrained MFLD in z with x = s(z) (sigmoid per coordinate on a box, softmax on a simplex), the entropy
    carried over by the log-Jacobian: the drift is J^T g(x) - lam grad_z log|det J|."""

    method = "reparameterized"

    def _length_scale(self) -> float:
        return 1.0  # z-units: the sigmoid / softmax changes over O(1) in z

    def _start(self, x: torch.Tensor) -> torch.Tensor:
        return self.domain.to_unconstrained(x)

    def _advance(
        self, z: torch.Tensor, x: torch.Tensor, gen: torch.Generator
    ) -> tuple[Any, torch.Tensor, torch.Tensor]:
        drift = self.domain.jacobian_t_mul(z, self._drift(x)) - self.lam * self.domain.grad_log_det_jacobian(z)
        dz = -self.step * drift + self.noise_scale * self._normal(z, self.domain.dim, gen)
        z = z + dz
        return z, self.domain.from_unconstrained(z), (dz * dz).sum(dim=-1)
