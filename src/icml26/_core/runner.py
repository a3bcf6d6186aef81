"""The runner: plan cells, skip the finished ones, execute the rest, write cards, plots and the report.

Layout under ``out`` (default ``results/``)::

    <slug>/<claim>-<profile>.json         the result card
    <slug>/<claim>-<profile>.png          its plot
    <slug>/<claim>-<profile>.csv          per-cell, per-method metrics (long format)
    <slug>/<claim>-<profile>.curves.csv   curves the cells returned, if any
    .cells/<slug>/<cell key>.json         one finished cell (the resume cache; not committed)
    run-summary.json                      where the time of the last run went (schema below)
    report.html, REPORT.md                rendered from every card under ``out``

Resume: a cell is keyed by the hash of its spec (paper, claim, profile, setting, seed, claim revision). A rerun
loads finished cells instead of recomputing them unless ``force=True``; failed cells are always retried.
Errors: an exception inside a cell becomes an error record (type, message, traceback); the run goes on, and
the claim's card says which cells failed and is ``inconclusive``. Before any cell runs, every path the run will
write is checked (a folder where a file goes, a file where a folder goes): such a problem is a :class:`RunError`,
as is a write that fails later.

``run-summary.json`` (``RunResult.summary``) records where the time went, for the report and the budget checks
(:mod:`icml26._core.budget`)::

    {
      "schema": "icml26.run-summary/1",
      "profile": "quick", "executor": "process", "workers": 2,
      "started": "2026-05-01T12:00:00+00:00",    # UTC, when the run began
      "wall_seconds": 95.2,                     # start of the run to the summary (cards and plots included)
      "budget_seconds": 60.0,                   # the quick profile's cell-time budget per paper; null otherwise
      "cells": {"total": 180, "computed": 170, "cached": 10, "failed": 0},
      "papers": [{
        "slug": "nammd",
        "cells": 40, "computed": 40, "cached": 0, "failed": 0,   # distinct cells (shared between claims once)
        "wall_seconds": 21.7,          # first computed cell's start to the last one's end; 0 if all were cached;
                                       # with parallel executors papers overlap, so these need not add up
        "cell_seconds": 38.9,          # summed run time of its distinct cells, cached ones from their record:
                                       # what the paper costs from scratch on one core
        "computed_cell_seconds": 38.9, # the same, for the cells computed in this run only
        "declared_seconds": 30.0,      # the profile's declared cost (budget.declared_cost); null if incomplete
        "missing_declarations": [],    # claims that declare no cell_seconds
        "over_budget": false,          # quick profile: cell_seconds > budget_seconds
        "claims": [{"id": "C1", "cells": 12, "cell_seconds": 5.2, "mean_cell_seconds": 0.43,
                    "declared_cell_seconds": 0.5}]   # a claim's cells include those it shares
      }]
    }
"""

from __future__ import annotations

import csv
import functools
import io
import math
import os
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from icml26._core.budget import QUICK_BUDGET_SECONDS, declared_cost
from icml26._core.cards import build_card
from icml26._core.claims import PROFILES, Cell, CellFunction, Claim, PaperCard
from icml26._core.executors import ExecutorError, get_executor
from icml26._core.io import atomic_write_text, canonical_json, read_json, to_jsonable, write_json
from icml26._core.provenance import provenance

__all__ = [
    "SUMMARY_NAME",
    "CellOutputError",
    "RunError",
    "RunResult",
    "card_path",
    "check_writable",
    "execute_cell",
    "run",
]

SUMMARY_NAME = "run-summary.json"
SUMMARY_SCHEMA = "icml26.run-summary/1"

CellCallback = Callable[[Mapping[str, Any], int, int], None]


class RunError(RuntimeError):
    """A run that cannot start (bad profile, unwritable output folder): one line, no traceback needed."""


class CellOutputError(ValueError):
    """A cell function returned something that is not ``{"metrics": {method: {metric: number}}}``."""


Requirement = tuple[str, tuple[str, ...]]  # (metric, methods): what one claim reads from a cell


def _check_output(out: Any, requirements: Sequence[Requirement]) -> dict[str, Any]:
    if not isinstance(out, Mapping) or not isinstance(out.get("metrics"), Mapping):
        raise CellOutputError("a cell must return a mapping with a 'metrics' mapping {method: {metric: value}}")
    metrics: dict[str, dict[str, float]] = {}
    for method, values in out["metrics"].items():
        if not isinstance(values, Mapping):
            raise CellOutputError(f"metrics[{method!r}] must be a mapping {{metric: value}}")
        metrics[str(method)] = {}
        for name, v in values.items():
            v = to_jsonable(v) if not isinstance(v, float) else v
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise CellOutputError(f"metrics[{method!r}][{name!r}] must be a number, got {v!r}")
            if not math.isfinite(v):
                raise CellOutputError(f"metrics[{method!r}][{name!r}] is not finite ({v})")
            metrics[str(method)][str(name)] = float(v)
    for metric, methods in requirements:
        for m in methods:
            if metric not in metrics.get(m, {}):
                raise CellOutputError(f"the cell reported no {metric!r} for {m!r} (it reported {sorted(metrics)})")
    extra = {k: to_jsonable(v) for k, v in out.items() if k in ("curves", "info")}
    unknown = sorted(set(out) - {"metrics", "curves", "info"})
    if unknown:
        raise CellOutputError(f"unknown keys in cell output: {unknown} (allowed: metrics, curves, info)")
    return {"metrics": metrics, **extra}


def execute_cell(run: CellFunction, cell: Cell, requirements: Sequence[Requirement]) -> dict[str, Any]:
    """Run one cell and return its record; never raises for an error inside the cell (it is recorded).

    ``requirements`` lists, for every claim that reads this cell, its metric and methods.
    """
    start = time.perf_counter()
    record: dict[str, Any] = {"key": cell.key, "spec": cell.spec(), "claim": cell.claim, "started": time.time()}
    try:
        record.update(_check_output(run(cell), requirements))
        record["status"] = "ok"
    except Exception as exc:  # one failing cell must never kill the run
        record.update(
            status="error",
            error={"type": type(exc).__name__, "message": str(exc), "traceback": traceback.format_exc()},
        )
    record["runtime_s"] = time.perf_counter() - start
    return record


def card_path(out: Path, slug: str, claim_id: str, profile: str, suffix: str = ".json") -> Path:
    return out / slug / f"{claim_id}-{profile}{suffix}"


def _cell_path(out: Path, cell: Cell) -> Path:
    return out / ".cells" / cell.paper / f"{cell.key}.json"


def _load_finished(path: Path, cell: Cell, requirements: Sequence[Requirement]) -> dict[str, Any] | None:
    try:
        rec = read_json(path)
    except (OSError, ValueError):
        return None  # absent, or a file from an older layout: recompute
    if not (isinstance(rec, dict) and rec.get("status") == "ok" and rec.get("spec") == to_jsonable(cell.spec())):
        return None
    try:  # a cached record must still satisfy what the claim reads from it
        _check_output({k: rec[k] for k in ("metrics", "curves", "info") if k in rec}, requirements)
    except CellOutputError:
        return None
    return rec


def check_writable(out: Path) -> None:
    """Create ``out`` if needed and prove it writable, or raise :class:`RunError` (one line)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".write-probe-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise RunError(f"cannot write to --out {str(out)!r}: {exc.strerror or exc}") from None


def _in_the_way(path: Path, want: str) -> str | None:
    """Why ``path`` cannot be written as a ``want`` ("file" or "folder"), or None if it can."""
    if want == "folder":
        for parent in (path, *path.parents):
            if parent.exists():
                return None if parent.is_dir() else f"{str(parent)!r} is a file where a folder is needed"
        return None
    if path.is_dir():
        return f"{str(path)!r} is a folder where a file is needed"
    return _in_the_way(path.parent, "folder")


def preflight(out: Path, plan: Sequence[tuple[PaperCard, Claim, Sequence[Cell]]], report: bool = True) -> None:
    """Check every path the run will write, before any work: a folder where a file goes (or the reverse) is a
    :class:`RunError` naming it, rather than a crash after the first cell has been computed."""
    targets: list[tuple[Path, str]] = [(out / ".cells", "folder")]
    if report:
        targets += [(out / name, "file") for name in ("report.html", "REPORT.md")]
    targets.append((out / SUMMARY_NAME, "file"))
    for paper, claim, cells in plan:
        targets += [(out / ".cells" / paper.slug, "folder"), (out / paper.slug, "folder")]
        targets += [(_cell_path(out, cell), "file") for cell in cells]
        targets += [
            (card_path(out, paper.slug, claim.id, plan_profile, suffix), "file")
            for plan_profile in {c.profile for c in cells}
            for suffix in (".json", ".png", ".csv", ".curves.csv")
        ]
    for path, want in dict.fromkeys(targets):
        if problem := _in_the_way(path, want):
            raise RunError(f"cannot write the run into --out {str(out)!r}: {problem}")


@dataclass
class RunResult:
    cards: list[dict[str, Any]] = field(default_factory=list)
    card_paths: list[Path] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    computed: int = 0
    cached: int = 0
    failed: int = 0
    summary: dict[str, Any] = field(default_factory=dict)
    summary_path: Path | None = None


def _summary(
    plan: Sequence[tuple[PaperCard, Claim, Sequence[Cell]]],
    records: Mapping[str, Mapping[str, Any]],
    computed: set[str],
    *,
    profile: str,
    seeds: int | None,
    executor: str,
    workers: int | None,
    started: datetime,
    wall_seconds: float,
    result: RunResult,
) -> dict[str, Any]:
    """The run summary (schema in the module docstring)."""
    budget = QUICK_BUDGET_SECONDS if profile == "quick" else None
    by_paper: dict[str, tuple[PaperCard, list[tuple[Claim, Sequence[Cell]]]]] = {}
    for paper, claim, cells in plan:
        by_paper.setdefault(paper.slug, (paper, []))[1].append((claim, cells))

    def runtime(key: str) -> float:
        return float(records[key].get("runtime_s", 0.0))

    papers = []
    for slug, (paper, claims) in by_paper.items():
        keys = list(dict.fromkeys(c.key for _, cells in claims for c in cells))
        fresh = [k for k in keys if k in computed]
        spans = [
            (float(records[k]["started"]), float(records[k]["started"]) + runtime(k))
            for k in fresh
            if isinstance(records[k].get("started"), int | float)
        ]
        declared = declared_cost(paper, profile, seeds)
        cell_seconds = sum(runtime(k) for k in keys)
        papers.append(
            {
                "slug": slug,
                "cells": len(keys),
                "computed": len(fresh),
                "cached": len(keys) - len(fresh),
                "failed": sum(records[k].get("status") != "ok" for k in keys),
                "wall_seconds": round(max(e for _, e in spans) - min(s for s, _ in spans), 3) if spans else 0.0,
                "cell_seconds": round(cell_seconds, 3),
                "computed_cell_seconds": round(sum(runtime(k) for k in fresh), 3),
                "declared_seconds": round(declared.seconds, 3) if declared.complete else None,
                "missing_declarations": list(declared.missing),
                "over_budget": budget is not None and cell_seconds > budget,
                "claims": [
                    {
                        "id": claim.id,
                        "cells": len(cells),
                        "cell_seconds": round(sum(runtime(c.key) for c in cells), 3),
                        "mean_cell_seconds": round(sum(runtime(c.key) for c in cells) / max(len(cells), 1), 4),
                        "declared_cell_seconds": declared.per_claim.get(claim.id),
                    }
                    for claim, cells in claims
                ],
            }
        )
    return {
        "schema": SUMMARY_SCHEMA,
        "profile": profile,
        "executor": executor,
        "workers": workers,
        "started": started.isoformat(timespec="seconds"),
        "wall_seconds": round(wall_seconds, 3),
        "budget_seconds": budget,
        "cells": {
            "total": len(records),
            "computed": result.computed,
            "cached": result.cached,
            "failed": result.failed,
        },
        "papers": papers,
    }


def _write_tables(
    out: Path,
    claim: Claim,
    card: PaperCard,
    profile: str,
    records: Sequence[Mapping[str, Any]],
    curves_written: dict[tuple[str, ...], str] | None = None,
) -> dict[str, str]:
    """Long-format CSV of every cell's metrics, and of the curves cells returned (if any).

    Claims that read the same cells share one curves file: ``curves_written`` maps the cells' keys to the file an
    earlier claim of the run wrote, and the later claim's card names that file (a paper whose twelve claims judge
    one grid would otherwise write the same curves twelve times)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["setting", "seed", "method", "metric", "value"])
    for r in records:
        for method, metrics in sorted((r.get("metrics") or {}).items()):  # sorted: fresh and cached rows agree
            for metric, v in sorted(metrics.items()):
                w.writerow([canonical_json(r["spec"]["setting"]), r["spec"]["seed"], method, metric, repr(v)])
    path = card_path(out, card.slug, claim.id, profile, ".csv")
    atomic_write_text(path, buf.getvalue())
    artifacts = {"csv": path.name}

    rows = [
        {"setting": canonical_json(r["spec"]["setting"]), "seed": r["spec"]["seed"], "curve": name, **point}
        for r in records
        for name, points in (r.get("curves") or {}).items()
        for point in points
    ]
    path = card_path(out, card.slug, claim.id, profile, ".curves.csv")
    cells = tuple(sorted(str(r["key"]) for r in records))
    if rows and curves_written is not None and cells in curves_written:
        path.unlink(missing_ok=True)  # a file an older run wrote for this claim alone
        artifacts["curves"] = curves_written[cells]
    elif rows:
        columns = list(dict.fromkeys(k for row in rows for k in row))
        buf = io.StringIO()
        dw = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
        dw.writeheader()
        dw.writerows(rows)
        atomic_write_text(path, buf.getvalue())
        artifacts["curves"] = path.name
        if curves_written is not None:
            curves_written[cells] = path.name
    return artifacts


def run(
    papers: Sequence[PaperCard],
    *,
    profile: str = "quick",
    seeds: int | None = None,
    executor: str = "serial",
    workers: int | None = None,
    out: str | os.PathLike[str] = "results",
    force: bool = False,
    on_cell: CellCallback | None = None,
    report: bool = True,
    verbose: bool = False,
) -> RunResult:
    """Run every claim of ``papers`` at ``profile``; write cells, cards, plots, the run summary and (optionally)
    the report.

    ``seeds`` overrides each profile's seed count. ``on_cell(record, done, total)`` is called once per cell,
    cached or computed, in completion order. Planned papers are skipped and listed in ``result.skipped``.
    ``verbose`` lets the executor's own logging through (Ray's). Raises :class:`RunError` (one line) for
    anything that stops the run as a whole: a bad profile, an output path that cannot be written, an executor
    that cannot start.
    """
    if profile not in PROFILES:
        raise RunError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILES)}")
    if seeds is not None and seeds < 1:
        raise RunError(f"--seeds must be >= 1, got {seeds}")
    started = datetime.now(UTC)
    clock = time.perf_counter()
    out_dir = Path(out)
    check_writable(out_dir)
    pool = get_executor(executor, workers, verbose=verbose)
    result = RunResult()

    plan: list[tuple[PaperCard, Claim, list[Cell]]] = []
    for paper in papers:
        if paper.status != "implemented":
            result.skipped.append((paper.slug, f"{paper.slug}: planned, not implemented yet (skipped)"))
            continue
        plan.extend((paper, claim, cells) for claim, cells in paper.plan(profile, seeds))
    preflight(out_dir, plan, report=report)

    # One job per distinct cell key: claims that share a cell function and settings share the work.
    jobs: dict[str, tuple[CellFunction, Cell, list[Requirement]]] = {}
    for _paper, claim, cells in plan:
        for cell in cells:
            job = jobs.setdefault(cell.key, (claim.run, cell, []))
            job[2].append((claim.metric, claim.methods))

    total = len(jobs)
    records: dict[str, dict[str, Any]] = {}
    todo: list[tuple[CellFunction, Cell, list[Requirement]]] = []
    done = 0
    for key, (run_fn, cell, requirements) in jobs.items():
        rec = None if force else _load_finished(_cell_path(out_dir, cell), cell, requirements)
        if rec is None:
            todo.append((run_fn, cell, requirements))
            continue
        rec["cached"] = True
        records[key] = rec
        done += 1
        result.cached += 1
        if on_cell:
            on_cell(rec, done, total)

    computed: set[str] = set()
    try:
        for rec in pool.map_unordered(execute_cell, todo):
            records[rec["key"]] = rec
            computed.add(rec["key"])
            if rec["status"] == "ok":
                _write(write_json, _cell_path(out_dir, jobs[rec["key"]][1]), rec)
            else:
                result.failed += 1
            result.computed += 1
            done += 1
            if on_cell:
                on_cell(rec, done, total)
    except ExecutorError as exc:
        raise RunError(str(exc)) from None

    from icml26._core.plots import plot_claim

    curves_written: dict[str, dict[tuple[str, ...], str]] = {}
    for paper, claim, cells in plan:
        recs = [records[c.key] for c in cells]
        shared = curves_written.setdefault(paper.slug, {})
        artifacts = _write(_write_tables, out_dir, claim, paper, profile, recs, shared)
        card = build_card(
            paper,
            claim,
            profile,
            recs,
            seeds=sorted({c.seed for c in cells}),
            runtime_s=sum(float(r.get("runtime_s", 0.0)) for r in recs),
            provenance={**provenance(claim.data), "executor": executor, "workers": workers},
            artifacts=artifacts,
        )
        png = card_path(out_dir, paper.slug, claim.id, profile, ".png")
        if plot_claim(claim, card, recs, png):
            card["artifacts"]["plot"] = png.name
        path = card_path(out_dir, paper.slug, claim.id, profile)
        _write(write_json, path, card)
        result.cards.append(card)
        result.card_paths.append(path)

    result.summary = _summary(
        plan,
        records,
        computed,
        profile=profile,
        seeds=seeds,
        executor=executor,
        workers=workers,
        started=started,
        wall_seconds=time.perf_counter() - clock,
        result=result,
    )
    result.summary_path = _write(write_json, out_dir / SUMMARY_NAME, result.summary)
    if report:
        from icml26._core.report import committed_results, default_bench, write_report

        # lead with the run just made; the committed full-profile cards of the checkout are its reference
        _write(
            functools.partial(write_report, profile=profile, reference=committed_results(), bench=default_bench()),
            out_dir,
        )
    return result


def _write(writer: Callable[..., Any], *args: Any) -> Any:
    """Call a writer; an OS error (disk full, a path changed under the run) becomes a one-line RunError."""
    try:
        return writer(*args)
    except OSError as exc:
        where = f" {str(exc.filename)!r}" if exc.filename else ""
        raise RunError(f"cannot write{where}: {exc.strerror or exc}") from None
