"""SP-UCB-OLP throughput: periods per second at T = 10^4 and 10^5, and the cost of one re-solve.

Anchor: re-solving on every stored sample (one LP row per past request, as a naive implementation does), whose
cost grows with t, against our type counts (identical requests aggregated: the LP has a constant size).

    .venv/bin/python benchmarks/bench_config_selection.py
"""

from __future__ import annotations

import time

import numpy as np

from icml26.serving.config_selection import DiscreteRequestDist, Instance, TwoLayerEnv, gap_instance, make_policy
from icml26.serving.config_selection.oracle import minmax_dual


def periods_per_second(T: int, **kw) -> float:  # type: ignore[no-untyped-def]
    inst = gap_instance()
    env = TwoLayerEnv(inst, T, seed=0)
    policy = make_policy("sp_ucb_olp", inst, T, seed=0, **kw)
    from icml26.serving.config_selection import run_policy

    start = time.perf_counter()
    run_policy(env, policy)
    return T / (time.perf_counter() - start)


def resolve_time(n_samples: int, aggregated: bool) -> float:
    """Seconds for one saddle-point LP on n_samples past requests per configuration."""
    inst = gap_instance()
    rng = np.random.default_rng(0)
    dists = []
    for dist in inst.dists:
        idx = dist.sample(rng, n_samples)
        if aggregated:
            counts = np.bincount(idx, minlength=dist.n_types).astype(float)
            dists.append(DiscreteRequestDist(counts / counts.sum(), dist.rewards, dist.consumptions))
        else:
            dists.append(
                DiscreteRequestDist(np.full(n_samples, 1.0 / n_samples), dist.rewards[idx], dist.consumptions[idx])
            )
    empirical = Instance(dists, inst.b)
    start = time.perf_counter()
    for _ in range(3):
        minmax_dual(empirical, bonus=np.full(inst.K, 0.01), p_max=6.0)
    return (time.perf_counter() - start) / 3


def main() -> None:
    for T in (10_000, 100_000):
        every = periods_per_second(T)
        grid = periods_per_second(T, resolve_growth=0.01)
        print(f"T={T:>7,}: {every:8.0f} periods/s re-solving every 10 periods; {grid:8.0f} with the 1% growth grid")
    for n in (300, 1_000, 3_000):  # the all-samples LP is dense: 3 x 3,000 rows is already ~650 MB
        naive, counts = resolve_time(n, aggregated=False), resolve_time(n, aggregated=True)
        print(
            f"one re-solve after {n:>6,} samples per configuration: all samples {naive * 1e3:7.1f} ms, "
            f"type counts {counts * 1e3:5.2f} ms (x{naive / counts:.0f})"
        )


if __name__ == "__main__":
    main()
