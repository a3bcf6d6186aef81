"""Temporal selectors: decide, frame by frame and in one streaming pass, which snapshots to keep."""

from __future__ import annotations

import numpy as np

__all__ = [
    "EnstrophySelector",
    "InterpolationErrorSelector",
    "TemporalSelector",
    "UniformSelector",
    "uniform_indices",
]


def _checked(field: np.ndarray) -> np.ndarray:
    field = np.asarray(field, dtype=np.float64)
    if field.ndim < 1 or field.size == 0:
        raise ValueError("a snapshot must be a non-empty array")
    if not np.isfinite(field).all():
        raise ValueError("the snapshot contains NaN or infinite values")
    return field


class TemporalSelector:
    """Base class: ``decide(field) -> bool`` says whether the frame in hand is kept. The first frame is always kept.

    ``update(field) -> list[int]`` is the streaming form every selector answers: the frame indices kept on seeing this
    frame (a selector with one frame of lag may keep the previous frame instead of the current one)."""

    lag = 0  # how many frames back a kept index may lie

    def __init__(self) -> None:
        self.count = 0
        self.selected: list[int] = []

    def decide(self, field: np.ndarray) -> bool:
        keep = self._decide(_checked(field)) if self.count > 0 else self._first(_checked(field))
        if keep:
            self.selected.append(self.count)
        self.count += 1
        return keep

    def update(self, field: np.ndarray) -> list[int]:
        index = self.count
        return [index] if self.decide(field) else []

    def _first(self, field: np.ndarray) -> bool:
        return True

    def _decide(self, field: np.ndarray) -> bool:
        raise NotImplementedError


class UniformSelector(TemporalSelector):
    """Keep every ``every``-th frame (frames 0, every, 2 every, ...)."""

    def __init__(self, every: int) -> None:
        super().__init__()
        if int(every) < 1:
            raise ValueError(f"every must be >= 1, got {every!r}")
        self.every = int(every)

    def _decide(self, field: np.ndarray) -> bool:
        return self.count % self.every == 0


def uniform_indices(n_frames: int, n_keep: int) -> np.ndarray:
    """``n_keep`` frame indices spread evenly over ``range(n_frames)``, first and last included (the uniform arm at
    an equal frame count)."""
    if not 2 <= n_keep <= n_frames:
        raise ValueError(f"need 2 <= n_keep <= n_frames, got n_keep={n_keep}, n_frames={n_frames}")
    return np.unique(np.round(np.linspace(0, n_frames - 1, n_keep)).astype(int))


class EnstrophySelector(TemporalSelector):
    """Physics-aware temporal selector for Navier-Stokes (PATS, released code's enstrophy rule).

    Activity E_t = mean(omega_t^2). Since the anchor a (the last selected or last in-bounds frame) it keeps skipping
    while both hold:

    (i)  |E_t - E_a| / |E_{a+1} - E_a| <= sqrt(max flux / mean flux), flux = |E_j - E_{j-1}| (max over the whole run,
         mean over the frames since the anchor), and
    (ii) corr(omega_t, omega_a) >= ``corr_threshold`` (Pearson).

    When either breaks, the current frame is kept and the previous (last in-bounds) frame becomes the anchor; a frame
    is also kept when ``window_size`` frames have passed within bounds (then it is the anchor).
    """

    def __init__(self, corr_threshold: float = 0.9, window_size: int = 10) -> None:
        super().__init__()
        if not 0.0 < corr_threshold <= 1.0:
            raise ValueError(f"corr_threshold must be in (0, 1], got {corr_threshold!r}")
        if int(window_size) < 1:
            raise ValueError(f"window_size must be >= 1, got {window_size!r}")
        self.corr_threshold, self.window_size = float(corr_threshold), int(window_size)

    @staticmethod
    def activity(field: np.ndarray) -> float:
        return float(np.mean(np.asarray(field, np.float64) ** 2))

    def _first(self, field: np.ndarray) -> bool:
        self._anchor, self._anchor_e = field, self.activity(field)
        self._queue: list[float] = []  # activities since the anchor
        self._flux_sum, self._max_flux, self._diff0 = 0.0, 0.0, None
        self._prev: tuple[np.ndarray, float] | None = None
        return True

    def _reset_window(self, anchor: np.ndarray, anchor_e: float) -> None:
        self._anchor, self._anchor_e = anchor, anchor_e
        self._queue, self._flux_sum, self._diff0, self._prev = [], 0.0, None, None

    def _decide(self, field: np.ndarray) -> bool:
        e = self.activity(field)
        flux = abs(e - (self._queue[-1] if self._queue else self._anchor_e))
        self._max_flux = max(self._max_flux, flux)
        self._flux_sum += flux
        self._queue.append(e)
        if self._diff0 is None:
            self._diff0 = abs(e - self._anchor_e)
        if self._max_flux == 0.0 and len(self._queue) < self.window_size:
            self._prev = (field, e)
            return False
        factor = np.sqrt(self._max_flux / (self._flux_sum / len(self._queue) + 1e-12))
        change = abs(e - self._anchor_e) / (self._diff0 + 1e-12)
        a, b = field.ravel() - field.mean(), self._anchor.ravel() - self._anchor.mean()
        corr = float(a @ b / (np.sqrt((a @ a) * (b @ b)) + 1e-30))
        if change <= factor and corr >= self.corr_threshold:
            if len(self._queue) < self.window_size:
                self._prev = (field, e)
                return False
            self._reset_window(field, e)  # window full: keep the current frame, it is the new anchor
            return True
        if self._prev is not None:  # broken: keep the current frame, anchor on the last in-bounds one
            prev_field, prev_e = self._prev
            self._reset_window(prev_field, prev_e)
            self._diff0 = abs(e - prev_e)
            self._flux_sum = self._diff0
            self._queue = [e]
        else:
            self._reset_window(field, e)
        self._prev = (field, e)
        return True


class InterpolationErrorSelector(TemporalSelector):
    """Ours (not the paper's rule): piecewise-linear segmentation in time, in one streaming pass with one frame of lag.

    Frames since the last kept frame a are buffered (at most ``max_gap``). On frame t, if linear interpolation between
    a and t reproduces every buffered frame j in (a, t) within ``tolerance`` (||interp_j - u_j|| / ||u_j||), nothing is
    kept yet; otherwise frame t - 1 (the last frame whose segment passed) is kept and becomes the anchor. Frame t is
    kept outright when t - a reaches ``max_gap``. Dropped frames are then reconstructed within ``tolerance`` from the
    exact kept frames, so kept frames gather where the flow changes fast (bursts) and thin out where it is calm."""

    lag = 1

    def __init__(self, tolerance: float = 0.05, max_gap: int = 20) -> None:
        super().__init__()
        if not (np.isfinite(tolerance) and tolerance > 0):
            raise ValueError(f"tolerance must be a positive number, got {tolerance!r}")
        if int(max_gap) < 1:
            raise ValueError(f"max_gap must be >= 1, got {max_gap!r}")
        self.tolerance, self.max_gap = float(tolerance), int(max_gap)

    def decide(self, field: np.ndarray) -> bool:
        raise TypeError("InterpolationErrorSelector keeps frames with one frame of lag: call update(field)")

    def update(self, field: np.ndarray) -> list[int]:
        field = _checked(field)
        t = self.count
        self.count += 1
        if t == 0:
            self._anchor, self._a, self._buffer = field, 0, []
            self.selected.append(0)
            return [0]
        if t - self._a >= self.max_gap:
            return self._keep(t, field, [])
        if self._buffer and not self._segment_ok(field, t):
            prev_field = self._buffer[-1]
            kept = self._keep(t - 1, prev_field, [field])
            if t - self._a >= self.max_gap:  # cannot happen for max_gap >= 1, kept for clarity
                kept += self._keep(t, field, [])
            return kept
        self._buffer.append(field)
        return []

    def _segment_ok(self, field: np.ndarray, t: int) -> bool:
        buf = np.stack(self._buffer)
        j = np.arange(self._a + 1, t)
        w = ((j - self._a) / (t - self._a))[:, None, None]
        interp = (1 - w) * self._anchor + w * field
        err = np.sqrt(((interp - buf) ** 2).sum(axis=(1, 2)) / np.maximum((buf**2).sum(axis=(1, 2)), 1e-300))
        return bool(err.max() <= self.tolerance)

    def _keep(self, index: int, frame: np.ndarray, rest: list[np.ndarray]) -> list[int]:
        self._anchor, self._a, self._buffer = frame, index, rest
        self.selected.append(index)
        return [index]
