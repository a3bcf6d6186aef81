"""What the report, the README table and the per-paper pages show, computed once from the cards.

Cards are read defensively: a file that is not valid JSON, holds NaN, fails :data:`~icml26._core.cards.CARD_SCHEMA`,
or lies at a path that disagrees with what it says, is an :class:`InvalidCard` and is shown as
``invalid: <reason>`` in its paper's section; it never stops the rendering of the others. Formatting a valid card
is guarded the same way. Plots are embedded or linked only when they resolve inside their card's folder and are
real PNG files.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from icml26._core import fmt
from icml26._core.cards import CardError, validate_card
from icml26._core.claims import PROFILES

__all__ = [
    "PNG_SIGNATURE",
    "CardSet",
    "InvalidCard",
    "artifact_file",
    "card_view",
    "claim_key",
    "load_cards",
    "machine",
    "paper_rows",
    "plot_file",
    "tally",
]

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MAX_PLOT_BYTES = 20 * 2**20
MAX_REASON = 300
_LOCATION = re.compile(r"^(?P<claim>[A-Za-z][A-Za-z0-9_]*)-(?P<profile>[a-z]+)\.json$")
_RANK = {p: i for i, p in enumerate(reversed(PROFILES))}  # full=0, quick=1, smoke=2
VERDICT_TEXT = {"reproduced": "reproduced", "not_reproduced": "not reproduced", "inconclusive": "inconclusive"}


class InvalidCard(NamedTuple):
    """A file that looked like a card but cannot be shown: where it is, why, and whose claim it seems to be."""

    path: str
    reason: str
    slug: str | None = None
    claim: str | None = None
    profile: str | None = None


@dataclass
class CardSet:
    """The cards found under a folder, plus the files that were not valid cards."""

    root: Path
    cards: list[dict[str, Any]] = field(default_factory=list)
    invalid: list[InvalidCard] = field(default_factory=list)

    def by_claim(self, slug: str) -> dict[str, list[dict[str, Any]]]:
        """{claim id: [cards, profile of record first]} for one paper."""
        grouped: dict[str, list[dict[str, Any]]] = {}
        for card in self.cards:
            if card["paper"]["slug"] == slug:
                grouped.setdefault(card["claim"]["id"], []).append(card)
        for cards in grouped.values():
            cards.sort(key=lambda c: _RANK[c["profile"]])
        return dict(sorted(grouped.items(), key=lambda kv: claim_key(kv[0])))

    def at(self, profile: str) -> CardSet:
        """Only the cards (and invalid files) of one profile."""
        return CardSet(
            self.root,
            [c for c in self.cards if c["profile"] == profile],
            [i for i in self.invalid if i.profile in (profile, None)],
        )


def claim_key(claim_id: str) -> tuple[Any, ...]:
    """Natural order of claim ids: C1, C1b, C2, C10."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", claim_id))


def _reject_constant(name: str) -> Any:
    raise ValueError(f"not a finite number: {name} (JSON has no NaN or infinity)")


def _shorten(text: str, limit: int = MAX_REASON) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def load_cards(root: str | Path, profiles: Sequence[str] = PROFILES) -> CardSet:
    """Every ``<slug>/<claim>-<profile>.json`` under ``root``: valid cards, and the files that are not."""
    found = CardSet(Path(root))
    for path in sorted(Path(root).glob("*/*.json")):
        if path.parent.name.startswith(".") or path.name.startswith("."):
            continue
        rel = path.relative_to(root).as_posix()
        where = _LOCATION.match(path.name)
        slug, claim, profile = path.parent.name, where and where["claim"], where and where["profile"]
        if profile in PROFILES and profile not in profiles:
            continue
        try:
            card = json.loads(path.read_text(encoding="utf-8"), parse_constant=_reject_constant)
            validate_card(card)
            said = f"{card['paper']['slug']}/{card['claim']['id']}-{card['profile']}.json"
            if said != rel:
                raise CardError(f"the card says it is {said} but lies at {rel}")
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
            reason = _shorten(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            found.invalid.append(InvalidCard(rel, reason, slug, claim, profile))
            continue
        if card["profile"] not in profiles:
            continue
        card["_path"] = rel
        found.cards.append(card)
    return found


def artifact_file(root: Path, card: Mapping[str, Any], key: str) -> Path | None:
    """The card's artifact ``key`` if it is a regular file that resolves inside the card's folder (links
    followed); else None."""
    name = (card.get("artifacts") or {}).get(key)
    if not isinstance(name, str) or not name or "\x00" in name:
        return None
    folder = (Path(root) / str(card["_path"])).parent
    try:
        base = folder.resolve(strict=True)
        path = (folder / name).resolve(strict=True)
        if path == base or not path.is_relative_to(base) or not path.is_file():
            return None
    except (OSError, RuntimeError, ValueError):
        return None
    return path


def plot_file(root: Path, card: Mapping[str, Any]) -> Path | None:
    """The card's plot if it resolves inside the card's folder (links followed) and is a real PNG; else None."""
    path = artifact_file(root, card, "plot")
    if path is None:
        return None
    try:
        if path.stat().st_size > MAX_PLOT_BYTES:
            return None
        with path.open("rb") as fh:
            if fh.read(len(PNG_SIGNATURE)) != PNG_SIGNATURE:
                return None
    except OSError:
        return None
    return path


def plot_data_uri(root: Path, card: Mapping[str, Any]) -> str | None:
    path = plot_file(root, card)
    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if not data.startswith(PNG_SIGNATURE) or len(data) > MAX_PLOT_BYTES:
        return None
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def machine(provenance: Mapping[str, Any]) -> str:
    """Where a card ran, in one line: platform, CPU (when recorded), cores, Python and torch."""
    parts = []
    if isinstance(provenance.get("platform"), str):
        parts.append(provenance["platform"])
    for key in ("cpu", "cpu_isa", "isa"):
        if isinstance(provenance.get(key), str):
            parts.append(provenance[key])
    threads = provenance.get("threads")
    if isinstance(threads, Mapping) and isinstance(threads.get("cpu_count"), int):
        parts.append(fmt.count(threads["cpu_count"], "CPU"))
    if isinstance(provenance.get("python"), str):
        parts.append(f"Python {provenance['python']}")
    if isinstance(provenance.get("torch"), str):
        parts.append(f"torch {provenance['torch']}")
    return ", ".join(parts) or "unknown machine"


def commit(provenance: Mapping[str, Any]) -> str | None:
    git = provenance.get("git")
    if isinstance(git, Mapping) and isinstance(git.get("sha"), str):
        return str(git["sha"][:12]) + (" (uncommitted changes)" if git.get("dirty") else "")
    return None


def _comparison_view(claim: Mapping[str, Any], c: Mapping[str, Any]) -> dict[str, Any]:
    against = f"reference {fmt.quantity(claim['reference'], claim.get('unit') or '')}"
    return {
        "against": against if claim.get("reference") is not None else str(c["baseline"]),
        "n": int(c["n"]),
        "effect": fmt.effect_text(claim, c),
        "ci": fmt.ci_text(claim, c),
        "record": f"{int(c['wins'])}/{int(c['losses'])}/{int(c['ties'])}",
        "sign_p": fmt.sign_p_text(claim, c),
        "verdict": c["verdict"],
        "verdict_text": VERDICT_TEXT[c["verdict"]],
        "why": fmt.judgement(claim, c),
    }


def claim_facts(claim: Mapping[str, Any]) -> dict[str, Any]:
    """What a claim states and how it is tested: the same at every profile."""
    against = (
        ", ".join(str(b) for b in claim["baselines"])
        if claim["baselines"]
        else f"reference {fmt.quantity(claim['reference'], claim.get('unit') or '')}"
    )
    return {
        "statement": str(claim["statement"]),
        "metric": f"{claim['metric']} ({fmt.direction_text(claim)})",
        "test": f"{claim['test']}: {claim['method']} {fmt.margin_text(claim)}, against {against}",
        "paper_figure": claim.get("paper_figure") or "",
        "notes": claim.get("notes") or "",
    }


def card_view(card: Mapping[str, Any]) -> dict[str, Any]:
    """Everything shown of one valid card, formatted; raises on a card the schema let through but that cannot be
    shown (the caller turns that into ``invalid: <reason>``)."""
    claim, comps = card["claim"], list(card["comparisons"])
    prov = card["provenance"]
    return {
        "ok": True,
        "path": str(card["_path"]),
        "slug": str(card["paper"]["slug"]),
        "id": str(claim["id"]),
        "profile": str(card["profile"]),
        "verdict": card["verdict"],
        "verdict_text": VERDICT_TEXT[card["verdict"]],
        "status": str(card["status"]),
        "problems": "" if card["status"] == "ok" else str(card["verdict_reason"]),
        "summary": fmt.summary(claim, comps),
        "comparisons": [_comparison_view(claim, c) for c in comps],
        "facts": claim_facts(claim),
        "size": f"{fmt.count(len(card['cells']), 'cell')}, {fmt.count(len(card['seeds']), 'seed')}",
        "runtime": f"{fmt.num(float(card['runtime_s']), 3)} s",
        "commit": commit(prov),
        "machine": machine(prov),
        "created": prov.get("created") if isinstance(prov.get("created"), str) else None,
        "config_hash": str(card["config_hash"]),
        "config": json.dumps(card["config"], indent=2, sort_keys=True),
        "provenance": json.dumps(prov, indent=2, sort_keys=True),
        "card": card,
    }


def safe_view(card: Mapping[str, Any]) -> dict[str, Any]:
    try:
        return card_view(card)
    except Exception as exc:  # a card that cannot be shown is shown as invalid; the report goes on
        return invalid_view(str(card.get("_path", "?")), f"{type(exc).__name__}: {exc}")


def invalid_view(path: str, reason: str) -> dict[str, Any]:
    return {"ok": False, "path": path, "invalid": f"invalid: {_shorten(reason)}"}


def tally(claims: Iterable[tuple[str, str, Mapping[str, Any] | None]]) -> dict[str, Any] | None:
    """``k of n claims reproduced``, the others (id, anchor, verdict), a colour class and a meter.

    ``claims`` yields (claim id, anchor, view or None); claims without a view at this profile are not counted.
    """
    rows = [(cid, anchor, view) for cid, anchor, view in claims if view is not None]
    if not rows:
        return None
    verdicts = [view["verdict"] if view["ok"] else "invalid" for _, _, view in rows]
    n, k = len(rows), verdicts.count("reproduced")
    others = [
        {"id": cid, "anchor": anchor, "verdict": v, "verdict_text": VERDICT_TEXT.get(v, "invalid")}
        for (cid, anchor, _), v in zip(rows, verdicts, strict=True)
        if v != "reproduced"
    ]
    level = "all" if k == n else "most" if 3 * k >= 2 * n else "some" if k else "none"
    meter = [
        {"verdict": v, "width": round(100.0 * verdicts.count(v) / n, 1), "n": verdicts.count(v)}
        for v in ("reproduced", "inconclusive", "not_reproduced", "invalid")
        if v in verdicts
    ]
    counts = {v: verdicts.count(v) for v in ("not_reproduced", "inconclusive", "invalid") if v in verdicts}
    return {
        "k": k,
        "n": n,
        "text": f"{k} of {fmt.count(n, 'claim')} reproduced",
        "level": level,
        "others": others,
        "counts": counts,
        "meter": meter,
    }


def paper_rows(
    lead: CardSet, reference: CardSet | None = None, *, others: CardSet | None = None
) -> list[dict[str, Any]]:
    """One row per paper: the registry's papers, then papers found only in the cards; implemented ones first.

    ``lead`` holds the cards the report leads with (one profile), ``reference`` the committed full-profile cards
    shown beside them, ``others`` cards of other profiles in the lead folder (listed as "also run at").
    """
    from icml26.registry import PAPERS, RegistryError, is_implemented

    papers: list[dict[str, Any]] = [
        {"slug": e.slug, "title": e.title, "group": e.group, "api": e.api, "extra": e.extra} for e in PAPERS
    ]
    known = {p["slug"] for p in papers}
    for card in [*lead.cards, *(reference.cards if reference else [])]:
        slug = card["paper"]["slug"]
        if slug not in known:
            known.add(slug)
            papers.append({k: str(card["paper"][k]) for k in ("slug", "title", "group", "api", "extra")})

    def views(cards: CardSet | None, slug: str) -> dict[str, dict[str, Any]]:
        if cards is None:
            return {}
        found = {c["claim"]["id"]: safe_view(c) for c in cards.cards if c["paper"]["slug"] == slug}
        for bad in cards.invalid:
            if bad.slug == slug and bad.claim and bad.claim not in found:
                found[bad.claim] = invalid_view(bad.path, bad.reason)
        return found

    rows = []
    for paper in papers:
        slug = paper["slug"]
        lead_views, ref_views = views(lead, slug), views(reference, slug)
        other_cards = [c for c in (others.cards if others else []) if c["paper"]["slug"] == slug]
        ids = sorted({*lead_views, *ref_views}, key=claim_key)
        claims: list[dict[str, Any]] = []
        for cid in ids:
            lv, rv = lead_views.get(cid), ref_views.get(cid)
            shown = next((v for v in (lv, rv) if v is not None and v["ok"]), None)
            claims.append(
                {
                    "id": cid,
                    "anchor": f"{slug}-{cid}",
                    "lead": lv,
                    "reference": rv,
                    "facts": shown["facts"] if shown else None,
                    "also": sorted(
                        (
                            {"profile": c["profile"], "verdict_text": VERDICT_TEXT[c["verdict"]]}
                            for c in other_cards
                            if c["claim"]["id"] == cid
                        ),
                        key=lambda o: _RANK[o["profile"]],
                    ),
                }
            )
        try:
            implemented = is_implemented(slug)  # a registered paper: its room decides
        except RegistryError:
            implemented = bool(claims)  # a paper known only from its cards (a user's own CARD)
        rows.append(
            {
                **paper,
                "status": "implemented" if implemented else "planned",
                "claims": claims,
                "lead": tally((c["id"], c["anchor"], c["lead"]) for c in claims),
                "reference": tally((c["id"], c["anchor"], c["reference"]) for c in claims),
            }
        )
    rows.sort(key=lambda r: r["status"] != "implemented")  # stable: registry order within each status
    return rows
