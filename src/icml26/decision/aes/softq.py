"""Tabular soft Q-learning on a gridworld whose goal jumps, vectorised over runs (arms x seeds) and parallel envs.

The cheap maximum-entropy learner the claims run on (the paper's "Soft Q-Learning" variant at toy scale): every
run r has its own Q-table, its own ``n_envs`` copies of the grid and its own temperature rule; one call of
:meth:`VectorSoftQ.step` moves every env of every run by one transition and applies one soft TD update per
transition, so a whole grid of arms and seeds trains in one numpy loop over time steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from icml26.decision.aes.schedule import AdaptiveEntropySchedule

__all__ = ["AutoTemperature", "DriftingGoalGrid", "FixedTemperature", "ScheduledTemperature", "VectorSoftQ"]

_MOVES = np.array([[-1, 0], [1, 0], [0, -1], [0, 1]])  # up, down, left, right


@dataclass(frozen=True)
class DriftingGoalGrid:
    """An ``size`` x ``size`` grid, start in the centre, reward 1 on entering the goal (the episode then restarts);
    the goal sits in one corner and, in the abrupt drift mode, jumps to the next corner (clockwise) every
    ``phase_steps`` time steps. Every corner is ``size - 1`` moves from the centre, so every phase has the same
    optimal reward rate ``1 / (size - 1)`` per step. Episodes are cut after ``horizon`` steps."""

    size: int = 7
    phase_steps: int = 2000
    horizon: int = 40

    def __post_init__(self) -> None:
        if self.size < 3 or self.size % 2 == 0:
            raise ValueError(f"size must be an odd integer >= 3, got {self.size!r}")
        if self.phase_steps < 1 or self.horizon < 1:
            raise ValueError("phase_steps and horizon must be >= 1")

    @property
    def n_states(self) -> int:
        return self.size * self.size

    @property
    def start(self) -> int:
        c = self.size // 2
        return c * self.size + c

    @property
    def corners(self) -> np.ndarray:
        m = self.size - 1
        return np.array([0, m, m * self.size + m, m * self.size])  # clockwise from the top-left

    @property
    def optimal_rate(self) -> float:
        return 1.0 / (self.size - 1)

    def goal_at(self, t: int) -> int:
        return int(self.corners[(t // self.phase_steps) % 4])

    def transitions(self) -> np.ndarray:
        """next_state[s, a]: deterministic moves, walls keep the agent in place."""
        rows, cols = np.divmod(np.arange(self.n_states), self.size)
        r = np.clip(rows[:, None] + _MOVES[None, :, 0], 0, self.size - 1)
        c = np.clip(cols[:, None] + _MOVES[None, :, 1], 0, self.size - 1)
        return r * self.size + c


# ------------------------------------------------------------------------------------------ temperature rules
@dataclass
class FixedTemperature:
    """alpha fixed per run (shape (n_runs,))."""

    alpha: np.ndarray

    def value(self) -> np.ndarray:
        return self.alpha

    def update(self, td: np.ndarray, entropy: np.ndarray) -> None:
        return None


@dataclass
class AutoTemperature:
    """SAC's automatic temperature: log alpha <- log alpha + lr (H_target - H(pi(.|s))), H the batch mean of the
    exact policy entropy (SB3's ``ent_coef_loss = -(log_alpha (log pi + H_target)).mean()`` with plain SGD)."""

    alpha0: np.ndarray
    target_entropy: np.ndarray
    lr: float = 0.01
    log_alpha: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.log_alpha = np.log(np.asarray(self.alpha0, float))

    def value(self) -> np.ndarray:
        return np.exp(self.log_alpha)

    def update(self, td: np.ndarray, entropy: np.ndarray) -> None:
        self.log_alpha = self.log_alpha + self.lr * (self.target_entropy - entropy.mean(axis=1))


@dataclass
class ScheduledTemperature:
    """AES: alpha from an :class:`AdaptiveEntropySchedule` fed with each run's batch of TD errors."""

    schedule: AdaptiveEntropySchedule
    n_runs: int

    def value(self) -> np.ndarray:
        a = self.schedule.alpha
        return np.broadcast_to(np.asarray(a, float), (self.n_runs,))

    def update(self, td: np.ndarray, entropy: np.ndarray) -> None:
        self.schedule.update(td)


# ------------------------------------------------------------------------------------------------- learner
def _soft_value(q: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """alpha * logsumexp(Q / alpha) over the last axis, stable for small alpha."""
    z = q / alpha[..., None]
    m = z.max(axis=-1)
    return alpha * (m + np.log(np.exp(z - m[..., None]).sum(axis=-1)))


class VectorSoftQ:
    """Soft Q-learning, Q(s,a) += lr (r + gamma V_soft(s') - Q(s,a)), pi = softmax(Q / alpha), for ``groups`` of
    runs that share a temperature rule. ``groups`` is a sequence of (name, rule, n_runs); runs are laid out group
    after group. ``rng`` drives every action draw (one stream for all runs). ``drifting`` (one flag per run, default
    all True) lets some runs keep the first goal for ever."""

    def __init__(
        self,
        env: DriftingGoalGrid,
        groups: Sequence[tuple[str, Any, int]],
        *,
        n_envs: int = 16,
        gamma: float = 0.9,
        lr: float = 0.2,
        drifting: np.ndarray | None = None,
        rng: np.random.Generator,
    ) -> None:
        self.env, self.gamma, self.lr, self.rng = env, float(gamma), float(lr), rng
        self.groups = list(groups)
        self.n_runs = sum(n for _, _, n in self.groups)
        self.n_envs = int(n_envs)
        self.next_state = env.transitions()
        self.q = np.zeros((self.n_runs, env.n_states, 4))
        self.state = np.full((self.n_runs, self.n_envs), env.start)
        self.clock = np.zeros((self.n_runs, self.n_envs), dtype=int)
        self._runs = np.arange(self.n_runs)[:, None]
        # Runs with drifting[r] False keep the first goal for ever: the no-drift counterfactual, in the same batch.
        self.drifting = np.ones(self.n_runs, bool) if drifting is None else np.asarray(drifting, bool)
        if self.drifting.shape != (self.n_runs,):
            raise ValueError(f"drifting must have one flag per run ({self.n_runs}), got shape {self.drifting.shape}")
        self._needs_entropy = any(isinstance(rule, AutoTemperature) for _, rule, _ in self.groups)
        self.t = 0

    def alpha(self) -> np.ndarray:
        return np.concatenate([np.asarray(rule.value(), float) for _, rule, _ in self.groups])

    def step(self) -> tuple[np.ndarray, np.ndarray]:
        """One transition in every env of every run and one soft TD update each; returns (reward rate per run,
        alpha per run) at this step."""
        env = self.env
        goal = np.where(self.drifting, env.goal_at(self.t), env.corners[0])[:, None]
        alpha = self.alpha()
        q_s = self.q[self._runs, self.state]  # (R, B, A)
        z = q_s / alpha[:, None, None]
        z -= z.max(axis=-1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=-1, keepdims=True)
        entropy = -(p * np.log(np.maximum(p, 1e-300))).sum(axis=-1) if self._needs_entropy else p[..., 0]
        u = self.rng.random((self.n_runs, self.n_envs, 1))
        action = np.minimum((p.cumsum(axis=-1) < u).sum(axis=-1), 3)
        nxt = self.next_state[self.state, action]
        done = nxt == goal
        reward = done.astype(float)
        v_next = _soft_value(self.q[self._runs, nxt], np.broadcast_to(alpha[:, None], nxt.shape))
        td = reward + self.gamma * np.where(done, 0.0, v_next) - q_s[self._runs, np.arange(self.n_envs), action]
        # Several envs of a run may update the same (s, a) at once: apply their mean TD error (one step of lr).
        flat = ((self._runs * env.n_states + self.state) * 4 + action).ravel()
        sums = np.bincount(flat, weights=td.ravel(), minlength=self.q.size)
        counts = np.bincount(flat, minlength=self.q.size)
        self.q += (self.lr * sums / np.maximum(counts, 1)).reshape(self.q.shape)
        self.clock += 1
        restart = done | (self.clock >= env.horizon)
        self.state = np.where(restart, env.start, nxt)
        self.clock[restart] = 0
        start = 0
        for _, rule, n in self.groups:
            rule.update(td[start : start + n], entropy[start : start + n])
            start += n
        self.t += 1
        return reward.mean(axis=1), alpha

    def run(self, steps: int) -> tuple[np.ndarray, np.ndarray]:
        """``steps`` steps; returns the reward-rate and alpha traces, each of shape (n_runs, steps)."""
        rates = np.empty((self.n_runs, steps))
        alphas = np.empty((self.n_runs, steps))
        for k in range(steps):
            rates[:, k], alphas[:, k] = self.step()
        return rates, alphas
