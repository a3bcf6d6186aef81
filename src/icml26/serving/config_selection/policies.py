"""Online policies with one interface: ``select_config(t)``, ``accept_probability(t, theta, r, a, remaining)``,
``update(...)``.

All policies see the request (r, a) of the chosen configuration before deciding, also when they reject it, and
must respect the hard budget (the simulator checks it every period). Admission is stated as a probability (0 or 1
for threshold rules) and drawn by the simulator from its own random stream: that keeps ``accept_probability``
free of side effects and makes randomised admissions common across policies. Empirical distributions are kept
as *type counts* (identical requests are aggregated, which leaves the LP unchanged), so a re-solve costs the same
at period 10 and at period 10^5.

SP-UCB-OLP (Shen, Xu, Glynn, Ye, Jaillet, ICML 2026):

1. warm start: ``warm_start_rounds`` observe-only rounds per configuration, round-robin, rejecting everything;
2. re-solve every ``resolve_every`` periods (and, with ``resolve_growth > 0``, then whenever t has grown by that
   fraction): (p_t, w_t) = argmin_{0 <= p <= P_max} p.b_t + max_theta (g^_theta(p) + beta_theta), g^ the empirical
   surplus, beta_theta = alpha R_max sqrt((d log(c0 d P_max A_max T / R_max) + log(2 K T / delta)) / N_theta),
   delta = 1 / T^2, c0 = 1, P_max = R_max / min(b) + 1, and the static budget b_t = (1 - eps) b, eps = sqrt(log T / T);
3. each period: theta_t ~ w_t; accept iff r >= p_t.a and a fits in the remaining budget.

The default is the paper's rule: the static budget and the saddle point's own mixture w (the LP duals of the
epigraph rows). Options: ``mixture="uniform"`` is the official code's tie-break (uniform over the configurations
that attain the optimistic envelope at p_t; exact only when one configuration attains it); ``budget="remaining"``
is *ours*: b_t = (1 - eps) x remaining budget / remaining periods (standard online-LP re-solving), which corrects
the drift of threshold admission at a fractional price tie. alpha = 0 is the Greedy baseline.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

import numpy as np

from icml26.serving.config_selection._checks import check_budget_vector, check_choice, check_int, check_real
from icml26.serving.config_selection.instances import DiscreteRequestDist, Instance
from icml26.serving.config_selection.oracle import SaddleWarmStart, fluid_oracle, saddle_lp, single_values

__all__ = [
    "BUDGET_RULES",
    "MIXTURES",
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

TIE_TOL = 1e-9  # accept at r = p.a up to round-off
ENVELOPE_TIE = 1e-8  # the official code's tolerance for "attains the envelope" (uniform mixture)
BUDGET_RULES: tuple[str, ...] = ("static", "remaining")
MIXTURES: tuple[str, ...] = ("lp", "uniform")


class Policy(Protocol):
    name: str

    def select_config(self, t: int) -> int: ...

    def accept_probability(self, t: int, theta: int, r: float, a: np.ndarray, remaining: np.ndarray) -> float: ...

    def update(self, t: int, theta: int, r: float, a: np.ndarray, accepted: bool) -> None: ...


def _fits(a: np.ndarray, remaining: np.ndarray) -> bool:
    return bool((a <= remaining + 1e-12).all())


class TypeCounts:
    """Empirical request distribution of one configuration, aggregated by distinct (r, a).

    Discrete requests aggregate exactly. For continuous requests pass ``resolution``: (r, a) are snapped to that
    grid, which bounds the number of types (and so the LP) whatever the horizon.
    """

    def __init__(self, d: int, resolution: float | None = None) -> None:
        if resolution is not None:
            resolution = check_real("resolution", resolution, 0.0, strict=True)
        self.resolution = resolution
        self.index: dict[tuple[float, ...], int] = {}
        self._rewards = np.empty(16)
        self._consumptions = np.empty((16, d))
        self._counts = np.zeros(16)
        self.n_types = 0
        self.n = 0
        self.d = d

    @property
    def rewards(self) -> np.ndarray:
        return self._rewards[: self.n_types]

    @property
    def consumptions(self) -> np.ndarray:
        return self._consumptions[: self.n_types]

    @property
    def counts(self) -> np.ndarray:
        return self._counts[: self.n_types]

    @property
    def probs(self) -> np.ndarray:
        return self.counts / self.n

    def add(self, r: float, a: np.ndarray) -> None:
        if self.resolution is not None:  # continuous requests: snap to a grid so the type count stays bounded
            r = round(r / self.resolution) * self.resolution
            a = np.round(a / self.resolution) * self.resolution
        key = (r, *a.tolist())
        j = self.index.get(key)
        if j is None:
            j = self.n_types
            if j == self._counts.size:  # amortised growth
                self._rewards = np.concatenate([self._rewards, np.empty(j)])
                self._consumptions = np.concatenate([self._consumptions, np.empty((j, self.d))])
                self._counts = np.concatenate([self._counts, np.zeros(j)])
            self.index[key] = j
            self._rewards[j], self._consumptions[j] = r, a
            self.n_types += 1
        self._counts[j] += 1
        self.n += 1

    def dist(self) -> DiscreteRequestDist:
        return DiscreteRequestDist(self.probs, self.rewards, self.consumptions)

    def surplus(self, p: np.ndarray) -> float:
        if self.n == 0:
            return 0.0
        return float(self.counts @ np.maximum(self.rewards - self.consumptions @ p, 0.0) / self.n)


class _ResolvingPolicy:
    """Shared machinery: warm start, type counts, the re-solve grid, the budget the LP sees, and sampling w."""

    name = "resolving"

    def __init__(
        self,
        K: int,
        b: Any,
        T: int,
        r_max: float,
        a_max: float,
        seed: int = 0,
        warm_start_rounds: int = 1,
        resolve_every: int = 10,
        resolve_growth: float = 0.0,
        budget: str = "static",
        resolution: float | None = None,
    ) -> None:
        self.K = check_int("K", K, 1)
        self.T = check_int("T", T, 1)
        self.b = check_budget_vector(b)
        self.d = self.b.size
        self.r_max = check_real("r_max", r_max, 0.0, strict=True)
        self.a_max = check_real("a_max", a_max, 0.0, strict=True)
        seed = check_int("seed", seed, 0)
        self.warm = self.K * check_int("warm_start_rounds (every configuration needs a sample)", warm_start_rounds, 1)
        self.resolve_every = check_int("resolve_every", resolve_every, 1)
        self.resolve_growth = check_real("resolve_growth", resolve_growth, 0.0)
        self.budget = check_choice("budget", budget, BUDGET_RULES)
        # the policy's own stream, independent of the environment's (which is seeded by the same integer)
        self.rng = np.random.default_rng(np.random.SeedSequence([seed, 0x9011C7]))
        self.samples = [TypeCounts(self.d, resolution) for _ in range(self.K)]
        self.used = np.zeros(self.d)
        self.p = np.zeros(self.d)
        self.w = np.full(self.K, 1.0 / self.K)
        self._cdf = np.cumsum(self.w)
        self.p_max = self.r_max / float(self.b.min()) + 1.0
        self.eps = math.sqrt(math.log(max(self.T, 2)) / self.T)
        self.next_resolve = self.warm
        self.lp_basis = SaddleWarmStart()  # this learner's last LP basis (warm-starts the next re-solve)

    def budget_rate(self, t: int) -> np.ndarray:
        if self.budget == "static":
            return (1 - self.eps) * self.b
        remaining = np.maximum(self.b * self.T - self.used, 0.0)
        return (1 - self.eps) * remaining / max(self.T - t, 1)

    def _set_mixture(self, w: np.ndarray) -> None:
        self.w = w
        self._cdf = np.cumsum(w)
        self._cdf[-1] = 1.0

    def select_config(self, t: int) -> int:
        if t < self.warm:
            return t % self.K
        if t >= self.next_resolve:
            self.resolve(t)
            self.next_resolve = t + max(self.resolve_every, int(self.resolve_growth * t))
        return int(np.searchsorted(self._cdf, self.rng.random(), side="right"))

    def accept_probability(self, t: int, theta: int, r: float, a: np.ndarray, remaining: np.ndarray) -> float:
        return float(t >= self.warm and r >= float(self.p @ a) - TIE_TOL and _fits(a, remaining))

    def update(self, t: int, theta: int, r: float, a: np.ndarray, accepted: bool) -> None:
        self.samples[theta].add(r, a)
        if accepted:
            self.used += a

    def resolve(self, t: int) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


class SPUCBOLP(_ResolvingPolicy):
    """SP-UCB-OLP: optimistic saddle point (UCB bonus on each configuration's surplus) + online-LP admission.

    ``SPUCBOLP(K, b, T, r_max, a_max)`` is the paper's rule: static budget (1 - eps) b and the saddle point's
    mixture. ``mixture="uniform"`` is the official code's tie-break; ``budget="remaining"`` is our variant.
    ``resolution`` snaps continuous requests to a grid (bounded LP); leave it None for discrete requests.
    The paper's P_max = R_max / min(b) + 1 enters the bonus's log term, so with alpha > 0 a change of the units of
    r changes the bonus slightly (alpha = 0, Greedy, acts the same in any units).
    """

    name = "sp_ucb_olp"

    def __init__(
        self,
        K: int,
        b: Any,
        T: int,
        r_max: float,
        a_max: float,
        alpha: float = 0.1,
        mixture: str = "lp",
        **kw: Any,
    ) -> None:
        super().__init__(K, b, T, r_max, a_max, **kw)
        self.alpha = check_real("alpha", alpha, 0.0)
        self.mixture = check_choice("mixture", mixture, MIXTURES)
        delta = 1.0 / self.T**2
        c0 = 1.0
        log_term = self.d * math.log(max(c0 * self.d * self.p_max * self.a_max * self.T / self.r_max, math.e))
        self.bonus_scale = self.alpha * self.r_max * math.sqrt(log_term + math.log(2 * self.K * self.T / delta))

    def resolve(self, t: int) -> None:
        n = np.array([s.n for s in self.samples], float)
        bonus = self.bonus_scale / np.sqrt(np.maximum(n, 1.0))
        _, self.p, w = saddle_lp(
            [s.probs for s in self.samples],
            [s.rewards for s in self.samples],
            [s.consumptions for s in self.samples],
            self.budget_rate(t),
            bonus,
            self.p_max,
            warm=self.lp_basis,
        )
        if self.mixture == "uniform":  # the official code: uniform over the configurations attaining the envelope
            ucb = np.array([s.surplus(self.p) for s in self.samples]) + bonus
            w = (ucb >= ucb.max() - ENVELOPE_TIE).astype(float)
            w /= w.sum()
        self._set_mixture(w)


def greedy_sp_olp(K: int, b: Any, T: int, r_max: float, a_max: float, **kw: Any) -> SPUCBOLP:
    """The Greedy baseline: SP-UCB-OLP without the exploration bonus (alpha = 0), same rules otherwise."""
    if "alpha" in kw:
        raise ValueError("greedy_sp_olp fixes alpha = 0 (it is SP-UCB-OLP without the bonus)")
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
        _, self.p, _ = saddle_lp(  # one pooled configuration: every group feeds the same epigraph row
            [s.probs / self.K for s in self.samples],
            [s.rewards for s in self.samples],
            [s.consumptions for s in self.samples],
            self.budget_rate(t),
            np.zeros(1),
            self.p_max,
            owner=np.zeros(self.K, int),
            warm=self.lp_basis,
        )


class FixedConfigOLP:
    """Knows the distributions: commits to the best single configuration and plays its fluid-optimal admission.

    Discrete types: accept type j with probability y_j, the LP's acceptance rate (fractional at the price tie).
    Atomless (jittered) types: accept iff r >= p_theta.a, which is exactly the fluid optimum's acceptance.
    """

    name = "fixed_best"

    def __init__(self, instance: Instance, seed: int = 0) -> None:
        self.theta = int(np.argmax(single_values(instance)))
        sol = fluid_oracle(instance, fixed=self.theta)
        self.price: np.ndarray | None = None
        self.accept_prob: dict[tuple[float, ...], float] = {}
        if instance.is_jittered:
            self.price = sol.p
            return
        dist = instance.discrete()[self.theta]
        # y_theta_j <= w_theta = 1 is already the probability of accepting a type-j request
        self.accept_prob = {
            (float(r), *a.tolist()): float(np.clip(y, 0.0, 1.0))
            for r, a, y in zip(dist.rewards, dist.consumptions, sol.y[self.theta], strict=True)
        }

    def select_config(self, t: int) -> int:
        return self.theta

    def accept_probability(self, t: int, theta: int, r: float, a: np.ndarray, remaining: np.ndarray) -> float:
        if not _fits(a, remaining):
            return 0.0
        if self.price is not None:
            return float(r >= float(self.price @ a))
        return self.accept_prob.get((r, *a.tolist()), 0.0)

    def update(self, t: int, theta: int, r: float, a: np.ndarray, accepted: bool) -> None:
        pass


class UCBNoAdmission:
    """UCB1 on each configuration's mean reward, accepting every request that fits (no admission control)."""

    name = "ucb_no_admission"

    def __init__(self, K: int, r_max: float, seed: int = 0) -> None:
        self.K, self.r_max = check_int("K", K, 1), check_real("r_max", r_max, 0.0, strict=True)
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
    """Dual subgradient prices p <- [p + eta (a x - b)]_0^P_max, configuration by UCB on the empirical Lagrangian
    surplus g^_theta(p); accept iff r > p.a and the request fits.

    The step defaults to eta = R_max / (A_max^2 sqrt(T)) (ours): a price is reward per unit of consumption, so the
    step scales with R_max / A_max^2 and the policy acts the same whatever the units of r and a.
    """

    name = "primal_dual"

    def __init__(
        self,
        K: int,
        b: Any,
        T: int,
        r_max: float,
        a_max: float = 1.0,
        seed: int = 0,
        resolution: float | None = None,
        eta: float | None = None,
    ) -> None:
        self.K, self.T = check_int("K", K, 1), check_int("T", T, 1)
        self.b, self.r_max = check_budget_vector(b), check_real("r_max", r_max, 0.0, strict=True)
        a_max = check_real("a_max", a_max, 0.0, strict=True)
        self.samples = [TypeCounts(self.b.size, resolution) for _ in range(self.K)]
        self.p = np.zeros(self.b.size)
        default = self.r_max / (a_max**2 * math.sqrt(self.T))
        self.eta = default if eta is None else check_real("eta", eta, 0.0, strict=True)
        self.p_max = self.r_max / float(self.b.min()) + 1.0

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


# name -> (factory, the options the name fixes). A name's suffix states its rule, so that every arm of a
# comparison can be put on the same budget rule by name: "<policy>" is the paper's static budget,
# "<policy>_remaining" our remaining-budget variant.
_RESOLVING: dict[str, tuple[Any, dict[str, str]]] = {
    "sp_ucb_olp": (SPUCBOLP, {}),
    "sp_ucb_olp_uniform": (SPUCBOLP, {"mixture": "uniform"}),
    "sp_ucb_olp_remaining": (SPUCBOLP, {"budget": "remaining"}),
    "greedy": (greedy_sp_olp, {}),
    "greedy_remaining": (greedy_sp_olp, {"budget": "remaining"}),
    "random_olp": (RandomConfigOLP, {}),
    "random_olp_remaining": (RandomConfigOLP, {"budget": "remaining"}),
}
POLICIES: tuple[str, ...] = (*_RESOLVING, "fixed_best", "ucb_no_admission", "primal_dual")


def make_policy(name: str, instance: Instance, T: int, seed: int = 0, **kw: Any) -> Policy:
    """Build a policy by name for ``instance`` and horizon T (``kw`` goes to the re-solving policies; the
    learning ones also take ``resolution``). Names are listed in :data:`POLICIES`."""
    K, b, r_max, a_max = instance.K, instance.b, instance.r_max, instance.a_max
    if name in _RESOLVING:
        factory, fixed = _RESOLVING[name]
        clash = {k: kw[k] for k in fixed if k in kw and kw[k] != fixed[k]}
        if clash:
            raise ValueError(f"policy {name!r} fixes {fixed}; got {clash}")
        policy = factory(K, b, T, r_max, a_max, seed=seed, **{**kw, **fixed})
        policy.name = name
        return policy  # type: ignore[no-any-return]
    if name == "fixed_best":
        return FixedConfigOLP(instance, seed=seed)
    if name == "ucb_no_admission":
        return UCBNoAdmission(K, r_max, seed=seed)
    if name == "primal_dual":
        return PrimalDualOLP(K, b, T, r_max, a_max, seed=seed, resolution=kw.get("resolution"), eta=kw.get("eta"))
    raise ValueError(f"unknown policy {name!r}; choose one of {', '.join(POLICIES)}")
