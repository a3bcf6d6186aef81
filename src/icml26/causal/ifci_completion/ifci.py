"""I-FCI (Kocaoglu et al. 2019): FCI over the observed nodes and the F-nodes, with two F-node rules.

Input: an *independence oracle* over ``V u F`` -- anything with ``names``, ``f_targets`` (F-node index ->
target set) and ``__call__(x, y, cond) -> bool`` (True = independent). :func:`oracle_from_admg` builds the exact
one (m-separation in the augmented ADMG); a data-driven test only has to expose the same three things.

1. **Skeleton over V u F.** Start complete, without F-F edges (F-nodes are independent roots).
   - ``X - Y`` (both observed) is removed if ``X _||_ Y | W u F`` for some ``W`` in ``V``: a test *within*
     environments, i.e. conditioning on all F-nodes.
   - ``F - Y`` is removed if ``F _||_ Y | W u F'`` (``F'`` the other F-nodes): an *invariance*,
     ``P_i(y | w) = P_j(y | w)``.
   Conditioning on extra F-nodes never opens a path (they are parentless, so never colliders nor descendants of
   one), so in the oracle case this gives exactly the skeleton of the I-MAG. The first separating set found, in
   order of size, is kept as the sepset.
2. **Orientation.** R0 (unshielded colliders), then Zhang's R1-R4 and R8-R10 *interleaved* with
   - **F-rule 8** (Kocaoglu's Rule 8): every F edge is ``F -> Y`` (F is a root and an ancestor of all it touches);
   - **F-rule 9** (Kocaoglu's Rule 9): if ``S_F = {X}``, ``F`` is adjacent to ``Y`` and ``X`` to ``Y``, then
     ``X -> Y`` (F reaches Y only through X, so X is an ancestor of Y).
   until nothing changes. (They match ``_apply_rule11`` / ``_apply_rule12`` of dodiscover's ``PsiFCI``.)

I-FCI is sound but, as Zhou & Kocaoglu (2026) show, not complete: see :mod:`.completion` and :mod:`.rules`.

References
----------
- M. Kocaoglu, A. Jaber, K. Shanmugam, E. Bareinboim, "Characterization and learning of causal graphs with
  latent variables from soft interventions", NeurIPS 2019.
- Z. Zhou, M. Kocaoglu, "Towards Completeness in Causal Discovery from Soft Interventions with Known Targets",
  ICML 2026.
- J. Zhang, Artificial Intelligence 2008 (the FCI rules).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Protocol

import numpy as np

from icml26.causal.ifci_completion.admg import ADMG, augment, bits
from icml26.causal.ifci_completion.orientation import Rule, _set, orient
from icml26.causal.ifci_completion.pag import ARROW, CIRCLE, PAG, TAIL


class IndependenceOracle(Protocol):
    """What I-FCI needs from a test: node names, F-node targets, and ``(x, y, cond) -> independent?``."""

    names: list[str]
    f_targets: dict[int, frozenset[int]]

    def __call__(self, x: int, y: int, cond: Iterable[int]) -> bool: ...


@dataclass
class MSeparationOracle:
    """Exact independence oracle: m-separation in an augmented ADMG (counts its queries)."""

    graph: ADMG
    queries: int = 0
    _cache: dict[tuple[int, int, int], bool] = field(default_factory=dict, repr=False)

    @property
    def names(self) -> list[str]:
        return self.graph.names

    @property
    def f_targets(self) -> dict[int, frozenset[int]]:
        return self.graph.f_targets

    def __call__(self, x: int, y: int, cond: Iterable[int]) -> bool:
        key = (min(x, y), max(x, y), bits(cond))
        if key not in self._cache:
            self.queries += 1
            self._cache[key] = self.graph.m_separated(x, y, key[2])
        return self._cache[key]


def oracle_from_admg(
    admg: ADMG, targets: Sequence[Iterable[int | str]], observational: bool = True
) -> MSeparationOracle:
    """The m-separation oracle of ``admg`` augmented with one F-node per pair of environments (see ``augment``)."""
    return MSeparationOracle(augment(admg, targets, observational=observational))


# --------------------------------------------------------------------------------------------- F-node rules
def rule_f_exogenous(pag: PAG) -> bool:
    """Kocaoglu's Rule 8: every edge at an F-node is ``F -> Y``."""
    changed = False
    for f in pag.f_targets:
        for y in pag.neighbours(f):
            changed |= _set(pag, f, y, TAIL)
            changed |= _set(pag, y, f, ARROW)
    return changed


def rule_f_single_target(pag: PAG) -> bool:
    """Kocaoglu's Rule 9: ``S_F = {X}``, ``F`` adjacent to ``Y``, ``X`` adjacent to ``Y`` => ``X -> Y``."""
    changed = False
    for f, targets in pag.f_targets.items():
        if len(targets) != 1:
            continue
        (x,) = targets
        for y in pag.neighbours(f):
            if y != x and pag.adjacent(x, y):
                changed |= _set(pag, x, y, TAIL)
                changed |= _set(pag, y, x, ARROW)
    return changed


IFCI_RULES: tuple[Rule, ...] = (rule_f_exogenous, rule_f_single_target)


# --------------------------------------------------------------------------------------------- skeleton
def learn_skeleton(oracle: IndependenceOracle, max_cond: int | None = None) -> PAG:
    """Step 1: the circle-marked skeleton over ``V u F`` with a sepset for every removed pair."""
    names, f_targets = list(oracle.names), dict(oracle.f_targets)
    _check_targets(names, f_targets)
    n = len(names)
    f_nodes = sorted(f_targets)
    observed = [v for v in range(n) if v not in f_targets]
    marks = np.full((n, n), CIRCLE, np.int8)
    np.fill_diagonal(marks, 0)
    sepsets: dict[tuple[int, int], frozenset[int]] = {}
    for a, b in combinations(range(n), 2):
        if a in f_targets and b in f_targets:
            marks[a, b] = marks[b, a] = 0
            sepsets[(a, b)] = frozenset()  # F-nodes are independent roots
            continue
        always = set(f_nodes) - {a, b}  # within-environment tests / invariance given the other F-nodes
        pool = [v for v in observed if v not in (a, b)]
        top = len(pool) if max_cond is None else min(max_cond, len(pool))
        for size in range(top + 1):
            found = next((set(w) for w in combinations(pool, size) if oracle(a, b, always | set(w))), None)
            if found is not None:
                marks[a, b] = marks[b, a] = 0
                sepsets[(a, b)] = frozenset(found | always)
                break
    return PAG(marks, names, f_targets, sepsets)


def _check_targets(names: list[str], f_targets: dict[int, frozenset[int]]) -> None:
    n = len(names)
    for f, targets in f_targets.items():
        if not 0 <= f < n:
            raise ValueError(f"F-node index {f} out of range")
        if not targets:
            raise ValueError(f"F-node {names[f]} has an empty target set")
        bad = [t for t in targets if not 0 <= t < n or t in f_targets]
        if bad:
            raise ValueError(f"F-node {names[f]} targets {bad}, which are not observed variables")


def ifci(
    oracle: IndependenceOracle, *, new_rules: bool = False, max_cond: int | None = None, conflicts: str = "raise"
) -> PAG:
    """I-FCI: skeleton over ``V u F``, then R0 and FCI rules interleaved with the F-node rules.

    ``new_rules=True`` also interleaves the additional local rules of :mod:`.rules` (our reading of Zhou &
    Kocaoglu 2026). ``conflicts="keep"`` keeps the first orientation when noisy tests make two rules disagree
    (the default raises: with an exact oracle a conflict is a bug). Returns the PAG with its sepsets.
    """
    pag = learn_skeleton(oracle, max_cond=max_cond)
    pag.conflicts = conflicts
    extra: tuple[Rule, ...] = IFCI_RULES
    if new_rules:
        from icml26.causal.ifci_completion.rules import NEW_RULES

        extra = (*IFCI_RULES, *NEW_RULES)
    return orient(pag, extra_rules=extra)


def fci_pag_from_sepsets(pag: PAG) -> PAG:
    """Plain FCI (no F-node knowledge) on the skeleton and sepsets of ``pag``: the Markov class of the MAG."""
    plain = pag.copy()
    plain.marks[plain.marks != 0] = CIRCLE
    return orient(plain)


def check_environments(
    variables: Sequence[Sequence[str]], targets: Sequence[Iterable[str]]
) -> tuple[list[str], list[set[int]]]:
    """Validate named environments before augmentation: one variable list and one target set per environment.

    All environments must measure the same variables (in any order), and every target must name one of them.
    Returns the variable names (first environment's order) and the target sets as indices, ready for
    :func:`~.admg.augment` (with ``observational=False``: environment 0 is whatever ``targets[0]`` says).
    """
    if len(variables) != len(targets):
        raise ValueError(f"{len(variables)} environments but {len(targets)} target sets")
    if len(variables) < 2:
        raise ValueError("I-FCI needs at least two environments")
    names = list(variables[0])
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate variable names in environment 0: {names}")
    for k, v in enumerate(variables[1:], start=1):
        if set(v) != set(names) or len(v) != len(names):
            raise ValueError(
                f"environment {k} measures {sorted(v)}, environment 0 measures {sorted(names)}: "
                "all environments must have the same variables"
            )
    index = {name: i for i, name in enumerate(names)}
    resolved = []
    for k, t in enumerate(targets):
        unknown = sorted(set(t) - set(index))
        if unknown:
            raise ValueError(f"targets {unknown} of environment {k} name unknown variables; variables are {names}")
        resolved.append({index[name] for name in t})
    return names, resolved


class IFCI:
    """Estimator front end: ``IFCI(alpha=0.01).fit(datasets, targets).pag_`` or ``.fit(oracle=...)``.

    ``datasets``: one ``(samples, variables)`` array per environment, the observational one first; ``targets``:
    the target set (indices) of each *interventional* environment. Tests are Fisher-z (see :mod:`.data`); noisy
    tests that make rules disagree keep the first orientation. With ``oracle=`` any
    :class:`IndependenceOracle` is used as is (exact: conflicts raise).
    """

    def __init__(self, alpha: float = 0.01, new_rules: bool = False, max_cond: int | None = None) -> None:
        self.alpha, self.new_rules, self.max_cond = alpha, new_rules, max_cond

    def fit(
        self,
        datasets: Sequence[np.ndarray] | None = None,
        targets: Sequence[Iterable[int]] = (),
        *,
        oracle: IndependenceOracle | None = None,
    ) -> IFCI:
        if oracle is None:
            if datasets is None:
                raise ValueError("give datasets (one per environment) or an oracle")
            from icml26.causal.ifci_completion.data import FisherZOracle

            if len(datasets) != len(targets) + 1:
                raise ValueError(f"{len(datasets)} datasets need {len(datasets) - 1} interventional target sets")
            envs = [frozenset()] + [frozenset(int(v) for v in t) for t in targets]
            oracle, conflicts = FisherZOracle(list(datasets), envs, alpha=self.alpha), "keep"
        else:
            conflicts = "raise"
        self.pag_ = ifci(oracle, new_rules=self.new_rules, max_cond=self.max_cond, conflicts=conflicts)
        return self
