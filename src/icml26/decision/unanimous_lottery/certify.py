"""Independent checks of an answer against the ground truth (the stakeholders themselves, not the oracle's log).

- A returned lottery must be a probability vector accepted by every stakeholder: u_i·p >= τ_i for all i.
- A ``"vertex"`` certificate: its stakeholder's utilities are all below its bar (it rejects every option).
- An ``"exact"`` certificate: (a) the LP on the *true* constraints of its stakeholders has no solution
  (max-slack s* < 0), and (b) its multipliers combine the true constraints, each scaled so that its anchor
  coefficient has magnitude 1, into a vector that is negative on every option (Farkas).
- A ``"thin"`` certificate (an answer *undetermined at ε*) must not be vacuous: (a) its ``band`` is finite and
  at most VACUOUS_BAND·ε (a wider band says nothing at precision ε; the elicitation guarantees 4ε), (b) every
  true constraint lies inside its learned box (the answers were read correctly), and (c) the LP on the true
  constraints of its stakeholders, anchor-normalised, has no lottery that clears every bar by more than
  ``band`` (the true constraints do not contradict it): the documented ε-semantics.

The same LP on all n true constraints says whether the instance is in truth feasible (``true_slack``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from icml26.decision.unanimous_lottery.algorithms import InfeasibilityCertificate, LotteryResult
from icml26.decision.unanimous_lottery.elicit import WIDTH
from icml26.decision.unanimous_lottery.lp import max_min_value, max_slack_point
from icml26.decision.unanimous_lottery.oracle import LinearStakeholder

__all__ = [
    "VACUOUS_BAND",
    "CheckReport",
    "check_certificate",
    "check_lottery",
    "check_result",
    "true_constraints",
    "true_slack",
]

TOL = 1e-9
VACUOUS_BAND = 2 * WIDTH  # a thin certificate whose band exceeds this many eps certifies nothing at eps


@dataclass(frozen=True)
class CheckReport:
    """``valid``: the answer holds against the ground truth; ``reason``: why (or why not), one line."""

    valid: bool
    reason: str


def true_constraints(stakeholders: Sequence[LinearStakeholder] | tuple[ArrayLike, ArrayLike]) -> np.ndarray:
    """The rows w_i = u_i - τ_i 1, from stakeholders or from a pair (utilities (n, m), thresholds (n,))."""
    if (
        isinstance(stakeholders, tuple)
        and len(stakeholders) == 2
        and not isinstance(stakeholders[0], LinearStakeholder)
    ):
        U, tau = (np.asarray(a, dtype=float) for a in stakeholders)
    else:
        U = np.stack([s.u for s in stakeholders])
        tau = np.array([s.tau for s in stakeholders])
    return U - tau[:, None]


def true_slack(W: np.ndarray) -> float:
    """max over lotteries of the smallest slack w_i·p / ||P w_i||: >= 0 iff some lottery is accepted by all."""
    return max_slack_point(np.asarray(W, float), facets=False).slack


def check_lottery(lottery: ArrayLike, W: np.ndarray) -> CheckReport:
    p = np.asarray(lottery, dtype=float)
    if p.shape != (W.shape[1],) or np.any(p < -TOL) or abs(p.sum() - 1) > TOL:
        return CheckReport(False, f"not a lottery over {W.shape[1]} options: {p}")
    values = W @ p
    worst = int(np.argmin(values))
    if values[worst] < 0:
        return CheckReport(False, f"stakeholder {worst} rejects the lottery (u·p - tau = {values[worst]:.3g})")
    return CheckReport(True, f"accepted by all {W.shape[0]} stakeholders (smallest u·p - tau = {values[worst]:.3g})")


def _anchor_normalised(cert: InfeasibilityCertificate, W: np.ndarray) -> np.ndarray:
    rows = W[list(cert.stakeholders)]
    scale = np.abs(rows[np.arange(len(rows)), cert.constraints.anchor])
    if np.any(scale == 0):
        raise ValueError("a certificate's anchor coefficient is zero in truth: its scale is meaningless")
    return rows / scale[:, None]


def check_certificate(cert: InfeasibilityCertificate, W: np.ndarray) -> CheckReport:
    if not cert.stakeholders:
        return CheckReport(False, "a certificate must name at least one stakeholder")
    if cert.kind == "vertex":
        (i,) = cert.stakeholders
        ok = bool(np.all(W[i] < 0))
        return CheckReport(ok, f"stakeholder {i} {'rejects' if ok else 'does not reject'} every option")
    try:
        Wn = _anchor_normalised(cert, W)
    except ValueError as exc:
        return CheckReport(False, str(exc))
    slack = max_slack_point(Wn, facets=False).slack
    if cert.kind == "exact":
        combined = cert.multipliers @ Wn if cert.multipliers is not None else np.zeros(W.shape[1])
        farkas = cert.multipliers is not None and bool(np.all(cert.multipliers >= 0)) and combined.max() < 0
        ok = bool(slack < 0 and farkas)
        return CheckReport(ok, f"true max-slack {slack:.3g} (< 0 needed); Farkas max {combined.max():.3g} (< 0 needed)")
    if not np.isfinite(cert.band):  # a learned coefficient is unbounded: the band statement is vacuous
        return CheckReport(False, f"vacuous thin certificate: its band is {cert.band} (it certifies nothing)")
    if cert.band > VACUOUS_BAND * cert.eps:
        return CheckReport(
            False,
            f"vacuous thin certificate: band {cert.band:.3g} is wider than {VACUOUS_BAND:g} eps = "
            f"{VACUOUS_BAND * cert.eps:.3g}: it says nothing at precision eps",
        )
    lower, upper = cert.constraints.lower, cert.constraints.upper
    scale = 1.0 + np.abs(Wn)
    inside = bool(np.all(Wn >= lower - TOL * scale) and np.all(Wn <= upper + TOL * scale))
    _, best = max_min_value(Wn)  # how far the best lottery clears every true (anchor-normalised) bar
    clears = best > cert.band + TOL
    ok = inside and not clears
    return CheckReport(
        ok,
        f"undetermined at eps = {cert.eps:g}: true constraints {'inside' if inside else 'OUTSIDE'} their boxes; "
        f"{'a' if clears else 'no'} lottery clears every bar by more than band {cert.band:.3g}",
    )


def check_result(
    result: LotteryResult, stakeholders: Sequence[LinearStakeholder] | tuple[ArrayLike, ArrayLike]
) -> CheckReport:
    """Check a :class:`LotteryResult` against the true stakeholders (list, or (utilities, thresholds))."""
    W = true_constraints(stakeholders)
    if result.feasible:
        if result.lottery is None:
            return CheckReport(False, "feasible result without a lottery")
        return check_lottery(result.lottery, W)
    if result.certificate is None:
        return CheckReport(False, "infeasible result without a certificate")
    return check_certificate(result.certificate, W)
