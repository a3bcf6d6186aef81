"""Conditional flow matching on tokens and the ODE that samples it.

Path (sigma_min = 1e-3): z_tau = (1 - (1 - sigma_min) tau) z_0 + tau z_1 with z_0 ~ N(0, I), tau ~ U(0, 1);
target velocity u = z_1 - (1 - sigma_min) z_0; loss = mean squared error over the non-padding target tokens.
Condition tokens keep their values at every tau. Sampling integrates dz/dtau = v(z, tau) from tau = 0 to 1 with
fixed-step RK4 on the target tokens; ``log_prob`` integrates the instantaneous change of variables
d log p / dtau = -div v backwards with the exact divergence (one backward pass per target dimension).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from icml26.probabilistic.tfmpe.tokens import Tokens, attention_mask

__all__ = ["cfm_loss", "cfm_target", "integrate", "log_prob", "path"]

Velocity = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def path(z0: torch.Tensor, z1: torch.Tensor, tau: torch.Tensor, sigma_min: float) -> torch.Tensor:
    return (1 - (1 - sigma_min) * tau) * z0 + tau * z1


def cfm_target(z0: torch.Tensor, z1: torch.Tensor, sigma_min: float) -> torch.Tensor:
    return z1 - (1 - sigma_min) * z0


def cfm_loss(net, tokens: Tokens, sigma_min: float = 1e-3, generator: torch.Generator | None = None) -> torch.Tensor:
    """The conditional flow-matching loss of one batch (targets carry z_1 in ``tokens.value``)."""
    b = tokens.value.shape[0]
    tau = torch.rand(b, generator=generator)
    z0 = torch.randn(tokens.value.shape, generator=generator)
    tgt = tokens.target
    z = torch.where(tgt, path(z0, tokens.value, tau[:, None], sigma_min), tokens.value)
    v = net(tokens.with_values(z), tau)
    u = cfm_target(z0, tokens.value, sigma_min)
    return ((v - u) ** 2)[tgt].mean()


def integrate(velocity: Velocity, z0: torch.Tensor, steps: int, t0: float = 0.0, t1: float = 1.0) -> torch.Tensor:
    """Fixed-step RK4 of dz/dtau = velocity(z, tau) from t0 to t1 (tau is passed as a [B] tensor)."""
    h = (t1 - t0) / steps
    z = z0
    ones = torch.ones(z0.shape[0])
    for k in range(steps):
        t = t0 + k * h
        k1 = velocity(z, ones * t)
        k2 = velocity(z + 0.5 * h * k1, ones * (t + 0.5 * h))
        k3 = velocity(z + 0.5 * h * k2, ones * (t + 0.5 * h))
        k4 = velocity(z + h * k3, ones * (t + h))
        z = z + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return z


def token_velocity(net, tokens: Tokens) -> Velocity:
    """The velocity on target tokens as a function of the target values ``[B, D]`` (conditions held fixed)."""
    mask = attention_mask(tokens.site, tokens.pad)
    tgt = tokens.target
    d = int(tgt[0].sum())

    def v(z: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
        value = tokens.value.masked_scatter(tgt, z.reshape(-1)) if z.numel() else tokens.value
        return net(tokens.with_values(value), tau, mask)[tgt].reshape(-1, d)

    return v


@torch.no_grad()
def sample_targets(net, tokens: Tokens, steps: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """Draw the target tokens ``[B, D]`` of every sequence (every row must have the same number D of targets)."""
    counts = tokens.target.sum(1)
    if not bool((counts == counts[0]).all()):
        raise ValueError("every sequence of a sampling batch must have the same number of target tokens")
    z0 = torch.randn(tokens.value.shape[0], int(counts[0]), generator=generator)
    return integrate(token_velocity(net, tokens), z0, steps)


def log_prob(net, tokens: Tokens, z1: torch.Tensor, steps: int) -> torch.Tensor:
    """log q(z_1 | conditions) ``[B]`` by the exact divergence along the reverse ODE (low dimension only)."""
    vel = token_velocity(net, tokens)
    d = z1.shape[1]

    def augmented(state: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
        with torch.enable_grad():
            z = state[:, :d].detach().requires_grad_(True)
            v = vel(z, tau)
            div = torch.zeros(z.shape[0])
            for i in range(d):
                div = div + torch.autograd.grad(v[:, i].sum(), z, retain_graph=i < d - 1)[0][:, i]
        return torch.cat([v.detach(), -div.detach()[:, None]], 1)

    state = torch.cat([z1, torch.zeros(z1.shape[0], 1)], 1)
    end = integrate(augmented, state, steps, t0=1.0, t1=0.0)
    z0, delta = end[:, :d], end[:, d]
    base = -0.5 * (z0**2).sum(1) - 0.5 * d * math.log(2 * math.pi)
    # d log p / dtau = -div v, so log p_1(z_1) = log p_0(z_0) - int_0^1 div v dtau; the reverse pass accumulated
    # int_1^0 (-div v) dtau = +int_0^1 div v dtau into ``delta``
    return base - delta
