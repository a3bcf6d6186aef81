"""Result cards: the JSON record of one claim measured at one profile.

A card holds the claim as stated, the resolved config and its hash, every cell's per-method metrics, per-method
summaries (overall and per setting), the paired comparison against each baseline, the verdict computed by
:mod:`icml26._core.verdict`, the artifacts (plot, CSV), runtime and provenance. Cards are validated against
:data:`CARD_SCHEMA` when written and when read, so a report never renders a malformed card.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from icml26._core import fmt
from icml26._core.claims import GROUPS, PROFILES, Claim, PaperCard
from icml26._core.io import stable_hash, to_jsonable
from icml26._core.stats import compare
from icml26._core.verdict import VERDICTS, Verdict, combine, judge

__all__ = ["CARD_SCHEMA", "SCHEMA_VERSION", "CardError", "build_card", "card_fingerprint", "validate_card"]

SCHEMA_VERSION = 1


class CardError(ValueError):
    """A result card that does not satisfy the schema."""


_num = {"type": ["number", "null"]}  # null: no successful cell to compute it from (NaN is never a number here)
_count = {"type": "integer", "minimum": 0}
_text = {"type": "string"}
_stat = {
    "type": "object",
    "required": ["mean", "std", "n"],
    "properties": {"mean": _num, "std": _num, "n": _count},
}
_method_stats = {"type": "object", "additionalProperties": {"type": "object", "additionalProperties": _stat}}
_ID_PATTERN = "^[A-Za-z][A-Za-z0-9_]*$"
_FILE_NAME = "^[A-Za-z0-9_][A-Za-z0-9_.-]*$"  # an artifact is a file beside its card, never a path

# What the renderer reads from each comparison. With at least one pair, every statistic must be a number.
_COMPARISON_NUMBERS = ("effect", "ci_low", "ci_high", "sign_p", "method_mean", "baseline_mean")
_comparison = {
    "type": "object",
    "required": ["baseline", "metric", "n", *_COMPARISON_NUMBERS, "wins", "losses", "ties", "verdict", "reason"],
    "properties": {
        "baseline": _text,
        "metric": _text,
        "n": _count,
        **{k: _num for k in _COMPARISON_NUMBERS},
        "sign_p": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
        "wins": _count,
        "losses": _count,
        "ties": _count,
        "verdict": {"enum": list(VERDICTS)},
        "reason": _text,
        "ci_method": _text,
    },
    "if": {"properties": {"n": {"minimum": 1}}},
    "then": {"properties": {k: {"type": "number"} for k in _COMPARISON_NUMBERS}},
}

CARD_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "icml26 result card",
    "description": "One claim measured at one profile. Numbers are finite (NaN and infinities are rejected); "
    "null marks a statistic without any successful cell behind it.",
    "type": "object",
    "required": [
        "schema_version",
        "paper",
        "claim",
        "profile",
        "status",
        "config",
        "config_hash",
        "seeds",
        "cells",
        "metrics",
        "by_setting",
        "comparisons",
        "verdict",
        "verdict_reason",
        "summary",
        "paper_figure",
        "artifacts",
        "runtime_s",
        "provenance",
    ],
    "properties": {
        "schema_version": {"const": SCHEMA_VERSION},
        "paper": {
            "type": "object",
            "required": ["slug", "title", "group", "api", "extra"],
            "additionalProperties": False,
            "properties": {
                **{k: _text for k in ("title", "api", "extra")},
                "slug": {"type": "string", "pattern": "^[a-z][a-z0-9_]*$"},
                "group": {"enum": list(GROUPS)},
            },
        },
        "claim": {
            "type": "object",
            "required": [
                "id",
                "statement",
                "metric",
                "direction",
                "test",
                "method",
                "baselines",
                "min_effect",
            ],
            "properties": {
                "id": {"type": "string", "pattern": _ID_PATTERN},
                "statement": _text,
                "metric": _text,
                "method": _text,
                "direction": {"enum": ["higher", "lower"]},
                "test": {"enum": ["superiority", "noninferiority", "equivalence"]},
                "baselines": {"type": "array", "items": _text},
                "reference": {"type": ["number", "null"]},
                "min_effect": {"type": "number", "minimum": 0},
                "relative": {"type": "boolean"},
                "deterministic": {"type": "boolean"},
                "min_pairs": {"type": "integer", "minimum": 1},
                "unit": _text,
                "notes": _text,
                "paper_figure": {"type": ["string", "null"]},
                "revision": {"type": "integer"},
                "data": {"type": "array", "items": _text},
            },
        },
        "profile": {"enum": list(PROFILES)},
        "status": {"enum": ["ok", "partial", "error"]},
        "config": {"type": "object"},
        "config_hash": {"type": "string", "pattern": "^[0-9a-f]{16}$"},
        "seeds": {"type": "array", "items": {"type": "integer"}},
        "cells": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["key", "setting", "seed", "status"],
                "properties": {
                    "key": _text,
                    "setting": {"type": "object"},
                    "seed": {"type": "integer"},
                    "status": {"enum": ["ok", "error"]},
                    "metrics": {"type": "object", "additionalProperties": {"type": "object"}},
                    "error": {"type": ["string", "null"]},
                    "runtime_s": {"type": "number", "minimum": 0},
                },
            },
        },
        "metrics": _method_stats,
        "by_setting": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["setting", "metrics"],
                "properties": {"setting": {"type": "object"}, "metrics": _method_stats},
            },
        },
        "comparisons": {"type": "array", "items": _comparison},
        "verdict": {"enum": list(VERDICTS)},
        "verdict_reason": _text,
        "summary": _text,
        "paper_figure": {"type": ["string", "null"]},
        "artifacts": {
            "type": "object",
            "additionalProperties": {"type": "string", "pattern": _FILE_NAME},
        },
        "runtime_s": {"type": "number", "minimum": 0},
        "provenance": {"type": "object", "required": ["icml26", "python", "numpy"]},
    },
}


def _non_finite(obj: Any, where: str = "") -> str | None:
    """The path of the first NaN or infinity in ``obj`` (JSON has no such numbers; Python's parser accepts them)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return where or "(root)"
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            if (found := _non_finite(v, f"{where}/{k}" if where else str(k))) is not None:
                return found
    elif isinstance(obj, list | tuple):
        for i, v in enumerate(obj):
            if (found := _non_finite(v, f"{where}/{i}" if where else str(i))) is not None:
                return found
    return None


def validate_card(card: Mapping[str, Any]) -> None:
    """Raise :class:`CardError` (one line: where and what) if ``card`` does not satisfy :data:`CARD_SCHEMA` or
    holds a number that is not finite."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(CARD_SCHEMA)
    error = jsonschema.exceptions.best_match(validator.iter_errors(card))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        raise CardError(f"invalid result card at {where}: {error.message}")
    bad = _non_finite(card)
    if bad is not None:
        raise CardError(f"invalid result card at {bad}: not a finite number (NaN and infinities are rejected)")


_VOLATILE = ("runtime_s", "provenance")


def card_fingerprint(card: Mapping[str, Any]) -> str:
    """Hash of a card without what legitimately differs between identical runs (timings, provenance)."""
    stripped = {k: v for k, v in card.items() if k not in _VOLATILE}
    stripped["cells"] = [{k: v for k, v in c.items() if k != "runtime_s"} for c in card["cells"]]
    return stable_hash(stripped, length=64)


def _stats(values: Sequence[float]) -> dict[str, Any]:
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return {"mean": None, "std": None, "n": 0}
    return {"mean": float(x.mean()), "std": float(x.std(ddof=1)) if x.size > 1 else 0.0, "n": int(x.size)}


def _summarise(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """{method: {metric: {mean, std, n}}} over the given successful cells."""
    values: dict[str, dict[str, list[float]]] = {}
    for r in records:
        for method, metrics in r["metrics"].items():
            for metric, v in metrics.items():
                values.setdefault(method, {}).setdefault(metric, []).append(v)
    return {m: {k: _stats(v) for k, v in ms.items()} for m, ms in values.items()}


def build_card(
    paper: PaperCard,
    claim: Claim,
    profile: str,
    records: Sequence[Mapping[str, Any]],
    *,
    seeds: Sequence[int],
    runtime_s: float,
    provenance: Mapping[str, Any],
    artifacts: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Assemble (and validate) the card of ``claim`` from its cell records, in the plan's order."""
    ok = [r for r in records if r["status"] == "ok"]
    failed = [r for r in records if r["status"] != "ok"]
    prof = claim.profiles[profile]
    config = {
        "profile": profile,
        "settings": [dict(s) for s in prof.settings],
        "seeds": list(seeds),
        "claim": claim.describe(),
    }

    comparisons: list[dict[str, Any]] = []
    verdicts: list[Verdict] = []
    method_values = [r["metrics"][claim.method][claim.metric] for r in ok]
    targets: list[tuple[str, list[float]]] = (
        [(b, [r["metrics"][b][claim.metric] for r in ok]) for b in claim.baselines]
        if claim.baselines
        else [(f"reference {claim.reference:g}", [float(claim.reference or 0.0)] * len(ok))]
    )
    comparison_error = None
    for name, base_values in targets:
        boot_seed = int(stable_hash([paper.slug, claim.id, profile, name]), 16) % 2**32
        try:
            comp = compare(
                method_values,
                base_values,
                baseline_name=name,
                metric=claim.metric,
                direction=claim.direction,
                relative=claim.relative,
                seed=boot_seed,
            )
        except ValueError as exc:  # e.g. a relative effect against a zero baseline: say so in the card
            comparison_error = f"comparison with {name} failed: {exc}"
            continue
        verdict, reason = judge(
            comp,
            test=claim.test,
            min_effect=claim.min_effect,
            min_pairs=claim.min_pairs,
            deterministic=claim.deterministic,
        )
        verdicts.append(verdict)
        comparisons.append({**comp.to_dict(), "verdict": verdict, "reason": reason})

    verdict = combine(verdicts)
    reasons = [f"vs {c['baseline']}: {c['reason']}" for c in comparisons]
    if comparison_error:
        verdict = "inconclusive"
        reasons.insert(0, comparison_error)
    if failed:
        verdict = "inconclusive"
        first = failed[0].get("error") or {}
        reasons.insert(0, f"{len(failed)} of {len(records)} cells failed (first: {first.get('message', '?')})")
    status = "ok" if not failed else ("partial" if ok else "error")
    if comparison_error:
        status = "error"

    settings_keys = list(dict.fromkeys(_setting_key(r) for r in records))
    by_setting = []
    for key in settings_keys:
        rs = [r for r in ok if _setting_key(r) == key]
        setting = next(r["spec"]["setting"] for r in records if _setting_key(r) == key)
        by_setting.append({"setting": setting, "metrics": _summarise(rs)})

    metrics = _summarise(ok)
    # NaN (no successful pair) becomes null: the card says "no value", never a number that is not one
    comparisons = to_jsonable(comparisons)
    summary = fmt.summary(claim.describe(), comparisons) if comparisons and ok else "no successful cells"

    card: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "paper": {k: v for k, v in paper.describe().items() if k != "status"},
        "claim": claim.describe(),
        "profile": profile,
        "status": status,
        "config": config,
        "config_hash": stable_hash(config),
        "seeds": list(seeds),
        "cells": [_cell_entry(r) for r in records],
        "metrics": metrics,
        "by_setting": by_setting,
        "comparisons": comparisons,
        "verdict": verdict,
        "verdict_reason": "; ".join(reasons),
        "summary": summary,
        "paper_figure": claim.paper_figure,
        "artifacts": dict(artifacts or {}),
        "runtime_s": float(runtime_s),
        "provenance": dict(provenance),
    }
    card = to_jsonable(card)
    validate_card(card)
    return card


def _setting_key(record: Mapping[str, Any]) -> str:
    return stable_hash(record["spec"]["setting"])


def _cell_entry(r: Mapping[str, Any]) -> dict[str, Any]:
    error = r.get("error")
    return {
        "key": r["key"],
        "setting": r["spec"]["setting"],
        "seed": r["spec"]["seed"],
        "status": r["status"],
        "metrics": r.get("metrics") or {},
        "error": None if not error else f"{error['type']}: {error['message']}",
        "info": r.get("info") or {},
        "runtime_s": r.get("runtime_s", 0.0),
    }
