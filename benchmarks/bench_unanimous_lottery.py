"""Unanimous lotteries: our algorithms against a straightforward full elicitation solved with scipy's HiGHS.

Anchor (outside approach, written here as a user would): *point-estimate full elicitation*. For every
stakeholder ask the m vertices, bisect the m - 1 edges of a double star (first accepted vertex to every
rejected one, first rejected vertex to every other accepted one) to width eps, take each bracket's midpoint
as a boundary point, fit the hyperplane through the m - 1 points (the null space of a batched SVD), solve one
max-slack LP over all n estimated halfspaces with ``scipy.optimize.linprog(method="highs")``, then ask all n
stakeholders about its solution (n verification queries). It answers "feasible" only if all n accept; it has
no certificate when they do not. Its bisection is vectorised over stakeholders like ours (one oracle call per
halving), so the timings compare algorithms, not Python loops.

Rows (ratio > 1: ours is better):
- the paper's method (deterministic verify-then-elicit) vs the anchor: queries and seconds;
- our full elicitation (certified boxes, refined until 4 eps wide) vs the anchor: queries and seconds, i.e.
  what the guarantees cost over point estimates;
- secondary: our vectorised oracle vs a one-query-at-a-time Python oracle on the same deterministic run.

Each row reads several random feasible instances (``random_feasible``); ``extra`` records how many each side
solved (the anchor can fail its verification; ours never returns an unaccepted lottery).

    .venv/bin/python benchmarks/bench_unanimous_lottery.py [tiny|quick|full]
"""

from __future__ import annotations

import sys

import numpy as np
from scipy.optimize import linprog

from icml26._core.bench import BenchRow, interleaved_medians, print_rows
from icml26.decision.unanimous_lottery import (
    QueryOracle,
    bisection_steps,
    find_unanimous_lottery,
    random_feasible,
)

PAPER = "unanimous_lottery"
SIZES = {  # n stakeholders, m options, eps, instances, timing repeats
    "tiny": (40, 4, 1e-3, 2, 1),
    "quick": (300, 8, 1e-4, 3, 3),
    "full": (1000, 10, 1e-4, 5, 5),
}
ANCHOR = "point-estimate full elicitation + scipy HiGHS LP"


def point_estimate_full_elicitation(oracle: QueryOracle, m: int, eps: float) -> tuple[bool, np.ndarray | None]:
    """The anchor (see the module docstring): (accepted by all, lottery)."""
    n = oracle.n_stakeholders
    ok = oracle.ask_each(np.repeat(np.arange(n), m), np.tile(np.eye(m), (n, 1))).reshape(n, m)
    if (~ok).all(axis=1).any():
        return False, None  # someone rejects every option
    cut = np.flatnonzero(ok.any(axis=1) & ~ok.all(axis=1))
    okc = ok[cut]
    a0, r0 = np.argmax(okc, axis=1), np.argmin(okc, axis=1)
    rows_r, r = np.nonzero(~okc)  # a0 -> every rejected r
    others = okc.copy()
    others[np.arange(cut.size), a0] = False
    rows_a, a = np.nonzero(others)  # every other accepted a -> r0
    row = np.r_[rows_r, rows_a]
    start, end = np.r_[a0[rows_r], a], np.r_[r, r0[rows_a]]
    lo, hi = np.zeros(row.size), np.ones(row.size)
    for _ in range(bisection_steps(eps)):
        mid = 0.5 * (lo + hi)
        points = np.zeros((row.size, m))
        points[np.arange(row.size), start] = 1 - mid
        points[np.arange(row.size), end] += mid
        accepted = oracle.ask_each(cut[row], points)
        lo, hi = np.where(accepted, mid, lo), np.where(accepted, hi, mid)
    # boundary points at the midpoints; each stakeholder's m - 1 of them, sorted by row (edges come grouped)
    t = 0.5 * (lo + hi)
    boundary = np.zeros((row.size, m))
    boundary[np.arange(row.size), start] = 1 - t
    boundary[np.arange(row.size), end] += t
    boundary = boundary[np.argsort(row, kind="stable")].reshape(cut.size, m - 1, m)
    w = np.linalg.svd(boundary)[2][:, -1, :]  # null vector: w·b = 0 for the m - 1 boundary points
    w *= np.sign(w[np.arange(cut.size), a0])[:, None]  # the first accepted vertex is on the positive side
    # one max-slack LP: max s s.t. w_i·p >= s ||w_i||, p in the simplex
    k = w.shape[0]
    A = np.c_[-w, np.linalg.norm(w, axis=1)]
    res = linprog(
        np.r_[np.zeros(m), -1.0],
        A_ub=A if k else None,
        b_ub=np.zeros(k) if k else None,
        A_eq=np.r_[np.ones(m), 0.0][None, :],
        b_eq=[1.0],
        bounds=[(0, None)] * m + [(None, 1.0)],
        method="highs",
    )
    if res.status != 0 or res.x[m] < 0:
        return False, None
    p = np.clip(res.x[:m], 0, None)
    p /= p.sum()
    return bool(oracle.ask_all(np.arange(n), p).all()), p


class OneAtATimeOracle:
    """The naive oracle: a Python loop of single ``accepts`` calls, one per query."""

    def __init__(self, stakeholders):  # type: ignore[no-untyped-def]
        self.stakeholders = stakeholders
        self.n_stakeholders = len(stakeholders)

    def ask_each(self, who, lotteries):  # type: ignore[no-untyped-def]
        return np.array([self.stakeholders[int(i)].accepts(p) for i, p in zip(who, lotteries, strict=True)])

    def ask_all(self, who, lottery):  # type: ignore[no-untyped-def]
        return np.array([self.stakeholders[int(i)].accepts(lottery) for i in who], dtype=bool)

    def first_rejection(self, who, lottery):  # type: ignore[no-untyped-def]
        for i in who:
            if not self.stakeholders[int(i)].accepts(lottery):
                return int(i)
        return None


def rows(size: str = "full") -> list[BenchRow]:
    n, m, eps, count, repeat = SIZES[size]
    rng = np.random.default_rng(0)
    instances = [random_feasible(n, m, rng) for _ in range(count)]
    workload = f"n={n}, m={m}, eps={eps:g}, {count} random feasible instances"

    def ours(method: str) -> tuple[int, int]:
        results = [find_unanimous_lottery(i.oracle(), m, eps, method=method) for i in instances]
        return sum(r.n_queries for r in results), sum(r.feasible for r in results)

    def anchor() -> tuple[int, int]:
        queries = solved = 0
        for inst in instances:
            oracle = inst.oracle()
            accepted, _ = point_estimate_full_elicitation(oracle, m, eps)
            queries, solved = queries + oracle.n_queries, solved + accepted
        return queries, solved

    def naive() -> None:
        for inst in instances:
            find_unanimous_lottery(OneAtATimeOracle(inst.stakeholders()), m, eps, method="deterministic")

    counts = {"deterministic": ours("deterministic"), "full": ours("full"), "anchor": anchor()}
    times = interleaved_medians(
        {
            "deterministic": lambda: ours("deterministic"),
            "full": lambda: ours("full"),
            "anchor": anchor,
            "naive": naive,
        },
        repeat=repeat,
    )
    solved = {k: f"{v[1]}/{count}" for k, v in counts.items()}
    note_anchor = f"solved: ours {{}}, anchor {solved['anchor']} (its lottery verified by all n)"
    out = []
    for method, label in (("deterministic", "verify-then-elicit"), ("full", "our full elicitation")):
        note = note_anchor.format(solved[method])
        out.append(
            BenchRow(
                PAPER,
                f"{label}: {workload}",
                ANCHOR,
                counts[method][0],
                counts["anchor"][0],
                "queries",
                notes=note,
                extra={"solved": solved},
            )
        )
        out.append(BenchRow(PAPER, f"{label}: {workload}", ANCHOR, times[method], times["anchor"], "s", notes=note))
    out.append(
        BenchRow(
            PAPER,
            f"verify-then-elicit oracle: {workload}",
            "one-query-at-a-time Python oracle (ours, naive)",
            times["deterministic"],
            times["naive"],
            "s",
            notes="secondary row: the same run, same queries",
        )
    )
    return out


if __name__ == "__main__":
    print_rows(rows(sys.argv[1] if len(sys.argv) > 1 else "full"))
