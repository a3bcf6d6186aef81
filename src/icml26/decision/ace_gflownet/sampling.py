"""Batched trajectory sampling (every trajectory of a batch steps together) and exact terminal distributions.

``sample_trajectories`` loops over *time steps*, never over trajectories: at each step one forward pass per
policy on the rows it drives, one Gumbel-max draw for the whole batch, one batched transition. A behaviour
policy may mix several GFlowNets trajectory by trajectory (``source``), each tempered and/or mixed with
epsilon-uniform exploration.

``terminal_distribution`` computes the exact probability that a GFlowNet's forward policy ends in each state, by a
forward pass over every state and a dynamic program over the DAG's levels (no sampling).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from icml26.decision.ace_gflownet.envs import DiscreteEnv
from icml26.decision.ace_gflownet.gflownet import GFlowNet

__all__ = ["Trajectories", "sample_trajectories", "terminal_distribution", "trajectory_log_probs"]


@dataclass(frozen=True)
class Trajectories:
    """A batch of complete trajectories, time-major and padded.

    ``states[t, b]`` is the state before action ``actions[t, b]``; after its exit a trajectory repeats its final
    state and its actions are -1. ``lengths[b]`` counts actions, exit included; ``terminal[b]`` is the object x;
    ``source[b]`` says which policy of the behaviour mixture drew it.
    """

    states: torch.Tensor  # (T + 1, B, *state_shape) long
    actions: torch.Tensor  # (T, B) long, -1 after exit
    lengths: torch.Tensor  # (B,)
    terminal: torch.Tensor  # (B, *state_shape)
    log_reward: torch.Tensor  # (B,)
    source: torch.Tensor  # (B,)

    def __len__(self) -> int:
        return int(self.actions.shape[1])

    @property
    def valid(self) -> torch.Tensor:
        """(T, B) mask of real (non-padding) actions."""
        return self.actions >= 0

    def select(self, rows: torch.Tensor) -> Trajectories:
        """The sub-batch ``rows`` (a boolean mask or indices)."""
        return Trajectories(
            self.states[:, rows],
            self.actions[:, rows],
            self.lengths[rows],
            self.terminal[rows],
            self.log_reward[rows],
            self.source[rows],
        )


def _gumbel_sample(logp: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    u = torch.rand(logp.shape, generator=generator).clamp_(1e-12, 1.0 - 1e-7)
    return torch.argmax(logp - torch.log(-torch.log(u)), dim=1)


@torch.no_grad()
def sample_trajectories(
    env: DiscreteEnv,
    policies: GFlowNet | Sequence[GFlowNet],
    n: int,
    *,
    source: torch.Tensor | None = None,
    epsilon: float | Sequence[float] = 0.0,
    temperature: float | Sequence[float] = 1.0,
    generator: torch.Generator | None = None,
) -> Trajectories:
    """Sample ``n`` complete trajectories from a behaviour policy, all of them stepping together.

    ``policies`` is one GFlowNet or a list; ``source[b]`` (default 0) says which one drives trajectory b.
    ``epsilon`` and ``temperature`` (one value, or one per policy) temper the drawn actions only: what is
    learned from the trajectories is always re-scored by the learner (off-policy training).
    """
    if not (isinstance(n, int) and n >= 1):
        raise ValueError(f"n must be a positive integer number of trajectories, got {n!r}")
    pols = [policies] if isinstance(policies, GFlowNet) else list(policies)
    k = len(pols)
    eps = [float(epsilon)] * k if isinstance(epsilon, int | float) else [float(e) for e in epsilon]
    temps = [float(temperature)] * k if isinstance(temperature, int | float) else [float(t) for t in temperature]
    if len(eps) != k or len(temps) != k:
        raise ValueError(f"give one epsilon and one temperature per policy ({k})")
    if any(not (0.0 <= e <= 1.0) for e in eps) or any(not (t > 0) for t in temps):
        raise ValueError(f"epsilon must lie in [0, 1] and temperature be > 0, got {eps}, {temps}")
    src = torch.zeros(n, dtype=torch.long) if source is None else torch.as_tensor(source, dtype=torch.long)
    if src.shape != (n,) or bool(((src < 0) | (src >= k)).any()):
        raise ValueError(f"source must hold one policy index in [0, {k}) per trajectory")
    rows = [torch.nonzero(src == i)[:, 0] for i in range(k)]

    state = env.initial(n)
    done = torch.zeros(n, dtype=torch.bool)
    states, actions = [state], []
    lengths = torch.zeros(n, dtype=torch.long)
    exit_action = env.n_actions - 1
    for _ in range(env.max_length):
        logp = torch.empty((n, env.n_actions))
        for i, pol in enumerate(pols):
            if rows[i].numel():
                logp[rows[i]] = pol.forward_log_probs(state[rows[i]], eps[i], temps[i])
        action = _gumbel_sample(logp, generator)
        action = action.masked_fill(done, -1)
        moving = (action >= 0) & (action != exit_action)
        nxt = state.clone()
        if bool(moving.any()):
            nxt[moving] = env._apply(state[moving], action[moving])
        lengths += (~done).long()
        done = done | (action == exit_action)
        actions.append(action)
        states.append(nxt)
        state = nxt
        if bool(done.all()):
            break
    if not bool(done.all()):  # the environment's max_length is a bound on every trajectory: a bug if not
        raise RuntimeError(f"{type(env).__name__}: trajectories longer than max_length = {env.max_length}")
    return Trajectories(
        states=torch.stack(states),
        actions=torch.stack(actions),
        lengths=lengths,
        terminal=state,
        log_reward=env.log_reward(state),
        source=src,
    )


@dataclass(frozen=True)
class StepLogProbs:
    """Per-step scores of a batch of trajectories under one GFlowNet (time-major, zero on padding)."""

    log_pf: torch.Tensor  # (T, B): log P_F(a_t | s_t)
    log_pb: torch.Tensor  # (T, B): log P_B(s_t | s_{t+1}); 0 for the exit step
    log_flow: torch.Tensor  # (T + 1, B): log F(s_t)
    valid: torch.Tensor  # (T, B)
    is_exit: torch.Tensor  # (T, B)

    @property
    def traj_log_pf(self) -> torch.Tensor:
        return self.log_pf.sum(0)

    @property
    def traj_log_pb(self) -> torch.Tensor:
        return self.log_pb.sum(0)


def trajectory_log_probs(gfn: GFlowNet, traj: Trajectories) -> StepLogProbs:
    """Score ``traj`` under ``gfn`` in one batched forward pass over all its states (differentiable)."""
    env = gfn.env
    steps, batch = traj.actions.shape
    flat = traj.states.reshape((steps + 1) * batch, *env.state_shape)
    log_pf_all, log_pb_all, log_flow = gfn.outputs(flat)
    log_pf_all = log_pf_all.view(steps + 1, batch, -1)
    valid = traj.valid
    act = traj.actions.clamp(min=0)
    log_pf = log_pf_all[:-1].gather(2, act[..., None])[..., 0] * valid
    is_exit = traj.actions == env.n_actions - 1
    moves = valid & ~is_exit
    nxt = traj.states[1:].reshape(steps * batch, *env.state_shape)
    if log_pb_all is None:  # uniform: 1 / number of parents of s_{t+1}
        parents = env.backward_mask(nxt).sum(1).clamp(min=1).view(steps, batch)
        log_pb = -torch.log(parents.float())
    else:
        back = env.back_index(traj.states[:-1].reshape(steps * batch, *env.state_shape), act.reshape(-1))
        log_pb = log_pb_all.view(steps + 1, batch, -1)[1:].gather(2, back.view(steps, batch, 1))[..., 0]
    return StepLogProbs(log_pf, log_pb * moves, log_flow.view(steps + 1, batch), valid, is_exit)


@torch.no_grad()
def terminal_distribution(gfn: GFlowNet, env: DiscreteEnv | None = None) -> torch.Tensor:
    """Exact P_T(x): the probability that ``gfn``'s forward policy stops in each state of ``env.all_states``.

    One forward pass over every state, then reach(s) = sum over parents p of reach(p) P_F(s | p), level by level
    (a loop over the DAG's levels, each level batched), and P_T(x) = reach(x) P_F(exit | x). float64.
    """
    env = gfn.env if env is None else env
    states = env.all_states
    probs = torch.softmax(gfn.outputs(states)[0].double(), dim=1)  # renormalised in float64
    children = env.child_table
    levels = env.level(states)
    reach = torch.zeros(states.shape[0], dtype=torch.float64)
    reach[env.index(env.initial(1))] = 1.0
    for lv in range(int(levels.max()) + 1):
        rows = torch.nonzero(levels == lv)[:, 0]
        kids = children[rows, :-1]
        ok = kids >= 0
        flow = reach[rows, None] * probs[rows, :-1]
        reach.index_add_(0, kids[ok], flow[ok])
    return reach * probs[:, -1]
