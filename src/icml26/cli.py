"""The ``icml26`` command: list, show, reproduce, report, doctor.

Exit codes: 0 ok; 1 a runtime error (including a cell that failed; its card says which); 2 bad usage
(unknown slug or option, bad profile, unwritable ``--out``), always as one line on stderr; 130 interrupted.
``--help`` and ``list`` import neither torch nor matplotlib.
"""

from __future__ import annotations

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
)


class ProfileName(StrEnum):
    smoke = "smoke"
    quick = "quick"
    full = "full"


class ExecutorName(StrEnum):
    serial = "serial"
    process = "process"
    ray = "ray"


class UsageProblem(Exception):
    """Bad input detected by a command (exit 2, one line)."""


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
    Console().print(table)


def _card_or_fail(slug: str) -> Any:
    from icml26.registry import RegistryError, load_card

    try:
        return load_card(slug)
    except RegistryError as exc:
        _fail(str(exc))
    except ImportError as exc:
        _fail(f"{slug}: {exc}", code=1)


@app.command()
def show(slug: Annotated[str, typer.Argument(help="A paper slug (see `icml26 list`).")]) -> None:
    """Show one paper: its API, extra, and each claim with its test and profiles."""
    card = _card_or_fail(slug)
    from rich.console import Console

    console = Console()

    def say(text: str) -> None:  # paper text may contain brackets: never read it as rich markup
        console.print(text, markup=False, highlight=False, soft_wrap=True)

    say(f"{card.title} ({card.group}/{card.slug}) — {card.status}")
    say(f"API: {card.api}    install: pip install 'icml26[{card.extra}]'")
    if not card.claims:
        say("No claims yet: this paper is planned.")
    for c in card.claims:
        say(f"\n{c.id}: {c.statement}")
        against = ", ".join(c.baselines) if c.baselines else f"reference {c.reference:g}"
        say(
            f"  {c.method} vs {against}: {c.metric} ({c.direction} is better), {c.test}, "
            f"min effect {c.min_effect:g}{' (relative)' if c.relative else ''}"
        )
        if c.paper_figure:
            say(f"  paper: {c.paper_figure}")
        sizes = ", ".join(f"{p}: {len(prof.settings)}x{prof.seeds} cells" for p, prof in c.profiles.items())
        say(f"  profiles: {sizes}")


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


@app.command()
def reproduce(
    slugs: Annotated[list[str] | None, typer.Argument(help="Papers to run (default: all implemented).")] = None,
    profile: Annotated[ProfileName, typer.Option("--profile", "-p", help="Budget of the run.")] = ProfileName.quick,
    seeds: Annotated[
        int | None, typer.Option("--seeds", min=1, max=10_000, help="Override each profile's seed count.")
    ] = None,
    executor: Annotated[ExecutorName, typer.Option("--executor", "-e", help="Where cells run.")] = ExecutorName.serial,
    workers: Annotated[int | None, typer.Option("--workers", "-w", min=1, max=4096, help="Parallel workers.")] = None,
    out_arg: Annotated[str, typer.Option("--out", "-o", help="Output folder for cards and report.")] = "results",
    force: Annotated[bool, typer.Option("--force", help="Recompute finished cells.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON document on stdout.")] = False,
) -> None:
    """Run the claims of the given papers (all by default) and write cards, plots and the report."""
    from icml26._core.runner import RunError, check_writable, run
    from icml26.registry import PAPERS, load_card

    if not out_arg.strip():
        _fail("--out must not be empty")
    out = Path(out_arg)
    try:
        check_writable(out)
    except RunError as exc:
        _fail(str(exc))
    broken: list[str] = []
    if slugs:
        cards = [_card_or_fail(s) for s in dict.fromkeys(slugs)]
    else:  # the whole sweep: a paper that cannot load is reported and skipped, the others still run
        cards = []
        for e in PAPERS:
            try:
                cards.append(load_card(e.slug))
            except Exception as exc:
                broken.append(e.slug)
                _err(f"{e.slug}: cannot load its CARD ({type(exc).__name__}: {exc}); skipped")
        if broken and not cards:
            raise typer.Exit(1)

    planned = [c.slug for c in cards if c.status != "implemented"]
    if slugs:
        for slug in planned:
            _err(f"{slug}: planned, not implemented yet (skipped)")
    elif planned:
        _err(f"skipping {len(planned)} planned paper(s), not implemented yet: {', '.join(planned)}")
    if not any(c.status == "implemented" for c in cards):
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
                progress_ctx.console.print(f"[red]cell failed[/] {desc}: {rec['error']['message']}")

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
        }
        print(json.dumps(doc, indent=2))
    else:
        for c in result.cards:
            _err(f"{c['paper']['slug']} {c['claim']['id']} [{c['profile']}]: {c['verdict']} — {c['summary']}")
        _err(
            f"{len(result.cards)} card(s), {result.computed} cell(s) computed, {result.cached} cached, "
            f"{result.failed} failed in {elapsed:.1f}s; report: {out / 'report.html'}"
        )
    if result.failed or broken:
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


@app.command()
def doctor() -> None:
    """Versions, which extras are installed, thread settings, and whether the offline model cache is warm."""
    from icml26._core.paths import MODEL_CACHES, cache_dir
    from icml26._core.provenance import git_revision, package_version, thread_settings

    lines = [f"icml26 {__version__}  python {sys.version.split()[0]}  ({sys.executable})"]
    git = git_revision()
    if git:
        lines.append(f"git {git['sha'][:12]}{' (uncommitted changes)' if git['dirty'] else ''}")
    for name in ("numpy", "scipy", "torch", "matplotlib", "ray", "joblib", "typer", "jsonschema"):
        lines.append(f"  {name:<11} {package_version(name) or 'not installed'}")
    lines.append("extras:")
    for extra, reqs in sorted(_extras().items()):
        missing = [r for r, _, ok in reqs if not ok]
        state = "ok" if not missing else f"missing {', '.join(missing)}"
        lines.append(f"  [{extra}] {state}")
    threads = thread_settings()
    lines.append("threads: " + ", ".join(f"{k}={v}" for k, v in threads.items() if v is not None))
    cache = cache_dir()
    for model, folder in MODEL_CACHES.items():
        warm = (cache / folder).is_dir() and any((cache / folder).glob("*.safetensors"))
        lines.append(f"model cache {model}: {'warm' if warm else 'cold'} ({cache / folder})")
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


def main(argv: list[str] | None = None) -> None:
    """Console entry point: usage errors are one line on stderr with exit code 2; a crash is exit code 1."""
    args = sys.argv[1:] if argv is None else argv
    try:
        result = app(args=args, prog_name="icml26", standalone_mode=False)
        code = result if isinstance(result, int) else 0
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
