"""ACE for GFlowNets: an exploration GFlowNet that searches where the canonical one is weak
(Dall'Antonia, da Silva, Csillag, Lahlou & Mesquita, ICML 2026).

    from icml26.decision.ace_gflownet import ACETrainer, HyperGrid, exact_l1

    env = HyperGrid(ndim=2, height=20, R0=1e-3)          # 16 maximal-reward states, exact target R/Z
    trainer = ACETrainer(env, alpha=0.5, seed=0)
    history = trainer.train(n_trajectories=32_000, batch_size=16)   # explorer trajectories count too
    exact_l1(trainer.sampler()), history.mode_states_found[-1]

A compact GFlowNet core comes with it (torchgfn pins numpy < 2, so nothing is borrowed): ``HyperGrid`` and
``BitSequence`` environments with batched transitions and exact targets for small cases, ``GFlowNet`` (MLP) and
``TabularGFlowNet`` (one row per state; ``.optimal(env)`` is the exact sampler), ``sample_trajectories`` (all
trajectories of a batch step together: a loop over time steps, never over trajectories), the losses
``trajectory_balance_loss``, ``detailed_balance_loss``, ``subtrajectory_balance_loss``, and the exact
``terminal_distribution`` / ``exact_l1`` by dynamic programming over the DAG.

The algorithm, step by step (tau = s_0 -> ... -> s_n = x, R(x) > 0):

1. **Canonical GFlowNet** (P_F^C, P_B, log Z_C), trained by trajectory balance on *every* collected trajectory
   (off-policy): ``(log Z_C + log P_F^C(tau) - log R(x) - log P_B(tau|x))^2`` (DB or SubTB with ``loss=``).
   At optimum its terminal distribution is R/Z; it is the sampler every metric evaluates.
2. **Exploration GFlowNet** (P_F^E, log Z_E), trained by *divergent trajectory balance* (our reading of the
   paper's title "Avoid What You Know" and of its abstract): it targets the reward flow the canonical sampler
   does not yet carry,

       log Z_E + log P_F^E(tau) = log [R(x) P_B(tau|x) - Z_C P_F^C(tau)]_+ ,

   with the canonical terms held fixed and the learned Z_C (never the true Z). Where the canonical sampler already
   covers tau (bracket <= 0 or tiny) the target is clamped to ``log R(x) + log P_B(tau|x) - floor`` (floor = 10
   nats). It is computed as ``a + max(log(1 - exp(b - a)), -floor)``, ``a = log R + log P_B``,
   ``b = log Z_C + log P_F^C``, with a stable log1mexp: no cancellation, never NaN or infinite. The explorer uses the
   canonical P_B in its target (ours: the abstract gives no separate backward policy; with the default uniform
   P_B the two coincide).
3. **Behaviour policy**: each trajectory of a batch is drawn from the explorer with probability alpha (0.5),
   else from the canonical policy; every trajectory counts against the budget and trains both networks.
4. **"Adaptive"** is not specified by the abstract. Default: fixed alpha. Option (ours, ``adaptive=True``):
   ``alpha_t = clip(Z_E / (Z_E + Z_C), min_alpha, alpha)``, the share of reward flow still uncovered. In our runs
   this share collapses early (the explorer's Z_E fits the clamped targets of the well-covered trajectories that
   dominate its data), so the adaptive mixture explores less than the fixed one; it stays an option, not the
   default.

Baselines at the same budget (``TBTrainer``, ``RNDTrainer``): TB on-policy; TB with epsilon-uniform exploration
(``epsilon=0.1``) or a tempered policy (``temperature``); and an RND explorer: a second GFlowNet trained by TB on
``R(x) exp(beta n(x) / mean n)`` (the notes' form; ``form="additive"`` gives GAFN's ``R + beta n / mean n``), with
n(x) the error of a predictor trained to match a fixed random network, same mixture alpha, same off-policy
canonical training as ACE: the two explorers differ only in what they are trained towards.

Metrics (``metrics``): the exact L1 ``sum_x |P_T(x) - R(x)/Z|`` of the canonical sampler (forward dynamic
program over the DAG; never of the mixture or of the training samples) and the number of distinct maximal-reward
states ("mode states"; a "mode" is a corner of the grid that holds them) among all sampled trajectories.

Bad input gets one clear error each: an invalid action (``InvalidActionError``), a reward that is zero everywhere,
negative, zero somewhere, NaN or infinite, states of the wrong shape or dtype, an environment too large to
enumerate for an exact target, an alpha outside [0, 1], a budget smaller than one batch.

References
----------
- M. Dall'Antonia, T. da Silva, D. Csillag, S. Lahlou, D. Mesquita, "Avoid What You Know: Divergent Trajectory
  Balance for GFlowNets" (Adaptive Complementary Exploration), ICML 2026, arXiv:2602.17827.
- E. Bengio, M. Jain, M. Korablyov, D. Precup, Y. Bengio, "Flow network based generative models for
  non-iterative diverse candidate generation", NeurIPS 2021 (HyperGrid).
- N. Malkin, M. Jain, E. Bengio, C. Sun, Y. Bengio, "Trajectory balance: improved credit assignment in
  GFlowNets", NeurIPS 2022 (TB, the bit-sequence task).
- Y. Bengio, S. Lahlou, T. Deleu, E. Hu, M. Tiwari, E. Bengio, "GFlowNet foundations", JMLR 2023 (DB).
- K. Madan, J. Rector-Brooks, M. Korablyov, E. Bengio, M. Jain, A. Nica, T. Bosc, Y. Bengio, N. Malkin,
  "Learning GFlowNets from partial episodes for improved convergence and stability", ICML 2023 (SubTB).
- L. Pan, D. Zhang, A. Courville, L. Huang, Y. Bengio, "Generative augmented flow networks", ICLR 2023 (RND
  intrinsic rewards for GFlowNets); Y. Burda, H. Edwards, A. Storkey, O. Klimov, "Exploration by random network
  distillation", ICLR 2019.
- S. Lahlou et al., "torchgfn: a PyTorch GFlowNet library" (2023): the environments' and losses' API shape.
"""

from icml26.decision.ace_gflownet.envs import BitSequence, DiscreteEnv, HyperGrid, InvalidActionError
from icml26.decision.ace_gflownet.gflownet import GFlowNet, TabularGFlowNet, make_optimizer, masked_log_softmax
from icml26.decision.ace_gflownet.losses import (
    detailed_balance_loss,
    divergent_log_target,
    log1mexp,
    subtrajectory_balance_loss,
    trajectory_balance_loss,
)
from icml26.decision.ace_gflownet.metrics import ModeTracker, empirical_l1, exact_l1
from icml26.decision.ace_gflownet.sampling import (
    StepLogProbs,
    Trajectories,
    sample_trajectories,
    terminal_distribution,
    trajectory_log_probs,
)
from icml26.decision.ace_gflownet.trainers import ACETrainer, History, RNDTrainer, TBTrainer

__all__ = [
    "ACETrainer",
    "BitSequence",
    "DiscreteEnv",
    "GFlowNet",
    "History",
    "HyperGrid",
    "InvalidActionError",
    "ModeTracker",
    "RNDTrainer",
    "StepLogProbs",
    "TBTrainer",
    "TabularGFlowNet",
    "Trajectories",
    "detailed_balance_loss",
    "divergent_log_target",
    "empirical_l1",
    "exact_l1",
    "log1mexp",
    "make_optimizer",
    "masked_log_softmax",
    "sample_trajectories",
    "subtrajectory_balance_loss",
    "terminal_distribution",
    "trajectory_balance_loss",
    "trajectory_log_probs",
]
