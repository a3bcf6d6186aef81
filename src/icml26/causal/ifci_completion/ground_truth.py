"""Exact ground truth at n = 4 by brute force: every I-equivalence class and its true I-PAG.

1. Enumerate every ADMG (bows allowed) on 4 observed nodes: each of the 6 pairs is one of *none, ->, <-, <->,
   -> and <->, <- and <->* (6^6 = 46,656 graphs), keep the acyclic ones (34,752), and augment them
   (:func:`~.admg.augment`). Two families: **one target**, ``S_F = {X0}`` (a soft intervention on ``X0``
   against the observational environment: one F-node), and **two targets**, interventions on ``X0`` and on
   ``X1`` (three F-nodes: ``F01 -> X0``, ``F02 -> X1``, ``F12 -> {X0, X1}``). ``n = 3`` gives small versions of
   both (216 graphs) for the test suite.
2. Key each augmented graph by its **full m-separation signature** over ``V u F``: one bit per pair and per
   conditioning subset of the remaining nodes (one target: 10 x 8 = 80 bits; two targets: 21 x 32 = 672).
   Graphs with equal keys are I-Markov equivalent (the I-Markov property is exactly m-separation in the
   augmented graph). One target gives 1,135 classes, two targets 2,850.
3. The **true I-PAG** of a class keeps a mark iff every member's MAG (over ``V u F``) has it; other marks are
   circles. This is the definition, with no learning rule involved, so it checks I-FCI, the new rules and the
   enumeration completion independently. (The plain MAG class is *not* the truth: it ignores that F can only
   point into ``S_F``.)

The result is cached under ``icml26._core.paths.cache_dir()``; a rebuild takes about 15 s (one target) or a
minute (two targets) on one core.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations, product
from pathlib import Path

import numpy as np

from icml26.causal.ifci_completion.admg import ADMG, augment
from icml26.causal.ifci_completion.pag import CIRCLE, PAG

N_OBSERVED = 4
ONE_TARGET: tuple[frozenset[int], ...] = (frozenset({0}),)  # one soft intervention on X0: F01 -> X0
TWO_TARGETS: tuple[frozenset[int], ...] = (frozenset({0}), frozenset({1}))  # F01 -> X0, F02 -> X1, F12 -> {X0, X1}
CACHE_VERSION = 2
# per pair (i < j): (i -> j, j -> i, i <-> j)
PAIR_STATES = ((0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 0, 1), (0, 1, 1))


@dataclass
class EquivalenceClass:
    """One I-equivalence class: its signature, a representative ADMG (edge lists), members' MAGs, the truth."""

    signature: int
    directed: list[tuple[int, int]]
    bidirected: list[tuple[int, int]]
    n_admgs: int
    mags: list[np.ndarray]
    truth: np.ndarray
    targets: tuple[frozenset[int], ...] = ONE_TARGET
    n_observed: int = N_OBSERVED

    def representative(self) -> ADMG:
        """The representative ADMG over the observed nodes (without its F-nodes)."""
        return ADMG.from_edges(self.n_observed, self.directed, self.bidirected)

    def true_ipag(self) -> PAG:
        aug = augment(self.representative(), self.targets)
        return PAG(self.truth, list(aug.names), dict(aug.f_targets))


def _normalise(targets: Sequence[Iterable[int]] | None, n: int) -> tuple[frozenset[int], ...]:
    if n not in (2, 3, 4):
        raise ValueError(f"brute force enumerates 6^(n(n-1)/2) graphs: n must be 2, 3 or 4, got {n}")
    out = ONE_TARGET if targets is None else tuple(frozenset(int(v) for v in t) for t in targets)
    if not out or any(not t or not t <= set(range(n)) for t in out):
        raise ValueError(f"targets must be non-empty subsets of 0..{n - 1}, got {targets!r}")
    return out


def m_separation_signature(g: ADMG) -> int:
    """One bit per (pair, conditioning subset of the remaining nodes): 1 = m-separated."""
    sig, bit = 0, 0
    nodes = range(g.n)
    for a, b in combinations(nodes, 2):
        rest = [v for v in nodes if v not in (a, b)]
        for r in range(len(rest) + 1):
            for z in combinations(rest, r):
                if g.m_separated(a, b, z):
                    sig |= 1 << bit
                bit += 1
    return sig


def enumerate_classes(targets: Sequence[Iterable[int]] | None = None, n: int = N_OBSERVED) -> list[EquivalenceClass]:
    """Steps 1-3 above (uncached), for soft interventions with the given targets against the observational one."""
    sets = _normalise(targets, n)
    pairs = list(combinations(range(n), 2))
    by_signature: dict[int, dict] = {}
    signature_of_mag: dict[bytes, int] = {}
    for states in product(PAIR_STATES, repeat=len(pairs)):
        directed, bidirected = [], []
        for (i, j), (fwd, bwd, bi) in zip(pairs, states, strict=True):
            if fwd:
                directed.append((i, j))
            if bwd:
                directed.append((j, i))
            if bi:
                bidirected.append((i, j))
        try:
            g = augment(ADMG.from_edges(n, directed, bidirected), sets)
        except ValueError:
            continue  # cyclic
        mag = g.to_mag()
        key = mag.marks.tobytes()
        if key not in signature_of_mag:  # a graph and its MAG have the same m-separations; many graphs share one
            from icml26.causal.ifci_completion.completion import mag_as_admg

            signature_of_mag[key] = m_separation_signature(mag_as_admg(mag))
        sig = signature_of_mag[key]
        entry = by_signature.setdefault(sig, {"directed": directed, "bidirected": bidirected, "n": 0, "mags": {}})
        entry["n"] += 1
        entry["mags"].setdefault(key, mag.marks)
    classes = []
    for sig, e in sorted(by_signature.items()):
        mags = list(e["mags"].values())
        truth = mags[0].copy()
        for m in mags[1:]:
            truth = np.where(truth == m, truth, CIRCLE).astype(np.int8)
        classes.append(EquivalenceClass(sig, e["directed"], e["bidirected"], e["n"], mags, truth, sets, n))
    return classes


def cache_path(targets: Sequence[Iterable[int]] | None = None, n: int = N_OBSERVED) -> Path:
    from icml26._core.paths import cache_dir

    label = "_".join("X" + "".join(str(v) for v in sorted(t)) for t in _normalise(targets, n))
    return cache_dir() / "ifci_completion" / f"bruteforce_n{n}_targets_{label}_v{CACHE_VERSION}.pkl"


def true_ipag_bruteforce(
    targets: Sequence[Iterable[int]] | None = None, n: int = N_OBSERVED, refresh: bool = False
) -> list[EquivalenceClass]:
    """All I-equivalence classes on ``n`` observed nodes (default 4) for the given soft-intervention targets
    (default: one, on X0), with their true I-PAGs (cached on disk)."""
    path = cache_path(targets, n)
    if path.exists() and not refresh:
        with path.open("rb") as fh:
            return pickle.load(fh)
    classes = enumerate_classes(targets, n)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    with tmp.open("wb") as fh:
        pickle.dump(classes, fh)
    tmp.replace(path)
    return classes
