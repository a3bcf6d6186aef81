"""The linear stochastic interpolant, velocity fields, the ODE sampler and the model log-density.

I_t = (1 - t) x_0 + t x_1 with x_0 ~ N(0, I) independent of x_1, so dI_t/dt = x_1 - x_0. A velocity is any
``torch.nn.Module`` called as ``v(x, t)`` with x of shape [n, d] and t of shape [n] (the convention of
``flow_matching.solver.ODESolver`` and ``zuko``); integrating dx/dt = v(x, t) from t = 0 to 1 pushes N(0, I) forward.
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = [
    "GaussianVelocity",
    "VelocityMLP",
    "interpolate",
    "log_prob",
    "sample_ode",
]


def interpolate(x0: torch.Tensor, x1: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The linear interpolant and its time derivative: (I_t, dI_t/dt) = ((1 - t) x0 + t x1, x1 - x0)."""
    tt = t[:, None]
    return (1.0 - tt) * x0 + tt * x1, x1 - x0


class GaussianVelocity(nn.Module):
    """The exact flow-matching velocity of the linear interpolant from N(0, I) to N(mean, scale^2 I).

    E[x1 - x0 | I_t = x] = m + k(t) (x - t m) with k(t) = (t s^2 - (1 - t)) / ((1 - t)^2 + t^2 s^2): the regression
    of a jointly Gaussian pair, so this is ground truth for the closed-form tilt tests.
    """

    def __init__(self, mean: torch.Tensor | list[float], scale: float) -> None:
        super().__init__()
        mean = torch.as_tensor(mean, dtype=torch.float32).reshape(-1)
        if not (math.isfinite(scale) and scale > 0):
            raise ValueError(f"scale must be a positive number, got {scale!r}")
        self.register_buffer("mean", mean)
        self.scale = float(scale)
        self.dim = int(mean.numel())

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        t = _times(t, x)[:, None]
        s2 = self.scale**2
        k = (t * s2 - (1.0 - t)) / ((1.0 - t) ** 2 + t**2 * s2)
        return self.mean + k * (x - t * self.mean)

    def log_prob_at(self, x: torch.Tensor, t: float = 1.0) -> torch.Tensor:
        """log density of I_t (N(t m, ((1 - t)^2 + t^2 s^2) I)) at x: the base density rho_1 at t = 1."""
        var = (1.0 - t) ** 2 + t**2 * self.scale**2
        z = (x - t * self.mean) ** 2 / var
        return -0.5 * (z.sum(-1) + self.dim * math.log(2 * math.pi * var))


class VelocityMLP(nn.Module):
    """A small MLP velocity v(x, t) on [x, t]; with ``base`` it learns a residual on a closed-form field.

    ``base`` (e.g. :class:`GaussianVelocity`) is added to the network's output and the last layer starts at zero,
    so the untrained model is exactly the base flow (our reading of "a simple base with a fitted flow": the base
    is exact from the first annealing step, with no pretraining noise).
    """

    def __init__(self, dim: int, hidden: int = 128, depth: int = 2, base: nn.Module | None = None) -> None:
        super().__init__()
        if dim < 1 or hidden < 1 or depth < 1:
            raise ValueError(f"dim, hidden and depth must be positive, got {dim}, {hidden}, {depth}")
        layers: list[nn.Module] = []
        width = dim + 1
        for _ in range(depth):
            layers += [nn.Linear(width, hidden), nn.SiLU()]
            width = hidden
        last = nn.Linear(width, dim)
        if base is not None:
            nn.init.zeros_(last.weight)
            nn.init.zeros_(last.bias)
        self.net = nn.Sequential(*layers, last)
        self.base = base
        self.dim = dim

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        t = _times(t, x)
        out = self.net(torch.cat([x, t[:, None]], dim=1))
        return out if self.base is None else out + self.base(x, t)


def _times(t: torch.Tensor | float, x: torch.Tensor) -> torch.Tensor:
    t = torch.as_tensor(t, dtype=x.dtype, device=x.device)
    return t.expand(x.shape[0]) if t.ndim == 0 else t


@torch.no_grad()
def sample_ode(velocity: nn.Module, x0: torch.Tensor, steps: int = 32, method: str = "midpoint") -> torch.Tensor:
    """Integrate dx/dt = v(x, t) from t = 0 to 1 on a uniform grid (``"euler"`` or ``"midpoint"``, RK2)."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    if method not in ("euler", "midpoint"):
        raise ValueError(f"method must be 'euler' or 'midpoint', got {method!r}")
    x, dt = x0.clone(), 1.0 / steps
    ones = torch.ones(x.shape[0], dtype=x.dtype)
    for k in range(steps):
        t = ones * (k * dt)
        if method == "euler":
            x = x + dt * velocity(x, t)
        else:
            x_mid = x + 0.5 * dt * velocity(x, t)
            x = x + dt * velocity(x_mid, t + 0.5 * dt)
    return x


def _divergence(velocity: nn.Module, x: torch.Tensor, t: torch.Tensor, probe: torch.Tensor | None) -> torch.Tensor:
    """v(x, t) and its divergence: exact (one backward pass per dimension) or Hutchinson with ``probe``."""
    with torch.enable_grad():
        x = x.detach().requires_grad_(True)
        v = velocity(x, t)
        if probe is not None:
            (g,) = torch.autograd.grad((v * probe).sum(), x)
            return v.detach(), (g * probe).sum(-1)
        div = torch.zeros(x.shape[0], dtype=x.dtype)
        for i in range(x.shape[1]):
            (g,) = torch.autograd.grad(v[:, i].sum(), x, retain_graph=i + 1 < x.shape[1])
            div = div + g[:, i]
    return v.detach(), div


def log_prob(
    velocity: nn.Module,
    x1: torch.Tensor,
    steps: int = 32,
    exact_trace: bool | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """log rho_1(x1) of the flow's model: integrate back to t = 0 with the instantaneous change of variables.

    log rho_1(x_1) = log N(x_0; 0, I) - int_0^1 div v(x_t, t) dt along the trajectory through x_1 (midpoint rule,
    ``steps`` steps). The divergence is exact for d <= 10 (``exact_trace=None``), else Hutchinson's estimator with
    one Rademacher probe per trajectory.
    """
    n, d = x1.shape
    exact = d <= 10 if exact_trace is None else bool(exact_trace)
    probe = None if exact else (torch.randint(0, 2, (n, d), generator=generator).to(x1.dtype) * 2 - 1)
    x, dt = x1.detach().clone(), 1.0 / steps
    integral = torch.zeros(n, dtype=x1.dtype)
    ones = torch.ones(n, dtype=x1.dtype)
    for k in range(steps):
        t = ones * (1.0 - k * dt)
        v, _ = _divergence(velocity, x, t, probe)
        x_mid = x - 0.5 * dt * v
        v_mid, div_mid = _divergence(velocity, x_mid, t - 0.5 * dt, probe)
        integral = integral + dt * div_mid
        x = x - dt * v_mid
    log_p0 = -0.5 * (x**2).sum(-1) - 0.5 * d * math.log(2 * math.pi)
    return log_p0 - integral
