"""Shared machinery, no paper logic: claims and profiles, cells, result cards, paired statistics, the verdict
rule, provenance, executors, the runner, plots and the report.

A paper's ``reproduce.py`` needs only :class:`PaperCard`, :class:`Claim`, :class:`Profile` and :class:`Cell`::

    from icml26._core import Cell, Claim, PaperCard, Profile

    def run_c1(cell: Cell) -> dict:
        rng = cell.rng()                      # the same data for the method and its baselines
        ...
        return {"metrics": {"ours": {"mse": m}, "baseline": {"mse": b}}}

    CARD = PaperCard(slug=..., title=..., group=..., api=..., extra=..., claims=(
        Claim(id="C1", statement="...", metric="mse", direction="lower", method="ours",
              baselines=("baseline",), min_effect=0.01, run=run_c1,
              profiles={"smoke": Profile(seeds=2), "quick": Profile(seeds=5), "full": Profile(seeds=20)}),
    ))

Importing this package stays cheap (no numpy): ``icml26 list`` and ``show`` load CARDs through it.
:data:`VERDICTS` is resolved on first use, since the verdict rule pulls in numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from icml26._core.claims import GROUPS, PROFILES, Cell, Claim, ClaimError, PaperCard, Profile, profiles
from icml26._core.threads import single_torch_thread

if TYPE_CHECKING:
    from icml26._core.verdict import VERDICTS

__all__ = [
    "GROUPS",
    "PROFILES",
    "VERDICTS",
    "Cell",
    "Claim",
    "ClaimError",
    "PaperCard",
    "Profile",
    "profiles",
    "single_torch_thread",
]


def __getattr__(name: str) -> Any:
    if name == "VERDICTS":
        from icml26._core.verdict import VERDICTS

        return VERDICTS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
