"""Privacy accounting of one response: pure-DP events under basic composition, checked against dp-accounting.

Every charge of a response (one exponential-mechanism token at eps_t, or a sparse-vector test's eps1 + eps2) is a
pure eps-DP event. The budget that is *enforced* is basic composition, sum_t eps_t <= eps: it stays valid when
eps_t is chosen adaptively from earlier outputs (a pure-DP privacy filter, Rogers et al. 2016), which a decoder
that allocates on the fly needs; delta is not spent (the guarantee is (eps, 0)-DP, so (eps, delta)-DP for every
delta). :meth:`PrivacyLedger.pld_epsilon` reports the tighter eps(delta) of the same events composed
non-adaptively with Google's ``dp_accounting`` privacy-loss distributions, each event given the dominating pair
of an eps-DP mechanism (``from_privacy_parameters``); it is information, never the budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["BudgetExceededError", "PrivacyLedger", "kov_delta", "validate_budget"]


class BudgetExceededError(RuntimeError):
    """A charge that would take the response over its epsilon."""


def validate_budget(epsilon: float, delta: float) -> None:
    if not (isinstance(epsilon, int | float) and math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}")
    if not (isinstance(delta, int | float) and 0 < delta < 1):
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")


@dataclass
class PrivacyLedger:
    """The charges of one response against a total (epsilon, delta)."""

    epsilon: float
    delta: float = 1e-5
    events: list[tuple[str, float]] = field(default_factory=list)
    _slack: float = 1e-12  # float round-off when an allocator hands out exactly what is left

    def __post_init__(self) -> None:
        validate_budget(self.epsilon, self.delta)

    @property
    def spent(self) -> float:
        return math.fsum(e for _, e in self.events)

    @property
    def remaining(self) -> float:
        return max(0.0, self.epsilon - self.spent)

    def charge(self, eps: float, what: str) -> None:
        if not (math.isfinite(eps) and eps >= 0):
            raise ValueError(f"a charge must be a finite epsilon >= 0, got {eps!r}")
        if self.spent + eps > self.epsilon + self._slack:
            raise BudgetExceededError(
                f"charging {eps:.4g} for {what} would spend {self.spent + eps:.6g} > {self.epsilon}"
            )
        if eps > 0:
            self.events.append((what, float(eps)))

    def pld_epsilon(self, delta: float | None = None) -> float:
        """eps(delta) of the recorded events composed with dp_accounting's PLD (non-adaptive), capped by ``spent``
        (basic composition is also an (eps, delta) bound; the PLD's pessimistic discretisation can exceed it by
        ~1e-4 when the composition is tight)."""
        if not self.events:
            return 0.0
        from dp_accounting.pld import privacy_loss_distribution as pld
        from dp_accounting.pld.common import DifferentialPrivacyParameters

        total = None
        for _, eps in self.events:
            one = pld.from_privacy_parameters(DifferentialPrivacyParameters(eps, 0.0))
            total = one if total is None else total.compose(one)
        return min(self.spent, float(total.get_epsilon_for_delta(self.delta if delta is None else delta)))


def kov_delta(eps0: float, k: int, eps: float) -> float:
    """Exact delta(eps) of k-fold composition of eps0-DP (Kairouz, Oh, Viswanath 2015, optimal composition):
    delta = sum_i C(k, i) max(0, e^{eps0 (k - i)} - e^{eps + eps0 i}) / (1 + e^{eps0})^k."""
    log_norm = k * math.log1p(math.exp(eps0))
    total = 0.0
    for i in range(k + 1):
        log_c = math.lgamma(k + 1) - math.lgamma(i + 1) - math.lgamma(k - i + 1)
        a, b = eps0 * (k - i), eps + eps0 * i
        if a > b:
            total += math.exp(log_c + a - log_norm) * -math.expm1(b - a)
    return total
