"""I-FCI (Kocaoglu et al. 2019): FCI over the observed nodes and the F-nodes, with two F-node rules.

Input: an *independence oracle* over ``V u F`` -- anything with ``names``, ``f_targets`` (F-node index ->
target set) and ``__call__(x, y, cond) -> bool`` (True = independent). :func:`oracle_from_admg` builds the exact
one (m-separation in the augmented ADMG); a data-driven test only has to expose the same three things.

1. **Skeleton over V u F** (:mod:`.skeleton`). Start complete, without F-F edges (F-nodes are independent roots).
   - ``X - Y`` (both observed) is removed if ``X _||_ Y | W u F`` for some ``W`` in ``V``: a test *within*
     environments, i.e. conditioning on all F-nodes.
   - ``F - Y`` is removed if ``F _||_ Y | W u F'`` (``F'`` the other F-nodes): an *invariance*,
     ``P_i(y | w) = P_j(y | w)``.
   Conditioning on extra F-nodes never opens a path (they are parentless, so never colliders nor descendants of
   one). ``W`` is searched PC-style (subsets of the current adjacents, growing size, PC-stable), then among
   possible-D-SEP; with an exact oracle this gives the skeleton of the I-MAG. The first separating set found
   is kept as the sepset.
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

import math
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from icml26.causal.ifci_completion import skeleton as _skeleton
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
    """Exact independence oracle: m-separation in an augmented ADMG.

    ``queries`` counts the m-separations evaluated; with ``cache=True`` (the default, as causal-learn's CI tests)
    a repeated query is answered from memory, ``cache=False`` evaluates every call (the benchmark uses it to say
    how much of a speed-up is the cache's).
    """

    graph: ADMG
    queries: int = 0
    cache: bool = True
    _cache: dict[tuple[int, int, int], bool] = field(default_factory=dict, repr=False)

    @property
    def names(self) -> list[str]:
        return self.graph.names

    @property
    def f_targets(self) -> dict[int, frozenset[int]]:
        return self.graph.f_targets

    def __call__(self, x: int, y: int, cond: Iterable[int]) -> bool:
        key = (min(x, y), max(x, y), bits(cond))
        if not self.cache:
            self.queries += 1
            return self.graph.m_separated(x, y, key[2])
        if key not in self._cache:
            self.queries += 1
            self._cache[key] = self.graph.m_separated(x, y, key[2])
        return self._cache[key]


def oracle_from_admg(
    admg: ADMG, targets: Sequence[Iterable[int | str]], observational: bool = True, cache: bool = True
) -> MSeparationOracle:
    """The m-separation oracle of ``admg`` augmented with one F-node per pair of environments (see ``augment``)."""
    return MSeparationOracle(augment(admg, targets, observational=observational), cache=cache)


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
# The adjacency search lives in :mod:`.skeleton`; re-exported here because it is I-FCI's step 1.
learn_skeleton = _skeleton.learn_skeleton
learn_skeleton_exhaustive = _skeleton.learn_skeleton_exhaustive


def ifci(
    oracle: IndependenceOracle,
    *,
    new_rules: bool = False,
    max_cond_size: int | None = None,
    possible_dsep: bool = True,
    conflicts: str = "raise",
    known_targets: bool = True,
) -> PAG:
    """I-FCI: the adjacency search over ``V u F`` (:mod:`.skeleton`), then R0 and the FCI rules interleaved with
    the F-node rules until nothing changes.

    ``new_rules=True`` also interleaves the paper's additional local rules as we read them (:mod:`.rules`).
    ``max_cond_size`` caps the conditioning sets of the search (None: no cap); ``possible_dsep=False`` skips its
    second stage. ``conflicts="keep"`` keeps the first orientation when noisy tests make two rules disagree (the
    default raises: with an exact oracle a conflict is a bug). Returns the PAG with its sepsets. An oracle
    without F-nodes makes this plain FCI, which is allowed but warned about.

    ``known_targets=False`` is the unknown-target setting (Psi-FCI, Jaber et al. 2020; dodiscover's
    ``PsiFCI(known_intervention_targets=False)``): the same search, then only the F-rule that needs no targets
    (Rule 8, ``F -> Y``). The PAG's F-nodes get empty target sets, and ``pag.possible_targets(f)`` lists the
    observed nodes adjacent to ``F``, among which (with an exact oracle) every true target lies.
    """
    if conflicts not in ("raise", "keep"):
        raise ValueError(f"conflicts must be 'raise' or 'keep', got {conflicts!r}")
    if new_rules and not known_targets:
        raise ValueError("the new rules read the intervention targets: they need known_targets=True")
    if not dict(oracle.f_targets):
        warnings.warn(
            "the oracle has no F-nodes (no interventional environment): I-FCI reduces to plain FCI",
            UserWarning,
            stacklevel=2,
        )
    pag = learn_skeleton(oracle, max_cond_size=max_cond_size, possible_dsep=possible_dsep, known_targets=known_targets)
    pag.conflicts = conflicts
    extra: tuple[Rule, ...] = IFCI_RULES if known_targets else (rule_f_exogenous,)
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


def _check_alpha(alpha: float) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not math.isfinite(alpha):
        raise ValueError(f"alpha must be a number in (0, 1), got {alpha!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha is a significance level and must lie in (0, 1), got {alpha}")
    return float(alpha)


class IFCI:
    """Estimator front end: ``IFCI(alpha=0.01).fit(datasets, targets).pag_`` or ``.fit(oracle=...)``.

    ``datasets``: one ``(samples, variables)`` array per environment, the observational one first; ``targets``:
    the target set (column indices) of each *interventional* environment, e.g. ``[{0}, {2, 3}]``, or
    ``"unknown"`` (Psi-FCI: see :func:`ifci`'s ``known_targets``; the new rules then raise). Tests are
    Fisher-z (see :mod:`.data`), which also checks the data (:func:`.data.check_datasets`); noisy tests that make
    rules disagree keep the first orientation. With ``oracle=`` any :class:`IndependenceOracle` is used as is
    (exact: conflicts raise). ``max_cond_size`` caps the conditioning sets of the adjacency search.

    After ``fit``: ``pag_`` (the learned :class:`~.pag.PAG`; ``pag_.plot()`` draws it) and ``n_tests_`` (tests
    evaluated, cached repeats excluded).
    """

    def __init__(self, alpha: float = 0.01, new_rules: bool = False, max_cond_size: int | None = None) -> None:
        self.alpha, self.new_rules, self.max_cond_size = _check_alpha(alpha), new_rules, max_cond_size
        _skeleton._check_max_cond_size(max_cond_size)

    def fit(
        self,
        datasets: Sequence[np.ndarray] | None = None,
        targets: Sequence[Iterable[int]] | str = (),
        *,
        oracle: IndependenceOracle | None = None,
    ) -> IFCI:
        alpha = _check_alpha(self.alpha)
        _skeleton._check_max_cond_size(self.max_cond_size)
        if oracle is None:
            if datasets is None:
                raise ValueError("give datasets (one per environment) or an oracle")
            from icml26.causal.ifci_completion.data import FisherZOracle, check_datasets, check_targets_of_envs

            arrays = check_datasets(datasets)
            envs = check_targets_of_envs(targets, n_envs=len(arrays), n_vars=arrays[0].shape[1])
            oracle, conflicts = FisherZOracle(arrays, envs, alpha=alpha), "keep"
        else:
            if datasets is not None:
                raise ValueError("give datasets or an oracle, not both")
            conflicts = "raise"
        known = not (isinstance(targets, str) and targets == "unknown")
        self.pag_ = ifci(
            oracle,
            new_rules=self.new_rules,
            max_cond_size=self.max_cond_size,
            conflicts=conflicts,
            known_targets=known,
        )
        self.n_tests_ = int(getattr(oracle, "queries", 0))
        return self
