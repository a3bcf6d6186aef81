"""Reproduction of TriForces' claims on offline substitutes: EMT-labelled Au-Pt-Pd alloys (energies and forces; SSL on
a label-free pool of all seven EMT metals) and QM9 probes (SSL on unlabelled QM9 molecules). MatBench and OMat24 are
not available offline: no claim is made about them.

Design (one cell per seed runs every arm on the same data, so every comparison is paired):

- Data: a labelled target set of Au-Pt-Pd cells off equilibrium (EMT energies and forces; one fixed set, data seed 0,
  cached per process); the last ``n_test`` are the test set, each seed draws its nested training subsets of size
  n in ``ns`` from the rest. An unlabelled pool of near-equilibrium cells over the seven EMT metals (per seed).
- Arms (the same SchNet backbone, initial weights, training subsets, per-element least-squares references, Huber loss,
  optimiser, batch size and number of fine-tuning steps): ``backbone`` (a) from scratch; ``streams`` (b) the three
  streams, no SSL; ``backbone_ssl`` (c) the backbone pretrained by the SSL losses; ``triforces`` (d) the three streams
  pretrained by the SSL losses. Both SSL arms use the same pool, steps and loss weights.
- Retrieval: the test cells are the database; queries are a rattled (0.1 Å), rotated, permuted and strained (+-3 %)
  copy of each; cosine kNN on graph embeddings (Recall@1/5/10, MRR) of the pretrained encoders and of the same
  encoders at their random initialisation.
- QM9 (C4): TriForces pretrained label-free on a pool of QM9 molecules; a ridge probe (RidgeCV on standardised
  features) of the HOMO-LUMO gap on frozen mean-pooled features, against the same encoder at random initialisation
  and composition-only features. Pool, probe-train and probe-test molecules are disjoint.

Budgets: model sizes are below the notes' (SchNet hidden 32, 2 interactions; streams of width 32) and every arm gets
the same small number of steps (160 fine-tuning, 100 SSL steps in the full profile), so no model is trained to
convergence: the claims compare arms at a fixed, equal compute budget. The full profile is the reproduction of
record; the quick profile (20 fine-tuning and 10 SSL steps, 3 seeds) only checks the plumbing, and where its verdicts
differ from the full profile's that is the reason. Not built: PaiNN and the other backbones (model-agnosticism is not
tested), the supervised source-pretraining arm (e), the tblite/xTB molecular force task.
"""

from __future__ import annotations

from typing import Any

from icml26._core import Cell, Claim, PaperCard, profiles, single_torch_thread

REVISION = 1
ARMS = ("backbone", "streams", "backbone_ssl", "triforces")
ARM_LABELS = {
    "backbone": "(a) backbone from scratch",
    "streams": "(b) three streams, no SSL",
    "backbone_ssl": "(c) backbone + SSL",
    "triforces": "(d) TriForces (streams + SSL)",
}
ENCODERS = ("triforces_ssl", "backbone_ssl", "triforces_init", "backbone_init")


def _queries(structures: list[Any], rng: Any, cutoff: float) -> dict[str, list[Any]]:
    """Four transformed copies of each database structure (the retrieval queries)."""
    import numpy as np
    import torch
    from scipy.spatial.transform import Rotation

    from icml26.science.triforces.graph import make_structure

    out: dict[str, list[Any]] = {"rattled": [], "rotated": [], "permuted": [], "strained": []}
    for s in structures:
        pos, cell, z = s.pos.numpy(), s.cell.numpy(), s.z.numpy()
        out["rattled"].append(s.with_positions(s.pos + torch.as_tensor(0.1 * rng.standard_normal(pos.shape)), cutoff))
        rot = Rotation.random(random_state=int(rng.integers(2**31))).as_matrix()
        out["rotated"].append(make_structure(z, pos @ rot.T, cell @ rot.T, s.pbc, cutoff))
        perm = rng.permutation(len(z))
        out["permuted"].append(make_structure(z[perm], pos[perm], cell, s.pbc, cutoff))
        eps = rng.uniform(-0.03, 0.03, size=(3, 3))
        strain = np.eye(3) + 0.5 * (eps + eps.T)
        out["strained"].append(make_structure(z, pos @ strain, cell @ strain, s.pbc, cutoff))
    return out


@single_torch_thread()
def run_curve(cell: Cell) -> dict[str, Any]:
    """Learning curve of the four arms (energy and force MAE on the same test cells) and retrieval metrics."""
    import copy

    import numpy as np
    import torch

    from icml26.science.triforces.data import target_alloys, unlabelled_pool
    from icml26.science.triforces.model import EnergyForceModel, build_encoder, errors
    from icml26.science.triforces.retrieval import embed, retrieval_metrics
    from icml26.science.triforces.ssl import TriForcesPretrainer

    ns, n_test = sorted(int(n) for n in cell["ns"]), int(cell["n_test"])
    model_kw = dict(cell["model"])
    cutoff = float(model_kw.get("cutoff", 4.5))
    labelled = list(target_alloys(ns[-1] + n_test, 0, cutoff))
    test, train_pool = labelled[-n_test:], labelled[:-n_test]
    rng = cell.rng()
    order = rng.permutation(len(train_pool))
    pool = list(unlabelled_pool(int(cell["pool"]), cell.seed, cutoff))

    def fresh(streams: bool) -> Any:
        return build_encoder(streams, seed=cell.seed, **model_kw)

    pretrained, ssl_curves = {}, {}
    for name, streams in (("backbone_ssl", False), ("triforces", True)):
        trainer = TriForcesPretrainer(fresh(streams), n_projections=int(cell.get("n_projections", 1024)))
        trainer.fit(pool, steps=int(cell["ssl_steps"]), batch_size=int(cell["batch"]), seed=cell.seed)
        pretrained[name], ssl_curves[name] = trainer.encoder, trainer.loss_curve_

    metrics: dict[str, dict[str, float]] = {}
    curve = []
    for n in ns:
        train = [train_pool[k] for k in order[:n]]
        for arm in ARMS:
            enc = copy.deepcopy(pretrained[arm]) if arm in pretrained else fresh(arm == "streams")
            torch.manual_seed(cell.seed)  # the same energy-head initialisation in every arm
            model = EnergyForceModel(enc).fit(
                train, steps=int(cell["steps"]), batch_size=int(cell["batch"]), lr=float(cell["lr"]), seed=cell.seed
            )
            err = errors(model, test)
            curve.append({"n": n, "arm": arm, **err, "final_loss": float(np.mean(model.loss_curve_[-10:]))})
            for tag, n_at in (("n_min", ns[0]), ("n_max", ns[-1])):
                if n == n_at:
                    metrics[f"{arm}@{tag}"] = err
    for tag in ("n_min", "n_max"):
        base, ours = metrics[f"backbone@{tag}"], metrics[f"triforces@{tag}"]
        metrics[f"gain@{tag}"] = {
            "energy_gain": 1 - ours["energy_mae"] / base["energy_mae"],
            "force_gain": 1 - ours["force_mae"] / base["force_mae"],
        }

    database = test[: int(cell["n_retrieval"])]
    queries = _queries(database, np.random.default_rng([cell.seed, 99]), cutoff)
    encoders = {
        "triforces_ssl": pretrained["triforces"],
        "backbone_ssl": pretrained["backbone_ssl"],
        "triforces_init": fresh(True),
        "backbone_init": fresh(False),
    }
    retrieval = []
    for name, enc in encoders.items():
        db = embed(enc, database)
        per_kind = {k: retrieval_metrics(db, embed(enc, q), list(range(len(q)))) for k, q in queries.items()}
        metrics[name] = {m: float(np.mean([v[m] for v in per_kind.values()])) for m in next(iter(per_kind.values()))}
        retrieval += [{"encoder": name, "query": k, **v} for k, v in per_kind.items()]
    ssl_rows = [{"arm": arm, "step": t, **row} for arm, rows in ssl_curves.items() for t, row in enumerate(rows)]
    return {
        "metrics": metrics,
        "curves": {"learning_curve": curve, "retrieval": retrieval, "ssl_loss": ssl_rows},
        "info": {"n_test": n_test, "ns": ns, "pool": len(pool)},
    }


PROBE_FEATURES = ("triforces_ssl", "triforces_init", "composition")


@single_torch_thread()
def run_qm9_probe(cell: Cell) -> dict[str, Any]:
    """QM9 HOMO-LUMO gap from frozen features by ridge regression: TriForces pretrained label-free on other QM9
    molecules, the same encoder at random initialisation, and composition-only features (element fractions, size)."""
    import numpy as np
    from sklearn.linear_model import RidgeCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from icml26.science.triforces.data import qm9_gap, qm9_molecules
    from icml26.science.triforces.model import build_encoder
    from icml26.science.triforces.retrieval import embed
    from icml26.science.triforces.ssl import TriForcesPretrainer

    n_pool, n_train, n_test = int(cell["pool"]), int(cell["n_train"]), int(cell["n_test"])
    total = n_pool + n_train + n_test
    model_kw = dict(cell["model"])
    molecules, gap = qm9_molecules(total, float(model_kw.get("cutoff", 4.5))), qm9_gap(total)
    perm = cell.rng().permutation(total)
    pool = [molecules[k] for k in perm[:n_pool]]
    train, test = perm[n_pool : n_pool + n_train], perm[n_pool + n_train :]
    trainer = TriForcesPretrainer(build_encoder(True, seed=cell.seed, **model_kw))
    trainer.fit(pool, steps=int(cell["ssl_steps"]), batch_size=int(cell["batch"]), seed=cell.seed)
    probe_set = [molecules[k] for k in np.concatenate([train, test])]
    elements = (1, 6, 7, 8, 9)
    comp = np.array([[float((s.z == e).float().mean()) for e in elements] + [s.n_atoms] for s in probe_set])
    features = {
        "triforces_ssl": embed(trainer.encoder, probe_set, features="pooled"),
        "triforces_init": embed(build_encoder(True, seed=cell.seed, **model_kw), probe_set, features="pooled"),
        "composition": comp,
    }
    y = gap[np.concatenate([train, test])]
    metrics = {}
    for name, x in features.items():
        ridge = make_pipeline(StandardScaler(), RidgeCV(alphas=np.logspace(-3, 4, 15)))
        ridge.fit(x[:n_train], y[:n_train])
        metrics[name] = {"gap_mae": float(np.mean(np.abs(ridge.predict(x[n_train:]) - y[n_train:])))}
    metrics["mean_predictor"] = {"gap_mae": float(np.mean(np.abs(y[n_train:] - y[:n_train].mean())))}
    return {"metrics": metrics, "info": {"pool": n_pool, "n_train": n_train, "n_test": n_test}}


# ---------------------------------------------------------------------------------------------------- plots
def _ok(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["status"] == "ok"]


def _finish(ax: Any, ylabel: str) -> None:
    """Label, legend outside the data (the house helper), and render at >= 150 dpi."""
    from icml26._core.plots import legend_outside

    ax.set_ylabel(ylabel, fontsize=8)
    legend_outside(ax)
    ax.figure.set_dpi(max(150, ax.figure.get_dpi()))


def _learning_curve(ax: Any, records: list[dict[str, Any]], metric: str) -> None:
    """Each arm's test MAE against n: mean over seeds (line) and each seed (dots)."""
    import numpy as np

    rows = [row for r in _ok(records) for row in r["curves"]["learning_curve"]]
    ns = sorted({row["n"] for row in rows})
    for k, arm in enumerate(ARMS):
        per_n = [[row[metric] for row in rows if row["arm"] == arm and row["n"] == n] for n in ns]
        ax.plot(ns, [np.mean(v) for v in per_n], "-", color=f"C{k}", label=ARM_LABELS[arm] + ": mean over seeds")
        for n, v in zip(ns, per_n, strict=True):
            ax.plot([n] * len(v), v, "o", ms=3, color=f"C{k}", alpha=0.6)
    ax.plot([], [], "o", color="0.4", ms=3, label="one seed")
    from matplotlib.ticker import NullFormatter

    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("labelled training cells n (Au-Pt-Pd, EMT)")


def plot_energy_curve(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    _learning_curve(ax, records, "energy_mae")
    _finish(ax, "test energy MAE (meV/atom); judged at the smallest n")


def plot_force_curve(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    _learning_curve(ax, records, "force_mae")
    _finish(ax, "test force MAE (meV/Å); judged at the smallest n")


def _strip(ax: Any, records: list[dict[str, Any]], metric: str, names: tuple[str, ...], labels: list[str]) -> None:
    """Each name's value per seed (dots; the same seed joined by grey lines) and its mean (black bar)."""
    from icml26._core.plots import paired_strip

    paired_strip(ax, [[r["metrics"][n][metric] for n in names] for r in _ok(records)], labels, rotation=15)


def plot_gain(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    _strip(ax, records, "energy_gain", ("gain@n_min", "gain@n_max"), ["smallest n", "largest n"])
    ax.axhline(0.0, color="0.5", lw=0.8, label="no gain")
    ax.axhline(0.10, color="C3", ls=":", lw=0.8, label="C1's margin at the smallest n (10 %)")
    _finish(ax, "energy gain of (d) over (a): 1 - MAE_d / MAE_a")


def plot_ablation(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    names = tuple(f"{a}@n_min" for a in ARMS)
    _strip(ax, records, "energy_mae", names, [ARM_LABELS[a] for a in ARMS])
    _finish(ax, "test energy MAE at the smallest n (meV/atom)")


def plot_retrieval(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    _strip(ax, records, "mrr", ENCODERS, list(ENCODERS))
    ax.axhline(1.0, color="0.5", lw=0.8, label="perfect retrieval (MRR 1)")
    _finish(ax, "MRR over rattled/rotated/permuted/strained queries")


def plot_probe(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    names = (*PROBE_FEATURES, "mean_predictor")
    _strip(ax, records, "gap_mae", names, list(names))
    _finish(ax, "QM9 HOMO-LUMO gap MAE of a ridge probe (eV)")


# --------------------------------------------------------------------------------------------------- claims
_SMALL = {"hidden": 16, "n_interactions": 1, "comp_dim": 16, "struct_dim": 16, "out_dim": 32, "n_radial": 4}
_MODEL = {"hidden": 32, "n_interactions": 2, "comp_dim": 32, "struct_dim": 32, "out_dim": 64}
CURVE = profiles(
    smoke={"ns": [8, 16], "n_test": 8, "steps": 3, "ssl_steps": 2, "pool": 16, "batch": 4, "lr": 2e-3,
           "n_retrieval": 8, "n_projections": 64, "model": _SMALL},
    quick={"ns": [32, 128], "n_test": 32, "steps": 20, "ssl_steps": 10, "pool": 100, "batch": 8, "lr": 5e-3,
           "n_retrieval": 32, "model": _MODEL},
    full={"ns": [50, 100, 400], "n_test": 100, "steps": 160, "ssl_steps": 100, "pool": 1500, "batch": 16,
          "lr": 5e-3, "n_retrieval": 100, "model": _MODEL},
    seeds=(2, 3, 4),
    cell_seconds=(6.0, 16.0, 250.0),
)  # fmt: skip
PROBE = profiles(
    smoke={"pool": 40, "n_train": 30, "n_test": 30, "ssl_steps": 2, "batch": 4, "model": _SMALL},
    quick={"pool": 200, "n_train": 150, "n_test": 150, "ssl_steps": 10, "batch": 8, "model": _MODEL},
    full={"pool": 3000, "n_train": 1000, "n_test": 1000, "ssl_steps": 150, "batch": 16, "model": _MODEL},
    seeds=(2, 3, 4),
    cell_seconds=(3.0, 3.5, 60.0),
)
_PROBE = dict(
    run=run_qm9_probe,
    profiles=PROBE,
    revision=REVISION,
    data=("QM9 (qm9pack CSVs, CC-BY 4.0; first pool + n_train + n_test molecules of part 1)",),
    unit="eV",
    plot=plot_probe,
)
_COMMON = dict(run=run_curve, profiles=CURVE, revision=REVISION, data=("ASE EMT Au-Pt-Pd alloys (substitute)",))
_ABLATION = dict(
    metric="energy_mae",
    direction="lower",
    min_effect=0.05,
    relative=True,
    unit="meV/atom",
    plot=plot_ablation,
    **_COMMON,
)
_RETRIEVAL = dict(
    metric="mrr",
    direction="higher",
    min_effect=0.05,
    paper_figure="abstract: efficient similar-structure retrieval through the learned latent space",
    plot=plot_retrieval,
    **_COMMON,
)
_READING = (
    "Our reading: the baseline is the same backbone trained from scratch on the same n labels (the abstract does not "
    "name it); all arms share per-element least-squares references (a missing reference would hand the composition "
    "stream a free win). "
)

CARD = PaperCard(
    slug="triforces",
    title="TriForces",
    group="science",
    api="icml26.science.triforces.TriForces",
    extra="science",
    summary="Three-stream interatomic potential (interaction backbone, count-weighted composition attention, "
    "element-blind structure power spectrum) with label-free SSL (denoising, masked elements, LeJEPA/SIGReg), on "
    "EMT alloys as an offline substitute for OMat24.",
    claims=(
        Claim(
            id="C1",
            statement="Limited data: TriForces (three streams + SSL) lowers the test energy MAE of the backbone "
            "trained from scratch by more than 10 % at the smallest training set.",
            metric="energy_mae",
            direction="lower",
            method="triforces@n_min",
            baselines=("backbone@n_min",),
            min_effect=0.10,
            relative=True,
            paper_figure="abstract: -57 % energy MAE at 20K OMat24 samples; notes expect 15-50 % here at n = 50",
            unit="meV/atom",
            plot=plot_energy_curve,
            notes=(
                _READING + "Margin 10 % relative fixed before any run from the notes' headline check (d <= 0.9 a at "
                "the smallest n), below the notes' expected 15-50 %."
                + " Full run: the gain comes from the streams rather than SSL (C2: arm (b) matches (d)); at this equal "
                "step budget the from-scratch backbone fits composition-dependent energies poorly (its final training"
                " loss stays about 3x the stream arms'). Quick and full agree."
            ),
            **_COMMON,
        ),
        Claim(
            id="C1b",
            statement="Limited data: TriForces lowers the test force MAE of the backbone from scratch by more than "
            "5 % at the smallest training set.",
            metric="force_mae",
            direction="lower",
            method="triforces@n_min",
            baselines=("backbone@n_min",),
            min_effect=0.05,
            relative=True,
            paper_figure="abstract: force MAE improves across sample sizes; notes expect 10-30 % at n = 50",
            unit="meV/Å",
            plot=plot_force_curve,
            notes=(
                _READING
                + "Margin 5 % relative fixed before any run: half the low end of the notes' 10-30 %."
                + " The quick profile (20 steps, every arm far from trained) finds a large force gain; the full profile"
                " (160 steps) only +3 %, inside its interval: that is why they differ."
            ),
            **_COMMON,
        ),
        Claim(
            id="C1c",
            statement="The energy gain of TriForces over the backbone shrinks as labelled data grow: the relative "
            "gain at the smallest n exceeds the gain at the largest n by more than 5 percentage points.",
            metric="energy_gain",
            direction="higher",
            method="gain@n_min",
            baselines=("gain@n_max",),
            min_effect=0.05,
            paper_figure="abstract: the gain is reported 'in limited-data training regime'",
            plot=plot_gain,
            notes=(
                "energy_gain = 1 - MAE_d / MAE_a at one n, paired by seed; margin 0.05 fixed before any run so that "
                "seed noise is not read as a trend."
                + " Full run: not reproduced because with the same fixed number of steps at every n the backbone's "
                "error does not fall with n (about 35 to 38 meV/atom from n = 50 to 400), so the gain grows with n; a"
                " budget that grows with n (fixed epochs) was not run."
            ),
            **_COMMON,
        ),
        Claim(
            id="C2",
            statement="Ablation, SSL beyond capacity: TriForces lowers the energy MAE of the same three streams "
            "trained without SSL by more than 5 % at the smallest n.",
            method="triforces@n_min",
            baselines=("streams@n_min",),
            paper_figure="notes: expected order (d) >= (c) >= (b)",
            notes=(
                "Arm (b) removes the capacity confound (the streams add parameters). Margin 5 % relative fixed "
                "before any run: half of C1's."
                + " Full run: (b), the streams without SSL, is the best arm; 100 SSL steps on 1500 near-equilibrium "
                "cells add nothing measurable to the streams here."
            ),
            **_ABLATION,
        ),
        Claim(
            id="C2b",
            statement="Ablation, streams beyond SSL: TriForces lowers the energy MAE of the backbone pretrained by the "
            "same SSL losses by more than 5 % at the smallest n.",
            method="triforces@n_min",
            baselines=("backbone_ssl@n_min",),
            paper_figure="notes: expected order (d) >= (c) >= (b)",
            notes=(
                "Margin 5 % relative fixed before any run: half of C1's."
                + " Full run: the streams explain the gain (C2); with or without SSL the backbone alone stays about "
                "twice as wrong."
            ),
            **_ABLATION,
        ),
        Claim(
            id="C2c",
            statement="Ablation, SSL without streams: the backbone pretrained by the SSL losses lowers the energy MAE "
            "of the backbone from scratch by more than 5 % at the smallest n.",
            method="backbone_ssl@n_min",
            baselines=("backbone@n_min",),
            paper_figure="notes: denoising pretraining (Zaidi et al. 2022) is expected to help a backbone alone",
            notes="Margin 5 % relative fixed before any run: half of C1's.",
            **_ABLATION,
        ),
        Claim(
            id="C3",
            statement="Retrieval: TriForces' pretrained embedding retrieves the source of rattled, rotated, permuted "
            "and strained copies better than the same encoder at random initialisation (MRR higher by > 0.05).",
            method="triforces_ssl",
            baselines=("triforces_init",),
            notes=(
                "Database: the test cells; cosine kNN on the projected graph embedding; MRR averaged over the four "
                "query kinds (rotated and permuted copies are exact invariances of every encoder here, so they score 1 "
                "for all). Margin 0.05 MRR fixed before any run."
                + " Full run: rotated and permuted queries score MRR 1 for every encoder; the differences come from "
                "rattled and strained queries, where the randomly initialised backbone has the best MRR (about 0.94)."
            ),
            **_RETRIEVAL,
        ),
        Claim(
            id="C3b",
            statement="Retrieval: TriForces' pretrained embedding beats the SSL-pretrained backbone's embedding (MRR "
            "higher by > 0.05).",
            method="triforces_ssl",
            baselines=("backbone_ssl",),
            notes="As C3; margin 0.05 MRR fixed before any run.",
            **_RETRIEVAL,
        ),
        Claim(
            id="C4",
            statement="QM9 without labels: a ridge probe on TriForces features pretrained label-free on other QM9 "
            "molecules predicts the HOMO-LUMO gap with a lower MAE (by > 5 %) than the same encoder at random "
            "initialisation.",
            metric="gap_mae",
            direction="lower",
            method="triforces_ssl",
            baselines=("triforces_init",),
            min_effect=0.05,
            relative=True,
            paper_figure="abstract: TriForces improves performance on QM9 over baselines without needing DFT labels",
            notes=(
                "Our reading of the abstract's QM9 result: frozen features and a ridge probe (the notes' protocol); "
                "SSL pool, probe train and probe test molecules are disjoint, drawn per seed. Margin 5 % relative "
                "fixed "
                "before any run."
                + " Full run: pretrained features are about 1.5 % better than random-initialised ones, short of the "
                "margin."
            ),
            **_PROBE,
        ),
        Claim(
            id="C4b",
            statement="QM9 without labels: the probe on pretrained TriForces features beats composition-only "
            "features (element fractions and size) by > 5 % gap MAE.",
            metric="gap_mae",
            direction="lower",
            method="triforces_ssl",
            baselines=("composition",),
            min_effect=0.05,
            relative=True,
            paper_figure="notes: QM9 ridge probes against random-init and composition-only features",
            notes=(
                "Margin 5 % relative fixed before any run."
                + " Random-initialised TriForces features also beat composition-only features: the gain here is from "
                "geometry features, and C4 is the SSL test."
            ),
            **_PROBE,
        ),
    ),
)
