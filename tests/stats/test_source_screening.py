"""Source screening: sin-theta ground truth, estimators against brute force and exact recovery, the screening rule
against brute force on small cases, scikit-learn conformance, one clear error per bad input, and the claims'
directions over several seeds."""

from __future__ import annotations

import importlib.util
import itertools
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.stats.source_screening import (
    SharedSubspaceEstimator,
    SourceArrays,
    altmin_subspace,
    as_source_arrays,
    digits_features,
    diversity_matrix,
    fit_heads,
    greedy_order,
    head_counts,
    make_shared_subspace_sources,
    mom_matrix,
    mom_subspace,
    screen_sources,
    screening_criterion,
    select_prefix,
    sin_theta_distance,
    source_moments,
    split_sources,
)


def random_basis(rng: np.random.Generator, d: int, k: int) -> np.ndarray:
    return np.linalg.qr(rng.standard_normal((d, k)))[0]


def noiseless(T: int = 12, n: int = 40, d: int = 8, k: int = 2, seed: int = 0) -> tuple[list, np.ndarray, np.ndarray]:
    """Sources with generic (random, diverse) heads and no noise: y = X B w exactly."""
    rng = np.random.default_rng(seed)
    B = random_basis(rng, d, k)
    W = rng.standard_normal((T, k))
    sources = []
    for t in range(T):
        X = rng.standard_normal((n + t, d))  # unequal sizes on purpose
        sources.append((X, X @ B @ W[t]))
    return sources, B, W


# ------------------------------------------------------------------------------------------------ sin-theta
def test_sin_theta_single_angle_is_exact():
    """k = 1, two unit vectors at angle phi in a random plane: the distance is sin(phi)."""
    rng = np.random.default_rng(1)
    Q = random_basis(rng, 6, 2)
    for phi in (0.0, 1e-9, 0.3, np.pi / 4, 1.2, np.pi / 2):
        a = Q[:, :1]
        b = np.cos(phi) * Q[:, :1] + np.sin(phi) * Q[:, 1:]
        assert sin_theta_distance(a, b) == pytest.approx(np.sin(phi), rel=1e-9, abs=1e-15)


def test_sin_theta_is_the_largest_principal_angle():
    """Planted principal angles theta_1..theta_k: the distance is max_i sin(theta_i)."""
    rng = np.random.default_rng(2)
    d, k = 9, 3
    Q = random_basis(rng, d, 2 * k)
    angles = np.array([0.1, 0.7, 0.4])
    B = Q[:, :k]
    B_hat = Q[:, :k] * np.cos(angles) + Q[:, k:] * np.sin(angles)
    assert sin_theta_distance(B, B_hat) == pytest.approx(np.sin(0.7), rel=1e-12)
    assert sin_theta_distance(B, Q[:, k:]) == pytest.approx(1.0)  # orthogonal subspaces


@settings(max_examples=40, deadline=None)
@given(
    d=st.integers(2, 10),
    data=st.data(),
    seed=st.integers(0, 2**32 - 1),
)
def test_sin_theta_symmetric_in_unit_interval_and_basis_invariant(d, data, seed):
    k = data.draw(st.integers(1, d))
    rng = np.random.default_rng(seed)
    B, C = rng.standard_normal((d, k)), rng.standard_normal((d, k))
    R1, R2 = rng.standard_normal((k, k)) + 3 * np.eye(k), rng.standard_normal((k, k)) + 3 * np.eye(k)
    dist = sin_theta_distance(B, C)
    assert 0.0 <= dist <= 1.0
    assert dist == pytest.approx(sin_theta_distance(C, B), abs=1e-10)
    assert dist == pytest.approx(sin_theta_distance(B @ R1, C @ R2), abs=1e-8)
    assert sin_theta_distance(B, B @ R1) < 1e-8  # 0 for the same span, whatever the basis


def test_sin_theta_zero_iff_equal_and_batched():
    rng = np.random.default_rng(3)
    B = random_basis(rng, 7, 2)
    assert sin_theta_distance(B, B) < 1e-15
    other = B + 1e-6 * rng.standard_normal(B.shape)
    assert 0 < sin_theta_distance(B, other) < 1e-5
    batch = np.stack([B, other, random_basis(rng, 7, 2)])
    out = sin_theta_distance(batch, B)
    assert out.shape == (3,)
    assert np.allclose(out, [sin_theta_distance(b, B) for b in batch])


@pytest.mark.parametrize(
    ("B", "B_hat", "match"),
    [
        (np.eye(4)[:, :2], np.eye(4)[:, :1], "same d and k"),
        (np.eye(4)[:, :2], np.eye(5)[:, :2], "same d and k"),
        (np.c_[np.eye(4)[:, :1], np.eye(4)[:, :1]], np.eye(4)[:, :2], "rank < k"),
        (np.full((4, 2), np.nan), np.eye(4)[:, :2], "non-finite"),
        (np.ones(4), np.ones(4), r"\(d, k\) matrix"),
    ],
)
def test_sin_theta_bad_inputs(B, B_hat, match):
    with pytest.raises(ValueError, match=match):
        sin_theta_distance(B, B_hat)


# -------------------------------------------------------------------------------------------- estimators
def test_statistics_match_a_per_source_loop_with_unequal_sizes():
    sources, _, _ = noiseless()
    rng = np.random.default_rng(4)
    sources = [(X, y + 0.3 * rng.standard_normal(len(y))) for X, y in sources]
    src = as_source_arrays(sources)
    gram, cross = source_moments(src)
    for t, (X, y) in enumerate(sources):
        assert np.allclose(gram[t], X.T @ X)
        assert np.allclose(cross[t], X.T @ y)
    X_all = np.concatenate([X for X, _ in sources])
    y_all = np.concatenate([y for _, y in sources])
    assert np.allclose(mom_matrix(src), (X_all * y_all[:, None] ** 2).T @ X_all / len(y_all))
    B = random_basis(rng, 8, 2)
    heads = fit_heads(gram, cross, B)
    for t, (X, y) in enumerate(sources):
        assert np.allclose(heads[t], np.linalg.lstsq(X @ B, y, rcond=None)[0])


def _altmin_step_loop(sources, B):
    """One AltMin step written per source (brute force): heads by lstsq, then vec(B) from the normal equations."""
    d, k = B.shape
    heads = [np.linalg.lstsq(X @ B, y, rcond=None)[0] for X, y in sources]
    L = np.zeros((d * k, d * k))
    r = np.zeros(d * k)
    for (X, y), w in zip(sources, heads, strict=True):
        # y = X B w = (w^T kron X) vec(B) with column-major vec(B)
        A = np.kron(w[None, :], X)
        L += A.T @ A
        r += A.T @ y
    return np.linalg.qr(np.linalg.solve(L, r).reshape(k, d).T)[0]


def test_altmin_step_matches_a_per_source_kronecker_loop():
    sources, _, _ = noiseless(seed=5)
    rng = np.random.default_rng(5)
    sources = [(X, y + 0.5 * rng.standard_normal(len(y))) for X, y in sources]
    B0 = random_basis(rng, 8, 2)
    ours = altmin_subspace(as_source_arrays(sources), 2, B0, max_iter=1, warn=False).basis
    assert sin_theta_distance(ours, _altmin_step_loop(sources, B0)) < 1e-10


@pytest.mark.parametrize("init", ["mom", "random"])
def test_altmin_recovers_the_subspace_exactly_without_noise(init):
    sources, B, W = noiseless(seed=6)
    est = SharedSubspaceEstimator(2, method="altmin", init=init, random_state=0, tol=1e-12, max_iter=500).fit(sources)
    assert est.converged_
    assert np.allclose(est.basis_.T @ est.basis_, np.eye(2))  # re-orthonormalised (QR) after every B step
    assert sin_theta_distance(B, est.basis_) < 1e-8
    assert est.objective_ < 1e-16
    # heads are recovered in the estimate's basis: B_hat w_hat_t = B w_t
    assert np.allclose(est.heads_ @ est.basis_.T, W @ B.T, atol=1e-7)


def test_mom_is_consistent_and_its_population_matrix_is_exact():
    """Noiseless, large N: MoM's error shrinks with N; its matrix estimates |theta|^2 I + 2 theta theta^T."""
    rng = np.random.default_rng(7)
    d, k = 6, 2
    data = make_shared_subspace_sources(4, 50_000, d, k, (0.5, 0.5), noise=0.0, random_state=rng)
    err = sin_theta_distance(data.basis, mom_subspace(data.sources, k))
    assert err < 0.04  # recorded: 0.018
    theta = data.heads @ data.basis.T  # (T, d)
    population = np.mean([t @ t * np.eye(d) + 2 * np.outer(t, t) for t in theta], axis=0)
    assert np.abs(mom_matrix(data.sources) - population).max() < 0.05  # recorded: 0.016
    small = make_shared_subspace_sources(4, 500, d, k, (0.5, 0.5), noise=0.0, random_state=rng)
    assert sin_theta_distance(small.basis, mom_subspace(small.sources, k)) > err  # more data, smaller error


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), method=st.sampled_from(["mom", "altmin"]))
def test_estimators_are_equivariant(seed, method):
    """Permuting sources changes nothing; scaling y changes nothing; rotating x rotates the estimate."""
    rng = np.random.default_rng(seed)
    data = make_shared_subspace_sources(8, 30, 5, 2, (0.5, 0.5), noise=0.3, random_state=rng)
    sources = data.to_list()
    fit = lambda s: SharedSubspaceEstimator(2, method=method, tol=1e-12, max_iter=500).fit(s).basis_  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = fit(sources)
        perm = fit([sources[i] for i in rng.permutation(len(sources))])
        scaled = fit([(X, 3.7 * y) for X, y in sources])
        Q = random_basis(rng, 5, 5)
        rotated = fit([(X @ Q, y) for X, y in sources])
    assert sin_theta_distance(base, perm) < 1e-6
    assert sin_theta_distance(base, scaled) < 1e-6
    assert sin_theta_distance(Q.T @ base, rotated) < 1e-6


@pytest.mark.parametrize("method", ["mom", "altmin"])
def test_whitening_is_affine_equivariant_and_silences_the_design_warning(method):
    """x' = A^T x + mu maps theta to A^{-1} theta: with whiten=True the estimate maps exactly; without it the
    shifted, skewed design gets a warning."""
    rng = np.random.default_rng(8)
    data = make_shared_subspace_sources(20, 60, 6, 2, (0.7, 0.3), noise=0.3, random_state=rng)
    A = rng.standard_normal((6, 6)) + 2 * np.eye(6)
    mu = 5 * rng.standard_normal(6)
    moved = [(X @ A + mu, y) for X, y in data.to_list()]
    kw = {"method": method, "whiten": True, "tol": 1e-12, "max_iter": 500}
    base = SharedSubspaceEstimator(2, **kw).fit(data.to_list()).basis_
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = SharedSubspaceEstimator(2, **kw).fit(moved)
    assert sin_theta_distance(np.linalg.solve(A, base), est.basis_) < 1e-6
    with pytest.warns(UserWarning, match="whiten=True"):
        SharedSubspaceEstimator(2, method=method).fit(moved)
    with warnings.catch_warnings():  # the paper's own design raises no warning
        warnings.simplefilter("error")
        SharedSubspaceEstimator(2, method=method).fit(data.to_list())


def test_altmin_warns_when_it_does_not_converge():
    data = make_shared_subspace_sources(20, 50, 10, 2, (0.9, 0.1), noise=0.5, random_state=9)
    with pytest.warns(UserWarning, match="did not converge"):
        est = SharedSubspaceEstimator(2, method="altmin", init="random", random_state=0, max_iter=1, tol=0).fit(
            data.sources
        )
    assert not est.converged_ and est.n_iter_ == 1


# ------------------------------------------------------------------------------------------- scikit-learn
@pytest.mark.parametrize("method", ["mom", "altmin"])
def test_passes_sklearn_estimator_checks(method):
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(SharedSubspaceEstimator(method=method), on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert not failed


def test_fit_accepts_pairs_stacked_arrays_and_groups_alike():
    data = make_shared_subspace_sources(10, 30, 6, 2, (0.6, 0.4), random_state=10)
    X3, y2 = data.sources.X, data.sources.y
    groups = np.repeat(np.arange(10)[::-1], 30)  # labels need not be sorted or start at 0
    by_pairs = SharedSubspaceEstimator(2).fit(data.to_list())
    by_stack = SharedSubspaceEstimator(2).fit((X3, y2))
    by_groups = SharedSubspaceEstimator(2).fit(X3.reshape(-1, 6), y2.reshape(-1), groups=groups)
    assert np.allclose(by_pairs.basis_ @ by_pairs.basis_.T, by_stack.basis_ @ by_stack.basis_.T)
    assert sin_theta_distance(by_pairs.basis_, by_groups.basis_) < 1e-10
    assert by_groups.n_sources_ == 10
    assert by_pairs.components_.shape == (2, 6) and np.allclose(by_pairs.components_ @ by_pairs.basis_, np.eye(2))
    assert by_pairs.transform(X3[0]).shape == (30, 2)
    assert len(by_pairs.fit_transform(data.to_list())) == 10


# -------------------------------------------------------------------------------------------- screening
def axis_heads(counts, norms=None):
    labels = np.repeat(np.arange(len(counts)), counts)
    W = np.eye(len(counts))[labels]
    return W if norms is None else W * np.asarray(norms)[:, None]


def brute_force_best(heads):
    """min over every non-empty subset of sqrt(|S|) / lambda_k(sum_S w w^T) (exhaustive)."""
    T = len(heads)
    best = np.inf
    for size in range(1, T + 1):
        for S in itertools.combinations(range(T), size):
            best = min(best, screening_criterion(heads, list(S)))
    return best


@pytest.mark.parametrize("counts", [(5, 2), (6, 1), (3, 3), (4, 2, 1), (7, 1, 1)])
def test_greedy_finds_the_brute_force_optimum_on_axis_heads(counts):
    heads = axis_heads(counts)
    order = greedy_order(heads)
    size, path = select_prefix(heads, order)
    assert path[size - 1] == pytest.approx(brute_force_best(heads))
    # the optimum keeps every minority source and as many of each other axis: min(counts) per axis
    chosen = np.bincount(np.argmax(heads[order[:size]], axis=1), minlength=len(counts))
    assert np.all(chosen == min(counts))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), T=st.integers(2, 8))
def test_greedy_is_never_better_than_brute_force_and_is_scale_invariant(seed, T):
    heads = np.random.default_rng(seed).standard_normal((T, 2))
    order = greedy_order(heads)
    size, path = select_prefix(heads, order)
    assert path[size - 1] >= brute_force_best(heads) * (1 - 1e-12)
    assert np.array_equal(greedy_order(3.0 * heads), order)  # the rule depends on the heads' directions and ratios


def test_balanced_orthogonal_heads_keep_every_source():
    heads = axis_heads((25, 25))
    res = screen_sources(make_shared_subspace_sources(50, 30, 6, 2, random_state=11).sources, 2, "genie", heads=heads)
    assert res.n_selected == 50 and res.data_fraction == 1.0
    assert np.allclose(res.diversity_matrix, np.eye(2) / 2)


def test_genie_picks_all_minority_and_as_many_majority_sources():
    data = make_shared_subspace_sources(100, 30, 6, 2, (0.9, 0.1), random_state=12)
    res = screen_sources(data.sources, 2, "genie", heads=data.heads)
    assert res.n_selected == 20
    assert np.bincount(data.labels[res.indices]).tolist() == [10, 10]
    assert res.lambda_min == pytest.approx(0.5)
    assert res.criterion == pytest.approx(np.sqrt(20) / 10)
    assert np.allclose(res.diversity_matrix, diversity_matrix(data.heads, res.indices))


def test_greedy_from_data_agrees_with_the_genie_at_f_09():
    overlap = []
    for seed in range(4):
        data = make_shared_subspace_sources(100, 100, 20, 2, (0.9, 0.1), random_state=seed)
        genie = set(screen_sources(data.sources, 2, "genie", heads=data.heads).indices.tolist())
        greedy = screen_sources(data.sources, 2)
        minority = set(np.flatnonzero(data.labels == 1).tolist())
        overlap.append(len(minority & set(greedy.indices.tolist())) / len(minority))
        assert len(genie) == 20 and 14 <= greedy.n_selected <= 28
    assert np.mean(overlap) >= 0.9  # the greedy keeps (almost) every informative source


def test_screening_result_selects_and_split_sources_partitions():
    data = make_shared_subspace_sources(30, 21, 6, 2, (0.8, 0.2), random_state=13)
    res = screen_sources(data.to_list(), 2, pilot="mom")
    assert len(res.select(data.to_list())) == res.n_selected
    assert isinstance(res.select(data.sources), SourceArrays)
    first, second = split_sources(data.to_list(), 0.5)
    assert np.all(first.counts + second.counts == 21) and first.counts[0] == 11
    assert np.array_equal(np.concatenate([first.X[3, :11], second.X[3, :10]]), data.sources.X[3])
    res_split = screen_sources(first, 2)  # screen on one half, fit on the other
    SharedSubspaceEstimator(2).fit(res_split.select(second))
    basis = SharedSubspaceEstimator(2, method="altmin").fit(data.sources)
    assert np.array_equal(screen_sources(data.sources, 2, pilot=basis).indices, screen_sources(data.sources, 2).indices)
    assert np.array_equal(
        screen_sources(data.sources, 2, pilot=basis.basis_).indices, screen_sources(data.sources, 2).indices
    )


def test_screening_criterion_and_diversity_formulas():
    heads = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    assert np.allclose(diversity_matrix(heads), (np.diag([1.0, 0.0]) + np.diag([0.0, 4.0]) + np.ones((2, 2))) / 3)
    lam = np.linalg.eigvalsh(heads.T @ heads)[0]
    assert screening_criterion(heads) == pytest.approx(np.sqrt(3) / lam)
    assert screening_criterion(heads, [0]) == np.inf  # one head cannot identify a 2-d subspace


# ------------------------------------------------------------------------------------------ bad inputs
GOOD = make_shared_subspace_sources(6, 10, 4, 2, (0.5, 0.5), random_state=14).to_list()


@pytest.mark.parametrize(
    ("sources", "k", "match"),
    [
        ([GOOD[0], (np.ones((10, 5)), np.ones(10))], 2, "different dimensions"),
        (GOOD, 5, "larger than the number of features"),
        ([*GOOD[:3], (GOOD[3][0][:1], GOOD[3][1][:1])], 2, "fewer than n_components"),
        (GOOD[:1], 2, "cannot identify"),
        ([], 2, "no sources"),
        ([(np.ones((0, 4)), np.ones(0)), *GOOD], 2, "empty"),
        ([(GOOD[0][0], GOOD[0][1][:5]), *GOOD[1:]], 2, "rows but y_t has"),
        ([(GOOD[0][0], GOOD[0][0]), *GOOD[1:]], 2, "1-d"),
        ([(GOOD[0][0][0], GOOD[0][1]), *GOOD[1:]], 2, "2-d"),
        ([(np.where(np.eye(10, 4) > 0, np.nan, 1.0), GOOD[0][1]), *GOOD[1:]], 2, "non-finite"),
        ([(X, 0 * y) for X, y in GOOD], 2, "identically zero"),
        (GOOD, 0, "positive integer"),
        (GOOD, 1.5, "positive integer"),
        ([(1, 2, 3), *GOOD], 2, "must be a pair"),
        (np.ones((3, 4)), 2, "list of|requires y"),
    ],
)
@pytest.mark.parametrize("api", ["estimator", "screen"])
def test_each_bad_input_gets_one_clear_error(sources, k, match, api):
    if api == "estimator":
        call = lambda: SharedSubspaceEstimator(k).fit(sources)  # noqa: E731
    else:
        call = lambda: screen_sources(sources, k)  # noqa: E731
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"strategy": "best"}, "strategy must be"),
        ({"strategy": "genie"}, "needs the true heads"),
        ({"strategy": "genie", "heads": np.ones((6, 3))}, r"heads must have shape \(T, k\)"),
        ({"heads": np.ones((6, 2))}, "genie's oracle input"),
        ({"pilot": "pca"}, "pilot must be one of"),
        ({"pilot": np.eye(5)[:, :2]}, "pilot basis must have shape"),
        ({"pilot": SharedSubspaceEstimator(2)}, "not fitted"),
    ],
)
def test_screening_option_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        screen_sources(GOOD, 2, **kwargs)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"method": "pca"}, "method must be"),
        ({"method": "altmin", "init": "zeros"}, "init must be"),
        ({"method": "altmin", "init": np.ones((3, 2))}, r"init must have shape"),
        ({"max_iter": 0}, "max_iter"),
        ({"tol": -1.0}, "tol"),
    ],
)
def test_estimator_parameter_errors(params, match):
    with pytest.raises(ValueError, match=match):
        SharedSubspaceEstimator(2, **params).fit(GOOD)


def test_other_bad_inputs():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        SharedSubspaceEstimator(2).transform(np.ones((3, 4)))
    est = SharedSubspaceEstimator(2).fit(GOOD)
    with pytest.raises(ValueError, match="features"):
        est.transform(np.ones((3, 5)))
    X, y = np.ones((12, 4)), np.ones(12)
    with pytest.raises(ValueError, match="one source label per row"):
        SharedSubspaceEstimator(2).fit(X, y, groups=np.arange(5))
    collinear = [(np.c_[X_t[:, :3], X_t[:, :1]], y_t) for X_t, y_t in GOOD]
    with pytest.raises(ValueError, match="full-rank feature covariance"):
        SharedSubspaceEstimator(2, whiten=True).fit(collinear)
    with pytest.raises(ValueError, match="fraction"):
        split_sources(GOOD, 1.0)
    with pytest.raises(ValueError, match="head_fractions"):
        make_shared_subspace_sources(10, 5, 4, 2, (0.7, 0.7))


# ------------------------------------------------------------------------------------------------- data
def test_generator_and_digits_features():
    data = make_shared_subspace_sources(40, 25, 7, 3, (0.8, 0.1, 0.1), noise=0.0, random_state=15)
    assert np.bincount(data.labels).tolist() == [32, 4, 4]
    assert np.allclose(data.basis.T @ data.basis, np.eye(3))
    assert np.allclose(data.sources.y, np.einsum("tnd,dk,tk->tn", data.sources.X, data.basis, data.heads))
    assert head_counts(10, (0.84, 0.16)).tolist() == [8, 2]  # largest remainder: 8.4 + 1.6 -> 8 + 2
    assert head_counts(10, (0.85, 0.15)).tolist() == [9, 1]  # a tie goes to the lower axis
    P = digits_features(20)
    assert P.shape == (1797, 20) and np.allclose(P.T @ P / len(P), np.eye(20)) and np.allclose(P.mean(0), 0)
    semi = make_shared_subspace_sources(5, 50, 20, 2, features=P, random_state=0)
    rows = semi.sources.X[0]
    assert len({tuple(r) for r in rows.round(12)}) == 50  # distinct rows within a source
    assert np.isin(rows[:, 0], P[:, 0]).all()


# --------------------------------------------------------------------------------------------- claims
def _cell(setting, seed):
    from icml26._core import Cell

    return Cell("source_screening", "C1", "test", setting, seed, function="test")


@pytest.mark.claim
def test_claims_directions_over_seeds():
    """C1, C1b, C2 at f = 0.9 (the paper file's assertions) over 5 seeds, on the cell the cards run."""
    from icml26.stats.source_screening.reproduce import BASE, run_screening

    outs = [run_screening(_cell(BASE, seed)) for seed in range(5)]
    m = {arm: np.array([o["metrics"][arm]["sin_theta"] for o in outs]) for arm in outs[0]["metrics"]}
    assert np.mean(m["mom_all"] - m["mom_greedy"]) > 0.05
    assert np.mean(m["altmin_greedy"] / m["altmin_all"]) <= 1.3
    assert np.mean(m["mom_random"]) >= 1.5 * np.mean(m["mom_greedy"])
    for o in outs:  # same-size random subset, a fraction of the data
        assert o["info"]["n_selected"]["random"] == o["info"]["n_selected"]["greedy"]
        assert o["info"]["data_fraction"]["greedy"] < 0.35


@pytest.mark.claim
def test_diversity_slope_and_digits_over_seeds():
    from icml26.stats.source_screening.reproduce import BASE, SWEEP, run_diversity, run_screening

    setting = dict(SWEEP["quick"].settings[0])
    slopes = [run_diversity(_cell(setting, seed))["metrics"] for seed in range(6)]
    assert -0.65 < np.mean([s["mom_screened"]["slope"] for s in slopes]) < -0.35
    assert -0.65 < np.mean([s["altmin_all"]["slope"] for s in slopes]) < -0.35
    digits = [run_screening(_cell(BASE | {"design": "digits"}, seed))["metrics"] for seed in range(3)]
    gain = [d["mom_all"]["sin_theta"] - d["mom_greedy"]["sin_theta"] for d in digits]
    assert np.mean(gain) > 0.05


# ------------------------------------------------------------------------------------------ benchmark
def test_benchmark_rows_tiny():
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_source_screening.py"
    spec = importlib.util.spec_from_file_location("bench_source_screening", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.rows("tiny")
    assert len(rows) >= 3 and all(r.ours > 0 and r.anchor > 0 for r in rows)
    assert any("TruncatedSVD" in r.anchor_name for r in rows)
    with pytest.raises(ValueError, match="size"):
        module.rows("huge")
