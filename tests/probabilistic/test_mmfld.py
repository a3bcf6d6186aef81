"""MMFLD: mirror maps against autograd and round trips, drifts against autograd and brute force, the grid reference
against the analytic pure-drift optimum, feasibility at every step, the stationary comparison with projected MFLD over
seeds, a seeded rate estimate, and one clear error per bad input."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.probabilistic.mmfld import (
    MFLD,
    BoundaryHitError,
    Box,
    BoxLogBarrier,
    DomainError,
    EntropicBox,
    EntropicSimplex,
    GaussianKernel,
    InteractionEnergy,
    KnownOptimumDensity,
    LinearPotential,
    MeanFieldTwoLayerNet,
    MirrorMFLD,
    MMDObjective,
    ProjectedMFLD,
    QuadraticPotential,
    ReflectedMFLD,
    ReparameterizedMFLD,
    Simplex,
    SimplexLogBarrier,
    StepSizeError,
    TruncatedExponential,
    grid_fixed_point,
    sample_reference,
    wasserstein1_to_reference,
)
from icml26.probabilistic.mmfld.reproduce import fit_log_gap_slope

D = torch.float64
unit = st.floats(1e-6, 1 - 1e-6)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def pure_drift(c: float = 1.5) -> InteractionEnergy:
    return InteractionEnergy(LinearPotential([-c]))


def analytic_mean(a: float) -> float:
    """Mean of the density proportional to exp(a x) on [0, 1]."""
    return 1 / (1 - math.exp(-a)) - 1 / a


# ------------------------------------------------------------------------------------------------- mirror maps
@settings(max_examples=60, deadline=None)
@given(st.lists(unit, min_size=3, max_size=3), st.floats(-3, 3), st.floats(0.01, 5))
def test_box_log_barrier_round_trip(xs, lo, width):
    mirror = BoxLogBarrier(lo, lo + width, dim=3)
    x = lo + width * torch.tensor([xs], dtype=D)
    torch.testing.assert_close(mirror.grad_conj(mirror.grad(x)), x, rtol=1e-10, atol=1e-12 * width)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.05, 10), min_size=4, max_size=4))
def test_simplex_log_barrier_round_trip(weights):
    w = torch.tensor(weights, dtype=D)
    x = (w / w.sum())[:3].unsqueeze(0)  # interior point of the 3-simplex in its first 3 coordinates
    mirror = SimplexLogBarrier(3)
    torch.testing.assert_close(mirror.grad_conj(mirror.grad(x)), x, rtol=1e-9, atol=1e-12)


def test_mirror_inverses_stay_inside_for_extreme_dual_points():
    y = torch.tensor([[-1e12], [-1e3], [0.0], [1e3], [1e12]], dtype=D)
    x = BoxLogBarrier(0.0, 1.0).grad_conj(y)
    assert ((x > 0) & (x < 1)).all() and x[2, 0] == 0.5
    ys = torch.tensor([[1e6, -1e6], [-1e6, -1e6], [50.0, 50.0]], dtype=D)
    xs = SimplexLogBarrier(2).grad_conj(ys)
    assert (xs > 0).all() and (xs.sum(-1) < 1).all()


@pytest.mark.parametrize(
    ("mirror", "x"),
    [
        (BoxLogBarrier([0.0, -1.0], [1.0, 2.0]), torch.tensor([0.3, 1.7], dtype=D)),
        (EntropicBox(0.0, 1.0, dim=2), torch.tensor([0.1, 0.95], dtype=D)),
        (SimplexLogBarrier(3), torch.tensor([0.2, 0.1, 0.4], dtype=D)),
        (EntropicSimplex(3), torch.tensor([0.2, 0.1, 0.4], dtype=D)),
    ],
)
def test_grad_hessian_and_noise_factor_agree_with_autograd(mirror, x):
    grad = torch.func.grad(mirror.value)(x)
    hess = torch.autograd.functional.hessian(mirror.value, x)
    torch.testing.assert_close(mirror.grad(x), grad)
    torch.testing.assert_close(mirror.hess(x), hess)
    basis = torch.eye(mirror.noise_dim, dtype=D)  # columns of A with A A^T = Hess
    a = torch.stack([mirror.hess_sqrt_mul(x, e) for e in basis], dim=-1)
    torch.testing.assert_close(a @ a.T, hess)
    v = torch.tensor([0.3, -1.2, 0.7][: len(x)], dtype=D)
    torch.testing.assert_close(mirror.local_norm_sq(x, v), v @ torch.linalg.solve(hess, v))
    torch.testing.assert_close(mirror.grad_conj(mirror.grad(x)), x)


# ----------------------------------------------------------------------------------------------------- domains
@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-2, 2), min_size=3, max_size=3), st.lists(st.floats(0.01, 1), min_size=4, max_size=4))
def test_simplex_projection_is_the_euclidean_projection(v, q):
    x = torch.tensor([v], dtype=D)
    p = Simplex(3).project(x)
    qq = torch.tensor(q, dtype=D)
    q3 = (qq / qq.sum())[:3].unsqueeze(0)  # any feasible point
    assert (p >= -1e-12).all() and float(p.sum()) <= 1 + 1e-12
    assert float(((x - p) * (q3 - p)).sum()) <= 1e-10  # the obtuse-angle (KKT) characterisation


@settings(max_examples=60, deadline=None)
@given(st.floats(-10, 10))
def test_reflection_folds_into_the_box_and_keeps_interior_points(v):
    box = Box(-1.0, 2.0)
    r = box.reflect(torch.tensor([[v]], dtype=D))
    assert -1 <= float(r) <= 2
    if -1 <= v <= 2:
        assert float(r) == pytest.approx(v)
    # the fold preserves the distance to the nearest copy of the point in the reflected lattice
    assert (
        min(abs(float(r) - v - 6 * k) for k in range(-3, 4)) < 1e-9
        or min(abs(float(r) + v + 2 - 6 * k) for k in range(-3, 4)) < 1e-9
    )


@pytest.mark.parametrize("domain", [Box(0.0, 1.0, dim=2), Simplex(2)])
def test_reparameterisation_log_jacobian_matches_autograd(domain):
    z = torch.tensor([0.3, -0.8], dtype=D)
    logdet = lambda zz: torch.linalg.slogdet(torch.func.jacrev(domain.from_unconstrained)(zz))[1]  # noqa: E731
    torch.testing.assert_close(domain.grad_log_det_jacobian(z), torch.func.grad(logdet)(z))
    g = torch.tensor([1.0, -2.0], dtype=D)
    jac = torch.func.jacrev(domain.from_unconstrained)(z)
    torch.testing.assert_close(domain.jacobian_t_mul(z, g), jac.T @ g)
    torch.testing.assert_close(domain.to_unconstrained(domain.from_unconstrained(z)), z)


# -------------------------------------------------------------------------------------------------- objectives
def _autograd_drift(obj, x, support):
    xg = x.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(obj.first_variation(xg, support).sum(), xg)
    return g


def test_interaction_mmd_and_network_drifts_agree_with_autograd():
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(7, 2, generator=gen, dtype=D)
    target = torch.rand(11, 2, generator=gen, dtype=D)
    objs = [
        InteractionEnergy(QuadraticPotential([0.2, 0.7], 3.0), GaussianKernel(0.3, 2.0)),
        InteractionEnergy(lambda p: torch.sin(3 * p).sum(-1), GaussianKernel(0.5)),
        MMDObjective(target, GaussianKernel(0.25)),
        MeanFieldTwoLayerNet(torch.linspace(-2, 2, 9, dtype=D), torch.tanh(torch.linspace(-2, 2, 9, dtype=D)), 0.1),
    ]
    for obj in objs:
        torch.testing.assert_close(obj.first_variation_grad(x), _autograd_drift(obj, x, x.detach()))


def test_mmd_value_and_first_variation_against_brute_force():
    gen = torch.Generator().manual_seed(1)
    x, t = torch.rand(6, 2, generator=gen, dtype=D), torch.rand(9, 2, generator=gen, dtype=D)
    h = 0.3
    k = lambda a, b: torch.exp(-(torch.cdist(a, b) ** 2) / (2 * h * h))  # noqa: E731
    obj = MMDObjective(t, GaussianKernel(h))
    mmd2 = k(x, x).mean() - 2 * k(x, t).mean() + k(t, t).mean()
    torch.testing.assert_close(obj.value(x), 0.5 * mmd2)
    torch.testing.assert_close(obj.first_variation(x), k(x, x).mean(1) - k(x, t).mean(1))
    # convexity along a mixture: F((1 - s) mu + s nu) <= (1 - s) F(mu) + s F(nu)
    y = torch.rand(6, 2, generator=gen, dtype=D)
    both, w = torch.cat([x, y]), torch.full((12,), 1 / 12, dtype=D)
    assert float(obj.value(both, w)) <= 0.5 * float(obj.value(x) + obj.value(y)) + 1e-12


def test_known_optimum_embedding_and_zero_loss_at_the_optimum():
    box = Box(0.0, 1.0)
    rho = TruncatedExponential(box, 20.0)
    assert float(rho.mean) == pytest.approx(analytic_mean(20.0), rel=1e-12)
    y = torch.linspace(0, 1, 200_001, dtype=D)
    dens = torch.exp(rho.log_density(y.unsqueeze(-1)))
    for x0 in (0.1, 0.9, 1.0):
        quad = torch.trapezoid(torch.exp(-((x0 - y) ** 2) / (2 * 0.2**2)) * dens, y)
        m, _ = rho.embedding_1d(torch.tensor([[x0]], dtype=D), 0.2)
        assert float(m) == pytest.approx(float(quad), rel=1e-7)
    obj = KnownOptimumDensity(box, 20.0, 0.05, GaussianKernel(0.2))
    ref = grid_fixed_point(obj, 0.05, box, 2000)
    assert float(ref.mean) == pytest.approx(analytic_mean(20.0), abs=1e-5)
    assert ref.value == pytest.approx(0.0, abs=1e-6)  # L* = 0 exactly (midpoint-rule error only)


# ------------------------------------------------------------------------------------------------ reference
def test_grid_fixed_point_matches_the_analytic_pure_drift_optimum():
    ref = grid_fixed_point(pure_drift(1.5), 0.05, Box(0.0, 1.0), 4000)
    assert ref.converged
    assert float(ref.mean) == pytest.approx(analytic_mean(30.0), abs=1e-6)  # ~0.967 (the notes' check)


def test_grid_fixed_point_is_the_gibbs_fixed_point_of_the_interaction_problem():
    obj = InteractionEnergy(LinearPotential([-1.5]), GaussianKernel(0.2))
    ref = grid_fixed_point(obj, 0.05, Box(0.0, 1.0), 1000)
    gibbs = torch.softmax(-obj.grid_first_variation(ref.grid, ref.masses) / 0.05, dim=0)
    torch.testing.assert_close(ref.masses, gibbs, rtol=1e-8, atol=1e-12)
    rho = torch.softmax(torch.linspace(0, 1, 1000, dtype=D) * 30.0, dim=0)  # no interaction: more mass at 1
    assert float(ref.mean) < float((rho * ref.grid.points[:, 0]).sum())  # the repulsion spreads mass inwards


def test_w1_to_reference_of_exact_quantiles_is_small_and_of_a_point_mass_is_exact():
    ref = grid_fixed_point(pure_drift(1.5), 0.05, Box(0.0, 1.0), 2000)
    cdf = ref.masses.cumsum(0)
    q = (torch.arange(2000, dtype=D) + 0.5) / 2000
    quantiles = ref.grid.points[torch.searchsorted(cdf, q).clamp_max(1999), 0]
    assert float(wasserstein1_to_reference(quantiles.reshape(1, -1, 1), ref)) < 1e-3
    point = torch.full((1, 5, 1), 1.0, dtype=D)  # W1(delta_1, mu*) = 1 - mean*
    assert float(wasserstein1_to_reference(point, ref)) == pytest.approx(1 - analytic_mean(30.0), abs=1e-3)


# ------------------------------------------------------------------------------------------------- dynamics
@pytest.mark.parametrize("solver", [MirrorMFLD, ProjectedMFLD, ReflectedMFLD, ReparameterizedMFLD])
def test_particles_are_feasible_at_every_step(solver):
    box = Box(0.0, 1.0, dim=2)
    obj = InteractionEnergy(LinearPotential([-1.5, 0.5]), GaussianKernel(0.2))
    closed = solver in (ProjectedMFLD, ReflectedMFLD)

    def check(k, x):
        dist = box.boundary_distance(x)
        assert bool((dist >= 0).all() if closed else (dist > 0).all()), (solver.__name__, k)

    solver(obj, box, 0.05, 0.02, 40, seed=3).run(200, record_every=1, callback=check)


def test_mirror_mfld_on_the_simplex_stays_inside():
    target = torch.tensor(np.random.default_rng(0).dirichlet([6.0, 3.0, 0.6], 50)[:, :2], dtype=D)
    obj = MMDObjective(target, GaussianKernel(0.15))
    inside = []
    res = MirrorMFLD(obj, Simplex(2), 0.01, 0.005, 50, seed=0).run(
        300, record_every=1, callback=lambda k, x: inside.append(bool(Simplex(2).contains(x).all()))
    )
    assert all(inside) and res.history["boundary_mass"].max() == 0
    proj = ProjectedMFLD(obj, Simplex(2), 0.01, 0.005, 50, seed=0).run(300)
    assert proj.history["boundary_mass"][-1] > 0  # the target sits near the face sum x = 1: projection piles there


def test_stationary_law_pure_drift_and_projected_pile_up_over_seeds():
    # The notes' analytic case: V = -1.5 x on [0, 1], lam = 0.05, mu* ~ exp(30 x), mean 0.967. All arms start from
    # the same draws of mu*; the thresholds are the notes' (recorded run: MMFLD error ~ 0.002, projected ~ 0.01,
    # projected boundary mass ~ 0.3).
    box, lam, step = Box(0.0, 1.0), 0.05, 0.01
    obj = pure_drift(1.5)
    ref = grid_fixed_point(obj, lam, box, 2000)
    mean_star = analytic_mean(30.0)
    for seed in (0, 1, 2):
        init = sample_reference(ref, (4, 200), torch.Generator().manual_seed(seed))
        results = {
            cls.method: cls(obj, box, lam, step, 200, seed=seed).run(2000, init, record_every=20)
            for cls in (MirrorMFLD, ProjectedMFLD, ReflectedMFLD)
        }
        late = results["mmfld"].history["step"] >= 1000
        err = {k: abs(float(r.history["mean"][late].mean()) - mean_star) for k, r in results.items()}
        mass = {k: float(r.history["boundary_mass"][late].mean()) for k, r in results.items()}
        assert mass["mmfld"] == 0 and mass["reflected"] == 0
        assert mass["projected"] > 0.1
        assert err["mmfld"] < 0.01
        assert err["projected"] > 2 * err["mmfld"]


def test_seeded_rate_estimate_of_mirror_mfld_is_linear_convergence():
    obj = InteractionEnergy(LinearPotential([-1.5]), GaussianKernel(0.2, compute_dtype=torch.float32))
    from icml26.probabilistic.mmfld.reference import BinnedObjective

    box = Box(0.0, 1.0)
    ref = grid_fixed_point(obj, 0.05, box, 1000)
    binned = BinnedObjective(obj, 0.05, box, 50)
    l_star = binned.of_reference(ref)
    for seed in (0, 1):
        rows = []
        MirrorMFLD(obj, box, 0.05, 0.04, 100, n_replicas=2, seed=seed).run(
            1000, record_every=25, callback=lambda k, x, out=rows: out.append((k * 0.04, binned.of_samples(x) - l_star))
        )
        slope, used = fit_log_gap_slope(*zip(*rows, strict=True))
        assert used >= 5 and -0.5 < slope < -0.05  # recorded: about -0.1 per time unit


def test_fit_log_gap_slope_recovers_an_exponential_and_stops_at_the_floor():
    t = np.arange(0, 40.0)
    gap = np.maximum(0.3 * np.exp(-0.2 * t), 1e-3)
    slope, used = fit_log_gap_slope(t, gap, floor=2e-3)
    assert slope == pytest.approx(-0.2, rel=1e-9) and used == int(np.ceil(np.log(150) / 0.2))


def test_reparameterized_and_unconstrained_mfld_report_what_they_do():
    box, obj = Box(0.0, 1.0), pure_drift(1.5)
    ref = grid_fixed_point(obj, 0.05, box, 2000)
    init = sample_reference(ref, (2, 200), torch.Generator().manual_seed(0))
    rep = ReparameterizedMFLD(obj, box, 0.05, 0.01, 200, seed=0).run(1500, init)
    assert abs(float(rep.particles.mean()) - analytic_mean(30.0)) < 0.01
    free = MFLD(obj, box, 0.05, 0.01, 200, seed=0).run(500, init)  # drifts out of [0, 1] to the right
    assert free.history["infeasible_fraction"][-1].min() > 0.5


def test_same_seed_same_run_and_paired_initial_particles():
    obj, box = pure_drift(), Box(0.0, 1.0)
    a = MirrorMFLD(obj, box, 0.05, 0.01, 50, seed=4).run(50)
    b = MirrorMFLD(obj, box, 0.05, 0.01, 50, seed=4).run(50)
    torch.testing.assert_close(a.particles, b.particles, rtol=0, atol=0)
    p = ProjectedMFLD(obj, box, 0.05, 0.01, 50, seed=4).run(0)
    m = MirrorMFLD(obj, box, 0.05, 0.01, 50, seed=4).run(0)
    torch.testing.assert_close(p.particles, m.particles, rtol=0, atol=0)


def test_entropic_map_sticks_to_the_boundary_under_a_large_step():
    # The notes' trap: the entropic map's dual noise 1/sqrt(x(1 - x)) outgrows log(1/x) near the boundary.
    obj = pure_drift(1.5)
    with pytest.raises(BoundaryHitError, match="log-barrier"):
        MirrorMFLD(obj, EntropicBox(0.0, 1.0), 0.05, 0.2, 500, seed=0, max_step_ratio=10.0).run(3000)


# ------------------------------------------------------------------------------------------------ bad input
def test_bad_inputs_raise_one_clear_error_each():
    obj, box = pure_drift(), Box(0.0, 1.0)
    solver = MirrorMFLD(obj, box, 0.05, 0.01, 10)
    with pytest.raises(DomainError, match="outside the open interior"):
        solver.run(5, init=[[0.5], [1.0]])
    with pytest.raises(DomainError, match="outside the closed"):
        ProjectedMFLD(obj, box, 0.05, 0.01, 10).run(5, init=[[0.5], [1.2]])
    with pytest.raises(DomainError, match="shape"):
        solver.run(5, init=np.zeros((3, 2)) + 0.5)
    with pytest.raises(DomainError, match="NaN"):
        solver.run(5, init=[[0.5], [float("nan")]])
    with pytest.raises(DomainError, match="empty"):
        solver.run(5, init=np.zeros((0, 1)))
    with pytest.raises(DomainError, match="unsupported"):
        MirrorMFLD(obj, "ball", 0.05, 0.01, 10)
    with pytest.raises(DomainError, match="boxes only"):
        ReflectedMFLD(obj, Simplex(2), 0.05, 0.01, 10)
    with pytest.raises(DomainError, match="defined on a Box"):
        BoxLogBarrier(Simplex(2))  # type: ignore[arg-type]
    with pytest.raises(DomainError, match="lo < hi"):
        Box(1.0, 0.0)
    with pytest.raises(StepSizeError, match="use step <="):
        MirrorMFLD(obj, box, 0.05, 10.0, 10)
    with pytest.raises(StepSizeError, match="drift and noise"):
        MirrorMFLD(pure_drift(5000.0), box, 0.05, 0.01, 10).run(5)
    with pytest.raises(ValueError, match="lam must be a positive"):
        MirrorMFLD(obj, box, -1.0, 0.01, 10)
    with pytest.raises(TypeError, match="first_variation_grad"):
        MirrorMFLD(object(), box, 0.05, 0.01, 10)
    with pytest.raises(ValueError, match="dimension"):
        MirrorMFLD(InteractionEnergy(LinearPotential([1.0, 2.0])), box, 0.05, 0.01, 10).run(1)


def test_benchmark_rows_run_at_the_tiny_size():
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_mmfld.py"
    spec = importlib.util.spec_from_file_location("bench_mmfld", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = bench.rows("tiny")
    assert rows and all(r.paper == "mmfld" and r.ratio > 0 for r in rows)
