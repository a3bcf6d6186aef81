"""MS-Flow: operators linear with exact adjoints and exact data steps, the chi regulariser's minimum, the
multiple-shooting gradient against autograd through the whole objective, the activation-memory meter against
known saved tensors and its N-scaling, trajectory consistency at large rho, the prior's samples scored by a
scikit-learn classifier, clear errors on bad input, and the benchmark's tiny size."""

from __future__ import annotations

import copy
import functools
import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.probabilistic.msflow import (
    AvgPoolSR,
    DFlow,
    FlowPrior,
    Inpainting,
    MSFlow,
    PnPFlow,
    RadonCT,
    SavedTensorMeter,
    as_operator,
    chi_regulariser,
    classical_reconstruction,
    digits,
    psnr,
    random_mask,
    saved_tensor_bytes,
    train_flow_prior,
)
from icml26.probabilistic.msflow.data import digit_labels

SHAPE = (1, 8, 8)


@functools.cache
def _ct() -> RadonCT:
    return RadonCT(8, 6)


def _operators(seed: int = 0) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    return {
        "inpaint": Inpainting(random_mask(SHAPE, 0.6, rng)),
        "sr2": AvgPoolSR(SHAPE, 2),
        "sr4": AvgPoolSR(SHAPE, 4),
        "ct": _ct(),
    }


def _dense(op) -> torch.Tensor:
    """The operator's matrix, column by column (A applied to the basis)."""
    basis = torch.eye(64, dtype=torch.float32).reshape(64, *SHAPE)
    return op.A(basis).reshape(64, -1).T.double()


def _random_prior(seed: int = 0) -> FlowPrior:
    torch.manual_seed(seed)
    return FlowPrior(SHAPE, hidden=32, depth=2).requires_grad_(False)


# -------------------------------------------------------------------------------------------------- operators
@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), name=st.sampled_from(["inpaint", "sr2", "sr4", "ct"]))
def test_adjoint_identity(seed, name):
    op = _operators(seed)[name]
    g = torch.Generator().manual_seed(seed)
    x = torch.randn((3, *SHAPE), generator=g, dtype=torch.float32)
    y = torch.randn(op.A(x).shape, generator=g)
    lhs = (op.A(x) * y).sum().item()
    rhs = (x * op.A_adjoint(y)).sum().item()
    assert lhs == pytest.approx(rhs, rel=1e-5, abs=1e-5)
    a, b = torch.randn(2, generator=g)
    x2 = torch.randn(x.shape, generator=g)
    torch.testing.assert_close(op.A(a * x + b * x2), a * op.A(x) + b * op.A(x2), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", ["inpaint", "sr2", "sr4", "ct"])
def test_norm_sq_is_the_spectral_norm(name):
    op = _operators()[name]
    mat = _dense(op)
    assert torch.linalg.matrix_norm(mat, 2).item() ** 2 == pytest.approx(op.norm_sq, rel=1e-5)


@pytest.mark.parametrize("name", ["inpaint", "sr2", "ct"])
@pytest.mark.parametrize("w", [0.1, 3.0, 1e3])
def test_prox_matches_a_dense_solve(name, w):
    op = _operators(1)[name]
    mat = _dense(op)
    g = torch.Generator().manual_seed(2)
    u = torch.randn((2, *SHAPE), generator=g)
    y = op.A(torch.randn((2, *SHAPE), generator=g))
    rhs = w * (y.reshape(2, -1).double() @ mat) + u.reshape(2, -1).double()
    exact = torch.linalg.solve(w * mat.T @ mat + torch.eye(64, dtype=torch.float64), rhs.T).T
    torch.testing.assert_close(op.prox(u, y, w).reshape(2, -1).double(), exact, atol=2e-4, rtol=1e-4)


def test_conjugate_gradient_prox_for_an_outside_operator():
    """A deepinv-style duck (A, A_adjoint only) gets the CG prox, equal to the mask's closed form."""
    inner = _operators(3)["inpaint"]

    class Duck:
        def A(self, x):
            return inner.mask * x

        def A_adjoint(self, y):
            return inner.mask * y

    op = as_operator(Duck(), SHAPE)
    g = torch.Generator().manual_seed(0)
    u, y = torch.randn((2, *SHAPE), generator=g), torch.randn((2, *SHAPE), generator=g)
    torch.testing.assert_close(op.prox(u, y, 5.0), inner.prox(u, y, 5.0), atol=1e-5, rtol=1e-5)


def test_radon_matrix_reproduces_skimage_and_fbp_inverts_a_dense_scan():
    from skimage.transform import radon

    op = RadonCT(8, 6)
    img = np.random.default_rng(0).standard_normal((8, 8))
    sino = radon(img, theta=op.theta, circle=False).ravel() / op.scale
    got = op.A(torch.as_tensor(img[None, None], dtype=torch.float32))[0].numpy()
    np.testing.assert_allclose(got, sino, rtol=1e-4, atol=1e-4)
    dense = RadonCT(8, 60)  # many angles: FBP is close to the image
    disc = np.zeros((1, 1, 8, 8), np.float32)
    disc[0, 0, 2:6, 2:6] = 1.0
    x = torch.as_tensor(disc)
    assert float(psnr(dense.fbp(dense.A(x)), x, data_range=1.0)[0]) > 15.0


# -------------------------------------------------------------------------------------------------- regulariser
def test_chi_regulariser_is_minimal_at_sqrt_d_minus_one_with_the_right_sign():
    d = 64
    direction = torch.randn(1, d)
    direction /= direction.norm()
    radii = torch.linspace(1.0, 16.0, 3001)
    values = torch.stack([chi_regulariser(r * direction)[0] for r in radii])
    assert radii[values.argmin()].item() == pytest.approx(np.sqrt(d - 1), abs=0.01)
    # it equals -log chi_d density at ||z|| up to a constant
    from scipy import stats

    for r in (3.0, 8.0, 12.0):
        diff = chi_regulariser(r * direction)[0].item() + stats.chi(d).logpdf(r)
        ref = chi_regulariser(8.0 * direction)[0].item() + stats.chi(d).logpdf(8.0)
        assert diff == pytest.approx(ref, abs=1e-4)


# -------------------------------------------------------------------------------------------------- gradients
@pytest.mark.parametrize("name", ["inpaint", "ct"])
def test_multiple_shooting_gradient_equals_autograd_through_the_objective(name):
    """The segment-by-segment VJP gradient is the exact gradient of J (ground truth: autograd on the full graph)."""
    prior = _random_prior(1).double()
    op = copy.copy(_operators(2)[name])
    if isinstance(op, RadonCT):
        op.matrix = op.matrix.double()
    else:
        op.mask = op.mask.double()
    ms = MSFlow(prior, op, n_shoot=3, substeps=2, rho=2.5, lam=0.3)
    g = torch.Generator().manual_seed(0)
    states = [torch.randn((2, *SHAPE), generator=g, dtype=torch.float64) for _ in range(4)]
    y = op.A(torch.randn((2, *SHAPE), generator=g, dtype=torch.float64))
    leaves = [s.clone().requires_grad_(True) for s in states]
    truth = torch.autograd.grad(ms.objective(leaves, y, rho=2.5), leaves)
    ours, _ = ms.gradient(states, y, rho=2.5)
    for a, b in zip(ours, truth, strict=True):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=1e-9)
    free = MSFlow(prior, op, n_shoot=3, substeps=2, rho=2.5, lam=0.3, jacobian="free").gradient(states, y, 2.5)[0]
    assert not torch.allclose(free[0], truth[0], atol=1e-3)  # J ~ I is an approximation, not the gradient


def test_data_step_zeroes_the_gradient_of_the_last_state():
    prior = _random_prior(2)
    op = _operators(0)["sr2"]
    ms = MSFlow(prior, op, n_shoot=2, substeps=2, rho=0.7)
    g = torch.Generator().manual_seed(1)
    states = [torch.randn((2, *SHAPE), generator=g) for _ in range(3)]
    y = op.A(torch.randn((2, *SHAPE), generator=g))
    grads, _ = ms.gradient(states, y, 0.7, data_step=True)
    assert grads[-1].abs().max().item() < 1e-5


def test_dflow_gradient_equals_finite_differences():
    prior = _random_prior(3).double()
    op = _operators(0)["inpaint"]  # a fresh mask object per call
    op.mask = op.mask.double()
    df = DFlow(prior, op, n_steps=3, lam=0.5)
    g = torch.Generator().manual_seed(0)
    z = torch.randn((1, *SHAPE), generator=g, dtype=torch.float64)
    y = op.A(torch.randn((1, *SHAPE), generator=g, dtype=torch.float64))
    grad = df.gradient(z, y)
    v = torch.randn(z.shape, generator=g, dtype=torch.float64)
    h = 1e-6
    fd = (df.objective(z + h * v, y) - df.objective(z - h * v, y)) / (2 * h)
    assert (grad * v).sum().item() == pytest.approx(fd.item(), rel=1e-6)


# -------------------------------------------------------------------------------------------------- memory
def test_meter_counts_known_saved_tensors_and_releases_them():
    x = torch.randn(1000, requires_grad=True)
    with SavedTensorMeter() as meter:
        y = torch.exp(x)  # saves its output: 4000 bytes
        z = (y * y).sum()  # saves y twice (one storage): deduplicated
        assert meter.current == 4000
        z.backward()
        del y, z
    assert meter.peak == 4000 and meter.total == 4000 and meter.current == 0


def test_memory_is_deterministic_linear_for_dflow_and_flat_for_msflow():
    prior = _random_prior(0)
    op = _operators(0)["sr2"]
    weights = list(prior.parameters())
    z = torch.randn((4, *SHAPE))
    y = op.A(z)
    d = {n: saved_tensor_bytes(lambda n=n: DFlow(prior, op, n_steps=n).gradient(z, y), weights) for n in (4, 8, 16)}
    assert d[8] == saved_tensor_bytes(lambda: DFlow(prior, op, n_steps=8).gradient(z, y), weights)  # deterministic
    assert d[16] - d[8] == 2 * (d[8] - d[4]) > 0  # every step adds the same activations: exactly affine in N
    ms = {}
    for n in (4, 8, 16):
        m = MSFlow(prior, op, n_shoot=n // 2, substeps=2)
        states = [z] + [torch.zeros_like(z)] * m.K
        ms[n] = saved_tensor_bytes(lambda m=m, s=states: m.gradient(s, y), weights)
    assert ms[4] == ms[8] == ms[16]
    assert d[16] / ms[16] > 6  # N / m = 8, minus the regulariser's and the first step's overheads


# -------------------------------------------------------------------------------------------------- solvers
@pytest.fixture(scope="module")
def prior():
    torch.manual_seed(0)
    return train_flow_prior(digits("train"), steps=500, hidden=64, batch_size=64)


def test_prior_samples_look_like_digits(prior):
    """Scored by scikit-learn models fitted on real digits: the prior's samples lie much nearer the training
    digits than an untrained prior's samples, and a classifier spreads them over most classes."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import NearestNeighbors

    train = digits("train").reshape(1500, -1)
    clf = LogisticRegression(max_iter=3000).fit(train, digit_labels("train"))
    nn = NearestNeighbors(n_neighbors=1).fit(train)
    torch.manual_seed(5)
    untrained = FlowPrior(SHAPE, hidden=64).requires_grad_(False)
    gen = torch.Generator().manual_seed(0)
    samples = prior.sample(200, steps=32, generator=gen).numpy().reshape(200, -1)
    reference = untrained.sample(200, steps=32, generator=torch.Generator().manual_seed(0)).numpy().reshape(200, -1)
    real = digits("test")[:200].reshape(200, -1)
    dist = {
        name: nn.kneighbors(a)[0].mean() for name, a in (("prior", samples), ("untrained", reference), ("real", real))
    }
    assert dist["prior"] < 0.75 * dist["untrained"] and dist["real"] < dist["prior"]
    assert len(np.unique(clf.predict(samples))) >= 8


def test_large_penalty_makes_the_trajectory_consistent(prior):
    """With a large rho the stitched end Phi(z_0) and the data-consistent z_K coincide; with a small one they
    drift apart (the penalty is what couples the segments; a strong regulariser on z_0 creates the tension)."""
    x = torch.as_tensor(digits("test")[:4])
    op = _operators(0)["inpaint"]
    y = op.A(x)
    gaps = {}
    for rho in (0.01, 1e3):
        rec = MSFlow(prior, op, n_shoot=3, substeps=2, rho=rho, lam=50.0, outer=5, inner=10).solve(
            y, generator=torch.Generator().manual_seed(0)
        )
        gaps[rho] = (rec.x - rec.x_data).square().mean().sqrt().item()
    assert gaps[1e3] < 0.02 and gaps[0.01] > 5 * gaps[1e3]


def test_msflow_and_dflow_recover_inpainting_over_seeds(prior):
    """Both beat the blank start; MS-Flow at D-Flow's NFE is within 1 dB of it on every seed (a tolerance, not
    the claim: the claim's 0.5 dB is judged by the full profile)."""
    test = digits("test")
    for seed in range(3):
        rng = np.random.default_rng(seed)
        x = torch.as_tensor(test[rng.choice(len(test), 6, replace=False)])
        op = Inpainting(random_mask(SHAPE, 0.5, rng))
        y = op.A(x) + 0.01 * torch.as_tensor(rng.standard_normal((6, *SHAPE)), dtype=torch.float32)
        rd = DFlow(prior, op, n_steps=6, outer=5, inner=10).solve(y, torch.Generator().manual_seed(seed))
        rm = MSFlow(prior, op, n_shoot=3, substeps=2, rho=0.3, nfe_budget=rd.nfe, outer=5, inner=10).solve(
            y, torch.Generator().manual_seed(seed)
        )
        assert rm.nfe <= rd.nfe + 2
        blank = psnr(torch.full_like(x, -1.0), x).mean()
        p_d, p_m = psnr(rd.x, x).mean(), psnr(rm.x, x).mean()
        assert p_d > blank + 1 and p_m > blank + 1
        assert p_m > p_d - 1.0
        assert np.isfinite(psnr(PnPFlow(prior, op, n_steps=10).solve(y).x, x)).all()
        assert np.isfinite(psnr(classical_reconstruction(op, y), x)).all()


# -------------------------------------------------------------------------------------------------- bad input
def test_bad_inputs_raise_one_clear_error():
    prior = _random_prior()
    op = _operators()["sr2"]
    ms = MSFlow(prior, op, n_shoot=2, substeps=2, iters=1, optimizer="adam")
    with pytest.raises(ValueError, match="measurements y have shape"):
        ms.solve(torch.zeros(2, 1, 8, 8))
    with pytest.raises(ValueError, match="NaN or inf"):
        ms.solve(torch.full((2, 1, 4, 4), float("nan")))
    with pytest.raises(TypeError, match="no callable A_adjoint"):
        MSFlow(prior, type("NoAdjoint", (), {"A": lambda self, x: x})())
    with pytest.raises(ValueError, match="acts on images"):
        DFlow(prior, AvgPoolSR((1, 16, 16), 2))
    with pytest.raises(ValueError, match="has shape"):
        op.A(torch.zeros(2, 1, 7, 7))
    with pytest.raises(TypeError, match="FlowPrior"):
        DFlow(object(), op)
    with pytest.raises(ValueError, match="only 0 and 1"):
        Inpainting(np.full((8, 8), 0.5))
    with pytest.raises(ValueError, match="jacobian"):
        MSFlow(prior, op, jacobian="exact")
    with pytest.raises(ValueError, match="divide"):
        AvgPoolSR(SHAPE, 3)
    with pytest.raises(ValueError, match="NaN or inf"):
        train_flow_prior(np.full((4, 1, 8, 8), np.nan), steps=1, cache=False)
    with pytest.raises(ValueError, match="nfe_budget"):
        MSFlow(prior, op, n_shoot=2, substeps=2, nfe_budget=3)


# -------------------------------------------------------------------------------------------------- benchmark
def test_benchmark_tiny_size_runs():
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_msflow.py"
    spec = importlib.util.spec_from_file_location("bench_msflow", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = bench.rows("tiny")
    assert rows and all(r.ours > 0 and r.anchor > 0 for r in rows)


def test_image_metrics_take_numpy_and_refuse_nan():
    """Review: numpy images raised AttributeError from inside, NaN images gave a NaN PSNR without a word."""
    from icml26.probabilistic.msflow import psnr, ssim

    x = torch.rand(2, 1, 8, 8)
    y = x + 0.01
    np.testing.assert_allclose(psnr(x.numpy(), y.numpy()), psnr(x, y))
    np.testing.assert_allclose(psnr(x, y), 10 * np.log10(4 / 1e-4), rtol=1e-6)
    np.testing.assert_allclose(ssim(x.numpy(), y.numpy()), ssim(x, y))
    for metric in (psnr, ssim):
        with pytest.raises(ValueError, match="NaN"):
            metric(x * float("nan"), y)
