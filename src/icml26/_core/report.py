"""The report: ``report.html`` (self-contained) and ``REPORT.md``, rendered from the cards in a folder.

Rendering reads only the cards and their plots, so ``icml26 report DIR`` re-renders without re-running. Every
paper of the registry appears: implemented papers with their claims (the paper's figure beside ours, the
verdict, the plot), planned ones as such. When a claim has cards at several profiles, the report leads with the
profile of record (full, then quick, then smoke) and lists the others.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icml26._core.cards import CardError, validate_card
from icml26._core.claims import PROFILES
from icml26._core.io import atomic_write_text, read_json
from icml26._core.verdict import combine

__all__ = [
    "README_END",
    "README_START",
    "CardSet",
    "load_cards",
    "render_html",
    "render_markdown",
    "render_readme_table",
    "update_readme",
    "write_report",
]

log = logging.getLogger(__name__)
_RANK = {p: i for i, p in enumerate(reversed(PROFILES))}  # full=0, quick=1, smoke=2


@dataclass
class CardSet:
    """The cards found under a folder, grouped by paper and claim, plus the files that were not valid cards."""

    root: Path
    cards: list[dict[str, Any]] = field(default_factory=list)
    invalid: list[tuple[str, str]] = field(default_factory=list)

    def by_claim(self, slug: str) -> dict[str, list[dict[str, Any]]]:
        """{claim id: [cards, profile of record first]} for one paper."""
        grouped: dict[str, list[dict[str, Any]]] = {}
        for card in self.cards:
            if card["paper"]["slug"] == slug:
                grouped.setdefault(card["claim"]["id"], []).append(card)
        for cards in grouped.values():
            cards.sort(key=lambda c: _RANK[c["profile"]])
        return dict(sorted(grouped.items()))


def load_cards(root: str | Path, profiles: Sequence[str] = PROFILES) -> CardSet:
    """Every ``<slug>/<claim>-<profile>.json`` under ``root`` that validates (invalid ones are reported)."""
    found = CardSet(Path(root))
    for path in sorted(Path(root).glob("*/*.json")):
        if path.parent.name.startswith("."):
            continue
        try:
            card = read_json(path)
            validate_card(card)
        except (OSError, ValueError, CardError) as exc:
            found.invalid.append((str(path.relative_to(root)), str(exc).splitlines()[0]))
            continue
        card["_path"] = str(path.relative_to(root))
        if card["profile"] in profiles:
            found.cards.append(card)
    return found


def _papers(cards: CardSet) -> list[dict[str, Any]]:
    """One row per registered paper, then one per paper found only in the cards (a user's own CARD)."""
    from icml26._core.claims import PaperCard
    from icml26.registry import PAPERS, planned_card

    papers = [planned_card(e) for e in PAPERS]
    known = {p.slug for p in papers}
    implemented = {c["paper"]["slug"] for c in cards.cards}
    for card in cards.cards:
        if card["paper"]["slug"] not in known:
            known.add(card["paper"]["slug"])
            papers.append(PaperCard(**card["paper"], status="planned"))
    rows = []
    for paper in papers:
        claims = cards.by_claim(paper.slug)
        verdicts = [cs[0]["verdict"] for cs in claims.values()]
        status = "implemented" if paper.slug in implemented or _has_room(paper.slug) else "planned"
        rows.append(
            {
                "card": paper,
                "status": status,
                "claims": claims,
                "verdict": _paper_verdict(verdicts) if verdicts else None,
                "verdict_class": combine(verdicts) if verdicts else "none",
            }
        )
    return rows


def _has_room(slug: str) -> bool:
    from icml26.registry import RegistryError, is_implemented

    try:
        return is_implemented(slug)
    except RegistryError:
        return False


def _paper_verdict(verdicts: Sequence[str]) -> str:
    """A paper's line in the table: 'reproduced' if all its claims are, else the counts."""
    if all(v == "reproduced" for v in verdicts):
        return "reproduced"
    counts = {v: verdicts.count(v) for v in ("reproduced", "not_reproduced", "inconclusive") if v in verdicts}
    return ", ".join(f"{n} {v.replace('_', ' ')}" for v, n in counts.items())


def _plot_data_uri(root: Path, card: Mapping[str, Any]) -> str | None:
    name = card["artifacts"].get("plot")
    if not name:
        return None
    path = root / Path(card["_path"]).parent / name
    try:
        return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode()
    except OSError:
        return None


def _env() -> Any:
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

    env = Environment(
        loader=PackageLoader("icml26._core", "templates"),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["verdict_text"] = lambda v: (v or "not run").replace("_", " ")
    return env


def _context(cards: CardSet) -> dict[str, Any]:
    papers = _papers(cards)
    implemented = [p for p in papers if p["status"] == "implemented"]
    return {
        "papers": papers,
        "n_papers": len(papers),
        "n_implemented": len(implemented),
        "n_cards": len(cards.cards),
        "invalid": cards.invalid,
        "nothing_implemented": not implemented,
    }


def render_html(cards: CardSet) -> str:
    ctx = _context(cards)
    ctx["plot"] = lambda card: _plot_data_uri(cards.root, card)
    return str(_env().get_template("report.html.j2").render(**ctx))


def render_markdown(cards: CardSet) -> str:
    return str(_env().get_template("report.md.j2").render(**_context(cards)))


def write_report(root: str | Path) -> tuple[Path, Path]:
    """Render ``report.html`` and ``REPORT.md`` into ``root`` from the cards found there."""
    root = Path(root)
    cards = load_cards(root)
    for path, why in cards.invalid:
        log.warning("skipped %s: %s", path, why)
    html = atomic_write_text(root / "report.html", render_html(cards))
    md = atomic_write_text(root / "REPORT.md", render_markdown(cards))
    return html, md


README_START = "<!-- papers:start (generated by `icml26 report results --readme README.md`; do not edit) -->"
README_END = "<!-- papers:end -->"


def _cell(text: str | None) -> str:
    return (text or "").replace("|", "\\|").replace("\n", " ")


def render_readme_table(cards: CardSet, link_prefix: str = "results/") -> str:
    """The README's paper table, from the registry and the *full*-profile cards (the profile of record)."""
    rows = [
        "| group | method | API | status | verdict | paper's figure | ours | card |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in _papers(CardSet(cards.root, [c for c in cards.cards if c["profile"] == "full"], [])):
        card, claims, status = p["card"], p["claims"], p["status"]
        per_claim = [(cid, cs[0]) for cid, cs in claims.items()]
        verdicts = "<br>".join(f"{cid}: {c['verdict'].replace('_', ' ')}" for cid, c in per_claim) or (
            "not run" if status == "implemented" else "—"
        )
        figures = "<br>".join(f"{cid}: {_cell(c['paper_figure']) or '—'}" for cid, c in per_claim) or "—"
        ours = "<br>".join(f"{cid}: {_cell(c['summary'])}" for cid, c in per_claim) or "—"
        links = " ".join(f"[{cid}]({link_prefix}{c['_path']})" for cid, c in per_claim) or "—"
        cells = [card.group, _cell(card.title), f"`{card.api}`", status, verdicts, figures, ours, links]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def update_readme(readme: str | Path, cards: CardSet) -> bool:
    """Rewrite the table between the markers of ``readme``; returns whether the file changed."""
    path = Path(readme)
    text = path.read_text(encoding="utf-8")
    if README_START not in text or README_END not in text:
        raise ValueError(f"{path} lacks the table markers {README_START!r} ... {README_END!r}")
    head, rest = text.split(README_START, 1)
    _, tail = rest.split(README_END, 1)
    new = f"{head}{README_START}\n{render_readme_table(cards)}\n{README_END}{tail}"
    if new != text:
        atomic_write_text(path, new)
    return new != text
