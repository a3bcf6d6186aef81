"""NAMMD: estimators against brute force, population values against Monte Carlo, the closeness tests' level
and power, and bad input."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.stats.nammd import (
    GaussianKernel,
    MMDClosenessTest,
    NAMMDClosenessTest,
    NAMMDTwoSampleTest,
    PrecomputedKernel,
    gaussian_expected_kernel,
    mmd2_u,
    nammd,
    paired_stats,
    population_discrete,
    population_gaussian,
    select_bandwidth,
)
from icml26.stats.nammd.reproduce import gaussian_boundary, gaussian_shift

K1 = GaussianKernel(1.0)


def brute_force(X, Y, k):
    """Direct double loops over i != j: H, D, MMD^2_u, Reg_u."""
    m = len(X)
    kk = lambda a, b: math.exp(-float(np.sum((a - b) ** 2)) / k.bandwidth**2)  # noqa: E731
    H = np.zeros((m, m))
    D = np.zeros((m, m))
    for i, j in itertools.product(range(m), range(m)):
        if i != j:
            H[i, j] = kk(X[i], X[j]) + kk(Y[i], Y[j]) - kk(X[i], Y[j]) - kk(Y[i], X[j])
            D[i, j] = 4.0 - kk(X[i], X[j]) - kk(Y[i], Y[j])
    pairs = m * (m - 1)
    return H, H.sum() / pairs, D.sum() / pairs


def test_estimates_match_brute_force():
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(9, 3)), rng.normal(0.4, 1.2, size=(9, 3))
    _, mmd2, reg = brute_force(X, Y, K1)
    assert mmd2_u(X, Y, K1) == pytest.approx(mmd2, rel=1e-12, abs=1e-14)
    assert nammd(X, Y, K1) == pytest.approx(mmd2 / reg, rel=1e-12)


def test_unbiased_variance_matches_enumeration_of_triples_and_quadruples():
    """The closed form equals the U-estimates of E[h12 h13], E[h12^2] and theta^2 by explicit enumeration."""
    rng = np.random.default_rng(1)
    m = 7
    X, Y = rng.normal(size=(m, 2)), rng.normal(0.5, 1.0, size=(m, 2))
    H, _, _ = brute_force(X, Y, K1)
    idx = range(m)
    e_h2 = np.mean([H[i, j] ** 2 for i, j in itertools.permutations(idx, 2)])
    e_h12h13 = np.mean([H[i, j] * H[i, k] for i, j, k in itertools.permutations(idx, 3)])
    theta2 = np.mean([H[a, b] * H[c, d] for a, b, c, d in itertools.permutations(idx, 4)])
    pairs = m * (m - 1)
    expected = 4 * (m - 2) / pairs * (e_h12h13 - theta2) + 2 / pairs * (e_h2 - theta2)
    stats = paired_stats(X, Y, K1)
    assert stats.var_mmd2_unbiased_raw() == pytest.approx(expected, rel=1e-10)
    # at this tiny m the unbiased estimate is negative: the test statistic falls back to the asymptotic one
    assert expected < 0 and stats.var_mmd2("unbiased") == stats.var_mmd2("asymptotic")


def test_variance_estimators_match_monte_carlo():
    rng = np.random.default_rng(2)
    R, m = 6000, 40
    X = rng.normal(size=(R, m, 2))
    Y = rng.normal(size=(R, m, 2)) + np.array([0.7, 0.0])
    s = paired_stats(X, Y, K1)
    mc_mmd, mc_nammd = s.mmd2.var(), s.nammd.var()
    # 6000 replications: the MC variance itself has ~2% relative error
    assert s.var_mmd2("unbiased").mean() == pytest.approx(mc_mmd, rel=0.06)
    # The asymptotic forms keep only the leading 1/m term: at m = 40 both overestimate by ~20% (recorded).
    assert s.var_mmd2("asymptotic").mean() == pytest.approx(mc_mmd, rel=0.35)
    assert s.var_nammd_delta().mean() == pytest.approx(mc_nammd, rel=0.35)
    assert s.var_nammd_delta().mean() > 0.9 * mc_nammd


@settings(max_examples=25)
@given(m=st.integers(4, 40), block=st.integers(1, 50), seed=st.integers(0, 1000))
def test_blocked_pass_equals_single_block(m, block, seed):
    rng = np.random.default_rng(seed)
    X, Y = rng.normal(size=(m, 3)), rng.normal(size=(m, 3))
    a, b = paired_stats(X, Y, K1, block=block), paired_stats(X, Y, K1, block=10_000)
    np.testing.assert_allclose(a.row_h, b.row_h, atol=1e-12)
    np.testing.assert_allclose(a.row_d, b.row_d, atol=1e-12)
    assert a.sum_h2 == pytest.approx(b.sum_h2, abs=1e-10)


def test_batch_equals_one_by_one():
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(4, 15, 2)), rng.normal(size=(4, 15, 2))
    batch = paired_stats(X, Y, K1)
    for i in range(4):
        one = paired_stats(X[i], Y[i], K1)
        assert batch.nammd[i] == pytest.approx(float(one.nammd), rel=1e-12)
        assert batch.var_mmd2()[i] == pytest.approx(float(one.var_mmd2()), rel=1e-10)


@pytest.mark.parametrize(
    ("mu", "S", "bw"),
    [([0.0, 0.0], [[2.0, 0.0], [0.0, 2.0]], 1.0), ([1.0, -0.5], [[1.0, 0.3], [0.3, 0.5]], 0.7), ([0.5], [[0.2]], 2.0)],
)
def test_gaussian_closed_form_matches_monte_carlo(mu, S, bw):
    rng = np.random.default_rng(4)
    D = rng.multivariate_normal(mu, S, size=400_000)
    samples = np.exp(-np.sum(D**2, axis=1) / bw**2)
    se = samples.std() / math.sqrt(samples.size)
    assert gaussian_expected_kernel(mu, S, bw) == pytest.approx(samples.mean(), abs=5 * se)


def test_gaussian_population_matches_u_statistic_mean():
    rng = np.random.default_rng(5)
    v = population_gaussian([0, 0], 0.25 * np.eye(2), [0.6, 0], 0.25 * np.eye(2), 1.0)
    X = 0.5 * rng.normal(size=(8000, 30, 2))
    Y = 0.5 * rng.normal(size=(8000, 30, 2)) + [0.6, 0]
    s = paired_stats(X, Y, K1)
    assert s.mmd2.mean() == pytest.approx(v.mmd2, abs=4 * s.mmd2.std() / math.sqrt(8000))
    assert s.reg.mean() == pytest.approx(v.reg, abs=4 * s.reg.std() / math.sqrt(8000))


def test_discrete_population_is_what_the_u_statistics_estimate():
    """On a 6-point support (draws coincide often) the unbiased U-statistics average to p'Gp, q'Gq, p'Gq."""
    rng = np.random.default_rng(6)
    Z = rng.normal(size=(6, 2))
    p, q = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
    kern = PrecomputedKernel(K1(Z, Z))
    v = population_discrete(Z, p, q, kernel=K1)
    R, m = 20000, 12
    X = rng.choice(6, size=(R, m, 1), p=p).astype(float)
    Y = rng.choice(6, size=(R, m, 1), p=q).astype(float)
    s = paired_stats(X, Y, kern)
    assert s.mmd2.mean() == pytest.approx(v.mmd2, abs=4 * s.mmd2.std() / math.sqrt(R))
    assert s.reg.mean() == pytest.approx(v.reg, abs=4 * s.reg.std() / math.sqrt(R))
    # The index kernel and the feature kernel agree exactly on the same draws.
    feat = paired_stats(Z[X[:50, :, 0].astype(int)], Z[Y[:50, :, 0].astype(int)], K1)
    np.testing.assert_allclose(feat.nammd, s.nammd[:50], rtol=1e-12)


@settings(max_examples=40)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 8), bw=st.floats(0.1, 10.0))
def test_population_nammd_in_unit_interval(seed, n, bw):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, 2)) * rng.uniform(0.1, 5)
    p, q = rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(n))
    v = population_discrete(Z, p, q, kernel=GaussianKernel(bw))
    assert -1e-12 <= v.nammd <= 1 + 1e-12
    assert v.reg >= 2.0 - 1e-12  # |mu|^2 <= K = 1 for each distribution


def test_sample_nammd_extremes():
    """Two distant point masses reach the maximum 1; identical distributions give about 0; distant Gaussians
    give (|mu_P|^2 + |mu_Q|^2) / (4 - |mu_P|^2 - |mu_Q|^2) = 0.4 / 3.6, not 1 (their norms are small)."""
    rng = np.random.default_rng(7)
    assert nammd(np.zeros((20, 2)), np.full((20, 2), 30.0), K1) == pytest.approx(1.0)
    same = nammd(rng.normal(size=(400, 2)), rng.normal(size=(400, 2)), K1)
    assert abs(same) < 0.01
    far = nammd(rng.normal(size=(400, 2)), rng.normal(size=(400, 2)) + 30.0, K1)
    assert far == pytest.approx(0.4 / 3.6, abs=0.01)


def _rates(scale, gap, m=200, reps=800, seed=0):
    eps, eps_mmd = gaussian_boundary()
    shift = gaussian_shift(scale, eps + gap)
    rng = np.random.default_rng(seed)
    X = scale * rng.normal(size=(reps, m, 2))
    Y = scale * rng.normal(size=(reps, m, 2))
    Y[..., 0] += shift
    s = paired_stats(X, Y, K1, block=m)
    t_n, t_m = NAMMDClosenessTest(eps, kernel=K1), MMDClosenessTest(eps_mmd, kernel=K1)
    crit = t_n.critical_value()
    return t_n.statistic(s)[0] > crit, t_m.statistic(s)[0] > crit


def test_root_finding_hits_the_target_exactly():
    eps, _ = gaussian_boundary()
    for scale in (0.5, 1.0):
        shift = gaussian_shift(scale, eps + 0.01)
        v = population_gaussian([0, 0], scale**2 * np.eye(2), [shift, 0], scale**2 * np.eye(2), 1.0)
        assert v.nammd == pytest.approx(eps + 0.01, abs=1e-10)


@pytest.mark.parametrize("scale", [1.0, 0.5])
def test_type1_error_at_the_boundary_is_bounded(scale):
    reps = 800
    ours, base = _rates(scale, 0.0, reps=reps)
    bound = 0.05 + 3 * math.sqrt(0.05 * 0.95 / reps)
    assert ours.mean() <= bound
    if scale == 1.0:  # at s < 1 the pair is inside MMD's null (MMD^2 < epsilon_mmd): nothing to check there
        assert base.mean() <= bound


def test_equal_norms_give_the_same_decisions():
    """Equal norms: z_NAMMD - z_MMD = eps (Reg - Reg_u) / sigma_u is small, so decisions almost always agree.

    Not exactly always: Reg_u is random while epsilon_mmd = epsilon * Reg is fixed. Recorded: agreement
    0.998-1.0 over 400 draws at each gap; asserted >= 0.98.
    """
    for gap in (0.005, 0.01):
        ours, base = _rates(1.0, gap, reps=400, seed=1)
        assert (ours == base).mean() >= 0.98


@pytest.mark.claim
def test_concentrated_alternative_gives_nammd_more_power():
    """s = 0.5, gap 0.01, m = 200: recorded NAMMD 0.38 vs MMD 0.17 power (400 draws); margin 0.05 per seed."""
    for seed in range(3):
        ours, base = _rates(0.5, 0.01, reps=400, seed=10 + seed)
        assert ours.mean() - base.mean() >= 0.05


def test_delta_variance_option_gives_nearly_the_same_decisions():
    rng = np.random.default_rng(8)
    eps, _ = gaussian_boundary()
    agree = 0
    for _ in range(100):
        X, Y = rng.normal(size=(150, 2)), rng.normal(size=(150, 2)) + np.array([1.2, 0.0])
        a = NAMMDClosenessTest(eps, kernel=K1).test(X, Y)
        b = NAMMDClosenessTest(eps, kernel=K1, variance="delta").test(X, Y)
        agree += a.reject == b.reject
        assert a.estimate == b.estimate
    assert agree >= 90


def test_result_is_scipy_like_and_consistent():
    rng = np.random.default_rng(9)
    X, Y = rng.normal(size=(100, 2)).tolist(), (rng.normal(size=(100, 2)) + 2.0).tolist()  # array-likes
    r = NAMMDClosenessTest(0.01, alpha=0.05, kernel=K1).test(X, Y)
    assert r.reject and r.pvalue < 0.05 and r.statistic > 1.645
    assert r.estimate == pytest.approx(nammd(X, Y, K1))
    assert r.pvalue == pytest.approx(0.5 * math.erfc(r.statistic / math.sqrt(2)))
    one_d = NAMMDClosenessTest(0.01, kernel=K1).test(np.arange(10.0), np.arange(10.0) + 0.5)
    assert 0 <= one_d.pvalue <= 1


def test_two_sample_permutation_test():
    rng = np.random.default_rng(10)
    X, Y = rng.normal(size=(60, 2)), rng.normal(size=(60, 2)) + np.array([0.8, 0.0])
    t = NAMMDTwoSampleTest(kernel=K1, n_permutations=300)
    res = t.test(X, Y)
    assert res.statistic == pytest.approx(nammd(X, Y, K1), rel=1e-10)  # the identity split is the observed one
    assert res.reject
    nulls = [
        NAMMDTwoSampleTest(kernel=K1, n_permutations=99, seed=i).test(*rng.normal(size=(2, 40, 2))) for i in range(60)
    ]
    assert np.mean([n.reject for n in nulls]) <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 60)
    assert all(0 < n.pvalue <= 1 for n in nulls)


def test_bandwidth_selection_returns_a_grid_kernel():
    rng = np.random.default_rng(11)
    X, Y = rng.normal(size=(80, 2)), rng.normal(size=(80, 2)) * 1.5
    k = select_bandwidth(X, Y, criterion="mmd")
    assert isinstance(k, GaussianKernel) and k.bandwidth > 0
    assert select_bandwidth(X, Y, criterion="nammd").bandwidth > 0


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: nammd(np.ones((5, 2)), np.ones((6, 2)), K1), "same number of samples"),
        (lambda: nammd(np.ones((5, 2)), np.ones((5, 3)), K1), "same number of features"),
        (lambda: nammd([[np.nan, 1.0]] * 5, np.ones((5, 2)), K1), "finite"),
        (lambda: nammd(np.ones((1, 2)), np.ones((1, 2)), K1), "at least 2"),
        (lambda: NAMMDClosenessTest(0.1, kernel=K1).test(np.ones((3, 2)), np.ones((3, 2))), "at least 4"),
        (lambda: NAMMDClosenessTest(1.0), "epsilon"),
        (lambda: NAMMDClosenessTest(-0.1), "epsilon"),
        (lambda: NAMMDClosenessTest(0.1, alpha=1.5), "alpha"),
        (lambda: NAMMDClosenessTest(0.1, variance="exact"), "variance"),
        (lambda: MMDClosenessTest(-1.0), "epsilon_mmd"),
        (lambda: MMDClosenessTest(0.1, variance="delta"), "variance"),
        (lambda: GaussianKernel(0.0), "bandwidth"),
        (lambda: PrecomputedKernel(np.array([[1.0, 0.5], [0.5, 2.0]])), "constant"),
        (lambda: population_discrete(None, [0.5, 0.6], [0.5, 0.5], gram=np.eye(2)), "probability"),
        (lambda: nammd(np.zeros((5, 2, 2)), np.zeros((5, 2, 2))), "1-d or 2-d"),
        (lambda: NAMMDTwoSampleTest(n_permutations=0), "n_permutations"),
        (lambda: nammd([[-1.0]] * 4, [[0.0]] * 4, PrecomputedKernel(np.eye(3))), "integer indices"),
        (lambda: nammd([[0.5]] * 4, [[0.0]] * 4, PrecomputedKernel(np.eye(3))), "integer indices"),
        (lambda: population_gaussian([0], [[1.0]], [1], [[1.0]], 0.0), "bandwidth"),
        (lambda: population_gaussian([0], [[-1.0]], [1], [[1.0]], 1.0), "semi-definite"),
        (lambda: select_bandwidth(np.ones((8, 1)), np.zeros((8, 1)), n_grid=0), "n_grid"),
    ],
)
def test_bad_input_gives_clear_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_kernel_must_be_bounded_kernel_object():
    with pytest.raises(TypeError, match="diag"):
        nammd(np.ones((5, 2)), np.ones((5, 2)), kernel=lambda a, b: a @ b.T)


def test_torch_tensors_give_the_numpy_results():
    torch = pytest.importorskip("torch")
    from icml26.stats.nammd import paired_stats_torch

    rng = np.random.default_rng(12)
    X, Y = rng.normal(size=(2, 57, 3)), rng.normal(size=(2, 57, 3)) + 0.2
    ref = paired_stats(X, Y, K1)
    for block in (8, 256):
        got = paired_stats_torch(torch.tensor(X), torch.tensor(Y), K1, block=block)
        np.testing.assert_allclose(got.row_h, ref.row_h, atol=1e-12)
        np.testing.assert_allclose(got.row_d, ref.row_d, atol=1e-12)
        np.testing.assert_allclose(got.sum_h2, ref.sum_h2, rtol=1e-12)
    a = NAMMDClosenessTest(0.01, kernel=K1).test(X[0], Y[0])
    b = NAMMDClosenessTest(0.01, kernel=K1).test(torch.tensor(X[0]), torch.tensor(Y[0]))
    assert (a.statistic, a.reject) == pytest.approx((b.statistic, b.reject), rel=1e-10)
    # default kernel: the same pooled median heuristic on both paths; 1-d and mixed-precision inputs
    d_np = NAMMDClosenessTest(0.01).test(X[0], Y[0])
    d_t = NAMMDClosenessTest(0.01).test(torch.tensor(X[0]), torch.tensor(Y[0], dtype=torch.float32))
    assert d_np.estimate == pytest.approx(d_t.estimate, rel=1e-6)
    one_d = NAMMDClosenessTest(0.01, kernel=K1).test(torch.arange(10.0), torch.arange(10.0) + 0.5)
    assert one_d.estimate == pytest.approx(
        NAMMDClosenessTest(0.01, kernel=K1).test(np.arange(10.0), np.arange(10.0) + 0.5).estimate
    )
    with pytest.raises(ValueError, match="one pair of samples"):
        NAMMDClosenessTest(0.01, kernel=K1).test(torch.tensor(X), torch.tensor(Y))
    with pytest.raises(ValueError, match="finite"):
        paired_stats_torch(
            torch.full((5, 2), float("nan"), dtype=torch.float64), torch.zeros(5, 2, dtype=torch.float64), K1
        )


@pytest.mark.gpu
def test_cuda_float32_agrees_with_numpy():
    import torch

    rng = np.random.default_rng(13)
    X, Y = rng.normal(size=(2000, 10)), rng.normal(size=(2000, 10)) + 0.1
    ref = NAMMDClosenessTest(0.001, kernel=GaussianKernel(3.0)).test(X, Y)
    got = NAMMDClosenessTest(0.001, kernel=GaussianKernel(3.0)).test(
        torch.tensor(X, dtype=torch.float32, device="cuda"), torch.tensor(Y, dtype=torch.float32, device="cuda")
    )
    assert got.estimate == pytest.approx(ref.estimate, rel=1e-4)
    assert got.statistic == pytest.approx(ref.statistic, rel=1e-3)
