"""SP-UCB-OLP: online configuration selection with admission control, against the switching-aware fluid oracle.

Each period t = 1..T the decision maker (1) picks one of K configurations theta (a quantisation, a parallelism, a
fare class), which sets the distribution D_theta of the next request (r, a); (2) sees the request and accepts or
rejects it, under a hard budget sum_t a_t x_t <= B = b T over d resources. Rewards count only when accepted.

Algorithm (Shen, Xu, Glynn, Ye, Jaillet, ICML 2026):

1. Benchmark: V_mix = max_{w in simplex} min_{p >= 0} p.b + sum_theta w_theta g_theta(p)
   = min_{p >= 0} p.b + max_theta g_theta(p), with g_theta(p) = E_theta[(r - p.a)^+]. T V_mix upper-bounds every
   online policy and exceeds T max_theta V_theta whenever mixing configurations over time pays (``oracle``: an
   exact LP over request types, or a certified smooth convex program for atomless ``JitteredRequestDist``s).
2. Saddle point: the mixture w lives on argmax_theta g_theta(p*), is budget-feasible, and p*_j > 0 only on
   binding resources (equilibrium, feasibility, complementarity: ``oracle.saddle_residuals``).
3. SP-UCB-OLP: after K x m observe-only warm-start rounds, every 10 periods re-solve the optimistic saddle problem
   min_{0 <= p <= P_max} p.b_safe + max_theta (g^_theta(p) + beta_theta) on the empirical distributions, with
   b_safe = (1 - eps) b, eps = sqrt(log T / T), and the UCB bonus
   beta_theta = alpha R_max sqrt((d log(c0 d P_max A_max T / R_max) + log(2 K T / delta)) / N_theta), delta = 1/T^2;
4. each period play theta ~ w_t and accept iff r >= p_t.a and the request fits. Regret O~(sqrt(KT)) against T V_mix.

What the abstract leaves open, and what ``SPUCBOLP`` does by default (the paper's rule as the notes read it):
the static budget b_safe and the saddle point's own mixture w (the LP duals of its epigraph rows); c0 = 1.
Options: ``mixture="uniform"`` is the official code's tie-break (uniform over the configurations attaining the
envelope at p_t, exact only when one does); ``budget="remaining"`` is *our* variant (b_t from the remaining budget
per remaining period, standard online-LP re-solving); ``resolve_growth`` re-solves on a grid that thins out with
t (ours, for long horizons); ``resolution`` snaps continuous requests to a grid (ours; the official code keeps
every sample). The official code solves the saddle problem by L-BFGS-B; we solve it exactly (HiGHS LP,
warm-started from the previous basis).

Baselines with the same interface: Greedy (alpha = 0), the best fixed configuration with its fluid-optimal
admission, UCB without admission control, a primal-dual (dual subgradient) online LP (step R_max / (A_max^2 sqrt T),
ours, so that it acts the same in any units), and a random configuration with online-LP prices;
``make_policy(name, ...)`` builds any of them, ``"<name>_remaining"`` on our budget rule. ``simulate`` runs them
on common random numbers and checks the budget every period.

    >>> from icml26.serving.config_selection import SPUCBOLP, TwoLayerEnv, gap_instance, run_policy
    >>> inst = gap_instance()
    >>> policy = SPUCBOLP(inst.K, inst.b, 2000, inst.r_max, inst.a_max)  # alpha=0.1, mixture="lp", budget="static"
    >>> result = run_policy(TwoLayerEnv(inst, 2000, seed=0), policy)

References
----------
- Y. Shen, ..., P. Glynn, Y. Ye, P. Jaillet, "A Two-Layer Framework for Joint Online Configuration Selection and
  Admission Control", ICML 2026 (arXiv 2602.07663), and its official code.
- S. Agrawal, Z. Wang, Y. Ye, "A dynamic near-optimal algorithm for online linear programming", OR 2014.
- X. Li, Y. Ye, "Online linear programming: dual convergence, new algorithms, and regret bounds", OR 2022.
- A. Badanidiyuru, R. Kleinberg, A. Slivkins, "Bandits with knapsacks", JACM 2018.
"""

from icml26.serving.config_selection.instances import (
    ContinuousRequestDist,
    DiscreteRequestDist,
    Instance,
    JitteredRequestDist,
    RequestDist,
    alibaba_like_instance,
    atomless_gap_instance,
    gap_instance,
    k_sweep_instance,
    random_instance,
)
from icml26.serving.config_selection.oracle import (
    FluidSolution,
    complementarity_gap,
    fluid_oracle,
    minmax_dual,
    saddle_residuals,
    single_values,
)
from icml26.serving.config_selection.policies import (
    BUDGET_RULES,
    MIXTURES,
    POLICIES,
    SPUCBOLP,
    FixedConfigOLP,
    Policy,
    PrimalDualOLP,
    RandomConfigOLP,
    UCBNoAdmission,
    greedy_sp_olp,
    make_policy,
)
from icml26.serving.config_selection.simulate import BudgetViolation, RunResult, TwoLayerEnv, regret_curve, run_policy

__all__ = [
    "BUDGET_RULES",
    "MIXTURES",
    "POLICIES",
    "SPUCBOLP",
    "BudgetViolation",
    "ContinuousRequestDist",
    "DiscreteRequestDist",
    "FixedConfigOLP",
    "FluidSolution",
    "Instance",
    "JitteredRequestDist",
    "Policy",
    "PrimalDualOLP",
    "RandomConfigOLP",
    "RequestDist",
    "RunResult",
    "TwoLayerEnv",
    "UCBNoAdmission",
    "alibaba_like_instance",
    "atomless_gap_instance",
    "complementarity_gap",
    "fluid_oracle",
    "gap_instance",
    "greedy_sp_olp",
    "k_sweep_instance",
    "make_policy",
    "minmax_dual",
    "random_instance",
    "regret_curve",
    "run_policy",
    "saddle_residuals",
    "single_values",
]
