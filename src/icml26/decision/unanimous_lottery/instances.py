"""Instances (the ground truth: utilities and bars) and advice, all drawn from a seeded ``np.random.Generator``.

No data set exists or is needed. The families:

- ``random_feasible``: u_i ~ U[0, 1]^m, a Dirichlet(1) lottery p0, τ_i = u_i·p0 - slack_i, slack_i ~ U[0.05, 0.2]:
  p0 is accepted by all (the *witness*) with room to spare. Since w_i = u_i - τ_i has entries in [-1, 1.2],
  p0 clears every bar by at least 0.05 / 1.2 > 4ε in units of each stakeholder's largest coefficient for every
  ε <= 1e-2, more than the elicitation's worst-case loss (4ε): every method solves every instance at every
  precision of the grid (a property test checks it). The order of stakeholders is already random;
- ``random_infeasible``: a random feasible instance in which two stakeholders, at random positions, are
  replaced by a contradictory pair u·p >= τ and u·p <= τ - gap;
- ``adversarial_order``: the same stakeholders, most accepting (of the simplex's centre) first and the
  rejecters from the least to the most violated: a fixed verification order then elicits shallow cuts first;
- ``chain`` (m = 2): thresholds x >= c_1 < c_2 < ... on x = p[1], each placed just above the centre that the
  implemented centring rule proposes once the previous links are learned (built by running that rule), so
  that in index order every link is elicited;
- ``narrow_window``: the acceptable lotteries form a slab c <= p[0] <= c + width·ε at a uniform position c,
  the hard family of the Ω(log 1/ε) bound; the other stakeholders have looser bars on p[0].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icml26.decision.unanimous_lottery.algorithms import inner_centre
from icml26.decision.unanimous_lottery.elicit import LearnedConstraints, elicit_halfspace
from icml26.decision.unanimous_lottery.lp import max_slack_point
from icml26.decision.unanimous_lottery.oracle import LinearStakeholder, QueryOracle

__all__ = [
    "Instance",
    "adversarial_binding",
    "adversarial_order",
    "chain",
    "narrow_window",
    "perturbed_lottery",
    "random_feasible",
    "random_infeasible",
    "true_binding",
    "wrong_vertex",
]


@dataclass(frozen=True)
class Instance:
    """n stakeholders over m options: ``utilities`` (n, m), ``thresholds`` (n,); ``witness``: a lottery all
    accept, when the generator knows one."""

    utilities: np.ndarray
    thresholds: np.ndarray
    name: str = "instance"
    witness: np.ndarray | None = None

    @property
    def n_stakeholders(self) -> int:
        return int(self.utilities.shape[0])

    @property
    def n_options(self) -> int:
        return int(self.utilities.shape[1])

    @property
    def constraints(self) -> np.ndarray:
        """w_i = u_i - τ_i 1: stakeholder i accepts p iff w_i·p >= 0."""
        return self.utilities - self.thresholds[:, None]

    def oracle(self, *, log: bool = False) -> QueryOracle:
        return QueryOracle.from_arrays(self.utilities, self.thresholds, log=log)

    def stakeholders(self) -> list[LinearStakeholder]:
        return [LinearStakeholder(u, t) for u, t in zip(self.utilities, self.thresholds, strict=True)]

    def permuted(self, order: np.ndarray, name: str | None = None) -> Instance:
        return Instance(self.utilities[order], self.thresholds[order], name or self.name, self.witness)


def _check_sizes(n: int, m: int) -> None:
    if n < 1:
        raise ValueError("no stakeholders: n must be >= 1")
    if m < 1:
        raise ValueError("the menu is empty: m must be >= 1")


def random_feasible(
    n: int, m: int, rng: np.random.Generator, min_slack: float = 0.05, max_slack: float = 0.2
) -> Instance:
    _check_sizes(n, m)
    U = rng.random((n, m))
    p0 = rng.dirichlet(np.ones(m))
    tau = U @ p0 - rng.uniform(min_slack, max_slack, n)
    return Instance(U, tau, "random_feasible", p0)


def random_infeasible(n: int, m: int, rng: np.random.Generator, gap: float = 0.05) -> Instance:
    """A contradictory pair (u, τ) and (-u, -τ + gap) hidden among random feasible stakeholders (n >= 2)."""
    if n < 2:
        raise ValueError("an infeasible instance of this family needs n >= 2 stakeholders")
    base = random_feasible(n, m, rng)
    U, tau = base.utilities.copy(), base.thresholds.copy()
    i, j = rng.choice(n, size=2, replace=False)
    U[j], tau[j] = -U[i], -tau[i] + gap
    return Instance(U, tau, "random_infeasible", None)


def adversarial_order(instance: Instance) -> Instance:
    """Sort by decreasing slack at the simplex's centre: acceptors first, then the shallowest rejecters."""
    W = instance.constraints
    centre = np.full(instance.n_options, 1.0 / instance.n_options)
    norms = np.linalg.norm(W - W.mean(1, keepdims=True), axis=1)
    slack = W @ centre / np.where(norms > 0, norms, 1.0)
    return instance.permuted(np.argsort(-slack, kind="stable"), f"{instance.name}/adversarial_order")


def chain(n_links: int, eps: float, n_stakeholders: int | None = None, step: float = 0.1) -> Instance:
    """The adversarial chain for the max-slack centring rule (m = 2), in the order that elicits every link.

    Link k accepts x = p[1] >= c_k with c_k = x_k + step (1 - x_k), where x_k is the centre the loop proposes
    after learning links 1..k-1 to precision eps. Stakeholders beyond the links accept every lottery.
    """
    if n_links < 1:
        raise ValueError("a chain needs at least one link")
    n = n_links if n_stakeholders is None else int(n_stakeholders)
    if n < n_links:
        raise ValueError(f"n_stakeholders ({n}) must be at least n_links ({n_links})")
    learned = LearnedConstraints.concatenate([], 2)
    thresholds = []
    for k in range(n_links):
        p, _ = inner_centre(learned)
        if p is None:
            raise RuntimeError("the chain's inner region vanished; use a smaller eps")
        x = p[1]
        if step * (1.0 - x) < 4 * eps:  # the next link would sit within the bisection's resolution
            raise ValueError(f"a chain of {n_links} links needs a smaller eps than {eps:g} (only {k} fit)")
        c = x + step * (1.0 - x)
        thresholds.append(c)
        learned = LearnedConstraints.concatenate(
            [learned, elicit_halfspace(QueryOracle.from_arrays([[0.0, 1.0]], [c], log=False), 0, 2, eps)], 2
        )
    U = np.vstack([np.tile([0.0, 1.0], (n_links, 1)), np.ones((n - n_links, 2))])
    tau = np.concatenate([thresholds, np.zeros(n - n_links)])
    return Instance(U, tau, "chain", np.array([0.0, 1.0]))


def narrow_window(n: int, m: int, eps: float, rng: np.random.Generator, width: float = 4.0) -> Instance:
    """Acceptable lotteries: c <= p[0] <= c + width·eps (stakeholders 0 and 1, in random positions), c uniform;
    the n - 2 others have bars on p[0] looser by a uniform fraction of the room left on their side (m >= 2)."""
    if n < 2 or m < 2:
        raise ValueError("a narrow window needs n >= 2 stakeholders and m >= 2 options")
    w = width * eps
    if w >= 1:
        raise ValueError(f"width * eps = {w:g} must be < 1")
    c = rng.uniform(0.0, 1.0 - w)
    lower_side = rng.random(n) < 0.5
    lower_side[:2] = [True, False]
    room = np.where(lower_side, c, 1.0 - c - w)
    gap = np.where(np.arange(n) < 2, 0.0, rng.random(n) * room)
    U = np.zeros((n, m))
    U[:, 0] = np.where(lower_side, 1.0, -1.0)
    tau = np.where(lower_side, c - gap, -(c + w + gap))
    witness = np.full(m, (1.0 - c - w / 2) / (m - 1))
    witness[0] = c + w / 2
    order = rng.permutation(n)
    return Instance(U[order], tau[order], "narrow_window", witness)


# ------------------------------------------------------------------------------------------------------ advice
def true_binding(instance: Instance) -> np.ndarray:
    """The stakeholders binding at the true constraints' Chebyshev centre (positive LP duals): exact B̂."""
    sol = max_slack_point(instance.constraints, facets=True)
    return np.flatnonzero(sol.multipliers > 1e-9)


def adversarial_binding(instance: Instance, k: int) -> np.ndarray:
    """The k stakeholders with the most slack at the witness (or the centre): advice that never binds."""
    p = instance.witness if instance.witness is not None else np.full(instance.n_options, 1 / instance.n_options)
    return np.argsort(-(instance.constraints @ p), kind="stable")[:k]


def wrong_vertex(instance: Instance) -> np.ndarray:
    """The pure option rejected by the most stakeholders: a confidently wrong advised lottery."""
    return np.eye(instance.n_options)[int(np.argmin((instance.constraints >= 0).sum(axis=0)))]


def perturbed_lottery(lottery: np.ndarray, rng: np.random.Generator, noise: float = 0.3) -> np.ndarray:
    """(1 - noise) lottery + noise Dirichlet(1): a roughly right advised lottery."""
    return (1 - noise) * np.asarray(lottery, float) + noise * rng.dirichlet(np.ones(len(lottery)))
