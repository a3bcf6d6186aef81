"""The ``icml26`` command: list, show, reproduce, report, bench, doctor.

Exit codes: 0 ok (also ``icml26`` alone, which prints the help, and output cut short by a closed pipe such as
``| head``); 1 a runtime error (a cell or a benchmark that failed, nothing that could run); 2 bad usage or
configuration (unknown slug or option, bad profile, an ``--out`` that cannot be written, an executor that cannot
start), always as one line on stderr; 130 interrupted. Text the terminal's encoding cannot show is replaced, never
fatal. ``--help``, ``list`` and ``show`` import neither torch nor matplotlib (``list`` and ``--help`` not even
numpy), so they answer in well under a second.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from icml26 import __version__

app = typer.Typer(
    name="icml26",
    help="Implementations and honest reproductions of 28 ICML 2026 methods.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # plain help: typer's rich panels print a "<bool>" placeholder after every flag, which reads as if
    # `--force true` were the way to spell it
    rich_markup_mode=None,
)


class ProfileName(StrEnum):
    smoke = "smoke"
    quick = "quick"
    full = "full"


class ExecutorName(StrEnum):
    serial = "serial"
    process = "process"
    ray = "ray"


class SizeName(StrEnum):
    tiny = "tiny"
    quick = "quick"
    full = "full"


class UsageProblem(Exception):
    """Bad input detected by a command (exit 2, one line)."""


# words a user might put after a flag, as in `--force true`: then they arrive as slugs
_FLAG_VALUES = frozenset({"true", "false", "yes", "no", "on", "off", "1", "0"})


def _err(message: str) -> None:
    print(f"icml26: {message}", file=sys.stderr)


def _fail(message: str, code: int = 2) -> NoReturn:
    _err(message)
    raise typer.Exit(code)


def _version(value: bool) -> None:
    if value:
        print(f"icml26 {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Implementations and honest reproductions of 28 ICML 2026 methods."""


@app.command("list")
def list_papers(
    group: Annotated[str | None, typer.Option("--group", "-g", help="Only this group.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
) -> None:
    """List the papers: group, slug, method, main API and status (planned or implemented)."""
    from icml26._core.claims import GROUPS
    from icml26.registry import PAPERS, is_implemented

    if group is not None and group not in GROUPS:
        _fail(f"unknown group {group!r}; groups are: {', '.join(GROUPS)}")
    rows = [
        {
            "slug": e.slug,
            "group": e.group,
            "title": e.title,
            "api": e.api,
            "extra": e.extra,
            "status": "implemented" if is_implemented(e.slug) else "planned",
        }
        for e in PAPERS
        if group is None or e.group == group
    ]
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"icml26: {len(rows)} papers", title_justify="left")
    for col in ("group", "slug", "method", "status"):
        table.add_column(col)
    for r in rows:
        style = "green" if r["status"] == "implemented" else "dim"
        table.add_row(r["group"], r["slug"], r["title"], r["status"], style=style)

    class PipeAwareConsole(Console):
        def on_broken_pipe(self) -> None:  # rich exits 1 here; a closed pipe is not an error (see main)
            self.quiet = True
            raise BrokenPipeError

    PipeAwareConsole().print(table)


def _card_or_fail(slug: str) -> Any:
    from icml26.registry import RegistryError, load_card

    if not slug.strip():
        _fail(f"unknown paper {slug!r}: a slug must not be empty (see `icml26 list`)")
    try:
        return load_card(slug)
    except RegistryError as exc:
        hint = " (--force, --json and --verbose are flags: they take no value)" if slug.lower() in _FLAG_VALUES else ""
        _fail(f"{exc}{hint}")
    except ImportError as exc:
        _fail(f"{slug}: {exc}", code=1)


def _describe_card(card: Any) -> dict[str, Any]:
    """The paper and its claims as JSON: what `show --json` prints."""
    from icml26._core.budget import declared_cost

    claims = []
    for c in card.claims:
        claims.append(
            {
                **c.describe(),
                "profiles": {
                    name: {
                        "settings": len(prof.settings),
                        "seeds": prof.seeds,
                        "cells": len(prof.settings) * prof.seeds,
                        "cell_seconds": prof.cell_seconds,
                    }
                    for name, prof in c.profiles.items()
                },
            }
        )
    doc = {**card.describe(), "install": f"pip install 'icml26[{card.extra}]'", "claims": claims}
    if card.claims:
        costs = {p: declared_cost(card, p) for p in card.claims[0].profiles}
        doc["declared_cost"] = {
            p: {"cells": cost.cells, "seconds": cost.seconds if cost.complete else None, "missing": list(cost.missing)}
            for p, cost in costs.items()
        }
    return doc


@app.command()
def show(
    slug: Annotated[str, typer.Argument(metavar="SLUG", help="A paper slug (see `icml26 list`).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
) -> None:
    """Show one paper: its API, extra, and each claim with its test and profiles."""
    card = _card_or_fail(slug)
    if as_json:
        print(json.dumps(_describe_card(card), indent=2))
        return
    lines = [
        f"{card.title} ({card.group}/{card.slug}) — {card.status}",
        f"API: {card.api}    install: pip install 'icml26[{card.extra}]'",
    ]
    if not card.claims:
        lines.append("No claims yet: this paper is planned.")
    for c in card.claims:
        lines.append(f"\n{c.id}: {c.statement}")
        against = ", ".join(c.baselines) if c.baselines else f"reference {c.reference:g}"
        lines.append(
            f"  {c.method} vs {against}: {c.metric} ({c.direction} is better), {c.test}, "
            f"min effect {c.min_effect:g}{' (relative)' if c.relative else ''}"
        )
        if c.paper_figure:
            lines.append(f"  paper: {c.paper_figure}")
        sizes = ", ".join(f"{p}: {len(prof.settings)}x{prof.seeds} cells" for p, prof in c.profiles.items())
        lines.append(f"  profiles: {sizes}")
    print("\n".join(lines))  # plain print: paper text may hold brackets that rich would read as markup


def _progress_printer() -> Any:
    """One plain line per finished cell (stderr), for logs and non-terminals."""

    def on_cell(rec: Mapping[str, Any], done: int, total: int) -> None:
        spec = rec["spec"]
        setting = ",".join(f"{k}={v}" for k, v in spec["setting"].items())
        state = "cached" if rec.get("cached") else rec["status"]
        extra = f" {rec['error']['type']}: {rec['error']['message']}" if rec["status"] == "error" else ""
        width = len(str(total))
        print(
            f"[{done:>{width}}/{total}] {spec['paper']} {rec.get('claim', '')} {spec['profile']} seed={spec['seed']}"
            f"{' ' + setting if setting else ''} {state} {rec.get('runtime_s', 0.0):.2f}s{extra}",
            file=sys.stderr,
            flush=True,
        )

    return on_cell


def _load_cards(slugs: list[str] | None) -> tuple[list[Any], list[str]]:
    """The cards to run and the slugs whose CARD could not be loaded (whole sweep only: those are skipped)."""
    from icml26.registry import PAPERS, load_card

    if slugs:
        return [_card_or_fail(s) for s in dict.fromkeys(slugs)], []
    cards, broken = [], []
    for e in PAPERS:  # the whole sweep: a paper that cannot load is reported and skipped, the others still run
        try:
            cards.append(load_card(e.slug))
        except Exception as exc:
            broken.append(e.slug)
            _err(f"{e.slug}: cannot load its CARD ({type(exc).__name__}: {exc}); skipped")
    return cards, broken


def _time_lines(summary: Mapping[str, Any]) -> list[str]:
    """One line per paper: where the time went (wall, cell time, declared cost, the quick budget)."""
    lines = []
    budget = summary.get("budget_seconds")
    for p in summary.get("papers", ()):
        declared = p.get("declared_seconds")
        notes = [f"declared {declared:.0f}s" if declared is not None else "no declared cost"]
        if budget is not None:
            notes.append(f"OVER the {budget:.0f}s budget" if p["over_budget"] else f"budget {budget:.0f}s")
        lines.append(
            f"time {p['slug']}: {p['wall_seconds']:.1f}s wall, {p['cell_seconds']:.1f}s of cell time over "
            f"{p['cells']} cells ({p['cached']} cached); {', '.join(notes)}"
        )
    return lines


@app.command()
def reproduce(
    slugs: Annotated[
        list[str] | None, typer.Argument(metavar="SLUG", help="Papers to run (default: all implemented).")
    ] = None,
    profile: Annotated[ProfileName, typer.Option("--profile", "-p", help="Budget of the run.")] = ProfileName.quick,
    seeds: Annotated[
        int | None, typer.Option("--seeds", min=1, max=10_000, help="Override each profile's seed count.")
    ] = None,
    executor: Annotated[ExecutorName, typer.Option("--executor", "-e", help="Where cells run.")] = ExecutorName.serial,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            "-w",
            min=1,
            max=4096,
            help="Parallel workers: processes, local Ray CPUs, or at most this many cells at once on a Ray cluster.",
        ),
    ] = None,
    out_arg: Annotated[str, typer.Option("--out", "-o", help="Output folder for cards and report.")] = "results",
    force: Annotated[bool, typer.Option("--force", help="Recompute finished cells.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON document on stdout.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Let Ray's own log lines through.")] = False,
) -> None:
    """Run the claims of the given papers (all by default) and write cards, plots and the report."""
    from icml26._core.executors import get_executor
    from icml26._core.runner import RunError, check_writable, run

    if not out_arg.strip():
        _fail("--out must not be empty")
    cards, broken = _load_cards(slugs)  # validate the slugs before anything is created on disk
    if broken and not cards:
        raise typer.Exit(1)
    out = Path(out_arg)
    try:
        check_writable(out)
    except RunError as exc:
        _fail(str(exc))
    for notice in get_executor(executor.value, workers).notices():
        _err(notice)

    planned = [c.slug for c in cards if c.status != "implemented"]
    if slugs:
        for slug in planned:
            _err(f"{slug}: planned, not implemented yet (skipped)")
    elif planned:
        _err(f"skipping {len(planned)} planned paper(s), not implemented yet: {', '.join(planned)}")
    nothing_to_run = not any(c.status == "implemented" for c in cards)
    if nothing_to_run:
        _err("no implemented paper among those asked for: nothing to run; writing the report of what exists")

    start = time.perf_counter()
    progress_ctx = None
    on_cell = _progress_printer()
    if sys.stderr.isatty() and not as_json:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        progress_ctx = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            transient=True,
        )
        progress_ctx.start()
        task = progress_ctx.add_task("cells", total=None)

        def on_cell(rec: Mapping[str, Any], done: int, total: int) -> None:
            spec = rec["spec"]
            desc = f"{spec['paper']} {rec.get('claim', '')} seed={spec['seed']}"
            progress_ctx.update(task, completed=done, total=total, description=desc)
            if rec["status"] == "error":
                progress_ctx.console.print(f"[red]cell failed[/] {desc}: {rec['error']['message']}", markup=True)

    try:
        result = run(
            cards,
            profile=profile.value,
            seeds=seeds,
            executor=executor.value,
            workers=workers,
            out=out,
            force=force,
            on_cell=on_cell,
            verbose=verbose,
        )
    except RunError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        _fail("interrupted; finished cells are saved: rerun the same command to resume", code=130)
    finally:
        if progress_ctx is not None:
            progress_ctx.stop()

    elapsed = time.perf_counter() - start
    if as_json:
        doc = {
            "profile": profile.value,
            "out": str(out),
            "report": str(out / "report.html"),
            "computed": result.computed,
            "cached": result.cached,
            "failed": result.failed,
            "skipped": [s for s, _ in result.skipped],
            "cards": [
                {
                    "path": str(p),
                    "paper": c["paper"]["slug"],
                    "claim": c["claim"]["id"],
                    "verdict": c["verdict"],
                    "status": c["status"],
                    "summary": c["summary"],
                }
                for p, c in zip(result.card_paths, result.cards, strict=True)
            ],
            "seconds": round(elapsed, 3),
            "run_summary": str(result.summary_path) if result.summary_path else None,
            "papers": result.summary.get("papers", []),
        }
        print(json.dumps(doc, indent=2))
    else:
        for c in result.cards:
            _err(f"{c['paper']['slug']} {c['claim']['id']} [{c['profile']}]: {c['verdict']} — {c['summary']}")
        for line in _time_lines(result.summary):
            _err(line)
        _err(
            f"{len(result.cards)} card(s), {result.computed} cell(s) computed, {result.cached} cached, "
            f"{result.failed} failed in {elapsed:.1f}s; report: {out / 'report.html'}"
        )
    if result.failed or broken or nothing_to_run:
        raise typer.Exit(1)


@app.command()
def report(
    directory_arg: Annotated[str, typer.Argument(metavar="DIRECTORY", help="Folder holding the cards.")] = "results",
    out_arg: Annotated[
        str | None,
        typer.Option("--out", "-o", help="Write report.html and REPORT.md here (default: DIRECTORY)."),
    ] = None,
    profile: Annotated[
        ProfileName | None,
        typer.Option("--profile", "-p", help="Lead with this profile (default: that of the newest card)."),
    ] = None,
    reference: Annotated[
        str | None,
        typer.Option(
            "--reference",
            help="Folder of the committed full-profile cards shown beside the run "
            "(default: results/ of the source checkout, else DIRECTORY).",
        ),
    ] = None,
    bench: Annotated[
        str | None,
        typer.Option(
            "--bench",
            help="benchmarks/results.json for the Performance section (default: that of the source checkout, if any).",
        ),
    ] = None,
    readme: Annotated[
        Path | None,
        typer.Option("--readme", help="Also rewrite this README's paper table and the per-paper pages (full profile)."),
    ] = None,
) -> None:
    """Re-render report.html and REPORT.md from the cards in DIRECTORY (no re-running)."""
    if not directory_arg.strip():
        _fail("DIRECTORY must not be empty")
    directory = Path(directory_arg)
    if directory.exists() and not directory.is_dir():
        _fail(f"{str(directory)!r} is a file; give the folder that holds the cards")
    if not directory.is_dir():
        _fail(f"no such folder: {str(directory)!r}")
    if out_arg is not None and not out_arg.strip():
        _fail("--out must not be empty")
    if reference is not None and not Path(reference).is_dir():
        _fail(f"no such --reference folder: {reference!r}")
    if bench is not None and not Path(bench).is_file():
        _fail(f"no such --bench file: {bench!r}")
    if readme is not None and not readme.is_file():
        _fail(f"no such README: {str(readme)!r}")
    from icml26._core.report import committed_results, default_bench, load_cards, update_readme, write_report
    from icml26._core.runner import RunError, check_writable

    out = Path(out_arg) if out_arg is not None else directory
    try:
        check_writable(out)
    except RunError as exc:
        _fail(str(exc))
    try:
        html, md = write_report(
            directory,
            out=out,
            profile=profile.value if profile else None,
            reference=reference if reference is not None else committed_results(),
            bench=bench if bench is not None else default_bench(),
        )
        if readme is not None:
            changed = update_readme(readme, load_cards(directory))
            _err(f"{readme}: paper table and per-paper pages {'updated' if changed else 'already up to date'}")
    except OSError as exc:
        _fail(f"cannot write the report into {str(out)!r}: {exc.strerror or exc}")
    except ValueError as exc:
        _fail(str(exc))
    _err(f"wrote {html} and {md}")


@app.command()
def bench(
    slugs: Annotated[
        list[str] | None, typer.Argument(metavar="SLUG", help="Papers whose benchmark to run (default: all).")
    ] = None,
    size: Annotated[
        SizeName, typer.Option("--size", "-s", help="tiny: seconds; quick: ~1 min each; full: ~10 min each.")
    ] = SizeName.quick,
    folder_arg: Annotated[
        str | None, typer.Option("--dir", help="Folder of bench_<slug>.py files (default: the checkout's benchmarks/).")
    ] = None,
    out_arg: Annotated[
        str | None, typer.Option("--out", "-o", help="Where the results files go (default: --dir).")
    ] = None,
    timeout: Annotated[
        float | None, typer.Option("--timeout", min=1, help="Seconds allowed per benchmark (default by size).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the results document on stdout.")] = False,
) -> None:
    """Run the benchmarks (each in its own process, one at a time) and write results.json and RESULTS.md."""
    from icml26._core.benchsuite import BenchSuiteError, default_folder, discover, run_suite, write_results
    from icml26._core.runner import RunError, check_writable

    try:
        folder = Path(folder_arg) if folder_arg is not None else default_folder()
        found = discover(folder)
        if slugs:
            known = {b.slug: b for b in found}
            unknown = [s for s in dict.fromkeys(slugs) if s not in known]
            if unknown:
                names = ", ".join(sorted(known)) or "none"
                _fail(f"no benchmark for {', '.join(map(repr, unknown))} in {str(folder)!r} (there are: {names})")
            found = [known[s] for s in dict.fromkeys(slugs)]
        out = Path(out_arg) if out_arg is not None else folder
        check_writable(out)
    except (BenchSuiteError, RunError) as exc:
        _fail(str(exc))

    def on_done(name: str, state: str, seconds: float) -> None:
        _err(f"{name} [{size.value}]: {state} in {seconds:.1f}s")

    try:
        suite = run_suite(found, size.value, timeout=timeout, on_done=on_done)
        json_path, md_path = write_results(out, suite)
    except OSError as exc:
        _fail(f"cannot write the benchmark results into {str(out_arg or folder)!r}: {exc.strerror or exc}")
    except KeyboardInterrupt:
        _fail("interrupted; no results written", code=130)
    if suite.not_converted:
        _err(f"not converted to the suite yet (no rows(size)): {', '.join(suite.not_converted)}")
    if as_json:
        print(json_path.read_text(encoding="utf-8"), end="")
    _err(f"{len(suite.rows)} row(s) from {len(suite.ran)} benchmark(s), {len(suite.failed)} failed; wrote {md_path}")
    if suite.failed:
        raise typer.Exit(1)


def _extras() -> dict[str, list[tuple[str, str | None, bool]]]:
    """{extra: [(requirement, installed version or None, satisfied)]} from icml26's own metadata."""
    from importlib import metadata

    from packaging.requirements import Requirement

    try:
        reqs = [Requirement(r) for r in metadata.requires("icml26") or []]
    except metadata.PackageNotFoundError:
        return {}
    extras: dict[str, list[tuple[str, str | None, bool]]] = {}
    for req in reqs:
        if req.marker is None or req.name == "icml26":
            continue
        names = [x for x in metadata.metadata("icml26").get_all("Provides-Extra") or []]
        for extra in names:
            if req.marker.evaluate({"extra": extra}):
                try:
                    have: str | None = metadata.version(req.name)
                except metadata.PackageNotFoundError:
                    have = None
                ok = have is not None and req.specifier.contains(have, prereleases=True)
                extras.setdefault(extra, []).append((str(req), have, ok))
    return extras


def _doctor_facts() -> dict[str, Any]:
    from icml26._core.paths import MODEL_CACHES, cache_dir
    from icml26._core.provenance import git_revision, package_version, thread_settings

    cache = cache_dir()
    return {
        "icml26": __version__,
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "git": git_revision(),
        "packages": {
            name: package_version(name)
            for name in ("numpy", "scipy", "torch", "matplotlib", "ray", "joblib", "typer", "jsonschema")
        },
        "extras": {
            extra: {"ok": all(ok for _, _, ok in reqs), "missing": [r for r, _, ok in reqs if not ok]}
            for extra, reqs in sorted(_extras().items())
        },
        "threads": thread_settings(),
        "model_caches": {
            model: {
                "path": str(cache / folder),
                "warm": (cache / folder).is_dir() and any((cache / folder).glob("*.safetensors")),
            }
            for model, folder in MODEL_CACHES.items()
        },
    }


@app.command()
def doctor(as_json: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False) -> None:
    """Versions, which extras are installed, thread settings, and whether the offline model cache is warm."""
    facts = _doctor_facts()
    if as_json:
        print(json.dumps(facts, indent=2))
        return
    lines = [f"icml26 {facts['icml26']}  python {facts['python']}  ({facts['executable']})"]
    if git := facts["git"]:
        lines.append(f"git {git['sha'][:12]}{' (uncommitted changes)' if git['dirty'] else ''}")
    for name, version in facts["packages"].items():
        lines.append(f"  {name:<11} {version or 'not installed'}")
    lines.append("extras:")
    for extra, state in facts["extras"].items():
        lines.append(f"  [{extra}] {'ok' if state['ok'] else 'missing ' + ', '.join(state['missing'])}")
    lines.append("threads: " + ", ".join(f"{k}={v}" for k, v in facts["threads"].items() if v is not None))
    for model, cache in facts["model_caches"].items():
        lines.append(f"model cache {model}: {'warm' if cache['warm'] else 'cold'} ({cache['path']})")
    print("\n".join(lines))


def _exit_code(exc: BaseException) -> int:
    """Map what the CLI framework raises to an exit code, printing usage errors as one line.

    Typer's exceptions moved between releases (click's, then its own vendored copy), so they are recognised by
    shape: an ``Exit`` carries ``exit_code``; a usage error also has ``format_message`` (exit code 2).
    """
    name = type(exc).__name__
    if name == "Abort":
        _err("aborted")
        return 130
    code = getattr(exc, "exit_code", None)
    if name == "Exit" and isinstance(code, int):
        return code
    format_message = getattr(exc, "format_message", None)
    if isinstance(code, int) and callable(format_message):
        message = " ".join(str(format_message()).split()) or "bad usage"
        ctx = getattr(exc, "ctx", None)
        hint = getattr(ctx, "command_path", None) or "icml26"
        _err(f"{message} (see `{hint} --help`)" if code == 2 else message)
        return code
    raise exc


def _tolerant_streams() -> None:
    """Replace what the terminal's encoding cannot show (PYTHONIOENCODING=ascii and an em dash), never die on it."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if callable(reconfigure):
            with contextlib.suppress(ValueError, OSError):  # a closed or detached stream: leave it
                reconfigure(errors="replace")


def _pipe_closed() -> int:
    """The reader went away (``| head``): not an error. Point stdout at /dev/null so that the final flush at
    exit cannot raise again."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def main(argv: list[str] | None = None) -> None:
    """Console entry point: usage errors are one line on stderr with exit code 2; a crash is exit code 1."""
    args = sys.argv[1:] if argv is None else argv
    _tolerant_streams()
    if not args:
        args = ["--help"]  # the bare command shows what it can do, successfully
    try:
        result = app(args=args, prog_name="icml26", standalone_mode=False)
        code = result if isinstance(result, int) else 0
        sys.stdout.flush()
    except BrokenPipeError:
        code = _pipe_closed()
    except SystemExit as exc:  # the CLI framework's answer to a closed pipe is exit 1 behind a flush guard
        if type(sys.stdout).__name__ != "PacifyFlushWrapper" or exc.code != 1:
            raise
        code = _pipe_closed()
    except KeyboardInterrupt:
        _err("interrupted")
        code = 130
    except Exception as exc:
        try:
            code = _exit_code(exc)
        except Exception:
            if os.environ.get("ICML26_DEBUG"):
                raise
            _err(f"internal error: {type(exc).__name__}: {exc} (set ICML26_DEBUG=1 for the traceback)")
            code = 1
    sys.exit(code)
