"""Request distributions and problem instances.

A configuration theta induces a distribution D_theta over requests (r, a): reward r >= 0 and consumption
a in [0, A_max]^d. Discrete distributions over a few request *types* make the fluid oracle an exact LP (no Monte
Carlo error in the benchmark, which would swamp a sqrt(T) regret).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "ContinuousRequestDist",
    "DiscreteRequestDist",
    "Instance",
    "JitteredRequestDist",
    "RequestDist",
    "alibaba_like_instance",
    "atomless_gap_instance",
    "gap_instance",
    "k_sweep_instance",
    "random_instance",
]


class RequestDist(Protocol):
    """What the environment and the policies need of a configuration's request distribution."""

    @property
    def dim(self) -> int: ...

    @property
    def r_max(self) -> float: ...

    @property
    def a_max(self) -> float: ...

    def draw(self, u: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """len(u) requests (rewards (T,), consumptions (T, d)); discrete types use the common uniforms u."""
        ...


class _TypeTable:
    """What a law made of request types shares: ``probs`` (J,), ``rewards`` (J,), ``consumptions`` (J, d)."""

    probs: np.ndarray
    rewards: np.ndarray
    consumptions: np.ndarray

    @property
    def n_types(self) -> int:
        return self.probs.size

    @property
    def dim(self) -> int:
        return self.consumptions.shape[1]

    @property
    def a_max(self) -> float:
        return float(self.consumptions.max())

    def types_of(self, u: np.ndarray) -> np.ndarray:
        """Inverse-CDF type index of each uniform in u."""
        return np.minimum(np.searchsorted(np.cumsum(self.probs), u, side="right"), self.n_types - 1)


@dataclass(frozen=True, eq=False)
class DiscreteRequestDist(_TypeTable):
    """Requests of J types: type j has probability ``probs[j]``, reward ``rewards[j]`` and consumption
    ``consumptions[j]`` (a vector over the d resources)."""

    probs: np.ndarray  # (J,)
    rewards: np.ndarray  # (J,)
    consumptions: np.ndarray  # (J, d)

    def __init__(self, probs: ArrayLike, rewards: ArrayLike, consumptions: ArrayLike) -> None:
        p = np.asarray(probs, dtype=float)
        r = np.asarray(rewards, dtype=float)
        a = np.asarray(consumptions, dtype=float)
        if a.ndim == 1:
            a = a[:, None]
        if a.ndim != 2:
            raise ValueError(f"consumptions must be (J, d), got shape {a.shape}")
        if p.ndim != 1 or p.size == 0:
            raise ValueError("a configuration needs at least one request type (probs must be a non-empty vector)")
        if r.shape != p.shape or a.shape[0] != p.size:
            raise ValueError(f"probs {p.shape}, rewards {r.shape} and consumptions {a.shape} disagree on J")
        if np.any(p < 0) or not np.isclose(p.sum(), 1.0):
            raise ValueError("probs must be nonnegative and sum to 1")
        if not (np.isfinite(r).all() and np.isfinite(a).all()) or np.any(r < 0) or np.any(a < 0):
            raise ValueError("rewards and consumptions must be finite and nonnegative")
        for name, value in (("probs", p / p.sum()), ("rewards", r), ("consumptions", a)):
            value.setflags(write=False)
            object.__setattr__(self, name, value)

    @property
    def r_max(self) -> float:
        return float(self.rewards.max())

    def draw(self, u: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        j = self.types_of(u)
        return self.rewards[j], self.consumptions[j]

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Type indices of ``n`` independent requests."""
        return self.types_of(rng.random(n))

    def surplus(self, p: ArrayLike) -> float:
        """g(p) = E[(r - p.a)^+]: the value of one request at bid prices p."""
        return float(self.probs @ np.maximum(self.rewards - self.consumptions @ np.asarray(p, float), 0.0))

    def threshold_consumption(self, p: ArrayLike) -> np.ndarray:
        """h(p) = E[a 1{r > p.a}]: expected consumption when accepting exactly the requests worth their price."""
        accept = self.rewards > self.consumptions @ np.asarray(p, float)
        return np.asarray((self.probs * accept) @ self.consumptions)


class JitteredRequestDist(_TypeTable):
    """An atomless request law with an exact oracle: type j (probability ``probs[j]``) consumes ``consumptions[j]``
    and pays a reward uniform on ``rewards[j] +- half_width``.

    No reward value has positive mass, so a threshold rule r >= p.a accepts exactly the fluid optimum's requests
    (there is no fractional type at the price). Its surplus g(p) = sum_j pi_j E[(R_j - c_j)^+], c_j = a_j.p, is
    piecewise quadratic and C^1, with gradient -h(p): the fluid problem is a smooth convex program
    (``oracle.fluid_oracle`` solves it and certifies the value by the primal-dual gap).
    """

    def __init__(self, probs: ArrayLike, rewards: ArrayLike, consumptions: ArrayLike, half_width: float) -> None:
        centre = DiscreteRequestDist(probs, rewards, consumptions)  # validates shapes, probabilities and signs
        if not (isinstance(half_width, int | float | np.floating) and math.isfinite(half_width) and half_width > 0):
            raise ValueError(f"half_width must be a positive finite number, got {half_width!r}")
        if np.any(centre.rewards - half_width < 0):
            raise ValueError("rewards - half_width must be nonnegative (rewards are nonnegative)")
        self.probs, self.rewards, self.consumptions = centre.probs, centre.rewards, centre.consumptions
        self.half_width = float(half_width)

    @property
    def r_max(self) -> float:
        return float(self.rewards.max() + self.half_width)

    def draw(self, u: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        j = self.types_of(u)
        return self.rewards[j] + self.half_width * rng.uniform(-1.0, 1.0, len(u)), self.consumptions[j]

    def _above(self, p: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """Per type: P(R_j > c_j) and the clipped threshold m_j = clip(c_j, lo_j, hi_j)."""
        lo, hi = self.rewards - self.half_width, self.rewards + self.half_width
        m = np.clip(self.consumptions @ np.asarray(p, float), lo, hi)
        return (hi - m) / (hi - lo), m

    def surplus(self, p: ArrayLike) -> float:
        """g(p) = E[(r - p.a)^+] in closed form."""
        c = self.consumptions @ np.asarray(p, float)
        lo, hi = self.rewards - self.half_width, self.rewards + self.half_width
        per_type = (np.maximum(hi - c, 0.0) ** 2 - np.maximum(lo - c, 0.0) ** 2) / (2 * (hi - lo))
        return float(self.probs @ per_type)

    def acceptance(self, p: ArrayLike) -> np.ndarray:
        """P(r > p.a | type j) for every type."""
        return self._above(p)[0]

    def threshold_consumption(self, p: ArrayLike) -> np.ndarray:
        """h(p) = E[a 1{r > p.a}] = -grad g(p)."""
        return np.asarray((self.probs * self.acceptance(p)) @ self.consumptions)

    def threshold_reward(self, p: ArrayLike) -> float:
        """E[r 1{r > p.a}]: the reward of the threshold rule at prices p."""
        prob, m = self._above(p)
        hi = self.rewards + self.half_width
        return float(self.probs @ (prob * (hi + m) / 2))

    def to_discrete(self, n: int, seed: int = 0) -> DiscreteRequestDist:
        """Each type split into n equiprobable subtypes at the midpoints of n equal reward cells (deterministic;
        ``seed`` is ignored): an LP whose value converges to the exact one at rate 1/n^2."""
        if not isinstance(n, int | np.integer) or n < 1:
            raise ValueError(f"n must be a positive integer, got {n!r}")
        offsets = self.half_width * ((2 * np.arange(n) + 1) / n - 1)
        return DiscreteRequestDist(
            np.repeat(self.probs / n, n),
            (self.rewards[:, None] + offsets[None, :]).ravel(),
            np.repeat(self.consumptions, n, axis=0),
        )


class ContinuousRequestDist:
    """Requests from a sampler ``sampler(rng, n) -> (rewards (n,), consumptions (n, d))`` within known bounds.

    The fluid oracle is exact only for discrete types; :meth:`to_discrete` gives an empirical (Monte Carlo)
    approximation, whose per-period error times T can swamp a sqrt(T) regret: use it for exploration only.
    """

    def __init__(
        self,
        sampler: Callable[[np.random.Generator, int], tuple[np.ndarray, np.ndarray]],
        dim: int,
        r_max: float,
        a_max: float,
    ) -> None:
        if dim < 1 or not (r_max > 0 and a_max > 0):
            raise ValueError("need dim >= 1 and positive bounds r_max, a_max")
        self.sampler, self._dim, self._r_max, self._a_max = sampler, dim, float(r_max), float(a_max)

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def r_max(self) -> float:
        return self._r_max

    @property
    def a_max(self) -> float:
        return self._a_max

    def draw(self, u: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        r, a = self.sampler(rng, len(u))
        r, a = np.asarray(r, float), np.asarray(a, float).reshape(len(u), self.dim)
        if not (np.isfinite(r).all() and np.isfinite(a).all()):
            raise ValueError("the sampler produced NaN or infinite requests")
        if np.any(r < 0) or np.any(r > self.r_max) or np.any(a < 0) or np.any(a > self.a_max):
            raise ValueError("the sampler produced a request outside [0, r_max] x [0, a_max]^d")
        return r, a

    def to_discrete(self, n: int, seed: int = 0) -> DiscreteRequestDist:
        """The empirical distribution of n draws (equal weights): an approximate, Monte Carlo oracle input."""
        r, a = self.draw(np.zeros(n), np.random.default_rng(seed))
        return DiscreteRequestDist(np.full(n, 1.0 / n), r, a)


@dataclass(frozen=True, eq=False)
class Instance:
    """K configurations over d resources and a per-period budget b > 0 (the horizon's budget is B = b T)."""

    dists: tuple[RequestDist, ...]
    b: np.ndarray

    def __init__(self, dists: tuple[RequestDist, ...] | list[RequestDist], b: ArrayLike) -> None:
        dists = tuple(dists)
        budget = np.atleast_1d(np.asarray(b, dtype=float))
        if not dists:
            raise ValueError("an instance needs at least one configuration")
        dims = {dist.dim for dist in dists}
        if len(dims) != 1:
            raise ValueError(f"all configurations must consume the same number of resources, got {sorted(dims)}")
        if budget.shape != (dims.pop(),):
            raise ValueError(f"budget b has shape {budget.shape} but consumptions have d = {dists[0].dim}")
        if not np.all(np.isfinite(budget)) or np.any(budget <= 0):
            raise ValueError(f"per-period budgets must be positive and finite, got {budget}")
        budget.setflags(write=False)
        object.__setattr__(self, "dists", dists)
        object.__setattr__(self, "b", budget)

    @property
    def K(self) -> int:
        return len(self.dists)

    @property
    def d(self) -> int:
        return self.b.size

    @property
    def r_max(self) -> float:
        return max(dist.r_max for dist in self.dists)

    @property
    def a_max(self) -> float:
        return max(dist.a_max for dist in self.dists)

    @property
    def is_discrete(self) -> bool:
        return all(isinstance(dist, DiscreteRequestDist) for dist in self.dists)

    @property
    def is_jittered(self) -> bool:
        """Every configuration atomless with a closed-form surplus (the smooth exact oracle applies)."""
        return all(isinstance(dist, JitteredRequestDist) for dist in self.dists)

    def discrete(self) -> tuple[DiscreteRequestDist, ...]:
        """The distributions as discrete types, or a clear error (the exact oracle needs them)."""
        if not self.is_discrete:
            raise ValueError(
                "this needs discrete request types (the exact fluid oracle also takes all-JitteredRequestDist "
                "instances); use instance.discretized(n) for an approximate one"
            )
        return self.dists  # type: ignore[return-value]

    def discretized(self, n: int, seed: int = 0) -> Instance:
        """Continuous configurations replaced by the empirical distribution of n draws each."""
        return Instance(
            [d if isinstance(d, DiscreteRequestDist) else d.to_discrete(n, seed + k) for k, d in enumerate(self.dists)],
            self.b,
        )


def _types(rows: list[tuple[float, ...]]) -> DiscreteRequestDist:
    arr = np.asarray(rows, dtype=float)
    return DiscreteRequestDist(np.full(len(arr), 1.0 / len(arr)), arr[:, 0], arr[:, 1:])


# The positive-gap instance of the reproduction protocol: theta0 is heavy on resource 1, theta1 its mirror image,
# theta2 balanced and of lower value. The optimum mixes theta0 and theta1; 0.9 -> 0.92 breaks their tie.
_THETA0 = [(0.92, 0.8, 0.1), (0.6, 0.7, 0.05), (0.3, 0.6, 0.1), (0.15, 0.9, 0.05)]
_THETA2 = [(0.6, 0.4, 0.4), (0.45, 0.35, 0.35), (0.25, 0.4, 0.4), (0.1, 0.45, 0.45)]


def _mirror(rows: list[tuple[float, float, float]]) -> list[tuple[float, float, float]]:
    return [(r, a2, a1) for r, a1, a2 in rows]


def gap_instance() -> Instance:
    """d = 2, b = (0.2, 0.2), K = 3, four equiprobable types each; mixing theta0 and theta1 beats any single one."""
    theta1 = _mirror([(0.9, 0.8, 0.1), *_THETA0[1:]])
    return Instance([_types(_THETA0), _types(theta1), _types(_THETA2)], [0.2, 0.2])


def k_sweep_instance(K: int) -> Instance:
    """The gap instance's mirror pair plus K - 2 balanced decoys of slightly lower value (K >= 2).

    Decoy k scales theta2's rewards by a factor in [0.85, 0.97] (deterministic in k), so that every extra
    configuration must be explored before it can be ruled out: the sqrt(K) factor of the regret.
    """
    if K < 2:
        raise ValueError(f"the K sweep needs K >= 2 (the mirror pair), got {K}")
    base = gap_instance().dists[:2]
    decoys = []
    for k in range(K - 2):
        factor = 0.97 - 0.12 * (k / max(1, K - 3))
        decoys.append(_types([(r * factor, a1, a2) for r, a1, a2 in _THETA2]))
    return Instance([*base, *decoys], [0.2, 0.2])


def atomless_gap_instance(half_width: float = 0.03) -> Instance:
    """The gap instance with every reward spread uniformly over +- ``half_width``: the same consumptions, types
    and (to first order) values, but no atom at the fluid price, which a threshold admission rule can realise."""
    return Instance(
        [JitteredRequestDist(d.probs, d.rewards, d.consumptions, half_width) for d in gap_instance().dists],
        [0.2, 0.2],
    )


def random_instance(K: int, d: int, J: int, rng: np.random.Generator, budget: float = 0.25) -> Instance:
    """K random configurations of J equiprobable types; rewards and consumptions uniform on [0, 1]."""
    dists = [
        DiscreteRequestDist(np.full(J, 1.0 / J), rng.uniform(0, 1, J), rng.uniform(0, 1, (J, d))) for _ in range(K)
    ]
    return Instance(dists, np.full(d, budget))


# Published marginals of the Alibaba 2018 batch_task trace (on a 0-100 scale), from the paper's repository notes.
_CPU_MEAN, _CPU_SD, _MEM_MEAN, _MEM_SD = 83.6, 63.5, 34.9, 29.9


def alibaba_like_instance(b: tuple[float, float] = (0.35, 0.15), noise: float = 0.1) -> Instance:
    """A *synthetic* continuous instance shaped like the official "real" experiment (K = 3, d = 2).

    Consumption (cpu, mem) is drawn from gamma laws matched to the trace's published means and standard
    deviations, divided by 200 and 100 and clipped to [0, 1]; the reward is c1[theta] cpu + c2[theta] mem plus
    N(0, noise^2) noise, clipped to [0, 2]: configuration 0 pays for cpu, 1 for memory, 2 for both, less.
    Not the trace itself (it is not available offline).
    """
    coef = ((1.0, 0.2), (0.2, 1.0), (0.55, 0.55))

    def gamma(rng: np.random.Generator, mean: float, sd: float, n: int) -> np.ndarray:
        shape = (mean / sd) ** 2
        return rng.gamma(shape, sd**2 / mean, n)

    def make(c1: float, c2: float) -> ContinuousRequestDist:
        def sampler(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
            cpu = np.clip(gamma(rng, _CPU_MEAN, _CPU_SD, n) / 200.0, 0.0, 1.0)
            mem = np.clip(gamma(rng, _MEM_MEAN, _MEM_SD, n) / 100.0, 0.0, 1.0)
            r = np.clip(c1 * cpu + c2 * mem + noise * rng.standard_normal(n), 0.0, 2.0)
            return r, np.stack([cpu, mem], axis=1)

        return ContinuousRequestDist(sampler, dim=2, r_max=2.0, a_max=1.0)

    return Instance([make(*c) for c in coef], b)
