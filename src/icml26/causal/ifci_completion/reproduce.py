"""Reproduction of the I-FCI completion claims with an exact m-separation oracle (deterministic: no sampling).

One cell runs every method on the *same* graphs (each with a fresh oracle) and scores them against the exact
I-PAG: brute force at n = 4 (all 1,135 classes with one target ``S_F = {X0}``, and all 2,850 classes with two
targets, X0 and X1, i.e. three F-nodes), the enumeration completion at n = 5-6 (two soft interventions, 1-2
targets each; the completion is validated against brute force on every brute-force class in the same cell).
Methods: ``ifci`` (Kocaoglu et al. 2019: PC-style adjacency search and possible-D-SEP over ``V u F``, Zhang's
rules interleaved with F-rules 8 and 9), ``ifci_rules`` (plus the paper's additional local rules as we read them,
F-host and F-anc: the abstract does not state them), ``completion`` (enumeration, method (i)), and
``causallearn_fci`` (causal-learn 0.1.4.8 FCI with F exogeneity as background knowledge, the baseline a user
would pick).

What the runs show beyond the claims: on both n = 4 brute-force families I-FCI with the rules interleaved to a
fixed point is already exact on every class; causal-learn is not: for one, its loop runs R4 only in passes where
R1-R3 changed something (the spec's candidate fixture is such a case), and it applies background knowledge once.
On one n = 6 graph it even sets a tail that is not compelled (``study.FIXTURE_CAUSALLEARN_UNSOUND``, pinned by a
test).

- C1*: soundness -- zero wrong marks (deterministic; the margin 0.5 means "fewer than one wrong mark"). A mark
  is wrong if it differs from the truth or from the generating graph's I-MAG (a class member): at n = 5-6 the
  truth is the completion of I-FCI's own output, which keeps I-FCI's marks, so for C1 only the brute-force
  classes and the generating-MAG check can catch an I-FCI error there.
- C2*: completeness gap -- circles summed over the cell's graphs; I-FCI leaves circles the class compels.
- C3: cost of the local rules against I-FCI alone, judged in deterministic work units (m-separation evaluations
  + adjacency scans) so that the verdict does not depend on the CPU; the cell also times both (interleaved
  medians, whole pipeline and orientation phase) and the card reports that wall-clock overhead beside the
  work-unit one. C3b: the rules against the enumeration, in work units.
- C4: finite samples (Fisher-z tests on linear-Gaussian SEMs with mean-shift soft interventions, n = 5): the
  rules must not add wrong marks to I-FCI (our addition; seeds are independent replications).
"""

from __future__ import annotations

from typing import Any

from icml26._core import Cell, Claim, PaperCard, profiles
from icml26._core.plots import METHOD_COLOUR, arm_style, decision_bounds, reference_line, with_judged_metric

METHOD_LABELS = {
    "causallearn_fci": "causallearn_fci (FCI + BK)",
    "ifci": "ifci (I-FCI)",
    "ifci_rules": "ifci_rules (+ new rules)",
    "completion": "completion (enumeration)",
}


def run_oracle_study(cell: Cell) -> dict[str, Any]:
    """All methods on the profile's graphs; metrics per method are totals over the graphs."""
    from icml26.causal.ifci_completion.study import METHODS, cases_from_setting, evaluate

    cases = cases_from_setting({**cell.setting, "seed": cell.seed})
    tot = evaluate(cases, baseline=True, max_circles=int(cell.get("max_circles", 14)))
    metrics: dict[str, dict[str, float]] = {
        m: {"circles": tot.circles[m], "wrong_marks": tot.wrong[m], "incomplete_graphs": tot.incomplete[m]}
        for m in METHODS
    }
    for m, w in tot.work.items():
        metrics[m]["work_ops"] = w
    metrics["completion"]["bruteforce_mismatches"] = tot.completion_vs_bruteforce_mismatch
    metrics["truth"] = {"circles": tot.circles["truth"]}
    families: dict[str, int] = {}
    for row in tot.rows:
        families[row["family"]] = families.get(row["family"], 0) + 1
    return {
        "metrics": metrics,
        "curves": {"graphs": tot.rows},
        "info": {
            "graphs": tot.graphs,
            "graphs_per_family": families,
            "skipped_over_circle_cap": tot.skipped,
            "bruteforce_graphs": tot.bruteforce_graphs,
            "weak_input_completions_skipped_over_cap": tot.weak_completion_skipped,
            "truth_marks_contradicting_generating_mag": tot.truth_vs_generating_mag,
            "graphs_where_ifci_is_incomplete": tot.gap_graphs,
            "of_which_closed_by_new_rules": tot.gap_closed_by_rules,
            "share_of_gap_circles_closed_by_rules": (
                (tot.circles["ifci"] - tot.circles["ifci_rules"]) / (tot.circles["ifci"] - tot.circles["truth"])
                if tot.circles["ifci"] > tot.circles["truth"]
                else None
            ),
        },
    }


def run_cost_study(cell: Cell) -> dict[str, Any]:
    """I-FCI and I-FCI + rules on the profile's graphs: work units (judged) and, if ``timing_repeats``, wall clock.

    Work units are deterministic (m-separation evaluations + adjacency scans, fresh oracle per run). Wall clock
    is measured per family of graphs with interleaved medians (warm-up, then the two arms alternate
    ``timing_repeats`` times), end to end and for the orientation phase alone (the rules touch only that
    phase). It depends on the CPU, so it is reported beside the verdict, not judged; the smoke profile does not
    time (a forced rerun must give an identical card).
    """
    from icml26._core.bench import interleaved_medians
    from icml26.causal.ifci_completion.ifci import IFCI_RULES, ifci, learn_skeleton, oracle_from_admg
    from icml26.causal.ifci_completion.orientation import orient
    from icml26.causal.ifci_completion.rules import NEW_RULES
    from icml26.causal.ifci_completion.study import _counted, cases_from_setting

    cases = cases_from_setting({**cell.setting, "seed": cell.seed})
    by_family: dict[str, dict[str, Any]] = {}
    groups: dict[str, list[Any]] = {}
    for case in cases:
        _, w_ifci = _counted(lambda c=case: ifci(oracle_from_admg(c.admg, c.targets)))
        _, w_rules = _counted(lambda c=case: ifci(oracle_from_admg(c.admg, c.targets), new_rules=True))
        fam = by_family.setdefault(case.family, {"graphs": 0, "ifci_work": 0, "ifci_rules_work": 0})
        fam["graphs"] += 1
        fam["ifci_work"] += w_ifci
        fam["ifci_rules_work"] += w_rules
        groups.setdefault(case.family, []).append(case)
    work = {m: sum(f[f"{m}_work"] for f in by_family.values()) for m in ("ifci", "ifci_rules")}
    repeats = int(cell.get("timing_repeats", 0))
    totals = {"ifci_s": 0.0, "ifci_rules_s": 0.0, "orient_s": 0.0, "orient_rules_s": 0.0}
    for name, group in groups.items():
        fam = by_family[name]
        fam["work_overhead"] = fam["ifci_rules_work"] / fam["ifci_work"] - 1
        if not repeats:
            continue
        whole = interleaved_medians(
            {
                "ifci_s": lambda g=group: [ifci(oracle_from_admg(c.admg, c.targets)) for c in g],
                "ifci_rules_s": lambda g=group: [ifci(oracle_from_admg(c.admg, c.targets), new_rules=True) for c in g],
            },
            repeat=repeats,
        )
        skeletons = [learn_skeleton(oracle_from_admg(c.admg, c.targets)) for c in group]
        phase = interleaved_medians(
            {
                "orient_s": lambda s=skeletons: [orient(k.copy(), IFCI_RULES) for k in s],
                "orient_rules_s": lambda s=skeletons: [orient(k.copy(), (*IFCI_RULES, *NEW_RULES)) for k in s],
            },
            repeat=repeats,
        )
        for key, value in (*whole.items(), *phase.items()):
            fam[key] = value
            totals[key] += value
        fam["wall_overhead"] = whole["ifci_rules_s"] / whole["ifci_s"] - 1
        fam["orient_wall_overhead"] = phase["orient_rules_s"] / phase["orient_s"] - 1
    info: dict[str, Any] = {
        "graphs": len(cases),
        "work_overhead": work["ifci_rules"] / work["ifci"] - 1,
        "timing_repeats": repeats,
        "by_family": by_family,
    }
    if repeats:
        info["wall_overhead"] = totals["ifci_rules_s"] / totals["ifci_s"] - 1
        info["orient_wall_overhead"] = totals["orient_rules_s"] / totals["orient_s"] - 1
        info["wall_seconds"] = totals
    return {
        "metrics": {"ifci": {"work_ops": work["ifci"]}, "ifci_rules": {"work_ops": work["ifci_rules"]}},
        "info": info,
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


def _family_key(name: str) -> tuple[int, str]:
    return (0 if name == "fixtures" else 1 if "brute force" in name else 2, name)


def _short_family(name: str) -> str:
    """Tick label: "n=4, 2 targets (brute force)" -> "n=4 BF\n2 targets"."""
    if "(brute force)" in name:
        size, rest = name.replace(" (brute force)", "").split(", ")
        return f"{size} BF\n{rest}"
    return name


def _graph_rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [row for r in records if r["status"] == "ok" for row in (r.get("curves") or {}).get("graphs", [])]


def plot_circles(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """Circles each method leaves beyond the exact I-PAG (0 = complete), per family of graphs."""
    import numpy as np

    rows = _graph_rows(records)
    families = sorted({row["family"] for row in rows}, key=_family_key)
    arms = ("causallearn_fci", "ifci", "ifci_rules", "completion")
    names = [m for m in arms if any(f"{m}_circles" in r for r in rows)]
    width = 0.8 / len(names)
    x = np.arange(len(families))
    for i, name in enumerate(names):
        excess = [
            sum(row[f"{name}_circles"] - row["truth_circles"] for row in rows if row["family"] == f) for f in families
        ]
        style = arm_style(card, name, index=i)
        ax.bar(x + (i - (len(names) - 1) / 2) * width, excess, width, color=style["color"], label=METHOD_LABELS[name])
    reference_line(ax, 0.0, "truth (exact I-PAG): 0")
    ax.set_yscale("symlog", linthresh=1.0)  # the baseline's hundreds and the rules' handful on one axis
    ax.set_xticks(x, [_short_family(f) for f in families], fontsize=7)
    ax.set_ylabel("excess circles over the exact I-PAG (symlog)")
    ax.set_title("circles beyond the truth per family (BF = brute force)", fontsize=8)
    ax.legend()


def plot_wrong_marks(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """Wrong marks per family and arm (what C1/C1r are judged on, summed over families), reference and bound."""
    import numpy as np

    rows = _graph_rows(records)
    families = sorted({row["family"] for row in rows}, key=_family_key)
    arms = list(dict.fromkeys([card["claim"]["method"], "ifci", "ifci_rules", "completion", "causallearn_fci"]))
    width = 0.8 / len(arms)
    x = np.arange(len(families))
    for i, name in enumerate(arms):
        vals = [sum(row.get(f"{name}_wrong", 0) for row in rows if row["family"] == f) for f in families]
        pos = x + (i - (len(arms) - 1) / 2) * width
        ax.bar(pos, vals, width, label=METHOD_LABELS[name], **_bar(card, name, i))
        ax.plot(pos, vals, "o", ms=3.5, **_bar(card, name, i))  # a marker, so that a zero shows
    decision_bounds(ax, card)
    ax.set_ylim(-0.05, max(1.0, ax.get_ylim()[1]))
    ax.set_xticks(x, [_short_family(f) for f in families], fontsize=7)
    ax.set_ylabel("wrong marks (summed over graphs), lower is better")
    ax.set_title(
        f"judged: {card['claim']['method']}'s wrong marks (all families summed); other arms for context", fontsize=8
    )
    ax.legend()


def plot_bruteforce_mismatches(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """Classes where the completion differs from brute force, per brute-force family and input (judged: the sum)."""
    import numpy as np

    rows = [row for row in _graph_rows(records) if "completion_mismatch" in row]
    families = sorted({row["family"] for row in rows}, key=_family_key)
    inputs = (
        ("completion_mismatch", "from I-FCI's output", METHOD_COLOUR),
        ("weak_input_completion_mismatch", "from plain FCI + F -> Y", "#8250df"),
    )
    width = 0.8 / len(inputs)
    x = np.arange(len(families))
    for i, (key, label, colour) in enumerate(inputs):
        vals = [sum(row.get(key, 0) for row in rows if row["family"] == f) for f in families]
        ax.bar(x + (i - 0.5) * width, vals, width, color=colour, label=f"completion {label}")
        ax.plot(x + (i - 0.5) * width, vals, "o", ms=3.5, color=colour)  # a marker, so that a zero shows
    decision_bounds(ax, card)
    ax.set_ylim(-0.05, max(1.0, ax.get_ylim()[1]))
    counts = {f: sum(row["family"] == f for row in rows) for f in families}
    ticks = [f"{_short_family(f)}\n{counts[f]} class{'es' if counts[f] > 1 else ''}" for f in families]
    ax.set_xticks(x, ticks, fontsize=7)
    ax.set_ylabel("classes unlike brute force, lower is better")
    ax.set_title("judged: mismatches summed over families and inputs", fontsize=8)
    ax.legend()


def plot_cost_overheads(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """Overhead of the new rules over I-FCI per family: work units (judged) and wall clock (reported)."""
    import numpy as np

    ok = [r for r in records if r["status"] == "ok"]
    if not ok:
        return
    fams = ok[0]["info"]["by_family"]
    names = sorted(fams, key=_family_key)
    kinds = [("work_overhead", "work units (judged)", "#0969da")]
    if ok[0]["info"].get("timing_repeats"):
        kinds += [
            ("wall_overhead", "wall clock, whole I-FCI", "#bc4c00"),
            ("orient_wall_overhead", "wall clock, orientation only", "#8250df"),
        ]
    width = 0.8 / len(kinds)
    x = np.arange(len(names))
    for i, (key, label, colour) in enumerate(kinds):
        vals = [100 * fams[f].get(key, float("nan")) for f in names]
        ax.bar(x + (i - (len(kinds) - 1) / 2) * width, vals, width, color=colour, label=label)
    margin = 100 * float(card["claim"]["min_effect"])
    ax.axhline(margin, color="0.3", ls=":", lw=1.0, label=f"bound: +{margin:g}% (margin)")
    reference_line(ax, 0.0, "no overhead")
    ax.set_xticks(x, [_short_family(f) for f in names], fontsize=7)
    ax.set_ylabel("I-FCI + rules over I-FCI (%)")
    timed = "wall clock: medians of interleaved runs" if len(kinds) > 1 else "wall clock not timed in this profile"
    ax.set_title(f"overhead of the new rules per family ({timed})", fontsize=8)
    ax.legend()


def plot_work_by_family(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """Work units per family: the rules against the enumeration completion (log scale)."""
    import numpy as np

    rows = _graph_rows(records)
    families = sorted({row["family"] for row in rows}, key=_family_key)
    names = [card["claim"]["method"], *card["claim"]["baselines"], "ifci"]
    names = list(dict.fromkeys(names))
    width = 0.8 / len(names)
    x = np.arange(len(families))
    for i, name in enumerate(names):
        vals = [sum(row.get(f"{name}_work", 0) for row in rows if row["family"] == f) for f in families]
        ax.bar(x + (i - (len(names) - 1) / 2) * width, vals, width, label=METHOD_LABELS[name], **_bar(card, name, i))
    ax.set_yscale("log")
    ax.set_xticks(x, [_short_family(f) for f in families], fontsize=7)
    ax.set_ylabel("work units, summed over graphs (log)")
    ax.set_title("work per family", fontsize=8)
    ax.legend()


def _bar(card: dict[str, Any], name: str, index: int) -> dict[str, Any]:
    return {"color": arm_style(card, name, index=index)["color"]}


# Graph sets. smoke: seconds; quick: about 30 s of the quick profile's minute (with C4's 3 cells, about 40 s of
# cell time); full: the reproduction of record.
STUDY = profiles(
    smoke={"fixtures": True, "n4": 12, "n3_two": 20, "n5": 4},
    quick={"fixtures": True, "n4": 160, "n3_two": "all", "n5": 25},
    full={"fixtures": True, "n4": "all", "n4_two": "all", "n5": 300, "n6": 100},
    seeds=(1, 1, 1),
    cell_seconds=(4.0, 20.0, 300.0),
)
COST = profiles(
    smoke={"fixtures": True, "n4": 12, "n5": 4, "timing_repeats": 0},
    quick={"fixtures": True, "n4": 100, "n5": 25, "n6": 10, "timing_repeats": 3},
    full={"fixtures": True, "n4": "all", "n5": 300, "n6": 100, "n7": 50, "timing_repeats": 5},
    seeds=(1, 1, 1),
    cell_seconds=(0.5, 10.0, 120.0),
)
_ORACLE = dict(run=run_oracle_study, profiles=STUDY, deterministic=True, revision=3)
_SOUND = dict(
    metric="wrong_marks",
    direction="lower",
    reference=0.0,
    test="noninferiority",
    min_effect=0.5,
    unit="marks",
    plot=plot_wrong_marks,
    **_ORACLE,
)
_CIRCLES = dict(
    metric="circles",
    direction="lower",
    test="superiority",
    min_effect=1.0,
    unit="circles",
    plot=with_judged_metric(plot_circles),
    **_ORACLE,
)
_RULES_READING = (
    "F-host and F-anc stand for the paper's additional local rules, as we read them: the abstract does not state "
    "the rules, so these are our reading of them (derivation and soundness argument in rules.py), validated "
    "against the enumeration completion"
)

CARD = PaperCard(
    slug="ifci_completion",
    title="I-FCI completion",
    group="causal",
    api="icml26.causal.ifci_completion.ifci",
    extra="causal",
    summary="I-FCI from soft interventions with known targets, its enumeration completion and new local rules, "
    "scored against the exact I-PAG (brute force at n = 4 with one and with two targets).",
    claims=(
        Claim(
            id="C1",
            statement="The FCI-inspired learner (I-FCI) by Kocaoglu et al. (2019) is sound: no wrong mark against "
            "the exact I-PAG.",
            method="ifci",
            paper_figure="sound (theorem)",
            notes="deterministic (exact oracle, one run decides); I-FCI's adjacency search is PC-style with "
            "possible-D-SEP (identical PAGs to the exhaustive search on every n <= 6 test family)",
            **_SOUND,
        ),
        Claim(
            id="C1r",
            statement="The additional local orientation rules (the paper's, as we read them: F-host and F-anc, "
            "generalisations of Rule 9) are sound: no wrong mark.",
            method="ifci_rules",
            paper_figure="sound (theorem; the paper's rules, which the abstract does not state)",
            notes=f"deterministic; {_RULES_READING}; at n = 5-6 checked against the completion and the generating "
            "I-MAG",
            **_SOUND,
        ),
        Claim(
            id="C1c",
            statement="The enumeration-based completion is sound and complete: it equals the brute-force I-PAG on "
            "every n = 4 class, with one target and with two (three F-nodes), from I-FCI's output and from a "
            "weaker input (plain FCI + F -> Y only).",
            metric="bruteforce_mismatches",
            direction="lower",
            method="completion",
            reference=0.0,
            test="noninferiority",
            min_effect=0.5,
            unit="classes",
            paper_figure="sound and theoretically complete (theorem)",
            notes="deterministic; the full profile checks 1,135 one-target and 2,850 two-target classes (each "
            "twice: two inputs); quick checks 160 one-target classes and the 81 two-target classes at n = 3; the "
            "realisability check inside is exact (no cap on bows)",
            plot=plot_bruteforce_mismatches,
            **_ORACLE,
        ),
        Claim(
            id="C2",
            statement="I-FCI is not complete: it may output circle endpoints that are nevertheless compelled by "
            "the interventional equivalence class (the completion leaves fewer circles).",
            method="completion",
            baselines=("ifci",),
            paper_figure="not complete (counterexample)",
            notes="deterministic; on both n = 4 brute-force families the gap is empty; it appears with two "
            "interventions at n = 5-6, where the truth is the enumeration completion, validated against brute "
            "force at n = 4 (and n = 3)",
            **_CIRCLES,
        ),
        Claim(
            id="C2r",
            statement="The additional local orientation rules provably tighten I-FCI (fewer circles).",
            method="ifci_rules",
            baselines=("ifci",),
            paper_figure="tighten I-FCI (theorem; the paper's rules as we read them, the abstract does not give them)",
            notes=f"deterministic; {_RULES_READING}; the gap exists only at n = 5-6 (two interventions), where "
            "the truth is the enumeration completion",
            **_CIRCLES,
        ),
        Claim(
            id="C2b",
            statement="I-FCI with the F-rules interleaved leaves fewer circles than causal-learn's FCI with F "
            "exogeneity as background knowledge (applied once, up front).",
            method="ifci",
            baselines=("causallearn_fci",),
            paper_figure=None,
            notes="deterministic; a check of the baseline a user would pick, not a claim of the abstract",
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
            notes="deterministic verdict on a proxy for the asymptotic claim: work = m-separation evaluations + "
            "adjacency-scan calls, which do not weigh the path searches inside the scans; the wall-clock overhead "
            "(CPU-dependent, interleaved medians, whole I-FCI and orientation phase) is reported beside it in "
            "the cell's info and the plot, not judged (smoke does not time); the 20% margin dates from before "
            "the PC-style skeleton search, which cut I-FCI's m-separation work and so raised the rules' share",
            run=run_cost_study,
            profiles=COST,
            deterministic=True,
            revision=3,
            plot=with_judged_metric(plot_cost_overheads),
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
            notes="deterministic; work units as in C3",
            plot=with_judged_metric(plot_work_by_family),
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
            "n = 5, two interventions; margin fixed before any run; seeds are independent replications",
            run=run_finite_sample,
            revision=2,
            profiles=profiles(
                {"n": 5, "graphs": 5, "samples": 2000, "alpha": 0.01},
                {"n": 5, "graphs": 20, "samples": 5000, "alpha": 0.01},
                {"n": 5, "graphs": 40, "samples": 5000, "alpha": 0.01},
                seeds=(1, 3, 5),
                cell_seconds=(0.3, 2.5, 4.0),
            ),
        ),
    ),
)
