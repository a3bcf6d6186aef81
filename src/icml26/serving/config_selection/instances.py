"""Request distributions and problem instances.

A configuration theta induces a distribution D_theta over requests (r, a): reward r >= 0 and consumption
a in [0, A_max]^d. Discrete distributions over a few request *types* make the fluid oracle an exact LP (no Monte
Carlo error in the benchmark, which would swamp a sqrt(T) regret).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["DiscreteRequestDist", "Instance", "gap_instance", "k_sweep_instance", "random_instance"]


@dataclass(frozen=True, eq=False)
class DiscreteRequestDist:
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
    def n_types(self) -> int:
        return self.probs.size

    @property
    def dim(self) -> int:
        return self.consumptions.shape[1]

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Type indices of ``n`` independent requests."""
        return np.minimum(np.searchsorted(np.cumsum(self.probs), rng.random(n), side="right"), self.n_types - 1)

    def surplus(self, p: ArrayLike) -> float:
        """g(p) = E[(r - p.a)^+]: the value of one request at bid prices p."""
        return float(self.probs @ np.maximum(self.rewards - self.consumptions @ np.asarray(p, float), 0.0))

    def threshold_consumption(self, p: ArrayLike) -> np.ndarray:
        """h(p) = E[a 1{r > p.a}]: expected consumption when accepting exactly the requests worth their price."""
        accept = self.rewards > self.consumptions @ np.asarray(p, float)
        return np.asarray((self.probs * accept) @ self.consumptions)


@dataclass(frozen=True, eq=False)
class Instance:
    """K configurations over d resources and a per-period budget b > 0 (the horizon's budget is B = b T)."""

    dists: tuple[DiscreteRequestDist, ...]
    b: np.ndarray

    def __init__(self, dists: tuple[DiscreteRequestDist, ...] | list[DiscreteRequestDist], b: ArrayLike) -> None:
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
        return float(max(dist.rewards.max() for dist in self.dists))

    @property
    def a_max(self) -> float:
        return float(max(dist.consumptions.max() for dist in self.dists))


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


def random_instance(K: int, d: int, J: int, rng: np.random.Generator, budget: float = 0.25) -> Instance:
    """K random configurations of J equiprobable types; rewards and consumptions uniform on [0, 1]."""
    dists = [
        DiscreteRequestDist(np.full(J, 1.0 / J), rng.uniform(0, 1, J), rng.uniform(0, 1, (J, d))) for _ in range(K)
    ]
    return Instance(dists, np.full(d, budget))
