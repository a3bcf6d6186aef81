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


# --------------------------------------------------------------------------------------------- input checks
def check_datasets(datasets: Sequence[np.ndarray] | np.ndarray) -> list[np.ndarray]:
    """One clean ``(samples, variables)`` float array per environment, or ONE clear ValueError.

    Refused: a single array instead of a list of them, fewer than two environments, arrays that are not 2-D,
    empty arrays, NaN or infinite values, environments with different numbers of variables, a variable constant
    within an environment (its correlations are undefined), and environments with fewer than
    ``variables + 3`` samples (a Fisher-z test's degrees of freedom would reach zero: every test says
    "independent" and the graph comes out empty).
    """
    if isinstance(datasets, np.ndarray) and datasets.ndim == 2:
        raise ValueError(
            "datasets must be a list with one (samples, variables) array per environment, observational first; "
            f"got a single array of shape {datasets.shape}"
        )
    try:
        items = list(datasets)
    except TypeError:
        raise ValueError(f"datasets must be a list of arrays, got {type(datasets).__name__}") from None
    if len(items) < 2:
        raise ValueError(
            f"I-FCI needs at least two environments (observational first, then one per intervention), got "
            f"{len(items)}; with observational data only, use plain FCI (causallearn.search.ConstraintBased.FCI.fci)"
        )
    arrays = []
    for k, d in enumerate(items):
        try:
            x = np.asarray(d, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"dataset {k} is not numeric") from None
        if x.ndim != 2:
            raise ValueError(f"dataset {k} must be a 2-D (samples, variables) array, got shape {x.shape}")
        if x.size == 0:
            raise ValueError(f"dataset {k} is empty (shape {x.shape})")
        bad = int((~np.isfinite(x)).sum())
        if bad:
            raise ValueError(f"dataset {k} has {bad} NaN or infinite values; drop or impute them first")
        arrays.append(x)
    widths = [x.shape[1] for x in arrays]
    if len(set(widths)) != 1:
        raise ValueError(f"environments have different numbers of variables: {widths}")
    p = widths[0]
    if p < 2:
        raise ValueError(f"causal discovery needs at least two variables, got {p}")
    for k, x in enumerate(arrays):
        if len(x) < p + 3:
            raise ValueError(
                f"dataset {k} has {len(x)} samples; Fisher-z tests over {p} variables need at least {p + 3} per "
                "environment (fewer leave no degrees of freedom: every test would say independent)"
            )
        constant = np.flatnonzero(np.ptp(x, axis=0) == 0)
        if constant.size:
            raise ValueError(f"variable(s) {constant.tolist()} are constant in dataset {k}: correlations undefined")
    return arrays


def check_targets_of_envs(targets: Iterable[Iterable[int]] | str, n_envs: int, n_vars: int) -> list[frozenset[int]]:
    """The target set of every environment (the observational one, empty, first) from the interventional ones;
    ``"unknown"`` gives empty sets throughout (the unknown-target setting)."""
    if isinstance(targets, str):
        if targets != "unknown":
            raise ValueError(f"targets must be one set per interventional environment or 'unknown', got {targets!r}")
        return [frozenset()] * n_envs
    if isinstance(targets, (set, frozenset)) or (
        isinstance(targets, (list, tuple)) and targets and all(isinstance(t, (int, np.integer)) for t in targets)
    ):
        raise ValueError(
            f"targets must list one target set per interventional environment, e.g. [{{0}}, {{2, 3}}]; got {targets!r}"
        )
    sets: list[frozenset[int]] = [frozenset()]
    for k, t in enumerate(targets, start=1):
        if isinstance(t, (int, np.integer, str)):
            raise ValueError(f"the targets of environment {k} must be a set of column indices, got {t!r}")
        resolved = set()
        for v in t:
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= int(v) < n_vars:
                raise ValueError(f"target {v!r} of environment {k} is not a column index in 0..{n_vars - 1}")
            resolved.add(int(v))
        if not resolved:
            raise ValueError(f"environment {k} has no targets: a soft intervention needs at least one")
        sets.append(frozenset(resolved))
    if len(sets) != n_envs:
        raise ValueError(
            f"{n_envs} datasets need {n_envs - 1} interventional target sets (the first dataset is observational), "
            f"got {len(sets) - 1}; pass targets='unknown' if they are not known"
        )
    for i in range(n_envs):
        for j in range(i + 1, n_envs):
            if sets[i] == sets[j]:
                raise ValueError(f"environments {i} and {j} have the same targets {sorted(sets[i])}: merge them")
    return sets


# --------------------------------------------------------------------------------------------- tests
def fisher_z_pvalue(data: np.ndarray, x: int, y: int, cond: Sequence[int]) -> float:
    """Two-sided Fisher-z p-value of the partial correlation of columns ``x`` and ``y`` given ``cond``."""
    return _pvalue_from_corr(np.corrcoef(data[:, [x, y, *cond]], rowvar=False), len(data))


def _pvalue_from_corr(corr: np.ndarray, n_samples: int) -> float:
    """Fisher-z p-value of the partial correlation of the first two variables of ``corr`` given the rest."""
    try:
        prec = np.linalg.inv(corr)
    except np.linalg.LinAlgError:
        prec = np.linalg.pinv(corr)
    r = -prec[0, 1] / math.sqrt(abs(prec[0, 0] * prec[1, 1]))
    r = min(max(r, -0.999999), 0.999999)
    dof = n_samples - (len(corr) - 2) - 3
    if dof < 1:
        raise ValueError(f"{n_samples} samples leave no degrees of freedom for a test given {len(corr) - 2} variables")
    z = 0.5 * math.log((1 + r) / (1 - r)) * math.sqrt(dof)
    return math.erfc(abs(z) / math.sqrt(2))


@dataclass
class FisherZOracle:
    """Fisher-z independence tests over ``V u F`` from one dataset per environment (see the module docstring).

    Correlation matrices are computed once (the pooled one, and one per pair of environments), so a test costs
    one small matrix inverse; repeated tests come from a cache (``queries`` counts the ones computed;
    ``cache=False`` computes every call).
    """

    datasets: list[np.ndarray]
    env_targets: list[frozenset[int]]  # one per environment, the observational one included
    alpha: float = 0.01
    variable_names: list[str] | None = None
    cache: bool = True
    names: list[str] = field(init=False)
    f_targets: dict[int, frozenset[int]] = field(init=False)
    queries: int = 0

    def __post_init__(self) -> None:
        if len(self.datasets) != len(self.env_targets):
            raise ValueError(f"{len(self.datasets)} datasets but {len(self.env_targets)} target sets")
        self.datasets = check_datasets(self.datasets)
        self.n_vars = self.datasets[0].shape[1]
        if any(not 0 <= v < self.n_vars for targets in self.env_targets for v in targets):
            raise ValueError("a target names an unknown variable")
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha is a significance level and must lie in (0, 1), got {self.alpha}")
        self.names = list(self.variable_names or [f"X{i}" for i in range(self.n_vars)])
        if len(self.names) != self.n_vars:
            raise ValueError(f"{len(self.names)} variable names for {self.n_vars} columns")
        self.pairs = list(combinations(range(len(self.datasets)), 2))
        self.f_targets = {}
        for k, (i, j) in enumerate(self.pairs):
            self.names.append(f"F{i}{j}")
            self.f_targets[self.n_vars + k] = self.env_targets[i] ^ self.env_targets[j]
        # pooled data with one indicator per non-reference environment: conditioning on every F-node
        stacked = np.vstack(self.datasets)
        dummies = np.zeros((len(stacked), len(self.datasets) - 1))
        start = len(self.datasets[0])
        for e, d in enumerate(self.datasets[1:]):
            dummies[start : start + len(d), e] = 1.0
            start += len(d)
        self._env_cols = list(range(self.n_vars, self.n_vars + dummies.shape[1]))
        self._pooled_corr = np.corrcoef(np.hstack([stacked, dummies]), rowvar=False)
        self._pooled_n = len(stacked)
        self._pair_corr: dict[int, np.ndarray] = {}
        self._cache: dict[tuple[int, int, frozenset[int]], bool] = {}

    def _pair(self, k: int) -> tuple[np.ndarray, int]:
        """Correlations of (V, indicator of environment j) over environments i and j of pair k."""
        if k not in self._pair_corr:
            i, j = self.pairs[k]
            a, b = self.datasets[i], self.datasets[j]
            data = np.hstack([np.vstack([a, b]), np.r_[np.zeros(len(a)), np.ones(len(b))][:, None]])
            self._pair_corr[k] = np.corrcoef(data, rowvar=False)
        return self._pair_corr[k], len(self.datasets[self.pairs[k][0]]) + len(self.datasets[self.pairs[k][1]])

    def pvalue(self, x: int, y: int, cond: Iterable[int]) -> float:
        """The test's p-value (1.0 for two F-nodes: independent roots)."""
        w = sorted({v for v in cond if v < self.n_vars} - {x, y})
        if x >= self.n_vars and y >= self.n_vars:
            return 1.0
        if x < self.n_vars and y < self.n_vars:
            cols = [x, y, *w, *self._env_cols]
            return _pvalue_from_corr(self._pooled_corr[np.ix_(cols, cols)], self._pooled_n)
        f, v = (x, y) if x >= self.n_vars else (y, x)
        corr, n = self._pair(f - self.n_vars)
        cols = [self.n_vars, v, *w]
        return _pvalue_from_corr(corr[np.ix_(cols, cols)], n)

    def __call__(self, x: int, y: int, cond: Iterable[int]) -> bool:
        key = (min(x, y), max(x, y), frozenset(cond))
        if not self.cache:
            self.queries += 1
            return self.pvalue(x, y, key[2]) > self.alpha
        if key not in self._cache:
            self.queries += 1
            self._cache[key] = self.pvalue(x, y, key[2]) > self.alpha
        return self._cache[key]
