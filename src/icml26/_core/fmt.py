"""How numbers and comparisons read in cards, plots, the report and the README: one place, one style.

- numbers: 4 significant digits, all digits (with thousands separators) from 10,000 to 10^9, never ``-0``;
- a space between a number and its unit (``3 marks``), units also on reference values;
- relative effects as signed percentages labelled "relative to <baseline>"; absolute ones signed, with the unit;
- the better direction stated with the metric (``wrong_marks (lower is better)``);
- a deterministic claim decided by one exact run has no interval and no sign test: ``n/a (deterministic)``;
- counts agree with their noun (``1 cell``, ``2 cells``).

These functions read plain card dicts and raise ``KeyError``/``TypeError``/``ValueError`` on a malformed one;
the report catches that per card and shows the card as invalid.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "DETERMINISTIC",
    "ci_text",
    "count",
    "direction_text",
    "effect_text",
    "is_exact",
    "judgement",
    "margin_text",
    "num",
    "quantity",
    "sign_p_text",
    "summary",
    "versus",
]

DETERMINISTIC = "n/a (deterministic)"


def _finite(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def num(x: Any, digits: int = 4) -> str:
    """``x`` with ``digits`` significant digits ("n/a" when missing or not finite); never "-0"."""
    if not _finite(x):
        return "n/a"
    if x == 0:
        return "0"
    text = f"{x:,.0f}" if 1e4 <= abs(x) < 1e9 else f"{x:.{digits}g}"
    return text[1:] if text.startswith("-") and float(text.replace(",", "")) == 0 else text


def signed(x: Any, digits: int = 4) -> str:
    text = num(x, digits)
    return text if text in ("0", "n/a") or text.startswith("-") else f"+{text}"


def percent(x: Any, signed_: bool = True) -> str:
    """A fraction as a percentage (0.127 -> "+12.7%")."""
    if not _finite(x):
        return "n/a"
    text = num(100.0 * x, 3)
    if signed_ and text != "0" and not text.startswith("-"):
        text = f"+{text}"
    return f"{text}%"


def quantity(x: Any, unit: str = "") -> str:
    """A number and its unit, separated by a space ("3 marks"); no unit, no space."""
    text = num(x)
    return f"{text} {unit}" if unit and text != "n/a" else text


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``1 cell``, ``2 cells`` (``plural`` for irregular nouns)."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


def direction_text(claim: Mapping[str, Any]) -> str:
    return f"{claim['direction']} is better"


def is_exact(claim: Mapping[str, Any], comparison: Mapping[str, Any]) -> bool:
    """A deterministic claim decided by a single exact run: an interval or a sign test would mean nothing."""
    return bool(claim.get("deterministic")) and int(comparison["n"]) <= 1


def _against(claim: Mapping[str, Any], comparison: Mapping[str, Any]) -> str:
    if claim.get("reference") is not None:
        return f"reference {quantity(claim['reference'], claim.get('unit') or '')}"
    return str(comparison["baseline"])


def effect_text(claim: Mapping[str, Any], comparison: Mapping[str, Any]) -> str:
    """The mean effect, oriented so that + means the method is better, relative ones labelled as such."""
    effect = comparison["effect"]
    if claim.get("relative"):
        return f"{percent(effect)} relative to {_against(claim, comparison)}"
    text = signed(effect)
    unit = claim.get("unit") or ""
    return f"{text} {unit}" if unit and text != "n/a" else text


def ci_text(claim: Mapping[str, Any], comparison: Mapping[str, Any]) -> str:
    if is_exact(claim, comparison):
        return DETERMINISTIC
    lo, hi = comparison["ci_low"], comparison["ci_high"]
    if not (_finite(lo) and _finite(hi)):
        return "n/a"
    if claim.get("relative"):
        return f"[{percent(lo)}, {percent(hi)}]"
    return f"[{signed(lo)}, {signed(hi)}]"


def sign_p_text(claim: Mapping[str, Any], comparison: Mapping[str, Any]) -> str:
    if is_exact(claim, comparison):
        return DETERMINISTIC
    p = comparison.get("sign_p")
    return "n/a" if not _finite(p) else num(p, 3)


def margin_text(claim: Mapping[str, Any]) -> str:
    """What the test asks, in words: the margin in the effect's own terms."""
    e = claim["min_effect"]
    unit = claim.get("unit") or ""
    size = percent(e, signed_=False) + " (relative)" if claim.get("relative") else quantity(e, unit)
    test = claim["test"]
    if test == "superiority":
        return "better" + (f" by at least {size}" if e else "")
    if test == "noninferiority":
        return f"not worse by more than {size}"
    return f"within ±{size}"


def versus(claim: Mapping[str, Any], comparisons: Sequence[Mapping[str, Any]]) -> str:
    """``ifci 0 marks vs reference 0 marks``: the method's mean and each baseline's (paired runs)."""
    unit = claim.get("unit") or ""
    if not comparisons:
        return f"{claim['method']}: no comparison"
    parts = [f"{claim['method']} {quantity(comparisons[0]['method_mean'], unit)}"]
    for c in comparisons:
        if claim.get("reference") is not None:
            parts.append(_against(claim, c))
        else:
            parts.append(f"{c['baseline']} {quantity(c['baseline_mean'], unit)}")
    return " vs ".join(parts)


def summary(claim: Mapping[str, Any], comparisons: Sequence[Mapping[str, Any]]) -> str:
    """One line: the metric and its direction, the means, and per baseline the effect, interval and wins."""
    if not comparisons:
        return "no successful cells"
    head = f"{claim['metric']} ({direction_text(claim)}): {versus(claim, comparisons)}"
    tails = []
    for c in comparisons:
        who = "" if len(comparisons) == 1 else f"vs {c['baseline']}: "
        if is_exact(claim, c):
            tails.append(f"{who}effect {effect_text(claim, c)} (deterministic: one exact run)")
        else:
            tails.append(
                f"{who}effect {effect_text(claim, c)}, 95% CI {ci_text(claim, c)}, {c['wins']} of "
                f"{count(int(c['n']), 'pair')} better"
            )
    return f"{head}; " + "; ".join(tails)


def judgement(claim: Mapping[str, Any], comparison: Mapping[str, Any]) -> str:
    """Why the comparison got its verdict, in the words of the rule (:mod:`icml26._core.verdict`), from the
    card's numbers: effect and interval, then what the test asked."""
    n = int(comparison["n"])
    if n == 0:
        return "no successful paired runs"
    min_pairs = int(claim.get("min_pairs", 3))
    if not claim.get("deterministic") and n < min_pairs:
        return f"only {count(n, 'paired run')}; at least {min_pairs} are needed"
    verdict, test, e = comparison["verdict"], claim["test"], claim["min_effect"]
    unit = claim.get("unit") or ""
    size = percent(e, signed_=False) if claim.get("relative") else quantity(e, unit)
    against = _against(claim, comparison)
    numbers = f"effect {effect_text(claim, comparison)}"
    if not is_exact(claim, comparison):
        numbers += f", 95% CI {ci_text(claim, comparison)}"
    rules = {
        ("superiority", "reproduced"): f"better than {against}" + (f" by at least {size}" if e else ""),
        ("superiority", "not_reproduced"): f"an improvement of {size} over {against} is excluded",
        ("superiority", "inconclusive"): f"the interval straddles the decision bounds (0 and {size})",
        ("noninferiority", "reproduced"): f"not worse than {against} by more than {size}",
        ("noninferiority", "not_reproduced"): f"worse than {against} by more than {size}",
        ("noninferiority", "inconclusive"): f"the interval contains the margin -{size}",
        ("equivalence", "reproduced"): f"within ±{size} of {against}",
        ("equivalence", "not_reproduced"): f"differs from {against} by more than {size}",
        ("equivalence", "inconclusive"): f"the interval crosses the margin ±{size}",
    }
    return f"{numbers}: {rules[(test, verdict)]}"
