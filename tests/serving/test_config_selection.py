"""SP-UCB-OLP: the fluid oracle against brute force and strong duality, budget safety of every policy, the
oracle bound, and seeded regret-slope and mixing assertions."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.serving.config_selection import (
    POLICIES,
    DiscreteRequestDist,
    Instance,
    TwoLayerEnv,
    alibaba_like_instance,
    complementarity_gap,
    fluid_oracle,
    gap_instance,
    k_sweep_instance,
    make_policy,
    minmax_dual,
    random_instance,
    regret_curve,
    run_policy,
    saddle_residuals,
    single_values,
)
from icml26.serving.config_selection.reproduce import _slope


def test_gap_instance_values_are_pinned():
    """HiGHS solution of the protocol's instance (recorded once): the optimum mixes theta0 and theta1."""
    inst = gap_instance()
    sol = fluid_oracle(inst)
    assert sol.value == pytest.approx(0.36758024691358, abs=1e-10)
    np.testing.assert_allclose(sol.w, [0.516049382716, 0.483950617284, 0.0], atol=1e-9)
    np.testing.assert_allclose(single_values(inst), [0.23, 0.225, 0.2703125], atol=1e-10)
    assert complementarity_gap(inst) == pytest.approx(0.36758024691358 - 0.2703125, abs=1e-10)


def _knapsack_value(inst: Instance, w: np.ndarray) -> float:
    """d = 1 brute force: with the mixture w fixed, the best admission is a fractional knapsack by r/a."""
    items = [
        (r, a[0], pi * wk)
        for dist, wk in zip(inst.dists, w, strict=True)
        for r, a, pi in zip(dist.rewards, dist.consumptions, dist.probs, strict=True)
    ]
    items.sort(key=lambda it: -it[0] / it[1])
    budget, value = float(inst.b[0]), 0.0
    for r, a, mass in items:
        take = min(mass, budget / a) if a > 0 else mass
        value += take * r
        budget -= take * a
        if budget <= 1e-15:
            break
    return value


def test_oracle_matches_brute_force_over_mixtures():
    rng = np.random.default_rng(0)
    for _ in range(5):
        inst = random_instance(K=2, d=1, J=3, rng=rng, budget=0.3)
        grid = np.linspace(0, 1, 4001)
        brute = max(_knapsack_value(inst, np.array([w, 1 - w])) for w in grid)
        assert fluid_oracle(inst).value == pytest.approx(brute, abs=1e-4)
        assert fluid_oracle(inst).value >= brute - 1e-12  # the grid can only miss the optimum from below


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), K=st.integers(1, 4), d=st.integers(1, 3), J=st.integers(1, 4))
def test_strong_duality_and_saddle_conditions(seed, K, d, J):
    inst = random_instance(K, d, J, np.random.default_rng(seed))
    sol = fluid_oracle(inst)
    dual_value, p, w = minmax_dual(inst)
    assert dual_value == pytest.approx(sol.value, abs=1e-8)
    assert w.sum() == pytest.approx(1.0) and np.all(w >= 0)
    assert sol.value >= single_values(inst).max() - 1e-9
    residuals = saddle_residuals(inst, sol)
    assert max(residuals.values()) < 1e-7, residuals
    g = np.array([dist.surplus(p) for dist in inst.dists])
    assert dual_value == pytest.approx(p @ inst.b + g.max(), abs=1e-8)


@pytest.mark.parametrize("name", POLICIES)
def test_budget_is_never_exceeded(name):
    inst = gap_instance()
    for seed in range(3):
        T = 600
        env = TwoLayerEnv(inst, T, seed)
        B = inst.b * T

        def check(t, used, B=B):
            assert np.all(used <= B + 1e-9), f"period {t}: used {used} > {B}"

        result = run_policy(env, make_policy(name, inst, T, seed=seed), on_step=check)
        assert np.all(result.used <= B + 1e-9)


def test_no_policy_beats_the_fluid_oracle():
    inst = gap_instance()
    v = fluid_oracle(inst).value
    T, seeds = 1000, tuple(range(12))
    regrets = regret_curve(inst, POLICIES, (T,), seeds, v)
    for name, r in regrets.items():
        se = r.std(ddof=1) / np.sqrt(len(seeds))
        assert -r.mean() <= 3 * se + 1e-9, f"{name} beats T V_mix: mean regret {r.mean():.2f} (se {se:.2f})"


def test_common_random_numbers_and_type_frequencies():
    inst = gap_instance()
    a, b = TwoLayerEnv(inst, 5000, seed=3), TwoLayerEnv(inst, 5000, seed=3)
    np.testing.assert_array_equal(a.rewards, b.rewards)
    np.testing.assert_array_equal(a.consumptions, b.consumptions)
    _, counts = np.unique(a.rewards[:, 0], return_counts=True)
    np.testing.assert_allclose(np.sort(counts / 5000), np.sort(inst.dists[0].probs), atol=0.03)
    assert not np.array_equal(a.rewards, TwoLayerEnv(inst, 5000, seed=4).rewards)


def test_continuous_instance_runs_every_learning_policy_within_budget():
    inst = alibaba_like_instance()
    T = 400
    for name in ("sp_ucb_olp", "greedy", "ucb_no_admission", "primal_dual", "random_olp"):
        env = TwoLayerEnv(inst, T, seed=1)
        result = run_policy(env, make_policy(name, inst, T, seed=1, resolution=0.05))
        assert np.all(result.used <= inst.b * T + 1e-9)
    policy = make_policy("sp_ucb_olp", inst, T, resolution=0.05)
    run_policy(TwoLayerEnv(inst, T, seed=2), policy)
    assert max(len(s.counts) for s in policy.samples) <= 21 * 21 * 41  # the snapped grid bounds the LP size


def test_continuous_instances_need_an_explicit_approximate_oracle():
    inst = alibaba_like_instance()
    with pytest.raises(ValueError, match="discrete request types"):
        fluid_oracle(inst)
    approx = fluid_oracle(inst.discretized(300))
    assert 0 < approx.value <= inst.r_max


def test_fixed_best_configuration_earns_its_fluid_value():
    inst = gap_instance()
    T = 4000
    rewards = [
        run_policy(TwoLayerEnv(inst, T, s), make_policy("fixed_best", inst, T, seed=s)).reward / T for s in range(4)
    ]
    assert np.mean(rewards) == pytest.approx(single_values(inst).max(), abs=0.01)


@pytest.mark.claim
def test_regret_slopes_over_seeds():
    """Protocol assertion: slope < 0.75 for SP-UCB-OLP (our remaining-budget variant), > 0.85 for the fixed
    single configuration (8 seeds, mean over seeds before the log). Recorded: 0.2-0.3 and 1.0. The official
    static-budget rule is *not* asserted here: its slope (~0.8) is what the C1 card reports."""
    inst = gap_instance()
    Ts = (500, 1000, 2000, 4000)
    r = regret_curve(
        inst, ("sp_ucb_olp", "fixed_best"), Ts, tuple(range(8)), fluid_oracle(inst).value, resolve_growth=0.01
    )
    assert _slope(Ts, r["sp_ucb_olp"].mean(axis=1)) < 0.75
    assert _slope(Ts, r["fixed_best"].mean(axis=1)) > 0.85


def test_warm_start_only_observes_and_the_mixture_comes_from_the_lp():
    inst = gap_instance()
    T = 300
    policy = make_policy("sp_ucb_olp", inst, T, seed=0, warm_start_rounds=2)
    seen = []

    class Spy:
        name = "spy"
        K, T = policy.K, policy.T

        def select_config(self, t):
            return policy.select_config(t)

        def accept_probability(self, t, theta, r, a, remaining):
            p = policy.accept_probability(t, theta, r, a, remaining)
            seen.append((t, p))
            return p

        def update(self, *args):
            policy.update(*args)

    run_policy(TwoLayerEnv(inst, T, seed=0), Spy())
    assert all(p == 0.0 for t, p in seen if t < 2 * inst.K)  # warm start: observe, never accept
    assert any(p == 1.0 for t, p in seen if t >= 2 * inst.K)
    # the mixture is the LP's: mass on the two configurations that share the optimum, none on the third, and
    # in proportions set by the remaining budget (recorded 0.14 / 0.86 at the end), not a uniform tie-break
    assert policy.w.sum() == pytest.approx(1.0)
    assert policy.w[2] < 0.05 and min(policy.w[0], policy.w[1]) > 0.0
    assert abs(policy.w[0] - policy.w[1]) > 1e-3


def test_policy_randomness_is_independent_of_the_environment():
    """The environment and a policy are seeded by the same integer; their streams must still differ (else the
    policy's mixture draw at t would be a function of the environment's request uniforms)."""
    inst = gap_instance()
    for seed in (0, 5):
        policy = make_policy("sp_ucb_olp", inst, 100, seed=seed)
        assert not np.allclose(policy.rng.random(8), np.random.default_rng(seed).random(8))


@pytest.mark.claim
def test_mixing_beats_every_single_configuration():
    """At T = 4000 SP-UCB-OLP earns more than max_theta V_theta + 0.03 per period (impossible without mixing)."""
    inst = gap_instance()
    T = 4000
    best = single_values(inst).max()
    for seed in range(3):
        reward = run_policy(
            TwoLayerEnv(inst, T, seed), make_policy("sp_ucb_olp", inst, T, seed=seed, resolve_growth=0.01)
        ).reward
        assert reward / T > best + 0.03


def test_k_sweep_instances_keep_the_mixing_optimum():
    for K in (2, 4, 8):
        inst = k_sweep_instance(K)
        assert inst.K == K
        assert fluid_oracle(inst).value == pytest.approx(0.36758024691358, abs=1e-9)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: Instance([gap_instance().dists[0]], [0.2, 0.0]), "positive"),
        (lambda: Instance([gap_instance().dists[0]], [-1.0, 0.2]), "positive"),
        (lambda: Instance([gap_instance().dists[0]], [0.2, 0.2, 0.2]), "shape"),
        (lambda: Instance([], [0.2]), "at least one configuration"),
        (lambda: DiscreteRequestDist([], [], np.zeros((0, 2))), "at least one request type"),
        (lambda: DiscreteRequestDist([0.5, 0.4], [1, 1], [[1, 1], [1, 1]]), "sum to 1"),
        (lambda: DiscreteRequestDist([1.0], [1.0, 2.0], [[1.0]]), "disagree"),
        (lambda: DiscreteRequestDist([1.0], [-1.0], [[1.0]]), "nonnegative"),
        (
            lambda: Instance(
                [DiscreteRequestDist([1.0], [1.0], [[1.0]]), DiscreteRequestDist([1.0], [1.0], [[1.0, 1.0]])], [1.0]
            ),
            "same number of resources",
        ),
        (lambda: TwoLayerEnv(gap_instance(), 0, 0), "T must be"),
        (lambda: fluid_oracle(gap_instance(), fixed=5), "fixed must be"),
        (lambda: make_policy("oracle", gap_instance(), 10), "unknown policy"),
        (lambda: make_policy("sp_ucb_olp", gap_instance(), 10, alpha=-1.0), "alpha"),
        (lambda: make_policy("sp_ucb_olp", gap_instance(), 10, resolution=0.0), "resolution"),
        (lambda: make_policy("fixed_best", alibaba_like_instance(), 10), "discrete request types"),
        (lambda: make_policy("sp_ucb_olp", gap_instance(), 10, warm_start_rounds=0), "warm_start_rounds"),
        (lambda: make_policy("primal_dual", gap_instance(), 0), "T >= 1"),
        (lambda: minmax_dual(gap_instance(), b=np.array([0.2])), "b must be"),
        (lambda: minmax_dual(gap_instance(), bonus=np.zeros(2)), "bonus must be"),
        (lambda: fluid_oracle(gap_instance(), fixed=1.5), "fixed must be"),
        (lambda: run_policy(TwoLayerEnv(gap_instance(), 50, 0), make_policy("greedy", gap_instance(), 60)), "T = 60"),
        (lambda: DiscreteRequestDist([1.0], [1.0], np.ones((1, 2, 2))), r"\(J, d\)"),
    ],
)
def test_bad_input_gives_clear_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
