"""Online policies with one interface: ``select_config(t)``, ``accept_probability(t, theta, r, a, remaining)``,
``update(...)``.

All policies see the request (r, a) of the chosen configuration before deciding, also when they reject it, and
must respect the hard budget (the simulator checks it every period). Admission is stated as a probability (0 or 1
for threshold rules) and drawn by the simulator from its own random stream: that keeps ``accept_probability``
free of side effects and makes randomised admissions common across policies. Empirical distributions are kept
as *type counts* (identical requests are aggregated), so an LP re-solve costs the same at period 10 and at period 10^5.

SP-UCB-OLP (Shen, Xu, Glynn, Ye, Jaillet, ICML 2026), as we read it:

1. warm start: ``warm_start_rounds`` observe-only rounds per configuration, round-robin, rejecting everything;
2. re-solve on a fixed grid (every ``resolve_every`` periods, then whenever t has grown by ``resolve_growth``):
   (p_t, w_t) = argmin_{0 <= p <= P_max} p.b_t + max_theta (g^_theta(p) + beta_theta), with g^ the empirical surplus,
   beta_theta = alpha R_max sqrt((d log(c0 d P_max A_max T / R_max) + log(2 K T / delta)) / N_theta), delta = 1 / T^2,
   P_max = R_max / min(b) + 1, and b_t = (1 - eps) x (remaining budget per remaining period), eps = sqrt(log T / T);
   w_t is read from the LP (the duals of its epigraph rows), not a uniform mix over the argmax;
3. each period: theta_t ~ w_t; accept iff r >= p_t.a and a fits in the remaining budget.

What the abstract leaves open and we chose: the mixture from the LP; b_t from the *remaining* budget (standard
online-LP re-solving, which corrects the drift that threshold acceptance causes at price ties; ``budget="static"``
uses (1 - eps) b as the official code does); c0 = 1. alpha = 0 is the Greedy baseline.
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np

from icml26.serving.config_selection.instances import DiscreteRequestDist, Instance
from icml26.serving.config_selection.oracle import fluid_oracle, minmax_dual, single_values

__all__ = [
    "POLICIES",
    "SPUCBOLP",
    "FixedConfigOLP",
    "Policy",
    "PrimalDualOLP",
    "RandomConfigOLP",
    "TypeCounts",
    "UCBNoAdmission",
    "greedy_sp_olp",
    "make_policy",
]

TIE_TOL = 1e-9


class Policy(Protocol):
    name: str

    def select_config(self, t: int) -> int: ...

    def accept_probability(self, t: int, theta: int, r: float, a: np.ndarray, remaining: np.ndarray) -> float: ...

    def update(self, t: int, theta: int, r: float, a: np.ndarray, accepted: bool) -> None: ...


def _fits(a: np.ndarray, remaining: np.ndarray) -> bool:
    return bool(np.all(a <= remaining + 1e-12))


class TypeCounts:
    """Empirical request distribution of one configuration, aggregated by distinct (r, a).

    Discrete requests aggregate exactly. For continuous requests pass ``resolution``: (r, a) are snapped to that
    grid, which bounds the number of types (and so the LP) whatever the horizon.
    """

    def __init__(self, d: int, resolution: float | None = None) -> None:
        if resolution is not None and not resolution > 0:
            raise ValueError(f"resolution must be positive, got {resolution}")
        self.resolution = resolution
        self.index: dict[tuple[float, ...], int] = {}
        self.rewards: list[float] = []
        self.consumptions: list[np.ndarray] = []
        self.counts: list[int] = []
        self.n = 0
        self.d = d

    def add(self, r: float, a: np.ndarray) -> None:
        if self.resolution is not None:  # continuous requests: snap to a grid so the type count stays bounded
            r = round(r / self.resolution) * self.resolution
            a = np.round(a / self.resolution) * self.resolution
        key = (r, *a.tolist())
        j = self.index.get(key)
        if j is None:
            self.index[key] = len(self.counts)
            self.rewards.append(r)
            self.consumptions.append(a.copy())
            self.counts.append(1)
        else:
            self.counts[j] += 1
        self.n += 1

    def dist(self) -> DiscreteRequestDist:
        counts = np.asarray(self.counts, float)
        return DiscreteRequestDist(counts / counts.sum(), self.rewards, np.asarray(self.consumptions))

    def surplus(self, p: np.ndarray) -> float:
        if self.n == 0:
            return 0.0
        gain = np.maximum(np.asarray(self.rewards) - np.asarray(self.consumptions) @ p, 0.0)
        return float(np.asarray(self.counts) @ gain / self.n)


class _ResolvingPolicy:
    """Shared machinery: warm start, type counts, the re-solve grid, the budget the LP sees, and sampling w."""

    name = "resolving"

    def __init__(
        self,
        K: int,
        b: np.ndarray,
        T: int,
        r_max: float,
        a_max: float,
        seed: int = 0,
        warm_start_rounds: int = 1,
        resolve_every: int = 10,
        resolve_growth: float = 0.0,
        budget: str = "remaining",
        resolution: float | None = None,
    ) -> None:
        b = np.asarray(b, float)
        if T < 1 or K < 1 or np.any(b <= 0):
            raise ValueError("need T >= 1, K >= 1 and a positive per-period budget")
        if budget not in ("remaining", "static"):
            raise ValueError(f"budget must be 'remaining' or 'static', got {budget!r}")
        self.K, self.b, self.T, self.d = K, b, T, b.size
        self.r_max, self.a_max = r_max, a_max
        if warm_start_rounds < 1:
            raise ValueError(
                f"warm_start_rounds must be >= 1 (every configuration needs a sample), got {warm_start_rounds}"
            )
        if not (r_max > 0 and a_max > 0):
            raise ValueError(f"r_max and a_max must be positive, got {r_max}, {a_max}")
        # the policy's own stream, independent of the environment's (which is seeded by the same integer)
        self.rng = np.random.default_rng(np.random.SeedSequence([seed, 0x9011C7]))
        self.warm = K * warm_start_rounds
        self.resolve_every, self.resolve_growth, self.budget = resolve_every, resolve_growth, budget
        self.samples = [TypeCounts(self.d, resolution) for _ in range(K)]
        self.used = np.zeros(self.d)
        self.p = np.zeros(self.d)
        self.w = np.full(K, 1.0 / K)
        self.p_max = r_max / float(b.min()) + 1.0
        self.eps = math.sqrt(math.log(max(T, 2)) / T)
        self.next_resolve = self.warm

    def budget_rate(self, t: int) -> np.ndarray:
        if self.budget == "static":
            return (1 - self.eps) * self.b
        remaining = np.maximum(self.b * self.T - self.used, 0.0)
        return (1 - self.eps) * remaining / max(self.T - t, 1)

    def select_config(self, t: int) -> int:
        if t < self.warm:
            return t % self.K
        if t >= self.next_resolve:
            self.resolve(t)
            step = max(self.resolve_every, int(self.resolve_growth * t))
            self.next_resolve = t + step
        return int(self.rng.choice(self.K, p=self.w))

    def accept_probability(self, t: int, theta: int, r: float, a: np.ndarray, remaining: np.ndarray) -> float:
        return float(t >= self.warm and r >= float(self.p @ a) - TIE_TOL and _fits(a, remaining))

    def update(self, t: int, theta: int, r: float, a: np.ndarray, accepted: bool) -> None:
        self.samples[theta].add(r, a)
        if accepted:
            self.used += a

    def resolve(self, t: int) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


class SPUCBOLP(_ResolvingPolicy):
    """SP-UCB-OLP: optimistic saddle point (UCB bonus on each configuration's surplus) + online LP admission."""

    name = "sp_ucb_olp"

    def __init__(self, K: int, b: np.ndarray, T: int, r_max: float, a_max: float, alpha: float = 0.1, **kw) -> None:  # type: ignore[no-untyped-def]
        super().__init__(K, b, T, r_max, a_max, **kw)
        if alpha < 0:
            raise ValueError(f"alpha must be >= 0, got {alpha}")
        self.alpha = alpha
        delta = 1.0 / T**2
        c0 = 1.0
        log_term = self.d * math.log(max(c0 * self.d * self.p_max * a_max * T / r_max, math.e)) + math.log(
            2 * K * T / delta
        )
        self.bonus_scale = alpha * r_max * math.sqrt(log_term)

    def resolve(self, t: int) -> None:
        n = np.array([s.n for s in self.samples], float)
        bonus = self.bonus_scale / np.sqrt(np.maximum(n, 1.0))
        empirical = Instance([s.dist() for s in self.samples], self.b)
        _, self.p, self.w = minmax_dual(empirical, b=self.budget_rate(t), bonus=bonus, p_max=self.p_max)


def greedy_sp_olp(K: int, b: np.ndarray, T: int, r_max: float, a_max: float, **kw) -> SPUCBOLP:  # type: ignore[no-untyped-def]
    """The Greedy baseline: SP-UCB-OLP without the exploration bonus (alpha = 0)."""
    policy = SPUCBOLP(K, b, T, r_max, a_max, alpha=0.0, **kw)
    policy.name = "greedy"
    return policy


class RandomConfigOLP(_ResolvingPolicy):
    """A uniformly random configuration each period, with online-LP bid prices for the uniform mixture."""

    name = "random_olp"

    def select_config(self, t: int) -> int:
        if t >= self.warm and t >= self.next_resolve:
            self.resolve(t)
            self.next_resolve = t + max(self.resolve_every, int(self.resolve_growth * t))
        return t % self.K if t < self.warm else int(self.rng.integers(self.K))

    def resolve(self, t: int) -> None:
        total = [s.dist() for s in self.samples]
        probs = np.concatenate([d.probs / self.K for d in total])
        pooled = DiscreteRequestDist(
            probs / probs.sum(),
            np.concatenate([d.rewards for d in total]),
            np.concatenate([d.consumptions for d in total]),
        )
        _, self.p, _ = minmax_dual(Instance([pooled], self.b), b=self.budget_rate(t), p_max=self.p_max)


class FixedConfigOLP:
    """Knows the distributions: commits to the best single configuration and plays its fluid-optimal admission
    (accept type j with probability y_j, the LP's acceptance rate, fractional at the price tie)."""

    name = "fixed_best"

    def __init__(self, instance: Instance, seed: int = 0) -> None:
        self.theta = int(np.argmax(single_values(instance)))
        sol = fluid_oracle(instance, fixed=self.theta)
        dist = instance.discrete()[self.theta]
        # y_theta_j <= w_theta = 1 is already the probability of accepting a type-j request
        self.accept_prob = {
            (float(r), *a.tolist()): float(np.clip(y, 0.0, 1.0))
            for r, a, y in zip(dist.rewards, dist.consumptions, sol.y[self.theta], strict=True)
        }

    def select_config(self, t: int) -> int:
        return self.theta

    def accept_probability(self, t: int, theta: int, r: float, a: np.ndarray, remaining: np.ndarray) -> float:
        return self.accept_prob.get((r, *a.tolist()), 0.0) if _fits(a, remaining) else 0.0

    def update(self, t: int, theta: int, r: float, a: np.ndarray, accepted: bool) -> None:
        pass


class UCBNoAdmission:
    """UCB1 on each configuration's mean reward, accepting every request that fits (no admission control)."""

    name = "ucb_no_admission"

    def __init__(self, K: int, r_max: float, seed: int = 0) -> None:
        self.K, self.r_max = K, r_max
        self.n = np.zeros(K)
        self.total = np.zeros(K)

    def select_config(self, t: int) -> int:
        if t < self.K:
            return t
        index = self.total / self.n + self.r_max * np.sqrt(2 * math.log(t + 1) / self.n)
        return int(np.argmax(index))

    def accept_probability(self, t: int, theta: int, r: float, a: np.ndarray, remaining: np.ndarray) -> float:
        return float(_fits(a, remaining))

    def update(self, t: int, theta: int, r: float, a: np.ndarray, accepted: bool) -> None:
        self.n[theta] += 1
        self.total[theta] += r


class PrimalDualOLP:
    """Dual subgradient prices (p <- [p + eta (a x - b)]_0^P_max, eta = 1/sqrt(T)), configuration by UCB on the
    empirical Lagrangian surplus g^_theta(p); accept iff r > p.a and the request fits."""

    name = "primal_dual"

    def __init__(
        self, K: int, b: np.ndarray, T: int, r_max: float, seed: int = 0, resolution: float | None = None
    ) -> None:
        if T < 1 or K < 1 or not r_max > 0 or np.any(np.asarray(b, float) <= 0):
            raise ValueError("need T >= 1, K >= 1, r_max > 0 and a positive per-period budget")
        self.K, self.b, self.T, self.r_max = K, np.asarray(b, float), T, r_max
        self.samples = [TypeCounts(self.b.size, resolution) for _ in range(K)]
        self.p = np.zeros(self.b.size)
        self.eta = 1.0 / math.sqrt(T)
        self.p_max = r_max / float(self.b.min()) + 1.0

    def select_config(self, t: int) -> int:
        if t < self.K:
            return t
        g = np.array([s.surplus(self.p) for s in self.samples])
        n = np.array([s.n for s in self.samples], float)
        return int(np.argmax(g + self.r_max * np.sqrt(2 * math.log(t + 1) / n)))

    def accept_probability(self, t: int, theta: int, r: float, a: np.ndarray, remaining: np.ndarray) -> float:
        return float(r > float(self.p @ a) and _fits(a, remaining))

    def update(self, t: int, theta: int, r: float, a: np.ndarray, accepted: bool) -> None:
        self.samples[theta].add(r, a)
        self.p = np.clip(self.p + self.eta * (a * accepted - self.b), 0.0, self.p_max)


POLICIES: tuple[str, ...] = (
    "sp_ucb_olp",
    "sp_ucb_olp_static",
    "greedy",
    "fixed_best",
    "ucb_no_admission",
    "primal_dual",
    "random_olp",
)


def make_policy(name: str, instance: Instance, T: int, seed: int = 0, **kw) -> Policy:  # type: ignore[no-untyped-def]
    """Build a policy by name for ``instance`` and horizon T (``kw`` goes to the re-solving policies)."""
    K, b, r_max, a_max = instance.K, instance.b, instance.r_max, instance.a_max
    if name == "sp_ucb_olp":
        return SPUCBOLP(K, b, T, r_max, a_max, seed=seed, **kw)
    if name == "sp_ucb_olp_static":
        policy = SPUCBOLP(K, b, T, r_max, a_max, seed=seed, **{**kw, "budget": "static"})
        policy.name = name
        return policy
    if name == "greedy":
        return greedy_sp_olp(K, b, T, r_max, a_max, seed=seed, **kw)
    if name == "random_olp":
        return RandomConfigOLP(K, b, T, r_max, a_max, seed=seed, **kw)
    if name == "fixed_best":
        return FixedConfigOLP(instance, seed=seed)
    if name == "ucb_no_admission":
        return UCBNoAdmission(K, r_max, seed=seed)
    if name == "primal_dual":
        return PrimalDualOLP(K, b, T, r_max, seed=seed, resolution=kw.get("resolution"))
    raise ValueError(f"unknown policy {name!r}; choose one of {', '.join(POLICIES)}")
