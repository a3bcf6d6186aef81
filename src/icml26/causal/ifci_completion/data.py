"""Finite samples: linear-Gaussian SEMs with latent confounders and soft (mean-shift) interventions, Fisher-z tests.

**Simulation.** Each directed edge ``a -> b`` gets a coefficient of random sign and magnitude in [0.5, 1.5]; each
bidirected edge ``a <-> b`` becomes a latent ``L ~ N(0, 1)`` loading on both ends with coefficients in [0.5, 1];
noises are ``N(0, 1)``. Environment 0 is observational; in environment ``k`` every target's noise mean is shifted
by ``shift`` (a soft intervention: the mechanism's inputs stay). A shift of the variance only would be invisible to
the mean-based tests below (a known trap), so we shift means.

**Tests** (an :class:`~.ifci.IndependenceOracle` over ``V u F``):

- ``X _||_ Y | W u F`` (both observed; I-FCI always conditions on every F-node): pool all environments and
  partial out ``W`` and one indicator per non-reference environment (conditioning on all F-nodes = fixing the
  environment, which in a linear model is a per-environment mean);
- ``F_ij _||_ Y | W u F'``: keep environments ``i`` and ``j`` only, and test the indicator of environment ``j``
  against ``Y`` given ``W`` (an invariance of ``E[Y | W]`` across the two environments).

Both are Fisher-z tests of a partial correlation; ``independent`` iff the p-value exceeds ``alpha``.

Reference: Kocaoglu et al., NeurIPS 2019, Section 5 (pooled tests with F-node indicators).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from icml26.causal.ifci_completion.admg import ADMG


def simulate_linear_sem(
    admg: ADMG,
    targets: Sequence[Iterable[int]],
    n_samples: int,
    rng: np.random.Generator,
    shift: float = 1.5,
) -> list[np.ndarray]:
    """One ``(n_samples, n)`` array per environment: observational first, then one per target set."""
    n = admg.n
    coef = np.where(admg.directed, rng.uniform(0.5, 1.5, (n, n)) * rng.choice([-1, 1], (n, n)), 0.0)
    latents = [(int(a), int(b)) for a, b in zip(*np.nonzero(np.triu(admg.bidirected)), strict=True)]
    loadings = rng.uniform(0.5, 1.0, (len(latents), 2))
    order = _topological_order(admg)
    envs = [set()] + [set(t) for t in targets]
    out = []
    for env in envs:
        x = np.zeros((n_samples, n))
        noise = rng.standard_normal((n_samples, n))
        lat = rng.standard_normal((n_samples, len(latents)))
        for v in order:
            x[:, v] = noise[:, v] + x @ coef[:, v] + (shift if v in env else 0.0)
            for k, (a, b) in enumerate(latents):
                if v == a:
                    x[:, v] += loadings[k, 0] * lat[:, k]
                elif v == b:
                    x[:, v] += loadings[k, 1] * lat[:, k]
        out.append(x)
    return out


def _topological_order(admg: ADMG) -> list[int]:
    indeg = admg.directed.sum(axis=0).astype(int)
    stack = sorted(v for v in range(admg.n) if indeg[v] == 0)
    order = []
    while stack:
        v = stack.pop()
        order.append(v)
        for c in np.flatnonzero(admg.directed[v]):
            indeg[c] -= 1
            if indeg[c] == 0:
                stack.append(int(c))
    return order


def fisher_z_pvalue(data: np.ndarray, x: int, y: int, cond: Sequence[int]) -> float:
    """Two-sided Fisher-z p-value of the partial correlation of columns ``x`` and ``y`` given ``cond``."""
    cols = [x, y, *cond]
    corr = np.corrcoef(data[:, cols], rowvar=False)
    prec = np.linalg.pinv(corr)
    r = -prec[0, 1] / math.sqrt(prec[0, 0] * prec[1, 1])
    r = min(max(r, -0.999999), 0.999999)
    z = 0.5 * math.log((1 + r) / (1 - r)) * math.sqrt(max(len(data) - len(cond) - 3, 1))
    return math.erfc(abs(z) / math.sqrt(2))


@dataclass
class FisherZOracle:
    """Fisher-z independence tests over ``V u F`` from one dataset per environment (see the module docstring)."""

    datasets: list[np.ndarray]
    env_targets: list[frozenset[int]]  # one per environment, the observational one included
    alpha: float = 0.01
    variable_names: list[str] | None = None
    names: list[str] = field(init=False)
    f_targets: dict[int, frozenset[int]] = field(init=False)
    queries: int = 0

    def __post_init__(self) -> None:
        if len(self.datasets) != len(self.env_targets):
            raise ValueError(f"{len(self.datasets)} datasets but {len(self.env_targets)} target sets")
        widths = {d.shape[1] for d in self.datasets}
        if len(widths) != 1:
            raise ValueError(f"environments have different numbers of variables: {sorted(widths)}")
        self.n_vars = widths.pop()
        if any(t for t in self.env_targets for t in t if not 0 <= t < self.n_vars):
            raise ValueError("a target names an unknown variable")
        self.names = list(self.variable_names or [f"X{i}" for i in range(self.n_vars)])
        self.pairs = list(combinations(range(len(self.datasets)), 2))
        self.f_targets = {}
        for k, (i, j) in enumerate(self.pairs):
            self.names.append(f"F{i}{j}")
            self.f_targets[self.n_vars + k] = self.env_targets[i] ^ self.env_targets[j]
        stacked = np.vstack(self.datasets)
        dummies = np.zeros((len(stacked), len(self.datasets) - 1))
        start = len(self.datasets[0])
        for e, d in enumerate(self.datasets[1:]):
            dummies[start : start + len(d), e] = 1.0
            start += len(d)
        self._pooled = np.hstack([stacked, dummies])

    def __call__(self, x: int, y: int, cond: Iterable[int]) -> bool:
        self.queries += 1
        w = [v for v in cond if v < self.n_vars]
        if x >= self.n_vars and y >= self.n_vars:
            return True  # F-nodes are independent roots
        if x < self.n_vars and y < self.n_vars:
            env_cols = list(range(self.n_vars, self._pooled.shape[1]))
            return fisher_z_pvalue(self._pooled, x, y, [*w, *env_cols]) > self.alpha
        f, v = (x, y) if x >= self.n_vars else (y, x)
        i, j = self.pairs[f - self.n_vars]
        a, b = self.datasets[i], self.datasets[j]
        data = np.hstack([np.vstack([a, b]), np.r_[np.zeros(len(a)), np.ones(len(b))][:, None]])
        return fisher_z_pvalue(data, self.n_vars, v, w) > self.alpha
