import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from icml26._core import Cell, Claim, PaperCard
from icml26._core.cards import card_fingerprint, validate_card
from icml26._core.runner import RunError, execute_cell, run
from tests._core.tiny_paper import tiny_card

ROOT = Path(__file__).resolve().parents[2]


def test_serial_run_writes_valid_cards_and_artifacts(tmp_path):
    result = run([tiny_card(seeds=20)], profile="smoke", out=tmp_path)
    (card,) = result.cards
    validate_card(card)
    assert result.computed == 40 and result.cached == 0 and result.failed == 0
    assert card["status"] == "ok" and card["verdict"] == "reproduced"
    assert {"csv", "curves", "plot"} <= set(card["artifacts"])
    for name in card["artifacts"].values():
        assert (tmp_path / "tiny" / name).stat().st_size > 0
    assert (tmp_path / "report.html").exists() and (tmp_path / "REPORT.md").exists()
    # The comparison is computed from the per-cell numbers recorded in the card.
    pairs = [(c["metrics"]["large"]["sq_error"], c["metrics"]["small"]["sq_error"]) for c in card["cells"]]
    (cmp,) = card["comparisons"]
    assert cmp["effect"] == pytest.approx(sum(b - a for a, b in pairs) / len(pairs))
    assert cmp["wins"] == sum(b > a for a, b in pairs)


def test_claims_that_read_the_same_cells_share_one_curves_file(tmp_path):
    import dataclasses

    paper = tiny_card(seeds=3)
    (c1,) = paper.claims
    paper = dataclasses.replace(paper, claims=(c1, dataclasses.replace(c1, id="C1b", min_effect=10.0)))
    stale = tmp_path / "tiny" / "C1b-smoke.curves.csv"
    stale.parent.mkdir(parents=True)
    stale.write_text("written by an older run\n")
    first, second = run([paper], profile="smoke", out=tmp_path, report=False).cards
    assert first["artifacts"]["curves"] == second["artifacts"]["curves"] == "C1-smoke.curves.csv"
    assert not stale.exists()
    assert (tmp_path / "tiny" / "C1-smoke.curves.csv").stat().st_size > 0


def test_unreachable_minimum_effect_is_not_reproduced(tmp_path):
    (card,) = run([tiny_card(seeds=8, min_effect=10.0)], profile="smoke", out=tmp_path, report=False).cards
    assert card["verdict"] == "not_reproduced"


def test_rerun_resumes_from_cache_and_is_identical(tmp_path):
    first = run([tiny_card()], profile="smoke", out=tmp_path, report=False)
    second = run([tiny_card()], profile="smoke", out=tmp_path, report=False)
    assert second.computed == 0 and second.cached == 12
    forced = run([tiny_card()], profile="smoke", out=tmp_path, report=False, force=True)
    assert forced.computed == 12
    prints = {card_fingerprint(r.cards[0]) for r in (first, second, forced)}
    assert len(prints) == 1


def test_seeds_override_and_new_cells_only(tmp_path):
    run([tiny_card()], profile="smoke", seeds=2, out=tmp_path, report=False)
    more = run([tiny_card()], profile="smoke", seeds=3, out=tmp_path, report=False)
    assert (more.cached, more.computed) == (4, 2)
    assert more.cards[0]["seeds"] == [0, 1, 2]


def test_failing_cell_gives_error_record_and_run_goes_on(tmp_path):
    result = run([tiny_card(fail=True), tiny_card(slug="other")], profile="smoke", out=tmp_path, report=False)
    bad, good = result.cards
    assert result.failed == 2  # seed 1 at both settings
    assert bad["status"] == "partial" and bad["verdict"] == "inconclusive"
    assert "2 of 12 cells failed" in bad["verdict_reason"] and "boom" in bad["verdict_reason"]
    assert [c["error"] is not None for c in bad["cells"]].count(True) == 2
    assert good["status"] == "ok"
    # failed cells are not cached: a rerun retries exactly them
    again = run([tiny_card(fail=True)], profile="smoke", out=tmp_path, report=False)
    assert (again.computed, again.cached) == (2, 10)


def _bad_output(cell):
    return {"metrics": {"large": {"sq_error": float("nan")}, "small": {"sq_error": 1.0}}}


@pytest.mark.parametrize(
    ("output", "match"),
    [
        ([1, 2], "must return a mapping"),
        ({"metrics": {"large": {"sq_error": 1.0}}}, "no 'sq_error' for 'small'"),
        ({"metrics": {"large": {"sq_error": "x"}, "small": {"sq_error": 1.0}}}, "must be a number"),
        ({"metrics": {"large": {"sq_error": float("inf")}, "small": {"sq_error": 1.0}}}, "not finite"),
        ({"metrics": {"large": {"sq_error": 1}, "small": {"sq_error": 1}}, "plots": 1}, "unknown keys"),
    ],
)
def test_malformed_cell_output_is_an_error_record(output, match):
    rec = execute_cell(lambda cell: output, Cell("p", "C1", "smoke", {}, 0), [("sq_error", ("large", "small"))])
    assert rec["status"] == "error"
    assert rec["error"]["type"] == "CellOutputError"
    assert match in rec["error"]["message"]


def test_bad_profile_seeds_and_unwritable_out(tmp_path):
    with pytest.raises(RunError, match="unknown profile"):
        run([tiny_card()], profile="medium", out=tmp_path)
    with pytest.raises(RunError, match="seeds"):
        run([tiny_card()], profile="smoke", seeds=0, out=tmp_path)
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(RunError, match="cannot write"):
        run([tiny_card()], profile="smoke", out=blocker / "sub")


def test_planned_papers_are_skipped(tmp_path):
    planned = PaperCard("later", "Later", "stats", "api", "stats", status="planned")
    result = run([planned, tiny_card()], profile="smoke", out=tmp_path, report=False)
    assert result.skipped == [("later", "later: planned, not implemented yet (skipped)")]
    assert len(result.cards) == 1


def test_a_broken_plot_never_fails_the_run(tmp_path):
    def broken(card, records, ax):
        raise RuntimeError("plot bug")

    card = tiny_card()
    c = card.claims[0]
    broken_claim = Claim(**{**{f: getattr(c, f) for f in c.__dataclass_fields__}, "plot": broken})
    paper = PaperCard(card.slug, card.title, card.group, card.api, card.extra, (broken_claim,))
    (out,) = run([paper], profile="smoke", out=tmp_path, report=False).cards
    assert "plot" not in out["artifacts"] and out["verdict"] in (
        "reproduced",
        "inconclusive",
        "not_reproduced",
    )


def test_process_executor_gives_identical_cards(tmp_path):
    serial = run([tiny_card()], profile="smoke", out=tmp_path / "s", report=False)
    process = run([tiny_card()], profile="smoke", out=tmp_path / "p", executor="process", workers=2, report=False)
    assert card_fingerprint(serial.cards[0]) == card_fingerprint(process.cards[0])


@pytest.mark.ray
def test_ray_executor_gives_identical_cards(tmp_path, monkeypatch):
    pytest.importorskip("ray")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    # Ray's workers import the cell function by module name: let them find the tests package.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    serial = run([tiny_card()], profile="smoke", out=tmp_path / "s", report=False)
    on_ray = run([tiny_card()], profile="smoke", out=tmp_path / "r", executor="ray", workers=2, report=False)
    assert card_fingerprint(serial.cards[0]) == card_fingerprint(on_ray.cards[0])


INTERRUPTIBLE = textwrap.dedent(
    """
    import sys
    from icml26._core.runner import run
    from tests._core.tiny_paper import tiny_card
    run([tiny_card(seeds=4)], profile="smoke", out=sys.argv[1], on_cell=lambda r, d, t: print(d, flush=True))
    """
)


def test_interrupted_run_resumes_without_recomputing(tmp_path):
    """SIGINT a real run mid-way (cells with seed >= 2 block on a gate file), then rerun to completion."""
    out, gate = tmp_path / "out", tmp_path / "gate"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TINY_GATE": str(gate)}
    proc = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTIBLE, str(out)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # a test session started in the background (`make test &`) inherits SIGINT ignored, and Python then
        # never raises KeyboardInterrupt: restore the default disposition in the child
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    seen = [proc.stdout.readline() for _ in range(2)]  # seeds 0 and 1 of n=5 finish, seed 2 blocks
    assert seen == ["1\n", "2\n"]
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=30)
    assert proc.returncode != 0 and "KeyboardInterrupt" in proc.stderr.read()
    assert len(list((out / ".cells" / "tiny").glob("*.json"))) == 2
    assert not (out / "tiny" / "C1-smoke.json").exists()

    gate.write_text("open")
    rerun = run([tiny_card(seeds=4)], profile="smoke", out=out)
    assert (rerun.cached, rerun.computed) == (2, 6)
    full = run([tiny_card(seeds=4)], profile="smoke", out=tmp_path / "clean", report=False)
    assert card_fingerprint(rerun.cards[0]) == card_fingerprint(full.cards[0])
    report = (out / "REPORT.md").read_text()
    tiny_section = report[report.index("## Tiny: more samples, smaller error") :]
    assert "16 cells" not in tiny_section and "8 cells" in tiny_section


def test_card_json_on_disk_round_trips(tmp_path):
    result = run([tiny_card()], profile="smoke", out=tmp_path, report=False)
    on_disk = json.loads(result.card_paths[0].read_text())
    validate_card(on_disk)
    assert card_fingerprint(on_disk) == card_fingerprint(result.cards[0])


def test_relative_effect_against_a_zero_baseline_gives_an_error_card(tmp_path):
    def zero_baseline(cell):
        return {"metrics": {"large": {"sq_error": 1.0}, "small": {"sq_error": 0.0}}}

    c = tiny_card().claims[0]
    fields = {f: getattr(c, f) for f in c.__dataclass_fields__}
    claim = Claim(**{**fields, "run": zero_baseline, "relative": True})
    paper = PaperCard("zero", "Zero", "stats", "api", "stats", (claim,))
    result = run([paper, tiny_card()], profile="smoke", out=tmp_path, report=False)
    bad, good = result.cards
    assert bad["status"] == "error" and bad["verdict"] == "inconclusive"
    assert "zero baseline" in bad["verdict_reason"]
    assert good["status"] == "ok"


def test_cached_cells_are_not_reused_when_they_lack_what_the_claim_reads(tmp_path):
    run([tiny_card()], profile="smoke", out=tmp_path, report=False)
    c = tiny_card().claims[0]
    fields = {f: getattr(c, f) for f in c.__dataclass_fields__}
    other_metric = Claim(**{**fields, "metric": "abs_error"})  # the cached records have no abs_error
    again = run([PaperCard("tiny", "Tiny", "stats", "api", "stats", (other_metric,))], profile="smoke", out=tmp_path)
    assert again.cached == 0 and again.computed == 12 and again.failed == 12
    assert again.cards[0]["status"] == "error"


def test_claims_sharing_a_cell_function_share_the_work(tmp_path):
    c = tiny_card().claims[0]
    fields = {f: getattr(c, f) for f in c.__dataclass_fields__}
    mirrored = Claim(**{**fields, "id": "C2", "method": "small", "baselines": ("large",)})
    paper = PaperCard("tiny", "Tiny", "stats", "api", "stats", (c, mirrored))
    result = run([paper], profile="smoke", out=tmp_path, report=False)
    assert result.computed == 12  # not 24: the second claim reads the same cells
    first, second = result.cards
    assert first["comparisons"][0]["effect"] == pytest.approx(-second["comparisons"][0]["effect"])


def test_written_files_get_the_usual_mode(tmp_path):
    result = run([tiny_card()], profile="smoke", out=tmp_path)
    umask = os.umask(0)
    os.umask(umask)
    for path in (result.card_paths[0], tmp_path / "report.html"):
        assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def _cell_files(out: Path) -> list[Path]:
    return [p for p in out.glob(".cells/*/*.json") if p.is_file()]


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda out, key: (out / ".cells").write_text(""), ".cells' is a file where a folder is needed"),
        (lambda out, key: (out / ".cells" / "tiny" / f"{key}.json").mkdir(parents=True), "is a folder where a file"),
        (lambda out, key: (out / "tiny" / "C1-smoke.png").mkdir(parents=True), "C1-smoke.png' is a folder"),
        (lambda out, key: (out / "run-summary.json").mkdir(), "run-summary.json' is a folder"),
    ],
)
def test_paths_in_the_way_stop_the_run_before_any_cell(tmp_path, make, needle):
    out = tmp_path / "out"
    out.mkdir()
    key = tiny_card().plan("smoke")[0][1][-1].key
    make(out, key)
    seen = []
    with pytest.raises(RunError, match="cannot write the run") as exc:
        run([tiny_card()], profile="smoke", out=out, on_cell=lambda *a: seen.append(a))
    assert needle in str(exc.value) and "\n" not in str(exc.value)
    assert seen == [] and len(_cell_files(out)) == 0


def test_a_write_that_fails_mid_run_is_a_run_error(tmp_path, monkeypatch):
    import errno

    def full_disk(path, obj):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr("icml26._core.runner.write_json", full_disk)
    with pytest.raises(RunError, match="No space left on device"):
        run([tiny_card()], profile="smoke", out=tmp_path, report=False)


def test_run_summary_records_wall_and_cell_time_per_paper_and_claim(tmp_path):
    c = tiny_card().claims[0]
    fields = {f: getattr(c, f) for f in c.__dataclass_fields__}
    shared = Claim(**{**fields, "id": "C2", "method": "small", "baselines": ("large",)})
    paper = PaperCard("tiny", "Tiny", "stats", "api", "stats", (c, shared))
    first = run([paper, tiny_card(slug="other")], profile="quick", out=tmp_path, report=False)
    summary = json.loads((tmp_path / "run-summary.json").read_text())
    assert summary == json.loads(json.dumps(first.summary))
    assert summary["schema"] == "icml26.run-summary/1" and summary["profile"] == "quick"
    assert summary["budget_seconds"] == 60.0 and summary["wall_seconds"] > 0
    assert summary["cells"] == {"total": 24, "computed": 24, "cached": 0, "failed": 0}
    tiny, _ = summary["papers"]
    assert tiny["slug"] == "tiny" and tiny["cells"] == 12  # the two claims share their 12 cells
    records = [json.loads(p.read_text()) for p in (tmp_path / ".cells" / "tiny").glob("*.json")]
    assert tiny["cell_seconds"] == pytest.approx(sum(r["runtime_s"] for r in records), abs=1e-2)
    assert tiny["wall_seconds"] > 0 and tiny["over_budget"] is False
    assert tiny["declared_seconds"] is None and tiny["missing_declarations"] == ["C1", "C2"]
    assert [cl["id"] for cl in tiny["claims"]] == ["C1", "C2"] and tiny["claims"][0]["cells"] == 12
    assert tiny["claims"][0]["cell_seconds"] == pytest.approx(tiny["cell_seconds"], abs=1e-2)

    again = run([paper, tiny_card(slug="other")], profile="quick", out=tmp_path, report=False).summary
    tiny_again = again["papers"][0]
    assert (tiny_again["computed"], tiny_again["cached"], tiny_again["wall_seconds"]) == (0, 12, 0.0)
    assert tiny_again["cell_seconds"] == pytest.approx(tiny["cell_seconds"], abs=1e-2)  # what it costs from scratch


def test_process_workers_run_torch_on_one_thread(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from tests._core.tiny_paper import threads_card

    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)  # torch would take both cores of the machine: the executor pins it

    result = run([threads_card()], profile="smoke", out=tmp_path, executor="process", workers=2, report=False)
    assert result.failed == 0
    assert {c["metrics"]["here"]["threads"] for c in result.cards[0]["cells"]} == {1.0}
