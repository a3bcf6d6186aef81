"""Conformance matrix over the registry: every implemented paper's smoke profile runs, its cards validate, no
cell fails, and a forced rerun gives identical cards (cells are pure functions of their spec)."""

import pytest

from icml26._core.cards import card_fingerprint, validate_card
from icml26._core.runner import run
from icml26.registry import is_implemented, load_card, slugs

IMPLEMENTED = [s for s in slugs() if is_implemented(s)]


@pytest.mark.parametrize("slug", IMPLEMENTED)
def test_smoke_profile_runs_validates_and_reruns_identically(slug, tmp_path):
    card = load_card(slug)
    first = run([card], profile="smoke", out=tmp_path, report=False)
    assert first.failed == 0, [c["verdict_reason"] for c in first.cards]
    assert len(first.cards) == len(card.claims)
    for c in first.cards:
        validate_card(c)
        assert c["status"] == "ok"
    again = run([card], profile="smoke", out=tmp_path, report=False, force=True)
    assert [card_fingerprint(c) for c in first.cards] == [card_fingerprint(c) for c in again.cards]


@pytest.mark.parametrize("slug", IMPLEMENTED)
def test_profiles_grow(slug):
    """smoke <= quick <= full in cells: the profiles are budgets of one experiment, not different ones."""
    for claim in load_card(slug).claims:
        sizes = [len(p.settings) * p.seeds for p in (claim.profiles[n] for n in ("smoke", "quick", "full"))]
        assert sizes == sorted(sizes), f"{slug} {claim.id}: {sizes}"
