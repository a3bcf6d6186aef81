"""Random ADMGs with latent confounding and random soft-intervention targets (for n = 5-6 experiments).

A random causal order is drawn; each ordered pair gets a directed edge with probability ``p_directed`` and a
bidirected edge (a latent common cause) with probability ``p_bidirected`` (bows are possible). Each of the
``n_interventions`` interventional environments targets 1 or 2 random variables (``max_target_size``); the
observational environment is added by :func:`~.admg.augment`. Everything is drawn from the given Generator.
"""

from __future__ import annotations

import numpy as np

from icml26.causal.ifci_completion.admg import ADMG


def random_admg(n: int, rng: np.random.Generator, p_directed: float = 0.35, p_bidirected: float = 0.2) -> ADMG:
    order = rng.permutation(n)
    d = np.zeros((n, n), bool)
    b = np.zeros((n, n), bool)
    for i in range(n):
        for j in range(i + 1, n):
            u, v = int(order[i]), int(order[j])
            if rng.random() < p_directed:
                d[u, v] = True
            if rng.random() < p_bidirected:
                b[u, v] = b[v, u] = True
    return ADMG([f"X{i}" for i in range(n)], d, b)


def random_targets(
    n: int, rng: np.random.Generator, n_interventions: int = 2, max_target_size: int = 2
) -> list[set[int]]:
    """Distinct, non-empty target sets of size 1..max_target_size."""
    targets: list[set[int]] = []
    while len(targets) < n_interventions:
        size = int(rng.integers(1, max_target_size + 1))
        t = {int(v) for v in rng.choice(n, size=size, replace=False)}
        if t not in targets:
            targets.append(t)
    return targets
