"""Equivariant spectral representation learning: isotypic projectors against character formulas, exact
equivariance in float64, the factorised NCP loss against the brute-force pairwise one, the exact mixture against
Monte Carlo, CDF / quantile / interval invariants, a small claim over seeds, and bad input."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from icml26.stats.equivariant_spectral import (
    NCP,
    EMLPRegressor,
    EquivariantLinear,
    EquivariantNCP,
    FiniteGroup,
    GroupError,
    NCPRegressor,
    Representation,
    benchmark_problem,
    cyclic,
    dihedral,
    equivariant_mlp,
    klein4,
    mlp,
)

GROUPS = {
    "C2": lambda: cyclic(2),
    "C3": lambda: cyclic(3),
    "C2xC2": klein4,
    "D3": lambda: dihedral(3),
    "D4": lambda: dihedral(4),
}


# ------------------------------------------------------------------------------------------------ groups
@pytest.mark.parametrize("name", list(GROUPS))
def test_projectors_idempotent_orthogonal_complete_and_commuting(name):
    G = GROUPS[name]()
    for rep in (G.regular, Representation.standard(G), G.regular.direct_sum(Representation.standard(G))):
        P = rep.isotypic_projectors()
        eye = np.eye(rep.dim)
        assert np.allclose(P.sum(0), eye, atol=1e-12)
        for i in range(len(P)):
            assert np.allclose(P[i] @ P[i], P[i], atol=1e-12)
            assert np.allclose(P[i], P[i].T, atol=1e-12)
            for j in range(i + 1, len(P)):
                assert np.abs(P[i] @ P[j]).max() < 1e-12
            assert np.allclose(
                np.einsum("gij,jk->gik", rep.matrices, P[i]), np.einsum("ij,gjk->gik", P[i], rep.matrices), atol=1e-12
            )
        assert np.allclose(P[0], rep.invariant_projector(), atol=1e-12)  # type 0 is the trivial type


def test_d3_projectors_match_the_character_table():
    """D3: trivial chi = 1, sign chi = det, standard chi = trace; P_k = d_k / |G| sum_g chi_k(g) rho(g)."""
    G = dihedral(3)
    reg = G.regular
    det, tr = np.linalg.det(G.elements), np.trace(G.elements, axis1=1, axis2=2)
    expected = [np.einsum("g,gij->ij", c, reg.matrices) * d / 6 for c, d in ((np.ones(6), 1), (det, 1), (tr, 2))]
    P = reg.isotypic_projectors()
    assert len(P) == 3
    for e in expected:  # the same three projectors, in some order after the trivial one
        assert min(np.abs(e - p).max() for p in P) < 1e-12
    assert [round(np.trace(p)) for p in P] == [1, 1, 4] or [round(np.trace(p)) for p in P] == [1, 4, 1]


def test_group_orders_and_generation():
    assert [GROUPS[k]().order for k in GROUPS] == [2, 3, 4, 6, 8]
    assert FiniteGroup.generated_by([np.diag([-1.0, 1.0])]).order == 2


# -------------------------------------------------------------------------------------------- equivariance
def _random_rep_pair(G, rng):
    rep_x = Representation.standard(G).direct_sum(G.regular)
    rep_y = Representation(G, np.linalg.det(G.elements))
    return rep_x, rep_y


@settings(max_examples=10, deadline=None)
@given(name=st.sampled_from(list(GROUPS)), seed=st.integers(0, 1000))
def test_equivariant_mlp_is_exactly_equivariant_in_float64(name, seed):
    G = GROUPS[name]()
    rng = np.random.default_rng(seed)
    rep_x, rep_y = _random_rep_pair(G, rng)
    torch.manual_seed(seed)
    net = equivariant_mlp(rep_x, rep_x.direct_sum(rep_y), width=16).double()
    x = torch.as_tensor(rng.normal(size=(32, rep_x.dim)))
    g = int(rng.integers(G.order))
    out_rep = rep_x.direct_sum(rep_y).matrices[g]
    err = (net(x @ torch.as_tensor(rep_x.matrices[g]).T) - net(x) @ torch.as_tensor(out_rep).T).abs().max()
    assert float(err.detach()) < 1e-12
    # the constraint is not vacuous: a plain layer of the same shape is not equivariant
    plain = mlp(rep_x.dim, rep_x.dim + 1, 16).double()
    if G.order > 1:
        errs = [
            float(
                (
                    plain(x @ torch.as_tensor(rep_x.matrices[h]).T)
                    - plain(x) @ torch.as_tensor(rep_x.direct_sum(rep_y).matrices[h]).T
                )
                .abs()
                .max()
            )
            for h in range(G.order)
        ]
        assert max(errs) > 1e-3


def test_encp_operator_commutes_and_is_a_contraction():
    G = dihedral(3)
    model = EquivariantNCP(Representation.standard(G), Representation(G, np.linalg.det(G.elements)), rank=12).double()
    with torch.no_grad():
        model.S_raw.add_(torch.randn_like(model.S_raw) * 3)
    S = model.operator()
    rho = torch.as_tensor(model.latent.matrices)
    assert float((rho @ S - S @ rho).abs().max()) < 1e-12
    assert float(torch.linalg.matrix_norm(S, ord=2)) <= 1 + 1e-12
    # Schur: S maps each isotypic component of the latent space into itself
    P = torch.as_tensor(model.latent.isotypic_projectors())
    for i in range(len(P)):
        for j in range(len(P)):
            if i != j:
                assert float((P[i] @ S @ P[j]).abs().max()) < 1e-12


@pytest.mark.parametrize("problem", ["C2", "C2xC2", "D3"])
def test_trained_encp_predictions_are_equivariant_in_float64(problem):
    prob = benchmark_problem(problem)
    X, y = prob.sample(96, np.random.default_rng(1))
    est = NCPRegressor(prob.rep_x, prob.rep_y, rank=8, width=12, n_steps=15, dtype=torch.float64, random_state=0)
    est.fit(X, y)
    m = est.predict(X)
    for gx, gy in zip(prob.rep_x.matrices, prob.rep_y.matrices, strict=True):
        assert np.abs(est.predict(X @ gx.T) - gy[0, 0] * m).max() < 1e-5 * np.std(m)
    F = est.predict_cdf(X)
    assert np.all(np.diff(F, axis=1) >= 0) and F.min() >= 0 and F.max() <= 1


# ------------------------------------------------------------------------------------------------- the loss
def test_factorised_loss_equals_the_pairwise_brute_force():
    torch.manual_seed(0)
    r, n = 5, 9
    model = NCP(mlp(2, r, 8), mlp(1, r, 8), r, orth_reg=0.0, centering_reg=0.0).double()
    with torch.no_grad():
        model.S_raw.copy_(torch.randn(r, r) * 0.3)
    fx, hy = torch.randn(n, r, dtype=torch.float64), torch.randn(n, r, dtype=torch.float64)
    loss = model.loss(fx, hy)
    u, v = fx - fx.mean(0), hy - hy.mean(0)
    K = u @ model.operator() @ v.T  # k(x_i, y_j)
    off = ~torch.eye(n, dtype=torch.bool)
    brute = -2 * K.diagonal().mean() + (K[off] ** 2).mean()
    assert abs(float(loss - brute)) < 1e-12


def test_regularisers_penalise_non_orthonormal_uncentred_embeddings():
    model = NCP(mlp(1, 3), mlp(1, 3), 3).double()
    fx = torch.randn(50, 3, dtype=torch.float64)
    base = NCP(mlp(1, 3), mlp(1, 3), 3, orth_reg=0.0, centering_reg=0.0).double().loss(fx, fx)
    assert float(model.loss(fx + 5.0, fx)) > float(base) + 1.0  # centring: 0.01 * 2 * ||5 * 1||^2 = 1.5


def test_loss_decreases_and_ncp_fits_the_mean():
    prob = benchmark_problem("C2")
    X, y = prob.sample(300, np.random.default_rng(0))
    est = NCPRegressor(rank=8, width=16, n_steps=150, random_state=0).fit(X, y)
    assert est.loss_curve_[-20:].mean() < est.loss_curve_[:20].mean() - 0.5
    Xt, _ = prob.sample(500, np.random.default_rng(1))
    truth = prob.conditional_mean(Xt)
    assert np.mean((est.predict(Xt) - truth) ** 2) < 0.5 * np.var(truth)  # learnt a good share of E[y | x]


# --------------------------------------------------------------------------------------- the exact mixture
@pytest.mark.parametrize("problem", ["C2", "C2xC2", "D3"])
def test_mixture_is_invariant_and_its_conditionals_are_exact(problem):
    prob = benchmark_problem(problem)
    rng = np.random.default_rng(0)
    X, y = prob.sample(5000, rng)
    # probability integral transform: F(y | x) of a draw is uniform exactly when F is the true conditional CDF
    u = prob.conditional_cdf_at(X, y)
    assert np.allclose(u[:3], [prob.conditional_cdf(X[i : i + 1], y[i : i + 1])[0, 0] for i in range(3)])
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    x0 = X[:5]
    m = prob.conditional_mean(x0)
    for gx, gy in zip(prob.rep_x.matrices, prob.rep_y.matrices, strict=True):
        assert np.allclose(prob.conditional_mean(x0 @ gx.T), gy[0, 0] * m, atol=1e-10)
    # E[y | x] = int_0^inf (1 - F) - int_-inf^0 F (trapezoid on a fine grid; F is smooth)
    t = np.linspace(0, 30, 30_001)
    up = np.trapezoid(1 - prob.conditional_cdf(x0, t), t, axis=1)
    down = np.trapezoid(prob.conditional_cdf(x0, -t[::-1]), t, axis=1)
    assert np.allclose(up - down, m, atol=1e-6)


def test_cdf_quantiles_and_intervals_are_consistent():
    prob = benchmark_problem("C2xC2")
    X, y = prob.sample(200, np.random.default_rng(0))
    est = NCPRegressor(prob.rep_x, prob.rep_y, rank=8, width=16, n_steps=60, random_state=0).fit(X, y)
    F = est.predict_cdf(X[:50])
    assert np.all(np.diff(F, axis=1) >= 0)
    q = est.predict_quantiles(X[:50], [0.05, 0.5, 0.95])
    assert np.all(np.diff(q, axis=1) >= 0)
    iv = est.predict_interval(X[:50], 0.2)
    assert np.all(iv[:, 0] <= iv[:, 1])
    grid = est.grid_
    a, b = (np.searchsorted(grid, iv[:, k]) for k in (0, 1))
    full = (a == 0) & (b == len(grid) - 1)
    mass = F[np.arange(50), b] - F[np.arange(50), a]
    assert np.all(full | (mass >= 0.8 - 1e-6))


def test_fit_does_not_depend_on_where_the_data_sit():
    prob = benchmark_problem("C2")
    X, y = prob.sample(100, np.random.default_rng(0))
    kw = dict(rank=4, width=8, n_steps=20, random_state=0, dtype=torch.float64)
    a = NCPRegressor(**kw).fit(X, y)
    b = NCPRegressor(**kw).fit(3 * X + np.array([5.0, -2.0]), 2 * y - 1)
    assert np.allclose(b.predict(3 * X + np.array([5.0, -2.0])), 2 * a.predict(X) - 1, atol=1e-8)


# ------------------------------------------------------------------------------------------------ a claim
@pytest.mark.claim
def test_encp_beats_ncp_at_small_n_over_seeds():
    prob = benchmark_problem("C2")
    wins = 0
    for seed in range(3):
        rng = np.random.default_rng(seed)
        X, y = prob.sample(120, rng)
        Xt, _ = prob.sample(1000, rng)
        truth = prob.conditional_mean(Xt)
        kw = dict(rank=8, width=16, n_steps=150, random_state=seed)
        mse = [
            np.mean((e.fit(X, y).predict(Xt) - truth) ** 2)
            for e in (NCPRegressor(prob.rep_x, prob.rep_y, **kw), NCPRegressor(**kw))
        ]
        wins += mse[0] < mse[1]
    assert wins >= 2


# ---------------------------------------------------------------------------------------------- bad input
def test_bad_groups_and_representations_raise_one_clear_error():
    with pytest.raises(GroupError, match="orthogonal"):
        FiniteGroup(np.stack([np.eye(2), np.diag([2.0, 0.5])]))
    with pytest.raises(GroupError, match="not closed"):
        FiniteGroup(np.stack([np.eye(2), np.array([[0.0, -1.0], [1.0, 0.0]])]))  # a quarter turn without its powers
    G = dihedral(3)
    with pytest.raises(GroupError, match="inconsistent representation sizes"):
        Representation(G, np.stack([np.eye(2)] * 4))
    with pytest.raises(GroupError, match="inconsistent representation sizes"):
        Representation(G, np.ones((6, 2, 3)))
    with pytest.raises(GroupError, match="orthogonal"):
        Representation(G, G.elements * 2)
    with pytest.raises(GroupError, match="homomorphism"):
        Representation(G, -np.ones(6))
    with pytest.raises(GroupError, match="same group"):
        EquivariantLinear(G.regular, klein4().regular)


def test_bad_data_and_parameters_raise_one_clear_error():
    prob = benchmark_problem("D3")
    X, y = prob.sample(20, np.random.default_rng(0))
    est = NCPRegressor(prob.rep_x, prob.rep_y, n_steps=2)
    with pytest.raises(RuntimeError, match="not fitted"):
        est.predict(X)
    with pytest.raises(ValueError, match="NaN"):
        est.fit(np.where(np.arange(40).reshape(20, 2) == 3, np.nan, X), y)
    with pytest.raises(ValueError, match="NaN"):
        est.fit(X, np.full(20, np.inf))
    with pytest.raises(ValueError, match="empty"):
        est.fit(np.zeros((0, 2)), np.zeros(0))
    with pytest.raises(ValueError, match="2-D"):
        est.fit(X[:, 0], y)
    with pytest.raises(ValueError, match="different numbers"):
        est.fit(X, y[:-1])
    with pytest.raises(ValueError, match="rep_x acts on dimension 2"):
        est.fit(np.hstack([X, X]), y)
    with pytest.raises(ValueError, match="1-D array of scalar"):
        est.fit(X, np.stack([y, y], 1))
    with pytest.raises(GroupError, match="both rep_x and rep_y"):
        NCPRegressor(prob.rep_x).fit(X, y)
    with pytest.raises(GroupError, match="same group"):
        NCPRegressor(prob.rep_x, Representation.trivial(klein4())).fit(X, y)
    with pytest.raises(ValueError, match="rank"):
        NCPRegressor(rank=0).fit(X, y)
    with pytest.raises(ValueError, match="n_steps"):
        EMLPRegressor(n_steps=0).fit(X, y)
    est.fit(X, y)
    with pytest.raises(ValueError, match="alpha"):
        est.predict_interval(X, alpha=1.5)
    with pytest.raises(ValueError, match="quantile levels"):
        est.predict_quantiles(X, [1.2])
    with pytest.raises(ValueError, match="X has 4 features"):
        est.predict(np.hstack([X, X]))
