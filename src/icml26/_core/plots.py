"""Plots of result cards (matplotlib, Agg, no pyplot global state).

The default plot shows what the verdict is computed from. With one setting: every seed's value per method,
paired seeds joined by a line (the comparison is paired), means as bars. With several settings: the mean and
standard deviation of each method against the setting that varies. A claim may pass its own
``plot(card, records, ax)`` for a figure closer to the paper's.
"""

from __future__ import annotations

import logging
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from icml26._core.claims import Claim
from icml26._core.io import atomic_write_bytes, canonical_json

__all__ = ["VERDICT_COLOURS", "plot_claim"]

log = logging.getLogger(__name__)
VERDICT_COLOURS = {"reproduced": "#1a7f37", "not_reproduced": "#cf222e", "inconclusive": "#9a6700"}


def _varying_axis(settings: Sequence[Mapping[str, Any]]) -> tuple[str | None, list[Any]]:
    """The single numeric setting key that varies, if there is one (the natural x axis)."""
    keys = {k for s in settings for k in s}
    varying = [k for k in keys if len({canonical_json(s.get(k)) for s in settings}) > 1]
    if len(varying) == 1:
        values = [s.get(varying[0]) for s in settings]
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            return varying[0], values
    return None, list(range(len(settings)))


def _short(setting: Mapping[str, Any], width: int = 28) -> str:
    text = ", ".join(f"{k}={v}" for k, v in setting.items()) or "default"
    return textwrap.shorten(text, width=width, placeholder="…")


def default_plot(card: Mapping[str, Any], records: Sequence[Mapping[str, Any]], ax: Any) -> None:
    claim = card["claim"]
    metric, methods = claim["metric"], [claim["method"], *claim["baselines"]]
    ok = [r for r in records if r["status"] == "ok"]
    groups = card["by_setting"]
    if len(groups) == 1:
        seeds = sorted({r["spec"]["seed"] for r in ok})
        for seed in seeds:
            ys = [next(r["metrics"][m][metric] for r in ok if r["spec"]["seed"] == seed) for m in methods]
            ax.plot(range(len(methods)), ys, color="0.7", lw=0.8, marker="o", ms=3, zorder=1)
        means = [card["metrics"].get(m, {}).get(metric, {}).get("mean") for m in methods]
        ax.bar(range(len(methods)), [m if m is not None else 0 for m in means], alpha=0.35, zorder=0)
        if claim.get("reference") is not None:
            ax.axhline(claim["reference"], color="k", ls="--", lw=1, label=f"reference {claim['reference']:g}")
            ax.legend(fontsize=8)
        ax.set_xticks(range(len(methods)), methods)
    else:
        key, xs = _varying_axis([g["setting"] for g in groups])
        for m in methods:
            stats = [g["metrics"].get(m, {}).get(metric, {}) for g in groups]
            y = [s.get("mean") if s.get("mean") is not None else float("nan") for s in stats]
            e = [s.get("std") or 0.0 for s in stats]
            ax.errorbar(xs, y, yerr=e, marker="o", capsize=3, label=m)
        if claim.get("reference") is not None:
            ax.axhline(claim["reference"], color="k", ls="--", lw=1, label="reference")
        if key is None:
            ax.set_xticks(xs, [_short(g["setting"]) for g in groups], rotation=30, ha="right", fontsize=7)
        else:
            ax.set_xlabel(key)
        ax.legend(fontsize=8)
    unit = claim.get("unit") or ""
    ax.set_ylabel(f"{metric} ({unit})" if unit else metric)


def plot_claim(claim: Claim, card: Mapping[str, Any], records: Sequence[Mapping[str, Any]], path: Path) -> bool:
    """Render the claim's plot to ``path`` (PNG). A plotting error is logged and never fails the run."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        fig = Figure(figsize=(6.4, 4.2), dpi=110, layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        (claim.plot or default_plot)(card, records, ax)
        verdict = card["verdict"]
        fig.suptitle(
            f"{card['paper']['slug']} {claim.id} [{card['profile']}]: {verdict.replace('_', ' ')}",
            color=VERDICT_COLOURS[verdict],
            fontsize=11,
        )
        ax.set_title(textwrap.fill(card["summary"], 90), fontsize=7)
        buf = _to_png(fig)
    except Exception:  # a plot is an artifact, not the result: never fail the run for it
        log.exception("plot for %s/%s failed", card["paper"]["slug"], claim.id)
        return False
    atomic_write_bytes(path, buf)
    return True


def _to_png(fig: Any) -> bytes:
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()
