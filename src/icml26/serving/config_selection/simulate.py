"""The two-layer environment and the simulation loop, with common random numbers across policies.

The environment draws, before any policy plays, the request every configuration would send at every period
(discrete configurations from one shared uniform u_t per period). Whichever configuration a policy picks, it
sees that pre-drawn request: every policy faces the same streams (paired comparisons), and a policy's choice
changes which request it sees, never the randomness behind it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from icml26.serving.config_selection._checks import check_int
from icml26.serving.config_selection.instances import Instance
from icml26.serving.config_selection.policies import Policy

__all__ = ["BudgetViolation", "RunResult", "TwoLayerEnv", "regret_curve", "run_policy"]


class BudgetViolation(RuntimeError):
    """A policy accepted a request that did not fit in the remaining budget (a bug in the policy)."""


class TwoLayerEnv:
    """T periods of a K-configuration instance; ``request(t, theta)`` -> (r, a) from the common random stream.

    A second stream of uniforms decides randomised admissions, so those are common across policies too.
    """

    def __init__(self, instance: Instance, T: int, seed: int) -> None:
        if not isinstance(instance, Instance):
            raise ValueError(f"instance must be an Instance, got {type(instance).__name__}")
        self.instance, self.T = instance, check_int("T", T, 1)
        rng = np.random.default_rng(check_int("seed", seed, 0))
        u = rng.random(T)  # discrete configurations: the same uniform u_t picks every configuration's type
        self.admit_u = rng.random(T)
        streams = rng.spawn(instance.K)  # continuous configurations: one generator each
        self.rewards = np.empty((T, instance.K))
        self.consumptions = np.empty((T, instance.K, instance.d))
        for k, dist in enumerate(instance.dists):
            self.rewards[:, k], self.consumptions[:, k] = dist.draw(u, streams[k])

    def request(self, t: int, theta: int) -> tuple[float, np.ndarray]:
        return float(self.rewards[t, theta]), self.consumptions[t, theta]


@dataclass(frozen=True)
class RunResult:
    reward: float
    used: np.ndarray
    configs: np.ndarray  # (T,) the configuration used each period
    accepted: int


def run_policy(env: TwoLayerEnv, policy: Policy, on_step: Callable[[int, np.ndarray], None] | None = None) -> RunResult:
    """Play ``policy`` for T periods; raises :class:`BudgetViolation` if it ever exceeds the budget B = b T."""
    inst = env.instance
    horizon = getattr(policy, "T", env.T)
    if horizon != env.T:
        raise ValueError(f"{policy.name} was built for T = {horizon} but the environment has T = {env.T}")
    if getattr(policy, "K", inst.K) != inst.K:
        raise ValueError(f"{policy.name} was built for K = {policy.K} configurations, the instance has {inst.K}")  # type: ignore[attr-defined]
    B = inst.b * env.T
    used = np.zeros(inst.d)
    reward, accepted = 0.0, 0
    configs = np.empty(env.T, dtype=np.int64)
    for t in range(env.T):
        theta = policy.select_config(t)
        if not 0 <= theta < inst.K:
            raise ValueError(f"{policy.name} selected configuration {theta} of {inst.K}")
        configs[t] = theta
        r, a = env.request(t, theta)
        accept = bool(env.admit_u[t] < policy.accept_probability(t, theta, r, a, B - used))
        if accept:
            if np.any(used + a > B + 1e-9):
                raise BudgetViolation(f"{policy.name} exceeded the budget at period {t}")
            used += a
            reward += r
            accepted += 1
        policy.update(t, theta, r, a, accept)
        if on_step is not None:
            on_step(t, used)
    return RunResult(reward=reward, used=used, configs=configs, accepted=accepted)


def regret_curve(
    instance: Instance,
    policies: tuple[str, ...],
    Ts: tuple[int, ...],
    seeds: tuple[int, ...],
    value: float,
    **policy_kw,  # type: ignore[no-untyped-def]
) -> dict[str, np.ndarray]:
    """Regret T * value - reward of every policy, shape (len(Ts), len(seeds)), on common request streams.

    (A Rao-Blackwellised reward, the expected reward of each period's admission rule, was tried and dropped: it
    has the same mean but 2-3x the spread, because realised rewards are pinned down by the binding budget.)
    """
    from icml26.serving.config_selection.policies import make_policy

    out = {name: np.empty((len(Ts), len(seeds))) for name in policies}
    for i, T in enumerate(Ts):
        for j, seed in enumerate(seeds):
            env = TwoLayerEnv(instance, T, seed)
            for name in policies:
                out[name][i, j] = (
                    T * value - run_policy(env, make_policy(name, instance, T, seed=seed, **policy_kw)).reward
                )
    return out
