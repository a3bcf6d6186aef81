"""Drifting environments: a gymnasium wrapper that moves one or more physical parameters of the wrapped env along
a drift schedule (abrupt, linear ramp, periodic, random walk), counted in environment steps across episodes."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

__all__ = ["DRIFT_MODES", "DriftWrapper", "drift_value"]

DRIFT_MODES: tuple[str, ...] = ("abrupt", "linear", "periodic", "random_walk")


def drift_value(mode: str, t: int, low: float, high: float, period: int) -> float:
    """The deterministic schedules at step t (random_walk is stateful: see :class:`DriftWrapper`).

    - abrupt: ``low`` for steps [0, period), ``high`` for [period, 2 period), and so on (a square wave);
    - linear: a triangle wave, low -> high over ``period`` steps, then back;
    - periodic: ``mid + amp sin(2 pi t / period)``, starting at the midpoint.
    """
    if mode == "abrupt":
        return high if (t // period) % 2 else low
    if mode == "linear":
        phase = (t % (2 * period)) / period
        return low + (high - low) * (phase if phase <= 1 else 2 - phase)
    if mode == "periodic":
        return 0.5 * (low + high) + 0.5 * (high - low) * math.sin(2 * math.pi * t / period)
    raise ValueError(f"unknown drift mode {mode!r}; choose one of {DRIFT_MODES}")


def _cartpole_derived(env: Any) -> None:
    """CartPole caches products of its parameters: recompute them after ``length`` or ``masspole`` changed."""
    if hasattr(env, "polemass_length") and hasattr(env, "masspole") and hasattr(env, "length"):
        env.total_mass = env.masspole + env.masscart
        env.polemass_length = env.masspole * env.length


class DriftWrapper(gym.Wrapper):
    """Move ``params`` of ``env.unwrapped`` along a drift schedule, one environment step at a time.

    ``params`` maps an attribute of the unwrapped env to its range ``(low, high)``, e.g. ``{"g": (5.0, 15.0)}`` on
    Pendulum or ``{"length": (0.5, 1.0)}`` on CartPole. The value at global step t (counted over episodes, set
    *before* the step is taken) follows ``mode`` with ``period`` steps; ``random_walk`` moves by a Gaussian step of
    ``step_size (high - low)`` every ``period`` steps from ``low``, reflected into [low, high] (seeded by ``seed``).
    ``start`` delays the schedule: the parameter holds ``low`` for the first ``start`` steps. ``info["drift"]``
    reports the values the step was taken with. CartPole's cached products are kept consistent.
    """

    def __init__(
        self,
        env: gym.Env,
        params: Mapping[str, tuple[float, float]],
        mode: str = "abrupt",
        period: int = 10_000,
        *,
        start: int = 0,
        step_size: float = 0.1,
        seed: int | None = None,
    ) -> None:
        super().__init__(env)
        if mode not in DRIFT_MODES:
            raise ValueError(f"unknown drift mode {mode!r}; choose one of {DRIFT_MODES}")
        if isinstance(period, bool) or not isinstance(period, int | np.integer) or period < 1:
            raise ValueError(f"period must be a positive number of steps, got {period!r}")
        if not params:
            raise ValueError("params must name at least one parameter to drift, e.g. {'g': (5.0, 15.0)}")
        base = env.unwrapped
        self.params: dict[str, tuple[float, float]] = {}
        for name, rng in params.items():
            if not hasattr(base, name):
                raise ValueError(f"{type(base).__name__} has no parameter {name!r} to drift")
            lo, hi = (float(v) for v in rng)
            if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
                raise ValueError(f"range of {name!r} must be finite with low <= high, got {rng!r}")
            self.params[name] = (lo, hi)
        self.mode, self.period, self.start, self.step_size = mode, int(period), int(start), float(step_size)
        self._rng = np.random.default_rng(seed)
        self.t = 0
        self._walk = {name: lo for name, (lo, _) in self.params.items()}
        self._apply()

    def values(self) -> dict[str, float]:
        """The parameters' current values on the unwrapped env."""
        return {name: float(getattr(self.env.unwrapped, name)) for name in self.params}

    def _target(self, name: str) -> float:
        lo, hi = self.params[name]
        t = self.t - self.start
        if t < 0:
            return lo
        if self.mode != "random_walk":
            return drift_value(self.mode, t, lo, hi, self.period)
        if t > 0 and t % self.period == 0:
            x = self._walk[name] + self.step_size * (hi - lo) * self._rng.standard_normal()
            span = 2 * (hi - lo)
            if span > 0:  # reflect into [lo, hi]
                y = (x - lo) % span
                x = lo + (span - y if y > hi - lo else y)
            self._walk[name] = x
        return self._walk[name]

    def _apply(self) -> None:
        base = self.env.unwrapped
        for name in self.params:
            setattr(base, name, float(self._target(name)))
        _cartpole_derived(base)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        info = {**info, "drift": self.values()}
        self.t += 1
        self._apply()
        return obs, reward, terminated, truncated, info
