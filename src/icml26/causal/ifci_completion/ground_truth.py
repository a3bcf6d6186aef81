"""Exact ground truth at n = 4 by brute force: every I-equivalence class and its true I-PAG.

1. Enumerate every ADMG (bows allowed) on 4 observed nodes: each of the 6 pairs is one of *none, ->, <-, <->,
   -> and <->, <- and <->* (6^6 = 46,656 graphs), keep the acyclic ones, and add one F-node with
   ``S_F = {X0}`` (a single soft intervention on ``X0`` against the observational environment).
2. Key each augmented graph by its **full m-separation signature** over ``V u F``: one bit per pair and per
   conditioning subset of the other three nodes (10 x 8 = 80 bits). Graphs with equal keys are I-Markov
   equivalent (the I-Markov property is exactly m-separation in the augmented graph).
3. The **true I-PAG** of a class keeps a mark iff every member's MAG (over ``V u F``) has it; other marks are
   circles. This is the definition, with no learning rule involved, so it checks I-FCI, the new rules and the
   enumeration completion independently. (The plain MAG class is *not* the truth: it ignores that F can only
   point into ``S_F``.)

The result is cached under ``icml26._core.paths.cache_dir()`` and takes a few seconds to rebuild.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from itertools import combinations, product
from pathlib import Path

import numpy as np

from icml26.causal.ifci_completion.admg import ADMG
from icml26.causal.ifci_completion.pag import CIRCLE, PAG

N_OBSERVED = 4
F_INDEX = N_OBSERVED
NAMES = [f"X{i}" for i in range(N_OBSERVED)] + ["F01"]
F_TARGETS = {F_INDEX: frozenset({0})}
CACHE_VERSION = 1
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

    def representative(self) -> ADMG:
        """The representative ADMG over the 4 observed nodes (without its F-node)."""
        return ADMG.from_edges(N_OBSERVED, self.directed, self.bidirected)

    def true_ipag(self) -> PAG:
        return PAG(self.truth, list(NAMES), dict(F_TARGETS))


def _augmented(directed: list[tuple[int, int]], bidirected: list[tuple[int, int]]) -> ADMG | None:
    n = N_OBSERVED + 1
    d = np.zeros((n, n), bool)
    b = np.zeros((n, n), bool)
    for a, c in directed:
        d[a, c] = True
    for a, c in bidirected:
        b[a, c] = b[c, a] = True
    d[F_INDEX, 0] = True
    try:
        return ADMG(list(NAMES), d, b, dict(F_TARGETS))
    except ValueError:
        return None  # cyclic


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


def enumerate_classes() -> list[EquivalenceClass]:
    """Steps 1-3 above (uncached)."""
    pairs = list(combinations(range(N_OBSERVED), 2))
    by_signature: dict[int, dict] = {}
    for states in product(PAIR_STATES, repeat=len(pairs)):
        directed, bidirected = [], []
        for (i, j), (fwd, bwd, bi) in zip(pairs, states, strict=True):
            if fwd:
                directed.append((i, j))
            if bwd:
                directed.append((j, i))
            if bi:
                bidirected.append((i, j))
        g = _augmented(directed, bidirected)
        if g is None:
            continue
        mag = g.to_mag().marks
        key = mag.tobytes()
        sig = _signature_of_mag(key, mag)
        entry = by_signature.setdefault(sig, {"directed": directed, "bidirected": bidirected, "n": 0, "mags": {}})
        entry["n"] += 1
        entry["mags"].setdefault(key, mag)
    classes = []
    for sig, e in sorted(by_signature.items()):
        mags = list(e["mags"].values())
        truth = mags[0].copy()
        for m in mags[1:]:
            truth = np.where(truth == m, truth, CIRCLE).astype(np.int8)
        classes.append(EquivalenceClass(sig, e["directed"], e["bidirected"], e["n"], mags, truth))
    return classes


_SIGNATURE_OF_MAG: dict[bytes, int] = {}


def _signature_of_mag(key: bytes, mag: np.ndarray) -> int:
    """A graph and its MAG have the same m-separations; many graphs share a MAG, so compute once per MAG."""
    if key not in _SIGNATURE_OF_MAG:
        from icml26.causal.ifci_completion.completion import mag_as_admg

        _SIGNATURE_OF_MAG[key] = m_separation_signature(mag_as_admg(PAG(mag, list(NAMES), dict(F_TARGETS))))
    return _SIGNATURE_OF_MAG[key]


def cache_path() -> Path:
    from icml26._core.paths import cache_dir

    return cache_dir() / "ifci_completion" / f"bruteforce_n4_target_X0_v{CACHE_VERSION}.pkl"


def true_ipag_bruteforce(refresh: bool = False) -> list[EquivalenceClass]:
    """All I-equivalence classes at n = 4 with ``S_F = {X0}``, with their true I-PAGs (cached on disk)."""
    path = cache_path()
    if path.exists() and not refresh:
        with path.open("rb") as fh:
            return pickle.load(fh)
    classes = enumerate_classes()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with tmp.open("wb") as fh:
        pickle.dump(classes, fh)
    tmp.replace(path)
    return classes
