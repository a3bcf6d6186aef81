"""Exact evaluation of a GFlowNet sampler: L1 distance of its terminal distribution to the target, and mode
discovery counts along training."""

from __future__ import annotations

import torch

from icml26.decision.ace_gflownet.envs import DiscreteEnv
from icml26.decision.ace_gflownet.gflownet import GFlowNet
from icml26.decision.ace_gflownet.sampling import terminal_distribution

__all__ = ["ModeTracker", "empirical_l1", "exact_l1"]


def exact_l1(gfn: GFlowNet, env: DiscreteEnv | None = None) -> float:
    """sum_x |P_T(x) - R(x)/Z| for the sampler's exact terminal distribution (in [0, 2]; TV = L1 / 2)."""
    env = gfn.env if env is None else env
    return float((terminal_distribution(gfn, env) - env.true_dist()).abs().sum())


def empirical_l1(env: DiscreteEnv, terminal_states: torch.Tensor) -> float:
    """sum_x |p_hat(x) - R(x)/Z| for the empirical distribution of sampled objects (a Monte Carlo check)."""
    counts = torch.bincount(env.index(terminal_states), minlength=env.n_states).double()
    return float((counts / counts.sum() - env.true_dist()).abs().sum())


class ModeTracker:
    """Distinct maximal-reward states ("mode states") seen so far, and the modes (clusters) they fall in."""

    def __init__(self, env: DiscreteEnv) -> None:
        self.env = env
        self.found: set[tuple[int, ...]] = set()
        self.modes: set[int] = set()

    def update(self, terminal_states: torch.Tensor) -> int:
        """Record a batch of sampled objects; returns the number of distinct mode states found so far."""
        hits = terminal_states[self.env.is_mode(terminal_states)]
        if hits.numel():
            self.found.update(map(tuple, hits.tolist()))
            corner = getattr(self.env, "corner", None)
            if corner is not None:
                self.modes.update(corner(hits).tolist())
        return len(self.found)
