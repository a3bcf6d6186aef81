"""Asymmetric kSoS conformal bands: the dual solver against exact solutions and the Clarabel primal, the symmetric
limit, the representer form, HSIC and the sign-flip test against brute force / their null, coverage within binomial
bounds, scikit-learn and MAPIE conventions, bad input, and the notes' behavioural assertions over seeds."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LinearRegression
from sklearn.utils.estimator_checks import parametrize_with_checks

from icml26.stats.ksos_conformal import (
    BandProblem,
    FeatureMap,
    KSoSConformal,
    hsic_score,
    rbf_kernel,
    solve_dual,
    solve_primal,
    symmetry_test,
)
from icml26.stats.ksos_conformal.data import make_regression_data, mean_function, noise, sigma
from icml26.stats.ksos_conformal.problem import psd_part, quad_forms
from icml26.stats.ksos_conformal.selection import conformal_rank


class TrueMean(RegressorMixin, BaseEstimator):
    """The exact regression function of ``data`` plus an optional shift of ``bias`` sigma(x) (a fitted predictor)."""

    def __init__(self, bias: float = 0.0) -> None:
        self.bias = bias

    def fit(self, X, y):
        self.n_features_in_ = np.asarray(X).shape[1]
        return self

    def predict(self, X):
        X = np.asarray(X, float)
        return mean_function(X) - self.bias * sigma(X)


def _problem(n=40, d=1, mu=0.1, slack=math.inf, seed=0, reg=1e-2, kind="exponential"):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d))
    r = sigma(X) * noise(kind, n, rng)
    r /= np.sqrt(np.mean(r**2))
    return BandProblem(FeatureMap.fit(X, 0.5).transform(X), r, reg, mu, slack)


def _fitted(n, d, kind, seed, bias=0.0):
    rng = np.random.default_rng(seed)
    return [make_regression_data(m, d, kind, rng) for m in n], TrueMean(bias).fit(np.zeros((1, d)), None)


# ------------------------------------------------------------------------------------------- the solvers
@pytest.mark.parametrize("slack", [math.inf, 10.0])
@pytest.mark.parametrize("mu", [0.0, 0.003, 0.1, math.inf])
def test_dual_matches_clarabel_primal_at_n40(mu, slack):
    problem = _problem(mu=mu, slack=slack)
    dual = solve_dual(problem, tol=1e-6, max_iter=20000)
    primal = solve_primal(problem)
    assert dual.converged
    # notes: objectives agree to 1e-3 at n = 40 (recorded: ~1e-7)
    assert dual.primal_value == pytest.approx(primal.dual_value, rel=1e-4)
    assert dual.dual_value <= primal.dual_value * (1 + 1e-7)
    f_dual = problem.fitted(dual.C_upper, dual.C_lower)
    f_primal = problem.fitted(primal.C_upper, primal.C_lower)
    assert np.max(np.abs(f_dual - f_primal)) <= 2e-3 * np.max(f_primal)


def test_rank_one_problem_matches_its_exact_solution():
    """One feature: scalars c+- >= 0, hard constraints c+ >= a, c- >= b; the optimum of the 2-d box QP by L-BFGS-B."""
    rng = np.random.default_rng(3)
    n = 30
    v = rng.uniform(0.5, 1.5, n)
    r = rng.standard_normal(n)
    lam, mu = 0.05, 0.2
    problem = BandProblem(v[:, None], r, lam, mu)
    m = float(np.mean(v**2))
    a = np.max(r[r >= 0] ** 2 / v[r >= 0] ** 2)
    b = np.max(r[r < 0] ** 2 / v[r < 0] ** 2)

    def objective(c):
        return m * (c[0] + c[1]) + lam * (c[0] ** 2 + c[1] ** 2) + mu * (c[0] - c[1]) ** 2

    exact = minimize(objective, [a + 1, b + 1], bounds=[(a, None), (b, None)], method="L-BFGS-B", tol=1e-14).x
    sol = solve_dual(problem, tol=1e-9, max_iter=50000)
    assert sol.C_upper[0, 0] == pytest.approx(exact[0], rel=1e-4)
    assert sol.C_lower[0, 0] == pytest.approx(exact[1], rel=1e-4)
    assert sol.primal_value == pytest.approx(objective(exact), rel=1e-7)


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(4, 14),
    r=st.integers(1, 4),
    mu=st.sampled_from([0.0, 0.05, 1.0, math.inf]),
    slack=st.sampled_from([math.inf, 3.0]),
    seed=st.integers(0, 2**16),
)
def test_weak_duality_and_certified_solution(n, r, mu, slack, seed):
    """Any dual-feasible point is below any primal-feasible point; the solver's certificate holds. Features have
    unit norm, as the exact Gaussian-kernel features do (k(x, x) = 1)."""
    rng = np.random.default_rng(seed)
    V = rng.normal(size=(n, r)) + 0.5
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    problem = BandProblem(V, rng.normal(size=n), 0.1, mu, slack)
    alpha = rng.uniform(0, min(problem.alpha_bound, 5.0), n)
    Z = [psd_part(A @ A.T) for A in rng.normal(size=(2, r, r))]
    dual_value, _, _ = problem.dual_parts(alpha, *Z)
    t = max(1.0, float(np.max(problem.targets / np.maximum(np.sum(V * V, 1), 1e-12))))
    feasible = t * np.eye(r)  # f_i = t |v_i|^2 >= y_i
    assert dual_value <= problem.primal_value(feasible, feasible) + 1e-9
    sol = solve_dual(problem, tol=1e-5, max_iter=20000)
    assert sol.converged and sol.gap >= -1e-8
    for C in (sol.C_upper, sol.C_lower):
        assert np.linalg.eigvalsh(C).min() >= -1e-10
    if math.isinf(slack):
        assert np.all(problem.fitted(sol.C_upper, sol.C_lower) >= problem.targets * (1 - 1e-9) - 1e-12)


def test_symmetric_limit_is_exact():
    sym = solve_dual(_problem(n=60, mu=math.inf), tol=1e-7, max_iter=20000)
    np.testing.assert_array_equal(sym.C_upper, sym.C_lower)
    near = solve_dual(_problem(n=60, mu=1e4), tol=1e-7, max_iter=20000)
    V = _problem(n=60).V
    f_up, f_lo, f_sym = quad_forms(V, near.C_upper), quad_forms(V, near.C_lower), quad_forms(V, sym.C_upper)
    assert np.linalg.norm(f_up - f_lo) / np.linalg.norm(f_up) < 1e-3  # notes: at mu = 1e4
    assert np.linalg.norm(f_up - f_sym) / np.linalg.norm(f_sym) < 1e-3
    # and mu = 0 on right-skewed noise: the lower side is far below the upper one
    free = solve_dual(_problem(n=60, mu=0.0), tol=1e-7, max_iter=20000)
    assert np.mean(quad_forms(V, free.C_lower)) < 0.5 * np.mean(quad_forms(V, free.C_upper))


def test_feature_map_exact_and_nystrom():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    K = rbf_kernel(X, X, 1.3)
    exact = FeatureMap.fit(X, 1.3)
    V = exact.transform(X)
    np.testing.assert_allclose(V @ V.T, K, atol=1e-8)
    nys = FeatureMap.fit(X, 1.3, n_components=20, rng=np.random.default_rng(1))
    Vz = nys.transform(nys.anchors)
    np.testing.assert_allclose(Vz @ Vz.T, rbf_kernel(nys.anchors, nys.anchors, 1.3), atol=1e-8)
    C = psd_part(rng.normal(size=(nys.rank, nys.rank)))
    B = nys.representer(C)
    kz = nys.kernel_to_anchors(X)
    np.testing.assert_allclose(np.einsum("ij,jk,ik->i", kz, B, kz), quad_forms(nys.transform(X), C), rtol=1e-8)


# -------------------------------------------------------------------------------------- HSIC and the test
def test_hsic_matches_the_brute_force_formula_and_detects_dependence():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    S = X[:, 0] ** 2 + 0.1 * rng.normal(size=40)

    def gram(A):
        A = A.reshape(len(A), -1)
        d2 = ((A[:, None, :] - A[None, :, :]) ** 2).sum(-1)
        med = np.median(np.sqrt(d2[np.triu_indices(len(A), 1)]))
        return np.exp(-d2 / (2 * med**2))

    K, L = gram(S), gram(X)
    n = 40
    brute = (K * L).sum() / n**2 - 2 * (K.sum(1) * L.sum(1)).sum() / n**3 + K.sum() * L.sum() / n**4
    assert hsic_score(S, X) == pytest.approx(brute, rel=1e-10)
    independent = np.mean([hsic_score(rng.normal(size=200), rng.normal(size=(200, 2))) for _ in range(5)])
    assert hsic_score(X[:, 0] ** 2, X) > 5 * independent


def _selection_bands(m=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (m, 1))
    f_sym = sigma(X) ** 2 * 2.7
    f_up = np.stack([f_sym * 1.6, f_sym * 1.2])
    f_lo = np.stack([f_sym * 0.4, f_sym * 0.8])
    return X, f_up, f_lo, f_sym


def test_symmetry_test_is_valid_under_symmetric_residuals_and_powerful_under_skew():
    X, f_up, f_lo, f_sym = _selection_bands()
    rng = np.random.default_rng(7)
    sig = sigma(X)
    level, reps = 0.1, 300
    p_null = [
        symmetry_test(sig * rng.standard_normal(len(sig)), f_up, f_lo, f_sym, (0.0, 1.0), n_flips=99, rng=rng).pvalue
        for _ in range(reps)
    ]
    rate = np.mean(np.array(p_null) <= level)
    assert 0.1 - 3 * math.sqrt(0.09 / reps) <= rate <= 0.1 + 3 * math.sqrt(0.09 / reps)  # exact level, binomial
    skewed = [
        symmetry_test(sig * (rng.exponential(1, len(sig)) - 0.7), f_up, f_lo, f_sym, (0.0, 1.0), n_flips=99, rng=rng)
        for _ in range(50)
    ]
    assert np.mean([t.reject for t in skewed]) > 0.8
    assert all(t.selected == 0.0 for t in skewed if t.reject)  # the band shaped like the skew


# ---------------------------------------------------------------------------------------------- coverage
def test_calibrated_quantile_is_the_conformal_order_statistic():
    (tr, cal), pred = _fitted((200, 57), 1, "gamma", 0)
    est = KSoSConformal(pred, symmetry_penalty=0.03, length_scale=0.5, random_state=0).fit(tr.X, tr.y)
    est.conformalize(cal.X, cal.y)
    lo, up = est.predict_scale(cal.X)
    r = cal.y - pred.predict(cal.X)
    scores = np.where(r >= 0, r / up, -r / lo)
    k = math.ceil(58 * 0.9)
    assert est.quantile_[0] == pytest.approx(np.sort(scores)[k - 1], rel=1e-10)
    assert conformal_rank(57, 0.9) == k


def test_marginal_coverage_over_replications_is_within_binomial_bounds():
    (tr,), pred = _fitted((300,), 1, "exponential", 1, bias=0.3)
    est = KSoSConformal(pred, length_scale=0.5, random_state=1).fit(tr.X, tr.y)
    rng = np.random.default_rng(11)
    n_cal, n_test, reps = 50, 200, 300
    cover = []
    for _ in range(reps):
        cal, test = (
            make_regression_data(n_cal, 1, "exponential", rng),
            make_regression_data(n_test, 1, "exponential", rng),
        )
        _, iv = est.conformalize(cal.X, cal.y - 0.0).predict_interval(test.X)
        cover.append(np.mean((test.y >= iv[:, 0, 0]) & (test.y <= iv[:, 1, 0])))
    k = conformal_rank(n_cal, 0.9)
    se = np.std(cover, ddof=1) / math.sqrt(reps)
    # exact P(cover) lies in [k / (n + 1), (k + 1) / (n + 1)] for continuous scores
    assert k / (n_cal + 1) - 4 * se <= np.mean(cover) <= (k + 1) / (n_cal + 1) + 4 * se


def test_conditional_coverage_is_reported_and_adaptive():
    """On heteroscedastic data the kSoS band's width follows sigma(x): the high-noise bins are not starved."""
    (tr, cal, test), pred = _fitted((300, 300, 3000), 1, "normal", 2)
    est = KSoSConformal(pred, random_state=2).fit(tr.X, tr.y).conformalize(cal.X, cal.y)
    _, iv = est.predict_interval(test.X)
    covered = (test.y >= iv[:, 0, 0]) & (test.y <= iv[:, 1, 0])
    bins = np.digitize(np.abs(test.X[:, 0]), [0.25, 0.5, 0.75])
    per_bin = [covered[bins == b].mean() for b in range(4)]
    width = iv[:, 1, 0] - iv[:, 0, 0]
    assert min(per_bin) > 0.8
    assert width[bins == 3].mean() > 2 * width[bins == 0].mean()  # sigma ratio of the outer/inner bins ~ 3


# --------------------------------------------------------------------------------- estimator conventions
@parametrize_with_checks(
    [KSoSConformal(prefit=False, n_components=10, n_flips=19, symmetry_grid=(0.0,), random_state=0)]
)
def test_scikit_learn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)


def test_mapie_shapes_multiple_levels_and_nesting():
    (tr, cal, test), pred = _fitted((150, 100, 50), 2, "gamma", 3)
    est = KSoSConformal(pred, confidence_level=[0.8, 0.9], random_state=3).fit(tr.X, tr.y)
    y_pred, iv = est.conformalize(cal.X, cal.y).predict_interval(test.X)
    assert y_pred.shape == (50,) and iv.shape == (50, 2, 2)
    assert np.all(iv[:, 0, 1] <= iv[:, 0, 0]) and np.all(iv[:, 1, 1] >= iv[:, 1, 0])
    np.testing.assert_allclose(y_pred, pred.predict(test.X))
    assert est.predict(test.X).shape == (50,)


def test_representer_coefficients_give_the_band():
    (tr, test), pred = _fitted((120, 30), 2, "exponential", 4)
    est = KSoSConformal(pred, symmetry_penalty=0.0, random_state=4).fit(tr.X, tr.y)
    Xs = (test.X - est.x_mean_) / est.x_scale_
    kz = rbf_kernel(Xs, est.landmarks_, est.length_scale_)
    f_up = np.einsum("ij,jk,ik->i", kz, est.A_upper_, kz)
    f_lo = np.einsum("ij,jk,ik->i", kz, est.A_lower_, kz)
    lo, up = est.predict_scale(test.X)
    np.testing.assert_allclose(up**2, np.maximum(f_up, 1e-10 * est.residual_scale_**2), rtol=1e-6)
    np.testing.assert_allclose(lo**2, np.maximum(f_lo, 1e-10 * est.residual_scale_**2), rtol=1e-6)


def test_bands_are_equivariant_to_shifting_and_scaling_the_data():
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, (260, 2))
    y = 2 * X[:, 0] + sigma(X) * noise("gamma", 260, rng)
    X_tr, y_tr, X_cal, y_cal, X_te = X[:160], y[:160], X[160:], y[160:], rng.uniform(-1, 1, (20, 2))

    def band(a, b, shift):
        est = KSoSConformal(prefit=False, random_state=0).fit(X_tr * 3 + shift, a * y_tr + b)
        return est.conformalize(X_cal * 3 + shift, a * y_cal + b).predict_interval(X_te * 3 + shift)[1]

    base = band(1.0, 0.0, 0.0)
    np.testing.assert_allclose(band(1e3, -5e4, 100.0), 1e3 * base - 5e4, rtol=1e-6, atol=1e-5)


def test_cvxpy_solver_path_agrees_with_the_dual():
    (tr, cal, test), pred = _fitted((50, 60, 40), 1, "exponential", 6, bias=0.3)
    kw = dict(symmetry_penalty=0.03, length_scale=0.5, n_components=15, random_state=6)
    dual = KSoSConformal(pred, tol=1e-7, max_iter=50000, **kw).fit(tr.X, tr.y).conformalize(cal.X, cal.y)
    primal = KSoSConformal(pred, solver="cvxpy", **kw).fit(tr.X, tr.y).conformalize(cal.X, cal.y)
    np.testing.assert_allclose(dual.predict_interval(test.X)[1], primal.predict_interval(test.X)[1], rtol=2e-3)


# ------------------------------------------------------------------------------------------- bad input
@pytest.fixture(scope="module")
def fitted_band():
    (tr,), pred = _fitted((60,), 1, "normal", 7)
    return KSoSConformal(pred, length_scale=0.5, symmetry_penalty=math.inf).fit(tr.X, tr.y), pred


def test_too_few_calibration_points_is_one_clear_error(fitted_band):
    est, _ = fitted_band
    X = np.linspace(-1, 1, 8)[:, None]
    message = r"too few calibration points for confidence_level 0\.9: got 8, need at least 9"
    with pytest.raises(ValueError, match=message):
        est.conformalize(X, X[:, 0])


@pytest.mark.parametrize("where", ["X", "y"])
def test_nan_is_one_clear_error(fitted_band, where):
    est, _ = fitted_band
    X, y = np.zeros((20, 1)), np.zeros(20)
    (X if where == "X" else y)[3] = np.nan
    with pytest.raises(ValueError, match=f"Input {where} contains NaN"):
        est.conformalize(X, y)
    with pytest.raises(ValueError, match=f"Input {where} contains NaN"):
        KSoSConformal(LinearRegression(), prefit=False).fit(X, y)


def test_mismatched_lengths_is_one_clear_error(fitted_band):
    est, _ = fitted_band
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        est.conformalize(np.zeros((20, 1)), np.zeros(19))


@pytest.mark.parametrize("level", [0.0, 1.0, 1.5, -0.1, [0.9, 1.2], "0.9"])
def test_confidence_level_outside_0_1_is_one_clear_error(level):
    with pytest.raises(ValueError, match=r"confidence_level must be a number in \(0, 1\)"):
        KSoSConformal(LinearRegression(), prefit=False, confidence_level=level).fit(np.zeros((20, 1)), np.zeros(20))


def test_other_user_mistakes_get_clear_errors(fitted_band):
    est, pred = fitted_band
    with pytest.raises(NotFittedError, match="call conformalize"):
        KSoSConformal(pred, length_scale=0.5).fit(np.zeros((30, 1)), np.zeros(30)).predict_interval(np.zeros((2, 1)))
    with pytest.raises(NotFittedError, match="prefit=True needs an estimator already fitted"):
        KSoSConformal(LinearRegression()).fit(np.zeros((20, 1)), np.zeros(20))
    with pytest.raises(ValueError, match="expecting 1 features"):
        est.predict_scale(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="0 sample"):
        est.conformalize(np.zeros((0, 1)), np.zeros(0))
    bad_params = (
        dict(reg=0.0),
        dict(symmetry_penalty=-1.0),
        dict(solver="scs"),
        dict(slack=-2.0),
        dict(length_scale=math.inf),
        dict(symmetry_grid=(-1.0,)),
        dict(symmetry_grid=()),
        dict(n_flips=0),
        dict(cv=1),
        dict(max_iter=0),
        dict(tol=0.0),
    )
    for bad in bad_params:
        with pytest.raises(ValueError, match=next(iter(bad))):
            KSoSConformal(pred, **bad).fit(np.zeros((20, 1)), np.zeros(20))
    with pytest.raises(ValueError, match="max_iter >= 1"):
        solve_dual(_problem(n=10), max_iter=0)


# ------------------------------------------------------------------------------ the notes' assertions
def test_asymmetric_band_is_narrower_than_symmetric_with_a_biased_predictor_over_seeds():
    """Biased-exponential case: a moderate penalty (mu = 3 lam) beats symmetric kSoS in >= 4 of 5 seeds."""
    wins = []
    for seed in range(5):
        (tr, cal, test), pred = _fitted((200, 200, 2000), 1, "exponential", 10 + seed, bias=0.3)

        def width(mu, tr=tr, cal=cal, test=test, pred=pred, seed=seed):
            est = KSoSConformal(pred, symmetry_penalty=mu, length_scale=0.5, random_state=seed)
            iv = est.fit(tr.X, tr.y).conformalize(cal.X, cal.y).predict_interval(test.X)[1]
            return np.mean(iv[:, 1, 0] - iv[:, 0, 0])

        wins.append(width(0.03) < width(math.inf))
    assert sum(wins) >= 4


def test_automatic_penalty_keeps_symmetry_on_gaussian_noise_over_seeds():
    picks = []
    for seed in range(5):
        (tr,), pred = _fitted((200,), 1, "normal", 20 + seed)
        est = KSoSConformal(pred, length_scale=0.5, random_state=seed).fit(tr.X, tr.y)
        picks.append(math.isinf(est.symmetry_penalty_))
        assert est.symmetry_test_ is not None and 0 < est.symmetry_test_.pvalue <= 1
    assert sum(picks) >= 4  # notes: symmetric in at least 4 of 5 seeds


def test_dataframe_inputs_reach_the_estimator_with_their_feature_names():
    pd = pytest.importorskip("pandas")
    (model, tr, cal, test), _ = _fitted((80, 60, 40, 10), 2, "normal", 8)
    frame = lambda split: pd.DataFrame(split.X, columns=["a", "b"])  # noqa: E731
    fitted = LinearRegression().fit(frame(model), model.y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # scikit-learn warns when a DataFrame-fitted model gets an array
        est = KSoSConformal(fitted, length_scale=0.5, symmetry_penalty=0.0).fit(frame(tr), tr.y)
        y_pred, iv = est.conformalize(frame(cal), cal.y).predict_interval(frame(test))
    np.testing.assert_allclose(y_pred, fitted.predict(frame(test)))
    assert iv.shape == (10, 2, 1)
