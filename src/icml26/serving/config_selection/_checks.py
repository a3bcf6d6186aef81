"""Argument checks with one clear message each (a user's NaN or "100" never reaches numpy)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["check_budget_vector", "check_choice", "check_int", "check_real"]


def check_int(name: str, value: Any, minimum: int) -> int:
    """An integer >= minimum (bools, floats such as 100.5 or 100.0, and strings are refused)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_real(name: str, value: Any, minimum: float = 0.0, strict: bool = False) -> float:
    """A finite real number >= minimum (> minimum with ``strict``); NaN, infinities and strings are refused."""
    ok = isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)
    if ok:
        value = float(value)
        ok = math.isfinite(value) and (value > minimum if strict else value >= minimum)
    if not ok:
        relation = ">" if strict else ">="
        raise ValueError(f"{name} must be a finite number {relation} {minimum}, got {value!r}")
    return value


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(repr(c) for c in choices)}, got {value!r}")
    return str(value)


def check_budget_vector(b: Any) -> np.ndarray:
    """A non-empty 1-D vector of positive finite per-period budgets."""
    try:
        arr = np.atleast_1d(np.asarray(b, dtype=float))
    except (TypeError, ValueError):
        raise ValueError(f"b must be a vector of positive finite budgets, got {b!r}") from None
    if arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"b must be a vector of positive finite budgets, got {b!r}")
    return arr
