"""TriForces: the periodic graph against ASE, invariances and equivariance, F = -dE/dr by finite differences, the
streams' blindness (composition to positions, structure to elements), count-weighted attention against repeated
tokens, SIGReg, SSL and fine-tuning losses that decrease, least-squares references, retrieval against brute force,
the ASE calculator, bad inputs, and the benchmark's tiny size."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.science.triforces import (
    AtomsBatch,
    CompositionStream,
    EnergyForceModel,
    PaiNN,
    SchNet,
    StructureError,
    StructureStream,
    TriForces,
    TriForcesPretrainer,
    build_encoder,
    count_weighted_attention,
    element_references,
    embed,
    errors,
    from_ase,
    make_structure,
    radius_graph,
    retrieval_metrics,
    sigreg,
)
from icml26.science.triforces.data import TARGET_METALS, random_alloy, target_alloys, unlabelled_pool
from icml26.science.triforces.streams import MASK_TOKEN, real_spherical_harmonics

ase = pytest.importorskip("ase")
from ase.neighborlist import neighbor_list  # noqa: E402

CUTOFF = 4.0
TINY = {"hidden": 16, "n_interactions": 2, "comp_dim": 16, "struct_dim": 16, "out_dim": 16, "n_radial": 4}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _alloy(seed: int, **kw):
    return random_alloy(np.random.default_rng(seed), TARGET_METALS, (1, 3), (0.05, 0.15), 0.04, **kw)


def _encoder(streams: bool = True, seed: int = 0) -> TriForces:
    return build_encoder(streams, cutoff=CUTOFF, seed=seed, **TINY).double()


def _rotation(seed: int) -> np.ndarray:
    q, r = np.linalg.qr(np.random.default_rng(seed).standard_normal((3, 3)))
    q = q * np.sign(np.diag(r))
    return q if np.linalg.det(q) > 0 else -q


# ------------------------------------------------------------------------------------------------------ graph
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), cutoff=st.floats(2.0, 6.5), skew=st.floats(-0.4, 0.4))
def test_periodic_radius_graph_matches_ase_neighbor_list(seed, cutoff, skew):
    atoms = _alloy(seed)
    cell = atoms.cell.array.copy()
    cell[1] += skew * cell[0]  # a skewed cell needs more images along some directions
    atoms.set_cell(cell, scale_atoms=False)
    i, j, s = radius_graph(atoms.positions, cutoff, atoms.cell.array, atoms.pbc)
    i2, j2, s2 = neighbor_list("ijS", atoms, cutoff)
    ours = sorted(zip(i.tolist(), j.tolist(), map(tuple, s.tolist()), strict=True))
    theirs = sorted(zip(i2.tolist(), j2.tolist(), map(tuple, s2.tolist()), strict=True))
    assert ours == theirs


def test_radius_graph_mixed_pbc_and_free_cluster_match_ase():
    atoms = _alloy(3)
    for pbc in ((True, True, False), (False, False, False)):
        atoms.pbc = pbc
        i, j, s = radius_graph(atoms.positions, 5.0, atoms.cell.array, atoms.pbc)
        i2, j2, s2 = neighbor_list("ijS", atoms, 5.0)
        assert sorted(zip(i.tolist(), j.tolist(), map(tuple, s.tolist()), strict=True)) == sorted(
            zip(i2.tolist(), j2.tolist(), map(tuple, s2.tolist()), strict=True)
        )


# ------------------------------------------------------------------------------- invariance and conservation
def _energy_forces(model, atoms):
    batch = AtomsBatch.collate([from_ase(atoms, CUTOFF)], dtype=torch.float64)
    e, f = model(batch)
    return float(e[0].detach()), f.detach().numpy()


@pytest.fixture(scope="module")
def fitted():
    data = list(target_alloys(12, 5, CUTOFF))
    model = EnergyForceModel(build_encoder(True, cutoff=CUTOFF, seed=0, **TINY)).fit(data, steps=4, batch_size=4)
    return model.double(), data


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_energy_invariant_and_forces_equivariant_under_rotation_and_translation(fitted, seed):
    model, _ = fitted
    atoms = _alloy(seed)
    e, f = _energy_forces(model, atoms)
    moved = atoms.copy()
    rot = _rotation(seed)
    moved.set_cell(atoms.cell.array @ rot.T, scale_atoms=False)
    moved.positions = atoms.positions @ rot.T + np.array([0.3, -1.2, 2.5])
    e2, f2 = _energy_forces(model, moved)
    assert e2 == pytest.approx(e, abs=1e-9)
    np.testing.assert_allclose(f2, f @ rot.T, atol=1e-9)
    perm = np.random.default_rng(seed).permutation(len(atoms))
    e3, f3 = _energy_forces(model, atoms[perm])
    assert e3 == pytest.approx(e, abs=1e-9)
    np.testing.assert_allclose(f3, f[perm], atol=1e-9)


def test_forces_are_minus_the_energy_gradient_by_finite_differences(fitted):
    model, _ = fitted
    atoms = _alloy(7)
    _, f = _energy_forces(model, atoms)
    h = 1e-5
    for atom, axis in [(0, 0), (3, 1), (10, 2), (len(atoms) - 1, 0)]:
        plus, minus = atoms.copy(), atoms.copy()
        plus.positions[atom, axis] += h
        minus.positions[atom, axis] -= h
        fd = -(_energy_forces(model, plus)[0] - _energy_forces(model, minus)[0]) / (2 * h)
        assert fd == pytest.approx(f[atom, axis], rel=1e-5, abs=1e-7)


def test_periodic_images_are_seen_a_doubled_supercell_has_twice_the_energy():
    """Interaction and structure streams are extensive; the composition stream reads raw counts (log c_t in the
    logits, against CLS's count of 1), so the paper's stream is not size-intensive: a doubled cell differs."""
    torch.manual_seed(0)
    backbone = SchNet(hidden=16, n_interactions=2, cutoff=CUTOFF)
    local = TriForces(backbone, 16, struct_dim=16, n_radial=4, composition=False, out_dim=8).double()
    model = EnergyForceModel(local).double()
    model.refs.zero_()
    atoms = _alloy(11)
    e1, _ = _energy_forces(model, atoms)
    e2, _ = _energy_forces(model, atoms.repeat((2, 1, 1)))
    assert e2 == pytest.approx(2 * e1, rel=1e-9)
    full = EnergyForceModel(_encoder()).double()
    full.refs.zero_()
    assert _energy_forces(full, atoms.repeat((2, 1, 1)))[0] != pytest.approx(2 * _energy_forces(full, atoms)[0])


# ---------------------------------------------------------------------------------------------------- streams
def test_composition_stream_ignores_positions_and_atom_order():
    torch.manual_seed(0)
    stream = CompositionStream(16, heads=4, blocks=2).double()
    z = torch.tensor([79, 78, 79, 46, 79, 78, 29])
    batch = torch.tensor([0, 0, 0, 0, 1, 1, 1])
    atoms_out, cls = stream(z, batch, 2)
    perm = torch.tensor([6, 4, 5, 2, 0, 3, 1])
    atoms_p, cls_p = stream(z[perm], batch[perm], 2)
    torch.testing.assert_close(cls_p, cls)
    torch.testing.assert_close(atoms_p, atoms_out[perm])
    # same element, same structure -> the same token output; a structure's CLS sees only its own counts
    torch.testing.assert_close(atoms_out[0], atoms_out[2])
    _, cls_alone = stream(z[4:], torch.zeros(3, dtype=torch.long), 1)
    torch.testing.assert_close(cls_alone[0], cls[1])


def test_count_weighted_attention_equals_plain_attention_with_unit_counts_and_repeated_tokens():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 4, 8, generator=g, dtype=torch.float64) for _ in range(3))
    pad = torch.zeros(2, 4, dtype=torch.bool)
    ones = torch.ones(2, 4, dtype=torch.long)
    plain = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(count_weighted_attention(q, k, v, ones, pad), plain)
    # a count of c is exactly the token repeated c times
    counts = torch.tensor([[1, 3, 2, 1], [2, 1, 1, 4]])
    out = count_weighted_attention(q, k, v, counts, pad)
    for b in range(2):
        rep = torch.repeat_interleave(torch.arange(4), counts[b])
        ref = torch.nn.functional.scaled_dot_product_attention(q[b : b + 1], k[b : b + 1, :, rep], v[b : b + 1, :, rep])
        torch.testing.assert_close(out[b : b + 1], ref)
    # padded keys get no weight
    padded = torch.tensor([[False, False, False, True], [False, True, False, False]])
    out = count_weighted_attention(q, k, v, ones, padded)
    ref0 = torch.nn.functional.scaled_dot_product_attention(q[:1], k[:1, :, :3], v[:1, :, :3])
    torch.testing.assert_close(out[:1], ref0)


def test_real_spherical_harmonics_are_orthonormal():
    g = torch.Generator().manual_seed(0)
    u = torch.randn(400_000, 3, generator=g, dtype=torch.float64)
    y = real_spherical_harmonics(u / u.norm(dim=1, keepdim=True), 2)
    gram = 4 * np.pi * (y.T @ y / len(u))
    torch.testing.assert_close(gram, torch.eye(9, dtype=torch.float64), atol=0.02, rtol=0)


def test_structure_stream_is_blind_to_elements_and_rotation_invariant():
    torch.manual_seed(0)
    stream = StructureStream(16, l_max=2, n_radial=4, cutoff=CUTOFF).double()
    atoms = _alloy(4)
    s = from_ase(atoms, CUTOFF)
    batch = AtomsBatch.collate([s], dtype=torch.float64)
    h = stream(batch.edge_vectors(), batch.edges, len(batch.z))
    relabelled = atoms.copy()
    relabelled.numbers = np.random.default_rng(0).choice([13, 29, 47, 28], len(atoms))
    b2 = AtomsBatch.collate([from_ase(relabelled, CUTOFF)], dtype=torch.float64)
    torch.testing.assert_close(stream(b2.edge_vectors(), b2.edges, len(b2.z)), h)
    rot = torch.as_tensor(_rotation(1))
    torch.testing.assert_close(stream(batch.edge_vectors() @ rot.T, batch.edges, len(batch.z)), h)
    # the whole encoder's structure stream ignores z too; its composition stream ignores positions
    enc = _encoder()
    parts = enc.streams(batch)
    parts2 = enc.streams(b2)
    torch.testing.assert_close(parts[2], parts2[2])
    moved = batch.replace(pos=batch.pos + 0.05 * torch.randn_like(batch.pos))
    torch.testing.assert_close(enc.streams(moved)[1], parts[1])


def test_a_masked_atom_hides_its_element_from_every_stream():
    enc = _encoder()
    atoms = _alloy(5)
    s = from_ase(atoms, CUTOFF)
    b = AtomsBatch.collate([s], dtype=torch.float64)
    masked = b.replace(z=b.z.clone().index_fill_(0, torch.tensor([0]), MASK_TOKEN))
    other = b.z.clone()
    other[0] = 78 if int(other[0]) != 78 else 46  # a different true element under the same mask
    masked_other = b.replace(z=other.index_fill_(0, torch.tensor([0]), MASK_TOKEN))
    torch.testing.assert_close(enc(masked).node, enc(masked_other).node)
    assert not torch.allclose(enc(b).node, enc(masked).node)


def test_fusion_add_and_backbone_only_shapes():
    b = AtomsBatch.collate([from_ase(_alloy(1), CUTOFF), from_ase(_alloy(2), CUTOFF)], dtype=torch.float64)
    add = build_encoder(True, cutoff=CUTOFF, fusion="add", **TINY).double()
    out = add(b)
    assert out.node.shape == (len(b.z), TINY["hidden"]) and out.graph.shape == (2, TINY["out_dim"])
    alone = _encoder(streams=False)
    assert alone(b).node.shape == (len(b.z), TINY["hidden"])
    assert _encoder()(b).node.shape == (len(b.z), TINY["hidden"] + TINY["comp_dim"] + TINY["struct_dim"])
    with pytest.raises(ValueError, match="fusion"):
        build_encoder(True, fusion="gated", **TINY)


# -------------------------------------------------------------------------------------------------------- SSL
def test_sigreg_matches_its_gaussian_expectation_and_flags_collapse():
    """For iid N(0, 1) projections E|phi_hat(t) - phi(t)|^2 = (1 - phi(t)^2) / B exactly, so E[SIGReg] is
    2 * integral_0^3 (1 - exp(-t^2)) exp(-t^2 / 2) dt (same trapezoid rule); collapse and shifts score far higher."""
    g = torch.Generator().manual_seed(0)
    t = torch.linspace(0, 3, 17, dtype=torch.float64)
    expected = float(2 * torch.trapezoid((1 - torch.exp(-(t**2))) * torch.exp(-0.5 * t**2), t))
    gauss = [float(sigreg(torch.randn(256, 16, generator=g, dtype=torch.float64), 256, generator=g)) for _ in range(20)]
    assert np.mean(gauss) == pytest.approx(expected, rel=0.1)
    collapsed = torch.ones(256, 16) + 0.01 * torch.randn(256, 16, generator=g)
    shifted = torch.randn(256, 16, generator=g) + 2.0
    s_c, s_s = float(sigreg(collapsed, 256, generator=g)), float(sigreg(shifted, 256, generator=g))
    assert 5 * expected < s_s < s_c
    with pytest.raises(ValueError, match="batch"):
        sigreg(torch.randn(1, 4))


def test_ssl_losses_decrease_on_the_unlabelled_pool():
    pool = list(unlabelled_pool(48, 0, CUTOFF))
    trainer = TriForcesPretrainer(build_encoder(True, cutoff=CUTOFF, seed=0, **TINY), n_projections=128)
    trainer.fit(pool, steps=40, batch_size=8, lr=3e-3, seed=0)
    curve = trainer.loss_curve_
    for key in ("denoise", "element", "total"):
        first = np.mean([row[key] for row in curve[:8]])
        last = np.mean([row[key] for row in curve[-8:]])
        assert last < 0.9 * first, key
    assert all(s.energy is None for s in pool)  # pretraining never had labels to read


def test_fine_tuning_decreases_the_loss_and_beats_the_reference_only_model():
    data = list(target_alloys(60, 1, CUTOFF))
    train, test = data[:40], data[40:]
    model = EnergyForceModel(build_encoder(False, cutoff=CUTOFF, seed=0, **TINY))
    model.fit(train, steps=100, batch_size=8, lr=5e-3)
    assert np.mean(model.loss_curve_[-20:]) < 0.7 * np.mean(model.loss_curve_[:10])
    refs = element_references(train)
    ref_only = np.mean(
        [abs(s.energy - sum(refs[int(z)] for z in s.z)) / s.n_atoms for s in test]  # meV/atom below
    )
    err = errors(model, test)
    assert err["energy_mae"] < 1000 * ref_only
    rms_force = 1000 * np.mean([np.abs(s.forces.numpy()).mean() for s in test])
    assert err["force_mae"] < 0.8 * rms_force  # predicting zero forces scores rms_force


def test_element_references_recover_exact_per_element_energies():
    rng = np.random.default_rng(0)
    truth = {79: -3.1, 78: -5.6, 46: -4.2}
    structures = []
    for _ in range(10):
        z = rng.choice(list(truth), size=int(rng.integers(3, 9)))
        pos = np.stack([np.arange(len(z)) * 3.0, np.zeros(len(z)), np.zeros(len(z))], 1)
        structures.append(make_structure(z, pos, energy=sum(truth[int(e)] for e in z), forces=np.zeros((len(z), 3))))
    refs = element_references(structures)
    for e, v in truth.items():
        assert refs[e] == pytest.approx(v, abs=1e-6)


# -------------------------------------------------------------------------------------------------- retrieval
def test_retrieval_metrics_against_brute_force_ranks():
    rng = np.random.default_rng(0)
    db = rng.standard_normal((20, 5))
    q = db[[3, 7, 11]] + np.array([[0.0], [0.05], [5.0]]) * rng.standard_normal((3, 5))
    m = retrieval_metrics(db, q, [3, 7, 11], ks=(1, 5))
    cos = (q / np.linalg.norm(q, axis=1, keepdims=True)) @ (db / np.linalg.norm(db, axis=1, keepdims=True)).T
    ranks = [1 + int((cos[r] > cos[r, t]).sum()) for r, t in enumerate([3, 7, 11])]
    assert m["mrr"] == pytest.approx(np.mean([1 / r for r in ranks]))
    assert m["recall@1"] == pytest.approx(np.mean([r == 1 for r in ranks]))
    assert ranks[0] == 1
    with pytest.raises(ValueError, match="NaN"):
        retrieval_metrics(db, np.full((1, 5), np.nan), [0])


def test_embeddings_are_invariant_to_rotation_and_permutation():
    enc = build_encoder(True, cutoff=CUTOFF, seed=0, **TINY)
    atoms = _alloy(9)
    rot = _rotation(2)
    turned = atoms.copy()
    turned.set_cell(atoms.cell.array @ rot.T, scale_atoms=False)
    turned.positions = atoms.positions @ rot.T
    perm = np.random.default_rng(0).permutation(len(atoms))
    structures = [from_ase(a, CUTOFF) for a in (atoms, turned, atoms[perm])]
    for features, dim in (("graph", TINY["out_dim"]), ("pooled", enc.dim)):
        e = embed(enc, structures, features=features)
        assert e.shape == (3, dim)
        np.testing.assert_allclose(e[1], e[0], atol=1e-4)
        np.testing.assert_allclose(e[2], e[0], atol=1e-4)
    with pytest.raises(ValueError, match="features"):
        embed(enc, structures, features="node")
    with pytest.raises(ValueError, match="at least one"):
        embed(enc, [])


# ------------------------------------------------------------------------------------------------------ PaiNN
@pytest.mark.parametrize("seed", [0, 1])
def test_painn_backbone_in_triforces_is_invariant_equivariant_and_conservative(seed):
    """The framework is model-agnostic: the same streams around PaiNN (vector features inside, scalars out)."""
    torch.manual_seed(seed)
    enc = TriForces(PaiNN(16, 2, 8, CUTOFF), 16, comp_dim=16, struct_dim=16, n_radial=4, out_dim=8)
    model = EnergyForceModel(enc).double()
    model.refs.zero_()
    atoms = _alloy(seed + 20)
    e, f = _energy_forces(model, atoms)
    rot = _rotation(seed + 5)
    turned = atoms.copy()
    turned.set_cell(atoms.cell.array @ rot.T, scale_atoms=False)
    turned.positions = atoms.positions @ rot.T + 1.7
    e2, f2 = _energy_forces(model, turned)
    assert e2 == pytest.approx(e, abs=1e-9)
    np.testing.assert_allclose(f2, f @ rot.T, atol=1e-9)
    h = 1e-5
    plus, minus = atoms.copy(), atoms.copy()
    plus.positions[2, 1] += h
    minus.positions[2, 1] -= h
    fd = -(_energy_forces(model, plus)[0] - _energy_forces(model, minus)[0]) / (2 * h)
    assert fd == pytest.approx(f[2, 1], rel=1e-5, abs=1e-7)


# ------------------------------------------------------------------------------------------------- calculator
def test_ase_calculator_matches_the_model_and_drives_dynamics(fitted):
    from ase.md.verlet import VelocityVerlet

    from icml26.science.triforces import TriForcesCalculator

    model, _ = fitted
    atoms = _alloy(8)
    e, f = _energy_forces(model, atoms)
    atoms.calc = TriForcesCalculator(model)
    assert atoms.get_potential_energy() == pytest.approx(e)
    np.testing.assert_allclose(atoms.get_forces(), f)
    VelocityVerlet(atoms, timestep=1.0).run(3)
    assert np.isfinite(atoms.get_potential_energy())


# ------------------------------------------------------------------------------------------------- bad inputs
def test_bad_inputs_raise_one_clear_error_each(fitted):
    from ase import Atoms

    from icml26.science.triforces import TriForcesCalculator

    model, _ = fitted
    with pytest.raises(StructureError, match="empty structure"):
        make_structure([], np.zeros((0, 3)))
    with pytest.raises(StructureError, match="empty list"):
        AtomsBatch.from_ase([], CUTOFF)
    with pytest.raises(StructureError, match="unknown element"):
        make_structure([79, 200], [[0, 0, 0], [2.5, 0, 0]])
    with pytest.raises(StructureError, match="unknown element"):
        make_structure([0, 79], [[0, 0, 0], [2.5, 0, 0]])
    with pytest.raises(StructureError, match="NaN"):
        make_structure([79, 79], [[0, 0, 0], [np.nan, 0, 0]])
    with pytest.raises(StructureError, match="closer than the floor"):
        make_structure([79, 79], [[0, 0, 0], [0.2, 0, 0]])
    with pytest.raises(StructureError, match="shape"):
        make_structure([79, 79], [[0, 0, 0]])
    with pytest.raises(StructureError, match=r"structure 1.*closer"):
        AtomsBatch.from_ase([Atoms("Au2", [[0, 0, 0], [3, 0, 0]]), Atoms("Au2", [[0, 0, 0], [0.1, 0, 0]])], CUTOFF)
    with pytest.raises(StructureError, match="no reference energy"):
        model.predict([make_structure([26, 79], [[0, 0, 0], [2.5, 0, 0]], cutoff=CUTOFF)])
    fe = Atoms("FeAu", [[0, 0, 0], [2.5, 0, 0]])
    fe.calc = TriForcesCalculator(model)
    with pytest.raises(StructureError, match="no reference energy"):
        fe.get_potential_energy()
    with pytest.raises(ValueError, match="labelled"):
        EnergyForceModel(_encoder()).fit(list(unlabelled_pool(4, 0, CUTOFF)), steps=1)
    with pytest.raises(ValueError, match="noise"):
        TriForcesPretrainer(_encoder(), noise=(0.2, 0.1))


# ------------------------------------------------------------------------------------------------------- data
def test_generated_alloys_are_labelled_target_cells_and_an_unlabelled_pool():
    data = target_alloys(6, 0, CUTOFF)
    assert target_alloys(6, 0, CUTOFF) is data  # cached per process
    for s in data:
        assert 27 <= s.n_atoms <= 32 and s.energy is not None and s.forces.shape == (s.n_atoms, 3)
        assert set(s.z.tolist()) <= {79, 78, 46}
    pool = unlabelled_pool(20, 0, CUTOFF)
    assert all(s.energy is None for s in pool)
    assert len({int(z) for s in pool for z in s.z}) > 3


def test_qm9_molecules_load_without_importing_qm9pack():
    if importlib.util.find_spec("qm9pack") is None:
        pytest.skip("qm9pack not installed")
    from icml26.science.triforces.data import qm9_gap, qm9_molecules

    mols = qm9_molecules(3, CUTOFF)
    assert mols[0].n_atoms == 5 and set(mols[0].z.tolist()) == {6, 1} and not any(mols[0].pbc)  # methane first
    assert mols[0].energy == pytest.approx(-40.47893 * 27.211386245988)
    d_ch = np.linalg.norm(mols[0].pos[1:] - mols[0].pos[0], axis=1)
    np.testing.assert_allclose(d_ch, 1.0919, atol=2e-3)  # C-H bond length of methane (B3LYP)
    gap = qm9_gap(3)
    assert gap.shape == (3,) and np.all((gap > 5) & (gap < 20))  # eV


def test_xtb_labels_are_gfn2_energies_with_consistent_forces():
    if importlib.util.find_spec("tblite") is None or importlib.util.find_spec("qm9pack") is None:
        pytest.skip("tblite or qm9pack not installed")
    from icml26.science.triforces.data import qm9_molecules, xtb_labels

    water = next(m for m in qm9_molecules(3, CUTOFF) if m.n_atoms == 3)  # QM9 molecule 3 is water
    (labelled,) = xtb_labels([water])
    assert labelled.energy < -100 and labelled.forces.shape == (3, 3)  # GFN2 total energy of water, about -138 eV
    h = 1e-4
    plus, minus = water.pos.clone(), water.pos.clone()
    plus[0, 2] += h
    minus[0, 2] -= h
    e_plus, e_minus = (xtb_labels([make_structure(water.z, p)])[0].energy for p in (plus, minus))
    assert -(e_plus - e_minus) / (2 * h) == pytest.approx(float(labelled.forces[0, 2]), abs=1e-4)
    with pytest.raises(ValueError, match="molecules"):
        xtb_labels([from_ase(_alloy(0), CUTOFF)])


# -------------------------------------------------------------------------------------------------- benchmark
def test_benchmark_tiny_size_runs():
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_triforces.py"
    spec = importlib.util.spec_from_file_location("bench_triforces", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.rows("tiny")
    assert rows and all(r.ours > 0 and r.anchor > 0 for r in rows)
