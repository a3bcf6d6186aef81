"""Adaptive Entropy Scheduling (AES): an entropy weight that follows environment drift by a square-root rule
(Wang, Xia, Chen & Liu, ICML 2026).

    from stable_baselines3 import PPO
    from icml26.decision.aes import AdaptiveEntropySchedule, AESCallback, DriftWrapper

    env = DriftWrapper(gymnasium.make("CartPole-v1"), {"length": (0.5, 1.5)}, mode="abrupt", period=20_000)
    schedule = AdaptiveEntropySchedule(alpha_base=0.01, alpha_min=0.0025, alpha_max=0.04)
    PPO("MlpPolicy", env, ent_coef=0.01).learn(100_000, callback=AESCallback(schedule))

The algorithm, step by step (max-entropy RL with a time-varying weight, J_t = E[r] + alpha_t H(pi)):

1. **Theory (the abstract).** Entropy scheduling under drift is a dynamic-regret trade-off: the entropy weight
   acts as the regulariser (inverse step size) of online mirror descent against a drifting comparator, so the
   regret behaves like ``alpha * (stability) + V / alpha`` with V the path length of the drift; minimising it gives
   the **square-root rule** ``alpha_t ~ sqrt(V_t)`` for an online, possibly conservative, proxy V_t of drift.
2. **Per-update statistic (ours: the notes' reading of "observable drift proxies").** From each batch of TD errors
   (SAC: a replay batch with SB3's own soft target; PPO: the rollout's ``returns - values``; tabular soft-Q: the
   batch of parallel envs): ``q_t = Quantile_0.9(|delta|)``.
3. **Proxy (ours; two readings of the notes).** ``proxy="ema_ratio"`` (the default): ``V_t = EMA_0.2(q) /
   EMA_0.01(q)``, 1 when the TD level is stationary, > 1 after drift raises it, already scale-free (V_ref = 1); a
   conservative proxy: after a lasting jump it decays as the slow EMA catches up. ``proxy="variation"``: the
   sliding-window path length ``V_t = mean_{last W} |q_j - q_{j-1}|`` (the literal path length of the theory),
   normalised by its value at the end of warm-up, V_ref. The default is the one that works in our measurement: on
   the reproduction's task the variation proxy's warm-up reference comes from a quiet stretch of early learning
   and pins alpha near its maximum (reported on the card as the ``aes_variation`` arm).
4. **Warm-up.** For the first ``warmup`` updates alpha stays at ``alpha_base`` (the critic is still settling; early
   TD spikes are not drift), and V_ref is fixed at the end of it.
5. **Rule.** ``alpha_t = EMA_rho( clip(alpha_base sqrt(V_t / V_ref), alpha_min, alpha_max) )`` with rho = 0.2:
   a 4x rise of the proxy doubles alpha, a 16x rise quadruples it; the clip bounds always hold.
6. **Plugging in** (``AESCallback``): SAC with a fixed coefficient gets alpha written into ``ent_coef_tensor``;
   SAC with ``ent_coef="auto"`` gets its target entropy shifted by ``dim(A)/2 log(alpha/alpha_base)`` (ours);
   PPO/A2C get ``ent_coef`` set after each rollout; tabular soft-Q (``VectorSoftQ``) uses alpha as its temperature.

Also here: ``DriftWrapper`` (a gymnasium wrapper moving named physical parameters: abrupt, linear ramp, periodic,
random walk), the gridworld with jumping goals and the vectorised soft-Q learner of the reproduction
(``DriftingGoalGrid``, ``VectorSoftQ`` with ``FixedTemperature``, ``AutoTemperature`` (SAC's rule),
``ScheduledTemperature``), the metrics ``degradation_fraction``, ``recovery_time``, ``steady_nauc``, and the paired
experiment ``drift_experiment``.

Bad input gets one clear error each: an unknown proxy, drift mode or callback target; a negative or zero weight,
``alpha_min > alpha_base`` or ``alpha_base > alpha_max``; a window, warm-up shorter than the window, period, or
``every`` of zero; NaN TD errors; a parameter the environment does not have; a callback on a model it cannot drive.

References
----------
- T. Wang, Z. Xia, X. Chen, S. Liu, "Tracking Drift: Variation-Aware Entropy Scheduling for Non-Stationary
  Reinforcement Learning", ICML 2026, arXiv:2601.19624 (no official code found).
- T. Haarnoja, A. Zhou, P. Abbeel, S. Levine, "Soft actor-critic", ICML 2018; T. Haarnoja et al., "Soft
  actor-critic algorithms and applications" (2018), the automatic temperature.
- T. Haarnoja, H. Tang, P. Abbeel, S. Levine, "Reinforcement learning with deep energy-based policies", ICML 2017
  (soft Q-learning).
- O. Besbes, Y. Gur, A. Zeevi, "Non-stationary stochastic optimization", Operations Research 2015 (dynamic regret
  and variation budgets); M. Zinkevich, "Online convex programming and generalized infinitesimal gradient
  ascent", ICML 2003.
- A. Raffin et al., "Stable-Baselines3: reliable reinforcement learning implementations", JMLR 2021.
"""

from icml26._core.lazy import lazy_exports

_MODULE_OF = {
    "AdaptiveEntropySchedule": "schedule",
    "PROXIES": "schedule",
    "td_quantile": "schedule",
    "AESCallback": "callbacks",
    "sac_td_errors": "callbacks",
    "DRIFT_MODES": "wrappers",
    "DriftWrapper": "wrappers",
    "drift_value": "wrappers",
    "degradation_fraction": "metrics",
    "recovery_time": "metrics",
    "steady_nauc": "metrics",
    "AutoTemperature": "softq",
    "DriftingGoalGrid": "softq",
    "FixedTemperature": "softq",
    "ScheduledTemperature": "softq",
    "VectorSoftQ": "softq",
    "ARMS": "experiment",
    "calibrate": "experiment",
    "drift_experiment": "experiment",
}
__all__ = sorted(_MODULE_OF)

__getattr__, __dir__ = lazy_exports(
    globals(),
    _MODULE_OF,
    {"callbacks": "stable-baselines3 and torch", "wrappers": "gymnasium"},
    "decision",
)
