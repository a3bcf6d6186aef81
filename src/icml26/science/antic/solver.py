"""Pseudo-spectral 2-D incompressible Navier-Stokes on the periodic square [0, 2 pi)^2 (vorticity-streamfunction).

    d omega/dt + u . grad omega = nu lap omega - alpha omega + f,   lap psi = -omega,   u = (d psi/dy, -d psi/dx)

Kolmogorov forcing ``A sin(k_f y)`` on the x-momentum enters the vorticity equation as ``f = -A k_f cos(k_f y)``; the
laminar fixed point is ``omega = -A cos(k_f y) / (nu k_f)`` (drag 0). Time stepping: classical RK4 on the
advection with an integrating factor ``exp((-nu k^2 - alpha) dt)`` for the linear terms and the forcing (both
exact, so the only stability limit is advective: the CFL number ``max|u| dt / dx``). Products are dealiased by the
2/3 rule.
Arrays are indexed ``omega[y, x]``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

__all__ = ["CFLError", "KolmogorovFlow2D", "taylor_green_vorticity"]

CFL_LIMIT = 1.0  # RK4's advective limit is about 2.8/pi ~ 0.9 per unit CFL in 1-D; above 1 we refuse


class CFLError(ValueError):
    """The time step violates the advective CFL limit (the run would blow up or give wrong numbers)."""


def _check_field(omega: np.ndarray, n: int) -> np.ndarray:
    omega = np.asarray(omega, dtype=np.float64)
    if omega.ndim != 2 or omega.shape[0] != omega.shape[1]:
        raise ValueError(f"the solver runs on square grids only; got a field of shape {omega.shape}")
    if omega.shape != (n, n):
        raise ValueError(f"field of shape {omega.shape} does not match the solver's {n}x{n} grid")
    if not np.isfinite(omega).all():
        raise ValueError("the vorticity field contains NaN or infinite values")
    return omega


def taylor_green_vorticity(n: int, k: int = 1, amplitude: float = 1.0) -> np.ndarray:
    """Taylor-Green vortex ``omega = 2 k A sin(k x) sin(k y)``: an exact solution that decays as exp(-2 nu k^2 t)."""
    x = 2 * np.pi * np.arange(n) / n
    return 2 * k * amplitude * np.sin(k * x)[None, :] * np.sin(k * x)[:, None]


@dataclass
class _Spectral:
    n: int

    def __post_init__(self) -> None:
        n = self.n
        self.ky = (np.fft.fftfreq(n, 1.0 / n))[:, None]
        self.kx = (np.fft.rfftfreq(n, 1.0 / n))[None, :]
        self.k2 = self.kx**2 + self.ky**2
        self.inv_k2 = np.where(self.k2 > 0, 1.0 / np.where(self.k2 > 0, self.k2, 1.0), 0.0)
        cut = n / 3.0  # 2/3 rule: keep |k| < n/3 in each direction
        self.dealias = (np.abs(self.kx) < cut) & (np.abs(self.ky) < cut)


class KolmogorovFlow2D:
    """Forced Kolmogorov flow (``forcing=True``) or decaying 2-D turbulence (``forcing=False``) on an n x n grid.

    ``re`` is 1/nu (the forcing amplitude is 1 so Re = 1/nu as in Farazmand & Sapsis 2017); ``drag`` is a linear
    friction alpha. ``dt=None`` picks ``cfl * dx / U`` with U the laminar velocity amplitude Re / k_f^2 (forced) or the
    initial max |u| (decaying). Construction refuses a step above the CFL limit, and every step checks it again.
    ``seed`` draws the initial perturbation (forced: laminar state + 1% noise at low wavenumbers; decaying: a random
    field with energy peaked at ``k0``).
    """

    def __init__(
        self,
        n: int = 64,
        re: float = 40.0,
        kf: int = 4,
        drag: float = 0.0,
        dt: float | None = None,
        *,
        forcing: bool = True,
        cfl: float = 0.4,
        seed: int = 0,
        k0: float = 4.0,
        omega0: np.ndarray | None = None,
    ) -> None:
        if not isinstance(n, int | np.integer) or n < 8 or n % 2:
            raise ValueError(f"n must be an even integer >= 8 (square n x n grid), got {n!r}")
        if not (np.isfinite(re) and re > 0):
            raise ValueError(f"re = 1/nu must be positive, got {re!r}")
        if drag < 0 or not np.isfinite(drag):
            raise ValueError(f"drag must be >= 0, got {drag!r}")
        self.n, self.re, self.nu, self.kf, self.drag, self.forcing = int(n), float(re), 1.0 / re, int(kf), drag, forcing
        self.dx = 2 * np.pi / n
        self.sp = _Spectral(self.n)
        y = self.dx * np.arange(n)
        self.f_hat = np.fft.rfft2(np.broadcast_to((-self.kf * np.cos(self.kf * y))[:, None], (n, n))) if forcing else 0
        rng = np.random.default_rng(seed)
        if omega0 is not None:
            omega = _check_field(omega0, self.n)
        elif forcing:
            omega = self.laminar() + 0.01 * self._random_field(rng, 2.0) * np.abs(self.laminar()).max()
        else:
            omega = self._random_field(rng, k0) * 10.0
        self.w_hat = np.fft.rfft2(omega) * self.sp.dealias
        if dt is None:
            u_scale = self.re / self.kf**2 if forcing else max(self.max_velocity(), 1e-6)
            dt = cfl * self.dx / u_scale
        self.dt = float(dt)
        if not (np.isfinite(self.dt) and self.dt > 0):
            raise ValueError(f"dt must be a positive number, got {dt!r}")
        self._check_cfl(self.max_velocity())
        if forcing:  # the laminar flow's amplitude is what a forced run will reach: refuse a step it cannot take
            self._check_cfl(self.re / self.kf**2, "the laminar Kolmogorov flow's velocity Re/k_f^2")
        self.t = 0.0
        lin = -self.nu * self.sp.k2 - drag
        self.e_half, self.e_full = np.exp(lin * self.dt / 2), np.exp(lin * self.dt)
        safe = np.where(lin != 0, lin, 1.0)
        self.w_stokes = np.where(lin != 0, -self.f_hat / safe, 0.0) if forcing else np.zeros_like(self.w_hat)

    # ------------------------------------------------------------------ fields
    def _random_field(self, rng: np.random.Generator, k0: float) -> np.ndarray:
        k = np.sqrt(self.sp.k2)
        amp = k * np.exp(-((k / k0) ** 2)) * self.sp.dealias
        phase = np.exp(2j * np.pi * rng.random(amp.shape))
        w = np.fft.irfft2(amp * phase * self.n**2, s=(self.n, self.n))
        return w / np.abs(w).max()

    def laminar(self) -> np.ndarray:
        """The laminar fixed point -cos(k_f y)/(nu k_f) (without drag), on the grid."""
        y = self.dx * np.arange(self.n)
        return np.broadcast_to((-np.cos(self.kf * y) / (self.nu * self.kf))[:, None], (self.n, self.n)).copy()

    @property
    def omega(self) -> np.ndarray:
        return np.fft.irfft2(self.w_hat, s=(self.n, self.n))

    def velocity(self, omega: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        w_hat = self.w_hat if omega is None else np.fft.rfft2(_check_field(omega, self.n))
        psi = w_hat * self.sp.inv_k2
        s = (self.n, self.n)
        return np.fft.irfft2(1j * self.sp.ky * psi, s=s), np.fft.irfft2(-1j * self.sp.kx * psi, s=s)

    def max_velocity(self) -> float:
        u, v = self.velocity()
        return float(np.sqrt(u**2 + v**2).max())

    def energy(self, omega: np.ndarray | None = None) -> float:
        u, v = self.velocity(omega)
        return float(0.5 * np.mean(u**2 + v**2))

    def enstrophy(self, omega: np.ndarray | None = None) -> float:
        """Z = mean(omega^2) / 2."""
        w = self.omega if omega is None else _check_field(omega, self.n)
        return float(0.5 * np.mean(w**2))

    def dissipation(self, omega: np.ndarray | None = None) -> float:
        """Viscous dissipation nu mean|grad u|^2 = nu mean(omega^2) on the periodic square (plus drag 2 alpha E)."""
        return 2 * self.nu * self.enstrophy(omega) + 2 * self.drag * self.energy(omega)

    def injection(self, omega: np.ndarray | None = None) -> float:
        """Power of the forcing, mean(sin(k_f y) u): dE/dt = injection - dissipation."""
        if not self.forcing:
            return 0.0
        u, _ = self.velocity(omega)
        y = self.dx * np.arange(self.n)
        return float(np.mean(np.sin(self.kf * y)[:, None] * u))

    # ------------------------------------------------------------------ stepping
    def _check_cfl(self, umax: float, what: str = "max |u|") -> None:
        c = umax * self.dt / self.dx
        if not np.isfinite(c) or c > CFL_LIMIT:
            raise CFLError(
                f"unstable time step: CFL = {what} * dt / dx = {umax:.3g} * {self.dt:.3g} / {self.dx:.3g} = {c:.3g} "
                f"> {CFL_LIMIT}; use dt <= {CFL_LIMIT * self.dx / max(umax, 1e-12):.3g} (or dt=None)"
            )

    def _rhs(self, w_hat: np.ndarray, check: bool = False) -> np.ndarray:
        sp, s = self.sp, (self.n, self.n)
        psi = w_hat * sp.inv_k2
        u = np.fft.irfft2(1j * sp.ky * psi, s=s)
        v = np.fft.irfft2(-1j * sp.kx * psi, s=s)
        if check:
            self._check_cfl(float(np.sqrt((u**2 + v**2).max())))
        wx = np.fft.irfft2(1j * sp.kx * w_hat, s=s)
        wy = np.fft.irfft2(1j * sp.ky * w_hat, s=s)
        return -np.fft.rfft2(u * wx + v * wy) * sp.dealias

    def step(self, n_steps: int = 1) -> None:
        """Advance ``n_steps`` steps of IF-RK4 on the departure v = omega - omega_s from the Stokes solution
        omega_s = -f / L (L = -nu k^2 - alpha): the linear terms and the forcing are then integrated exactly (an
        integrating factor alone would shift the forced fixed point at large nu k^2 dt), RK4 carries the advection."""
        eh, ef, dt, ws = self.e_half, self.e_full, self.dt, self.w_stokes
        for _ in range(n_steps):
            v = self.w_hat - ws
            a = self._rhs(v + ws, check=True)
            b = self._rhs(eh * (v + 0.5 * dt * a) + ws)
            c = self._rhs(eh * v + 0.5 * dt * b + ws)
            d = self._rhs(ef * v + dt * eh * c + ws)
            self.w_hat = ef * v + dt / 6 * (ef * a + 2 * eh * (b + c) + d) + ws
            self.t += dt
        if not np.isfinite(self.w_hat).all():
            raise FloatingPointError("the run produced NaN/inf vorticity (time step too large for this flow?)")

    def advance(self, duration: float) -> None:
        self.step(round(duration / self.dt))

    def run(self, t_end: float, every: float) -> Iterator[tuple[float, np.ndarray]]:
        """Stream ``(t, omega)`` snapshots every ``every`` time units from the current time until ``t_end``
        (the current state first); ``every`` must be a multiple of dt (to 1e-9)."""
        if every <= 0:
            raise ValueError(f"every must be positive, got {every!r}")
        per = every / self.dt
        if abs(per - round(per)) > 1e-6 * per:
            raise ValueError(f"every = {every} is not a multiple of dt = {self.dt}")
        per = round(per)
        while self.t <= t_end + 1e-9 * max(1.0, t_end):
            yield self.t, self.omega
            self.step(per)

    def snapshots(self, n_frames: int, every: float) -> np.ndarray:
        """``n_frames`` snapshots every ``every`` time units as one float32 array (T, n, n)."""
        out = np.empty((n_frames, self.n, self.n), np.float32)
        per = round(every / self.dt)
        for i in range(n_frames):
            out[i] = self.omega
            if i + 1 < n_frames:
                self.step(per)
        return out
