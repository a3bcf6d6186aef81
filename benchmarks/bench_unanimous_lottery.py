"""Unanimous lotteries end to end: 1000 stakeholders x 10 options, wall time and queries of every method.

Anchor: the same algorithms on an oracle answered one query at a time in Python (each query a
``LinearStakeholder.accepts`` call, as a naive implementation does), against our vectorised oracle, which
answers a batch of (stakeholder, lottery) pairs in one numpy call and still counts every pair as a query.
Query counts must agree exactly; the ratio is the per-query overhead removed.

    .venv/bin/python benchmarks/bench_unanimous_lottery.py
"""

from __future__ import annotations

import time

import numpy as np

from icml26.decision.unanimous_lottery import Advice, find_unanimous_lottery, random_feasible

N, M, EPS, REPEATS = 1000, 10, 1e-4, 3


class OneAtATimeOracle:
    """The naive oracle: a Python loop of single ``accepts`` calls, one per query."""

    def __init__(self, stakeholders):  # type: ignore[no-untyped-def]
        self.stakeholders, self.n_queries = stakeholders, 0
        self.n_stakeholders = len(stakeholders)

    def _ask(self, i: int, p: np.ndarray) -> bool:
        self.n_queries += 1
        return self.stakeholders[i].accepts(p)

    def ask_each(self, who, lotteries):  # type: ignore[no-untyped-def]
        return np.array([self._ask(int(i), p) for i, p in zip(who, lotteries, strict=True)], dtype=bool)

    def ask_all(self, who, lottery):  # type: ignore[no-untyped-def]
        return np.array([self._ask(int(i), lottery) for i in who], dtype=bool)

    def first_rejection(self, who, lottery):  # type: ignore[no-untyped-def]
        for i in who:
            if not self._ask(int(i), lottery):
                return int(i)
        return None


def timed(make_oracle, method: str, **kw) -> tuple[float, int, int]:  # type: ignore[no-untyped-def]
    best, result = np.inf, None
    for _ in range(REPEATS):
        oracle = make_oracle()
        start = time.perf_counter()
        result = find_unanimous_lottery(oracle, M, EPS, method=method, rng=0, **kw)
        best = min(best, time.perf_counter() - start)
    assert result is not None and result.feasible
    return best, result.n_queries, result.n_elicited


def main() -> None:
    inst = random_feasible(N, M, np.random.default_rng(0))
    people = inst.stakeholders()
    print(f"{N} stakeholders x {M} options, eps = {EPS:g} (best of {REPEATS})")
    cases = [
        ("full", {}),
        ("deterministic", {}),
        ("randomized", {}),
        ("deterministic", {"advice": Advice(lottery=inst.witness)}),
    ]
    for method, kw in cases:
        label = method + (" + exact advice" if kw else "")
        fast, q_fast, k = timed(inst.oracle, method, **kw)
        slow, q_slow, _ = timed(lambda: OneAtATimeOracle(people), method, **kw)
        assert q_fast == q_slow, "the vectorised oracle must charge exactly the queries of one-at-a-time asking"
        print(
            f"{label:<28} {fast * 1e3:8.1f} ms  {q_fast:>7,} queries ({k:>4} elicited)  "
            f"one query at a time {slow * 1e3:8.1f} ms  (x{slow / fast:.0f})"
        )


if __name__ == "__main__":
    main()
