"""AES as a stable-baselines3 callback: SAC (entropy coefficient or target entropy) and PPO (``ent_coef``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.callbacks import BaseCallback

from icml26.decision.aes.schedule import AdaptiveEntropySchedule

__all__ = ["AESCallback", "sac_td_errors"]

TARGETS = ("coef", "target_entropy")


@torch.no_grad()
def sac_td_errors(model: Any, batch_size: int = 256) -> np.ndarray:
    """TD errors of SB3 SAC's first critic on a replay batch, with SB3's own target (the min of the target critics,
    minus alpha log pi at the next action; the current coefficient)."""
    data = model.replay_buffer.sample(batch_size, env=model._vec_normalize_env)
    next_actions, next_log_prob = model.actor.action_log_prob(data.next_observations)
    next_q = torch.cat(model.critic_target(data.next_observations, next_actions), dim=1)
    next_q = torch.min(next_q, dim=1, keepdim=True).values
    alpha = torch.exp(model.log_ent_coef) if model.log_ent_coef is not None else model.ent_coef_tensor
    next_q = next_q - alpha * next_log_prob.reshape(-1, 1)
    discounts = getattr(data, "discounts", None)
    gamma = model.gamma if discounts is None else discounts
    target = data.rewards + (1 - data.dones) * gamma * next_q
    q = model.critic(data.observations, data.actions)[0]
    return (target - q).reshape(-1).cpu().numpy()


class AESCallback(BaseCallback):
    """Drive SB3's entropy weight with an :class:`AdaptiveEntropySchedule`.

    - **SAC** (and its relatives with ``replay_buffer``, ``critic`` and ``critic_target``): every ``every`` env steps
      once the buffer holds ``batch_size`` transitions, the TD errors of a replay batch feed the schedule; then
      ``target="coef"`` writes alpha into ``model.ent_coef_tensor`` (SAC built with a *fixed* ``ent_coef``, which
      SB3 reads at every gradient step), or ``target="target_entropy"`` (SAC with ``ent_coef="auto"``) shifts the
      target entropy by ``dim(A)/2 * log(alpha / alpha_base)`` (ours: the entropy change of a Gaussian policy whose
      variance scales with alpha), leaving SB3's own temperature loss to follow it.
    - **PPO/A2C** (a ``rollout_buffer``): at the end of each rollout the value errors ``returns - values`` of the
      whole buffer feed the schedule and alpha is written to ``model.ent_coef``, which ``train()`` reads next.

    ``history`` keeps (num_timesteps, alpha) after each update; the alpha is also logged as ``aes/alpha``.
    """

    def __init__(
        self,
        schedule: AdaptiveEntropySchedule,
        *,
        every: int = 50,
        batch_size: int = 256,
        target: str = "coef",
        verbose: int = 0,
    ) -> None:
        super().__init__(verbose)
        if not isinstance(schedule, AdaptiveEntropySchedule):
            raise TypeError(f"schedule must be an AdaptiveEntropySchedule, got {type(schedule).__name__}")
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(f"every must be a positive number of steps, got {every!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if target not in TARGETS:
            raise ValueError(f"unknown target {target!r}; choose one of {TARGETS}")
        self.schedule, self.every, self.batch_size, self.target = schedule, every, batch_size, target
        self.history: list[tuple[int, float]] = []
        self._calls = 0
        self._base_target_entropy: float | None = None

    # ------------------------------------------------------------------------------------------------ setup
    def _init_callback(self) -> None:
        m = self.model
        self._on_policy = hasattr(m, "rollout_buffer") and not hasattr(m, "replay_buffer")
        if self._on_policy:
            if self.target != "coef" or not hasattr(m, "ent_coef"):
                raise ValueError("an on-policy model (PPO/A2C) takes target='coef' and needs an ent_coef attribute")
            if not isinstance(m.ent_coef, int | float):
                raise ValueError(f"{type(m).__name__}.ent_coef must be a number, got {m.ent_coef!r}")
            m.ent_coef = float(self.schedule.alpha_base)
            return
        if not all(hasattr(m, a) for a in ("replay_buffer", "critic", "critic_target", "actor")):
            raise ValueError(f"{type(m).__name__} is neither a SAC-like model nor an on-policy model with ent_coef")
        if self.target == "coef":
            if getattr(m, "log_ent_coef", None) is not None:
                raise ValueError(
                    "target='coef' overwrites a fixed entropy coefficient: build SAC with ent_coef=<number>, "
                    "or use target='target_entropy' with ent_coef='auto'"
                )
            m.ent_coef_tensor = torch.tensor(float(self.schedule.alpha_base), device=m.device)
        else:
            if getattr(m, "log_ent_coef", None) is None:
                raise ValueError("target='target_entropy' needs SAC with ent_coef='auto' (a learned temperature)")
            self._base_target_entropy = float(m.target_entropy)

    # ------------------------------------------------------------------------------------------------ hooks
    def _on_step(self) -> bool:
        if self._on_policy:
            return True
        self._calls += 1
        if self._calls % self.every or self.model.replay_buffer.size() < self.batch_size:
            return True
        self._set(self.schedule.update(sac_td_errors(self.model, self.batch_size)))
        return True

    def _on_rollout_end(self) -> None:
        if not self._on_policy:
            return
        buf = self.model.rollout_buffer
        self._set(self.schedule.update((buf.returns - buf.values).reshape(-1)))

    def _set(self, alpha: Any) -> None:
        alpha = float(alpha)
        m = self.model
        if self._on_policy:
            m.ent_coef = alpha
        elif self.target == "coef":
            m.ent_coef_tensor.fill_(alpha)
        else:
            dim = float(np.prod(m.action_space.shape))
            m.target_entropy = float(self._base_target_entropy) + 0.5 * dim * math.log(alpha / self.schedule.alpha_base)
        self.history.append((int(self.num_timesteps), alpha))
        self.logger.record("aes/alpha", alpha)
