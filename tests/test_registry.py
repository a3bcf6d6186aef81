"""The registry, the paper folders, the shared paper list and the README table agree."""

import os
import re
from pathlib import Path

import pytest

import icml26
from icml26._core.claims import GROUPS
from icml26._core.report import README_END, README_START, load_cards, render_readme_table
from icml26.registry import PAPERS, RegistryError, entry, is_implemented, load_card, slugs

ROOT = Path(__file__).resolve().parents[1]
PKG = Path(icml26.__file__).resolve().parent
SHARED_LIST = ROOT.parent / "shared" / "papers" / "README.md"


def test_28_unique_papers_in_known_groups():
    assert len(PAPERS) == 28
    assert len(set(slugs())) == 28
    assert {e.group for e in PAPERS} <= set(GROUPS)


def test_registry_matches_the_shared_paper_list():
    if not SHARED_LIST.exists():
        if os.environ.get("CI"):
            pytest.fail(f"CI must have the shared paper list at {SHARED_LIST}")
        pytest.skip("the shared paper list is not beside this checkout")
    rows = re.findall(r"^\| (\w+) \| \[(\w+)\]\(\w+\.md\) \| (.+?) \|$", SHARED_LIST.read_text(), re.M)
    assert len(rows) == 28
    assert {(g, s, t) for g, s, t in rows} == {(e.group, e.slug, e.title) for e in PAPERS}


def test_paper_folders_and_registry_agree():
    """Every folder under a group is a registered paper of that group with a reproduce.py, and vice versa."""
    for group in GROUPS:
        assert (PKG / group / "__init__.py").is_file(), f"group package {group} missing"
        for folder in (PKG / group).iterdir():
            if not folder.is_dir() or folder.name.startswith(("_", ".")):
                continue
            e = entry(folder.name)
            assert e.group == group, f"{folder} is registered under group {e.group}"
            assert (folder / "reproduce.py").is_file(), f"{folder} has no reproduce.py"
            assert (folder / "__init__.py").is_file(), f"{folder} has no __init__.py"
    stray = [p.name for p in PKG.iterdir() if p.is_dir() and p.name in slugs()]
    assert not stray, f"paper folders outside their group: {stray}"


@pytest.mark.parametrize("slug", slugs())
def test_each_card_matches_its_entry(slug):
    card = load_card(slug)  # raises RegistryError on any disagreement
    e = entry(slug)
    assert (card.slug, card.group, card.title, card.api, card.extra) == (
        e.slug,
        e.group,
        e.title,
        e.api,
        e.extra,
    )
    assert card.status == ("implemented" if is_implemented(slug) else "planned")
    if card.status == "implemented":
        assert card.claims, f"{slug} states no claim"
        assert (ROOT / "tests" / e.group / f"test_{slug}.py").is_file(), f"{slug} has no tests"


def test_unknown_slug_has_a_hint():
    with pytest.raises(RegistryError, match="did you mean nammd"):
        entry("nammd2")
    with pytest.raises(RegistryError, match="icml26 list"):
        entry("zzz")


def test_readme_table_is_current():
    text = (ROOT / "README.md").read_text()
    current = text.split(README_START, 1)[1].split(README_END, 1)[0].strip()
    expected = render_readme_table(load_cards(ROOT / "results"))
    assert current == expected, "README table is stale: run `icml26 report results --readme README.md`"
