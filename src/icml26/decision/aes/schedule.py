"""The AES schedule: a square-root rule for the entropy weight driven by an online, TD-error based drift proxy.

Vectorised over independent runs: the state of ``n`` schedules is a set of arrays with a leading axis, so that one
call updates every run of a batched trainer (and a single schedule is the case ``n = 1`` with scalar results).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

__all__ = ["PROXIES", "AdaptiveEntropySchedule", "td_quantile"]

Proxy = Literal["variation", "ema_ratio"]
PROXIES: tuple[str, ...] = ("variation", "ema_ratio")


def td_quantile(td_errors: np.ndarray, quantile: float = 0.9) -> np.ndarray:
    """The ``quantile`` of |delta| along the last axis (the batch): ``np.quantile``'s default (linear) rule, by a sort
    (np.quantile's own overhead dominates the cost for the small batches of a per-update call)."""
    x = np.sort(np.abs(td_errors), axis=-1)
    pos = quantile * (x.shape[-1] - 1)
    lo = int(np.floor(pos))
    hi = min(lo + 1, x.shape[-1] - 1)
    return x[..., lo] + (pos - lo) * (x[..., hi] - x[..., lo])


def _positive(name: str, value: float) -> float:
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return value


def _count(name: str, value: int, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


class AdaptiveEntropySchedule:
    """alpha_t = EMA_rho( clip(alpha_base * sqrt(V_t / V_ref), alpha_min, alpha_max) ), V_t an online drift proxy.

    Each :meth:`update` receives one batch of TD errors (shape ``(batch,)``, or ``(n, batch)`` for ``n``
    independent runs) and

    1. reduces it to ``q_t``, the ``quantile`` (0.9) of |delta| over the batch;
    2. forms the proxy: ``"ema_ratio"`` (default), ``V_t = EMA_fast(q) / EMA_slow(q)`` (1 while the TD level is
       stationary; scale-free, so ``V_ref = 1``); or ``"variation"``, the sliding-window path length
       ``V_t = mean_{j in last window} |q_j - q_{j-1}|`` with the reference ``V_ref`` = its value at the end of
       warm-up (the proxy over the last ``window`` updates of warm-up). Either way the rule is invariant to the
       TD-error (reward) scale;
    3. during the first ``warmup`` updates keeps ``alpha = alpha_base`` (the critic is still settling; no
       adaptation);
    4. afterwards sets ``alpha_t`` by the square-root rule above, clipped to [alpha_min, alpha_max] and smoothed by
       an EMA with weight ``smoothing`` on the new value (1.0: no smoothing).

    ``alpha`` is a float for a single schedule and an array of shape ``(n,)`` for a batch of them.
    """

    def __init__(
        self,
        alpha_base: float,
        alpha_min: float | None = None,
        alpha_max: float | None = None,
        *,
        proxy: Proxy = "ema_ratio",
        quantile: float = 0.9,
        window: int = 50,
        warmup: int = 100,
        fast: float = 0.2,
        slow: float = 0.01,
        smoothing: float = 0.2,
    ) -> None:
        self.alpha_base = _positive("alpha_base", alpha_base)
        self.alpha_min = _positive("alpha_min", alpha_base / 10 if alpha_min is None else alpha_min)
        self.alpha_max = _positive("alpha_max", alpha_base * 10 if alpha_max is None else alpha_max)
        if not self.alpha_min <= self.alpha_base <= self.alpha_max:
            raise ValueError(
                f"need alpha_min <= alpha_base <= alpha_max, got {self.alpha_min}, {self.alpha_base}, {self.alpha_max}"
            )
        if proxy not in PROXIES:
            raise ValueError(f"unknown proxy {proxy!r}; choose one of {PROXIES}")
        self.proxy = proxy
        if not (0.0 < float(quantile) <= 1.0):
            raise ValueError(f"quantile must be in (0, 1], got {quantile!r}")
        self.quantile = float(quantile)
        self.window = _count("window", window, 1)
        self.warmup = _count("warmup", warmup, 0)
        if proxy == "variation" and self.warmup < self.window:
            raise ValueError(f"warmup ({self.warmup}) must be >= window ({self.window}) to measure the reference V_ref")
        for name, rate in (("fast", fast), ("slow", slow), ("smoothing", smoothing)):
            if not (0.0 < float(rate) <= 1.0):
                raise ValueError(f"{name} must be an EMA weight in (0, 1], got {rate!r}")
        if float(slow) >= float(fast) and proxy == "ema_ratio":
            raise ValueError(f"the slow EMA weight ({slow}) must be below the fast one ({fast})")
        self.fast, self.slow, self.smoothing = float(fast), float(slow), float(smoothing)
        self.reset()

    # --------------------------------------------------------------------------------------------- state
    def reset(self) -> None:
        """Forget everything (a new run): the next update starts warm-up again."""
        self.steps = 0
        self._shape: tuple[int, ...] | None = None
        self._alpha: np.ndarray | None = None

    def _init(self, lead: tuple[int, ...]) -> None:
        self._shape = lead
        self._alpha = np.full(lead, self.alpha_base)
        self._last_q = np.zeros(lead)
        self._ring = np.zeros((self.window, *lead))  # |q_j - q_{j-1}|, the last `window` of them
        self._ring_sum = np.zeros(lead)
        self._fast = np.zeros(lead)
        self._slow = np.zeros(lead)
        self._ref = np.full(lead, np.nan)
        self._value = np.zeros(lead)

    @property
    def alpha(self) -> float | np.ndarray:
        """The current entropy weight (alpha_base before the first update)."""
        if self._alpha is None:
            return self.alpha_base
        return float(self._alpha) if self._alpha.ndim == 0 else self._alpha.copy()

    @property
    def ratio(self) -> float | np.ndarray:
        """V_t / V_ref (NaN during warm-up): the normalised drift proxy the rule takes the square root of."""
        if self._alpha is None or self.steps <= self.warmup:
            return float("nan") if not self._shape else np.full(self._shape, np.nan)
        r = self._value / self._ref
        return float(r) if r.ndim == 0 else r

    @property
    def in_warmup(self) -> bool:
        return self.steps <= self.warmup

    # -------------------------------------------------------------------------------------------- update
    def update(self, td_errors: np.ndarray) -> float | np.ndarray:
        """Feed one batch of TD errors (``(batch,)`` or ``(n, batch)``); returns the new alpha."""
        td = np.asarray(td_errors, dtype=float)
        if td.ndim not in (1, 2) or td.shape[-1] == 0:
            raise ValueError(f"td_errors must have shape (batch,) or (n_runs, batch) with batch >= 1, got {td.shape}")
        if not np.isfinite(td).all():
            raise ValueError("td_errors contain NaN or infinite values (a diverged critic?)")
        return self.observe(td_quantile(td, self.quantile))

    def observe(self, q: float | np.ndarray) -> float | np.ndarray:
        """Feed the per-update statistic q_t directly (a scalar, or one per run); returns the new alpha."""
        q = np.asarray(q, dtype=float)
        if not np.isfinite(q).all() or (q < 0).any():
            raise ValueError("the proxy statistic q must be finite and >= 0")
        if self._alpha is None:
            self._init(q.shape)
        elif q.shape != self._shape:
            raise ValueError(f"this schedule tracks runs of shape {self._shape}, got a statistic of shape {q.shape}")
        t = self.steps
        if self.proxy == "variation":
            step = np.abs(q - self._last_q) if t > 0 else np.zeros_like(q)
            slot = t % self.window
            self._ring_sum += step - self._ring[slot]
            self._ring[slot] = step
            self._last_q = q
            self._value = np.maximum(self._ring_sum, 0.0) / min(t + 1, self.window)
        else:
            if t == 0:
                self._fast, self._slow = q.copy(), q.copy()
            else:
                self._fast += self.fast * (q - self._fast)
                self._slow += self.slow * (q - self._slow)
            self._value = self._fast / np.maximum(self._slow, 1e-300)
        self.steps = t + 1
        if self.proxy == "ema_ratio":
            self._ref = np.ones_like(self._value)  # already scale-free: 1 when the TD level is stationary
        elif self.steps == max(self.warmup, 1):
            self._ref = self._value.copy()
        if self.steps <= self.warmup:
            return self.alpha
        ref = np.where(self._ref > 0, self._ref, np.finfo(float).tiny)
        target = np.clip(self.alpha_base * np.sqrt(self._value / ref), self.alpha_min, self.alpha_max)
        self._alpha = self._alpha + self.smoothing * (target - self._alpha)
        return self.alpha

    def __repr__(self) -> str:
        return (
            f"AdaptiveEntropySchedule(alpha_base={self.alpha_base:g}, alpha_min={self.alpha_min:g}, "
            f"alpha_max={self.alpha_max:g}, proxy={self.proxy!r}, quantile={self.quantile:g}, window={self.window}, "
            f"warmup={self.warmup})"
        )
