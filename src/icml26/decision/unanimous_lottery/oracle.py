"""Stakeholders and the accept/reject query oracle.

Our reading of the model (the abstract does not formalise it): a lottery is a point p of the simplex Δ_m over
m options; stakeholder i has private utilities u_i in R^m and a bar τ_i and accepts p iff u_i·p >= τ_i. Since
the coordinates of p sum to one, this is w_i·p >= 0 with w_i = u_i - τ_i 1: each acceptance region is a
halfspace through the simplex, known only up to a positive scale.

The *only* access an algorithm has is :class:`QueryOracle` (or any object with the same methods, see
:class:`Oracle`): it answers yes/no and counts every answer as one query. Batch methods answer many
(stakeholder, lottery) pairs in one vectorised call and count each pair, so that the count is exactly what a
one-at-a-time algorithm would pay, without its Python overhead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["LinearStakeholder", "Oracle", "QueryOracle", "QueryRecord", "as_lottery"]

SIMPLEX_TOL = 1e-9  # how far from the simplex a proposed lottery may be (rounding), in each coordinate and the sum


def as_lottery(p: ArrayLike, n_options: int | None = None, name: str = "lottery") -> np.ndarray:
    """``p`` as a float vector, after checking it is a probability vector (ValueError says what is wrong)."""
    x = np.asarray(p, dtype=float)
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-d vector of probabilities, got shape {x.shape}")
    if n_options is not None and x.size != n_options:
        raise ValueError(f"{name} has {x.size} entries but the menu has {n_options} options")
    _check_probabilities(x[None, :], name)
    return x


def _check_probabilities(rows: np.ndarray, name: str) -> None:
    if not np.all(np.isfinite(rows)):
        raise ValueError(f"{name} must be finite")
    if np.any(rows < -SIMPLEX_TOL):
        raise ValueError(f"{name} has a negative probability ({rows.min():.3g}); a lottery lies in the simplex")
    sums = rows.sum(axis=1)
    if np.any(np.abs(sums - 1.0) > SIMPLEX_TOL * rows.shape[1] + SIMPLEX_TOL):
        bad = sums[np.argmax(np.abs(sums - 1.0))]
        raise ValueError(f"{name} must sum to 1 (a probability vector), got a sum of {bad:.6g}")


class LinearStakeholder:
    """A stakeholder who accepts a lottery p iff ``u·p >= tau`` (utilities ``u`` over the m options, bar ``tau``)."""

    __slots__ = ("_tau", "_u")

    def __init__(self, u: ArrayLike, tau: float) -> None:
        u_arr = np.array(u, dtype=float)
        if u_arr.ndim != 1 or u_arr.size == 0:
            raise ValueError(f"u must be a non-empty vector of utilities (one per option), got shape {u_arr.shape}")
        if not (np.all(np.isfinite(u_arr)) and np.isfinite(tau)):
            raise ValueError("utilities and the bar tau must be finite")
        u_arr.setflags(write=False)
        self._u, self._tau = u_arr, float(tau)

    @property
    def u(self) -> np.ndarray:
        return self._u

    @property
    def tau(self) -> float:
        return self._tau

    @property
    def n_options(self) -> int:
        return self._u.size

    def accepts(self, p: ArrayLike) -> bool:
        return bool(self._u @ as_lottery(p, self.n_options) >= self._tau)

    def __repr__(self) -> str:
        return f"LinearStakeholder(u={self._u.tolist()}, tau={self._tau})"


class Oracle(Protocol):
    """What the algorithms may call; nothing else about the stakeholders is visible to them."""

    @property
    def n_stakeholders(self) -> int: ...

    def ask_each(self, stakeholders: ArrayLike, lotteries: ArrayLike) -> np.ndarray:
        """Does stakeholder ``stakeholders[k]`` accept ``lotteries[k]``? One query per pair."""
        ...

    def ask_all(self, stakeholders: ArrayLike, lottery: ArrayLike) -> np.ndarray:
        """Does each of ``stakeholders`` accept the one ``lottery``? One query per stakeholder."""
        ...

    def first_rejection(self, stakeholders: ArrayLike, lottery: ArrayLike) -> int | None:
        """Ask ``stakeholders`` in turn about ``lottery`` and stop at the first rejection (returned; None if all
        accept). Counts the queries asked up to and including that rejection."""
        ...


@dataclass(frozen=True)
class QueryRecord:
    """One oracle call: who was asked, about which lottery (one row per asked stakeholder, or one shared
    lottery), and the answers."""

    stakeholders: np.ndarray
    lotteries: np.ndarray
    answers: np.ndarray

    @property
    def n_queries(self) -> int:
        return int(self.stakeholders.size)


class QueryOracle:
    """Answers accept/reject queries of linear stakeholders, and counts and logs every one.

    ``QueryOracle(stakeholders)`` takes :class:`LinearStakeholder` objects; :meth:`from_arrays` takes the
    stacked utilities (n, m) and bars (n,). The ground truth is private: algorithms see only the methods of
    :class:`Oracle`. Set ``log=False`` to keep counts but not the per-call record (long benchmarks).
    """

    def __init__(self, stakeholders: Sequence[LinearStakeholder], *, log: bool = True) -> None:
        stakeholders = list(stakeholders)
        if not stakeholders:
            raise ValueError("no stakeholders: the oracle needs at least one")
        if any(not isinstance(s, LinearStakeholder) for s in stakeholders):
            raise ValueError("stakeholders must be LinearStakeholder objects (or use QueryOracle.from_arrays)")
        sizes = {s.n_options for s in stakeholders}
        if len(sizes) != 1:
            raise ValueError(f"stakeholders disagree on the number of options: {sorted(sizes)}")
        self._init(np.stack([s.u for s in stakeholders]), np.array([s.tau for s in stakeholders]), log)

    @classmethod
    def from_arrays(cls, utilities: ArrayLike, thresholds: ArrayLike, *, log: bool = True) -> QueryOracle:
        U = np.array(utilities, dtype=float)
        tau = np.array(thresholds, dtype=float)
        if U.ndim != 2 or U.shape[0] == 0:
            raise ValueError(f"utilities must be (n_stakeholders >= 1, n_options), got shape {U.shape}")
        if U.shape[1] == 0:
            raise ValueError("the menu is empty: utilities need at least one option")
        if tau.shape != (U.shape[0],):
            raise ValueError(f"thresholds must have one bar per stakeholder ({U.shape[0]}), got shape {tau.shape}")
        if not (np.all(np.isfinite(U)) and np.all(np.isfinite(tau))):
            raise ValueError("utilities and thresholds must be finite")
        oracle = cls.__new__(cls)
        oracle._init(U, tau, log)
        return oracle

    def _init(self, U: np.ndarray, tau: np.ndarray, log: bool) -> None:
        self._utilities, self._thresholds = U, tau
        self._counts = np.zeros(U.shape[0], dtype=np.int64)
        self._log_enabled = log
        self.log: list[QueryRecord] = []

    @property
    def n_stakeholders(self) -> int:
        return self._utilities.shape[0]

    @property
    def n_options(self) -> int:
        return self._utilities.shape[1]

    @property
    def n_queries(self) -> int:
        return int(self._counts.sum())

    @property
    def queries_by_stakeholder(self) -> np.ndarray:
        return self._counts.copy()

    def reset(self) -> None:
        """Forget the counts and the log (the stakeholders stay)."""
        self._counts[:] = 0
        self.log.clear()

    def _indices(self, stakeholders: ArrayLike) -> np.ndarray:
        idx = np.asarray(stakeholders)
        if idx.ndim == 0:
            idx = idx[None]
        if idx.size and (not np.issubdtype(idx.dtype, np.integer) or idx.min() < 0 or idx.max() >= self.n_stakeholders):
            raise ValueError(f"stakeholder indices must be integers in [0, {self.n_stakeholders})")
        return idx.astype(np.intp, copy=False)

    def _record(self, idx: np.ndarray, lotteries: np.ndarray, answers: np.ndarray) -> None:
        np.add.at(self._counts, idx, 1)
        if self._log_enabled:
            self.log.append(QueryRecord(idx.copy(), lotteries.copy(), answers.copy()))

    def ask(self, stakeholder: int, lottery: ArrayLike) -> bool:
        """Does one stakeholder accept one lottery? (One query.)"""
        return bool(self.ask_all([stakeholder], lottery)[0])

    def ask_each(self, stakeholders: ArrayLike, lotteries: ArrayLike) -> np.ndarray:
        idx = self._indices(stakeholders)
        P = np.asarray(lotteries, dtype=float)
        if P.shape != (idx.size, self.n_options):
            raise ValueError(f"need one lottery of {self.n_options} options per stakeholder, got shape {P.shape}")
        _check_probabilities(P, "lottery")
        answers = np.einsum("km,km->k", self._utilities[idx], P) >= self._thresholds[idx]
        self._record(idx, P, answers)
        return answers

    def ask_all(self, stakeholders: ArrayLike, lottery: ArrayLike) -> np.ndarray:
        idx = self._indices(stakeholders)
        p = as_lottery(lottery, self.n_options)
        answers = self._utilities[idx] @ p >= self._thresholds[idx]
        self._record(idx, p, answers)
        return answers

    def first_rejection(self, stakeholders: ArrayLike, lottery: ArrayLike) -> int | None:
        idx = self._indices(stakeholders)
        p = as_lottery(lottery, self.n_options)
        # Answer everyone at once, then charge only the prefix a sequential scan would have asked.
        rejects = self._utilities[idx] @ p < self._thresholds[idx]
        first = int(np.argmax(rejects)) if rejects.any() else idx.size
        asked = idx[: first + 1]
        self._record(asked, p, ~rejects[: first + 1])
        return int(idx[first]) if first < idx.size else None

    def __repr__(self) -> str:
        return (
            f"QueryOracle(n_stakeholders={self.n_stakeholders}, n_options={self.n_options}, queries={self.n_queries})"
        )
