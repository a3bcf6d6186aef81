"""DetailMaster on a procedural world: the benchmark harness validated where the ground truth is known.

No text-to-image model, VLM judge or detector weights exist offline, and the dataset is hub-only, so nothing here
measures a real model or reproduces the paper's numbers. What is measured is whether the *harness* (long-prompt
construction, the official evaluation workflow with pluggable models) detects failures that were built in:

One cell = one seed: ``samples`` ground-truth scenes (2-5 characters) are drawn and written as long prompts
(``tokens``: a target length range in ``clip-pretok`` tokens); every simulated generator renders every prompt
(same prompts, same seeds: paired), and the same evaluator (classical judge + detector + matcher, official rules)
scores every image. Each generator's plan is also scored symbolically (what a perfect judge would report), and
the judge itself is checked on renders of the ground truth: every true question (sensitivity) and a negated copy
of every sample (each attribute, location, scene value and relation replaced by a false one: specificity).

Arms: ``oracle``; ``truncating`` (77-token CLIP-style context); ``bag_of_words`` (attribute shuffles, rate 0.5);
``position_agnostic``; ``dropping`` (characters, rate 0.3); ``relation_swap`` (rate 0.7); ``*_expected`` the
symbolic scores; ``evaluator`` the selectivity of each failure mode; ``judge`` the judge's accuracy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml26._core import Cell, Claim, PaperCard, profiles

MODELS = ("oracle", "truncating", "bag_of_words", "position_agnostic", "dropping", "relation_swap")
# failure mode -> (the dimension it must drop, the dimensions it must leave alone)
SCENE_DIMS = ("background", "light", "style")
MODES: dict[str, tuple[str, tuple[str, ...]]] = {
    "bag_of_words": ("attribute", ("presence", "location", *SCENE_DIMS, "relation")),
    "position_agnostic": ("location", ("presence", "attribute", *SCENE_DIMS)),
    "dropping": ("presence", SCENE_DIMS),
    "relation_swap": ("relation", ("presence", "attribute", *SCENE_DIMS)),
}
JUDGED = ("presence", "attribute", "location", "background", "light", "style", "relation")
HARNESS = (
    "validates the benchmark harness on a procedural world (PIL glyphs, a classical pixel judge, simulated "
    "generators with built-in failures); it is not a reproduction of the paper's numbers, which need real T2I "
    "models and a Qwen2.5-VL judge (not available offline)"
)


def _merge(reports: list[Any]) -> Any:
    from icml26.vision.detailmaster.evaluation import Report

    out = Report()
    for r in reports:
        out.records += r.records
        out.leaks += r.leaks
    return out


def _overall(report: Any, records: list[dict[str, Any]] | None = None) -> float:
    recs = [r for r in (report.records if records is None else records) if r["dimension"] in JUDGED]
    return float(np.mean([r["score"] for r in recs])) if recs else float("nan")


def _negate(sample: Any, rng: np.random.Generator) -> Any:
    """The sample with every attribute, location, scene value and relation replaced by a false one."""
    from dataclasses import replace

    from icml26.vision.detailmaster.prompts import compose_prompt
    from icml26.vision.detailmaster.regions import REGION_NAMES
    from icml26.vision.detailmaster.schema import ATTRIBUTES, BACKGROUNDS, LIGHTS, STYLES, Relation

    def other(values: tuple[str, ...], v: str) -> str:
        rest = [x for x in values if x != v]
        return rest[rng.integers(len(rest))]

    scene = sample.scene
    chars = tuple(
        replace(
            c,
            attributes={k: other(ATTRIBUTES[k], v) for k, v in c.attributes.items()},
            position=other(REGION_NAMES, c.position),
        )
        for c in scene.characters
    )
    vocab = {"background": BACKGROUNDS, "light": LIGHTS, "style": STYLES}
    attrs = {k: other(vocab[k], v) for k, v in scene.attributes.items()}
    tethered = {frozenset((r.subject, r.object)) for r in scene.relations if r.predicate == "interacting with"}
    rels = []
    for r in scene.relations:
        if r.predicate in ("left of", "above"):
            rels.append(Relation(r.object, r.predicate, r.subject))
        elif r.predicate == "interacting with":
            free = [n for n in scene.names if n != r.subject and frozenset((r.subject, n)) not in tethered]
            if free:
                rels.append(Relation(r.subject, "interacting with", free[rng.integers(len(free))]))
        else:  # next to: is the object left of / above the subject? (false when the subject is left of / above it)
            a, b = scene.character(r.subject).box, scene.character(r.object).box
            if a[2] <= b[0]:
                rels.append(Relation(r.object, "left of", r.subject))
            elif a[3] <= b[1]:
                rels.append(Relation(r.object, "above", r.subject))
    neg = replace(scene, characters=chars, attributes=attrs, relations=tuple(rels))
    s = compose_prompt(neg, rng, 0, sample_id=sample.id)
    return replace(s, n_tokens=sample.n_tokens)


def run_world(cell: Cell) -> dict[str, Any]:
    """Every simulated generator on one seed's prompts, scored by the evaluator and symbolically."""
    from icml26.vision.detailmaster.evaluation import DetailMasterEvaluator
    from icml26.vision.detailmaster.prompts import compose_prompt
    from icml26.vision.detailmaster.synthetic import judge as J
    from icml26.vision.detailmaster.synthetic import models as M
    from icml26.vision.detailmaster.synthetic.render import Renderer
    from icml26.vision.detailmaster.synthetic.symbolic import expected_report
    from icml26.vision.detailmaster.synthetic.world import SceneSampler

    s = cell.setting
    size, n = int(s["size"]), int(s["samples"])
    lo, hi = (int(x) for x in s["tokens"])
    rng = cell.rng()
    sampler = SceneSampler(size)
    samples = []
    # stratified target lengths (shuffled), so that short and long prompts are both present at every size
    targets = rng.permutation(lo + (hi - lo) * (np.arange(n) + rng.random(n)) / n)
    for i in range(n):
        scene = sampler.sample(rng)
        samples.append(compose_prompt(scene, rng, int(targets[i]), sample_id=f"{cell.seed}-{i}"))
    judge = J.ClassicalJudge()
    evaluator = DetailMasterEvaluator(judge, J.ClassicalDetector(judge), J.ShapeMatcher())
    models = {
        "oracle": M.OracleT2I(size),
        "truncating": M.TruncatingT2I(77, size=size),
        "bag_of_words": M.BagOfWordsT2I(0.5, size),
        "position_agnostic": M.PositionAgnosticT2I(size),
        "dropping": M.DroppingT2I(0.3, size),
        "relation_swap": M.RelationSwapT2I(0.7, size),
    }
    seeds = [int(x) for x in rng.integers(0, 2**31 - 1, size=n)]
    metrics: dict[str, dict[str, float]] = {}
    split = (lo + hi) / 2
    for name, model in models.items():
        plans = [model.plan(x.prompt, sd) for x, sd in zip(samples, seeds, strict=True)]
        images = [model.renderer.render(p, sd) for p, sd in zip(plans, seeds, strict=True)]
        measured = evaluator.evaluate(samples, images)
        expected = _merge([expected_report(x, p, size) for x, p in zip(samples, plans, strict=True)])
        for arm, rep in ((name, measured), (f"{name}_expected", expected)):
            m = dict(rep.scores())
            m["score"] = _overall(rep)
            m["leakage"] = rep.leakage_rate()
            metrics[arm] = m
            if name in ("truncating", "oracle"):
                short = [r for r in rep.records if r["n_tokens"] < split]
                long = [r for r in rep.records if r["n_tokens"] >= split]
                metrics[f"{arm}_short"] = {"score": _overall(rep, short)}
                metrics[f"{arm}_long"] = {"score": _overall(rep, long)}
    sel = {}
    for mode, (target, guarded) in MODES.items():
        drop = {d: metrics["oracle"][d] - metrics[mode][d] for d in (target, *guarded)}
        sel[f"selectivity_{mode}"] = drop[target] - max(drop[d] for d in guarded)
        sel[f"target_drop_{mode}"] = drop[target]
        sel[f"max_guarded_drop_{mode}"] = max(drop[d] for d in guarded)
    metrics["evaluator"] = sel
    # the judge on renders of the ground truth: true questions, then a negated copy of each sample
    truth_images = [Renderer(size).render(x.scene, sd) for x, sd in zip(samples, seeds, strict=True)]
    positive = evaluator.evaluate(samples, truth_images)
    negated = [_negate(x, rng) for x in samples]
    negative = evaluator.evaluate(negated, truth_images)
    sens = {d: v for d, v in positive.scores().items() if d in JUDGED}
    spec = {d: 1.0 - v for d, v in negative.scores().items() if d in JUDGED and d != "presence"}
    sensitivity = _overall(positive)
    specificity = 1.0 - float(np.mean([r["score"] for r in negative.records if r["dimension"] in JUDGED[1:]]))
    metrics["judge"] = {
        "accuracy": (sensitivity + specificity) / 2,
        "sensitivity": sensitivity,
        "specificity": specificity,
        **{f"sens_{d}": v for d, v in sens.items()},
        **{f"spec_{d}": v for d, v in spec.items()},
    }
    metrics["oracle"]["min_dimension"] = min(metrics["oracle"][d] for d in JUDGED)
    # a dimension never asked in this cell (no person, no relation...) is NaN: leave it out rather than report it
    metrics = {arm: {k: float(v) for k, v in m.items() if np.isfinite(v)} for arm, m in metrics.items()}
    tokens = [x.n_tokens for x in samples]
    info = {
        "samples": n,
        "tokenizer": samples[0].tokenizer,
        "mean_tokens": float(np.mean(tokens)),
        "min_tokens": int(min(tokens)),
        "max_tokens": int(max(tokens)),
        "questions_per_sample": len(positive.records) / n,
        "length_split": split,
    }
    curves = {
        "dimensions": [
            {"arm": arm, "dimension": d, "value": metrics[arm][d]}
            for arm in (*MODELS, *(f"{m}_expected" for m in MODELS))
            for d in JUDGED
        ]
    }
    return {"metrics": metrics, "curves": curves, "info": info}


def plot_dimensions(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """Per-dimension accuracy of every simulated generator (mean over seeds; pixels, with the symbolic value as a
    black tick)."""
    from icml26._core.plots import ARM_COLOURS

    ok = [r for r in records if r["status"] == "ok"]
    width = 0.8 / len(MODELS)
    x = np.arange(len(JUDGED))
    for k, arm in enumerate(MODELS):
        vals = np.array([[r["metrics"][arm][d] for d in JUDGED] for r in ok])
        exp = np.array([[r["metrics"][f"{arm}_expected"][d] for d in JUDGED] for r in ok])
        pos = x + (k - (len(MODELS) - 1) / 2) * width
        ax.bar(pos, np.nanmean(vals, 0), width, color=ARM_COLOURS[k % len(ARM_COLOURS)], label=arm)
        ax.scatter(
            pos,
            np.nanmean(exp, 0),
            marker="_",
            color="black",
            s=40,
            label="symbolic (perfect judge)" if k == 0 else None,
        )
    ax.set_xticks(x, list(JUDGED), rotation=30, fontsize=7)
    ax.set_ylabel("accuracy (evaluator on pixels)")
    ax.set_ylim(0, 1.05)
    ax.set_title("per-dimension scores of every simulated generator (shown, not judged)", fontsize=8)
    ax.legend(title="generator (bars: mean over seeds)", fontsize=7, title_fontsize=7, ncol=2)


def plot_length(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """Overall score on short and long prompts, truncating generator against the oracle (mean +- sd over seeds)."""
    ok = [r for r in records if r["status"] == "ok"]
    arms = (
        ("truncating", "#0969da", "-", "o", "truncating (evaluator on pixels)"),
        ("truncating_expected", "#cf222e", "--", "x", "truncating, symbolic (perfect judge)"),
        ("oracle", "#6e7781", "-", "s", "oracle (evaluator on pixels)"),
    )
    for arm, colour, ls, marker, label in arms:
        v = np.array([[r["metrics"][f"{arm}_short"]["score"], r["metrics"][f"{arm}_long"]["score"]] for r in ok])
        sd = v.std(0) if len(v) > 1 else None
        ax.errorbar([0, 1], v.mean(0), yerr=sd, marker=marker, ls=ls, color=colour, label=label, capsize=2)
    ax.set_xticks([0, 1], ["short prompts (< 290 tokens)", "long prompts (>= 290 tokens)"])
    ax.legend(title="mean +- 1 sd over seeds", fontsize=7, title_fontsize=7)
    ax.set_ylabel("overall accuracy (all questions)")
    ax.set_ylim(0, 1.05)
    ax.set_title("score against prompt length (shown beside the judged metric)", fontsize=8)


def _with(plot: Any) -> Any:
    from icml26._core.plots import with_judged_metric

    return with_judged_metric(plot)


STUDY = profiles(
    smoke={"samples": 3, "size": 256, "tokens": [200, 380]},
    quick={"samples": 8, "size": 256, "tokens": [200, 380]},
    full={"samples": 100, "size": 256, "tokens": [200, 380]},
    seeds=(1, 3, 10),
    cell_seconds=(3, 6, 40),
)
_SHARED = dict(run=run_world, profiles=STUDY, direction="higher", unit="accuracy", revision=1)
QUICK = (
    "the quick profile (3 seeds x 8 samples) is a wiring check; the full profile (10 seeds x 100 = 1,000 samples, "
    "the notes' size, each rendered by 6 generators and as ground truth: 7,000 evaluated images) is the run of record"
)
SELECTIVITY = (
    "selectivity = (oracle - model) on the dimension the failure targets minus the largest (oracle - model) on the "
    "dimensions it must leave alone; margin 0.10 fixed before any run: the judge's own error on the oracle is a few "
    "points per dimension, so a targeted drop must clear the off-target drift by 10 points to count"
)


def _selectivity_claim(cid: str, mode: str, statement: str, figure: str) -> Claim:
    target, guarded = MODES[mode]
    return Claim(
        id=cid,
        statement=statement,
        metric=f"selectivity_{mode}",
        method="evaluator",
        reference=0.0,
        test="superiority",
        min_effect=0.10,
        paper_figure=figure,
        notes=f"{SELECTIVITY}; target {target}, guarded {', '.join(guarded)}; {QUICK}; {HARNESS}",
        plot=_with(plot_dimensions),
        **{**_SHARED, "unit": ""},  # a difference of two accuracy drops
    )


CARD = PaperCard(
    slug="detailmaster",
    title="DetailMaster",
    group="vision",
    api="icml26.vision.detailmaster.DetailMaster",
    extra="vision",
    summary="A long-prompt text-to-image benchmark: construction of long, detailed prompts (character attributes, "
    "structured locations, scene attributes, spatial/interactive relations) and the official evaluation workflow "
    "with pluggable generator, judge and detector, validated on a procedural world where the truth is known.",
    claims=(
        _selectivity_claim(
            "C1_leakage",
            "bag_of_words",
            "The evaluator detects attribute leakage: a generator that rebinds attributes among characters loses "
            "attribute accuracy, while presence, location, scene and relation scores stay put.",
            "diffusion models suffer from attribute leakage under detail-intensive conditions (abstract; ~50% "
            "attribute binding for the best models)",
        ),
        _selectivity_claim(
            "C1_location",
            "position_agnostic",
            "The evaluator detects ignored locations: a position-agnostic generator loses location accuracy, while "
            "presence, attribute and scene scores stay put.",
            "structured character locations are one of the four dimensions (abstract; no number)",
        ),
        _selectivity_claim(
            "C1_presence",
            "dropping",
            "The evaluator detects dropped characters: presence falls, scene scores stay put.",
            None,
        ),
        _selectivity_claim(
            "C1_relation",
            "relation_swap",
            "The evaluator detects swapped relations: relation accuracy falls, while presence, attribute and scene "
            "scores stay put.",
            "spatial relations about 50% for state-of-the-art models (abstract/notes)",
        ),
        Claim(
            id="C1_leak_rate",
            statement="The measured leakage rate of the attribute-shuffling generator matches the leakage it "
            "realised (symbolic, from its plan) within 5 points.",
            metric="leakage",
            method="bag_of_words",
            baselines=("bag_of_words_expected",),
            test="equivalence",
            min_effect=0.05,
            paper_figure=None,
            notes="the notes' expected result: measured leakage ~ the injected rate; the injected shuffle rate is "
            "0.5 per attribute key, the realised rate (values that actually moved) is lower and is the reference; "
            f"margin 0.05 from the notes, fixed before any run; leakage is our operationalisation (see the "
            f"evaluator); {QUICK}; {HARNESS}",
            plot=_with(plot_dimensions),
            **_SHARED,
        ),
        Claim(
            id="C2_length",
            statement="Scores fall with prompt length for a generator whose text encoder truncates at 77 tokens "
            "(short prompts score higher than long ones by at least 5 points), as the paper reports for weak "
            "encoders.",
            metric="score",
            method="truncating_short",
            baselines=("truncating_long",),
            test="superiority",
            min_effect=0.05,
            paper_figure="weak encoders struggle with long prompts; scores degrade as prompts get longer",
            notes="short/long split at the middle of the token range (290 clip-pretok tokens; prompts drawn in "
            f"[200, 380]); margin 5 points fixed before any run; {QUICK}; {HARNESS}",
            plot=_with(plot_length),
            **_SHARED,
        ),
        Claim(
            id="C2_analytic",
            statement="The evaluator's score of the truncating generator lies within 5 points of the analytic "
            "value (the facts stated in the first 75 text tokens, scored symbolically).",
            metric="score",
            method="truncating",
            baselines=("truncating_expected",),
            test="equivalence",
            min_effect=0.05,
            paper_figure=None,
            notes=f"the notes' +-0.05; fixed before any run; {QUICK}; {HARNESS}",
            plot=_with(plot_length),
            **_SHARED,
        ),
        Claim(
            id="C3_judge",
            statement="The classical judge agrees with the rendered ground truth: balanced accuracy (true questions "
            "and negated questions) within 5 points of perfect.",
            metric="accuracy",
            method="judge",
            reference=1.0,
            test="noninferiority",
            min_effect=0.05,
            paper_figure=None,
            notes="judge-vs-truth agreement on renders of the ground-truth scenes; negated questions replace every "
            f"attribute, location, scene value and relation by a false one; margin fixed before any run; {QUICK}; "
            f"{HARNESS}",
            **_SHARED,
        ),
        Claim(
            id="C3_oracle",
            statement="The oracle generator scores at least 0.98 on every dimension (the notes' expected result).",
            metric="min_dimension",
            method="oracle",
            reference=1.0,
            test="noninferiority",
            min_effect=0.02,
            paper_figure=None,
            notes="the minimum over the seven dimensions of the oracle's score; margin 0.02 from the notes; a "
            "30-sample pilot of the wiring (before the profiles were set) showed relations near 0.95, and the "
            f"margin was kept at the notes' value; {QUICK}; {HARNESS}",
            **_SHARED,
        ),
    ),
)
