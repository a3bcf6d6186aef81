import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from icml26._core import views
from icml26._core.report import (
    README_END,
    README_START,
    load_bench,
    load_cards,
    render_html,
    render_paper_page,
    render_readme_table,
    update_readme,
    write_report,
)
from icml26._core.runner import run
from icml26._core.views import plot_file, tally
from icml26.registry import PAPERS
from tests._core.html_check import check_html
from tests._core.tiny_paper import tiny_card

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = (
    "<script>alert(1)</script><img src=x onerror=alert(2)> [click](javascript:alert(3)) <!-- papers:end --> "
    "| cell\n# heading\n- item & &amp; `code` *em* _u_ $x$ ~~s~~ ' \" </td></tr></table>"
)


@pytest.fixture
def tiny(tmp_path):
    """A folder with the tiny paper's smoke card C1 (valid) and its plot."""
    run([tiny_card()], profile="smoke", out=tmp_path, report=False)
    return tmp_path


def card_at(root, claim="C1", profile="smoke"):
    return json.loads((root / "tiny" / f"{claim}-{profile}.json").read_text())


def put(root, card, claim="C2", profile="smoke", raw=None):
    """Write ``card`` as claim ``claim`` (its id rewritten to match the file name)."""
    card = json.loads(json.dumps(card))
    card["claim"]["id"] = claim
    card["profile"] = profile
    path = root / "tiny" / f"{claim}-{profile}.json"
    path.write_text(raw if raw is not None else json.dumps(card))
    return path


# ----------------------------------------------------------------------------------------------- basics
def test_report_of_empty_folder_says_nothing_was_run(tmp_path):
    html, md = write_report(tmp_path)
    text = md.read_text()
    assert "No result card in" in text and "nothing has been run" in text
    for e in PAPERS:
        assert e.title in text
    check_html(html.read_text())


def test_report_is_self_contained_and_shows_both_figures(tiny):
    html_path, md_path = write_report(tiny)
    html = html_path.read_text()
    assert "data:image/png;base64," in html
    assert 'src="http' not in html and "<link" not in html and "<script" not in html
    assert "Content-Security-Policy" in html
    visible = check_html(html)
    assert "E[err^2] = 1/(4n) vs 1/n" in visible  # the paper's figure beside ours
    assert "sq_error (lower is better)" in visible
    md = md_path.read_text()
    assert "tiny/C1-smoke.png" in md


def test_report_leads_with_the_newest_run_and_shows_the_full_cards_as_reference(tmp_path):
    run([tiny_card()], profile="full", seeds=2, out=tmp_path, report=False)
    run([tiny_card()], profile="smoke", out=tmp_path, report=False)  # the run just made
    html, md = write_report(tmp_path)
    text = md.read_text()
    assert "This run: the **smoke** profile (the newest cards)" in text
    assert "Reference: the committed **full** profile" in text
    assert "- This run (smoke): **" in text and "- Reference (committed full): **" in text
    visible = check_html(html.read_text())
    assert "This run: smoke profile" in visible and "Reference: committed full profile" in visible
    _, md = write_report(tmp_path, profile="full")  # asked for: the full cards lead, and are the reference
    text = md.read_text()
    assert "This run: the **full** profile (as asked)" in text
    assert "this run is the full profile, the reproduction of record" in text
    assert "Also in this folder: smoke" in text


def test_report_into_another_folder_links_back_to_the_cards(tiny, tmp_path_factory):
    other = tmp_path_factory.mktemp("elsewhere")
    html, md = write_report(tiny, out=other)
    assert html.parent == other and not (tiny / "report.html").exists()
    links = re.findall(r"\]\(([^)#]+)\)", md.read_text())
    assert links and all((other / link).resolve().is_file() for link in links)


def test_reference_folder_beside_a_run_elsewhere(tiny, tmp_path_factory):
    committed = tmp_path_factory.mktemp("committed")
    run([tiny_card()], profile="full", seeds=2, out=committed, report=False)
    _, md = write_report(tiny, reference=committed)
    text = md.read_text()
    assert f"in {committed}" in text.replace("\\_", "_")
    assert "- Reference (committed full): **" in text


# ----------------------------------------------------------------------------------------------- security
def hostile_card(card):
    card = json.loads(json.dumps(card))
    card["paper"]["title"] = HOSTILE
    card["paper"]["api"] = HOSTILE
    card["paper"]["extra"] = HOSTILE
    for key in ("statement", "metric", "method", "unit", "notes", "paper_figure"):
        card["claim"][key] = HOSTILE
    card["claim"]["baselines"] = [HOSTILE]
    card["paper_figure"] = card["verdict_reason"] = card["summary"] = HOSTILE
    card["comparisons"][0].update(baseline=HOSTILE, reason=HOSTILE, metric=HOSTILE)
    card["provenance"]["platform"] = HOSTILE
    card["config"]["hostile"] = HOSTILE
    return card


def test_hostile_card_text_is_escaped_in_html(tiny):
    put(tiny, hostile_card(card_at(tiny)), claim="C1", profile="smoke")
    assert not load_cards(tiny).invalid
    html, _ = write_report(tiny)
    page = html.read_text()
    assert "<script" not in page and "<img src=x" not in page and "<!-- papers:end" not in page
    visible = check_html(page)  # no element, attribute or link came from the card
    assert "<script>alert(1)</script>" in visible and "</td></tr></table>" in visible


CHROMIUM = shutil.which("chromium-headless-shell") or shutil.which("chromium")


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (optional)")
def test_hostile_report_in_headless_chromium(tiny):
    put(tiny, hostile_card(card_at(tiny)), claim="C1", profile="smoke")
    html, _ = write_report(tiny)
    args = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", html.as_uri()]
    dom = subprocess.run(args, capture_output=True, text=True, timeout=120, check=True).stdout
    assert "<body>" in dom and "Tiny: more samples" not in dom  # the hostile title replaced it
    assert "<script" not in dom and "onerror" not in dom.replace("onerror=alert(2)&gt;", "")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom and dom.count("<img") == 1  # only the plot


def test_hostile_card_text_is_escaped_in_markdown_and_readme(tiny):
    put(tiny, hostile_card(card_at(tiny)), claim="C1", profile="full")
    _, md = write_report(tiny)
    readme = tiny / "README.md"
    readme.write_text(f"# x\n{README_START}\nold\n{README_END}\nafter\n")
    update_readme(readme, load_cards(tiny))
    page = (tiny / "tiny" / "README.md").read_text()
    for text in (md.read_text(), readme.read_text(), page):
        assert "<script" not in text and "<img" not in text.replace("![", "")
        assert not re.search(r"(?<!\\)\]\(javascript", text) and "[click]" not in text
        assert "\n# heading" not in text and "\n- item" not in text  # no line of the card started a block
        assert "&lt;script&gt;" in text
    readme_text = readme.read_text()
    assert readme_text.count(README_END) == 1 and readme_text.endswith(f"{README_END}\nafter\n")
    table = readme_text.split(README_START)[1].split(README_END)[0].strip().splitlines()
    assert all(len(re.findall(r"(?<!\\)\|", row)) == 7 for row in table)  # 6 cells each: none was split


@pytest.mark.parametrize("name", ["../../../../etc/hostname", "/etc/hostname", "sub/C1-smoke.png", ".hidden"])
def test_plot_outside_the_card_folder_is_rejected_by_the_schema(tiny, name):
    card = card_at(tiny)
    card["artifacts"]["plot"] = name
    put(tiny, card)
    (bad,) = load_cards(tiny).invalid
    assert "artifacts/plot" in bad.reason
    card["_path"] = "tiny/C2-smoke.json"
    assert plot_file(tiny, card) is None  # and the renderer would not embed it either


def test_only_a_real_png_inside_the_folder_is_embedded(tiny, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    secret = outside / "secret.png"
    shutil.copy(tiny / "tiny" / "C1-smoke.png", secret)
    card = card_at(tiny)
    card["_path"] = "tiny/C1-smoke.json"
    assert plot_file(tiny, card) is not None
    png = tiny / "tiny" / "C1-smoke.png"
    png.unlink()
    png.symlink_to(secret)  # a link that leaves the folder
    assert plot_file(tiny, card) is None
    html, _ = write_report(tiny)
    assert "data:image/png" not in html.read_text()
    png.unlink()
    png.write_text("root:x:0:0:root:/root:/bin/bash\n")  # inside, but not a PNG
    assert plot_file(tiny, card) is None
    html, md = write_report(tiny)
    assert "data:image/png" not in html.read_text() and "C1-smoke.png" not in md.read_text()


# ----------------------------------------------------------------------------------------------- robustness
def _drop(key):
    def edit(card):
        del card["comparisons"][0][key]

    return edit


def _set(*path, value):
    def edit(card):
        target = card
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


CRAFTED = {
    "sign_p null": (_set("comparisons", 0, "sign_p", value=None), "sign_p"),
    "comparison without losses": (_drop("losses"), "losses"),
    "ci_high null": (_set("comparisons", 0, "ci_high", value=None), "ci_high"),
    "effect is a word": (_set("comparisons", 0, "effect", value="big"), "effect"),
    "unknown key in paper": (_set("paper", "homepage", value="x"), "paper"),
    "runtime is a word": (_set("runtime_s", value="fast"), "runtime_s"),
    "wins negative": (_set("comparisons", 0, "wins", value=-1), "wins"),
    "unknown verdict": (_set("verdict", value="great"), "verdict"),
    "statement is a number": (_set("claim", "statement", value=1), "statement"),
    "claim id with markup": (_set("claim", "id", value="C2<b>"), "id"),
    "metrics mean is a word": (_set("metrics", "large", "sq_error", "mean", value="x"), "mean"),
}


@pytest.mark.parametrize("case", list(CRAFTED))
def test_crafted_card_renders_as_invalid_and_the_report_goes_on(tiny, case):
    edit, where = CRAFTED[case]
    card = card_at(tiny)
    card["claim"]["id"] = "C2"
    edit(card)
    (tiny / "tiny" / "C2-smoke.json").write_text(json.dumps(card))
    cards = load_cards(tiny)
    assert [c["claim"]["id"] for c in cards.cards] == ["C1"]
    (bad,) = cards.invalid
    assert bad.path == "tiny/C2-smoke.json" and bad.claim == "C2" and where in bad.reason
    html, md = write_report(tiny)
    visible = check_html(html.read_text())
    section = visible.split("Tiny: more samples, smaller error")[-1]
    assert "invalid: " in section and "1 of 2 claims reproduced" not in visible
    assert "This run: smoke profile" in section and "E[err^2]" in section  # C1 is still shown
    assert "invalid: " in md.read_text()


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("not json", "Expecting value"),
        ('{"schema_version": 1', "Expecting"),
        ("[1, 2]", "is not of type 'object'"),
        (None, "not a finite number"),  # NaN, which Python's parser would otherwise accept
    ],
)
def test_unreadable_card_files_are_invalid(tiny, raw, why):
    if raw is None:
        raw = (tiny / "tiny" / "C1-smoke.json").read_text().replace('"effect": ', '"effect": NaN, "x": ', 1)
    put(tiny, card_at(tiny), raw=raw)
    (bad,) = load_cards(tiny).invalid
    assert why in bad.reason
    write_report(tiny)


def test_card_at_a_path_that_disagrees_with_it_is_invalid(tiny):
    (tiny / "tiny" / "C9-smoke.json").write_text((tiny / "tiny" / "C1-smoke.json").read_text())
    (bad,) = load_cards(tiny).invalid
    assert "lies at tiny/C9-smoke.json" in bad.reason


def test_a_card_that_breaks_the_renderer_is_shown_as_invalid(tiny, monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("cannot format this")

    monkeypatch.setattr(views.fmt, "summary", boom)
    html, md = write_report(tiny)
    assert "invalid: RuntimeError: cannot format this" in check_html(html.read_text())
    assert "invalid: RuntimeError: cannot format this" in md.read_text()


# ----------------------------------------------------------------------------------------------- readability
@pytest.mark.parametrize(
    ("verdicts", "level"),
    [(["reproduced"] * 10, "all"), (["reproduced"] * 8 + ["not_reproduced"] * 2, "most"),
     (["reproduced"] * 3 + ["inconclusive"] * 7, "some"), (["not_reproduced"] * 10, "none")],
)  # fmt: skip
def test_tally_tells_8_of_10_from_0_of_10(verdicts, level):
    rows = [(f"C{i}", f"p-C{i}", {"ok": True, "verdict": v}) for i, v in enumerate(verdicts)]
    t = tally(rows)
    assert t["level"] == level
    assert t["text"] == f"{verdicts.count('reproduced')} of 10 claims reproduced"
    assert [o["id"] for o in t["others"]] == [f"C{i}" for i, v in enumerate(verdicts) if v != "reproduced"]
    assert sum(m["width"] for m in t["meter"]) == pytest.approx(100)


def test_top_table_lists_implemented_papers_first_and_links_the_others(tiny, monkeypatch):
    import icml26.registry

    planned = PAPERS[0]  # every paper is implemented now: pretend the first registered one is not
    real = icml26.registry.is_implemented
    monkeypatch.setattr(icml26.registry, "is_implemented", lambda slug: slug != planned.slug and real(slug))
    card = card_at(tiny)
    card["verdict"] = "not_reproduced"
    put(tiny, card)
    html = render_html(load_cards(tiny))
    check_html(html)
    body = html.split("<tbody>", 2)[2]
    rows = re.findall(r"<tr><td>[^<]*</td><td>([^<]*)</td><td>(implemented|planned)</td>", body)
    assert len(rows) >= len(PAPERS) and rows[-1] == (planned.title, "planned")  # last, after every implemented one
    assert [status for _, status in rows[:-1]] == ["implemented"] * (len(rows) - 1)
    assert "Tiny: more samples" in body.split("<td>planned</td>")[0]
    assert '<a href="#tiny-C2">C2</a> (not reproduced)' in html
    assert re.search(r'class="badge l-(some|none|most)">\d of 2 claims reproduced', html)


def test_header_names_date_commit_profile_and_machine(tiny):
    visible = check_html(render_html(load_cards(tiny)))
    for needle in ("Rendered", "UTC", "Commit of the cards", "This run", "smoke", "Machine", "CPU", "Python"):
        assert needle in visible


def test_tables_scroll_horizontally(tiny):
    html = render_html(load_cards(tiny))
    assert ".scroll { overflow-x: auto" in html
    assert html.count("<table") == html.count('<div class="scroll"><table')


# ----------------------------------------------------------------------------------------------- README
def test_readme_table_is_one_compact_row_per_paper_from_the_full_profile(tiny):
    table = render_readme_table(load_cards(tiny))
    assert "tiny" not in table  # a smoke card is not a result of record
    run([tiny_card()], profile="full", seeds=2, out=tiny, report=False)
    table = render_readme_table(load_cards(tiny))
    rows = table.splitlines()
    assert len(rows) == 2 + len(PAPERS) + 1
    (row,) = [r for r in rows if "Tiny" in r]
    assert "[claims, figures, plots](results/tiny/README.md)" in row
    assert "E\\[err" not in row and "paper's figure" not in table  # the detail lives on the paper's page
    assert re.search(r"of 1 claim reproduced", row)


def test_update_readme_rewrites_between_markers_and_writes_the_paper_pages(tiny):
    run([tiny_card()], profile="full", seeds=2, out=tiny, report=False)
    readme = tiny / "README.md"
    readme.write_text(f"# x\n{README_START}\nold\n{README_END}\nafter\n")
    cards = load_cards(tiny)
    assert update_readme(readme, cards) is True
    text = readme.read_text()
    assert "old" not in text and text.endswith(f"{README_END}\nafter\n")
    assert "](./tiny/README.md)" in text or "](tiny/README.md)" in text or "](./tiny/README.md" in text
    page = (tiny / "tiny" / "README.md").read_text()
    assert page == render_paper_page(cards, "tiny")
    assert "| claim | verdict | paper's figure | ours | files |" in page
    assert "E\\[err^2\\] = 1/(4n) vs 1/n" in page and "![tiny C1: sq\\_error (lower is better)](C1-full.png)" in page
    assert update_readme(readme, load_cards(tiny)) is False
    readme.write_text("no markers")
    with pytest.raises(ValueError, match="markers"):
        update_readme(readme, load_cards(tiny))


# ----------------------------------------------------------------------------------------------- performance
def test_performance_section_from_benchmark_results(tiny):
    bench = tiny / "results.json"
    row = {
        "paper": "tiny",
        "workload": "<b>mean</b> of 4n",
        "anchor_name": "numpy",
        "ours": 0.5,
        "anchor": 2.0,
        "unit": "s",
        "better": "lower",
        "ours_name": "icml26",
        "threads": 1,
        "notes": "",
        "extra": {},
        "ratio": 4.0,
    }
    doc = {"machine": {"cpu": "x86_64", "cores": 2}, "commit": "abc123", "rows": [row, {**row, "ours": -1}]}
    bench.write_text(json.dumps(doc))
    html, md = write_report(tiny, bench=bench)
    visible = check_html(html.read_text())
    assert "Performance" in visible and "<b>mean</b> of 4n" in visible and "4× ours better" in visible
    assert "0.5 s" in visible and "2 s" in visible and "row 1: invalid" in visible and "abc123" in visible
    assert "## Performance" in md.read_text() and "<b>" not in md.read_text()
    bench.write_text("{broken")
    html, _ = write_report(tiny, bench=bench)
    assert "cannot read" in check_html(html.read_text())
    assert load_bench(tiny / "absent.json") is None
    html, _ = write_report(tiny)
    assert "Performance" not in html.read_text()


# ----------------------------------------------------------------------------------------------- committed cards
@pytest.fixture(scope="module")
def committed():
    cards = load_cards(ROOT / "results")
    assert cards.cards and not cards.invalid, cards.invalid
    return cards


def _card_strings(card):
    claim = card["claim"]
    yield card["paper"]["title"]
    yield from (claim[k] for k in ("statement", "notes") if claim.get(k))
    if card["paper_figure"]:
        yield card["paper_figure"]


def test_report_of_the_committed_cards_is_valid_html_and_shows_card_text_literally(committed):
    page = render_html(committed)
    visible = check_html(page)
    for card in committed.cards:
        for s in _card_strings(card):
            assert s in visible, s[:80]
            if any(ch in s for ch in "<>&"):
                assert s not in page, f"unescaped: {s[:80]}"


def test_committed_numbers_read_right(committed):
    text = render_html(committed, profile="full")
    visible = check_html(text)
    assert not re.search(r"(?<![\w.\-])-0(?![.\d,])", visible), "a '-0' is shown"
    assert not re.search(r"\d(marks|classes|circles|ops|nats|tokens)\b", visible), "a unit without its space"
    assert "1 cells" not in visible and "1 cell," in visible
    assert "n/a (deterministic)" in visible and "relative to" in visible and "(lower is better)" in visible


def test_committed_paper_pages_are_current(committed):
    slugs = sorted({c["paper"]["slug"] for c in committed.cards if c["profile"] == "full"})
    for slug in slugs:
        path = ROOT / "results" / slug / "README.md"
        assert path.is_file(), f"{path} is missing: run `icml26 report results --readme README.md`"
        assert path.read_text() == render_paper_page(committed, slug), (
            f"{path} is stale: run `icml26 report results --readme README.md`"
        )
