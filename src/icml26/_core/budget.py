"""Time budgets: what a paper's profile declares it costs, and whether a measured run agrees.

Each :class:`~icml26._core.claims.Profile` may declare ``cell_seconds``, the expected wall time of one cell on one
core of the 2-core reference machine. A paper's *declared cost* at a profile is the sum of that over its distinct
cells: claims that read the same cells (same cell function, setting and seed) share them, so a shared cell counts
once, at the largest cost any of its claims declares. The quick profile of every paper must fit
:data:`QUICK_BUDGET_SECONDS` of cell time, so that the 28 papers' main job stays within 30 minutes on 2 cores.

A claim that declares nothing is *missing*: with :data:`STRICT` (now True: every implemented paper declares) the
budget test fails such a paper; set it to False only to report, not fail, while rooms add their declarations.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from icml26._core.claims import PaperCard

__all__ = [
    "LOOSE_FACTOR",
    "LOOSE_SLACK_SECONDS",
    "QUICK_BUDGET_SECONDS",
    "STRICT",
    "DeclaredCost",
    "declared_cost",
    "slower_than_declared",
]

QUICK_BUDGET_SECONDS = 60.0
"""The quick profile's budget per paper: seconds of cell time (the sum over its distinct cells, one core)."""

STRICT = True
"""When True, an implemented paper whose quick profile declares no ``cell_seconds`` fails the budget test."""

LOOSE_FACTOR = 5.0
LOOSE_SLACK_SECONDS = 10.0
"""A measured run is *slower than declared* when its cell time exceeds ``LOOSE_FACTOR`` x the declared cost plus
``LOOSE_SLACK_SECONDS`` (imports and one-off set-up such as loading a model land in the first cell; the machine is
shared). Loose on purpose: it catches a declaration that is off by an order of magnitude, not noise."""


@dataclass(frozen=True)
class DeclaredCost:
    """A paper's declared cost at one profile.

    ``cells`` counts distinct cells; ``seconds`` sums the declared cost of those whose claims declare one;
    ``missing`` lists the claims that declare none (their cells are not in ``seconds``); ``per_claim`` maps each
    claim to its declared seconds per cell (None when missing).
    """

    slug: str
    profile: str
    cells: int
    seconds: float
    missing: tuple[str, ...]
    per_claim: Mapping[str, float | None]

    @property
    def complete(self) -> bool:
        return not self.missing


def declared_cost(card: PaperCard, profile: str = "quick", seeds: int | None = None) -> DeclaredCost:
    """The declared cost of ``card`` at ``profile`` (cells shared between claims counted once); ``seeds``
    overrides the profile's seed count, as ``icml26 reproduce --seeds`` does."""
    per_cell: dict[str, float | None] = {}
    per_claim: dict[str, float | None] = {}
    for claim, cells in card.plan(profile, seeds):
        cost = claim.profiles[profile].cell_seconds
        per_claim[claim.id] = cost
        for cell in cells:
            known = per_cell.get(cell.key)
            per_cell[cell.key] = cost if known is None else (known if cost is None else max(known, cost))
    return DeclaredCost(
        slug=card.slug,
        profile=profile,
        cells=len(per_cell),
        seconds=float(sum(v for v in per_cell.values() if v is not None)),
        missing=tuple(cid for cid, cost in per_claim.items() if cost is None),
        per_claim=per_claim,
    )


def slower_than_declared(summary: Mapping[str, Any]) -> list[str]:
    """Papers of a run summary (see :mod:`icml26._core.runner`) whose measured cell time exceeds their declared
    cost loosely (:data:`LOOSE_FACTOR`, :data:`LOOSE_SLACK_SECONDS`), one message each. Papers that declare
    nothing complete are left out (the budget test lists them)."""
    problems = []
    papers: Sequence[Mapping[str, Any]] = summary.get("papers", ())
    for paper in papers:
        declared = paper.get("declared_seconds")
        if declared is None:
            continue
        limit = LOOSE_FACTOR * declared + LOOSE_SLACK_SECONDS
        if paper["cell_seconds"] > limit:
            problems.append(
                f"{paper['slug']} [{summary.get('profile')}]: {paper['cell_seconds']:.1f}s of cell time measured, "
                f"{declared:.1f}s declared (allowed up to {limit:.1f}s)"
            )
    return problems
