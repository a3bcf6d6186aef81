"""Reproduction of the TFT + DSG claims on a procedural Sr3D-like benchmark (ScanRefer, Nr3D and Sr3D are offline).

One cell = one seed: training scenes, test scenes (ground-truth objects, and the same scenes seen through the
simulated detector) and left/right mirror-probe scenes are drawn from the cell's generator; then every arm is
trained on the same expressions in the same batch order, with the same optimiser, steps and initial seed, and
scored on the same test sets. The arms differ only in what the claim compares:

- the pair code, on the late-fusion grounder: ``none`` (no geometry), ``mlp`` (an MLP on raw offsets: the
  spectral-bias baseline), ``handcrafted`` (ViL3DRel's distance and angle features: the main baseline),
  ``fourier`` (fixed random Fourier features, not decomposed), ``dsg`` (the method's relation code), ``dsg_sym``
  (DSG with the symmetric part only);
- the fusion: ``tft_dsg`` is ``dsg`` with TFT (the paper's full model; text also enters every encoder stage).

The relation-code arms run on late fusion so that they differ from ``dsg`` in the pair code alone and so that the
budget fits (TFT's point-wise FiLM doubles a step's cost on CPU); ``tft_dsg`` against ``dsg`` isolates TFT.
Two one-seed pilots set the budget: 400 steps on 950 training expressions (every code with TFT) left the view
relations unlearnt (about chance for every code) and overfitted; 500 steps on 3,600 expressions at lr 2e-3
(late fusion, DSG 0.71 and handcrafted 0.65 overall, views 0.38 and 0.29, probe 0.22 and 0.18) still underfitted,
so the profile of record trains 600 steps on about 3,600 expressions, as long as the 15-minute budget allows.
The margins were fixed before the pilots and not changed.

Metrics per arm: accuracy on ground-truth objects (all expressions, per relation family, direction-aware =
view + vertical, symmetric = distance + between, attribute = size + colour), accuracy on the left/right mirror
probe, and Acc@0.25 / Acc@0.5 of the chosen proposal against the true box on the detector's proposals. The model
is trained on ground-truth objects and applied to the proposals unchanged (our protocol: a two-stage grounder
over a detector's output; training on proposals would double the budget).

Margins were fixed before any run (the reason is in each claim's notes); none was revisited after a run.
"""

from __future__ import annotations

from typing import Any

from icml26._core import Cell, Claim, PaperCard, profiles, single_torch_thread
from icml26._core.plots import with_judged_metric

# arm -> (pair code, TFT on)
ARMS: dict[str, tuple[str, bool]] = {
    "none": ("none", False),
    "mlp": ("mlp", False),
    "handcrafted": ("handcrafted", False),
    "fourier": ("fourier", False),
    "dsg": ("dsg", False),
    "dsg_sym": ("dsg_sym", False),
    "tft_dsg": ("dsg", True),
}
LATE = (
    "the relation codes are compared on the late-fusion grounder (TFT off in every arm): they differ in the pair "
    "code alone"
)
QUICK = (
    "the quick profile (60 steps on about 360 expressions) is a wiring check: every arm is near chance there, so "
    "its verdicts do not speak to the claim; the full profile is the run of record"
)
GROUPS = ("direction_aware", "symmetric", "attribute")
SUBSTITUTE = (
    "procedural Sr3D-like benchmark (ScanRefer, Nr3D, Sr3D and ScanNet are not available offline); a compact "
    "d = 64 grounder with trainable word embeddings stands in for the paper's pretrained encoders and DETR-style "
    "model; no number here is comparable with the paper's ScanRefer figures"
)


def run_grounding(cell: Cell) -> dict[str, Any]:
    """Train every arm on one seed's scenes and score it on the shared test sets."""
    import numpy as np
    import torch

    from icml26.vision.grounding_3d.dataset import ProceduralReferDataset
    from icml26.vision.grounding_3d.model import TFTGrounding
    from icml26.vision.grounding_3d.training import TrainConfig, evaluate, fit
    from icml26.vision.grounding_3d.vocab import FAMILIES

    s = cell.setting
    seeds = [int(x) for x in cell.rng().integers(0, 2**31 - 1, size=3)]
    points = int(s["points"])
    train = ProceduralReferDataset(int(s["train_scenes"]), points_per_object=points, seed=seeds[0])
    test = ProceduralReferDataset(int(s["test_scenes"]), points_per_object=points, seed=seeds[1])
    # the same seed draws the same scenes first, then the detector's proposals from the same stream
    noisy = ProceduralReferDataset(int(s["test_scenes"]), points_per_object=points, proposals="noisy", seed=seeds[1])
    probe = ProceduralReferDataset(int(s["probe_scenes"]), points_per_object=points, probe=True, seed=seeds[2])
    config = TrainConfig(steps=int(s["steps"]), batch=int(s["batch"]), lr=float(s["lr"]), seed=cell.seed)
    subsets = {name: test.subset(name) for name in (*FAMILIES, *GROUPS)}
    metrics: dict[str, dict[str, float]] = {}
    curves: dict[str, list[dict[str, Any]]] = {"loss": []}
    with single_torch_thread():
        for arm in s.get("arms", tuple(ARMS)):
            relation, tft = ARMS[arm]
            torch.manual_seed(cell.seed)
            model = TFTGrounding(relation, tft=tft)
            losses = fit(model, train, config)
            ev, ev_noisy, ev_probe = evaluate(model, test), evaluate(model, noisy), evaluate(model, probe)
            m = {"acc": ev.accuracy(), "probe_acc": ev_probe.accuracy()}
            m.update(
                {f"acc_{name}": ev.accuracy(idx) for name, idx in subsets.items() if len(idx)}
            )  # smoke: a family may be absent
            m.update({"acc_iou25": ev_noisy.acc_at(0.25), "acc_iou50": ev_noisy.acc_at(0.5)})
            m["final_loss"] = float(np.mean(losses[-max(1, len(losses) // 20) :]))
            metrics[arm] = m
            every = max(1, len(losses) // 50)
            curves["loss"] += [{"arm": arm, "step": k, "loss": float(losses[k])} for k in range(0, len(losses), every)]
    metrics["oracle"] = {
        "acc_iou25": float(np.mean(noisy.max_iou >= 0.25)),
        "acc_iou50": float(np.mean(noisy.max_iou >= 0.5)),
    }
    info = {
        "train_expressions": len(train),
        "test_expressions": len(test),
        "probe_expressions": len(probe),
        "test_per_family": {f: len(subsets[f]) for f in FAMILIES},
        "parameters": {arm: TFTGrounding(*ARMS[arm]).n_parameters() for arm in metrics if arm in ARMS},
    }
    return {"metrics": metrics, "curves": curves, "info": info}


def plot_families(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """Test accuracy per relation family for every arm (mean over seeds; bars: +-1 sd over seeds)."""
    import numpy as np

    from icml26._core.plots import arm_style
    from icml26.vision.grounding_3d.vocab import FAMILIES

    ok = [r for r in records if r["status"] == "ok"]
    arms = [a for a in ARMS if ok and a in ok[0]["metrics"]]
    width = 0.8 / max(1, len(arms))
    judged = {card["claim"]["method"], *card["claim"]["baselines"]}
    extras = [a for a in arms if a not in judged]  # distinct colours for arms the claim does not judge
    x = np.arange(len(FAMILIES))
    for k, arm in enumerate(arms):
        vals = np.array([[r["metrics"][arm].get(f"acc_{f}", np.nan) for f in FAMILIES] for r in ok])
        style = arm_style(card, arm, index=extras.index(arm) if arm in extras else None)
        ax.bar(
            x + (k - (len(arms) - 1) / 2) * width,
            np.nanmean(vals, 0),
            width,
            yerr=np.nanstd(vals, 0) if len(vals) > 1 else None,
            color=style.get("color"),
            label=arm,
            capsize=1.5,
        )
    ax.set_xticks(x, list(FAMILIES))
    ax.set_ylabel("test accuracy (ground-truth objects)")
    ax.set_ylim(0, 1.05)
    ax.set_title("accuracy per relation family (shown, not judged)", fontsize=8)
    ax.legend(title="arm (bars: +-1 sd over seeds)", fontsize=7, title_fontsize=7)


STUDY = profiles(
    smoke={"train_scenes": 24, "test_scenes": 24, "probe_scenes": 3, "points": 8, "steps": 4, "batch": 8, "lr": 1e-3},
    quick={
        "train_scenes": 300,
        "test_scenes": 100,
        "probe_scenes": 10,
        "points": 16,
        "steps": 60,
        "batch": 16,
        "lr": 2e-3,
    },
    full={
        "train_scenes": 3000,
        "test_scenes": 300,
        "probe_scenes": 50,
        "points": 16,
        "steps": 600,
        "batch": 32,
        "lr": 2e-3,
    },
    seeds=(1, 3, 4),
    cell_seconds=(10, 20, 280),
)
_SHARED = dict(run=run_grounding, profiles=STUDY, direction="higher", unit="accuracy", revision=1)
GEOMETRY_BASELINES = ("handcrafted", "mlp", "fourier", "dsg_sym")

CARD = PaperCard(
    slug="grounding_3d",
    title="TFT + DSG 3D visual grounding",
    group="vision",
    api="icml26.vision.grounding_3d.TFTGrounding",
    extra="vision",
    summary="Text-aware feature tuning (the sentence modulates every stage of the object encoder) and decomposed "
    "spectral geometry (a learnable Fourier basis over pairwise offsets, split into symmetric and antisymmetric "
    "parts) in a compact 3D grounder, against handcrafted, MLP and fixed-Fourier relation codes, on a procedural "
    "Sr3D-like benchmark.",
    claims=(
        Claim(
            id="C1",
            statement="DSG grounds referring expressions more accurately than handcrafted relative-position "
            "features (ViL3DRel), an MLP on offsets, fixed Fourier features and a symmetric-only DSG (all "
            "expressions, ground-truth objects).",
            metric="acc",
            method="dsg",
            baselines=GEOMETRY_BASELINES,
            test="superiority",
            min_effect=0.01,
            paper_figure="state of the art on ScanRefer, Nr3D and Sr3D (+2.05 Acc@0.25 on ScanRefer; not "
            "reproduced here: no ScanNet offline)",
            notes=QUICK
            + "; "
            + LATE
            + "; "
            + "margin 1 point, half the paper's 2.05-point headline gain, fixed before any run; "
            + SUBSTITUTE,
            plot=with_judged_metric(plot_families),
            **_SHARED,
        ),
        Claim(
            id="C1d",
            statement="DSG's gain is largest on direction-aware relations (view: left/right/front/behind from a "
            "stated viewpoint; vertical: on/under): it beats every other relation code there by at least 3 points.",
            metric="acc_direction_aware",
            method="dsg",
            baselines=GEOMETRY_BASELINES,
            test="superiority",
            min_effect=0.03,
            paper_figure="direction-aware relations (abstract; no number)",
            notes=QUICK
            + "; "
            + LATE
            + "; "
            + "margin 3 points, three times C1's, for 'most on direction-aware relations'; fixed before any "
            "run; the handcrafted code has the azimuth's sin and cos, so it is direction-aware too (our baseline "
            "is not a straw man); " + SUBSTITUTE,
            **_SHARED,
        ),
        Claim(
            id="C1p",
            statement="On left/right minimal pairs in point-symmetric scenes, DSG tells left from right while the "
            "symmetric-only DSG cannot (it ties the mirrored candidates): DSG is at least 30 points more accurate.",
            metric="probe_acc",
            method="dsg",
            baselines=("dsg_sym",),
            test="superiority",
            min_effect=0.30,
            paper_figure="antisymmetric components carry direction (abstract; no number)",
            notes=QUICK
            + "; "
            + LATE
            + "; "
            + "the symmetric-only tie is exact by construction (a unit test); what is measured is that the "
            "trained DSG uses its antisymmetric part; the notes expect >= 90% against 50 +- 10%, so 30 points "
            "leaves room; fixed before any run",
            **_SHARED,
        ),
        Claim(
            id="C1n",
            statement="Geometry is learnt at all: DSG beats the same late-fusion grounder without any relation "
            "code by at least 15 points (only category, colour and size cues are left to the latter).",
            metric="acc",
            method="dsg",
            baselines=("none",),
            test="superiority",
            min_effect=0.15,
            paper_figure=None,
            notes=QUICK
            + "; "
            + LATE
            + "; "
            + "a sanity check from the notes (every geometric arm >= 15 points over no geometry), not a claim "
            "of the abstract; fixed before any run",
            **_SHARED,
        ),
        Claim(
            id="C2",
            statement="Text-aware feature tuning (the sentence modulates each stage of the object encoder) grounds "
            "attribute expressions (colour, size) better than late fusion, by at least 1 point.",
            metric="acc_attribute",
            method="tft_dsg",
            baselines=("dsg",),
            test="superiority",
            min_effect=0.01,
            paper_figure="TFT mitigates domain shift and aids early alignment (abstract; no number)",
            notes=QUICK
            + "; "
            + "TFT's rationale is the domain shift of pretrained unimodal encoders; without pretrained "
            "encoders offline that shift cannot occur, so only early against late fusion is measured (our "
            "reading: FiLM after each encoder stage behind a zero-initialised gate); margin fixed before any run",
            **_SHARED,
        ),
        Claim(
            id="C3",
            statement="On a detector's noisy proposals, DSG's chosen box reaches IoU >= 0.25 with the true box more "
            "often than the handcrafted code's (Acc@0.25, ScanRefer's metric), by at least 1 point.",
            metric="acc_iou25",
            method="dsg",
            baselines=("handcrafted",),
            test="superiority",
            min_effect=0.01,
            paper_figure="+2.05 Acc@0.25 on ScanRefer (3DREC)",
            notes=QUICK
            + "; "
            + LATE
            + "; "
            + "margin half the paper's 2.05 points, fixed before any run; proposals from our simulated "
            "detector (jitter, misses, merges, fragments); models trained on ground-truth objects and applied to "
            "the proposals unchanged (our protocol); the oracle's ceiling is recorded as the 'oracle' arm; "
            + SUBSTITUTE,
            **_SHARED,
        ),
    ),
)
