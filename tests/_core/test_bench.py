"""The benchmark row shape and the interleaved timer."""

from __future__ import annotations

import pytest

from icml26._core.bench import BenchRow, interleaved_medians


def test_ratio_is_above_one_when_ours_is_better() -> None:
    assert BenchRow("p", "w", "anchor", ours=1.0, anchor=4.0, unit="s").ratio == pytest.approx(4.0)
    assert BenchRow("p", "w", "anchor", ours=8.0, anchor=2.0, unit="items/s", better="higher").ratio == 4.0
    assert BenchRow("p", "w", "anchor", ours=1.0, anchor=2.0, unit="s").as_dict()["ratio"] == 2.0


@pytest.mark.parametrize(
    ("ours", "anchor", "better"), [(0.0, 1.0, "lower"), (1.0, float("nan"), "lower"), (1, 1, "up")]
)
def test_bad_rows_are_refused(ours: float, anchor: float, better: str) -> None:
    with pytest.raises(ValueError, match="must be"):
        BenchRow("p", "w", "anchor", ours=ours, anchor=anchor, unit="s", better=better)  # type: ignore[arg-type]


def test_interleaved_medians_runs_every_contender_repeat_plus_warmup_times() -> None:
    calls = {"a": 0, "b": 0}

    def bump(name: str) -> None:
        calls[name] += 1

    out = interleaved_medians({"a": lambda: bump("a"), "b": lambda: bump("b")}, repeat=3, warmup=2)
    assert calls == {"a": 5, "b": 5} and set(out) == {"a", "b"} and all(t >= 0 for t in out.values())
    with pytest.raises(ValueError, match="repeat"):
        interleaved_medians({"a": lambda: None}, repeat=0)
