"""The runner's own cost: its overhead per cell, and its paired statistics against the field's implementations.

Rows (ratio > 1 means ours is faster):

- the runner over N trivial cells (hash, one atomic JSON write per cell, the card with a B = 10,000 bootstrap, a
  CSV, a PNG) against a plain Python loop calling the same cell functions (no cache, no cards): the price of
  resume and provenance, so the ratio is below 1 by design; and the same run resumed from the cache;
- the paired percentile bootstrap of a mean (``_core.stats.bootstrap_mean_ci``) against ``scipy.stats.bootstrap``
  (percentile method, vectorised), the outside implementation a user would otherwise call;
- the sign test (``_core.stats.sign_test``) against ``scipy.stats.binomtest`` on the same wins/losses.

Run ``python benchmarks/bench_runner.py [tiny|quick|full]``; ``icml26 bench runner`` runs it in the suite.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

from icml26._core import Cell, Claim, PaperCard, Profile
from icml26._core.bench import BenchRow, interleaved_medians, print_rows
from icml26._core.runner import run
from icml26._core.stats import bootstrap_mean_ci, sign_test

# size: (cells per run, bootstrap pairs, bootstrap resamples, repeats)
SIZES = {"tiny": (20, 200, 1_000, 3), "quick": (200, 2_000, 10_000, 5), "full": (1_000, 10_000, 10_000, 9)}


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


def runner_rows(n_cells: int, repeat: int) -> list[BenchRow]:
    card = paper(n_cells)
    cells = card.plan("smoke")[0][1]
    with tempfile.TemporaryDirectory(prefix="icml26-bench-runner-") as tmp:
        cold_dir, warm_dir = Path(tmp) / "cold", Path(tmp) / "warm"
        run([card], profile="smoke", out=warm_dir, report=False)  # the cache the resumed run reads

        def cold() -> None:
            shutil.rmtree(cold_dir, ignore_errors=True)
            run([card], profile="smoke", out=cold_dir, report=False)

        t = interleaved_medians(
            {
                "loop": lambda: [trivial_cell(c) for c in cells],
                "cold": cold,
                "resumed": lambda: run([card], profile="smoke", out=warm_dir, report=False),
            },
            repeat=repeat,
        )
    anchor = "plain Python loop over the cell functions"
    return [
        BenchRow(
            "runner",
            f"{n_cells} trivial cells, computed (cards, CSV, plot)",
            anchor,
            t["cold"],
            t["loop"],
            "s",
            notes=f"overhead {(t['cold'] - t['loop']) / n_cells * 1e3:.2f} ms per cell: the price of resume and cards",
        ),
        BenchRow(
            "runner",
            f"{n_cells} trivial cells, resumed from the cache",
            anchor,
            t["resumed"],
            t["loop"],
            "s",
            notes="every cell read back from .cells/, then cards, CSV and plot",
        ),
    ]


def stats_rows(n_pairs: int, n_boot: int, repeat: int) -> list[BenchRow]:
    from scipy import stats

    d = np.random.default_rng(0).standard_normal(n_pairs) + 0.1

    def scipy_bootstrap() -> None:
        stats.bootstrap(
            (d,),
            np.mean,
            n_resamples=n_boot,
            method="percentile",
            vectorized=True,
            batch=max(1, 4_000_000 // n_pairs),
            rng=np.random.default_rng(0),
        )

    wins, losses = int((d > 0).sum()), int((d < 0).sum())
    t = interleaved_medians(
        {
            "boot": lambda: bootstrap_mean_ci(d, n_boot=n_boot),
            "scipy_boot": scipy_bootstrap,
            "sign": lambda: sign_test(d),
            "scipy_sign": lambda: stats.binomtest(wins, wins + losses, 0.5),
        },
        repeat=repeat,
    )
    return [
        BenchRow(
            "runner",
            f"paired bootstrap of a mean, n = {n_pairs}, B = {n_boot}",
            "scipy.stats.bootstrap (percentile, vectorized)",
            t["boot"],
            t["scipy_boot"],
            "s",
            notes="same memory bound per batch (4e6 indices)",
        ),
        BenchRow(
            "runner",
            f"sign test, n = {n_pairs}",
            "scipy.stats.binomtest",
            t["sign"],
            t["scipy_sign"],
            "s",
        ),
    ]


def rows(size: str) -> list[BenchRow]:
    if size not in SIZES:
        raise ValueError(f"size must be one of {', '.join(SIZES)}, got {size!r}")
    n_cells, n_pairs, n_boot, repeat = SIZES[size]
    return runner_rows(n_cells, repeat) + stats_rows(n_pairs, n_boot, repeat)


if __name__ == "__main__":
    print_rows(rows(sys.argv[1] if len(sys.argv) > 1 else "full"))
