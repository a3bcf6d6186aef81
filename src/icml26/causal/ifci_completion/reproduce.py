"""Reproduction of the I-FCI completion claims with an exact m-separation oracle (deterministic: no sampling).

One cell runs every method on the *same* graphs (each with a fresh oracle) and scores them against the exact
I-PAG: brute force at n = 4 (all 1,135 classes with ``S_F = {X0}``), the enumeration completion at n = 5-6 (two
soft interventions, 1-2 targets each; the completion is validated against brute force on every n = 4 class in
the same cell). Methods: ``ifci`` (Kocaoglu et al. 2019, Zhang's rules interleaved with F-rules 8 and 9),
``ifci_rules`` (plus our reading of the paper's local rules: F-host and F-anc, two generalisations of Rule 9),
``completion`` (enumeration, method (i)), and ``causallearn_fci`` (causal-learn 0.1.4.8 FCI with F exogeneity
as background knowledge, the baseline a user would pick).

What the runs show beyond the claims: at n = 4 with one target, I-FCI with the rules interleaved to a fixed point
is already exact on every class; causal-learn is not: for one, its loop runs R4 only in passes where R1-R3
changed something (the spec's candidate fixture is such a case), and it applies background knowledge once. On
one n = 6 graph it even sets a tail that is not compelled (``study.FIXTURE_CAUSALLEARN_UNSOUND``, pinned by a test).

- C1*: soundness -- zero wrong marks (deterministic; the margin 0.5 means "fewer than one wrong mark"). A mark
  is wrong if it differs from the truth or from the generating graph's I-MAG (a class member): at n = 5-6 the
  truth is the completion of I-FCI's own output, which keeps I-FCI's marks, so for C1 only the brute-force
  classes and the generating-MAG check can catch an I-FCI error there.
- C2*: completeness gap -- circles summed over the cell's graphs; I-FCI leaves circles the class compels.
- C3*: cost of the local rules against I-FCI alone and against the enumeration, in deterministic work units
  (m-separation evaluations + adjacency scans), so that cells stay pure; wall-clock times, including
  causal-learn's, are measured by ``benchmarks/bench_ifci_completion.py``.

- C4: finite samples (Fisher-z tests on linear-Gaussian SEMs with mean-shift soft interventions, n = 5): the
  rules must not add wrong marks to I-FCI (our addition; seeds are independent replications).
"""

from __future__ import annotations

from typing import Any

from icml26._core import Cell, Claim, PaperCard, profiles


def run_oracle_study(cell: Cell) -> dict[str, Any]:
    """All methods on the profile's graphs; metrics per method are totals over the graphs."""
    from icml26.causal.ifci_completion.study import METHODS, evaluate, fixture_cases, n4_cases, random_cases

    cases = []
    if cell.get("fixtures", True):
        cases += fixture_cases()
    n4 = cell.get("n4", 0)
    if n4:
        cases += n4_cases(None if n4 == "all" else int(n4))
    for n in (5, 6):
        count = int(cell.get(f"n{n}", 0))
        if count:
            cases += random_cases(n, count, cell.seed)
    tot = evaluate(cases, baseline=True, max_circles=int(cell.get("max_circles", 14)))
    metrics: dict[str, dict[str, float]] = {
        m: {"circles": tot.circles[m], "wrong_marks": tot.wrong[m], "incomplete_graphs": tot.incomplete[m]}
        for m in METHODS
    }
    for m, w in tot.work.items():
        metrics[m]["work_ops"] = w
    metrics["completion"]["bruteforce_mismatches"] = tot.completion_vs_bruteforce_mismatch
    metrics["truth"] = {"circles": tot.circles["truth"]}
    return {
        "metrics": metrics,
        "curves": {"graphs": tot.rows},
        "info": {
            "graphs": tot.graphs,
            "skipped_over_circle_cap": tot.skipped,
            "bruteforce_graphs": tot.bruteforce_graphs,
            "weak_input_completions_skipped_over_cap": tot.weak_completion_skipped,
            "truth_marks_contradicting_generating_mag": tot.truth_vs_generating_mag,
            "realisability_checks_with_bows_truncated": tot.bows_truncated,
            "graphs_where_ifci_is_incomplete": tot.gap_graphs,
            "of_which_closed_by_new_rules": tot.gap_closed_by_rules,
            "share_of_gap_circles_closed_by_rules": (
                (tot.circles["ifci"] - tot.circles["ifci_rules"]) / (tot.circles["ifci"] - tot.circles["truth"])
                if tot.circles["ifci"] > tot.circles["truth"]
                else None
            ),
        },
    }


def run_finite_sample(cell: Cell) -> dict[str, Any]:
    """I-FCI and I-FCI + rules on Fisher-z tests (linear-Gaussian SEMs, mean-shift soft interventions).

    Truth per graph: the enumeration completion of oracle I-FCI (graphs over the circle cap are skipped). Rules
    that disagree on noisy data keep the first orientation (``conflicts="keep"``).
    """

    from icml26.causal.ifci_completion.completion import complete_by_enumeration
    from icml26.causal.ifci_completion.data import FisherZOracle, simulate_linear_sem
    from icml26.causal.ifci_completion.ifci import ifci, oracle_from_admg
    from icml26.causal.ifci_completion.random_graphs import random_admg, random_targets
    from icml26.causal.ifci_completion.study import wrong_marks

    rng = cell.rng()
    n, graphs, samples, alpha = int(cell["n"]), int(cell["graphs"]), int(cell["samples"]), float(cell["alpha"])
    totals = {m: {"wrong": 0, "correct": 0, "skeleton_errors": 0} for m in ("ifci", "ifci_rules")}
    used = skipped = 0
    for _ in range(graphs):
        g = random_admg(n, rng)
        targets = random_targets(n, rng)
        truth, report = complete_by_enumeration(ifci(oracle_from_admg(g, targets)))
        if report.skipped:
            skipped += 1
            continue
        used += 1
        data = simulate_linear_sem(g, targets, samples, rng)
        envs = [frozenset()] + [frozenset(t) for t in targets]
        for name, new_rules in (("ifci", False), ("ifci_rules", True)):
            out = ifci(FisherZOracle(data, envs, alpha=alpha), new_rules=new_rules, conflicts="keep")
            totals[name]["wrong"] += wrong_marks(out.marks, truth.marks)
            totals[name]["correct"] += int(((out.marks == truth.marks) & (truth.marks > 1)).sum())
            totals[name]["skeleton_errors"] += int(((out.marks != 0) != (truth.marks != 0)).sum() // 2)
    per = max(used, 1)
    metrics = {
        m: {
            "wrong_marks_per_graph": t["wrong"] / per,
            "correct_marks_per_graph": t["correct"] / per,
            "skeleton_errors_per_graph": t["skeleton_errors"] / per,
        }
        for m, t in totals.items()
    }
    return {"metrics": metrics, "info": {"graphs": used, "skipped_over_circle_cap": skipped, "seed": cell.seed}}


def plot_circles(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """Circles per method, by number of observed nodes, against the truth."""
    import numpy as np

    rows = [row for r in records if r["status"] == "ok" for row in r["curves"]["graphs"]]
    sizes = sorted({row["n"] for row in rows})
    names = ["causallearn_fci", "ifci", "ifci_rules", "completion", "truth"]
    width = 0.8 / len(names)
    for i, name in enumerate(names):
        key = f"{name}_circles"
        vals = [sum(row[key] for row in rows if row["n"] == n) for n in sizes]
        ax.bar(np.arange(len(sizes)) + i * width, vals, width, label=name)
    ax.set_xticks(np.arange(len(sizes)) + 0.4 - width / 2)
    ax.set_xticklabels([f"n = {n}" for n in sizes])
    ax.set_ylabel("circle marks, summed over graphs")
    ax.legend(fontsize=7)


STUDY = profiles(
    smoke={"fixtures": True, "n4": 12, "n5": 4},
    quick={"fixtures": True, "n4": "all", "n5": 50},
    full={"fixtures": True, "n4": "all", "n5": 300, "n6": 100},
    seeds=(1, 1, 1),
)
_ORACLE = dict(run=run_oracle_study, profiles=STUDY, deterministic=True, plot=plot_circles, revision=2)
_SOUND = dict(
    metric="wrong_marks",
    direction="lower",
    reference=0.0,
    test="noninferiority",
    min_effect=0.5,
    unit="marks",
    **_ORACLE,
)
_CIRCLES = dict(metric="circles", direction="lower", test="superiority", min_effect=1.0, unit="circles", **_ORACLE)

CARD = PaperCard(
    slug="ifci_completion",
    title="I-FCI completion",
    group="causal",
    api="icml26.causal.ifci_completion.ifci",
    extra="causal",
    summary="I-FCI from soft interventions with known targets, its enumeration completion and new local rules, "
    "scored against the exact I-PAG (brute force at n = 4).",
    claims=(
        Claim(
            id="C1",
            statement="The FCI-inspired learner (I-FCI) by Kocaoglu et al. (2019) is sound: no wrong mark against "
            "the exact I-PAG.",
            method="ifci",
            paper_figure="sound (theorem)",
            **_SOUND,
        ),
        Claim(
            id="C1r",
            statement="The additional local orientation rules (our reading: F-host and F-anc, generalisations of "
            "Rule 9) are sound: no wrong mark.",
            method="ifci_rules",
            paper_figure="sound (theorem)",
            notes="the paper's rules are not stated in the abstract; ours are a documented reading (soundness "
            "argued in rules.py); at n = 5-6 checked against the completion and the generating I-MAG",
            **_SOUND,
        ),
        Claim(
            id="C1c",
            statement="The enumeration-based completion is sound and complete: it equals the brute-force I-PAG on "
            "every n = 4 class, from I-FCI's output and from a weaker input (plain FCI + F -> Y only).",
            metric="bruteforce_mismatches",
            direction="lower",
            method="completion",
            reference=0.0,
            test="noninferiority",
            min_effect=0.5,
            unit="classes",
            paper_figure="sound and theoretically complete (theorem)",
            **_ORACLE,
        ),
        Claim(
            id="C2",
            statement="I-FCI is not complete: it may output circle endpoints that are nevertheless compelled by "
            "the interventional equivalence class (the completion leaves fewer circles).",
            method="completion",
            baselines=("ifci",),
            paper_figure="not complete (counterexample)",
            notes="at n = 4 with one target the gap is empty; it appears with two interventions at n = 5-6, "
            "where the truth is the enumeration completion, validated against brute force only at n = 4 (one "
            "F-node, S_F = {X0})",
            **_CIRCLES,
        ),
        Claim(
            id="C2r",
            statement="The additional local orientation rules provably tighten I-FCI (fewer circles).",
            method="ifci_rules",
            baselines=("ifci",),
            paper_figure="tighten I-FCI (theorem)",
            notes="the gap exists only at n = 5-6 (two interventions), where the truth is the enumeration "
            "completion, validated against brute force only at n = 4",
            **_CIRCLES,
        ),
        Claim(
            id="C2b",
            statement="I-FCI with the F-rules interleaved leaves fewer circles than causal-learn's FCI with F "
            "exogeneity as background knowledge (applied once, up front).",
            method="ifci",
            baselines=("causallearn_fci",),
            paper_figure=None,
            notes="a check of the baseline a user would pick, not a claim of the abstract",
            **_CIRCLES,
        ),
        Claim(
            id="C3",
            statement="The local rules tighten I-FCI without increasing asymptotic complexity: I-FCI + rules does "
            "at most 20% more work than I-FCI alone.",
            metric="work_ops",
            direction="lower",
            method="ifci_rules",
            baselines=("ifci",),
            test="noninferiority",
            min_effect=0.2,
            relative=True,
            unit="ops",
            paper_figure="same asymptotic complexity",
            notes="a proxy for the asymptotic claim: work = m-separation evaluations + adjacency-scan calls "
            "(deterministic); the calls do not weigh the path searches inside them, so the rules' wall-clock "
            "overhead on the orientation phase can be larger than this ratio (benchmarks/bench_ifci_completion.py "
            "times it); the orientation phase is about half of I-FCI's work units at n = 5-6",
            **_ORACLE,
        ),
        Claim(
            id="C3b",
            statement="The enumeration completion's cost grows with the number of compatible MAGs: I-FCI + rules "
            "does at most half the work of I-FCI + enumeration.",
            metric="work_ops",
            direction="lower",
            method="ifci_rules",
            baselines=("completion",),
            test="superiority",
            min_effect=0.5,
            relative=True,
            unit="ops",
            paper_figure="worst-case cost depends on the number of MAGs",
            **_ORACLE,
        ),
        Claim(
            id="C4",
            statement="On finite samples (Fisher-z tests, linear-Gaussian SEMs with latents and mean-shift soft "
            "interventions), the new rules do not add errors to I-FCI (wrong marks per graph within 0.25).",
            metric="wrong_marks_per_graph",
            direction="lower",
            method="ifci_rules",
            baselines=("ifci",),
            test="noninferiority",
            min_effect=0.25,
            unit="marks",
            paper_figure=None,
            notes="our addition (the abstract makes no finite-sample claim); truth = completion of oracle I-FCI; "
            "n = 5, two interventions; margin fixed before any run",
            run=run_finite_sample,
            profiles=profiles(
                {"n": 5, "graphs": 5, "samples": 2000, "alpha": 0.01},
                {"n": 5, "graphs": 20, "samples": 5000, "alpha": 0.01},
                {"n": 5, "graphs": 40, "samples": 5000, "alpha": 0.01},
                seeds=(1, 3, 5),
            ),
        ),
    ),
)
