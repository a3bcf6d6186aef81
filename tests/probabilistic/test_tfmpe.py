"""TFMPE: the exact Gaussian reference against brute-force grids, the attention mask and one-layer site isolation,
the flow-matching target and path, the ODE integrator and exact log-density on a linear field, simulator call
counting, TARP against sbi, SBC uniformity under the exact posterior (and its failure when overconfident), an
end-to-end LF fit (the surrogate against the simulator, shapes, no simulator calls), clear errors on bad input,
and the benchmark's tiny size."""

from __future__ import annotations

import copy
import importlib.util
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.probabilistic.tfmpe import (
    GLOBAL_SITE,
    TFMPE,
    ConvergenceWarning,
    HierGaussian,
    HierSIR,
    ReferencePosterior,
    TokenVelocityField,
    attention_mask,
    cfm_loss,
    cfm_target,
    integrate,
    path,
    reference_posterior,
    sbc_ranks,
    tarp_coverage,
    tarp_credibility,
    tokenise,
    uniform_ks,
)
from icml26.probabilistic.tfmpe.baselines import FlatHierarchicalPrior
from icml26.probabilistic.tfmpe.diagnostics import sbc_uniform_ks
from icml26.probabilistic.tfmpe.flow import log_prob
from icml26.probabilistic.tfmpe.tokens import Tokens

SMALL = dict(d_model=32, mlp_ratio=2, n_layers=2, n_heads=2, learning_rate=2e-3, ode_steps=5)


# ------------------------------------------------------------------------------------------ reference posterior
def _grid_posterior_s1(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Brute force for one site: the (log sigma, mu) posterior on a 2-D grid from the raw likelihood."""
    ls = np.linspace(-4, 2.5, 700)[:, None]
    mu = np.linspace(-5, 5, 800)[None, :]
    sigma = np.exp(ls)
    lp = np.log(2) - 0.5 * sigma**2 + ls - 0.5 * mu**2  # HalfNormal(sigma) * Jacobian * N(mu)
    for xj in x:
        lp = lp - np.log(sigma) - 0.5 * ((xj - mu) / sigma) ** 2
    w = np.exp(lp - lp.max())
    w /= w.sum()
    m = np.array([(w * ls).sum(), (w * mu).sum()])
    sd = np.sqrt([(w * (ls - m[0]) ** 2).sum(), (w * (mu - m[1]) ** 2).sum()])
    return m, sd


@pytest.mark.parametrize("x", [[0.3, -0.5, 1.2], [2.0, 2.1, 1.9], [-1.0, 0.5, 3.0, 0.0, 1.0]])
def test_reference_posterior_matches_a_brute_force_grid(x):
    xs = torch.tensor([x])
    m_grid, sd_grid = _grid_posterior_s1(np.array(x))
    draws = ReferencePosterior.gaussian(xs, len(x)).sample(200_000, seed=1).numpy()
    np.testing.assert_allclose(draws.mean(0), m_grid, atol=0.01)
    np.testing.assert_allclose(draws.std(0), sd_grid, rtol=0.02)
    mean, sd = ReferencePosterior.gaussian(xs, len(x)).moments_log_sigma()
    assert mean == pytest.approx(m_grid[0], abs=2e-3) and sd == pytest.approx(sd_grid[0], rel=5e-3)


def test_reference_posterior_two_sites_matches_importance_sampling():
    """Two sites: the grid-and-conditional sampler against prior importance sampling with the raw likelihood."""
    x = torch.tensor([[0.5, 1.0, 0.2], [-1.5, -0.7, -1.1]])
    task = HierGaussian(m_obs=3)
    g = torch.Generator().manual_seed(0)
    tg = task.sample_global(2_000_000, g)
    tl = task.sample_local(tg, 2, g)
    sigma = tg.exp()[:, :, None]
    logw = (-torch.log(sigma) - 0.5 * ((x[None] - tl) / sigma) ** 2).sum((1, 2))
    w = torch.softmax(logw.double(), 0)
    theta = torch.cat([tg, tl[..., 0]], 1).double()
    is_mean = (w[:, None] * theta).sum(0)
    ref = reference_posterior(x, 100_000, seed=3).double()
    ess = 1 / (w**2).sum()
    assert ess > 2000
    np.testing.assert_allclose(ref.mean(0), is_mean, atol=0.03)


def test_task_prior_log_density_is_normalised_and_matches_sampling():
    task = HierGaussian()
    ls = torch.linspace(-12, 3, 20001)[:, None]
    dens = task.log_prior(ls, torch.zeros(len(ls), 0, 1)).exp()
    assert torch.trapezoid(dens, ls[:, 0]).item() == pytest.approx(1.0, abs=1e-4)
    draws = task.sample_global(200_000, torch.Generator().manual_seed(0))
    assert draws.exp().mean().item() == pytest.approx(math.sqrt(2 / math.pi), abs=0.01)


# ---------------------------------------------------------------------------------------------- simulator calls
def test_every_simulated_site_is_one_call_and_training_charges_none():
    task = HierGaussian(m_obs=3)
    sims = task.simulate_single_sites(150)
    assert task.n_calls == 150
    task.simulate(7, 4)
    assert task.n_calls == 150 + 28
    inf = TFMPE(task, batch_size=50, n_iter=3, **SMALL)
    inf.append_simulations(sims.theta, sims.x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        inf.train(mode="lf", n_sites=4)
    inf.build_posterior().sample((5,), x=torch.zeros(4, 3))
    assert task.n_calls == 178, "the surrogate, not the simulator, makes the synthetic sets"


def test_sir_simulator_shapes_times_and_support():
    task = HierSIR(n_times=10)
    sims = task.simulate(20, 3, torch.Generator().manual_seed(0))
    assert sims.x.shape == sims.times.shape == (20, 3, 10)
    assert (sims.x >= 0).all() and (sims.x <= 1).all()
    assert (sims.times.diff(dim=-1) >= 0).all() and not torch.equal(sims.times[0, 0], sims.times[0, 1])
    curve = task.infected_curve(torch.tensor([0.4]), torch.tensor([0.125]))
    assert curve.argmax().item() * task.dt < task.horizon and curve.max() > 0.1  # an epidemic peaks in the window
    with pytest.raises(ValueError, match="prevalence outside"):
        task.check_observation(torch.tensor([[1.2, 0.1]]))


# ------------------------------------------------------------------------------------------------ tokens, mask
def test_tokenise_layout_and_flags():
    tg, tl, x = torch.randn(2, 1), torch.randn(2, 3, 1), torch.randn(2, 3, 4)
    post = tokenise(tg, tl, x, torch.zeros_like(x), "posterior")
    assert post.value.shape == (2, 1 + 3 * 5)
    assert post.target.sum(1).tolist() == [4, 4]  # theta_g and three mu
    assert post.site[0].tolist() == [GLOBAL_SITE] + [0] * 5 + [1] * 5 + [2] * 5
    torch.testing.assert_close(post.value[:, 6], tl[:, 1, 0])
    lik = tokenise(tg, tl, x, torch.zeros_like(x), "likelihood")
    assert torch.equal(lik.target, ~post.target)
    padded = tokenise(
        tg, tl, x, torch.zeros_like(x), "posterior", site_mask=torch.tensor([[1, 1, 0], [1, 1, 1]]).bool()
    )
    assert padded.pad[0, 11:].all() and not padded.target[0, 11:].any()


@settings(max_examples=40)
@given(st.lists(st.integers(-1, 3), min_size=2, max_size=12), st.data())
def test_attention_mask_separates_sites(sites, data):
    site = torch.tensor([sites])
    pad = torch.tensor([data.draw(st.lists(st.booleans(), min_size=len(sites), max_size=len(sites)))])
    mask = attention_mask(site, pad)[0]
    for i, si in enumerate(sites):
        for j, sj in enumerate(sites):
            expect = i == j or (not pad[0, j] and (si in (sj, GLOBAL_SITE) or sj == GLOBAL_SITE))
            assert bool(mask[i, j]) == expect


def _posterior_tokens(x: torch.Tensor) -> Tokens:
    n = x.shape[0]
    return tokenise(torch.zeros(n, 1), torch.zeros(n, x.shape[1], 1), x, torch.zeros_like(x), "posterior")


def test_one_layer_a_site_is_blind_to_another_sites_data_and_two_layers_are_not():
    torch.manual_seed(0)
    x = torch.randn(1, 3, 4)
    x2 = x.clone()
    x2[0, 2] += 3.0  # change site 2's observations only
    tau = torch.tensor([0.3])
    site0 = (_posterior_tokens(x).site == 0)[0]
    one, two = TokenVelocityField(3, 32, n_layers=1), TokenVelocityField(3, 32, n_layers=2)
    with torch.no_grad():
        a, b = one(_posterior_tokens(x), tau), one(_posterior_tokens(x2), tau)
        torch.testing.assert_close(a[0, site0], b[0, site0])
        assert not torch.allclose(a[0, 0], b[0, 0])  # the global token sees every site
        a2, b2 = two(_posterior_tokens(x), tau), two(_posterior_tokens(x2), tau)
        assert not torch.allclose(a2[0, site0], b2[0, site0])  # ... and passes it on at the next layer


def test_sites_are_exchangeable():
    torch.manual_seed(1)
    net = TokenVelocityField(3, 32)
    x = torch.randn(1, 3, 4)
    perm = torch.tensor([2, 0, 1])
    tau = torch.tensor([0.7])
    with torch.no_grad():
        a = net(_posterior_tokens(x), tau).reshape(-1)
        b = net(_posterior_tokens(x[:, perm]), tau).reshape(-1)
    torch.testing.assert_close(a[0], b[0], atol=1e-5, rtol=1e-5)  # theta_g's velocity ignores the site order
    torch.testing.assert_close(a[1:].reshape(3, 5)[perm], b[1:].reshape(3, 5), atol=1e-5, rtol=1e-5)


# -------------------------------------------------------------------------------------------- flow matching
@given(st.floats(0, 1), st.floats(1e-4, 0.1))
def test_cfm_target_is_the_time_derivative_of_the_path(tau, sigma_min):
    g = torch.Generator().manual_seed(0)
    z0, z1 = torch.randn(5, generator=g, dtype=torch.float64), torch.randn(5, generator=g, dtype=torch.float64)
    h = 1e-6
    deriv = (path(z0, z1, tau + h, sigma_min) - path(z0, z1, tau - h, sigma_min)) / (2 * h)
    torch.testing.assert_close(deriv, cfm_target(z0, z1, sigma_min))
    torch.testing.assert_close(path(z0, z1, 0.0, sigma_min), z0)
    torch.testing.assert_close(path(z0, z1, 1.0, sigma_min), z1 + sigma_min * z0)


def test_cfm_loss_counts_target_tokens_only():
    class Zero(torch.nn.Module):
        def forward(self, tokens, tau, mask=None):
            return torch.zeros_like(tokens.value)

    tok = _posterior_tokens(torch.randn(64, 2, 3) * 100)  # huge x on condition tokens must not enter the loss
    g = torch.Generator().manual_seed(0)
    loss = cfm_loss(Zero(), tok, 1e-3, g)
    assert loss.item() == pytest.approx(1.0, rel=0.15)  # thetas are 0, so u = -(1 - s) z0: E u^2 = (1 - s)^2


class Linear(torch.nn.Module):
    """v(z, tau) = a z on every token: the flow z_1 = e^a z_0, an exact oracle for the ODE and log-density."""

    def __init__(self, a: float) -> None:
        super().__init__()
        self.a = a

    def forward(self, tokens, tau, mask=None):
        return self.a * tokens.value


def test_rk4_integrates_a_linear_field_and_log_prob_is_exact():
    z0 = torch.randn(10, 3, dtype=torch.float64)
    z1 = integrate(lambda z, t: 0.7 * z, z0, steps=8)
    torch.testing.assert_close(z1, z0 * math.exp(0.7), rtol=1e-5, atol=1e-6)
    tok = _posterior_tokens(torch.randn(10, 2, 3))
    theta = torch.randn(10, 3)
    lp = log_prob(Linear(0.5), tok, theta, steps=20)
    base = torch.distributions.Normal(0, 1).log_prob(theta * math.exp(-0.5)).sum(1)
    torch.testing.assert_close(lp, base - 0.5 * 3, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------------------------- diagnostics
def test_tarp_credibility_matches_sbi():
    from sbi.diagnostics.tarp import _run_tarp

    g = torch.Generator().manual_seed(0)
    theta = torch.randn(200, 3, generator=g)
    samples = theta[None] + torch.randn(300, 200, 3, generator=g)
    refs = torch.rand(200, 3, generator=g) * 4 - 2
    f = tarp_credibility(samples, theta, refs)
    ecp_sbi, alpha = _run_tarp(samples, theta, refs, z_score_theta=True)
    ecp, _ = tarp_coverage(f, alpha)
    torch.testing.assert_close(ecp, ecp_sbi.float(), atol=1.5 / 200, rtol=0)


def test_sbc_is_uniform_under_the_exact_posterior_and_not_when_overconfident():
    task = HierGaussian(m_obs=3)
    g = torch.Generator().manual_seed(2)
    sims = task.simulate(200, 2, g)
    draws = torch.stack([reference_posterior(x, 100, seed=i) for i, x in enumerate(sims.x)], 1)  # [100, 200, 3]
    ks = sbc_uniform_ks(sbc_ranks(draws, sims.theta), 100)
    assert max(ks) < 1.63  # the KS 1% critical value, per dimension
    assert uniform_ks(tarp_credibility(draws, sims.theta)) < 1.63
    centre = draws.mean(0, keepdim=True)
    shrunk = centre + 0.4 * (draws - centre)  # an overconfident posterior
    assert min(sbc_uniform_ks(sbc_ranks(shrunk, sims.theta), 100)) > 1.63
    # a hand-written rank for one entry
    assert sbc_ranks(draws, sims.theta)[5, 1] == int((draws[:, 5, 1] < sims.theta[5, 1]).sum())


def test_flat_prior_for_sbi_samples_and_scores_the_hierarchy():
    prior = FlatHierarchicalPrior(HierGaussian(), 3, seed=0)
    theta = prior.sample((1000,))
    assert theta.shape == (1000, 4)
    tl = theta[:, 1:].reshape(1000, 3, 1)
    torch.testing.assert_close(prior.log_prob(theta), HierGaussian().log_prior(theta[:, :1], tl))


# ------------------------------------------------------------------------------------------------- end to end
@pytest.fixture(scope="module")
def fitted():
    torch.manual_seed(0)
    task = HierGaussian(m_obs=3)
    sims = task.simulate_single_sites(600, torch.Generator().manual_seed(0))
    inf = TFMPE(task, n_iter=150, random_state=0, **SMALL)
    inf.append_simulations(sims.theta, sims.x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        inf.train_likelihood()
        lik = copy.deepcopy(inf)
        inf.train_posterior(n_sites=3)
    return task, lik, inf


def test_the_learned_likelihood_matches_the_simulator(fitted):
    _, lik, _ = fitted
    n = 4000
    tg = torch.full((n, 1), math.log(0.8))
    tl = torch.full((n, 1, 1), 1.0)
    x = lik.surrogate_sites(tg, tl, torch.zeros(n, 1, 3))
    assert x.mean().item() == pytest.approx(1.0, abs=0.15)
    assert x.std().item() == pytest.approx(0.8, rel=0.2)


def test_posterior_samples_shapes_log_prob_and_global_accuracy(fitted):
    _, _, inf = fitted
    post = inf.build_posterior()
    x_o = torch.tensor([[0.5, 0.8, 0.3], [-1.0, -1.4, -0.6], [2.0, 1.5, 1.8]])
    q = post.set_default_x(x_o).sample((800,))
    assert q.shape == (800, 4) and torch.isfinite(q).all()
    ref = reference_posterior(x_o, 800)
    assert (q.mean(0) - ref.mean(0)).abs().max() < 0.5  # the site means' posterior means
    lp = post.log_prob(q[:20])
    assert lp.shape == (20,) and torch.isfinite(lp).all()
    batched = post.sample_batched((7,), torch.stack([x_o, x_o + 1]))
    assert batched.shape == (7, 2, 4)


def test_posterior_with_a_finer_ode_grid_agrees(fitted):
    _, _, inf = fitted
    post = inf.build_posterior()
    x_o = torch.tensor([[0.5, 0.8, 0.3], [-1.0, -1.4, -0.6], [2.0, 1.5, 1.8]])
    state = inf.generator.get_state()
    coarse = post.sample((200,), x=x_o)
    inf.generator.set_state(state)
    inf.ode_steps = 20
    fine = post.sample((200,), x=x_o)
    inf.ode_steps = SMALL["ode_steps"]
    assert (coarse - fine).abs().mean() < 0.05, "the RK4 grid of record is converged along the same noise"


# ------------------------------------------------------------------------------------------------- bad input
def test_bad_inputs_give_one_clear_error(fitted):
    task, _, inf = fitted
    post = inf.build_posterior()
    fresh = TFMPE(task, **SMALL)
    with pytest.raises(ValueError, match="mismatched token shapes"):
        fresh.append_simulations((torch.zeros(10, 1), torch.zeros(9, 1)), torch.zeros(10, 3))
    with pytest.raises(ValueError, match="mismatched token shapes"):
        fresh.append_simulations(torch.zeros(10, 2), torch.zeros(10, 3), times=torch.zeros(10, 4))
    with pytest.raises(ValueError, match="mismatched token shapes"):
        fresh.append_simulations(torch.zeros(10, 3), torch.zeros(10, 3))  # theta for 2 sites, x for 1
    with pytest.raises(ValueError, match="mismatched token shapes"):
        post.sample((5,), x=torch.zeros(3, 5))  # 5 observations per site, trained on 3
    with pytest.raises(ValueError, match="NaN"):
        fresh.append_simulations(torch.full((10, 2), math.nan), torch.zeros(10, 3))
    with pytest.raises(ValueError, match="NaN"):
        post.sample((5,), x=torch.tensor([[0.0, math.nan, 1.0]]))
    small = TFMPE(task, **SMALL).append_simulations(torch.zeros(40, 2), torch.zeros(40, 3))
    with pytest.raises(ValueError, match="below one batch"):
        small.train()
    with pytest.raises(ValueError, match="mode"):
        small.train(mode="bottom-up")
    with pytest.raises(ValueError, match="no simulations"):
        TFMPE(task).train()
    with pytest.raises(RuntimeError, match="train"):
        TFMPE(task).build_posterior()
    sir = HierSIR(n_sites=2)
    s = sir.simulate_single_sites(100)
    sir_inf = TFMPE(sir, n_iter=2, **SMALL).append_simulations(s.theta, s.x, s.times)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sir_inf.train(n_sites=2)
    with pytest.raises(ValueError, match="outside"):
        sir_inf.build_posterior().sample((3,), x=torch.full((2, 10), 1.5), times=s.times[:2, 0])
    with pytest.raises(ValueError, match="single-site"):
        TFMPE(task, batch_size=10, **{k: v for k, v in SMALL.items()}).append_simulations(
            torch.zeros(20, 3), torch.zeros(20, 2, 3)
        ).train(mode="lf")


def test_function_valued_observations_may_change_their_number_of_times():
    sir = HierSIR(n_sites=2, n_times=6)
    s = sir.simulate_single_sites(100, torch.Generator().manual_seed(0))
    inf = TFMPE(sir, n_iter=2, **SMALL).append_simulations(s.theta, s.x, s.times)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        inf.train(n_sites=2)
    obs = HierSIR(n_sites=2, n_times=9).simulate(1, 2)
    assert inf.build_posterior().sample((4,), x=obs.x[0], times=obs.times[0]).shape == (4, 3)


# ------------------------------------------------------------------------------------------------- benchmark
def test_benchmark_tiny_rows():
    path_ = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_tfmpe.py"
    spec = importlib.util.spec_from_file_location("bench_tfmpe", path_)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rows = mod.rows("tiny")
    assert rows and all(r.ours > 0 and r.anchor > 0 for r in rows)
