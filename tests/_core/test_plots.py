import struct
from dataclasses import replace

import pytest

from icml26._core.plots import DPI, arm_style, band_key, paired_strip, reference_line, style_key, with_judged_metric
from icml26._core.runner import run
from tests._core.tiny_paper import tiny_card

matplotlib = pytest.importorskip("matplotlib")


def png_size(path):
    head = path.read_bytes()[:24]
    return struct.unpack(">II", head[16:24])


def crowded(card, records, ax):
    """A room's plot that puts a long legend over its data, on two y axes."""
    for i in range(12):
        ax.plot([0, 1, 2], [i, i + 1, i + 2], label=f"arm {i} with a long label")
    twin = ax.twinx()
    twin.plot([0, 2], [0, 1], color="k", ls=":", label="on the twin axis")
    twin.legend(loc="upper left")
    ax.legend(loc="center")


def render(tmp_path, plot):
    card = tiny_card()
    claim = replace(card.claims[0], plot=plot)
    (built,) = run([replace(card, claims=(claim,))], profile="smoke", out=tmp_path, report=False).cards
    return tmp_path / "tiny" / built["artifacts"]["plot"]


def test_plots_are_at_least_150_dpi(tmp_path):
    width, height = png_size(render(tmp_path, None))
    assert DPI >= 150 and width >= 7 * 150 and height >= 4 * 150


def test_legends_are_moved_outside_the_data_and_merged_across_twin_axes(tmp_path, monkeypatch):
    from icml26._core import plots

    seen = {}
    original = plots._legends_outside

    def spy(fig):
        original(fig)
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        for ax in fig.axes:
            legend = ax.get_legend()
            if legend is not None:
                box, area = legend.get_window_extent(renderer), ax.get_window_extent(renderer)
                seen.setdefault("legends", []).append((box, area, len(legend.get_texts())))

    monkeypatch.setattr(plots, "_legends_outside", spy)
    render(tmp_path, crowded)
    ((box, area, entries),) = seen["legends"]  # one legend for the axes and its twin
    assert entries == 13
    overlap_x = min(box.x1, area.x1) - max(box.x0, area.x0)
    overlap_y = min(box.y1, area.y1) - max(box.y0, area.y0)
    assert overlap_x <= 1 or overlap_y <= 1, "the legend covers the data"


def test_with_judged_metric_adds_the_verdict_panel(tmp_path, monkeypatch):
    from icml26._core import plots

    panels = {}
    original = plots._legends_outside

    def spy(fig):
        panels["titles"] = [ax.get_title() for ax in fig.axes]
        panels["ylabels"] = [ax.get_ylabel() for ax in fig.axes]
        original(fig)

    def own(card, records, ax):
        ax.plot([1, 2], [3, 4], **arm_style(card, card["claim"]["method"]), ls="--", label="running error")
        style_key(ax, {"--": "dashed: running error"})
        band_key(ax)
        reference_line(ax, 3.5, "reference 3.5")
        ax.legend()

    monkeypatch.setattr(plots, "_legends_outside", spy)
    path = render(tmp_path, with_judged_metric(own, title="curves"))
    assert panels["titles"] == ["curves", "what the verdict is judged on"]
    assert panels["ylabels"][1] == "sq_error, lower is better"
    assert png_size(path)[0] > png_size(render(tmp_path / "one", None))[0]  # the figure widened for two panels


def test_arm_style_highlights_the_claims_own_method():
    card = {"claim": {"method": "ours", "baselines": ["a", "b"]}}
    assert arm_style(card, "ours")["lw"] > arm_style(card, "a")["lw"]
    colours = {arm_style(card, m)["color"] for m in ("ours", "a", "b")}
    assert len(colours) == 3
    assert arm_style(card, "extra") == arm_style(card, "extra")  # stable across calls and processes


def test_a_legend_below_a_narrow_panel_uses_only_the_columns_that_fit():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from icml26._core.plots import legend_outside

    fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3))
    long = ["interior_selected (mean ± 1 sd over seeds)", "K=1 (mean ± 1 sd over seeds)", "K=16 (mean ± 1 sd)"]
    for label in long:
        right.plot([0, 1], [0, 1], label=label)
    for label in ("a", "b", "c"):
        left.plot([0, 1], [1, 0], label=label)
    fig.canvas.draw()
    wide_labels = legend_outside(right, below=True)
    short_labels = legend_outside(left, below=True)
    assert wide_labels._ncols == 1  # three 40-character columns cannot sit under a 3-inch panel
    assert short_labels._ncols == 3
    fig.canvas.draw()
    edge = fig.bbox.x1
    assert wide_labels.get_window_extent().x1 <= edge
    plt.close(fig)


def test_a_legend_below_the_axes_starts_below_rotated_tick_labels():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from icml26._core.plots import legend_outside

    fig, ax = plt.subplots(figsize=(4, 3))
    ticks = [f"setting noise=exponential,d={i},n_train=300" for i in range(12)]
    ax.plot(range(12), range(12), label="method")
    ax.set_xticks(range(12), ticks, rotation=30, ha="right", fontsize=7)
    legend = legend_outside(ax, below=True)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    lowest_tick = min(t.get_window_extent(renderer).y0 for t in ax.get_xticklabels())
    assert legend.get_window_extent(renderer).y1 <= lowest_tick + 1
    plt.close(fig)


def test_paired_strip_draws_each_cell_joined_and_each_arms_mean():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    values = [[1.0, 3.0], [2.0, 5.0], [3.0, 4.0]]  # three cells, two arms
    paired_strip(ax, values, ["a", "b"], mean_label="mean over cells", point_label="one cell")
    pairs = [line for line in ax.lines if line.get_color() == "0.8"]
    assert [list(line.get_ydata()) for line in pairs] == values  # one grey line per cell joins its arms
    (means,) = ax.collections
    assert [seg[0][1] for seg in means.get_segments()] == [2.0, 4.0]  # the black bars sit at the arms' means
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"]
    assert {"mean over cells", "one cell"} <= set(ax.get_legend_handles_labels()[1])
    plt.close(fig)
