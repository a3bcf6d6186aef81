"""A tiny claim for testing the machinery (never registered as a paper).

Claim: the mean of 4n draws of N(mu, 1) has a lower squared error than the mean of n draws. Exact truth:
E[error^2] = 1/(4n) vs 1/n, so with enough seeds the claim reproduces; with ``min_effect`` far above the true
effect it cannot. Settings can ask a cell to fail; the environment can make cells wait for a file (``TINY_GATE``)
or sleep (``TINY_SLEEP``), to interrupt a run mid-way.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Any

from icml26._core import Cell, Claim, PaperCard, Profile


def run_mean(cell: Cell) -> dict[str, Any]:
    if cell.get("fail") and cell.seed == 1:
        raise RuntimeError("boom: this cell fails on purpose")
    if pause := os.environ.get("TINY_SLEEP"):  # slow cells, to interrupt a parallel run mid-way
        time.sleep(float(pause))
    if gate := os.environ.get("TINY_GATE"):
        while cell.seed >= 2 and not Path(gate).exists():  # block here until the test interrupts the run
            time.sleep(0.05)
    rng = cell.rng()
    n = int(cell["n"])
    mu = float(rng.normal())
    x = mu + rng.standard_normal(4 * n)
    small, large = x[:n].mean(), x.mean()
    return {
        "metrics": {"large": {"sq_error": (large - mu) ** 2}, "small": {"sq_error": (small - mu) ** 2}},
        "curves": {"running_mean": [{"k": k, "error": float(x[:k].mean() - mu)} for k in (1, n, 4 * n)]},
        "info": {"mu": mu},
    }


def _profiles(seeds: int, **extra: Any) -> dict[str, Profile]:
    settings = ({"n": 5, **extra}, {"n": 20, **extra})
    return {p: Profile(settings=settings, seeds=seeds) for p in ("smoke", "quick", "full")}


def tiny_card(seeds: int = 6, min_effect: float = 0.0, fail: bool = False, slug: str = "tiny") -> PaperCard:
    extra = {"fail": True} if fail else {}
    return PaperCard(
        slug=slug,
        title="Tiny: more samples, smaller error",
        group="stats",
        api="tests._core.tiny_paper.run_mean",
        extra="stats",
        claims=(
            Claim(
                id="C1",
                statement="The mean of 4n samples has a smaller squared error than the mean of n samples.",
                metric="sq_error",
                direction="lower",
                method="large",
                baselines=("small",),
                min_effect=min_effect,
                paper_figure="E[err^2] = 1/(4n) vs 1/n",
                run=run_mean,
                profiles=_profiles(seeds, **extra),
            ),
        ),
    )


def torch_threads(cell: Cell) -> dict[str, Any]:
    """Reports how many intra-op threads torch has where the cell runs (the executor must pin it to one)."""
    import torch

    threads = float(torch.get_num_threads())
    return {"metrics": {"here": {"threads": threads}, "one": {"threads": 1.0}}}


def threads_card() -> PaperCard:
    """The tiny card with its cell replaced by :func:`torch_threads` (two settings x two seeds)."""
    card = tiny_card(seeds=2)
    claim = dataclasses.replace(
        card.claims[0], id="T", metric="threads", method="here", baselines=("one",), run=torch_threads
    )
    return dataclasses.replace(card, slug="threads", claims=(claim,))
