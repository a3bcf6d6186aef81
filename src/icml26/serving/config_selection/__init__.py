"""SP-UCB-OLP: online configuration selection with admission control, against the switching-aware fluid oracle.

Each period t = 1..T the decision maker (1) picks one of K configurations theta (a quantisation, a parallelism, a
fare class), which sets the distribution D_theta of the next request (r, a); (2) sees the request and accepts or
rejects it, under a hard budget sum_t a_t x_t <= B = b T over d resources. Rewards count only when accepted.

Algorithm (Shen, Xu, Glynn, Ye, Jaillet, ICML 2026; our reading, see ``policies``):

1. Benchmark: V_mix = max_{w in simplex} min_{p >= 0} p.b + sum_theta w_theta g_theta(p)
   = min_{p >= 0} p.b + max_theta g_theta(p), with g_theta(p) = E_theta[(r - p.a)^+]. T V_mix upper-bounds every
   online policy and exceeds T max_theta V_theta whenever mixing configurations over time pays (``oracle``).
2. Saddle point: the mixture w lives on argmax_theta g_theta(p*), is budget-feasible, and p*_j > 0 only on
   binding resources (equilibrium, feasibility, complementarity: ``oracle.saddle_residuals``).
3. SP-UCB-OLP: after an observe-only warm start, re-solve the optimistic saddle problem
   min_{0 <= p <= P_max} p.b_t + max_theta (g^_theta(p) + beta_theta) on empirical type counts, with a UCB bonus
   beta_theta ~ alpha R_max sqrt(log(KT) / N_theta); play theta ~ w_t (from the LP's duals) and accept iff
   r >= p_t.a and the request fits. Regret O~(sqrt(KT)) against T V_mix.

Baselines with the same interface: Greedy (alpha = 0), the best fixed configuration with its fluid-optimal
admission, UCB without admission control, a primal-dual (dual subgradient) online LP, and a random configuration
with online-LP prices. ``simulate`` runs any of them on common random numbers and checks the budget every period.

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
    RequestDist,
    alibaba_like_instance,
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
    "POLICIES",
    "SPUCBOLP",
    "BudgetViolation",
    "ContinuousRequestDist",
    "DiscreteRequestDist",
    "FixedConfigOLP",
    "FluidSolution",
    "Instance",
    "Policy",
    "PrimalDualOLP",
    "RandomConfigOLP",
    "RequestDist",
    "RunResult",
    "TwoLayerEnv",
    "UCBNoAdmission",
    "alibaba_like_instance",
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
