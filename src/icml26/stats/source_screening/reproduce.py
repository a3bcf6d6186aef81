"""Reproduction of source screening's claims: on a "good" collection with imbalanced heads, a screened subset of
the sources matches (AltMin) or beats (method of moments) all of them while using a fraction of the data; a random
subset of the same size does not; the error follows the minimax rate in the subset's diversity; and the same holds
on a semi-synthetic design built from real images.

Design (the paper file's protocol; every arm of a cell sees the same draw):

- Collection: T sources, n samples each, d features, k = 2, sigma = 0.5, unit heads; a fraction f of the heads on
  one axis of the head space and the rest on the other(s) (k = 3: split equally). x ~ N(0, I_d) (C1, C2), or rows
  of the whitened top-d principal components of scikit-learn's digits (C4, semi-synthetic: real, non-Gaussian
  features, planted subspace).
- Arms (metric: sin-theta distance to B*):
  mom_all / altmin_all: all T sources; mom_genie / altmin_genie: the genie subset (greedy rule on the true heads);
  mom_greedy / altmin_greedy: the data-driven subset (greedy rule on heads fitted in a pilot AltMin subspace on all
  sources; the library default); mom_greedy_mom_pilot: the same rule with a MoM pilot (shown, not judged);
  mom_random: a uniformly random subset of the same size as the greedy one.
  AltMin starts from the MoM estimate on the same sources (all arms).
- Diversity sweep (C3): 100 sources on axis 1 and m on axis 2, m in {10, 20, 40, 80} (nested collections drawn
  once per seed); lambda_2(sum_t w_t w_t^T) = m. Per seed, the least-squares slope of log sin-theta on log m.

Margins are fixed before any run: C1 and C4, 0.05 of sin-theta and C2 a 1.5x ratio (the paper file's assertions);
"matches" (C1b, C1c, C4b) means within 30% (the paper file's 1.3x AltMin tolerance, used for every "matches");
C3 +/- 0.15 around the minimax slope -1/2 (about halfway to the -0.78..-0.95 slope of MoM's rate without screening).
The abstract gives no numbers; the datasets of the paper's real-world study are not available offline.
"""

from __future__ import annotations

from typing import Any

from icml26._core import Cell, Claim, PaperCard, profiles

METRIC = "sin_theta"
MOM_ARMS = ("mom_all", "mom_genie", "mom_greedy", "mom_greedy_mom_pilot", "mom_random")
ALTMIN_ARMS = ("altmin_all", "altmin_genie", "altmin_greedy")
BASE = {"design": "gaussian", "T": 100, "n": 100, "d": 20, "k": 2, "f": 0.9, "noise": 0.5}
SWEEP_MINORITY = (10, 20, 40, 80)


def head_fractions(f: float, k: int) -> list[float]:
    """A fraction f of the heads on axis 0, the rest split equally over the other k - 1 axes."""
    return [f, *([(1.0 - f) / (k - 1)] * (k - 1))]


# ---------------------------------------------------------------------------------------------------- cells
def run_screening(cell: Cell) -> dict[str, Any]:
    """Every arm on one draw of the collection: sin-theta of MoM and AltMin on all, genie, greedy and random."""
    import numpy as np

    from icml26.stats.source_screening import (
        SharedSubspaceEstimator,
        digits_features,
        diversity_matrix,
        make_shared_subspace_sources,
        screen_sources,
        sin_theta_distance,
    )

    T, n, d, k, f = int(cell["T"]), int(cell["n"]), int(cell["d"]), int(cell["k"]), float(cell["f"])
    rng = cell.rng(by_setting=True)
    pool = digits_features(d) if cell["design"] == "digits" else None
    data = make_shared_subspace_sources(
        T, n, d, k, head_fractions(f, k), float(cell["noise"]), features=pool, random_state=rng
    )
    src = data.sources

    def fit(method: str, subset: Any = None) -> Any:
        return SharedSubspaceEstimator(k, method=method).fit(src if subset is None else src.subset(subset))

    mom_all, altmin_all = fit("mom"), fit("altmin")
    subsets = {
        "genie": screen_sources(src, k, "genie", heads=data.heads),
        "greedy": screen_sources(src, k, pilot=altmin_all),
        "greedy_mom_pilot": screen_sources(src, k, pilot=mom_all),
    }
    chosen = {name: r.indices for name, r in subsets.items()}
    chosen["random"] = rng.choice(T, size=subsets["greedy"].n_selected, replace=False)
    fits = {"mom_all": mom_all, "altmin_all": altmin_all}
    fits |= {f"mom_{name}": fit("mom", idx) for name, idx in chosen.items()}
    fits |= {f"altmin_{name}": fit("altmin", chosen[name]) for name in ("genie", "greedy")}
    metrics = {arm: {METRIC: float(sin_theta_distance(data.basis, est.basis_))} for arm, est in fits.items()}

    def true_lambda(idx: Any) -> float:
        return float(np.linalg.eigvalsh(diversity_matrix(data.heads, idx))[0])

    genie, greedy = set(chosen["genie"].tolist()), set(chosen["greedy"].tolist())
    return {
        "metrics": metrics,
        "info": {
            "n_selected": {name: len(idx) for name, idx in chosen.items()},
            "data_fraction": {name: float(len(idx) / T) for name, idx in chosen.items()},
            "lambda_k_true_diversity": {"all": true_lambda(np.arange(T))}
            | {name: true_lambda(idx) for name, idx in chosen.items()},
            "greedy_genie_jaccard": len(genie & greedy) / len(genie | greedy),
            "altmin_iterations": {arm: int(est.n_iter_) for arm, est in fits.items() if arm.startswith("altmin")},
        },
    }


def run_diversity(cell: Cell) -> dict[str, Any]:
    """Nested collections with m minority sources: sin-theta against lambda_k(sum w w^T) = m, and its log-log slope."""
    import numpy as np

    from icml26.stats.source_screening import (
        SharedSubspaceEstimator,
        make_shared_subspace_sources,
        screen_sources,
        sin_theta_distance,
    )

    majority, minority = int(cell["majority"]), tuple(int(m) for m in cell["minority"])
    k, T = 2, majority + max(minority)
    data = make_shared_subspace_sources(
        T,
        int(cell["n"]),
        int(cell["d"]),
        k,
        (majority / T, 1 - majority / T),
        float(cell["noise"]),
        random_state=cell.rng(by_setting=True),
    )
    errors: dict[str, list[float]] = {"mom_screened": [], "altmin_all": [], "mom_all": [], "altmin_screened": []}
    sizes = []
    for m in minority:  # a handful of nested collections; each fit is vectorised over its sources
        src = data.sources.subset(np.r_[np.arange(majority), majority + np.arange(m)])
        mom_all = SharedSubspaceEstimator(k, method="mom").fit(src)
        altmin_all = SharedSubspaceEstimator(k, method="altmin").fit(src)
        screened = screen_sources(src, k, pilot=altmin_all).select(src)
        fits = {
            "mom_screened": SharedSubspaceEstimator(k, method="mom").fit(screened),
            "altmin_all": altmin_all,
            "mom_all": mom_all,
            "altmin_screened": SharedSubspaceEstimator(k, method="altmin").fit(screened),
        }
        for arm, est in fits.items():
            errors[arm].append(float(sin_theta_distance(data.basis, est.basis_)))
        sizes.append(screened.n_sources)
    diversity = np.asarray(minority, dtype=float)  # lambda_2 of sum_t w_t w_t^T over the collection
    slopes = {arm: float(np.polyfit(np.log(diversity), np.log(e), 1)[0]) for arm, e in errors.items()}
    return {
        "metrics": {arm: {"slope": s} for arm, s in slopes.items()},
        "curves": {
            arm: [{"diversity": float(m), METRIC: e} for m, e in zip(minority, errs, strict=True)]
            for arm, errs in errors.items()
        },
        "info": {"screened_sizes": sizes, "collection_sizes": [majority + m for m in minority]},
    }


# ---------------------------------------------------------------------------------------------------- plots
def _case_label(setting: dict[str, Any]) -> str:
    """What sets a setting apart from the base collection (T = 100, n = 100, d = 20, k = 2, f = 0.9)."""
    changes = [f"{k}={v:g}" for k, v in setting.items() if k in BASE and k != "design" and v != BASE[k]]
    return ", ".join(changes) or "base (f=0.9)"


def plot_arms(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """Mean sin-theta (+/- 1 SE over seeds) of every arm at every setting; the greedy subset's data share below."""
    import numpy as np

    from icml26._core.plots import arm_style

    ok = [r for r in records if r["status"] == "ok"]
    settings: list[dict[str, Any]] = []
    for r in ok:
        if r["spec"]["setting"] not in settings:
            settings.append(r["spec"]["setting"])
    claim = card["claim"]
    shown = [claim["method"], *claim["baselines"]]
    arms = shown + [a for a in (*MOM_ARMS, *ALTMIN_ARMS) if a not in shown]
    x = np.arange(len(settings))
    extras = [a for a in arms if a not in shown]
    for i, arm in enumerate(arms):
        rows = [[r["metrics"][arm][METRIC] for r in ok if r["spec"]["setting"] == s] for s in settings]
        mean = np.array([np.mean(v) for v in rows])
        se = np.array([np.std(v, ddof=1) / np.sqrt(len(v)) if len(v) > 1 else 0.0 for v in rows])
        style = arm_style(card, arm, index=extras.index(arm) if arm in extras else None)
        if arm not in shown:
            style |= {"lw": 0.9, "alpha": 0.7}
        marker = "s" if arm.startswith("altmin") else "o"
        ls = "--" if arm.startswith("altmin") else "-"
        dodge = 0.04 * (i - (len(arms) - 1) / 2)  # arms side by side, not on top of each other
        ax.errorbar(x + dodge, mean, yerr=se, marker=marker, ms=4, capsize=2, ls=ls, label=arm, **style)
    share = [np.mean([r["info"]["data_fraction"]["greedy"] for r in ok if r["spec"]["setting"] == s]) for s in settings]
    labels = [f"{_case_label(s)}\n{100 * p:.0f}% of data" for s, p in zip(settings, share, strict=True)]
    ax.set_xticks(
        x, labels, fontsize=6, rotation=30 if len(settings) > 4 else 0, ha="right" if len(settings) > 4 else "center"
    )
    ax.set_xlim(-0.5, len(settings) - 0.5)
    ax.set_yscale("log")
    ax.set_ylabel(f"{METRIC} to B* (mean ± 1 SE), lower is better")
    ax.plot([], [], color="0.35", ls="-", marker="o", label="line: method of moments")
    ax.plot([], [], color="0.35", ls="--", marker="s", label="dashed: AltMin")
    ax.legend()


def plot_slopes(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """Mean sin-theta against the collection's diversity lambda_k(sum w w^T) on log-log axes, per arm, with the
    minimax slope -1/2 drawn through the judged arm's first point."""
    import numpy as np

    from icml26._core.plots import arm_style

    ok = [r for r in records if r["status"] == "ok" and r.get("curves")]
    claim = card["claim"]
    arms = [claim["method"]] + [
        a for a in ("mom_screened", "altmin_all", "mom_all", "altmin_screened") if a != claim["method"]
    ]
    for i, arm in enumerate(arms):
        points: dict[float, list[float]] = {}
        for r in ok:
            for p in r["curves"][arm]:
                points.setdefault(p["diversity"], []).append(p[METRIC])
        xs = np.array(sorted(points))
        ys = np.array([np.exp(np.mean(np.log(points[x]))) for x in xs])
        slope = np.mean([r["metrics"][arm]["slope"] for r in ok])
        style = arm_style(card, arm, index=i)
        marker = "s" if arm.startswith("altmin") else "o"
        ax.plot(xs, ys, marker=marker, label=f"{arm}: slope {slope:+.2f}", **style)
        if arm == claim["method"]:
            ax.plot(xs, ys[0] * (xs / xs[0]) ** -0.5, color="black", ls="--", lw=1.0, label="slope -1/2")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(xs, [f"{x:g}" for x in xs])
    ax.tick_params(axis="x", which="minor", bottom=False, labelbottom=False)
    ax.set_xlabel("λ_k(Σ_t w_t w_tᵀ) = minority sources")
    ax.set_ylabel(f"{METRIC} (geometric mean over seeds)")
    ax.legend()


def beside_judged_metric(plot: Any, title: str) -> Any:
    """``plot`` (the room's figure) and the judged-metric panel, side by side at equal widths on a wider figure
    (``with_judged_metric`` with room for two legends below)."""
    from icml26._core.plots import judged_metric, panels

    def two_panels(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
        own, judged = panels(ax, 2)
        ax_fig = own.figure
        ax_fig.set_size_inches(12.5, 5.0)
        plot(card, records, own)
        own.set_title(title, fontsize=8)
        judged_metric(card, records, judged)
        judged.set_title("what the verdict is judged on", fontsize=8)
        settings = [g["setting"] for g in card["by_setting"]]
        varying = {k for s in settings for k in s if len({str(t.get(k)) for t in settings}) > 1}
        if len(varying) > 1 and "f" in settings[0]:  # one-at-a-time sweeps: name what each setting changes
            judged.set_xticks(
                range(len(settings)), [_case_label(s) for s in settings], rotation=30, ha="right", fontsize=7
            )

    two_panels.__name__ = f"{plot.__name__}_beside_judged_metric"
    return two_panels


# --------------------------------------------------------------------------------------------------- claims
def _setting(**changes: Any) -> dict[str, Any]:
    return BASE | changes


SEEDS = (2, 10, 50)  # smoke, quick, full
MIXTURE = profiles(
    smoke=_setting(T=20),
    quick=[_setting(f=f) for f in (0.8, 0.9, 0.95)],
    full=[_setting(f=f) for f in (0.8, 0.9, 0.95)]
    + [_setting(d=10), _setting(d=40), _setting(n=50), _setting(n=200), _setting(T=50), _setting(T=200)]
    + [_setting(k=3)],
    seeds=SEEDS,
    cell_seconds=(0.03, 0.03, 0.03),  # measured on the full run (2 workers): 0.02-0.045 s per cell
)
DIGITS = profiles(
    smoke=_setting(design="digits", T=20),
    quick=_setting(design="digits"),
    full=[_setting(design="digits", f=f) for f in (0.8, 0.9, 0.95)],
    seeds=SEEDS,
    cell_seconds=(0.04, 0.04, 0.04),  # measured: 0.033 s per cell
)
SWEEP = profiles(
    smoke={"majority": 20, "minority": [4, 8], "n": 100, "d": 10, "noise": 0.5},
    quick={"majority": 100, "minority": list(SWEEP_MINORITY), "n": 100, "d": 20, "noise": 0.5},
    full={"majority": 100, "minority": list(SWEEP_MINORITY), "n": 100, "d": 20, "noise": 0.5},
    seeds=(2, 20, 100),
    cell_seconds=(0.03, 0.1, 0.1),  # measured: 0.10 s per cell (four nested collections)
)
_SCREEN = {
    "metric": METRIC,
    "direction": "lower",
    "run": run_screening,
    "plot": beside_judged_metric(
        plot_arms, "every arm; settings: T=100, n=100, d=20, k=2, f=0.9 unless named; % = rows the greedy keeps"
    ),
}
_SLOPE = {
    "metric": "slope",
    "direction": "lower",
    "reference": -0.5,
    "test": "equivalence",
    "min_effect": 0.15,
    "run": run_diversity,
    "profiles": SWEEP,
    "plot": beside_judged_metric(plot_slopes, "error against diversity (log-log)"),
}
_MATCHES = {"test": "noninferiority", "relative": True, "min_effect": 0.3}
_MATCH_NOTE = (
    "'matches' = within 30% (relative non-inferiority margin 0.3: the paper file's 1.3x AltMin tolerance, used for "
    "every 'matches' claim), fixed before any run"
)
_READING = (
    "The greedy screening rule (D-optimal order + the prefix minimising sqrt(|S|)/lambda_k) and its AltMin pilot are "
    "our reading; the pilot reuses the data (split_sources offers a split)."
)

CARD = PaperCard(
    slug="source_screening",
    title="Source screening for shared subspaces",
    group="stats",
    api="icml26.stats.source_screening.screen_sources",
    extra="stats",
    summary="Screen a good collection of sources down to an informative subpopulation, then estimate the shared "
    "subspace (method of moments, AltMin) from it; against all sources and a random subset of the same size.",
    claims=(
        Claim(
            id="C1",
            statement="Training on a carefully selected subset of sources suffices ... even when a substantial "
            "portion of data is discarded: with the method of moments, the screened subset beats all the sources.",
            method="mom_greedy",
            baselines=("mom_all",),
            min_effect=0.05,
            profiles=MIXTURE,
            paper_figure="no number in the abstract; the paper file expects MoM(screened) < MoM(all) - 0.05 at f = 0.9",
            notes="margin 0.05 sin-theta (the paper file's assertion), fixed before any run; pooled over every "
            "setting. " + _READING,
            **_SCREEN,
        ),
        Claim(
            id="C1b",
            statement="... achieve minimax optimality with a subset: with AltMin (least squares), the screened "
            "subset matches all the sources while using a fraction of the data.",
            method="altmin_greedy",
            baselines=("altmin_all",),
            profiles=MIXTURE,
            **_MATCHES,
            paper_figure="no number in the abstract; the paper file expects AltMin(screened) <= 1.3 x AltMin(all)",
            notes=_MATCH_NOTE + ". Not a claim that screening beats all sources for every estimator. " + _READING,
            **_SCREEN,
        ),
        Claim(
            id="C1c",
            statement="Practical heuristics identify such subsets: the data-driven greedy subset does as well as "
            "the genie subset chosen with the true heads (method of moments).",
            method="mom_greedy",
            baselines=("mom_genie",),
            profiles=MIXTURE,
            **_MATCHES,
            paper_figure="no number in the abstract; the paper file expects greedy close to genie",
            notes=_MATCH_NOTE + ". " + _READING,
            **_SCREEN,
        ),
        Claim(
            id="C2",
            statement="Which sources matters, not how many: a random subset of the same size is much worse than "
            "the screened one (method of moments).",
            method="mom_greedy",
            baselines=("mom_random",),
            relative=True,
            min_effect=1 / 3,
            profiles=MIXTURE,
            paper_figure="no number in the abstract; the paper file expects random >= 1.5 x screened",
            notes="relative margin 1/3 = a 1.5x ratio (the paper file's assertion), fixed before any run; the "
            "random subset has exactly the greedy subset's size in every cell",
            **_SCREEN,
        ),
        Claim(
            id="C3",
            statement="Screening makes the method of moments minimax rate-optimal: on screened subsets its error "
            "scales as the minimax rate lambda_k(sum_S w w^T)^(-1/2) in the collection's diversity.",
            method="mom_screened",
            paper_figure="minimax rate sqrt(dk / (n lambda_k(sum w w^T))) (our reading of the bound): slope -1/2",
            notes="slope of log sin-theta on log lambda_k over m = 10..80 minority sources beside 100 majority ones, "
            "one slope per seed; margin +/- 0.15 fixed before any run (about halfway to -0.78..-0.95, the local "
            "slope of MoM's rate without screening, sqrt(d (100 + m) / n) / m, over this sweep). The rate's form "
            "is our reading of the minimax bound.",
            **_SLOPE,
        ),
        Claim(
            id="C3b",
            statement="Control: least squares (AltMin) on all the sources follows the same minimax slope -1/2.",
            method="altmin_all",
            paper_figure="slope -1/2 (our reading of the bound)",
            notes="the same cells as C3; margin +/- 0.15 fixed before any run",
            **_SLOPE,
        ),
        Claim(
            id="C4",
            statement="Screening works beyond Gaussian designs (semi-synthetic: real image features, planted "
            "subspace): MoM on the screened subset beats MoM on all the sources and on a random subset of the "
            "same size.",
            method="mom_greedy",
            baselines=("mom_all", "mom_random"),
            min_effect=0.05,
            profiles=DIGITS,
            data=("scikit-learn",),
            paper_figure="the paper's real-world datasets are not available offline; semi-synthetic substitute",
            notes="x: whitened top-20 principal components of scikit-learn's digits (non-Gaussian); y from a planted "
            "subspace as in C1. Margin 0.05 sin-theta as in C1, fixed before any run. " + _READING,
            **_SCREEN,
        ),
        Claim(
            id="C4b",
            statement="Semi-synthetic digits: AltMin on the screened subset matches AltMin on all the sources.",
            method="altmin_greedy",
            baselines=("altmin_all",),
            profiles=DIGITS,
            **_MATCHES,
            data=("scikit-learn",),
            paper_figure="the paper's real-world datasets are not available offline; semi-synthetic substitute",
            notes=_MATCH_NOTE + ". " + _READING,
            **_SCREEN,
        ),
    ),
)
