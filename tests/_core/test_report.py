import json

import pytest

from icml26._core.report import (
    README_END,
    README_START,
    load_cards,
    render_readme_table,
    update_readme,
    write_report,
)
from icml26._core.runner import run
from icml26.registry import PAPERS
from tests._core.tiny_paper import tiny_card


def test_report_of_empty_folder_says_nothing_is_implemented(tmp_path):
    html, md = write_report(tmp_path)
    text = md.read_text()
    assert "No paper is implemented yet" in text or "0 result card" in text
    for e in PAPERS:
        assert e.title in text
    assert "<html" in html.read_text()


def test_report_is_self_contained_and_shows_both_figures(tmp_path):
    run([tiny_card()], profile="smoke", out=tmp_path)
    html = (tmp_path / "report.html").read_text()
    assert "data:image/png;base64," in html
    assert 'src="http' not in html and "<link" not in html and "<script src" not in html
    assert "E[err^2] = 1/(4n) vs 1/n" in html  # the paper's figure beside ours
    assert "sq_error: large" in html
    md = (tmp_path / "REPORT.md").read_text()
    assert "tiny/C1-smoke.png" in md


def test_report_rerenders_without_rerunning_and_prefers_full(tmp_path):
    run([tiny_card()], profile="smoke", out=tmp_path, report=False)
    run([tiny_card()], profile="full", seeds=2, out=tmp_path, report=False)
    html, md = write_report(tmp_path)
    text = md.read_text()
    assert "full profile" in text and "smoke profile" not in text  # the profile of record leads
    assert "Also run at: smoke" in html.read_text()


def test_invalid_cards_are_listed_not_rendered(tmp_path):
    run([tiny_card()], profile="smoke", out=tmp_path, report=False)
    (tmp_path / "tiny" / "C2-smoke.json").write_text(json.dumps({"schema_version": 1}))
    cards = load_cards(tmp_path)
    assert len(cards.cards) == 1
    assert cards.invalid and "C2-smoke.json" in cards.invalid[0][0]
    _, md = write_report(tmp_path)
    assert "Invalid cards skipped" in md.read_text()


def test_readme_table_uses_full_profile_only(tmp_path):
    run([tiny_card()], profile="smoke", out=tmp_path, report=False)
    table = render_readme_table(load_cards(tmp_path))
    assert "tiny" not in table  # a smoke card is not a result of record
    run([tiny_card()], profile="full", seeds=2, out=tmp_path, report=False)
    table = render_readme_table(load_cards(tmp_path))
    assert "[C1](results/tiny/C1-full.json)" in table
    assert len(table.splitlines()) == 2 + len(PAPERS) + 1


def test_update_readme_rewrites_between_markers(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n{README_START}\nold\n{README_END}\nafter\n")
    assert update_readme(readme, load_cards(tmp_path)) is True
    text = readme.read_text()
    assert "old" not in text and text.endswith(f"{README_END}\nafter\n")
    assert update_readme(readme, load_cards(tmp_path)) is False
    readme.write_text("no markers")
    with pytest.raises(ValueError, match="markers"):
        update_readme(readme, load_cards(tmp_path))
