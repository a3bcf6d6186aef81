"""Overhead of the runner per cell, and cost of the paired statistics.

Anchor: calling the cell functions in a plain Python loop (no caching, no cards). The runner adds hashing,
one atomic JSON write per cell, the card (bootstrap with B = 10,000), a CSV and a PNG per claim. Run:

    .venv/bin/python benchmarks/bench_runner.py

Prints one line per measurement with the ratio to the anchor, in one run on this machine.
"""

from __future__ import annotations

import tempfile
import time

import numpy as np

from icml26._core import Cell, Claim, PaperCard, Profile
from icml26._core.runner import run
from icml26._core.stats import bootstrap_mean_ci


def trivial_cell(cell: Cell) -> dict:
    rng = cell.rng()
    x = rng.standard_normal(64)
    return {"metrics": {"a": {"m": float(x.mean())}, "b": {"m": float(x[:16].mean())}}}


def paper(n_cells: int) -> PaperCard:
    prof = Profile(settings=({"k": 0},), seeds=n_cells)
    claim = Claim(
        id="C1",
        statement="bench",
        metric="m",
        direction="lower",
        method="a",
        baselines=("b",),
        run=trivial_cell,
        profiles={"smoke": prof, "quick": prof, "full": prof},
    )
    return PaperCard("bench", "Bench", "stats", "api", "stats", (claim,))


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(n_cells: int = 400) -> None:
    card = paper(n_cells)
    cells = card.plan("smoke")[0][1]
    anchor = timed(lambda: [trivial_cell(c) for c in cells])
    with tempfile.TemporaryDirectory() as tmp:
        cold = timed(lambda: run([card], profile="smoke", out=tmp, report=False))
        warm = timed(lambda: run([card], profile="smoke", out=tmp, report=False))
        with_report = timed(lambda: run([card], profile="smoke", out=tmp, report=True))
    print(f"plain loop over {n_cells} cells:              {anchor * 1e3:8.1f} ms  (anchor)")
    print(
        f"runner, cold (compute + write + card + plot): {cold * 1e3:8.1f} ms  "
        f"= {(cold - anchor) / n_cells * 1e3:.2f} ms overhead per cell"
    )
    print(f"runner, resumed (all cells cached):          {warm * 1e3:8.1f} ms")
    print(f"runner, resumed + report:                    {with_report * 1e3:8.1f} ms")
    d = np.random.default_rng(0).standard_normal(10_000)
    t = timed(lambda: bootstrap_mean_ci(d, n_boot=10_000))
    print(f"paired bootstrap, n = 10,000 pairs, B = 10,000: {t * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
