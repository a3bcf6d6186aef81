import json
import subprocess
import sys
import time

import pytest

from icml26.cli import main
from icml26.registry import slugs


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
heavy = sorted(m for m in ("torch", "matplotlib", "ray", "jinja2") if m in sys.modules)
print("HEAVY=" + ",".join(heavy), file=sys.stderr)
"""


@pytest.mark.parametrize("args", [["--help"], ["list"], ["list", "--json"], ["show", "nammd"]])
def test_help_and_list_import_no_torch_nor_matplotlib(args):
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHECK_IMPORTS.format(args=args)], capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY=\n" in proc.stderr or proc.stderr.rstrip().endswith("HEAVY=")
    if args == ["--help"]:
        assert elapsed < 1.0, f"--help took {elapsed:.2f}s"


def test_console_script_help_is_fast():
    exe = subprocess.run(
        [sys.executable, "-c", "import shutil; print(shutil.which('icml26') or '')"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    cmd = [exe, "--help"] if exe else [sys.executable, "-m", "icml26", "--help"]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0 and "reproduce" in proc.stdout
    assert time.perf_counter() - start < 1.0


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
        (["show", ""], "unknown paper"),
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
    assert code == 0
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
