"""Plots of result cards (matplotlib, Agg, no pyplot global state), and helpers that make a claim's own plot right.

What every claim plot must show (a review rule): the metric its verdict is judged on, the method and each baseline
(or the reference value), every line style and band explained in the legend, the legend never over the data, at
150 dpi or more. :func:`plot_claim` enforces what it can for every plot: it renders at :data:`DPI`, moves every
legend outside its axes (merging the legends of twin axes) and writes the card's verdict and summary around the
figure.

A claim may pass its own ``plot(card, records, ax)``. The helpers below make the right thing the easy thing:

- :func:`judged_metric` draws what the verdict is computed from (the default plot): one setting, every seed's
  value per arm with paired seeds joined and the mean as a bar; several settings, mean ± 1 sd per arm against the
  setting that varies; the claim's method highlighted, the reference line when the claim has one;
- :func:`with_judged_metric` wraps a room's own figure (a curve, a distribution) and adds the judged-metric panel
  beside it: ``Claim(..., plot=with_judged_metric(plot_curves))``;
- :func:`arm_style` gives the claim's method one strong colour and its baselines distinct ones (read the method
  from the card, never from a module constant: claims of one paper have different methods);
- :func:`reference_line` and :func:`decision_bounds` draw the reference value and the bound its test asks for;
  :func:`style_key` and :func:`band_key` explain line styles and bands in the legend;
- :func:`panels` splits the axes into several panels, for a figure with extra panels.
"""

from __future__ import annotations

import logging
import textwrap
import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from icml26._core.claims import Claim
from icml26._core.io import atomic_write_bytes, canonical_json

__all__ = [
    "DPI",
    "METHOD_COLOUR",
    "VERDICT_COLOURS",
    "arm_style",
    "band_key",
    "decision_bounds",
    "default_plot",
    "judged_metric",
    "legend_outside",
    "paired_strip",
    "panels",
    "plot_claim",
    "reference_line",
    "style_key",
    "with_judged_metric",
]

log = logging.getLogger(__name__)
DPI = 150
VERDICT_COLOURS = {"reproduced": "#1a7f37", "not_reproduced": "#cf222e", "inconclusive": "#9a6700"}
METHOD_COLOUR = "#0969da"
# Baselines, then any other arm a figure shows: distinct from the method's blue and from each other.
ARM_COLOURS = ("#cf222e", "#8250df", "#bc4c00", "#1b7c83", "#6e7781", "#bf3989", "#4d2d00", "#116329")
REFERENCE_STYLE: dict[str, Any] = {"color": "black", "ls": "--", "lw": 1.0}
PlotFunction = Callable[[Mapping[str, Any], Sequence[Mapping[str, Any]], Any], None]


# ----------------------------------------------------------------------------------------------- helpers
def arm_style(card: Mapping[str, Any], name: str, index: int | None = None) -> dict[str, Any]:
    """Line/marker style of one arm: the claim's method thick and blue, each baseline its own colour.

    ``index`` picks a colour for an arm that is neither the method nor a baseline (an extra curve)."""
    claim = card["claim"]
    if name == claim["method"]:
        return {"color": METHOD_COLOUR, "lw": 2.2, "zorder": 3}
    baselines = list(claim.get("baselines") or [])
    if name in baselines:
        i = baselines.index(name)
    else:
        i = len(baselines) + (index if index is not None else zlib.crc32(name.encode()))
    return {"color": ARM_COLOURS[i % len(ARM_COLOURS)], "lw": 1.3, "zorder": 2}


def reference_line(ax: Any, value: float, label: str | None = None, *, vertical: bool = False) -> Any:
    """The claim's reference value (or any bar a verdict is judged against) as a dashed black line, labelled."""
    text = label if label is not None else f"reference {value:g}"
    draw = ax.axvline if vertical else ax.axhline
    return draw(value, label=text, **REFERENCE_STYLE)


def decision_bounds(ax: Any, card: Mapping[str, Any]) -> None:
    """For a claim judged against a reference value: the reference line and the bound(s) its test asks for
    (superiority: better by at least the margin; non-inferiority: not worse by more; equivalence: a band)."""
    claim = card["claim"]
    ref = claim.get("reference")
    if ref is None:
        return
    reference_line(ax, ref, f"reference {ref:g}")
    e, test = float(claim.get("min_effect") or 0.0), claim["test"]
    if e == 0:
        return
    step = e * abs(ref) if claim.get("relative") else e
    sign = 1.0 if claim["direction"] == "higher" else -1.0
    margin = f"{e:.3g}{' (relative)' if claim.get('relative') else ''}"
    bound = {"color": "0.3", "ls": ":", "lw": 1.0}
    if test == "equivalence":
        ax.axhspan(ref - step, ref + step, color="0.5", alpha=0.15, lw=0, label=f"band: equivalence margin ±{margin}")
    elif test == "noninferiority":
        ax.axhline(ref - sign * step, label=f"bound: not worse than the reference by {margin}", **bound)
    else:
        ax.axhline(ref + sign * step, label=f"bound: better than the reference by {margin}", **bound)


def style_key(ax: Any, styles: Mapping[str, str], color: str = "0.35") -> None:
    """Explain line styles in the legend: ``style_key(ax, {"-": "m = 100", "--": "m = 200"})``.

    Adds empty labelled lines (they draw nothing and leave the limits alone); the legend lists them."""
    for ls, label in styles.items():
        ax.plot([], [], color=color, ls=ls, label=label)


def paired_strip(
    ax: Any,
    values: Any,
    labels: Sequence[str],
    *,
    mean_label: str = "mean over seeds",
    point_label: str = "one seed (grey lines pair seeds)",
    rotation: float = 20,
) -> None:
    """Paired values as a strip plot: ``values[i, j]`` is arm ``j`` in cell ``i``; each cell's dots are joined by a
    grey line (the pairing the verdict uses) and each arm's mean is a black bar."""
    import numpy as np

    values = np.asarray(values, dtype=float).reshape(-1, len(labels))
    xs = np.arange(len(labels))
    for row in values:
        ax.plot(xs, row, color="0.8", lw=0.6, zorder=1)
    for j in range(len(labels)):
        ax.plot(np.full(len(values), xs[j]), values[:, j], "o", ms=3.5, color=f"C{j}", zorder=2)
    if len(values):
        ax.hlines(values.mean(0), xs - 0.25, xs + 0.25, color="k", lw=1.5, zorder=3, label=mean_label)
    ax.plot([], [], "o", color="0.4", ms=3.5, label=point_label)
    ax.set_xticks(xs, labels, rotation=rotation, fontsize=7)


def band_key(ax: Any, label: str = "band: ± 1 sd over seeds", color: str = "0.5", alpha: float = 0.25) -> None:
    """Explain a shaded band in the legend (an empty labelled band: it draws nothing)."""
    ax.fill_between([], [], [], color=color, alpha=alpha, lw=0, label=label)


def _handles(axes: Sequence[Any]) -> tuple[list[Any], list[str]]:
    handles: list[Any] = []
    labels: list[str] = []
    for a in axes:
        for handle, label in zip(*a.get_legend_handles_labels(), strict=True):
            if label and not label.startswith("_") and label not in labels:
                handles.append(handle)
                labels.append(label)
    return handles, labels


def legend_outside(ax: Any, *, twins: Sequence[Any] = (), below: bool | None = None, fontsize: float = 7) -> Any:
    """One legend for ``ax`` (and its twin axes), outside the data: to the right, or below when it is long."""
    group = [ax, *twins]
    for a in group:
        if a.get_legend() is not None:
            a.get_legend().remove()
    handles, labels = _handles(group)
    if not handles:
        return None
    if below is None:
        below = len(labels) > 8
    if below:
        return ax.legend(
            handles,
            labels,
            loc="upper center",
            bbox_to_anchor=(0.5, _below_tick_labels(ax)),
            ncol=_columns_that_fit(ax, labels, fontsize),
            fontsize=fontsize,
            frameon=False,
        )
    return ax.legend(
        handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0, fontsize=fontsize, frameon=False
    )


def _below_tick_labels(ax: Any) -> float:
    """The axes-fraction height just below everything drawn under the axes (tick labels, x label), so that a
    legend placed there never runs into long or rotated tick labels; -0.16 when it cannot be measured."""
    try:
        renderer = ax.figure.canvas.get_renderer()
        under = ax.get_tightbbox(renderer, for_layout_only=False).y0
        box = ax.get_window_extent(renderer)
    except (AttributeError, TypeError, ValueError):
        return -0.16
    return float(min(-0.16, (under - box.y0) / max(box.height, 1.0) - 0.03))


def _columns_that_fit(ax: Any, labels: Sequence[str], fontsize: float) -> int:
    """At most 3 legend columns, and no more than fit under the axes: long labels in a narrow panel would run
    past the figure's edge or into the next panel's legend."""
    width_points = ax.get_position().width * ax.figure.get_figwidth() * 72
    # a column is the marker (about 4 characters wide) plus its longest label; 0.6 em is an average character
    column_points = (max(len(label) for label in labels) + 4) * 0.6 * fontsize
    return max(1, min(3, len(labels), int(width_points // column_points)))


def _twin_groups(fig: Any) -> list[list[Any]]:
    """Axes grouped by the place they occupy (a twinx/twiny shares its parent's place)."""
    groups: list[list[Any]] = []
    for a in fig.axes:
        spec = a.get_subplotspec()
        for g in groups:
            other = g[0].get_subplotspec()
            if spec is not None and other is not None and spec == other:
                g.append(a)
                break
        else:
            groups.append([a])
    return groups


def _legends_outside(fig: Any) -> None:
    """Move every legend a plot function drew (on axes or twins) outside its axes."""
    groups = _twin_groups(fig)
    many = len(groups) > 1
    for group in groups:
        if any(a.get_legend() is not None for a in group):
            legend_outside(group[0], twins=group[1:], below=True if many else None)


def panels(ax: Any, n: int, *, width_ratios: Sequence[float] | None = None) -> list[Any]:
    """Replace ``ax`` by ``n`` panels side by side in the same place (the figure widens to keep them readable)."""
    fig = ax.figure
    spec = ax.get_subplotspec()
    ax.remove()
    grid = spec.subgridspec(1, n, width_ratios=width_ratios)
    w, h = fig.get_size_inches()
    fig.set_size_inches(max(w, 4.6 * n + 1.0), h)
    return [fig.add_subplot(grid[0, i]) for i in range(n)]


# ---------------------------------------------------------------------------------------- judged metric
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


def _ylabel(claim: Mapping[str, Any]) -> str:
    unit = claim.get("unit") or ""
    return f"{claim['metric']}{f' ({unit})' if unit else ''}, {claim['direction']} is better"


def judged_metric(card: Mapping[str, Any], records: Sequence[Mapping[str, Any]], ax: Any) -> None:
    """The metric the verdict is judged on, per arm: method highlighted, baselines, reference line, all explained."""
    claim = card["claim"]
    metric, methods = claim["metric"], [claim["method"], *claim["baselines"]]
    ok = [r for r in records if r["status"] == "ok"]
    groups = card["by_setting"]
    if len(groups) == 1:
        seeds = sorted({r["spec"]["seed"] for r in ok})
        for i, seed in enumerate(seeds):
            ys = [next(r["metrics"][m][metric] for r in ok if r["spec"]["seed"] == seed) for m in methods]
            label = "one seed (paired arms joined)" if i == 0 else None
            ax.plot(range(len(methods)), ys, color="0.6", lw=0.8, marker="o", ms=3, zorder=4, label=label)
        means = [card["metrics"].get(m, {}).get(metric, {}).get("mean") for m in methods]
        colours = [arm_style(card, m)["color"] for m in methods]
        ax.bar(
            range(len(methods)),
            [m if m is not None else 0 for m in means],
            color=colours,
            alpha=0.45,
            zorder=1,
            label="bar: mean over seeds",
        )
        ax.set_xticks(range(len(methods)), methods, rotation=20 if len(methods) > 3 else 0, ha="right")
    else:
        key, xs = _varying_axis([g["setting"] for g in groups])
        for m in methods:
            stats = [g["metrics"].get(m, {}).get(metric, {}) for g in groups]
            y = [s.get("mean") if s.get("mean") is not None else float("nan") for s in stats]
            e = [s.get("std") or 0.0 for s in stats]
            style = arm_style(card, m)
            ax.errorbar(xs, y, yerr=e, marker="o", ms=4, capsize=3, label=f"{m} (mean ± 1 sd over seeds)", **style)
        if key is None:
            ax.set_xticks(xs, [_short(g["setting"]) for g in groups], rotation=30, ha="right", fontsize=7)
        else:
            ax.set_xlabel(key)
    decision_bounds(ax, card)
    ax.set_ylabel(_ylabel(claim))
    ax.legend()


default_plot = judged_metric  # the plot of a claim that brings none


def with_judged_metric(plot: PlotFunction, *, title: str | None = None) -> PlotFunction:
    """A claim plot of two panels: ``plot`` (the room's own figure) and, beside it, :func:`judged_metric`."""

    def two_panels(card: Mapping[str, Any], records: Sequence[Mapping[str, Any]], ax: Any) -> None:
        own, judged = panels(ax, 2, width_ratios=(1.25, 1.0))
        plot(card, records, own)
        if title:
            own.set_title(title, fontsize=8)
        judged_metric(card, records, judged)
        judged.set_title("what the verdict is judged on", fontsize=8)

    two_panels.__name__ = getattr(plot, "__name__", "plot") + "_with_judged_metric"
    return two_panels


# ------------------------------------------------------------------------------------------------- render
def plot_claim(claim: Claim, card: Mapping[str, Any], records: Sequence[Mapping[str, Any]], path: Path) -> bool:
    """Render the claim's plot to ``path`` (PNG). A plotting error is logged and never fails the run."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        fig = Figure(figsize=(7.2, 4.4), dpi=DPI, layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        (claim.plot or judged_metric)(card, records, ax)
        _legends_outside(fig)
        verdict = card["verdict"]
        fig.suptitle(
            f"{card['paper']['slug']} {claim.id} [{card['profile']}]: {verdict.replace('_', ' ')}",
            color=VERDICT_COLOURS[verdict],
            fontsize=11,
        )
        width_chars = int(fig.get_size_inches()[0] * 17)
        summary = textwrap.fill(str(card["summary"]), width_chars)
        lines = summary.count("\n") + 1
        strip = min(0.3, (0.12 + 0.13 * lines) / fig.get_size_inches()[1])
        engine: Any = fig.get_layout_engine()
        engine.set(rect=(0, strip, 1, 1 - strip))  # leave a strip at the bottom for the summary
        fig.text(0.01, 0.01, summary, fontsize=7, va="bottom", ha="left", color="0.15")
        buf = _to_png(fig)
    except Exception:  # a plot is an artifact, not the result: never fail the run for it
        log.exception("plot for %s/%s failed", card["paper"]["slug"], claim.id)
        return False
    atomic_write_bytes(path, buf)
    return True


def _to_png(fig: Any) -> bytes:
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    return buf.getvalue()
