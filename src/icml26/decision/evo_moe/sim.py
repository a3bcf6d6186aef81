"""The vectorised MorphReach task in torch: many envs of many designs stepped in one batch.

Each joint j is a torque-driven damped double integrator (the notes' substitute (a)):

    tau_j = s_j g_j clip(a_j, -1, 1),   I_j = 0.05 + sum_{k >= j} l_k^3,   theta''_j = (tau_j - c theta'_j) / I_j

(semi-implicit Euler, dt = 0.05, c = 1; theta_j clipped to its limit, with its velocity zeroed there). The tip is
the forward kinematics of the chain, ``sum_j l_j (cos phi_j, sin phi_j)`` with ``phi_j = theta_1 + ... + theta_j``.
A target is drawn per episode (radius in [0.4, 2.4], any angle); reward per step ``-|tip - target| - 0.02 sum_j g_j
a_j^2`` (distance plus effort). Observation (13): cos theta, sin theta, 0.2 theta', target, target - tip.
An episode lasts ``horizon`` steps; every env resets together (one rollout = one episode).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from icml26.decision.evo_moe.design import N_LINKS, DesignError, Morphology

__all__ = ["ACT_DIM", "OBS_DIM", "PlanarChainVecEnv", "design_arrays"]

OBS_DIM = 3 * N_LINKS + 4
ACT_DIM = N_LINKS
DT, DAMPING, EFFORT = 0.05, 1.0, 0.02
TARGET_RADIUS = (0.4, 2.4)


def design_arrays(designs: Sequence[Morphology] | dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Morphologies (or the decoder's raw batch) as arrays of shape (K, N_LINKS), each validated."""
    if isinstance(designs, dict):
        k = len(designs["lengths"])
        designs = [
            Morphology(
                tuple(designs["lengths"][i]),
                tuple(designs["gains"][i]),
                tuple(int(s) for s in designs["gear_signs"][i]),
                tuple(designs["limits"][i]),
            )
            for i in range(k)
        ]
    designs = list(designs)
    if not designs:
        raise DesignError("no designs given")
    for d in designs:
        if not isinstance(d, Morphology):
            raise DesignError(f"designs must be Morphology objects, got {type(d).__name__}")
    return {
        name: np.asarray([getattr(d, name) for d in designs], dtype=float)
        for name in ("lengths", "gains", "gear_signs", "limits")
    }


class PlanarChainVecEnv:
    """``envs_per_design`` envs of each of K designs, stepped together (env i belongs to design i // envs_per_design).

    ``reset(generator) -> obs (N, 13)``; ``step(action (N, 3)) -> (obs, reward (N,), done)`` with ``done`` True at
    the horizon. ``steps_taken`` counts env steps (N per call of ``step``): the sample accounting of the arms.
    """

    def __init__(self, designs: Sequence[Morphology] | dict[str, np.ndarray], envs_per_design: int, horizon: int = 40):
        arr = design_arrays(designs)
        if envs_per_design < 1 or horizon < 1:
            raise ValueError(f"envs_per_design and horizon must be >= 1, got {envs_per_design}, {horizon}")
        self.n_designs, self.envs_per_design, self.horizon = len(arr["lengths"]), int(envs_per_design), int(horizon)
        self.n_envs = self.n_designs * self.envs_per_design
        rep = lambda a: torch.as_tensor(np.repeat(a, envs_per_design, axis=0), dtype=torch.float32)  # noqa: E731
        self.lengths, self.gains, self.signs, self.limits = (
            rep(arr[k]) for k in ("lengths", "gains", "gear_signs", "limits")
        )
        lengths_cubed = self.lengths**3
        self.inertia = 0.05 + torch.flip(torch.cumsum(torch.flip(lengths_cubed, [1]), 1), [1])
        self.design_index = torch.arange(self.n_designs).repeat_interleave(envs_per_design)
        self.steps_taken = 0
        self.t = 0
        self.theta = torch.zeros(self.n_envs, N_LINKS)
        self.omega = torch.zeros(self.n_envs, N_LINKS)
        self.target = torch.zeros(self.n_envs, 2)

    def tip(self) -> torch.Tensor:
        phi = torch.cumsum(self.theta, 1)
        return torch.stack([(self.lengths * phi.cos()).sum(1), (self.lengths * phi.sin()).sum(1)], 1)

    def _obs(self) -> torch.Tensor:
        tip = self.tip()
        return torch.cat([self.theta.cos(), self.theta.sin(), 0.2 * self.omega, self.target, self.target - tip], 1)

    def reset(self, generator: torch.Generator | None = None, targets: torch.Tensor | None = None) -> torch.Tensor:
        """New episode in every env: joints near 0 at rest, a fresh target (or the given targets, shape (N, 2))."""
        n = self.n_envs
        self.theta = 0.1 * (2 * torch.rand(n, N_LINKS, generator=generator) - 1)
        self.omega = torch.zeros(n, N_LINKS)
        if targets is None:
            lo, hi = TARGET_RADIUS
            r = lo + (hi - lo) * torch.rand(n, generator=generator)
            ang = (2 * torch.rand(n, generator=generator) - 1) * torch.pi
            targets = torch.stack([r * ang.cos(), r * ang.sin()], 1)
        elif targets.shape != (n, 2):
            raise ValueError(f"targets must have shape ({n}, 2), got {tuple(targets.shape)}")
        self.target = targets.to(torch.float32)
        self.t = 0
        return self._obs()

    def step(self, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, bool]:
        if action.shape != (self.n_envs, ACT_DIM):
            raise ValueError(f"action must have shape ({self.n_envs}, {ACT_DIM}), got {tuple(action.shape)}")
        if not bool(torch.isfinite(action).all()):  # a diverged policy: stop here, not with NaN bodies later
            raise ValueError("action contains NaN or infinity")
        a = action.clamp(-1.0, 1.0)
        torque = self.signs * self.gains * a
        self.omega = self.omega + DT * (torque - DAMPING * self.omega) / self.inertia
        theta = self.theta + DT * self.omega
        clipped = theta.clamp(-self.limits, self.limits)
        self.omega = torch.where(clipped != theta, torch.zeros_like(self.omega), self.omega)
        self.theta = clipped
        self.t += 1
        self.steps_taken += self.n_envs
        obs = self._obs()
        reward = -(obs[:, -2:].norm(dim=1)) - EFFORT * (self.gains * a * a).sum(1)
        return obs, reward, self.t >= self.horizon
