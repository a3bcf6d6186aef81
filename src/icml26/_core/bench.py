"""Benchmark rows: one shape for every paper's speed and memory figures, so that a suite can collect them.

Each ``benchmarks/bench_<slug>.py`` defines ``rows(size: str) -> list[BenchRow]`` for ``size`` in
:data:`SIZES` (``tiny``: seconds, run by a test so that no benchmark rots; ``quick``: under ~1 minute;
``full``: under ~10 minutes on 2 cores, the size whose results are committed), and keeps a ``__main__`` that prints
them. A row compares *our* hot path with a named *anchor*: an outside implementation wherever one exists and installs
here (the field's library, or the official code's approach re-implemented faithfully inside the benchmark), with a
self-written naive loop only as a secondary row.

Timing: :func:`interleaved_medians` warms every contender up, then alternates them ``repeat`` times in one
process and returns each one's median, so that a slow phase of a shared machine hits all of them alike.

    from icml26._core.bench import BenchRow, interleaved_medians

    t = interleaved_medians({"ours": lambda: ours(x), "torchao": lambda: anchor(x)}, repeat=7)
    rows = [BenchRow("mixfp4", "qdq 4096x4096 fp32", "torchao NVFP4 (eager)", t["ours"], t["torchao"], "s")]
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

__all__ = ["SIZES", "BenchRow", "interleaved_medians", "print_rows"]

SIZES: tuple[str, ...] = ("tiny", "quick", "full")
Better = Literal["lower", "higher"]


@dataclass(frozen=True)
class BenchRow:
    """One measurement of ours against one anchor on one workload.

    ``unit`` names what ``ours`` and ``anchor`` measure ("s", "MB", "tokens/s", ...); ``better`` says which way is
    better for that unit (``"lower"`` for time and memory, ``"higher"`` for throughput). ``ratio`` is > 1 when
    ours is better: anchor / ours for lower-is-better units, ours / anchor otherwise. ``threads`` is the torch /
    BLAS thread count the row ran with; ``notes`` says what a reader must know (what the anchor includes, a compile
    time left out, an extrapolation).
    """

    paper: str
    workload: str
    anchor_name: str
    ours: float
    anchor: float
    unit: str
    better: Better = "lower"
    ours_name: str = "icml26"
    threads: int = 1
    notes: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.better not in ("lower", "higher"):
            raise ValueError(f"better must be 'lower' or 'higher', got {self.better!r}")
        for name in ("ours", "anchor"):
            v = getattr(self, name)
            if not (isinstance(v, int | float) and v > 0):
                raise ValueError(f"{name} must be a positive number, got {v!r}")

    @property
    def ratio(self) -> float:
        return self.anchor / self.ours if self.better == "lower" else self.ours / self.anchor

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "extra": dict(self.extra), "ratio": self.ratio}


def interleaved_medians(
    contenders: Mapping[str, Callable[[], Any]], repeat: int = 5, warmup: int = 1
) -> dict[str, float]:
    """Median wall time in seconds of each contender, run alternately ``repeat`` times after ``warmup`` rounds."""
    if repeat < 1 or warmup < 0:
        raise ValueError(f"repeat must be >= 1 and warmup >= 0, got {repeat}, {warmup}")
    for _ in range(warmup):
        for fn in contenders.values():
            fn()
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repeat):
        for name, fn in contenders.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(ts) for name, ts in times.items()}


def print_rows(rows: list[BenchRow]) -> None:
    """A plain table of rows on stdout (what a benchmark's ``__main__`` prints)."""
    for r in rows:
        print(
            f"{r.paper:<20} {r.workload:<40} {r.ours_name}: {r.ours:.4g} {r.unit}  "
            f"{r.anchor_name}: {r.anchor:.4g} {r.unit}  ratio {r.ratio:.3g}x ({r.better} is better)"
            + (f"  [{r.notes}]" if r.notes else "")
        )
