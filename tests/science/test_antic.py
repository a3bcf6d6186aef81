"""ANTIC: the solver against exact solutions and its energy budget, the selectors on synthetic bursts, LoRA merge
identity, byte-exact accounting, codec error bounds, and bad input."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.science.antic import (
    ANTIC,
    CFLError,
    CompressedTrajectory,
    EnstrophySelector,
    FixedSelector,
    InterpolationErrorSelector,
    KolmogorovFlow2D,
    LoRALinear,
    NeuralField,
    SZ3Codec,
    UniformSelector,
    ZFPCodec,
    interpolate_frames,
    match_error,
    relative_l2,
    taylor_green_vorticity,
    uniform_indices,
)
from icml26.science.antic.codecs import compress_frames
from icml26.science.antic.field import grid_coordinates


# ------------------------------------------------------------------------------------------------ solver
def test_laminar_kolmogorov_flow_is_a_fixed_point_and_attracts_at_low_re():
    sim = KolmogorovFlow2D(32, re=40.0, kf=4, omega0=KolmogorovFlow2D(32, re=40.0).laminar())
    lam = sim.laminar()
    assert np.abs(lam).max() == pytest.approx(40.0 / 4)  # -cos(k_f y) / (nu k_f)
    sim.advance(2.0)
    assert np.abs(sim.omega - lam).max() < 1e-9 * np.abs(lam).max()
    low = KolmogorovFlow2D(32, re=2.0, kf=4, seed=3)  # decays to laminar at rate >= nu * 1 = 0.5
    assert relative_l2(low.omega, low.laminar()) > 1e-3
    low.advance(40.0)
    assert relative_l2(low.omega, low.laminar()) < 1e-6


@pytest.mark.parametrize("k", [1, 3])
def test_taylor_green_decays_at_the_exact_rate(k):
    w0 = taylor_green_vorticity(32, k)
    sim = KolmogorovFlow2D(32, re=50.0, forcing=False, omega0=w0, dt=0.01)
    sim.advance(1.0)
    exact = w0 * np.exp(-2 * sim.nu * k**2 * sim.t)
    assert np.abs(sim.omega - exact).max() < 1e-10


def test_energy_budget_closes_on_a_turbulent_state():
    """dE/dt = forcing power - viscous dissipation, checked by a centred difference over two small steps."""
    spun = KolmogorovFlow2D(32, re=40.0, seed=1)
    spun.advance(12.0)  # off the laminar state
    h = 1e-3
    sim = KolmogorovFlow2D(32, re=40.0, omega0=spun.omega, dt=h)
    e0 = sim.energy()
    sim.step(1)
    power, dissipation = sim.injection(), sim.dissipation()
    sim.step(1)
    centred = (sim.energy() - e0) / (2 * h)
    assert dissipation > 0.05 and power > 0.05  # both terms are active
    assert centred == pytest.approx(power - dissipation, rel=1e-4, abs=1e-6 * dissipation)
    wrong_nu = power - 0.5 * dissipation  # the check has teeth: a factor 2 in the dissipation fails it
    assert abs(centred - wrong_nu) > 1e-3


def test_turbulent_kolmogorov_flow_is_intermittent():
    """At Re = 40 the dissipation fluctuates (bursting regime), unlike the laminar state."""
    sim = KolmogorovFlow2D(32, re=40.0, seed=0)
    sim.advance(20.0)
    d = []
    for _ in range(60):
        sim.advance(0.5)
        d.append(sim.dissipation())
    d = np.array(d)
    assert d.max() / d.min() > 1.5
    assert d.max() < sim.nu * np.mean(sim.laminar() ** 2)  # bursts stay below the laminar dissipation


def test_bad_solver_inputs_raise_one_clear_error():
    with pytest.raises(CFLError, match="CFL"):
        KolmogorovFlow2D(32, re=40.0, dt=0.5)
    with pytest.raises(ValueError, match="square"):
        KolmogorovFlow2D(32, omega0=np.zeros((32, 16)))
    with pytest.raises(ValueError, match="NaN"):
        KolmogorovFlow2D(16, omega0=np.full((16, 16), np.nan))
    with pytest.raises(ValueError, match="even integer"):
        KolmogorovFlow2D(33)
    with pytest.raises(ValueError, match="positive"):
        KolmogorovFlow2D(16, dt=-0.1)
    sim = KolmogorovFlow2D(16, re=40.0)
    with pytest.raises(ValueError, match="multiple of dt"):
        next(sim.run(1.0, every=sim.dt * 1.5))


# --------------------------------------------------------------------------------------------- selectors
def _burst_movie(n_frames=120, n=16, seed=0):
    """A travelling wave whose shape changes fast inside frames 50-70 (a burst) and slowly elsewhere."""
    rng = np.random.default_rng(seed)
    x = 2 * np.pi * np.arange(n) / n
    base = rng.standard_normal((4, 4))
    speed = np.where((np.arange(n_frames) >= 50) & (np.arange(n_frames) < 70), 0.35, 0.02)
    phase = np.cumsum(speed)
    frames = []
    for p in phase:
        f = sum(
            base[i, j] * np.cos((i + 1) * x[None, :] + (j + 1) * x[:, None] + p * (i + j + 1))
            for i in range(4)
            for j in range(4)
        )
        frames.append(f * (1 + 0.3 * np.sin(p)))
    return np.array(frames, np.float32)


def _kept(selector, frames):
    kept = [i for f in frames for i in selector.update(f)]
    return np.array(kept)


@pytest.mark.parametrize(
    ("selector", "density"), [(EnstrophySelector(0.9, 10), 1.3), (InterpolationErrorSelector(0.05, 20), 2.0)]
)
def test_selectors_keep_more_frames_inside_a_burst(selector, density):
    """Density of kept frames inside the burst over the average density (a uniform selector scores 1)."""
    frames = _burst_movie()
    kept = _kept(selector, frames)
    inside = np.mean((kept >= 50) & (kept < 70)) / (20 / 120)
    assert kept[0] == 0 and np.all(np.diff(kept) > 0)
    assert inside > density


def test_enstrophy_selector_forces_a_frame_every_window_on_a_calm_stream():
    frames = np.repeat(_burst_movie(1)[:1], 35, axis=0)  # nothing changes: only the window forces selections
    kept = _kept(EnstrophySelector(0.9, 10), frames)
    assert list(kept) == [0, 10, 20, 30]


def test_interpolation_error_selector_bounds_the_interpolation_error_of_every_frame():
    frames = _burst_movie(seed=2)
    tol = 0.04
    kept = list(_kept(InterpolationErrorSelector(tol, 20), frames))
    if kept[-1] != len(frames) - 1:
        kept.append(len(frames) - 1)
    rec = interpolate_frames(np.array(kept), frames[kept], len(frames))
    per = np.linalg.norm((rec - frames).reshape(len(frames), -1), axis=1) / np.linalg.norm(
        frames.reshape(len(frames), -1), axis=1
    )
    assert per[:-1].max() <= tol + 1e-6 or per[kept[-2] :].max() > tol  # only the forced last segment may exceed
    u = uniform_indices(len(frames), len(kept))
    assert relative_l2(rec, frames) < relative_l2(interpolate_frames(u, frames[u], len(frames)), frames)


def test_uniform_selector_and_indices():
    sel = UniformSelector(3)
    assert [sel.decide(np.ones((4, 4))) for _ in range(7)] == [True, False, False, True, False, False, True]
    assert list(uniform_indices(10, 4)) == [0, 3, 6, 9]
    with pytest.raises(ValueError, match="n_keep"):
        uniform_indices(5, 1)
    with pytest.raises(ValueError, match="NaN"):
        EnstrophySelector().update(np.array([[np.nan]]))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=6), st.floats(-3, 3), st.floats(-3, 3))
def test_interpolation_is_exact_on_linear_motion_and_keeps_kept_frames(gaps, a, b):
    idx = np.concatenate([[0], np.cumsum(gaps)])
    n_frames = int(idx[-1]) + 1
    base = np.random.default_rng(0).standard_normal((2, 4, 4)).astype(np.float32)
    frames = np.array([base[0] * a + t * base[1] * b for t in range(n_frames)], np.float32)
    rec = interpolate_frames(idx, frames[idx], n_frames)
    np.testing.assert_allclose(rec, frames, atol=1e-4 * (1 + abs(a) + n_frames * abs(b)))
    np.testing.assert_array_equal(rec[idx], frames[idx])


# ------------------------------------------------------------------------------------------- neural field
def test_lora_is_a_no_op_at_init_and_merge_preserves_outputs():
    torch.manual_seed(0)
    field = NeuralField(n_frequencies=8, hidden=16, depth=3)
    x = grid_coordinates(8)
    before = field(x).detach().clone()
    layers = field.add_lora(4)
    assert len(layers) == 2 and all(isinstance(m, LoRALinear) for m in layers)
    torch.testing.assert_close(field(x), before)
    with torch.no_grad():
        for m in layers:
            m.B.normal_()
    changed = field(x).detach().clone()
    assert (changed - before).abs().max() > 1e-3
    field.merge_lora()
    torch.testing.assert_close(field(x), changed, atol=1e-5, rtol=1e-5)


@settings(max_examples=20, deadline=None)
@given(st.floats(-10, 10), st.floats(-10, 10))
def test_fourier_features_are_periodic(x, y):
    field = NeuralField(n_frequencies=8, hidden=8, depth=2, seed=1)
    assert torch.equal(field.features.B, field.features.B.round())  # integer wavenumbers: no seam
    p = torch.tensor([[x, y]], dtype=torch.float64)
    feats = field.features.to(torch.float64)
    shifted = feats(p + torch.tensor([[2 * np.pi, -2 * np.pi]], dtype=torch.float64))
    torch.testing.assert_close(feats(p), shifted, atol=1e-9, rtol=0)


# -------------------------------------------------------------------------------------------- compressor
def _small_stream(n_frames=14, n=16):
    sim = KolmogorovFlow2D(n, re=40.0, seed=0)
    sim.advance(5.0)
    return sim.snapshots(n_frames, 0.5)


def test_byte_accounting_adds_up_and_the_stream_round_trips():
    frames = _small_stream()
    comp = ANTIC(EnstrophySelector(0.9, 4), steps_first=20, steps_next=5, keyframe_every=3, seed=0)
    traj = comp.compress(frames, 0.0, 0.5)
    data = traj.to_bytes()
    arrays = traj._arrays()
    head_len = int.from_bytes(data[6:10], "little")
    assert traj.nbytes == len(data) == 10 + head_len + sum(a.nbytes for a in arrays)
    assert len(traj.keyframes) >= 2  # the keyframe cadence fired
    lora_size = 2 * (4 * 48 + 48 * 4)  # A and B of the two hidden 48x48 layers, rank 4
    keyframe_rows = {int(np.flatnonzero(traj.keyframe_of == k)[0]) for k in range(len(traj.keyframes))}
    assert all(a.size == (0 if j in keyframe_rows else lora_size) for j, a in enumerate(traj.loras))
    assert traj.keyframes[0].size == NeuralField().n_base_parameters()
    assert traj.compression_ratio() == pytest.approx(frames.size * 4 / len(data))
    back = CompressedTrajectory.from_bytes(data)
    np.testing.assert_array_equal(back.decompress(), traj.decompress())
    assert traj.indices[0] == 0 and traj.indices[-1] == len(frames) - 1


def test_continual_and_per_frame_arms_count_equal_steps():
    frames = _small_stream(8)
    idx = uniform_indices(8, 4)
    a = ANTIC(FixedSelector(idx), steps_first=15, steps_next=5, keyframe_every=2)
    b = ANTIC(FixedSelector(idx), steps_first=15, steps_next=5, keyframe_every=2, continual=False)
    ta, tb = a.compress(frames), b.compress(frames)
    assert a.optimizer_steps == b.optimizer_steps == 15 + 5 + 15 + 5
    assert len(tb.keyframes) == len(idx) and tb.nbytes > ta.nbytes


def test_compression_is_equivariant_to_shifting_and_scaling_the_data():
    """Per-frame min-max normalisation: compressing a * u + b decodes to a * decode(u) + b (same kept frames)."""
    frames = _small_stream(8)
    kw = dict(steps_first=10, steps_next=3, keyframe_every=3, seed=1)
    base = ANTIC(EnstrophySelector(0.9, 3), **kw).compress(frames)
    moved = ANTIC(EnstrophySelector(0.9, 3), **kw).compress(2.5 * frames + 7.0)
    np.testing.assert_array_equal(base.indices, moved.indices)
    np.testing.assert_allclose(moved.decompress(), 2.5 * base.decompress() + 7.0, atol=1e-3 * np.abs(frames).max())


def test_compressor_rejects_bad_snapshots():
    comp = ANTIC(steps_first=1, steps_next=1)
    with pytest.raises(ValueError, match="square"):
        comp.observe(0.0, np.zeros((8, 4)))
    with pytest.raises(ValueError, match="NaN"):
        comp.observe(0.0, np.full((8, 8), np.nan))
    comp.observe(0.0, np.ones((8, 8)))
    comp.observe(1.0, np.ones((8, 8)))
    with pytest.raises(ValueError, match="equally spaced"):
        comp.observe(3.0, np.ones((8, 8)))
    with pytest.raises(ValueError, match="differs"):
        comp.observe(2.0, np.ones((16, 16)))
    with pytest.raises(ValueError, match="lora_targets"):
        ANTIC(lora_targets="all")
    with pytest.raises(ValueError, match="no snapshot"):
        ANTIC().finalize()
    with pytest.raises(ValueError, match="non-empty"):
        ANTIC().compress(np.zeros((0, 8, 8)))


# ------------------------------------------------------------------------------------------------ codecs
@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.floats(1e-3, 1.0), st.floats(0.1, 100.0))
def test_codecs_stay_within_their_absolute_bound(seed, rel_bound, scale):
    a = np.random.default_rng(seed).standard_normal((32, 32)).cumsum(0).astype(np.float32) * scale
    bound = rel_bound * float(np.abs(a).max())
    for codec in (ZFPCodec(bound), SZ3Codec(bound)):
        out = codec.decode(codec.encode(a), out=a)
        assert out.shape == a.shape
        assert np.abs(out.astype(np.float64) - a).max() <= bound * (1 + 1e-5)


def test_match_error_hits_the_target_on_the_same_metric():
    frames = _small_stream(6)
    for codec in (SZ3Codec, ZFPCodec):
        bound, rec, nbytes = match_error(codec, frames, 0.05)
        err = relative_l2(rec, frames)
        assert 0.02 < err <= 0.05  # the largest bound under the target, not a much tighter one
        assert nbytes == compress_frames(codec(bound), frames)[1]


def test_codecs_reject_bad_bounds_and_nan():
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="positive"):
            ZFPCodec(bad)
        with pytest.raises(ValueError, match="positive"):
            SZ3Codec(bad)
    with pytest.raises(ValueError, match="NaN"):
        SZ3Codec(0.1).encode(np.array([[np.nan, 1.0]]))
    with pytest.raises(ValueError, match="positive"):
        match_error(SZ3Codec, np.ones((2, 4, 4)), 0.0)


# ------------------------------------------------------------------------------------------------ claims
@pytest.mark.claim
def test_adaptive_selection_beats_uniform_on_solver_trajectories_over_seeds():
    """Ours (C1c's selector) on exact kept frames: lower all-frame interpolation error than uniform at equal count."""
    wins, t = 0, 150  # 30 time units: long enough to hold calm and bursting phases
    for seed in range(3):
        sim = KolmogorovFlow2D(32, re=40.0, seed=seed, dt=0.2 / 8)
        sim.advance(10.0)
        frames = sim.snapshots(t, 0.2)
        kept = list(_kept(InterpolationErrorSelector(0.1, 20), frames))
        if kept[-1] != t - 1:
            kept.append(t - 1)
        u = uniform_indices(t, len(kept))
        ours = relative_l2(interpolate_frames(np.array(kept), frames[kept], t), frames)
        wins += ours < 0.95 * relative_l2(interpolate_frames(u, frames[u], t), frames)
    assert wins == 3
