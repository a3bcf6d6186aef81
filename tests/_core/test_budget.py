"""Time budgets: declared costs (shared cells once), the quick budget of every implemented paper, and a loose
check of the declarations against a measured smoke run."""

from __future__ import annotations

import pytest

from icml26._core import Claim, PaperCard, Profile
from icml26._core import budget as budget_module
from icml26._core.budget import (
    LOOSE_FACTOR,
    LOOSE_SLACK_SECONDS,
    QUICK_BUDGET_SECONDS,
    declared_cost,
    slower_than_declared,
)
from icml26._core.runner import run
from icml26.registry import is_implemented, load_card, slugs
from tests._core.tiny_paper import run_mean

IMPLEMENTED = [s for s in slugs() if is_implemented(s)]


def _claim(cid: str, quick_seconds: float | None, seeds: int = 4, method: str = "large", **kw) -> Claim:
    settings = ({"n": 5}, {"n": 20})
    profiles = {
        "smoke": Profile(settings=settings, seeds=2, cell_seconds=0.01),
        "quick": Profile(settings=settings, seeds=seeds, cell_seconds=quick_seconds),
        "full": Profile(settings=settings, seeds=seeds * 2),
    }
    baselines = ("small",) if method == "large" else ("large",)
    return Claim(
        id=cid,
        statement="s",
        metric="sq_error",
        direction="lower",
        method=method,
        baselines=baselines,
        run=run_mean,
        profiles=profiles,
        **kw,
    )


def test_shared_cells_count_once_at_the_largest_declared_cost():
    card = PaperCard("p", "P", "stats", "api", "stats", (_claim("C1", 0.5), _claim("C2", 2.0, method="small")))
    cost = declared_cost(card, "quick")
    assert cost.cells == 8 and cost.seconds == pytest.approx(8 * 2.0) and cost.complete
    assert cost.per_claim == {"C1": 0.5, "C2": 2.0}
    assert declared_cost(card, "quick", seeds=1).seconds == pytest.approx(2 * 2.0)


def test_claims_without_a_declaration_are_listed_and_left_out_of_the_sum():
    other_cells = _claim("C2", None, seeds=6, revision=2)  # another revision: cells of its own
    card = PaperCard("p", "P", "stats", "api", "stats", (_claim("C1", 1.0), other_cells))
    cost = declared_cost(card, "quick")
    assert cost.missing == ("C2",) and not cost.complete
    assert cost.cells == 8 + 12 and cost.seconds == pytest.approx(8 * 1.0)
    # a shared cell with one silent claim still counts at the other's cost
    shared = PaperCard("p", "P", "stats", "api", "stats", (_claim("C1", 1.0), _claim("C2", None, method="small")))
    assert declared_cost(shared, "quick").seconds == pytest.approx(8.0)


def test_loose_check_flags_only_an_order_of_magnitude():
    declared = 10.0
    limit = LOOSE_FACTOR * declared + LOOSE_SLACK_SECONDS

    def summary(measured: float, declared_seconds: float | None = declared) -> dict:
        paper = {"slug": "p", "cell_seconds": measured, "declared_seconds": declared_seconds}
        return {"profile": "smoke", "papers": [paper]}

    assert slower_than_declared(summary(limit * 0.99)) == []
    (problem,) = slower_than_declared(summary(limit * 1.01))
    assert "p [smoke]" in problem and "declared" in problem
    assert slower_than_declared(summary(1e6, None)) == []  # nothing declared: the budget test lists it


@pytest.mark.parametrize("slug", IMPLEMENTED)
def test_quick_profile_declares_at_most_its_budget(slug):
    """Every implemented paper's quick profile fits QUICK_BUDGET_SECONDS of cell time (distinct cells, as
    declared by Profile.cell_seconds). Papers that declare nothing are reported (skipped) until budget.STRICT."""
    cost = declared_cost(load_card(slug), "quick")
    assert cost.seconds <= QUICK_BUDGET_SECONDS, (
        f"{slug}: the quick profile declares {cost.seconds:.1f}s of cell time over {cost.cells} cells; "
        f"the budget is {QUICK_BUDGET_SECONDS:.0f}s (trim settings, seeds or horizons; the full profile stays)"
    )
    if cost.missing:
        message = f"{slug}: quick profile declares no cell_seconds for {', '.join(cost.missing)}"
        if budget_module.STRICT:
            pytest.fail(message)
        pytest.skip(f"missing declaration (not strict yet): {message}")


@pytest.mark.parametrize("slug", IMPLEMENTED)
def test_declared_smoke_cost_agrees_loosely_with_a_smoke_run(slug, tmp_path):
    """The smoke run measures what the declarations say; a declaration off by an order of magnitude fails."""
    card = load_card(slug)
    cost = declared_cost(card, "smoke")
    if not cost.complete:
        missing = ", ".join(cost.missing)
        pytest.skip(f"missing declaration: {slug}: smoke profile declares no cell_seconds for {missing}")
    summary = run([card], profile="smoke", out=tmp_path, report=False).summary
    assert slower_than_declared(summary) == []
