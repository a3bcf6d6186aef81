"""The report: ``report.html`` (self-contained) and ``REPORT.md``, rendered from the cards in a folder.

Rendering reads only the cards, their plots and (when present) ``benchmarks/results.json``, so
``icml26 report DIR`` re-renders without re-running, into ``DIR`` or another folder (``--out``). Every paper of the
registry appears, implemented ones first.

Which numbers lead: the report leads with one profile of the folder, the run just made (the profile asked for, or
the profile of the newest card), and shows beside it the *reference*: the committed full-profile cards (the
``results/`` folder of the source checkout, or the full cards of the folder itself), saying which is which.

Safety: everything that comes from a card is data. The HTML template is autoescaped, the Markdown template escapes
every value through :mod:`icml26._core.markdown`, a plot is embedded only if it resolves inside its card's folder
and is a real PNG, and the page forbids scripts (Content-Security-Policy). A card that cannot be shown is shown as
``invalid: <reason>`` and the report goes on.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from icml26._core import fmt
from icml26._core.io import atomic_write_text
from icml26._core.markdown import Md, anchor, finalize
from icml26._core.markdown import code as md_code
from icml26._core.markdown import image as md_image
from icml26._core.markdown import link as md_link
from icml26._core.readme import (
    README_END,
    README_START,
    render_paper_page,
    render_readme_table,
    update_readme,
    write_paper_pages,
)
from icml26._core.views import CardSet, load_cards, paper_rows, plot_data_uri, plot_file

__all__ = [
    "README_END",
    "README_START",
    "CardSet",
    "committed_results",
    "default_bench",
    "load_bench",
    "load_cards",
    "newest_profile",
    "render_html",
    "render_markdown",
    "render_paper_page",
    "render_readme_table",
    "update_readme",
    "write_paper_pages",
    "write_report",
]

log = logging.getLogger(__name__)


def _source_root() -> Path | None:
    import icml26

    root = Path(icml26.__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() else None


def committed_results() -> Path | None:
    """The ``results/`` folder of the source checkout this package runs from (None for an installed wheel)."""
    root = _source_root()
    return root / "results" if root and (root / "results").is_dir() else None


def default_bench() -> Path | None:
    """``benchmarks/results.json`` of the source checkout, when it exists."""
    root = _source_root()
    path = root / "benchmarks" / "results.json" if root else None
    return path if path and path.is_file() else None


def newest_profile(cards: CardSet) -> str | None:
    """The profile of the most recently created card (the run just made)."""
    dated = [(str(c["provenance"].get("created") or ""), c["profile"]) for c in cards.cards]
    return max(dated)[1] if dated else None


# ------------------------------------------------------------------------------------------- benchmarks
def _meta_text(value: Any) -> str:
    if value is None:
        return "not recorded"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {v}" for k, v in value.items())
    return str(value)


def _positive(row: Mapping[str, Any], key: str) -> float:
    v = row[key]
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v <= 0:
        raise ValueError(f"{key} must be a positive finite number, got {v!r}")
    return float(v)


def _bench_row(row: Any) -> dict[str, Any]:
    if not isinstance(row, Mapping):
        raise ValueError(f"a row must be an object, got {type(row).__name__}")
    ours, anchor = _positive(row, "ours"), _positive(row, "anchor")
    better = row.get("better", "lower")
    if better not in ("lower", "higher"):
        raise ValueError(f"better must be 'lower' or 'higher', got {better!r}")
    unit = str(row.get("unit", ""))
    ratio = anchor / ours if better == "lower" else ours / anchor  # > 1: ours is better (BenchRow.ratio)
    threads = row.get("threads")
    return {
        "paper": str(row["paper"]),
        "workload": str(row["workload"]),
        "ours": fmt.quantity(ours, unit),
        "ours_name": str(row.get("ours_name", "icml26")),
        "anchor": fmt.quantity(anchor, unit),
        "anchor_name": str(row["anchor_name"]),
        "ratio": f"{fmt.num(ratio, 3)}×",
        "who": "ours better" if ratio > 1 else "anchor better" if ratio < 1 else "equal",
        "better": f"{better} is better",
        "threads": str(threads) if isinstance(threads, int) and not isinstance(threads, bool) else "",
        "notes": str(row.get("notes") or ""),
    }


def load_bench(path: str | Path | None) -> dict[str, Any] | None:
    """The rows of ``benchmarks/results.json`` formatted for the report; None when there is no such file.

    The file is ``{"machine": ..., "commit": ..., "rows": [BenchRow.as_dict(), ...]}``; a row that cannot be shown
    is listed as invalid, an unreadable file is reported as such, and neither stops the report.
    """
    if path is None or not Path(path).is_file():
        return None
    view: dict[str, Any] = {"path": str(path), "rows": [], "invalid": [], "error": None}
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"), parse_constant=_reject)
        if not isinstance(doc, Mapping) or not isinstance(doc.get("rows", []), list):
            raise ValueError('expected {"machine": ..., "commit": ..., "rows": [...]}')
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        view["error"] = f"cannot read {path}: {exc}"
        return view
    view["machine"] = _meta_text(doc.get("machine"))
    view["commit"] = _meta_text(doc.get("commit"))
    view["created"] = _meta_text(doc.get("created") or doc.get("date"))
    for i, row in enumerate(doc.get("rows", [])):
        try:
            view["rows"].append(_bench_row(row))
        except (KeyError, TypeError, ValueError) as exc:
            view["invalid"].append(f"row {i}: invalid: {type(exc).__name__}: {exc}")
    view["rows"].sort(key=lambda r: (r["paper"], r["workload"]))
    return view


def _reject(name: str) -> Any:
    raise ValueError(f"not a finite number: {name}")


# ------------------------------------------------------------------------------------------- context
def _relative(target: Path, start: Path) -> str:
    return Path(os.path.relpath(target.resolve(), start.resolve())).as_posix()


def _attach_files(view: dict[str, Any] | None, root: Path, out: Path) -> None:
    """Where the card and its plot are, relative to the report's folder (links), and the plot file itself."""
    if view is None or not view["ok"]:
        return
    card = view["card"]
    view["card_href"] = _relative(root / view["path"], out)
    plot = plot_file(root, card)
    view["plot_href"] = _relative(plot, out) if plot else None
    view["root"] = root


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def _context(
    cards: CardSet,
    *,
    profile: str | None = None,
    reference: CardSet | None = None,
    bench: dict[str, Any] | None = None,
    out: Path | None = None,
) -> dict[str, Any]:
    """What the templates show. ``profile``: the profile to lead with (default: that of the newest card);
    ``reference``: cards whose full profile is shown beside it (default: the full cards of ``cards``); ``bench``:
    :func:`load_bench`'s view of the benchmark results; ``out``: the report's folder (links are relative to it)."""
    from icml26 import __version__
    from icml26._core.provenance import git_revision

    lead_profile = profile or newest_profile(cards) or "full"
    chosen = "as asked" if profile else ("the newest cards" if cards.cards else "no cards")
    lead = cards.at(lead_profile)
    ref_source = reference if reference is not None else cards
    ref_root = ref_source.root
    ref: CardSet | None = ref_source.at("full")
    same_folder = _same(ref_root, cards.root)
    if lead_profile == "full" and same_folder:
        ref = None  # the lead cards are the reference
    elif ref is not None and not ref.cards and not ref.invalid:
        ref = None  # nothing to compare with
    shown = {lead_profile, "full"} if same_folder else {lead_profile}
    others = CardSet(cards.root, [c for c in cards.cards if c["profile"] not in shown])
    out = out or cards.root
    rows = paper_rows(lead, ref, others=others)
    for row in rows:
        for claim in row["claims"]:
            _attach_files(claim["lead"], cards.root, out)
            _attach_files(claim["reference"], ref_root, out)

    lead_views = [c["lead"] for r in rows for c in r["claims"] if c["lead"] and c["lead"]["ok"]]
    machines = Counter(v["machine"] for v in lead_views)
    commits = sorted({v["commit"] for v in lead_views if v["commit"]})
    created = sorted(v["created"] for v in lead_views if v["created"])
    git = git_revision()
    invalid = [(cards.root, i) for i in cards.invalid]
    if reference is not None and not _same(reference.root, cards.root):
        invalid += [(reference.root, i) for i in reference.invalid]
    implemented = [r for r in rows if r["status"] == "implemented"]
    return {
        "papers": rows,
        "n_papers": len(rows),
        "n_implemented": len(implemented),
        "n_cards": len(lead.cards),
        "nothing_implemented": not implemented,
        "no_cards": not cards.cards and not cards.invalid,
        "profile": lead_profile,
        "chosen": chosen,
        "has_reference": ref is not None,
        "reference_missing": ref is None and not (lead_profile == "full" and same_folder),
        "meta": {
            "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "code": (git["sha"][:12] + (" (uncommitted changes)" if git["dirty"] else "")) if git else "",
            "version": __version__,
            "folder": str(cards.root),
            "reference": str(ref_root),
            "card_commits": ", ".join(commits) or "not recorded",
            "machines": "; ".join(f"{m} ({fmt.count(n, 'card')})" for m, n in machines.most_common()) or "none",
            "created": (created[0] if created[0] == created[-1] else f"{created[0]} to {created[-1]}")
            if created
            else "",
        },
        "invalid": [{"folder": str(root), "path": i.path, "reason": i.reason} for root, i in invalid],
        "bench": bench,
    }


# ------------------------------------------------------------------------------------------- rendering
def _html_env() -> Any:
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(
        loader=PackageLoader("icml26._core", "templates"),
        autoescape=True,  # every template of this environment is HTML, whatever its file name
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["url"] = lambda path: quote(str(path), safe="/#._-~")  # a relative path we built
    return env


def _md_env() -> Any:
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(
        loader=PackageLoader("icml26._core", "templates"),
        autoescape=False,
        finalize=finalize,  # the Markdown counterpart of autoescape: every value is escaped unless built as Md
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["md"] = Md  # a macro's output: its values were escaped inside the macro
    env.globals.update(md_link=md_link, md_image=md_image, md_anchor=anchor, md_code=md_code, Md=Md)
    return env


def render_html(cards: CardSet, **options: Any) -> str:
    """The self-contained HTML report; ``options`` are those of :func:`_context` (profile, reference, bench, out)."""
    ctx = _context(cards, **options)
    ctx["plot"] = lambda view: plot_data_uri(view["root"], view["card"]) if view and view.get("ok") else None
    return str(_html_env().get_template("report.html.j2").render(**ctx))


def render_markdown(cards: CardSet, **options: Any) -> str:
    """``REPORT.md``; ``options`` as for :func:`render_html`."""
    return str(_md_env().get_template("report.md.j2").render(**_context(cards, **options)))


def write_report(
    root: str | Path,
    *,
    out: str | Path | None = None,
    profile: str | None = None,
    reference: str | Path | None = None,
    bench: str | Path | None = None,
) -> tuple[Path, Path]:
    """Render ``report.html`` and ``REPORT.md`` into ``out`` (default ``root``) from the cards found in ``root``.

    ``profile`` is the profile to lead with (default: that of the newest card); ``reference`` a folder whose
    full-profile cards are shown beside it (default: the full cards of ``root``); ``bench`` a
    ``benchmarks/results.json`` for the Performance section (none by default).
    """
    root = Path(root)
    out_dir = Path(out) if out is not None else root
    cards = load_cards(root)
    ref = None if reference is None or _same(Path(reference), root) else load_cards(reference)
    for bad in cards.invalid + (ref.invalid if ref else []):
        log.warning("invalid card %s: %s", bad.path, bad.reason)
    bench_view = load_bench(bench)
    options = {"profile": profile, "reference": ref, "bench": bench_view, "out": out_dir}
    html = atomic_write_text(out_dir / "report.html", render_html(cards, **options))
    md = atomic_write_text(out_dir / "REPORT.md", render_markdown(cards, **options))
    return html, md
