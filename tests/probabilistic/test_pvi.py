"""PVI: scoring rules against closed forms and scoringrules, exact Bayes against the ELBO special case, the toy's
claims over seeds with margins, invariance to where the data sit, the convergence check, threads, the radon data
and splits, clear errors on bad input, and the benchmark's tiny size."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

from icml26.probabilistic.pvi import (
    ELBOVI,
    Affine,
    ConvergenceWarning,
    DiagonalGaussian,
    Frame,
    FullRankGaussian,
    ModelSpec,
    NormalInverseGammaPrior,
    PredictiveVI,
    crps_ensemble,
    energy_score,
    exact_posterior,
    gaussian_crps,
    linear_regression,
    mixture_log_score,
    normal_location,
    particle_scores,
)
from icml26.probabilistic.pvi.data import normal_means, radon, split_by_county, split_by_house
from icml26.probabilistic.pvi.scores import (
    expected_gaussian_crps,
    expected_gaussian_log_score,
    gaussian_mixture_quadratic_score,
)

sr = pytest.importorskip("scoringrules")
finite = st.floats(-50, 50, allow_nan=False, width=32)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


# ---------------------------------------------------------------------------------------------- scoring rules
@settings(max_examples=50, deadline=None)
@given(arrays(np.float64, (7, 3), elements=finite), arrays(np.float64, (3,), elements=finite))
def test_crps_ensemble_equals_brute_force_pairs(samples, y):
    x, obs = torch.tensor(samples), torch.tensor(y)
    K = x.shape[0]
    pairs = (x[:, None] - x[None]).abs().sum(dim=(0, 1))
    brute_fair = (x - obs).abs().mean(0) - pairs / (2 * K * (K - 1))
    brute_emp = (x - obs).abs().mean(0) - pairs / (2 * K * K)
    torch.testing.assert_close(crps_ensemble(x, obs), brute_fair, rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(crps_ensemble(x, obs, fair=False), brute_emp, rtol=1e-9, atol=1e-9)


def test_crps_matches_scoringrules_and_the_gaussian_closed_form():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(50, 40)), rng.normal(size=40)
    ours = crps_ensemble(torch.tensor(x), torch.tensor(y)).numpy()
    np.testing.assert_allclose(ours, sr.crps_ensemble(y, x.T, estimator="fair"), rtol=1e-10)
    np.testing.assert_allclose(
        gaussian_crps(torch.tensor(0.3), torch.tensor(1.7), torch.tensor(y)).numpy(),
        sr.crps_normal(y, 0.3, 1.7),
        rtol=1e-6,  # scoringrules' normal CDF is accurate to ~1e-8
    )
    big = torch.tensor(rng.normal(0.3, 1.7, size=(200_000, 3)))
    np.testing.assert_allclose(
        crps_ensemble(big, torch.tensor(y[:3])).numpy(),
        gaussian_crps(torch.tensor(0.3), torch.tensor(1.7), torch.tensor(y[:3])).numpy(),
        atol=0.01,
    )


def test_energy_score_matches_scoringrules_and_reduces_to_crps():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(30, 10, 2)), rng.normal(size=(10, 2))
    ours = energy_score(torch.tensor(x), torch.tensor(y), fair=False).numpy()
    np.testing.assert_allclose(ours, sr.es_ensemble(y, x.transpose(1, 0, 2), estimator="nrg"), rtol=1e-8)
    one_d = torch.tensor(x[..., :1])
    torch.testing.assert_close(
        energy_score(one_d, torch.tensor(y[:, :1])), crps_ensemble(one_d[..., 0], torch.tensor(y[:, 0]))
    )


def test_energy_score_gradient_is_finite_at_the_zero_diagonal():
    x = torch.randn(8, 5, 3, requires_grad=True)
    energy_score(x, torch.zeros(5, 3)).sum().backward()
    assert torch.isfinite(x.grad).all()


def test_mixture_log_score_is_log_mean_exp():
    ll = torch.randn(16, 9, dtype=torch.float64) * 3
    torch.testing.assert_close(mixture_log_score(ll), torch.log(torch.exp(ll).mean(0)))
    same = torch.full((5, 4), -1.25, dtype=torch.float64)
    torch.testing.assert_close(mixture_log_score(same), same[0])


def test_quadratic_score_against_numerical_integration():
    mean = torch.tensor([[0.0], [1.5], [-0.7]], dtype=torch.float64)
    sd = torch.tensor([[1.0], [0.5], [2.0]], dtype=torch.float64)
    y = torch.tensor([0.4], dtype=torch.float64)
    grid = np.linspace(-20, 20, 400_001)
    dens = np.mean(
        [stats.norm.pdf(grid, m, s) for m, s in zip(mean[:, 0].numpy(), sd[:, 0].numpy(), strict=True)], axis=0
    )
    expected = 2 * np.mean(stats.norm.pdf(0.4, mean[:, 0].numpy(), sd[:, 0].numpy())) - np.trapezoid(dens**2, grid)
    assert float(gaussian_mixture_quadratic_score(mean, sd, y)[0]) == pytest.approx(expected, rel=1e-6)


def test_expected_gaussian_scores_match_the_paper_files_reference_values():
    assert expected_gaussian_log_score(math.sqrt(5), 2.0 * 0 + math.sqrt(5)) == pytest.approx(-2.224, abs=1e-3)
    assert expected_gaussian_log_score(1.0, math.sqrt(5)) == pytest.approx(-3.419, abs=1e-3)
    rng = np.random.default_rng(2)
    y = torch.tensor(rng.normal(0, 2.0, 400_000))
    mc = gaussian_crps(torch.tensor(0.5), torch.tensor(1.2), y).mean()
    assert float(mc) == pytest.approx(expected_gaussian_crps(1.2, 2.0, bias=0.5), abs=5e-3)


# --------------------------------------------------------------------------------------------- models, Bayes
def test_normal_inverse_gamma_log_prob_against_scipy():
    model = linear_regression(2, prior_sd=3.0, a0=2.0, b0=1.5)
    theta = torch.tensor([[0.3, -1.0, 2.0, -0.2], [1.0, 0.5, -0.3, 0.4]], dtype=torch.float64)
    got = model.prior.log_prob(theta)
    for row, value in zip(theta.numpy(), got.numpy(), strict=True):
        s2 = math.exp(2 * row[-1])
        expected = (
            stats.multivariate_normal.logpdf(row[:-1], np.zeros(3), s2 * 9.0 * np.eye(3))
            + stats.invgamma.logpdf(s2, 2.0, scale=1.5)
            + math.log(2 * s2)
        )
        assert value == pytest.approx(expected, rel=1e-6)


def test_linear_regression_exact_predictive_matches_posterior_draws():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(80, 2))
    y = 1.0 + X @ np.array([0.5, -2.0]) + rng.normal(0, 0.7, 80)
    model = linear_regression(2)
    post = exact_posterior(model, y, X)
    X_new = rng.normal(size=(25, 2))
    y_new = 1.0 + X_new @ np.array([0.5, -2.0]) + rng.normal(0, 0.7, 25)  # typical points: MC error is small there
    draws = post.sample_posterior(50_000, seed=1)
    mc = particle_scores(
        model, draws, torch.tensor(y_new, dtype=torch.float32), torch.tensor(X_new, dtype=torch.float32), "log"
    )
    np.testing.assert_allclose(mc, post.predictive_logpdf(y_new, X_new), atol=0.01)
    np.testing.assert_allclose(draws.std(0).numpy(), post.sd(), rtol=0.03)


@pytest.mark.parametrize("seed", [0, 1])
def test_elbo_special_case_recovers_the_bayes_posterior(seed):
    rng = np.random.default_rng(seed)
    y = normal_means(400, 2.0, rng)
    model = normal_location()
    fit = ELBOVI(model, random_state=seed, n_iter=2000).fit(y)
    assert fit.converged_
    mean, sd = fit.q_.moments()
    bayes = exact_posterior(model, y)
    assert float(mean[0]) == pytest.approx(float(bayes.params["mean"]), abs=0.01)
    assert float(sd[0]) == pytest.approx(float(bayes.params["sd"]), rel=0.1)


def test_full_rank_elbo_recovers_regression_posterior_sds():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 1)) + 2.0  # off-centre: intercept and slope are correlated a posteriori
    y = 0.5 + 1.5 * X[:, 0] + rng.normal(0, 0.5, 300)
    model = linear_regression(1)
    fit = ELBOVI(model, family="fullrank", random_state=0, n_iter=2500).fit(y, X)
    assert fit.converged_
    np.testing.assert_allclose(fit.heterogeneity_report().ratio, 1.0, atol=0.15)


def test_full_rank_gaussian_log_prob_matches_torch():
    fam = FullRankGaussian(3)
    with torch.no_grad():
        fam.off_diag.normal_()
        fam.loc.normal_()
    theta = fam.rsample(6).detach()
    ref = torch.distributions.MultivariateNormal(fam.loc, scale_tril=fam.scale_tril())
    torch.testing.assert_close(fam.log_prob(theta), ref.log_prob(theta))
    torch.testing.assert_close(fam.entropy(), ref.entropy())


# ---------------------------------------------------------------------------------------------- the toy claims
SEEDS = (0, 1, 2)


@pytest.fixture(scope="module")
def toy_fits():
    """PVI (log), likelihood-free PVI (CRPS) and exact Bayes on the misspecified toy, three seeds."""
    torch.set_num_threads(1)
    model, out = normal_location(), []
    for seed in SEEDS:
        rng = np.random.default_rng(100 + seed)
        y, y_test = normal_means(200, 2.0, rng), normal_means(5000, 2.0, rng)
        pvi = PredictiveVI(model, random_state=seed, n_iter=800).fit(y)
        lf = PredictiveVI(model.likelihood_free(), scores={"crps": 1.0}, random_state=seed, n_iter=800).fit(y)
        assert pvi.converged_ and lf.converged_
        out.append((y, y_test, pvi, lf, exact_posterior(model, y)))
    return out


def test_pvi_beats_bayes_by_half_a_nat_on_the_overdispersed_toy(toy_fits):
    for _, y_test, pvi, _, bayes in toy_fits:
        gain = pvi.score(y_test) - bayes.predictive_logpdf(y_test).mean()
        assert gain > 0.5  # analytic gap ~1.2 nats/point


def test_pvi_spread_tracks_tau_while_bayes_is_narrow(toy_fits):
    for _, _, pvi, _, bayes in toy_fits:
        assert 0.7 * 2.0 <= pvi.heterogeneity_report().sd[0] <= 1.3 * 2.0
        assert bayes.sd()[0] < 0.2


def test_likelihood_free_pvi_matches_the_likelihood_based_spread(toy_fits):
    model = normal_location()
    for _, y_test, pvi, lf, _ in toy_fits:
        assert lf.heterogeneity_report(bayes_sd=[1.0]).sd[0] == pytest.approx(
            pvi.heterogeneity_report().sd[0], rel=0.15
        )
        theta = lf.sample_posterior(1000)
        lf_log = particle_scores(model, theta, torch.tensor(y_test, dtype=torch.float32), None, "log").mean()
        assert lf_log == pytest.approx(pvi.score(y_test), abs=0.03)


def test_control_spread_shrinks_with_n():
    model = normal_location()
    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        small = PredictiveVI(model, random_state=seed, n_iter=700).fit(normal_means(100, 0.0, rng))
        large = PredictiveVI(model, random_state=seed, n_iter=700).fit(normal_means(3200, 0.0, rng))
        assert large.heterogeneity_report().sd[0] < 0.75 * small.heterogeneity_report().sd[0]


def test_heterogeneity_report_flags_the_overdispersed_parameter(toy_fits):
    report = toy_fits[0][2].heterogeneity_report()
    assert report.flagged(threshold=3.0) == ("theta",)
    assert report.as_dict()["theta"]["ratio"] > 10


# ------------------------------------------------------------------------------------------ estimator surface
SHORT_FITS = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # a few steps, on purpose


@SHORT_FITS
def test_fit_is_deterministic_and_leaves_the_global_rng_alone():
    y = normal_means(50, 1.0, np.random.default_rng(0))
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a = PredictiveVI(normal_location(), random_state=7, n_iter=100).fit(y)
    after = torch.rand(1)
    b = PredictiveVI(normal_location(), random_state=7, n_iter=100).fit(y)
    assert torch.equal(before, after)
    np.testing.assert_array_equal(a.loss_curve_, b.loss_curve_)


def test_sklearn_clone_and_params():
    from sklearn.base import clone

    est = PredictiveVI(scores={"crps": 1.0}, n_particles=16, random_state=3)
    twin = clone(est)
    assert twin.get_params()["scores"] == {"crps": 1.0} and twin.get_params()["n_particles"] == 16
    assert set(ELBOVI().get_params()) == set(est.get_params()) - {"scores"}


def test_default_model_is_linear_regression_and_minibatches_work():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(500, 2))
    y = X @ np.array([1.0, -1.0]) + rng.normal(0, 0.3, 500)
    est = PredictiveVI(random_state=0, n_iter=1600, batch_size=128).fit(y, X)
    assert est.param_names_ == ("intercept", "x0", "x1", "log_sigma")
    mean, _ = est.q_.moments()
    np.testing.assert_allclose(mean[1:3].numpy(), [1.0, -1.0], atol=0.1)
    sims = est.predictive_sample(X[:7], n=11)
    assert sims.shape == (11, 7)
    assert est.score(y[:50], X[:50], rule="quadratic") > 0


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # the spline's many knots settle slowly
def test_flow_family_fits_the_toy():
    y = normal_means(200, 2.0, np.random.default_rng(6))
    est = PredictiveVI(normal_location(), family="flow", random_state=0, n_iter=600, n_particles=32).fit(y)
    assert 1.0 < est.heterogeneity_report().sd[0] < 3.0
    assert np.isfinite(est.loss_curve_).all()


def test_the_log_outside_the_mixture_is_the_elbo_trap():
    """Same data, same everything: the only difference between the two objectives is where the log sits."""
    y = normal_means(200, 2.0, np.random.default_rng(7))
    pvi = PredictiveVI(normal_location(), random_state=0, n_iter=1000).fit(y)
    elbo = ELBOVI(normal_location(), random_state=0, n_iter=1000).fit(y)
    assert pvi.heterogeneity_report().sd[0] > 10 * elbo.heterogeneity_report().sd[0]


# ------------------------------------------------------------------------- where the data sit, convergence, threads
def _pushed_forward_regression(shift_y: float, scale_y: float, shift_x: float, scale_x: float):
    """linear_regression(1)'s default prior carried through y -> shift_y + scale_y y, x -> shift_x + scale_x x: the
    same model in new units (so that the fit, not the prior, is what the invariance test sees)."""
    M = torch.tensor([[scale_y, -scale_y / scale_x * shift_x], [0.0, scale_y / scale_x]], dtype=torch.float64)
    m0 = torch.tensor([shift_y, 0.0], dtype=torch.float64)
    V0 = M @ (100.0 * torch.eye(2, dtype=torch.float64)) @ M.T / scale_y**2
    return linear_regression(1, prior=NormalInverseGammaPrior(m0.float(), V0.float(), 1.0, scale_y**2)), M


@pytest.mark.parametrize("scores", [{"log": 1.0}, {"log": 1.0, "crps": 1.0}])
def test_regression_fit_is_invariant_to_shifting_and_scaling_y_and_X(scores):
    rng = np.random.default_rng(8)
    X = rng.normal(size=(150, 1))
    y = 1.0 + 2.0 * X[:, 0] + normal_means(150, 1.0, rng)
    a, c = 1e2, 1e3  # y and X both shifted by 1e2 and scaled by 1e3
    model, M = _pushed_forward_regression(a, c, a, c)
    base = PredictiveVI(scores=scores, random_state=0, n_iter=800).fit(y, X)
    moved = PredictiveVI(model, scores=scores, random_state=0, n_iter=800).fit(a + c * y, a + c * X)
    mean, cov = (t.double() for t in base.q_.mean_and_covariance())
    mean_m, cov_m = (t.double() for t in moved.q_.mean_and_covariance())
    # beta' = M beta + (a, 0) and log sigma' = log sigma + log c: map the moved fit back and compare
    back = torch.linalg.solve(M, mean_m[:2] - torch.tensor([a, 0.0], dtype=torch.float64))
    np.testing.assert_allclose(back.numpy(), mean[:2].numpy(), atol=2e-3)
    assert float(mean_m[2] - math.log(c)) == pytest.approx(float(mean[2]), abs=2e-3)
    Minv = torch.linalg.inv(M)
    np.testing.assert_allclose((Minv @ cov_m[:2, :2] @ Minv.T).numpy(), cov[:2, :2].numpy(), rtol=0.01, atol=1e-6)
    assert float(cov_m[2, 2]) == pytest.approx(float(cov[2, 2]), rel=0.01)
    assert moved.score(a + c * y, a + c * X) + math.log(c) == pytest.approx(base.score(y, X), abs=2e-3)
    np.testing.assert_allclose(moved.heterogeneity_report().ratio, base.heterogeneity_report().ratio, rtol=0.01)


def test_normal_location_fit_is_invariant_to_shifting_and_scaling_y():
    y = normal_means(200, 2.0, np.random.default_rng(9))
    a, c = 1e2, 1e3
    base = PredictiveVI(normal_location(), random_state=1, n_iter=800).fit(y)
    moved = PredictiveVI(normal_location(sigma=c, prior_mean=a, prior_sd=10 * c), random_state=1, n_iter=800)
    moved.fit(a + c * y)
    (m, s), (m2, s2) = base.q_.moments(), moved.q_.moments()
    assert float(m2[0]) == pytest.approx(a + c * float(m[0]), rel=1e-5)
    assert float(s2[0]) == pytest.approx(c * float(s[0]), rel=1e-4)


@pytest.mark.parametrize("shift", [5.0, 30.0, 100.0])
def test_uncentred_data_are_fitted_where_they_sit(shift):
    """The review's table: with the location starting at 0 these fits were silently wrong (q mean ~3, sd up to 73)."""
    y = normal_means(200, 2.0, np.random.default_rng(10))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = PredictiveVI(normal_location(), random_state=0, n_iter=800).fit(y + shift)
    mean, sd = est.q_.moments()
    assert float(mean[0]) == pytest.approx(shift + y.mean(), abs=0.3)
    assert 0.7 * 2.0 < float(sd[0]) < 1.3 * 2.0


def _plain_normal_location() -> ModelSpec:
    """A user's model: a likelihood and a prior, no standardize hook and no conjugate form."""
    prior = torch.distributions.Independent(torch.distributions.Normal(torch.zeros(1), torch.full((1,), 1e4)), 1)

    def log_lik(theta, y, X):
        return torch.distributions.Normal(theta[:, :1], 1.0).log_prob(y)

    return ModelSpec(dim=1, prior=prior, log_lik=log_lik)


def test_a_model_without_a_standardize_hook_starts_at_its_map():
    y = 1e3 + normal_means(200, 2.0, np.random.default_rng(11))
    est = PredictiveVI(_plain_normal_location(), random_state=0, n_iter=800).fit(y)
    assert float(est.frame_.shift[0]) == pytest.approx(y.mean(), abs=1e-2)  # the MAP
    assert float(est.frame_.scale[0, 0]) == pytest.approx(1.0, rel=0.01)  # Laplace sd * sqrt(n) = sigma
    mean, sd = est.q_.moments()
    assert float(mean[0]) == pytest.approx(y.mean(), abs=0.3) and 1.4 < float(sd[0]) < 2.6
    report = est.heterogeneity_report()
    assert report.bayes_sd is None and report.ratio is None and report.flagged() == ()


def test_convergence_warning_and_loss_curve():
    y = normal_means(200, 2.0, np.random.default_rng(12))
    with pytest.warns(ConvergenceWarning, match="before converging"):
        short = PredictiveVI(normal_location(), random_state=0, n_iter=100).fit(y)
    assert not short.converged_ and short.loss_curve_.shape == (100,) and short.n_iter_ == 100
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        done = PredictiveVI(normal_location(), random_state=0, n_iter=800).fit(y)
    assert done.converged_ and done.loss_curve_[-100:].mean() < done.loss_curve_[:100].mean()


def test_a_stuck_location_is_flagged_though_the_loss_curve_is_flat():
    """The old start (location 0, the data at 30) with a step size decayed to nothing: the loss flattens, the
    gradient on the location does not vanish."""
    frame = Frame(torch.zeros(1, dtype=torch.float64), torch.eye(1, dtype=torch.float64), torch.zeros(1))
    model = dataclasses.replace(normal_location(), standardize=lambda y, X: frame)
    y = 30.0 + normal_means(200, 2.0, np.random.default_rng(0))
    with pytest.warns(ConvergenceWarning):
        est = PredictiveVI(model, random_state=0, n_iter=800).fit(y)
    assert float(est.q_.moments()[0][0]) < 20  # still far from the data: the warning is not a false alarm


@SHORT_FITS
def test_one_torch_thread_by_default_unless_told_otherwise():
    seen = []
    base = normal_location()

    def log_lik(theta, y, X):
        seen.append(torch.get_num_threads())
        return base.log_lik(theta, y, X)

    model = dataclasses.replace(base, log_lik=log_lik)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        PredictiveVI(model, n_iter=20).fit(np.zeros(10) + 0.5)
        assert set(seen) == {1} and torch.get_num_threads() == 2
        seen.clear()
        PredictiveVI(model, n_iter=20, single_thread=False).fit(np.zeros(10) + 0.5)
        assert set(seen) == {2}
    finally:
        torch.set_num_threads(before)


def test_affine_family_density_and_moments_match_torch():
    base = DiagonalGaussian(2, loc=torch.tensor([0.3, -1.0]), log_scale=-0.5)
    shift, scale = torch.tensor([10.0, -2.0]), torch.tensor([[2.0, -0.7], [0.0, 0.5]])
    fam = Affine(base, shift, scale)
    cov = scale @ torch.diag(torch.exp(2 * base.log_scale.detach())) @ scale.T
    ref = torch.distributions.MultivariateNormal(shift + scale @ base.loc.detach(), covariance_matrix=cov)
    theta = fam.rsample(7).detach()
    torch.testing.assert_close(fam.log_prob(theta), ref.log_prob(theta), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(fam.entropy(), ref.entropy(), rtol=1e-5, atol=1e-5)
    mean, sd = fam.moments()
    torch.testing.assert_close(mean, ref.mean)
    torch.testing.assert_close(sd, torch.sqrt(torch.diagonal(cov)))
    with pytest.raises(ValueError, match="invertible"):
        Frame(torch.zeros(2), torch.zeros(2, 2), torch.zeros(2))


# ---------------------------------------------------------------------------------------------------- data
def test_radon_data_and_splits():
    data = radon()
    assert data.y.shape == (919,) and data.X.shape == (919, 1) and len(np.unique(data.county)) == 85
    rng = np.random.default_rng(0)
    train, test = split_by_house(919, rng)
    assert len(np.intersect1d(train, test)) == 0 and len(train) + len(test) == 919
    train, test = split_by_county(data.county, rng)
    assert not set(data.county[train]) & set(data.county[test])
    assert len(set(data.county[test])) == round(0.3 * 85)


# ------------------------------------------------------------------------------------------------ bad input
@SHORT_FITS
def test_bad_input_gives_clear_errors():
    model = normal_location()
    with pytest.raises(ValueError, match="log_lik or a simulate"):
        ModelSpec(dim=1, prior=model.prior)
    with pytest.raises(ValueError, match="shape"):
        PredictiveVI(n_iter=1).fit(np.zeros(5), np.zeros((4, 1)))
    with pytest.raises(ValueError, match="non-finite"):
        PredictiveVI(model, n_iter=1).fit(np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match="unknown scoring rule"):
        PredictiveVI(model, scores={"brier": 1.0}, n_iter=1).fit(np.zeros(3))
    with pytest.raises(ValueError, match="needs a likelihood"):
        PredictiveVI(model.likelihood_free(), n_iter=1).fit(np.zeros(3))
    with pytest.raises(ValueError, match="n_particles"):
        PredictiveVI(model, n_particles=1).fit(np.zeros(3))
    with pytest.raises(ValueError, match="covariate columns"):
        PredictiveVI(linear_regression(2), n_iter=1).fit(np.zeros(3), np.zeros((3, 1)))
    with pytest.raises(ValueError, match="unknown family"):
        PredictiveVI(model, family="mixture", n_iter=1).fit(np.zeros(3))
    with pytest.raises(RuntimeError, match="not fitted"):
        PredictiveVI(model).score(np.zeros(3))
    fitted = PredictiveVI(model, n_iter=5).fit(np.zeros(3))
    with pytest.raises(ValueError, match="unknown scoring rule"):
        fitted.score(np.zeros(3), rule="hinge")
    with pytest.raises(ValueError, match="bayes_sd"):
        fitted.heterogeneity_report(bayes_sd=[1.0, 2.0])


@SHORT_FITS
def test_the_reviews_bad_inputs_give_one_clear_error_each():
    with pytest.raises(ValueError, match="scalar observations"):
        PredictiveVI(n_iter=5).fit(np.zeros((6, 2)))  # was a raw torch RuntimeError
    with pytest.raises(ValueError, match="takes no covariates"):
        PredictiveVI(normal_location(), n_iter=5).fit(np.zeros(6), np.zeros((6, 1)))  # X was silently ignored
    with pytest.raises(ValueError, match="n_eval_particles"):
        PredictiveVI(normal_location(), n_eval_particles=0, n_iter=5).fit(np.zeros(6))  # was "math domain error"
    fitted = PredictiveVI(normal_location(), n_iter=5).fit(np.zeros(6))
    with pytest.raises(ValueError, match="n_eval_particles"):
        fitted.set_params(n_eval_particles=1).score(np.zeros(3))
    with pytest.raises(ValueError, match="declared conjugate form"):  # was a guess from the parameter names
        exact_posterior(_plain_normal_location(), np.zeros(6))
    with pytest.raises(ValueError, match="no covariates"):
        exact_posterior(normal_location(), np.zeros(6), np.zeros((6, 1)))
    with pytest.raises(ValueError, match="shape"):
        exact_posterior(linear_regression(2), np.zeros(6), np.zeros((6, 1)))
    with pytest.raises(ValueError, match="takes no covariates"):
        fitted.predictive_sample(np.zeros((3, 1)))
    assert PredictiveVI(n_iter=5).fit(np.zeros((6, 1))).param_names_ == ("intercept", "log_sigma")  # column y


# -------------------------------------------------------------------------------------------------- benchmark
def test_benchmark_tiny_size_runs():
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_pvi.py"
    spec = importlib.util.spec_from_file_location("bench_pvi", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = bench.rows("tiny")
    assert rows and all(r.paper == "pvi" and r.ours > 0 and r.anchor > 0 for r in rows)
