"""GFlowNet objectives on a batch of trajectories: trajectory balance (TB), detailed balance (DB), sub-trajectory
balance (SubTB), and ACE's divergent trajectory balance (our reading).

Notation: a trajectory s_0 -> ... -> s_n = x -> s_f, forward policy P_F, backward policy P_B, reward R.

- TB (Malkin et al. 2022): ``(log Z + sum_t log P_F(s_{t+1}|s_t) - log R(x) - sum_t log P_B(s_t|s_{t+1}))^2``.
- DB (Bengio et al. 2023): per transition ``(log F(s) + log P_F(s'|s) - log F(s') - log P_B(s|s'))^2``, with the
  exit transition ``(log F(x) + log P_F(exit|x) - log R(x))^2``.
- SubTB(lambda) (Madan et al. 2023): the same balance between every pair i < j of positions of a trajectory
  (position n + 1 is the sink, whose flow is R(x)), weighted by lambda^(j - i) and normalised per trajectory.
- Divergent TB (ACE's explorer; our reading of "Avoid What You Know"):
  ``log Z_E + log P_F^E(tau) = log [R(x) P_B(tau|x) - Z_C P_F^C(tau)]_+``, the canonical terms held fixed; where
  the canonical sampler already covers tau (the bracket is <= 0, or positive but tiny) the target is clamped to
  ``log R(x) + log P_B(tau|x) - floor``. Computed as ``a + max(log1mexp(a - b), -floor)`` with
  ``a = log R + log P_B``, ``b = log Z_C + log P_F^C``: never NaN, never infinite, no cancellation.
"""

from __future__ import annotations

import math

import torch

from icml26.decision.ace_gflownet.gflownet import GFlowNet
from icml26.decision.ace_gflownet.sampling import StepLogProbs, Trajectories, trajectory_log_probs

__all__ = [
    "detailed_balance_loss",
    "divergent_log_target",
    "log1mexp",
    "subtrajectory_balance_loss",
    "trajectory_balance_loss",
]


def log1mexp(x: torch.Tensor) -> torch.Tensor:
    """log(1 - exp(-x)) for x > 0, accurate for small and large x (Maechler 2012)."""
    return torch.where(x < math.log(2.0), torch.log(-torch.expm1(-x)), torch.log1p(-torch.exp(-x)))


def divergent_log_target(
    log_reward: torch.Tensor, log_pb: torch.Tensor, log_z_c: torch.Tensor, log_pf_c: torch.Tensor, floor: float = 10.0
) -> torch.Tensor:
    """log [R P_B - Z_C P_F^C]_+ per trajectory, clamped below at ``log R + log P_B - floor`` (see the module)."""
    if not (math.isfinite(floor) and floor > 0):
        raise ValueError(f"floor must be a positive finite number (in nats), got {floor!r}")
    a = log_reward + log_pb
    gap = a - (log_z_c + log_pf_c)  # > 0 where the canonical sampler under-covers tau
    # log(1 - e^{-gap}) >= -floor  <=>  gap >= -log(1 - e^{-floor}); below that (or gap <= 0) clamp to -floor
    threshold = -math.log(-math.expm1(-floor))
    safe = gap.clamp(min=threshold)
    resid = torch.where(gap > threshold, log1mexp(safe), torch.full_like(gap, -floor))
    return a + resid.clamp(min=-floor)


def trajectory_balance_loss(
    gfn: GFlowNet, traj: Trajectories, scores: StepLogProbs | None = None, log_reward: torch.Tensor | None = None
) -> torch.Tensor:
    """Mean squared TB residual of ``traj`` under ``gfn`` (``log_reward`` overrides the environment's reward)."""
    scores = trajectory_log_probs(gfn, traj) if scores is None else scores
    lr = traj.log_reward if log_reward is None else log_reward
    return (gfn.log_z + scores.traj_log_pf - lr - scores.traj_log_pb).pow(2).mean()


def _position_flows(scores: StepLogProbs, traj: Trajectories, log_reward: torch.Tensor) -> torch.Tensor:
    """(T + 1, B) log-flows by position: log F(s_t) for t < length, R(x) at the sink (position = length)."""
    flows = scores.log_flow.clone()
    positions = torch.arange(flows.shape[0])[:, None]
    sink = positions == traj.lengths[None, :]
    return torch.where(sink, log_reward[None, :].expand_as(flows), flows)


def detailed_balance_loss(
    gfn: GFlowNet, traj: Trajectories, scores: StepLogProbs | None = None, log_reward: torch.Tensor | None = None
) -> torch.Tensor:
    """Mean squared DB residual over all transitions of ``traj`` (the exit transition balances against R(x))."""
    scores = trajectory_log_probs(gfn, traj) if scores is None else scores
    lr = traj.log_reward if log_reward is None else log_reward
    flows = _position_flows(scores, traj, lr)
    resid = flows[:-1] + scores.log_pf - flows[1:] - scores.log_pb
    return (resid.pow(2) * scores.valid).sum() / scores.valid.sum()


def subtrajectory_balance_loss(
    gfn: GFlowNet,
    traj: Trajectories,
    lamda: float = 0.9,
    scores: StepLogProbs | None = None,
    log_reward: torch.Tensor | None = None,
) -> torch.Tensor:
    """SubTB(lambda): the balance of every sub-trajectory i < j, weighted by lambda^(j - i), normalised per
    trajectory, averaged over the batch (vectorised over all pairs at once)."""
    if not (lamda > 0 and math.isfinite(lamda)):
        raise ValueError(f"lamda must be a positive finite number, got {lamda!r}")
    scores = trajectory_log_probs(gfn, traj) if scores is None else scores
    lr = traj.log_reward if log_reward is None else log_reward
    flows = _position_flows(scores, traj, lr)  # (T + 1, B)
    step = scores.log_pf - scores.log_pb  # (T, B), zero on padding
    cum = torch.cat([torch.zeros_like(step[:1]), step.cumsum(0)])  # (T + 1, B): sum of steps before position
    # resid[i, j] = log F_i + cum_j - cum_i - log F_j  for 0 <= i < j <= length
    resid = (flows - cum)[:, None, :] - (flows - cum)[None, :, :]
    pos = torch.arange(flows.shape[0])
    gap = (pos[None, :] - pos[:, None]).float()
    pair = (gap[..., None] > 0) & (pos[None, :, None] <= traj.lengths[None, None, :])
    weight = torch.where(pair, lamda ** gap[..., None], torch.zeros(()))
    per_traj = (weight * resid.pow(2)).sum((0, 1)) / weight.sum((0, 1))
    return per_traj.mean()
