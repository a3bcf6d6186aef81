"""ECo-MoE: the decoder (valid designs, all four regimes, one clear error per bad latent or body), the torch task
against an independent scalar recursion and against per-design envs, the MuJoCo model (every decoded design
compiles; a mirrored motor turns the other way; gymnasium's checker), the policies (the gate never sees the
observation, action-level mixing, matched parameter counts, frozen experts bit-identical after training), PPO's GAE
against a brute-force sum, equal sample accounting across arms, and evo by demo."""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.decision.evo_moe import (
    ACT_DIM,
    DEMO_BODY,
    OBS_DIM,
    CoDesign,
    CoDesignConfig,
    Critic,
    DesignError,
    LatentError,
    LatentGatedMoEPolicy,
    MonolithicPolicy,
    Morphology,
    MorphReachMujocoEnv,
    PerRobotPolicies,
    PlanarChainVecEnv,
    PPOConfig,
    PPOTrainer,
    RandomMLPDecoder,
    compile_mjcf,
    count_parameters,
    evaluate_designs,
    evo_by_demo,
    find_demo_latent,
    mjcf_chain,
    morphology_distance,
    pretrain_demo_expert,
)
from icml26.decision.evo_moe.sim import DAMPING, DT, EFFORT

DEC = RandomMLPDecoder(seed=0)
TINY = CoDesignConfig(popsize=4, envs_per_design=4, horizon=8, ppo_iters_per_gen=1, n_eval_targets=2, n_early=1)
latents = st.lists(st.floats(-3, 3), min_size=8, max_size=8).map(np.asarray)


# ------------------------------------------------------------------------------------------------ decoder
@settings(max_examples=60)
@given(latents)
def test_every_latent_in_the_box_decodes_to_a_valid_design_that_the_torch_task_and_mujoco_accept(z):
    m = DEC.decode(z)
    assert m.regime in range(4)
    assert m.gear_signs[1] == m.gear_signs[2]
    env = PlanarChainVecEnv([m], 2, horizon=3)
    env.reset(torch.Generator().manual_seed(0))
    obs, rew, _ = env.step(torch.zeros(2, ACT_DIM))
    assert obs.shape == (2, OBS_DIM) and torch.isfinite(rew).all()
    model = compile_mjcf(m)
    assert model.nu == 3 and model.njnt == 3
    np.testing.assert_allclose(model.jnt_range[:, 1], m.limits, rtol=1e-5)  # radians, not MuJoCo's default degrees
    np.testing.assert_allclose(model.actuator_gear[:, 0], np.multiply(m.gear_signs, m.gains), rtol=1e-5)


def test_decoder_is_fixed_by_its_seed_and_covers_all_four_regimes():
    z = np.random.default_rng(1).uniform(-3, 3, (2000, 8))
    a, b = RandomMLPDecoder(seed=0).decode_batch(z), RandomMLPDecoder(seed=0).decode_batch(z)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    regimes = {DEC.decode(x).regime for x in z[:400]}
    assert regimes == {0, 1, 2, 3}
    other = RandomMLPDecoder(seed=1).decode_batch(z)
    assert not np.allclose(a["lengths"], other["lengths"])


@pytest.mark.parametrize(
    ("z", "message"),
    [
        (np.full(8, np.nan), "NaN"),
        (np.zeros(7), "shape"),
        (np.zeros((2, 3, 8)), "shape"),
        (np.zeros((0, 8)), "shape"),
        (np.full(8, 3.5), "bounded box"),
    ],
)
def test_bad_latents_get_one_clear_error(z, message):
    with pytest.raises(LatentError, match=message):
        DEC.decode_batch(z)


def test_decode_takes_one_latent():
    with pytest.raises(LatentError, match="one latent"):
        DEC.decode(np.zeros((2, 8)))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"lengths": (0.1, 0.5, 0.5)}, "lengths"),
        ({"gains": (1.0, 1.0, 9.0)}, "gains"),
        ({"limits": (1.0, 1.0, np.nan)}, "limits"),
        ({"lengths": (0.5, 0.5)}, "3 entries"),
        ({"gear_signs": (1, -1, 1)}, "not a regime"),
        ({"gear_signs": (1, 0, 0)}, "not a regime"),
    ],
)
def test_designs_outside_the_family_get_one_clear_error(kwargs, message):
    base = {"lengths": (0.5, 0.5, 0.5), "gains": (1.0, 1.0, 1.0), "gear_signs": (1, 1, 1), "limits": (1.0, 1.0, 1.0)}
    with pytest.raises(DesignError, match=message):
        Morphology(**{**base, **kwargs})


def test_morphology_distance_is_zero_to_itself_symmetric_and_one_half_for_opposite_regimes_alone():
    a = DEMO_BODY
    b = Morphology(a.lengths, a.gains, (-a.gear_signs[0], -a.gear_signs[1], -a.gear_signs[2]), a.limits)
    c = Morphology(a.lengths, a.gains, (a.gear_signs[0], -a.gear_signs[1], -a.gear_signs[2]), a.limits)
    assert morphology_distance(a, a) == 0
    assert morphology_distance(a, b) == pytest.approx(0.25)  # mirror bit only (base sign m*b unchanged)
    assert morphology_distance(a, c) == pytest.approx(0.5)  # both bits differ
    assert morphology_distance(a, c) == morphology_distance(c, a)


# ------------------------------------------------------------------------------------------------ torch task
def _scalar_recursion(m: Morphology, action: np.ndarray, steps: int, theta0: np.ndarray) -> np.ndarray:
    """The notes' dynamics written out independently, joint by joint, in float64."""
    theta, omega = theta0.astype(float).copy(), np.zeros(3)
    for _ in range(steps):
        for j in range(3):
            inertia = 0.05 + sum(x**3 for x in m.lengths[j:])
            tau = m.gear_signs[j] * m.gains[j] * float(np.clip(action[j], -1, 1))
            omega[j] += DT * (tau - DAMPING * omega[j]) / inertia
            new = theta[j] + DT * omega[j]
            if abs(new) > m.limits[j]:
                new, omega[j] = math.copysign(m.limits[j], new), 0.0
            theta[j] = new
    return theta


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_torch_task_matches_an_independent_scalar_recursion_and_forward_kinematics(seed):
    rng = np.random.default_rng(seed)
    designs = [DEC.decode(z) for z in rng.uniform(-3, 3, (3, 8))]
    env = PlanarChainVecEnv(designs, 2, horizon=30)
    env.reset(torch.Generator().manual_seed(seed))
    theta0 = env.theta.double().numpy().copy()
    action = torch.as_tensor(rng.uniform(-1.5, 1.5, (6, 3)), dtype=torch.float32)
    for _ in range(30):
        _, rew, done = env.step(action)
    assert done and env.steps_taken == 6 * 30
    for i in range(6):
        m = designs[i // 2]
        want = _scalar_recursion(m, action[i].double().numpy(), 30, theta0[i])
        np.testing.assert_allclose(env.theta[i].double().numpy(), want, atol=2e-4)
        phi = np.cumsum(want)
        tip = np.array([np.sum(np.array(m.lengths) * np.cos(phi)), np.sum(np.array(m.lengths) * np.sin(phi))])
        np.testing.assert_allclose(env.tip()[i].double().numpy(), tip, atol=1e-3)
        a = np.clip(action[i].double().numpy(), -1, 1)
        dist = np.linalg.norm(env.target[i].double().numpy() - tip)
        assert rew[i].item() == pytest.approx(-dist - EFFORT * np.sum(np.array(m.gains) * a * a), abs=1e-3)


def test_batched_envs_equal_one_env_per_design_and_mirrored_regimes_move_the_other_way():
    rng = np.random.default_rng(3)
    designs = [DEC.decode(z) for z in rng.uniform(-3, 3, (4, 8))]
    batched = PlanarChainVecEnv(designs, 1, horizon=5)
    singles = [PlanarChainVecEnv([d], 1, horizon=5) for d in designs]
    targets = torch.ones(4, 2)
    batched.reset(targets=targets)
    for s, t in zip(singles, targets, strict=True):
        s.reset(targets=t[None])
    batched.theta = torch.zeros(4, 3)
    for s in singles:
        s.theta = torch.zeros(1, 3)
    a = torch.full((4, 3), 0.7)
    for _ in range(5):
        ob, rb, _ = batched.step(a)
        outs = [s.step(a[:1]) for s in singles]
    torch.testing.assert_close(ob, torch.cat([o[0] for o in outs]))
    torch.testing.assert_close(rb, torch.cat([o[1] for o in outs]))
    signs = torch.as_tensor([d.gear_signs for d in designs], dtype=torch.float32)
    assert torch.all(torch.sign(batched.theta) == signs)  # same command, mirrored gears: opposite motion


def test_env_checks_its_inputs():
    env = PlanarChainVecEnv([DEMO_BODY], 3)
    env.reset()
    with pytest.raises(ValueError, match="action must have shape"):
        env.step(torch.zeros(3, 2))
    with pytest.raises(ValueError, match="targets must have shape"):
        env.reset(targets=torch.zeros(2, 2))
    with pytest.raises(ValueError, match="NaN"):
        env.step(torch.full((3, 3), float("nan")))
    with pytest.raises(ValueError, match="targets must have shape"):
        evaluate_designs(MonolithicPolicy(OBS_DIM, ACT_DIM, 8, hidden=4), DEC, np.zeros(8), torch.zeros(3), 5)
    with pytest.raises(DesignError, match="no designs"):
        PlanarChainVecEnv([], 3)
    with pytest.raises(DesignError, match="Morphology"):
        PlanarChainVecEnv([np.zeros(8)], 3)


# ------------------------------------------------------------------------------------------------ MuJoCo
def test_mujoco_env_passes_gymnasium_checks_and_a_mirrored_motor_turns_the_other_way():
    from gymnasium.utils.env_checker import check_env

    env = MorphReachMujocoEnv(DEMO_BODY)
    with pytest.warns(UserWarning, match="infinity"):  # unbounded observation box
        check_env(env, skip_render_check=True)
    moves = []
    for signs in [(1, 1, 1), (-1, 1, 1)]:
        m = Morphology(DEMO_BODY.lengths, DEMO_BODY.gains, signs, DEMO_BODY.limits)
        e = MorphReachMujocoEnv(m, horizon=40)
        e.reset(seed=0, options={"target": (1.0, 0.0)})
        q0 = e.data.qpos[0]
        for _ in range(40):
            _, r, term, trunc, info = e.step(np.array([1.0, 0.0, 0.0]))
        moves.append(e.data.qpos[0] - q0)
        assert trunc and not term and r == pytest.approx(-info["distance"] - EFFORT * m.gains[0])
    assert moves[0] > 0.5 and moves[1] < -0.5, moves
    assert isinstance(env.action_space, gym.spaces.Box)
    with pytest.raises(DesignError, match="Morphology"):
        mjcf_chain(np.zeros(8))
    with pytest.raises(ValueError, match="NaN"):
        env.step(np.array([np.nan, 0.0, 0.0]))


# ------------------------------------------------------------------------------------------------ policies
def test_gate_reads_the_latent_only_its_gradient_wrt_the_observation_is_zero():
    pol = LatentGatedMoEPolicy(OBS_DIM, ACT_DIM, 8, generator=torch.Generator().manual_seed(0))
    obs = torch.randn(5, OBS_DIM, requires_grad=True)
    z = torch.randn(5, 8, requires_grad=True)
    mean, _, gate = pol(obs, z)
    (g_obs,) = torch.autograd.grad(gate.sum() + 0 * mean.sum(), obs, allow_unused=True, retain_graph=True)
    assert g_obs is None or torch.count_nonzero(g_obs) == 0
    (g_z,) = torch.autograd.grad(gate[:, 0].sum(), z)
    assert torch.count_nonzero(g_z) > 0
    _, _, gate2 = pol(obs + 10 * torch.randn_like(obs), z)
    torch.testing.assert_close(gate, gate2, rtol=0, atol=0)


def test_mixture_is_the_gate_weighted_sum_of_the_experts_actions():
    pol = LatentGatedMoEPolicy(OBS_DIM, ACT_DIM, 8, generator=torch.Generator().manual_seed(1))
    obs, z = torch.randn(6, OBS_DIM), torch.randn(6, 8)
    mean, _, g = pol(obs, z)
    want = torch.zeros_like(mean)
    for e in range(4):  # each expert by hand: tanh(tanh(x W1 + b1) W2 + b2) W3 + b3
        h = obs
        for i, (w, b) in enumerate(zip(pol.experts.weights, pol.experts.biases, strict=True)):
            h = h @ w[e] + b[e, 0]
            h = torch.tanh(h) if i < 2 else h
        want += g[:, e : e + 1] * h
    torch.testing.assert_close(mean, want)
    torch.testing.assert_close(g.sum(1), torch.ones(6))
    idx = torch.tensor([0, 3, 1, 1, 2, 0])
    torch.testing.assert_close(pol.experts.gather(obs, idx), pol.experts(obs)[idx, torch.arange(6)])


def test_baselines_match_the_mixtures_parameter_count_and_check_their_inputs():
    moe = LatentGatedMoEPolicy(OBS_DIM, ACT_DIM, 8)
    mono = MonolithicPolicy(OBS_DIM, ACT_DIM, 8, match=count_parameters(moe))
    assert abs(count_parameters(mono) - count_parameters(moe)) / count_parameters(moe) < 0.02
    per = PerRobotPolicies(OBS_DIM, ACT_DIM, 8)
    assert count_parameters(per) == 8 * (count_parameters(moe.experts) // 4 + ACT_DIM)
    with pytest.raises(ValueError, match="z must have shape"):
        moe(torch.zeros(3, OBS_DIM), torch.zeros(3, 7))
    with pytest.raises(ValueError, match="obs must have shape"):
        mono(torch.zeros(3, 5), torch.zeros(3, 8))
    with pytest.raises(ValueError, match="design_index"):
        per(torch.zeros(3, OBS_DIM), None)


def test_a_frozen_demo_expert_is_bit_identical_after_training_and_has_no_optimiser_state():
    z = find_demo_latent(DEC)
    expert = pretrain_demo_expert(DEC, z, 1, TINY, seed=0)
    pol = LatentGatedMoEPolicy(OBS_DIM, ACT_DIM, 8, generator=torch.Generator().manual_seed(0))
    pol.add_expert(expert, frozen=True)
    assert pol.n_experts == 5 and pol.gate_out.out_features == 5
    before = [p.detach().clone() for p in pol.plugged.parameters()]
    trainer = PPOTrainer(pol, Critic(OBS_DIM, 8), PPOConfig())
    env = PlanarChainVecEnv(DEC.decode_batch(np.stack([z, -z])), 4, horizon=8)
    z_env = torch.as_tensor(np.repeat(np.stack([z, -z]), 4, 0), dtype=torch.float32)
    gate_before = pol.gate_out.weight.detach().clone()
    for _ in range(2):
        trainer.iterate(env, z_env, torch.Generator().manual_seed(0))
    for a, b in zip(before, pol.plugged.parameters(), strict=True):
        assert torch.equal(a, b) and b.grad is None and b not in trainer.actor_opt.state
    assert not torch.equal(gate_before, pol.gate_out.weight)  # the rest did train
    with pytest.raises(ValueError, match="an expert must map"):
        pol.add_expert(torch.nn.Linear(OBS_DIM, 2))


def test_gae_matches_the_brute_force_sum_of_discounted_td_errors():
    trainer = PPOTrainer(MonolithicPolicy(OBS_DIM, ACT_DIM, 8, hidden=4), Critic(OBS_DIM, 8), PPOConfig())
    g = torch.Generator().manual_seed(0)
    rew, val = torch.randn(7, 3, generator=g), torch.randn(7, 3, generator=g)
    adv, ret = trainer._gae(rew, val)
    gamma, lam = trainer.config.gamma, trainer.config.lam
    nxt = torch.cat([val[1:], torch.zeros(1, 3)])
    delta = rew + gamma * nxt - val
    want = torch.stack([sum((gamma * lam) ** (k - t) * delta[k] for k in range(t, 7)) for t in range(7)])
    torch.testing.assert_close(adv, want)
    torch.testing.assert_close(ret, want + val)


def test_ppo_improves_the_return_on_one_design():
    gen = torch.Generator().manual_seed(0)
    pol = LatentGatedMoEPolicy(OBS_DIM, ACT_DIM, 8, generator=gen)
    trainer = PPOTrainer(pol, Critic(OBS_DIM, 8, generator=gen))
    z = np.zeros((1, 8))
    env = PlanarChainVecEnv(DEC.decode_batch(z), 64, horizon=30)
    z_env = torch.zeros(64, 8)
    first = trainer.iterate(env, z_env, gen)["mean_reward"]
    for _ in range(14):
        last = trainer.iterate(env, z_env, gen)["mean_reward"]
    assert last > first + 0.1, (first, last)


# ------------------------------------------------------------------------------------------------ co-design
def test_every_arm_spends_the_same_env_steps_and_scores_after_the_update():
    results = {arm: CoDesign(arm, DEC, TINY, seed=0).run(3) for arm in ("moe", "monolithic", "per_robot")}
    steps = {r.train_steps for r in results.values()}
    assert steps == {3 * TINY.popsize * TINY.envs_per_design * TINY.horizon}
    assert len({r.eval_steps for a, r in results.items() if a != "per_robot"}) == 1
    # the first population is the same for every arm (same CMA-ES seed and start): paired designs
    for r in results.values():
        np.testing.assert_array_equal(r.population[0], results["moe"].population[0])
        assert np.isfinite(r.final_fitness) and r.final_fitness == r.mean_fitness.max()
    assert np.isnan(results["per_robot"].forgetting) and results["moe"].forgetting >= 0


def test_runs_are_reproducible_from_the_seed():
    a, b = CoDesign("moe", DEC, TINY, seed=4).run(2), CoDesign("moe", DEC, TINY, seed=4).run(2)
    np.testing.assert_array_equal(a.mean_fitness, b.mean_fitness)
    np.testing.assert_array_equal(a.population[-1], b.population[-1])


def test_codesign_and_evo_by_demo_check_their_inputs():
    with pytest.raises(ValueError, match="arm must be one of"):
        CoDesign("transformer", DEC, TINY)
    with pytest.raises(LatentError, match="bounded box"):
        CoDesign("moe", DEC, TINY, x0=np.full(8, 5.0))
    with pytest.raises(ValueError, match="only the mixture"):
        CoDesign("monolithic", DEC, TINY, plugged=(torch.nn.Linear(OBS_DIM, ACT_DIM),))
    with pytest.raises(ValueError, match="mode must be one of"):
        evo_by_demo(DEC, np.zeros(8), None, mode="steer")
    with pytest.raises(ValueError, match="needs the pretrained demo expert"):
        evo_by_demo(DEC, np.zeros(8), None, mode="costeer")
    with pytest.raises(ValueError, match="popsize"):
        CoDesignConfig(popsize=1)


def test_demo_latent_decodes_near_the_demo_body_and_costeer_starts_there():
    z = find_demo_latent(DEC)
    demo = DEC.decode(z)
    assert demo.gear_signs == DEMO_BODY.gear_signs
    assert morphology_distance(demo, DEMO_BODY) < 0.2
    expert = pretrain_demo_expert(DEC, z, 1, TINY)
    res, dist = evo_by_demo(DEC, z, expert, "costeer", 2, TINY, seed=0)
    assert 0 <= dist <= 1 and res.arm == "costeer"
    first = [morphology_distance(DEC.decode(x), demo) for x in res.population[0]]
    free, _ = evo_by_demo(DEC, z, None, "freeform", 2, TINY, seed=0)
    far = [morphology_distance(DEC.decode(x), demo) for x in free.population[0]]
    assert np.mean(first) < np.mean(far)


@settings(max_examples=50)
@given(st.integers(50, 60_000), st.integers(1, 40), st.integers(1, 10))
def test_matched_hidden_is_the_brute_force_closest_width(target, in_dim, out_dim):
    from icml26.decision.evo_moe import matched_hidden

    def count(h):  # in -> h -> h -> out MLP with biases, plus a log std per action
        return in_dim * h + h + h * h + h + h * out_dim + out_dim + out_dim

    best = min(abs(count(h) - target) for h in range(1, 400))
    assert abs(count(matched_hidden(target, in_dim, out_dim)) - target) == best


def test_policies_refuse_numpy_and_nan_inputs_with_one_clear_error():
    import numpy as np

    moe = LatentGatedMoEPolicy(obs_dim=6, act_dim=3, z_dim=8)
    mono = MonolithicPolicy(obs_dim=6, act_dim=3, z_dim=8, hidden=16)
    obs, z = torch.randn(5, 6), torch.randn(5, 8)
    for policy in (moe, mono):
        with pytest.raises(TypeError, match="torch tensors"):
            policy(obs.numpy(), z.numpy())
        with pytest.raises(ValueError, match="finite"):
            policy(obs, torch.full((5, 8), float("nan")))
        with pytest.raises(ValueError, match="finite"):
            policy(torch.full((5, 6), np.inf), z)
