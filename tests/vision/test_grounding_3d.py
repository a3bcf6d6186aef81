"""TFT + DSG grounding: exact (anti)symmetry of DSG, the symmetric-only model's tie on mirrored scenes, IoU and Acc@k
against hand-worked boxes, the benchmark's labels against a rule-based solver, invariances, TFT's zero-gate start,
one clear error per bad input, and the benchmark's tiny size."""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from icml26.vision.grounding_3d import (
    DecomposedSpectralGeometry,
    FourierRelPos,
    ProceduralReferDataset,
    TextAwareFeatureTuning,
    TFTGrounding,
    acc_at_iou,
    accuracy,
    generate_scene,
    iou3d_aabb,
    parse,
    solve,
)
from icml26.vision.grounding_3d.model import RELATIONS
from icml26.vision.grounding_3d.proposals import DetectorNoise, propose
from icml26.vision.grounding_3d.vocab import FAMILIES, FAMILY_WORDS, PARTNER, Vocabulary

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _batch(data, idx):
    b = data.batch(idx)
    return b["points"], b["boxes"], b["tokens"], b["mask"]


# ------------------------------------------------------------------------------------------- DSG parity
coords = arrays(np.float64, (2, 5, 3), elements=st.floats(-20, 20, allow_nan=False))


@settings(max_examples=40, deadline=None)
@given(coords, st.integers(0, 2**16), st.sampled_from([3, 6]))
def test_dsg_parts_are_exactly_symmetric_and_antisymmetric(centres, seed, in_dim):
    torch.manual_seed(seed)
    dsg = DecomposedSpectralGeometry(in_dim=in_dim, n_freq=16, sigma=2.0, heads=4).double()
    c = torch.tensor(centres)
    sizes = torch.rand(2, 5, 3, dtype=torch.float64) + 0.1 if in_dim == 6 else None
    S, A = dsg(c, sizes)
    assert S.shape == A.shape == (2, 5, 5, 4)
    torch.testing.assert_close(S, S.transpose(1, 2), rtol=0, atol=1e-6)
    torch.testing.assert_close(A, -A.transpose(1, 2), rtol=0, atol=1e-6)


def test_parity_checks_can_fail_on_an_undecomposed_code():
    """Negative control: fixed Fourier features into a biased MLP are neither even nor odd."""
    torch.manual_seed(0)
    (R,) = FourierRelPos(n_freq=16, heads=4).double()(torch.randn(1, 5, 3, dtype=torch.float64))
    assert (R - R.transpose(1, 2)).abs().max() > 1e-3 and (R + R.transpose(1, 2)).abs().max() > 1e-3


def test_dsg_ablations_zero_one_part_and_the_basis_can_be_frozen():
    c = torch.randn(1, 4, 3)
    S, A = DecomposedSpectralGeometry(use_anti=False)(c)
    assert A.abs().max() == 0 and S.abs().max() > 0
    S, A = DecomposedSpectralGeometry(use_sym=False)(c)
    assert S.abs().max() == 0 and A.abs().max() > 0
    frozen = DecomposedSpectralGeometry(learnable=False)
    assert "basis" not in dict(frozen.named_parameters()) and "basis" in dict(frozen.named_buffers())


def test_dsg_is_invariant_to_translating_and_scaling_the_scene():
    torch.manual_seed(0)
    dsg = DecomposedSpectralGeometry().double()
    c = torch.randn(2, 6, 3, dtype=torch.float64)
    S, A = dsg(c)
    S2, A2 = dsg(c * 1000.0 + torch.tensor([5.0, -3.0, 2.0], dtype=torch.float64))
    torch.testing.assert_close(S, S2)
    torch.testing.assert_close(A, A2)


# ------------------------------------------------------------------------------ the mirror probe's tie
@pytest.fixture(scope="module")
def probe():
    return ProceduralReferDataset(6, probe=True, points_per_object=16, seed=3)


def test_mirror_probe_scenes_are_point_symmetric_about_the_anchor(probe):
    for scene in probe.scenes:
        anchor = scene.expressions[0].anchors[0]
        c = scene.boxes[:, :3]
        for i in range(scene.n_objects):
            if i == anchor:
                continue
            mirrored = 2 * c[anchor] - c[i]
            j = int(np.argmin(np.linalg.norm(c - mirrored, axis=1)))
            np.testing.assert_allclose(c[j], mirrored, atol=1e-9)
            np.testing.assert_array_equal(scene.local_points[j], scene.local_points[i])  # an identical copy
        left, right = scene.expressions
        assert left.word == "left" and right.word == "right" and left.target != right.target
        assert np.allclose(c[left.target] + c[right.target], 2 * c[anchor])  # the two answers are mirror images


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_symmetric_only_model_ties_mirrored_candidates_so_it_is_at_chance(probe, seed):
    """Any symmetric-only DSG (random weights, TFT on) gives the left and right candidates the same score; the full
    DSG does not. With the two answers of each minimal pair tied, no training can lift it above 50% on the probe."""
    idx = np.arange(len(probe))
    points, boxes, tokens, mask = _batch(probe, idx)
    targets = probe.batch(idx)["target"]
    partners = targets[probe.pair[idx]]
    for relation, tied in (("dsg_sym", True), ("dsg", False)):
        torch.manual_seed(seed)
        model = TFTGrounding(relation).double().eval()
        with torch.no_grad():
            logits = model(points.double(), boxes.double(), tokens, mask)
        gap = (logits[idx, targets] - logits[idx, partners]).abs()
        if tied:  # boxes are stored in float32, so the reflection is exact only to float32 rounding
            assert gap.max() < 1e-7
        else:
            assert gap.min() > 1e-3


# ------------------------------------------------------------------------------------- IoU and Acc@k
def _cube(x, y=0.0, z=0.0, s=1.0):
    return [x, y, z, s, s, s]


def test_iou_against_hand_worked_boxes():
    cases = [
        (_cube(0), _cube(0), 1.0),  # identical
        (_cube(0), _cube(0.5), 1 / 3),  # half-overlap along x: 0.5 / (1 + 1 - 0.5)
        (_cube(0, s=1.0), _cube(0, s=2.0), 1 / 8),  # nested: 1 / 8
        (_cube(0), _cube(1.0), 0.0),  # touching faces
        (_cube(0), _cube(3.0, 3.0), 0.0),  # disjoint
        ([0, 0, 0, 2, 1, 1], [0, 0, 0, 1, 2, 1], 1 / 3),  # crossed slabs: 1 / (2 + 2 - 1)
        (_cube(0), _cube(0.5, 0.5, 0.5), 0.125 / 1.875),  # corner overlap 0.5^3
    ]
    a = np.array([c[0] for c in cases], float)
    b = np.array([c[1] for c in cases], float)
    want = np.array([c[2] for c in cases])
    np.testing.assert_allclose(iou3d_aabb(a, b), want, atol=1e-12)
    np.testing.assert_allclose(iou3d_aabb(b, a), want, atol=1e-12)  # symmetric
    np.testing.assert_allclose(iou3d_aabb(torch.tensor(a), torch.tensor(b)).numpy(), want, atol=1e-12)
    acc = acc_at_iou(a, b)
    assert acc == {"acc@0.25": pytest.approx(3 / 7), "acc@0.5": pytest.approx(1 / 7)}
    assert acc_at_iou(a, b, thr=1 / 3) == {"acc@0.333333": pytest.approx(3 / 7)}  # IoU >= k counts


def test_accuracy_never_picks_padding():
    logits = np.array([[0.1, 5.0, 9.0], [2.0, 1.0, 0.0]])
    mask = np.array([[True, True, False], [True, True, True]])
    assert accuracy(logits, [1, 0], mask) == 1.0
    assert accuracy(logits, [1, 0]) == 0.5


# ------------------------------------------------------------------------------- the benchmark's labels
@pytest.mark.parametrize("family", FAMILIES)
def test_every_label_is_what_the_rule_based_solver_finds(family):
    rng = np.random.default_rng(FAMILIES.index(family))
    for _ in range(40):
        scene = generate_scene(rng, family, points_per_object=8)
        for k, e in enumerate(scene.expressions):
            sol = solve(scene.classes, scene.colours, scene.boxes, e.text)
            assert sol.unambiguous and sol.referent == e.target, (e.text, sol)
            assert len(sol.candidates) >= 3 and e.n_distractors == len(sol.candidates) - 1  # >= 2 distractors
            for a, name in zip(e.anchors, parse(e.text).anchors, strict=True):
                assert scene.classes.count(name) == 1 and scene.classes[a] == name
            if e.pair >= 0:
                partner = scene.expressions[e.pair]
                assert partner.word == PARTNER[e.word] and partner.target != e.target and partner.pair == k


def test_the_solver_rejects_what_the_generator_must_avoid():
    """Negative controls: a second object at the target's place, or a duplicated anchor, makes the answer ambiguous."""
    rng = np.random.default_rng(5)
    scene = generate_scene(rng, "view", points_per_object=8)
    e = scene.expressions[0]
    dup = np.vstack([scene.boxes, scene.boxes[e.target] + [0.01, 0, 0, 0, 0, 0]])
    assert not solve([*scene.classes, scene.classes[e.target]], [*scene.colours, "red"], dup, e.text).unambiguous
    anchor = e.anchors[0]
    dup = np.vstack([scene.boxes, scene.boxes[anchor]])
    assert solve([*scene.classes, scene.classes[anchor]], [*scene.colours, "red"], dup, e.text).referent is None


def test_targets_are_not_in_a_fixed_slot_and_families_are_balanced():
    data = ProceduralReferDataset(300, points_per_object=4, seed=11)
    slots = Counter(data.batch(np.arange(len(data)))["target"].tolist())
    assert len(slots) >= 8 and max(slots.values()) < 0.2 * len(data)
    share = Counter(data.family)
    assert set(share) == set(FAMILIES)
    assert all(0.10 < n / len(data) < 0.25 for n in share.values()), share
    for family in ("view", "distance", "vertical", "size"):
        words = Counter(w for w, f in zip(data.word, data.family, strict=True) if f == family)
        counts = [words[w] for w in FAMILY_WORDS[family]]
        assert min(counts) > 0.5 * max(counts), (family, words)


def test_category_alone_scores_at_most_a_third():
    """Every expression has >= 2 same-class distractors, so picking a random object of the named class is <= 1/3."""
    data = ProceduralReferDataset(150, points_per_object=4, seed=2)
    assert data.n_distractors.min() >= 2
    assert np.mean(1 / (data.n_distractors + 1)) <= 1 / 3


def test_noisy_proposals_label_the_best_overlap_and_crop_the_points():
    rng = np.random.default_rng(0)
    scene = generate_scene(rng, "distance", points_per_object=32)
    boxes, points = propose(scene.boxes, scene.world_points(), rng, DetectorNoise(p_miss=0.0))
    assert np.all(np.abs(points[..., :3]) <= boxes[:, None, 3:] / 2 + 1e-9)  # every point inside its proposal
    data = ProceduralReferDataset(40, proposals="noisy", points_per_object=16, seed=4)
    b = data.batch(np.arange(len(data)))
    chosen = b["boxes"][torch.arange(len(data)), b["target"]].double()
    np.testing.assert_allclose(
        iou3d_aabb(chosen, b["gt_box"].double()).numpy(), data.max_iou, atol=1e-5
    )  # float32 boxes
    # a detector like ScanRefer's: most targets have a proposal at IoU 0.25, fewer at 0.5 (0.89 and 0.76 on 150
    # scenes of seeds 4 and 5), and some have none (misses, merges): the oracle's ceiling is below 1
    assert 0.8 < np.mean(data.max_iou >= 0.25) < 0.98 and 0.6 < np.mean(data.max_iou >= 0.5) < 0.9


# --------------------------------------------------------------------------------------- model behaviour
@pytest.fixture(scope="module")
def small():
    return ProceduralReferDataset(8, points_per_object=16, seed=7)


@pytest.mark.parametrize("relation", RELATIONS)
def test_every_arm_is_invariant_to_translating_the_room(small, relation):
    points, boxes, tokens, mask = _batch(small, np.arange(6))
    torch.manual_seed(0)
    model = TFTGrounding(relation).double().eval()
    shifted = boxes.double().clone()
    shifted[..., :3] += torch.tensor([3.0, -7.0, 0.5], dtype=torch.float64)
    with torch.no_grad():
        a = model(points.double(), boxes.double(), tokens, mask)
        b = model(points.double(), shifted, tokens, mask)
    torch.testing.assert_close(a, b, rtol=0, atol=1e-9)
    assert torch.isinf(a[~mask]).all() and torch.isfinite(a[mask]).all()


def test_tft_starts_as_late_fusion_and_its_gates_learn(small):
    points, boxes, tokens, mask = _batch(small, np.arange(6))
    torch.manual_seed(0)
    model = TFTGrounding("dsg", tft=True).eval()
    with torch.no_grad():
        early = model(points, boxes, tokens, mask)
        adapters, model.objects.tft = model.objects.tft, None
        late = model(points, boxes, tokens, mask)
    torch.testing.assert_close(early, late, rtol=0, atol=0)
    model.objects.tft = adapters
    model.train()
    torch.nn.functional.cross_entropy(
        model(points, boxes, tokens, mask), small.batch(np.arange(6))["target"]
    ).backward()
    assert all(a.gate.grad is not None and a.gate.grad.abs().sum() > 0 for a in adapters)


def test_tft_xattn_mode_runs_and_is_gated():
    tft = TextAwareFeatureTuning(8, 16, mode="xattn", heads=2)
    h = torch.randn(2, 3, 5, 8)
    out = tft(h, torch.randn(2, 16), torch.randn(2, 4, 16), torch.tensor([[False] * 4, [False, False, True, True]]))
    torch.testing.assert_close(out, h)  # gate at 0
    with pytest.raises(ValueError, match="word features"):
        tft(h, torch.randn(2, 16))


def test_training_lowers_the_loss_and_evaluation_reports_the_chosen_boxes(small):
    from icml26.vision.grounding_3d.training import TrainConfig, evaluate, fit

    torch.manual_seed(0)
    model = TFTGrounding("dsg")
    losses = fit(model, small, TrainConfig(steps=40, batch=8, lr=3e-3))
    assert np.mean(losses[-5:]) < np.mean(losses[:5])
    ev = evaluate(model, small)
    assert ev.correct.shape == (len(small),) and np.all((ev.iou == 1.0) == ev.correct)  # exact boxes: IoU 1 iff right


# ----------------------------------------------------------------------------------- one clear error each
def test_named_bad_inputs_get_one_clear_error_each(small):
    points, boxes, tokens, mask = _batch(small, np.arange(2))
    model = TFTGrounding("dsg")
    with pytest.raises(ValueError, match="empty scene"):  # a scene without objects
        model(points, boxes, tokens, torch.zeros_like(mask))
    with pytest.raises(ValueError, match="empty scene"):
        model(points[:, :0], boxes[:, :0], tokens)
    with pytest.raises(ValueError, match=r"unknown word\(s\) \['leftish'\]"):  # an unknown relation word
        model.tokenize("facing north the chair leftish of the table")
    with pytest.raises(ValueError, match="unknown view relation"):
        parse("facing north the chair closest of the table")
    with pytest.raises(ValueError, match="unknown viewpoint"):
        parse("facing table the chair left of the table")
    bad = boxes.clone()
    bad[0, 0, 3] = 0.0  # a degenerate box
    with pytest.raises(ValueError, match="degenerate"):
        model(points, bad, tokens, mask)
    with pytest.raises(ValueError, match="degenerate"):
        iou3d_aabb(np.array([0, 0, 0, 1, -1, 1.0]), np.array([0, 0, 0, 1, 1, 1.0]))
    nan = points.clone()
    nan[0, 0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        model(nan, boxes, tokens, mask)
    with pytest.raises(ValueError, match=r"boxes must be \[B, N, 6\]"):
        model(points, boxes[..., :3], tokens, mask)
    with pytest.raises(ValueError, match="points must be"):
        model(points[..., :3], boxes, tokens, mask)
    with pytest.raises(ValueError, match="tokens must be"):
        model(points, boxes, tokens.float(), mask)
    with pytest.raises(ValueError, match="unknown relation encoder"):
        TFTGrounding("polar")
    with pytest.raises(ValueError, match="unknown relation families"):
        ProceduralReferDataset(2, families=("left",))
    with pytest.raises(ValueError, match="proposals"):
        ProceduralReferDataset(2, proposals="yolo")
    with pytest.raises(ValueError, match="n_scenes"):
        ProceduralReferDataset(0)
    with pytest.raises(ValueError, match="empty utterance"):
        parse("   ")
    with pytest.raises(ValueError, match="1 to 10"):
        Vocabulary().encode("the " * 11 + "chair")


def test_parse_reads_back_every_template():
    from icml26.vision.grounding_3d.vocab import Parsed, utterance

    for p in (
        Parsed("view", "behind", "chair", ("table",), "west"),
        Parsed("distance", "farthest", "box", ("sofa",)),
        Parsed("between", "between", "lamp", ("table", "shelf")),
        Parsed("vertical", "under", "bin", ("table",)),
        Parsed("size", "smallest", "cabinet"),
        Parsed("colour", "grey", "chair"),
    ):
        assert parse(utterance(p)) == p


# ------------------------------------------------------------------------------------------- benchmark
def test_benchmark_rows_tiny():
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_grounding_3d.py"
    spec = importlib.util.spec_from_file_location("bench_grounding_3d", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.rows("tiny")
    assert rows and all(r.ours > 0 and r.anchor > 0 for r in rows)
    with pytest.raises(ValueError, match="size"):
        module.rows("huge")
