"""A GFlowNet's parameters: a forward policy P_F, a backward policy P_B (uniform or learned), log Z and an
optional state-flow head log F (for detailed and sub-trajectory balance).

One MLP (two hidden layers by default) maps the environment's encoding of a state to
``[forward logits | backward logits | log F]``; invalid actions are masked to ``-inf`` before the softmax.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from icml26.decision.ace_gflownet.envs import DiscreteEnv

__all__ = ["GFlowNet", "TabularGFlowNet", "make_optimizer", "masked_log_softmax"]

NEG_INF = -1e30  # a finite -inf for masked logits: exp() is 0 and there is no inf - inf = nan


def masked_log_softmax(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """log-softmax over the allowed entries; disallowed entries get a large negative value (never NaN)."""
    return torch.log_softmax(logits.masked_fill(~mask, NEG_INF), dim=-1)


class GFlowNet(nn.Module):
    """Forward policy, backward policy, log Z and state flow of one GFlowNet on ``env``.

    ``learn_pb=False`` (default) uses the uniform backward policy (1 / number of parents), the usual choice on
    HyperGrid; ``learn_pb=True`` adds learned backward logits. ``log_z`` is a scalar parameter (its own learning
    rate in :func:`make_optimizer`); ``log_flow`` is read from the same network (used by DB and SubTB only).
    """

    def __init__(self, env: DiscreteEnv, hidden: int = 64, n_layers: int = 2, learn_pb: bool = False) -> None:
        super().__init__()
        if not (isinstance(hidden, int) and hidden >= 1 and isinstance(n_layers, int) and n_layers >= 1):
            raise ValueError(f"hidden and n_layers must be positive integers, got {hidden!r}, {n_layers!r}")
        self.env, self.learn_pb = env, learn_pb
        layers: list[nn.Module] = []
        width = env.n_features
        for _ in range(n_layers):
            layers += [nn.Linear(width, hidden), nn.LeakyReLU()]
            width = hidden
        self.trunk = nn.Sequential(*layers)
        self.n_out = env.n_actions + (env.n_back_actions if learn_pb else 0) + 1
        self.head = nn.Linear(width, self.n_out)
        self.log_z = nn.Parameter(torch.zeros(()))

    def raw(self, states: torch.Tensor) -> torch.Tensor:
        """The network's output rows ``[forward logits | backward logits | log F]`` for a batch of states."""
        return self.head(self.trunk(self.env.encode(states)))

    def outputs(self, states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
        """(forward log-probs, backward log-probs or None when uniform, log F) for a batch of states."""
        env = self.env
        out = self.raw(states)
        n_f = env.n_actions
        log_pf = masked_log_softmax(out[:, :n_f], env.forward_mask(states))
        log_pb = None
        if self.learn_pb:
            log_pb = masked_log_softmax(out[:, n_f : n_f + env.n_back_actions], env.backward_mask(states))
        return log_pf, log_pb, out[:, -1]

    def forward_log_probs(self, states: torch.Tensor, epsilon: float = 0.0, temperature: float = 1.0) -> torch.Tensor:
        """log P_F(.|s) for a batch, optionally tempered (logits / temperature) and mixed with epsilon-uniform
        over the allowed actions: ``(1 - eps) P_F + eps U``."""
        env = self.env
        mask = env.forward_mask(states)
        logits = self.raw(states)[:, : env.n_actions]
        logp = masked_log_softmax(logits / temperature, mask)
        if epsilon >= 1.0:
            return masked_log_softmax(torch.zeros_like(logp), mask)
        if epsilon > 0:
            uniform = masked_log_softmax(torch.zeros_like(logp), mask)
            logp = torch.logaddexp(logp + math.log1p(-epsilon), uniform + math.log(epsilon))
            logp = logp.masked_fill(~mask, NEG_INF)
        return logp


class TabularGFlowNet(GFlowNet):
    """A GFlowNet with one free row of outputs per state (small, enumerable environments): the exact reference
    model. :meth:`optimal` builds the exact sampler of R/Z for the uniform backward policy."""

    def __init__(self, env: DiscreteEnv, learn_pb: bool = False) -> None:
        nn.Module.__init__(self)
        self.env, self.learn_pb = env, learn_pb
        self.n_out = env.n_actions + (env.n_back_actions if learn_pb else 0) + 1
        self.table = nn.Parameter(torch.zeros(env.n_states, self.n_out))
        self.log_z = nn.Parameter(torch.zeros(()))

    def raw(self, states: torch.Tensor) -> torch.Tensor:
        return self.table[self.env.index(states)]

    @classmethod
    @torch.no_grad()
    def optimal(cls, env: DiscreteEnv) -> TabularGFlowNet:
        """The exact GFlowNet for the uniform P_B: state flows F(s) from the sink backwards,
        ``F(s) = R(s) 1[exit allowed] + sum_{s'} F(s') P_B(s | s')``, then ``P_F(s'|s) = F(s') P_B(s|s') / F(s)``,
        ``P_F(exit|s) = R(s) / F(s)`` and ``log Z = log F(s0)`` (float64 recursion, a loop over levels)."""
        gfn = cls(env)
        states = env.all_states
        children = env.child_table
        levels = env.level(states)
        n_parents = env.backward_mask(states).sum(1).clamp(min=1).double()
        log_r = env._log_rewards_all  # -inf where exit is not allowed
        log_f = torch.full((states.shape[0],), -math.inf, dtype=torch.float64)
        log_edge = torch.full(children.shape, -math.inf, dtype=torch.float64)  # log of F(s -> s') per action
        log_edge[:, -1] = log_r
        for lv in range(int(levels.max()), -1, -1):
            rows = torch.nonzero(levels == lv)[:, 0]
            kids = children[rows, :-1]
            ok = kids >= 0
            inflow = torch.full(kids.shape, -math.inf, dtype=torch.float64)
            inflow[ok] = log_f[kids[ok]] - torch.log(n_parents[kids[ok]])
            log_edge[rows, :-1] = inflow
            log_f[rows] = torch.logsumexp(log_edge[rows], dim=1)
        logits = (log_edge - log_f[:, None]).clamp(min=NEG_INF).float()
        gfn.table[:, : env.n_actions] = logits
        gfn.table[:, -1] = log_f.clamp(min=NEG_INF).float()
        gfn.log_z.fill_(float(log_f[env.index(env.initial(1))]))
        return gfn


def make_optimizer(gfn: GFlowNet, lr: float = 1e-3, lr_log_z: float = 0.1) -> torch.optim.Optimizer:
    """Adam with the paper-standard split: ``lr`` for the network, ``lr_log_z`` for log Z (Malkin et al. 2022)."""
    if not (lr > 0 and lr_log_z > 0):
        raise ValueError(f"learning rates must be > 0, got lr={lr!r}, lr_log_z={lr_log_z!r}")
    net = [p for n, p in gfn.named_parameters() if n != "log_z"]
    return torch.optim.Adam([{"params": net, "lr": lr}, {"params": [gfn.log_z], "lr": lr_log_z}])
