"""Unanimously acceptable lotteries by accept/reject queries (Choo, Goldberg, Teh, ICML 2026).

Problem (our reading; the abstract does not formalise it). m options; a lottery is p in the simplex Δ_m.
Stakeholder i has private utilities u_i in R^m and a bar τ_i and accepts p iff u_i·p >= τ_i, i.e.
w_i·p >= 0 with w_i = u_i - τ_i 1: a halfspace through the simplex. The only access is a query "does i
accept p?"; the cost is the number of queries. Output: a p that all n accept, or a certificate that none does.

1. **Elicit one stakeholder** (``elicit``): ask the m vertices, then bisect m - 1 accepted-rejected edges of a
   spanning tree to width ε: nominally m + (m - 1)⌈log2(1/ε)⌉ queries. Each bracket bounds the log ratio of
   two coefficients, so the answers pin w_i, scaled so that its largest coefficient (the anchor) has
   magnitude 1, inside a box [w⁻, w⁺]: w⁻·p >= 0 implies acceptance (inner), acceptance implies w⁺·p >= 0
   (outer). Edges whose crossing sits near a vertex pin their ratio poorly, so they are halved further until
   every coordinate of the box is at most 4ε wide: the inner constraint then loses at most 4ε of slack, and
   a family whose feasible lotteries clear every bar by more than that is always solved.
2. **Full elicitation** (baseline): elicit all n, solve one LP (``lp``).
3. **Verify-then-elicit** (``algorithms``): propose the Chebyshev centre of the elicited inner constraints; ask
   the others in order; elicit the first who rejects; repeat. Stop when all accept, or when the inner
   constraints leave no lottery: then the outer constraints prove infeasibility (``"exact"``, with Farkas
   multipliers on <= m stakeholders), or the answer is *undetermined at ε* (``"thin"``: no lottery clears
   every bar by more than a stated band <= 4ε, so any feasible set is thinner than the precision).
   ``result.status`` says which: ``"feasible"``, ``"infeasible"`` (a proof) or ``"undetermined"``.
   Randomised: a uniformly random order (the only method that takes an ``rng``), so that on nested chains the
   expected number elicited is H_L ~ ln L instead of L.
4. **Learning-augmented** (``Advice``): ask everyone about an advised lottery first (exactly n queries if it
   is right), then elicit at most ``budget`` advised or rejecting stakeholders before the robust loop: advice
   spends at most n + budget·E queries up front (E: one elicitation's cost) and the worst-case bound grows
   by n only (``query_bound``); the overhead over the unadvised run on the same instance is not bounded by the cap
   (the seeded loop follows another path), only measured.
5. **Lower bounds** (shown, never "verified"): Ω(n), since every stakeholder must be asked about the returned
   lottery; Ω(log 1/ε), since an ε-wide window at an unknown position needs log2(1/ε) bits of answers.

What the abstract leaves open and we chose: single-stakeholder queries (batched only as a vectorised
implementation detail, each pair counted); ε as the bracket width along elicitation edges (refined until
every learned coefficient is within 4ε of the truth, in units of the largest), with the three certificate
kinds above; the Chebyshev centre (Euclidean, within the simplex's plane) as centring rule;
one uniformly random verification order as the randomisation; advice as a lottery and/or a binding set, capped.
The notes' "LP margin >= 2ε" is replaced by the inner/outer boxes: elicited stakeholders provably accept every
later centre, so the loop cannot cycle and needs no margin.

References
----------
- D. Choo, P. W. Goldberg, N. Teh, "Learning Unanimously Acceptable Lotteries via Queries", ICML 2026
  (arXiv 2604.17505).
- R. Seidel, "Small-dimensional linear programming and convex hulls made easy", Discrete Comput. Geom. 1991.
- K. L. Clarkson, "Las Vegas algorithms for linear and integer programming when the dimension is small",
  J. ACM 1995.
"""

from icml26.decision.unanimous_lottery.algorithms import (
    METHODS,
    Advice,
    InfeasibilityCertificate,
    LotteryResult,
    Round,
    find_unanimous_lottery,
    inner_centre,
    query_bound,
)
from icml26.decision.unanimous_lottery.certify import (
    CheckReport,
    check_certificate,
    check_lottery,
    check_result,
    true_constraints,
    true_slack,
)
from icml26.decision.unanimous_lottery.elicit import (
    LearnedConstraints,
    bisection_steps,
    elicit_halfspace,
    elicit_halfspaces,
    elicitation_cost,
    max_elicitation_cost,
)
from icml26.decision.unanimous_lottery.instances import (
    Instance,
    adversarial_binding,
    adversarial_order,
    chain,
    narrow_window,
    perturbed_lottery,
    random_feasible,
    random_infeasible,
    true_binding,
    wrong_vertex,
)
from icml26.decision.unanimous_lottery.lp import SlackSolution, max_slack_point
from icml26.decision.unanimous_lottery.oracle import LinearStakeholder, Oracle, QueryOracle, QueryRecord

__all__ = [
    "METHODS",
    "Advice",
    "CheckReport",
    "InfeasibilityCertificate",
    "Instance",
    "LearnedConstraints",
    "LinearStakeholder",
    "LotteryResult",
    "Oracle",
    "QueryOracle",
    "QueryRecord",
    "Round",
    "SlackSolution",
    "adversarial_binding",
    "adversarial_order",
    "bisection_steps",
    "chain",
    "check_certificate",
    "check_lottery",
    "check_result",
    "elicit_halfspace",
    "elicit_halfspaces",
    "elicitation_cost",
    "find_unanimous_lottery",
    "inner_centre",
    "max_elicitation_cost",
    "max_slack_point",
    "narrow_window",
    "perturbed_lottery",
    "query_bound",
    "random_feasible",
    "random_infeasible",
    "true_binding",
    "true_constraints",
    "true_slack",
    "wrong_vertex",
]
