import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from icml26.cli import main
from icml26.registry import is_implemented, slugs


def planned_slug(monkeypatch: pytest.MonkeyPatch | None = None) -> str:
    """A planned paper. Every paper is implemented now: a test in this process makes the first registered one look
    planned (``monkeypatch``); a test in a subprocess can only use a real one, and skips without one."""
    planned = [s for s in slugs() if not is_implemented(s)]
    if planned:
        return planned[0]
    if monkeypatch is None:
        pytest.skip("every paper is implemented (a subprocess cannot pretend otherwise)")
    slug = slugs()[0]
    monkeypatch.setattr("icml26.registry.is_implemented", lambda s: s != slug and is_implemented(s))
    return slug


def cli(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


CHECK_IMPORTS = """
import sys
from icml26.cli import main
try:
    main({args!r})
except SystemExit:
    pass
heavy = sorted(m for m in ("torch", "matplotlib", "ray", "jinja2", "numpy") if m in sys.modules)
print("HEAVY=" + ",".join(heavy), file=sys.stderr)
import time
print("CPU=" + str(time.process_time()), file=sys.stderr)
"""
ROOT = Path(__file__).resolve().parents[1]


def heavy_modules(args):
    """(modules among torch/matplotlib/ray/jinja2/numpy that `icml26 ARGS` imported, CPU seconds it took).

    CPU time, not wall time: on a shared machine the wall clock measures the neighbours."""
    proc = subprocess.run([sys.executable, "-c", CHECK_IMPORTS.format(args=args)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    heavy = [x for x in lines if x.startswith("HEAVY=")][-1].removeprefix("HEAVY=")
    cpu = float([x for x in lines if x.startswith("CPU=")][-1].removeprefix("CPU="))
    return set(filter(None, heavy.split(","))), cpu


@pytest.mark.parametrize(
    "args", [["--help"], ["list"], ["list", "--json"], ["show", "PLANNED"], ["show", "PLANNED", "--json"]]
)
def test_help_list_and_show_import_nothing_heavy_not_even_numpy(args):
    args = [planned_slug() if a == "PLANNED" else a for a in args]
    heavy, cpu = heavy_modules(args)
    assert heavy == set(), heavy
    assert cpu < 1.0, f"{args} took {cpu:.2f}s of CPU"  # about 0.3 s on the reference machine


@pytest.mark.parametrize("args", [["show", "nammd"], ["show", "trm", "--json"]])
def test_show_of_an_implemented_paper_imports_no_torch_nor_matplotlib(args):
    heavy, _ = heavy_modules(args)  # numpy is the room's own business: its package imports it
    assert not heavy & {"torch", "matplotlib", "ray", "jinja2"}, heavy


def test_console_script_help_is_fast():
    exe = subprocess.run(
        [sys.executable, "-c", "import shutil; print(shutil.which('icml26') or '')"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    cmd = [exe, "--help"] if exe else [sys.executable, "-m", "icml26", "--help"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert proc.returncode == 0 and "reproduce" in proc.stdout
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert cpu < 1.0, f"--help took {cpu:.2f}s of CPU"


def test_list_json_has_all_28(capsys):
    code, out, _ = cli(capsys, "list", "--json")
    assert code == 0
    rows = json.loads(out)
    assert [r["slug"] for r in rows] == list(slugs())
    assert {r["status"] for r in rows} <= {"planned", "implemented"}


def test_list_group_filter(capsys):
    code, out, _ = cli(capsys, "list", "--group", "quant", "--json")
    assert code == 0 and {r["group"] for r in json.loads(out)} == {"quant"}


@pytest.mark.parametrize("slug", ["nammd", "mixfp4"])
def test_show_paper(capsys, slug):
    code, out, _ = cli(capsys, "show", slug)
    assert code == 0
    assert "pip install 'icml26[" in out  # the extra survives (no rich markup eating "[stats]")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["show", "nope"], "unknown paper 'nope'"),
        (["reproduce", "nope"], "unknown paper 'nope'"),
        (["reproduce", "--profile", "medium"], "medium"),
        (["reproduce", "--seeds", "0"], "--seeds"),
        (["reproduce", "--seeds", "x"], "--seeds"),
        (["reproduce", "--workers", "0"], "--workers"),
        (["reproduce", "--executor", "gpu"], "gpu"),
        (["reproduce", "--bogus"], "--bogus"),
        (["list", "--group", "physics"], "unknown group"),
        (["report", "/no/such/folder"], "no such folder"),
        (["report", ".", "--readme", "/no/such/README.md"], "no such README"),
        (["frobnicate"], "frobnicate"),
        (["reproduce", "--out", ""], "--out must not be empty"),
        (["reproduce", "--seeds", "99999999999999999999"], "--seeds"),
        (["report", ""], "must not be empty"),
        (["show", ""], "must not be empty"),
        (["reproduce", "--force", "true"], "take no value"),
        (["show", "nammd", "extra"], "extra"),
        (["bench", "--size", "huge"], "huge"),
        (["bench", "nope", "--dir", str(ROOT / "benchmarks")], "no benchmark for 'nope'"),
        (["bench", "--dir", "/no/such/benchmarks"], "no such benchmarks folder"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, args, needle):
    code, out, err = cli(capsys, *args)
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert needle in err and "Traceback" not in err
    assert out == ""


def test_unwritable_out_is_one_line_and_exit_2(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    for out in (str(blocker / "sub"), str(blocker), "/proc/icml26-out"):
        code, _, err = cli(capsys, "reproduce", "--out", out)
        assert code == 2
        assert len(err.strip().splitlines()) == 1, err
        assert "cannot write to --out" in err


def test_reproduce_with_nothing_implemented_writes_a_plain_report(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr("icml26.registry.is_implemented", lambda slug: False)
    code, out, err = cli(capsys, "reproduce", "--out", str(tmp_path), "--json")
    assert code == 1  # nothing could run: a failure, though the report of what exists is written
    doc = json.loads(out)
    assert doc["cards"] == [] and len(doc["skipped"]) == 28
    assert "nothing to run" in err
    assert "No paper is implemented yet" in (tmp_path / "REPORT.md").read_text()


def test_report_command_rerenders(capsys, tmp_path):
    code, _, err = cli(capsys, "report", str(tmp_path))
    assert code == 0 and (tmp_path / "report.html").exists() and "wrote" in err


def test_doctor(capsys):
    code, out, _ = cli(capsys, "doctor")
    assert code == 0
    assert "icml26" in out and "numpy" in out and "model cache" in out and "threads" in out


def test_version(capsys):
    code, out, _ = cli(capsys, "--version")
    assert code == 0 and out.startswith("icml26 ")


def test_report_into_another_folder(capsys, tmp_path):
    from icml26._core.runner import run
    from tests._core.tiny_paper import tiny_card

    cards, other = tmp_path / "cards", tmp_path / "other"
    run([tiny_card()], profile="smoke", out=cards, report=False)
    code, out, err = cli(capsys, "report", str(cards), "--out", str(other), "--profile", "smoke")
    assert code == 0 and out == "" and "wrote" in err
    assert (other / "report.html").is_file() and not (cards / "report.html").exists()
    md = (other / "REPORT.md").read_text()
    assert "This run: the **smoke** profile (as asked)" in md and "../cards/tiny/C1-smoke.json" in md


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--reference", "/no/such/folder"], "no such --reference folder"),
        (["--bench", "/no/such/results.json"], "no such --bench file"),
        (["--out", ""], "--out must not be empty"),
        (["--out", "/proc/icml26-report"], "cannot write to --out"),
        (["--profile", "medium"], "medium"),
    ],
)
def test_report_bad_options_are_one_line_and_exit_2(capsys, tmp_path, args, needle):
    code, out, err = cli(capsys, "report", str(tmp_path), *args)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and needle in err, err


def test_bare_command_prints_help_and_succeeds(capsys):
    code, out, err = cli(capsys)
    assert code == 0 and "Usage: icml26" in out and "reproduce" in out and err == ""


def test_help_shows_flags_without_a_value_placeholder(capsys):
    code, out, _ = cli(capsys, "reproduce", "--help")
    assert code == 0 and "--force" in out and "--verbose" in out
    assert "<bool>" not in out
    code, out, _ = cli(capsys, "--help")
    assert code == 0 and "<bool>" not in out and "bench" in out


def test_empty_slug_suggests_nothing(capsys):
    code, _, err = cli(capsys, "show", "")
    assert code == 2 and "nammd" not in err and "ifci_completion" not in err


def test_unknown_slug_is_rejected_before_out_is_created(capsys, tmp_path):
    out = tmp_path / "never"
    code, _, err = cli(capsys, "reproduce", "nope", "--out", str(out))
    assert code == 2 and "unknown paper 'nope'" in err
    assert not out.exists()


def test_planned_paper_alone_runs_nothing_and_fails(capsys, tmp_path, monkeypatch):
    code, _, err = cli(capsys, "reproduce", planned_slug(monkeypatch), "--out", str(tmp_path))
    assert code == 1
    assert "planned, not implemented yet" in err and "nothing to run" in err


def test_workers_with_the_serial_executor_says_it_has_no_effect(capsys, tmp_path, monkeypatch):
    code, _, err = cli(capsys, "reproduce", planned_slug(monkeypatch), "--workers", "2", "--out", str(tmp_path))
    assert code == 1 and "--workers 2 has no effect with the serial executor" in err


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda out: (out / ".cells").write_text(""), ".cells' is a file where a folder is needed"),
        (lambda out: (out / "nammd" / "C1a-smoke.json").mkdir(parents=True), "C1a-smoke.json' is a folder"),
        (lambda out: (out / "nammd").write_text(""), "nammd' is a file where a folder is needed"),
        (lambda out: (out / "REPORT.md").mkdir(), "REPORT.md' is a folder"),
    ],
)
def test_paths_in_the_way_are_one_line_exit_2_before_any_cell(capsys, tmp_path, make, needle):
    out = tmp_path / "out"
    out.mkdir()
    make(out)
    code, _, err = cli(capsys, "reproduce", "nammd", "--profile", "smoke", "--out", str(out))
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and needle in err and "internal error" not in err
    assert not list(out.glob(".cells/*/*.json"))  # nothing was computed


def test_show_json(capsys, monkeypatch):
    code, out, _ = cli(capsys, "show", "nammd", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["slug"] == "nammd" and doc["install"] == "pip install 'icml26[stats]'"
    claim = doc["claims"][0]
    assert {"id", "statement", "metric", "profiles"} <= set(claim)
    assert set(claim["profiles"]) == {"smoke", "quick", "full"}
    assert set(doc["declared_cost"]) == {"smoke", "quick", "full"}
    code, out, _ = cli(capsys, "show", planned_slug(monkeypatch), "--json")
    assert code == 0 and json.loads(out)["claims"] == [] and json.loads(out)["status"] == "planned"


def test_doctor_json(capsys):
    code, out, _ = cli(capsys, "doctor", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["icml26"] and "numpy" in doc["packages"] and "threads" in doc and "model_caches" in doc
    assert all(set(v) == {"ok", "missing"} for v in doc["extras"].values())


def _icml26(*args, env=None, **kwargs):
    return subprocess.Popen(
        [sys.executable, "-m", "icml26", *args], env={**os.environ, **(env or {})}, text=True, **kwargs
    )


@pytest.mark.parametrize("args", [["show", "nammd"], ["list"], ["--help"]])
def test_a_closed_pipe_is_not_an_error(args):
    """`icml26 show nammd | head -1`: the reader leaves; we exit 0 without a word."""
    proc = _icml26(*args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before the first write
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert err == ""


@pytest.mark.parametrize("args", [["show", "nammd"], ["list"], ["doctor"]])
def test_an_ascii_terminal_gets_replacement_characters_not_a_crash(args):
    proc = _icml26(*args, env={"PYTHONIOENCODING": "ascii"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "UnicodeEncodeError" not in err and out.strip()


def test_unreachable_ray_cluster_is_a_configuration_error(capsys, tmp_path, monkeypatch):
    pytest.importorskip("ray")
    monkeypatch.setenv("RAY_ADDRESS", "auto")
    # no cluster to find, even if another Ray runs on this machine: `auto` reads the temp folder and greps ps
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path / "no-ray-here"))
    monkeypatch.setattr("ray._private.services.find_gcs_addresses", lambda: [], raising=False)
    out = tmp_path / "out"
    code, _, err = cli(capsys, "reproduce", "nammd", "--profile", "smoke", "--executor", "ray", "--out", str(out))
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "cannot start the ray executor" in err and "auto" in err
    assert "internal error" not in err


@pytest.mark.ray
@pytest.mark.timeout(300)
def test_a_local_ray_run_keeps_ray_logs_off_stderr(tmp_path):
    """Only our own lines reach stderr (Ray's banners and warnings come through with -v only)."""
    pytest.importorskip("ray")
    env = {"PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]), "RAY_USAGE_STATS_ENABLED": "0"}
    args = ["reproduce", "nammd", "--profile", "smoke", "--executor", "ray", "--workers", "2", "--out", str(tmp_path)]
    proc = _icml26(*args, env={**env, "RAY_ADDRESS": ""}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err
    foreign = [line for line in err.splitlines() if line and not line.startswith(("icml26: ", "["))]
    assert foreign == [], foreign


def test_report_on_a_file_says_it_is_a_file(capsys, tmp_path):
    card = tmp_path / "C1-full.json"
    card.write_text("{}")
    code, out, err = cli(capsys, "report", str(card))
    assert code == 2 and out == "" and "is a file" in err and "no such folder" not in err
