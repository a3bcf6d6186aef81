"""A small vectorised PPO (clipped surrogate, GAE), the one update every arm shares.

One iteration: a rollout of one full episode in every env (``horizon`` x N steps, no gradient), GAE(gamma, lambda)
with the time limit as the episode's end, advantages normalised, then ``epochs`` x ``minibatches`` Adam steps on
``-min(r A, clip(r) A) + vf_coef (V - R)^2 - ent_coef H`` with gradient clipping. Only parameters that require a
gradient are optimised: a frozen expert is never touched (no gradient, no Adam state).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from icml26.decision.evo_moe.sim import PlanarChainVecEnv

__all__ = ["PPOConfig", "PPOTrainer"]

_LOG_2PI = math.log(2 * math.pi)


@dataclass(frozen=True)
class PPOConfig:
    """PPO constants (ours: the abstract gives none; SB3-like, with a larger step for few iterations)."""

    lr: float = 3e-3
    gamma: float = 0.97
    lam: float = 0.95
    clip: float = 0.2
    epochs: int = 4
    minibatches: int = 2
    vf_coef: float = 0.5
    ent_coef: float = 0.0
    max_grad_norm: float = 0.5
    reward_scale: float = 0.1


def gaussian_log_prob(a: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    return (-0.5 * ((a - mean) / log_std.exp()) ** 2 - log_std - 0.5 * _LOG_2PI).sum(-1)


class PPOTrainer:
    """PPO for an actor ``(obs, z, design_index) -> (mean, log_std, gate)`` and a critic ``(obs, z) -> V``."""

    def __init__(self, actor: nn.Module, critic: nn.Module, config: PPOConfig | None = None):
        self.config = config or PPOConfig()
        self.critic = critic
        self.critic_opt = torch.optim.Adam(critic.parameters(), lr=self.config.lr)
        self.set_actor(actor)

    def set_actor(self, actor: nn.Module) -> None:
        """Use a (new) actor: a fresh Adam over its trainable parameters only."""
        self.actor = actor
        trainable = [p for p in actor.parameters() if p.requires_grad]
        self.actor_opt = torch.optim.Adam(trainable, lr=self.config.lr)
        self._trainable = trainable

    @torch.no_grad()
    def collect(
        self, env: PlanarChainVecEnv, z_env: torch.Tensor, generator: torch.Generator
    ) -> dict[str, torch.Tensor]:
        obs = env.reset(generator)
        idx = env.design_index
        buf: dict[str, list[torch.Tensor]] = {k: [] for k in ("obs", "act", "logp", "val", "rew")}
        done = False
        while not done:
            mean, log_std, _ = self.actor(obs, z_env, idx)
            act = mean + log_std.exp() * torch.randn(mean.shape, generator=generator)
            buf["obs"].append(obs)
            buf["act"].append(act)
            buf["logp"].append(gaussian_log_prob(act, mean, log_std))
            buf["val"].append(self.critic(obs, z_env))
            obs, rew, done = env.step(act)
            buf["rew"].append(rew * self.config.reward_scale)
        out = {k: torch.stack(v) for k, v in buf.items()}  # (T, N, ...)
        out["adv"], out["ret"] = self._gae(out["rew"], out["val"])
        return out

    def _gae(self, rew: torch.Tensor, val: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        c = self.config
        adv = torch.zeros_like(rew)
        last = torch.zeros_like(rew[0])
        for t in range(rew.shape[0] - 1, -1, -1):
            nxt = val[t + 1] if t + 1 < rew.shape[0] else torch.zeros_like(val[0])
            delta = rew[t] + c.gamma * nxt - val[t]
            last = delta + c.gamma * c.lam * last
            adv[t] = last
        return adv, adv + val

    def update(
        self,
        batch: dict[str, torch.Tensor],
        z_env: torch.Tensor,
        design_index: torch.Tensor,
        generator: torch.Generator,
    ) -> dict[str, float]:
        c = self.config
        t_len, n = batch["rew"].shape
        flat = {k: v.reshape(t_len * n, *v.shape[2:]) for k, v in batch.items()}
        z_all = z_env.repeat(t_len, 1)
        idx_all = design_index.repeat(t_len)
        adv = flat["adv"]
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        size = t_len * n
        mb = max(1, size // c.minibatches)
        for _ in range(c.epochs):
            perm = torch.randperm(size, generator=generator)
            for start in range(0, size - mb + 1, mb):
                j = perm[start : start + mb]
                mean, log_std, _ = self.actor(flat["obs"][j], z_all[j], idx_all[j])
                logp = gaussian_log_prob(flat["act"][j], mean, log_std)
                ratio = (logp - flat["logp"][j]).exp()
                pg = -torch.min(ratio * adv[j], ratio.clamp(1 - c.clip, 1 + c.clip) * adv[j]).mean()
                v_loss = (self.critic(flat["obs"][j], z_all[j]) - flat["ret"][j]).pow(2).mean()
                entropy = (log_std + 0.5 * (1 + _LOG_2PI)).sum(-1).mean()
                loss = pg + c.vf_coef * v_loss - c.ent_coef * entropy
                self.actor_opt.zero_grad(set_to_none=True)
                self.critic_opt.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_(self._trainable, c.max_grad_norm)
                nn.utils.clip_grad_norm_(self.critic.parameters(), c.max_grad_norm)
                self.actor_opt.step()
                self.critic_opt.step()
        return {"policy_loss": float(pg.detach()), "value_loss": float(v_loss.detach())}

    def iterate(self, env: PlanarChainVecEnv, z_env: torch.Tensor, generator: torch.Generator) -> dict[str, float]:
        batch = self.collect(env, z_env, generator)
        stats = self.update(batch, z_env, env.design_index, generator)
        stats["mean_reward"] = float(batch["rew"].mean() / self.config.reward_scale)
        return stats
