"""Hierarchical simulators of the benchmark: a global theta_g, exchangeable site parameters theta_s | theta_g and
site observations x_s | theta_g, theta_s (possibly function-valued, observed at site-specific inputs t).

Every task works in unconstrained coordinates (log sigma, log gamma, log beta), so that every method and every
metric sees one space. Every call of ``simulate_sites`` is charged to ``n_calls``: one call per simulated site.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

__all__ = ["HierGaussian", "HierSIR", "HierarchicalTask", "ReferencePosterior", "SiteData"]


@dataclass(frozen=True)
class SiteData:
    """A batch of simulations: ``theta_global [N, Dg]``, ``theta_local [N, S, Dl]``, ``x [N, S, n_obs]`` and the
    functional inputs ``times [N, S, n_obs]`` (zeros for scalar, exchangeable observations)."""

    theta_global: torch.Tensor
    theta_local: torch.Tensor
    x: torch.Tensor
    times: torch.Tensor

    @property
    def theta(self) -> torch.Tensor:
        """Flat parameters ``[N, Dg + S * Dl]``: the global ones first, then the sites' in site order."""
        return torch.cat([self.theta_global, self.theta_local.flatten(1)], dim=1)

    def site(self, s: int) -> SiteData:
        sl = slice(s, s + 1)
        return SiteData(self.theta_global, self.theta_local[:, sl], self.x[:, sl], self.times[:, sl])


@dataclass
class HierarchicalTask:
    """Base class: a hierarchical prior in unconstrained coordinates and a call-counted site simulator."""

    n_sites: int = 5
    n_calls: int = field(default=0, init=False)
    global_names: tuple[str, ...] = ()
    local_names: tuple[str, ...] = ()

    @property
    def dim_global(self) -> int:
        return len(self.global_names)

    @property
    def dim_local(self) -> int:
        return len(self.local_names)

    @property
    def n_obs(self) -> int:
        raise NotImplementedError

    # -- prior (unconstrained) ------------------------------------------------------------------------------
    def sample_global(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        raise NotImplementedError

    def sample_local(
        self, theta_global: torch.Tensor, n_sites: int, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        raise NotImplementedError

    def log_prior(self, theta_global: torch.Tensor, theta_local: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    # -- simulator ----------------------------------------------------------------------------------------
    def _simulate(
        self, theta_global: torch.Tensor, theta_local: torch.Tensor, generator: torch.Generator | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    def simulate_sites(
        self, theta_global: torch.Tensor, theta_local: torch.Tensor, generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """x, times ``[N, S, n_obs]`` for ``theta_local [N, S, Dl]``; charges N * S simulator calls."""
        if theta_local.ndim != 3 or theta_local.shape[-1] != self.dim_local:
            raise ValueError(f"theta_local must be [N, S, {self.dim_local}], got {tuple(theta_local.shape)}")
        self.n_calls += theta_local.shape[0] * theta_local.shape[1]
        return self._simulate(theta_global, theta_local, generator)

    def simulate(self, n: int, n_sites: int | None = None, generator: torch.Generator | None = None) -> SiteData:
        """Draw n hierarchical sets of ``n_sites`` sites (default ``self.n_sites``) from the prior and simulate."""
        n_sites = self.n_sites if n_sites is None else n_sites
        tg = self.sample_global(n, generator)
        tl = self.sample_local(tg, n_sites, generator)
        x, t = self.simulate_sites(tg, tl, generator)
        return SiteData(tg, tl, x, t)

    def simulate_single_sites(self, budget: int, generator: torch.Generator | None = None) -> SiteData:
        """``budget`` single-site simulations (fresh theta_g each): what likelihood-factorised training consumes."""
        return self.simulate(budget, 1, generator)

    def check_observation(self, x: torch.Tensor) -> None:
        """One clear error when observed data lie where the simulator puts no mass under any parameter."""
        if not torch.isfinite(x).all():
            raise ValueError("the observation contains NaN or inf")


# ---------------------------------------------------------------------------------------------- Gaussian
@dataclass
class HierGaussian(HierarchicalTask):
    """sigma ~ HalfNormal(1), mu_s ~ N(0, 1), x_sj ~ N(mu_s, sigma^2), j = 1..m (sbibm-fork's hierarchical Gaussian).

    Parameters: ``log_sigma`` (global), ``mu`` (local). The exact posterior is :meth:`reference_posterior`.
    """

    m_obs: int = 3
    global_names: tuple[str, ...] = ("log_sigma",)
    local_names: tuple[str, ...] = ("mu",)

    @property
    def n_obs(self) -> int:
        return self.m_obs

    def sample_global(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        return torch.randn(n, 1, generator=generator).abs().log()

    def sample_local(
        self, theta_global: torch.Tensor, n_sites: int, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        return torch.randn(theta_global.shape[0], n_sites, 1, generator=generator)

    def log_prior(self, theta_global: torch.Tensor, theta_local: torch.Tensor) -> torch.Tensor:
        ls = theta_global[..., 0]
        # HalfNormal(1) on sigma = exp(ls) plus the Jacobian ls
        lp = math.log(2.0) - 0.5 * math.log(2 * math.pi) - 0.5 * ls.exp() ** 2 + ls
        return lp + (-0.5 * theta_local[..., 0] ** 2 - 0.5 * math.log(2 * math.pi)).sum(-1)

    def _simulate(self, theta_global, theta_local, generator):
        sigma = theta_global[:, 0].exp()[:, None, None]
        noise = torch.randn(*theta_local.shape[:2], self.m_obs, generator=generator)
        x = theta_local[..., :1] + sigma * noise
        return x, torch.zeros_like(x)

    def reference_posterior(self, x: torch.Tensor, n: int, seed: int = 0, grid: int = 4000) -> torch.Tensor:
        """Exact posterior draws ``[n, 1 + S]`` (log sigma, mu_1..mu_S) given ``x [S, m]``.

        p(sigma | x) is proportional to HalfN(sigma) prod_s N(xbar_s; 0, 1 + sigma^2/m) sigma^-(m-1)
        exp(-SS_s / (2 sigma^2)); it is tabulated on a grid of log sigma (with the Jacobian) and sampled by
        inverse CDF with jitter inside a cell; given sigma, mu_s | x ~ N(m xbar_s / (sigma^2 + m),
        sigma^2 / (sigma^2 + m)).
        """
        return ReferencePosterior.gaussian(x, self.m_obs).sample(n, seed=seed, grid=grid)


@dataclass(frozen=True)
class ReferencePosterior:
    """The exact posterior of the hierarchical Gaussian for one observation ``x [S, m]``."""

    xbar: np.ndarray
    ss: np.ndarray
    m: int

    @classmethod
    def gaussian(cls, x: torch.Tensor, m: int) -> ReferencePosterior:
        xa = np.asarray(torch.as_tensor(x, dtype=torch.float64))
        if xa.ndim != 2 or xa.shape[1] != m:
            raise ValueError(f"x must be [S, {m}], got {xa.shape}")
        if not np.isfinite(xa).all():
            raise ValueError("the observation contains NaN or inf")
        xbar = xa.mean(1)
        return cls(xbar, ((xa - xbar[:, None]) ** 2).sum(1), m)

    def log_density_log_sigma(self, ls: np.ndarray) -> np.ndarray:
        """Unnormalised log p(log sigma | x) on an array of log sigma values."""
        s2 = np.exp(2 * ls)[:, None]
        var_bar = 1.0 + s2 / self.m
        lp = -0.5 * np.exp(2 * ls) + ls  # HalfNormal(1) in log sigma, with the Jacobian
        lp = lp + (-0.5 * np.log(var_bar) - 0.5 * self.xbar**2 / var_bar).sum(1)
        return lp + (-(self.m - 1) * 0.5 * np.log(s2) - self.ss / (2 * s2)).sum(1)

    def _grid(self, grid: int) -> tuple[np.ndarray, np.ndarray]:
        ls = np.linspace(-9.0, 4.0, grid)
        lp = self.log_density_log_sigma(ls)
        keep = lp > lp.max() - 40  # zoom onto the mass, then tabulate finely there
        ls = np.linspace(ls[keep].min() - 0.05, ls[keep].max() + 0.05, grid)
        w = np.exp(self.log_density_log_sigma(ls) - self.log_density_log_sigma(ls).max())
        return ls, w / w.sum()

    def moments_log_sigma(self, grid: int = 4000) -> tuple[float, float]:
        ls, w = self._grid(grid)
        mean = float((w * ls).sum())
        return mean, float(np.sqrt((w * (ls - mean) ** 2).sum()))

    def sample(self, n: int, seed: int = 0, grid: int = 4000) -> torch.Tensor:
        rng = np.random.default_rng(seed)
        ls_grid, w = self._grid(grid)
        step = ls_grid[1] - ls_grid[0]
        idx = rng.choice(grid, size=n, p=w)
        ls = ls_grid[idx] + (rng.random(n) - 0.5) * step
        s2 = np.exp(2 * ls)[:, None]
        post_var = s2 / (s2 + self.m)
        post_mean = self.m * self.xbar[None, :] / (s2 + self.m)
        mu = post_mean + np.sqrt(post_var) * rng.standard_normal((n, len(self.xbar)))
        return torch.as_tensor(np.concatenate([ls[:, None], mu], 1), dtype=torch.float32)


# --------------------------------------------------------------------------------------------------- SIR
@dataclass
class HierSIR(HierarchicalTask):
    """Hierarchical SIR with function-valued observations at irregular, site-specific times.

    gamma ~ LogNormal(log 0.125, 0.2) (global recovery rate); beta_s ~ LogNormal(log 0.4, 0.5) (site transmission);
    each site runs S' = -beta S I, I' = beta S I - gamma I (fractions, I(0) = ``i0``) for ``horizon`` days (RK4,
    step ``dt``); it is observed at ``n_times`` sorted Uniform(0, horizon) days drawn per site, as the prevalence
    Binomial(``population``, I(t)) / ``population``. Parameters: ``log_gamma`` (global), ``log_beta`` (local).
    A substitute for the paper's disease model (not available offline), as the notes propose.
    """

    n_times: int = 10
    horizon: float = 160.0
    population: int = 1000
    i0: float = 0.01
    dt: float = 0.5
    global_names: tuple[str, ...] = ("log_gamma",)
    local_names: tuple[str, ...] = ("log_beta",)

    @property
    def n_obs(self) -> int:
        return self.n_times

    def sample_global(self, n, generator=None):
        return math.log(0.125) + 0.2 * torch.randn(n, 1, generator=generator)

    def sample_local(self, theta_global, n_sites, generator=None):
        return math.log(0.4) + 0.5 * torch.randn(theta_global.shape[0], n_sites, 1, generator=generator)

    def log_prior(self, theta_global, theta_local):
        def normal(z, mu, sd):
            return -0.5 * ((z - mu) / sd) ** 2 - math.log(sd) - 0.5 * math.log(2 * math.pi)

        lp = normal(theta_global[..., 0], math.log(0.125), 0.2)
        return lp + normal(theta_local[..., 0], math.log(0.4), 0.5).sum(-1)

    def infected_curve(self, beta: torch.Tensor, gamma: torch.Tensor) -> torch.Tensor:
        """I(t) on the grid 0, dt, ..., horizon for every (beta, gamma) pair (broadcast), by RK4."""
        steps = round(self.horizon / self.dt)
        s = torch.full_like(beta, 1.0 - self.i0)
        i = torch.full_like(beta, self.i0)

        def f(s, i):
            new = beta * s * i
            return -new, new - gamma * i

        curve = [i]
        h = self.dt
        for _ in range(steps):
            k1 = f(s, i)
            k2 = f(s + 0.5 * h * k1[0], i + 0.5 * h * k1[1])
            k3 = f(s + 0.5 * h * k2[0], i + 0.5 * h * k2[1])
            k4 = f(s + h * k3[0], i + h * k3[1])
            s = s + h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
            i = i + h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
            curve.append(i)
        return torch.stack(curve, -1).clamp(0.0, 1.0)

    def _simulate(self, theta_global, theta_local, generator):
        n, n_sites = theta_local.shape[:2]
        beta = theta_local[..., 0].double().exp()
        gamma = theta_global[:, :1].double().exp().expand(n, n_sites)
        curve = self.infected_curve(beta, gamma)  # [N, S, steps + 1]
        times = torch.rand(n, n_sites, self.n_times, generator=generator).mul(self.horizon).sort(-1).values
        pos = times.double() / self.dt
        lo = pos.floor().long().clamp(max=curve.shape[-1] - 2)
        frac = pos - lo
        prev = torch.gather(curve, -1, lo) * (1 - frac) + torch.gather(curve, -1, lo + 1) * frac
        counts = torch.binomial(torch.full_like(prev, float(self.population)), prev, generator=generator)
        return (counts / self.population).float(), times.float()

    def check_observation(self, x):
        super().check_observation(x)
        if (x < 0).any() or (x > 1).any():
            raise ValueError(
                "observed prevalence outside [0, 1]: the SIR simulator (a binomial fraction) puts no mass there under "
                "any parameter of the prior"
            )
