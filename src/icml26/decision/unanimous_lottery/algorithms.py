"""Finding a unanimously acceptable lottery, or certifying that none exists, by accept/reject queries.

**Full elicitation** (the baseline). Elicit every stakeholder (``elicit``), then solve one LP over all the
learned inner constraints: its max-slack point is accepted by everyone by construction. Cost: n times the
cost of one elicitation, nominally m + (m - 1)⌈log2(1/ε)⌉ plus a few refinement halvings (``elicit``).

**Verify-then-elicit** (the adaptive algorithm: a cutting-plane loop). Keep the set S of elicited stakeholders.

1. p <- the Chebyshev centre of S's *inner* constraints within the simplex (``lp.max_slack_point``).
   No centre (the inner constraints leave no lottery): stop with a certificate (below).
2. Ask the stakeholders not in S about p, one after the other; the first who rejects is elicited and added
   to S, and we go back to 1. If nobody rejects, p is accepted by all (S accepts it by construction): done.

Only stakeholders whose constraint cuts off some centre are ever elicited. Each round elicits a stakeholder
never elicited before (elicited ones accept every later centre), so there are at most n + 1 rounds, and
with k elicited, ``queries <= k E + (k + 1) n`` (``query_bound``), E the most one elicitation can cost.

**Randomised.** The same loop, verifying in a uniformly random order (drawn once, as in Seidel's and
Clarkson's randomised incremental LP). On nested "chain" instances, where the rejecters of each centre are a
subset of the previous centre's, the stakeholder elicited at each round is uniform among the current rejecters
(the earlier rounds only say that the elicited ones came first), so the expected number elicited is the
harmonic number H_L ~ ln L instead of L for the adversarial fixed order. (On general instances the
conditional order is not exactly uniform; no such bound is claimed there.)

**Learning-augmented** (``Advice``). (a) An advised lottery p̂ is first asked of all n stakeholders: if all
accept, the cost is exactly n. Otherwise (b) the stakeholders who rejected it, after any advised binding
stakeholders B̂, are elicited first, at most ``budget`` of them (default m), and the loop runs as above, seeded
with them. The worst-case guarantee is kept: with k stakeholders elicited in all (advised ones included,
k <= n), the cost is at most n + k E + (k + 1) n (``query_bound(..., advice_lottery=True)``), the robust
bound plus the n queries of p̂. The cap bounds what advice spends up front (n + budget E). It does *not*
bound the overhead over the unadvised run on the same instance: the seeded loop proposes other centres and
may elicit others (measured, not proven, in the reproduction's C4c/C4d); ``budget=0`` gives exactly
n + the unadvised cost.

**Certificates and the ε-semantics.** When the inner constraints of S leave no lottery:

- ``"vertex"``: a stakeholder rejected all m pure options, hence every lottery (exact);
- ``"exact"``: the *outer* constraints of S (implied by the answers) already exclude every lottery; the LP's
  duals give a Farkas combination sum_i λ_i w_i < 0 of at most m stakeholders (Helly): a proof;
- ``"thin"`` (the answer is *undetermined at ε*, not "infeasible"): the outer constraints leave some lottery
  but the inner ones do not, so the feasible set of S, if any, lies inside the ε-uncertainty of the learned
  boundaries. The statement proved is that no lottery clears every bar of S by more than ``band``, in the scale
  where each stakeholder's largest coefficient is 1: ``band`` is how far the best lottery clears every *outer*
  constraint of S (an LP), at most the widest learned box of S, 4ε (``elicit.WIDTH``) after refinement.
  This is the precise sense in which "a feasible set thinner than ε may be reported infeasible":
  ``result.status == "undetermined"``, never "infeasible".

A returned lottery is never approximate: it was accepted by every non-elicited stakeholder at the last round
and satisfies every elicited one's inner constraint, which implies acceptance.

References
----------
- D. Choo, P. W. Goldberg, N. Teh, "Learning Unanimously Acceptable Lotteries via Queries", ICML 2026
  (arXiv 2604.17505).
- R. Seidel, "Small-dimensional linear programming and convex hulls made easy", Discrete Comput. Geom. 1991.
- K. L. Clarkson, "Las Vegas algorithms for linear and integer programming when the dimension is small",
  J. ACM 1995.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from icml26.decision.unanimous_lottery.elicit import (
    EMPTY,
    LearnedConstraints,
    check_precision,
    elicit_halfspaces,
    max_elicitation_cost,
)
from icml26.decision.unanimous_lottery.lp import max_min_value, max_slack_point
from icml26.decision.unanimous_lottery.oracle import Oracle, as_lottery

__all__ = [
    "METHODS",
    "MIN_SLACK",
    "Advice",
    "InfeasibilityCertificate",
    "LotteryResult",
    "Round",
    "find_unanimous_lottery",
    "inner_centre",
    "query_bound",
]

Method = Literal["deterministic", "randomized", "full"]
METHODS: tuple[str, ...] = ("deterministic", "randomized", "full")
MIN_SLACK = 1e-9  # a centre must clear the inner constraints by this much (floating-point safety)
BAND_TOL = 1e-9  # added to a thin certificate's band: the LP's own tolerance


@dataclass(frozen=True)
class Advice:
    """Predictions for the learning-augmented variants.

    ``lottery``: a lottery likely to be accepted by all; ``binding``: stakeholders likely to bind; ``budget``:
    the most advised stakeholders elicited before the robust loop (default: the number of options m).
    """

    lottery: ArrayLike | None = None
    binding: Sequence[int] | None = None
    budget: int | None = None


@dataclass(frozen=True)
class Round:
    """One verification round: the centre proposed, its max-slack value, who rejected it (None: everyone
    asked accepted), and the cumulative number of queries after the round's scan."""

    lottery: np.ndarray
    slack: float
    rejected_by: int | None
    n_queries: int


@dataclass(frozen=True)
class InfeasibilityCertificate:
    """Why no unanimously acceptable lottery exists (see the module docstring for the three kinds).

    ``constraints`` are the learned boxes of ``stakeholders``; ``multipliers`` the Farkas weights of an
    ``"exact"`` certificate; ``band`` bounds how far any lottery can clear every bar of a ``"thin"`` one.
    ``"vertex"`` and ``"exact"`` prove infeasibility; ``"thin"`` only says the answer is undetermined at ``eps``.
    """

    kind: Literal["vertex", "exact", "thin"]
    stakeholders: tuple[int, ...]
    constraints: LearnedConstraints
    eps: float
    multipliers: np.ndarray | None = None
    band: float = 0.0

    @property
    def statement(self) -> str:
        who = list(self.stakeholders)
        if self.kind == "vertex":
            return f"stakeholder {who[0]} rejects every pure option, hence every lottery"
        if self.kind == "exact":
            return f"the constraints implied by the answers of stakeholders {who} exclude every lottery"
        return (
            f"undetermined at eps = {self.eps:g}: no lottery clears every bar of stakeholders {who} by more than "
            f"{self.band:.3g} (each one's largest coefficient scaled to 1), so a unanimously acceptable lottery, "
            "if any exists, lies within the precision of the learned boundaries"
        )


@dataclass(frozen=True)
class LotteryResult:
    """The outcome, in the style of ``scipy.optimize.OptimizeResult``.

    ``feasible``: a unanimously acceptable ``lottery`` was found (else ``certificate`` says why none was, and
    ``status`` whether that is a proof of infeasibility or an answer undetermined at ε); ``n_queries``:
    accept/reject queries asked; ``elicited``: stakeholders whose constraint was learned, in order;
    ``history``: the verification rounds; ``message``: one line for humans.
    """

    feasible: bool
    lottery: np.ndarray | None
    certificate: InfeasibilityCertificate | None
    n_queries: int
    elicited: tuple[int, ...]
    history: tuple[Round, ...] = field(repr=False)
    method: str
    message: str

    @property
    def status(self) -> Literal["feasible", "infeasible", "undetermined"]:
        """``"feasible"`` (a lottery all accept), ``"infeasible"`` (a proof: vertex or exact certificate) or
        ``"undetermined"`` (a thin certificate: any feasible set is thinner than the precision eps)."""
        if self.feasible:
            return "feasible"
        return "undetermined" if self.certificate is not None and self.certificate.kind == "thin" else "infeasible"

    @property
    def success(self) -> bool:
        """The algorithm terminated with an answer (always, for these algorithms)."""
        return self.feasible or self.certificate is not None

    @property
    def n_elicited(self) -> int:
        return len(self.elicited)

    @property
    def n_rounds(self) -> int:
        return len(self.history)


def query_bound(
    n_stakeholders: int,
    n_options: int,
    eps: float,
    method: str = "deterministic",
    n_elicited: int | None = None,
    advice_lottery: bool = False,
) -> int:
    """The proven upper bound on queries (the worst case over instances, or given the number elicited).

    Full elicitation: n E with E = ``max_elicitation_cost`` (the nominal m + (m - 1)⌈log2(1/ε)⌉ plus the
    refinement cap). Adaptive (any order, with or without advised stakeholders): k E + (k + 1) n for k
    elicited (k <= n), plus n if an advised lottery was asked first.
    """
    n, E = int(n_stakeholders), max_elicitation_cost(n_options, eps)
    if method == "full":
        return n * E
    k = n if n_elicited is None else int(n_elicited)
    return (n if advice_lottery else 0) + k * E + (k + 1) * n


class _Counted:
    """Wraps any oracle and counts, on the algorithm's side, exactly the queries the algorithm asks."""

    def __init__(self, oracle: Oracle) -> None:
        self.oracle, self.n_queries = oracle, 0

    def ask_each(self, stakeholders: ArrayLike, lotteries: ArrayLike) -> np.ndarray:
        answers = np.asarray(self.oracle.ask_each(stakeholders, lotteries), dtype=bool)
        self.n_queries += answers.size
        return answers

    def ask_all(self, stakeholders: ArrayLike, lottery: ArrayLike) -> np.ndarray:
        answers = np.asarray(self.oracle.ask_all(stakeholders, lottery), dtype=bool)
        self.n_queries += answers.size
        return answers

    def first_rejection(self, stakeholders: np.ndarray, lottery: np.ndarray) -> int | None:
        j = self.oracle.first_rejection(stakeholders, lottery)
        self.n_queries += stakeholders.size if j is None else int(np.flatnonzero(stakeholders == j)[0]) + 1
        return None if j is None else int(j)


# ------------------------------------------------------------------------------------------------- validation
def _validate(oracle: Oracle, n_options: int, eps: float, method: str) -> tuple[int, int, float]:
    if isinstance(n_options, bool) or not isinstance(n_options, int | np.integer):
        raise ValueError(f"n_options must be an integer (the size of the menu), got {n_options!r}")
    if n_options < 1:
        raise ValueError("the menu is empty: n_options must be >= 1")
    declared = getattr(oracle, "n_options", None)
    if declared is not None and declared != n_options:
        raise ValueError(f"n_options = {n_options} but the oracle's stakeholders rank {declared} options")
    n = int(oracle.n_stakeholders)
    if n < 1:
        raise ValueError("no stakeholders: there must be at least one")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    return n, int(n_options), check_precision(eps)


def _validate_advice(advice: Advice, n: int, m: int) -> tuple[np.ndarray | None, np.ndarray, int]:
    if not isinstance(advice, Advice):
        raise ValueError(f"advice must be an Advice(lottery=..., binding=..., budget=...), got {type(advice).__name__}")
    lottery = None if advice.lottery is None else as_lottery(advice.lottery, m, name="advised lottery")
    binding = np.zeros(0, np.intp)
    if advice.binding is not None:
        b = np.asarray(advice.binding)
        if b.ndim != 1 or (b.size and (not np.issubdtype(b.dtype, np.integer) or b.min() < 0 or b.max() >= n)):
            raise ValueError(f"advised binding stakeholders must be indices in [0, {n}), got {advice.binding!r}")
        binding = b.astype(np.intp)
    budget = m if advice.budget is None else advice.budget
    if isinstance(budget, bool) or not isinstance(budget, int | np.integer) or budget < 0:
        raise ValueError(f"advice budget must be a non-negative integer, got {advice.budget!r}")
    return lottery, binding, int(budget)


# ---------------------------------------------------------------------------------------- centres, certificates
def _inner_rows(learned: LearnedConstraints) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the inner constraints w⁻·p >= 0, with options of infinite negative weight forbidden (p_j = 0)."""
    lower = learned.cuts().lower
    forbidden = np.isneginf(lower).any(axis=0)
    return np.where(np.isneginf(lower), 0.0, lower), forbidden


def inner_centre(learned: LearnedConstraints) -> tuple[np.ndarray | None, float]:
    """The Chebyshev centre of the inner region; if it is flat against the simplex's boundary, its max-slack
    point; None if the inner region is empty."""
    W, forbidden = _inner_rows(learned)
    sol = max_slack_point(W, facets=True, forbidden=forbidden)
    if sol.slack < MIN_SLACK:
        sol = max_slack_point(W, facets=False, forbidden=forbidden)
    return (sol.p, sol.slack) if sol.slack >= MIN_SLACK else (None, sol.slack)


def _vertex_certificate(learned: LearnedConstraints, eps: float) -> InfeasibilityCertificate:
    row = int(np.flatnonzero(learned.kind == EMPTY)[0])
    return InfeasibilityCertificate("vertex", (int(learned.stakeholders[row]),), learned.select([row]), eps)


def _infeasibility_certificate(learned: LearnedConstraints, eps: float) -> InfeasibilityCertificate:
    """An "exact" certificate if the outer constraints already exclude every lottery, else a "thin" one."""
    cuts = learned.cuts()
    outer = cuts.select(np.isfinite(cuts.upper).all(axis=1))
    if len(outer):
        sol = max_slack_point(outer.upper, facets=False)
        if sol.slack < 0:
            lam = sol.multipliers
            support = lam > 1e-9 * lam.max()
            return InfeasibilityCertificate(
                "exact",
                tuple(int(i) for i in outer.stakeholders[support]),
                outer.select(support),
                eps,
                multipliers=lam[support] / lam[support].sum(),
            )
    # the band: how far the best lottery clears every *outer* constraint (true w <= w⁺ coordinate-wise, so no
    # lottery clears the true bars by more). The inner constraints admit no lottery, so it is at most the
    # widest box of S (<= 4 eps), plus the LP's floating-point slack. Rows with an unbounded coefficient are
    # left out (fewer rows: a larger, still valid band; infinite if none is left).
    _, band = max_min_value(outer.upper)
    band = max(band, 0.0) + BAND_TOL if math.isfinite(band) else math.inf
    return InfeasibilityCertificate("thin", tuple(int(i) for i in cuts.stakeholders), cuts, eps, band=band)


# ------------------------------------------------------------------------------------------------- algorithms
def find_unanimous_lottery(
    oracle: Oracle,
    n_options: int,
    eps: float = 1e-3,
    method: Method = "deterministic",
    advice: Advice | None = None,
    rng: np.random.Generator | int | None = None,
) -> LotteryResult:
    """Find a lottery over ``n_options`` options that every stakeholder accepts, or certify that none exists.

    Parameters
    ----------
    oracle: answers accept/reject queries (:class:`QueryOracle`, or any object with its query methods).
    n_options: the size m of the menu.
    eps: precision in (0, 1]: each learned boundary is located to ``eps`` along its elicitation edges.
    method: ``"deterministic"`` (verify in index order), ``"randomized"`` (a random order) or ``"full"``
        (elicit everyone, then one LP).
    advice: :class:`Advice` for the learning-augmented variants (adaptive methods only).
    rng: a ``numpy.random.Generator`` or seed, for ``"randomized"`` only (the other methods are deterministic
        and refuse one, rather than silently ignore it).
    """
    n, m, eps = _validate(oracle, n_options, eps, method)
    if rng is not None and method != "randomized":
        raise ValueError(f"rng is used only by method='randomized'; method={method!r} is deterministic (pass rng=None)")
    if advice is not None and method == "full":
        raise ValueError("advice is used by the adaptive methods only, not by method='full'")
    counted = _Counted(oracle)
    if method == "full":
        return _full_elicitation(counted, n, m, eps)
    order = np.random.default_rng(rng).permutation(n) if method == "randomized" else np.arange(n)
    return _verify_then_elicit(counted, n, m, eps, order, method, advice)


def _full_elicitation(oracle: _Counted, n: int, m: int, eps: float) -> LotteryResult:
    learned = elicit_halfspaces(oracle, np.arange(n), m, eps)
    elicited = tuple(range(n))
    if (learned.kind == EMPTY).any():
        cert = _vertex_certificate(learned, eps)
        return _infeasible(cert, oracle, elicited, (), "full")
    p, slack = inner_centre(learned)
    history = (Round(p, slack, None, oracle.n_queries),) if p is not None else ()
    if p is None:
        return _infeasible(_infeasibility_certificate(learned, eps), oracle, elicited, history, "full")
    return _feasible(p, oracle, elicited, history, "full")


def _verify_then_elicit(
    oracle: _Counted, n: int, m: int, eps: float, order: np.ndarray, method: str, advice: Advice | None
) -> LotteryResult:
    learned = LearnedConstraints.concatenate([], m)
    is_elicited = np.zeros(n, bool)
    elicited: list[int] = []
    history: list[Round] = []
    name = method if advice is None else f"{method}+advice"

    def elicit(who: np.ndarray) -> bool:
        """Learn ``who``; False if one of them rejects every option (the search is over)."""
        nonlocal learned
        new = elicit_halfspaces(oracle, who, m, eps)
        learned = LearnedConstraints.concatenate([learned, new], m)
        is_elicited[who] = True
        elicited.extend(int(i) for i in who)
        return not (new.kind == EMPTY).any()

    if advice is not None:
        hint, binding, budget = _validate_advice(advice, n, m)
        advised = binding
        if hint is not None:
            accepted = oracle.ask_all(np.arange(n), hint)
            history.append(
                Round(hint, math.nan, None if accepted.all() else int(np.argmin(accepted)), oracle.n_queries)
            )
            if accepted.all():
                return _feasible(hint, oracle, (), tuple(history), name)
            advised = np.concatenate([binding, np.flatnonzero(~accepted)])
        advised = advised[np.sort(np.unique(advised, return_index=True)[1])][:budget]  # unique, in advised order
        if advised.size and not elicit(advised):
            return _infeasible(_vertex_certificate(learned, eps), oracle, tuple(elicited), tuple(history), name)

    for _ in range(n + 1):  # every round but the last elicits someone new: at most n + 1 rounds
        p, slack = inner_centre(learned)
        if p is None:
            cert = _infeasibility_certificate(learned, eps)
            return _infeasible(cert, oracle, tuple(elicited), tuple(history), name)
        rejecter = oracle.first_rejection(order[~is_elicited[order]], p)
        history.append(Round(p, slack, rejecter, oracle.n_queries))
        if rejecter is None:
            return _feasible(p, oracle, tuple(elicited), tuple(history), name)
        if not elicit(np.array([rejecter])):
            return _infeasible(_vertex_certificate(learned, eps), oracle, tuple(elicited), tuple(history), name)
    raise RuntimeError("verify-then-elicit exceeded n + 1 rounds: an elicited stakeholder rejected a centre")


def _feasible(p: np.ndarray, oracle: _Counted, elicited: tuple[int, ...], history: tuple[Round, ...], method: str):  # type: ignore[no-untyped-def]
    msg = f"found a unanimously acceptable lottery with {oracle.n_queries} queries ({len(elicited)} elicited)"
    return LotteryResult(True, p, None, oracle.n_queries, elicited, history, method, msg)


def _infeasible(  # type: ignore[no-untyped-def]
    cert: InfeasibilityCertificate, oracle: _Counted, elicited: tuple[int, ...], history: tuple[Round, ...], method
):
    asked = f"{cert.kind} certificate, {oracle.n_queries} queries"
    if cert.kind == "thin":
        msg = f"undetermined at eps = {cert.eps:g} ({asked}): {cert.statement}"
    else:
        msg = f"no unanimously acceptable lottery ({asked}): {cert.statement}"
    return LotteryResult(False, None, cert, oracle.n_queries, elicited, history, method, msg)
