"""The benchmark suite: find ``benchmarks/bench_<slug>.py``, run each in its own process, collect the rows.

A benchmark file is *converted* when it defines ``rows(size)`` at its top level (read from its source, without
importing it; see :mod:`icml26._core.bench`); the others are listed as not converted, not as errors. Converted
benchmarks run one at a time, each in a fresh interpreter (so one cannot warm another's caches, and a crash or a
hang stays contained), with a time limit per size (:data:`TIMEOUTS`); their rows come back as JSON.

:func:`write_results` writes ``results.json`` and a generated ``RESULTS.md`` for the full size (the committed
results) and ``results-<size>.json`` / ``RESULTS-<size>.md`` for the others, so that a quick run never overwrites
the committed table. The JSON document::

    {
      "schema": "icml26.bench/1",
      "size": "full",
      "created": "2026-05-01T12:00:00+00:00",
      "machine": {"platform": ..., "cpu": ..., "cpu_isa": "AVX512", "cpu_count": 2, "python": "3.11.9"},
      "commit": {"sha": ..., "dirty": false} | null,
      "threads": {"cpu_count": 2, "omp_num_threads": "1", ...},   # the environment the benchmarks ran in
      "versions": {"icml26": "0.1.0", "numpy": ..., "torch": ..., ...},
      "rows": [BenchRow.as_dict() + {"benchmark": "bench_<slug>.py", "commit": sha}],
      "not_converted": ["bench_x.py"],
      "failed": [{"benchmark": "bench_y.py", "error": "..."}]
    }

Running a subset (``icml26 bench nammd``) replaces that benchmark's rows and keeps the others' rows of the same
size, each with the commit it was measured at.
"""

from __future__ import annotations

import ast
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from icml26._core.bench import SIZES
from icml26._core.io import atomic_write_text, read_json, write_json

__all__ = [
    "SCHEMA",
    "TIMEOUTS",
    "BenchSuiteError",
    "Benchmark",
    "SuiteResult",
    "default_folder",
    "discover",
    "render_markdown",
    "result_paths",
    "run_one",
    "run_suite",
    "write_results",
]

SCHEMA = "icml26.bench/1"
TIMEOUTS: dict[str, float] = {"tiny": 120.0, "quick": 300.0, "full": 1800.0}
"""Seconds allowed per benchmark: a few times the size's target (tiny: seconds, quick: ~1 min, full: ~10 min)."""

_VERSIONS = (
    "numpy",
    "scipy",
    "torch",
    "scikit-learn",
    "joblib",
    "transformers",
    "peft",
    "trl",
    "torchao",
    "causal-learn",
    "sbi",
    "mapie",
    "zuko",
    "ml_dtypes",
    "zfpy",
    "pysz",
)

# What runs in the child interpreter: import the file by path, call rows(size), write the rows as JSON.
_CHILD = """
import importlib.util, json, sys
path, size, out = sys.argv[1:4]
spec = importlib.util.spec_from_file_location("icml26_benchmark", path)
module = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = module
spec.loader.exec_module(module)
from icml26._core.bench import BenchRow
rows = module.rows(size)
if not isinstance(rows, (list, tuple)) or not all(isinstance(r, BenchRow) for r in rows):
    raise TypeError(f"rows({size!r}) must return a list of icml26._core.bench.BenchRow, got {rows!r:.200}")
with open(out, "w", encoding="utf-8") as fh:
    json.dump([r.as_dict() for r in rows], fh)
"""


class BenchSuiteError(RuntimeError):
    """No benchmarks folder, an unknown size: one line, before anything runs."""


@dataclass(frozen=True)
class Benchmark:
    path: Path
    converted: bool

    @property
    def slug(self) -> str:
        return self.path.stem.removeprefix("bench_")

    @property
    def name(self) -> str:
        return self.path.name


@dataclass
class SuiteResult:
    size: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    not_converted: list[str] = field(default_factory=list)
    failed: list[dict[str, str]] = field(default_factory=list)


def default_folder() -> Path:
    """``./benchmarks`` when it exists, else the ``benchmarks/`` of the checkout icml26 runs from."""
    here = Path("benchmarks")
    if here.is_dir():
        return here
    import icml26

    checkout = Path(icml26.__file__).resolve().parents[2] / "benchmarks"
    if checkout.is_dir():
        return checkout
    raise BenchSuiteError("no benchmarks/ folder here nor in icml26's checkout: run from a clone, or pass --dir")


def _defines_rows(path: Path) -> bool:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, UnicodeDecodeError, OSError):
        return True  # let it run and fail with its own error, rather than hide it as "not converted"
    return any(isinstance(node, ast.FunctionDef) and node.name == "rows" for node in tree.body)


def discover(folder: str | os.PathLike[str]) -> list[Benchmark]:
    """Every ``bench_*.py`` in ``folder``, sorted, marked converted or not."""
    root = Path(folder)
    if not root.is_dir():
        raise BenchSuiteError(f"no such benchmarks folder: {str(root)!r}")
    return [Benchmark(p, _defines_rows(p)) for p in sorted(root.glob("bench_*.py")) if p.is_file()]


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:400] if lines else ""


def run_one(bench: Benchmark, size: str, timeout: float | None = None) -> list[dict[str, Any]]:
    """Run one converted benchmark at ``size`` in a fresh interpreter; its rows as dicts.

    Raises RuntimeError (one line: the benchmark's own last error line, or the time-out) when it fails.
    """
    if size not in SIZES:
        raise BenchSuiteError(f"unknown size {size!r}; choose one of {', '.join(SIZES)}")
    limit = TIMEOUTS[size] if timeout is None else timeout
    with tempfile.TemporaryDirectory(prefix="icml26-bench-") as tmp:
        out = Path(tmp) / "rows.json"
        cmd = [sys.executable, "-c", _CHILD, str(bench.path.resolve()), size, str(out)]
        # its own session, so that a time-out or an interrupt ends the benchmark and whatever it started
        proc = subprocess.Popen(
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
        try:
            _, err = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise RuntimeError(f"timed out after {limit:g}s at size {size!r}") from None
        except BaseException:
            _kill_group(proc)
            raise
        if proc.returncode != 0:
            raise RuntimeError(_last_line(err) or f"exited with code {proc.returncode}")
        rows: list[dict[str, Any]] = json.loads(out.read_text(encoding="utf-8"))
    if not rows:
        raise RuntimeError(f"rows({size!r}) returned no rows")
    return rows


def _kill_group(proc: subprocess.Popen[str]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=5)
            break
        except subprocess.TimeoutExpired:
            continue


def run_suite(
    benchmarks: Sequence[Benchmark],
    size: str,
    timeout: float | None = None,
    on_done: Callable[[str, str, float], None] | None = None,
) -> SuiteResult:
    """Run every converted benchmark, one at a time; ``on_done(name, state, seconds)`` after each."""
    if size not in SIZES:
        raise BenchSuiteError(f"unknown size {size!r}; choose one of {', '.join(SIZES)}")
    from icml26._core.provenance import git_revision

    git = git_revision()
    result = SuiteResult(size=size)
    for bench in benchmarks:
        if not bench.converted:
            result.not_converted.append(bench.name)
            continue
        start = time.perf_counter()
        try:
            rows = run_one(bench, size, timeout)
        except RuntimeError as exc:
            result.failed.append({"benchmark": bench.name, "error": str(exc)})
            state = f"FAILED ({exc})"
        else:
            result.rows += [{**r, "benchmark": bench.name, "commit": git["sha"] if git else None} for r in rows]
            state = f"{len(rows)} row(s)"
        result.ran.append(bench.name)
        if on_done:
            on_done(bench.name, state, time.perf_counter() - start)
    return result


def _machine() -> dict[str, Any]:
    from icml26._core.provenance import cpu_isa, cpu_model

    return {
        "platform": platform.platform(),
        "cpu": cpu_model() or platform.machine(),
        "cpu_isa": cpu_isa(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
    }


def result_paths(out: str | os.PathLike[str], size: str) -> tuple[Path, Path]:
    """(results JSON, RESULTS markdown) for ``size``: the plain names for full, suffixed ones otherwise."""
    root = Path(out)
    if size == "full":
        return root / "results.json", root / "RESULTS.md"
    return root / f"results-{size}.json", root / f"RESULTS-{size}.md"


def write_results(out: str | os.PathLike[str], suite: SuiteResult) -> tuple[Path, Path]:
    """Write the results JSON and markdown (module docstring), keeping other benchmarks' rows of the same size."""
    import icml26
    from icml26._core.provenance import git_revision, package_version, thread_settings

    json_path, md_path = result_paths(out, suite.size)
    rows = list(suite.rows)
    try:
        previous = read_json(json_path)
    except (OSError, ValueError):
        previous = None
    if isinstance(previous, dict) and previous.get("schema") == SCHEMA and previous.get("size") == suite.size:
        rerun = set(suite.ran) | set(suite.not_converted)
        rows = [r for r in previous.get("rows", []) if r.get("benchmark") not in rerun] + rows
    rows.sort(key=lambda r: (str(r.get("paper")), str(r.get("benchmark"))))
    versions = {"icml26": icml26.__version__}
    versions.update({name: v for name in _VERSIONS if (v := package_version(name))})
    doc = {
        "schema": SCHEMA,
        "size": suite.size,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": _machine(),
        "commit": git_revision(),
        "threads": thread_settings(),
        "versions": versions,
        "rows": rows,
        "not_converted": suite.not_converted,
        "failed": suite.failed,
    }
    write_json(json_path, doc)
    atomic_write_text(md_path, render_markdown(doc))
    return json_path, md_path


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _value(v: float, unit: str) -> str:
    return f"{v:.4g} {unit}".strip()


def render_markdown(doc: Mapping[str, Any]) -> str:
    """The generated ``RESULTS.md``: a header (machine, threads, versions, commit) and one row per workload."""
    machine, commit = doc["machine"], doc.get("commit")
    threads = ", ".join(f"{k}={v}" for k, v in doc["threads"].items() if v is not None)
    versions = ", ".join(f"{k} {v}" for k, v in doc["versions"].items())
    sha = f"`{commit['sha'][:12]}`{' (uncommitted changes)' if commit['dirty'] else ''}" if commit else "unknown"
    lines = [
        "# Benchmarks",
        "",
        f"<!-- generated by `icml26 bench --size {doc['size']}`; do not edit -->",
        "",
        "Each row times our hot path against a named anchor (the field's library where one exists), as the median",
        "of interleaved repeats after a warm-up, in one process. **ratio > 1 means ours is better** (faster, smaller",
        "or higher throughput, as the unit says).",
        "",
        f"- size: {doc['size']}; created {doc['created']}",
        f"- machine: {machine['cpu']} ({machine.get('cpu_isa') or 'ISA unknown'}), {machine['cpu_count']} CPUs; "
        f"{machine['platform']}; python {machine['python']}",
        f"- threads: {threads}",
        f"- versions: {versions}",
        f"- commit: {sha}",
        "",
        "| paper | workload | ours | anchor | ratio | threads | notes |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in doc["rows"]:
        better = "lower" if r.get("better", "lower") == "lower" else "higher"
        lines.append(
            "| "
            + " | ".join(
                _cell(x)
                for x in (
                    r["paper"],
                    r["workload"],
                    f"{r.get('ours_name', 'icml26')}: {_value(r['ours'], r['unit'])}",
                    f"{r['anchor_name']}: {_value(r['anchor'], r['unit'])}",
                    f"{r['ratio']:.3g}x ({better} is better)",
                    r.get("threads", ""),
                    r.get("notes", ""),
                )
            )
            + " |"
        )
    if not doc["rows"]:
        lines.append("| — | no converted benchmark ran | | | | | |")
    if doc.get("not_converted"):
        lines += ["", "Not converted to the suite yet (no `rows(size)`): " + ", ".join(doc["not_converted"]) + "."]
    if doc.get("failed"):
        lines += ["", "Failed:"] + [f"- {f['benchmark']}: {_cell(f['error'])}" for f in doc["failed"]]
    return "\n".join(lines) + "\n"
