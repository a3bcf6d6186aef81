"""Reproduction of the asymmetric kernel-SoS conformal bands' claims against MAPIE's regressors and symmetric kSoS.

Design (the notes' protocol; every arm of a cell sees the same splits, base predictor and test points):

- Synthetic data (``data``): x ~ U(-1, 1)^d, heteroscedastic sigma(x) = 0.2 + 0.8 |x_1|, standardised noise
  normal / exponential / gamma, optional one-sided outliers. Splits per cell: D_model (500 points) fits the base
  predictor m (scikit-learn gradient boosting), D_tr (100 or 300) learns every band's shape, D_cal (300)
  conformalises, 2000 test points. A predictor "biased by 0.3" is m(x) - 0.3 sigma(x) (it under-predicts, so the
  residuals shift towards the long right tail of the skewed noises).
- Diabetes (scikit-learn's ``load_diabetes``, 442 rows): per seed a random split 100 / 100 / 100 / 142 (model,
  band, calibration, test), base predictor ``RidgeCV``.
- Arms: ``ksos_asym`` (our estimator with the automatic penalty: HSIC length scale, sign-flip symmetry test);
  ``ksos_sym`` (mu = inf, the same length scale, split and landmarks: symmetric kSoS); ``ksos_mu0`` (mu = 0, both
  sides decoupled); MAPIE 1.6's ``split_abs_sym``, ``split_abs_asym``, ``residual_normalised_sym``/``_asym`` and
  ``cqr`` (``baselines``). alpha = 0.1.
- Metrics: marginal coverage and mean width on the test points, worst-bin coverage over 10 bins of x_1 quantiles
  (diabetes: 5 bins of the predicted value), and for ``ksos_asym`` which penalty the test kept.

The abstract gives no number; the notes' expectations (biased predictor: about 20% narrower than symmetric kSoS;
asymmetry alone with an unbiased predictor buys little; CQR can be narrower) set the margins, fixed before any run.
The objective, the dual and the penalty test are our reading (see the package docstring).
"""

from __future__ import annotations

import math
from typing import Any

from icml26._core import Cell, Claim, PaperCard, profiles
from icml26._core.plots import with_judged_metric

CONFIDENCE = 0.9
KSOS_ARMS = ("ksos_asym", "ksos_sym", "ksos_mu0")
MAPIE_ARMS = ("split_abs_sym", "split_abs_asym", "residual_normalised_sym", "residual_normalised_asym", "cqr")
ARMS = KSOS_ARMS + MAPIE_ARMS


# ---------------------------------------------------------------------------------------------------- data
def _synthetic(cell: Cell) -> dict[str, Any]:
    import numpy as np
    from sklearn.ensemble import GradientBoostingRegressor

    from icml26.stats.ksos_conformal.baselines import ShiftedRegressor
    from icml26.stats.ksos_conformal.data import make_regression_data, sigma

    rng = cell.rng()
    d, kind, outliers = int(cell["d"]), str(cell["noise"]), float(cell.get("outliers", 0.0))
    parts = {
        name: make_regression_data(int(cell[size]), d, kind, rng, outliers=outliers)
        for name, size in (("model", "n_model"), ("train", "n_tr"), ("cal", "n_cal"), ("test", "n_test"))
    }
    fitted = GradientBoostingRegressor(random_state=cell.seed).fit(parts["model"].X, parts["model"].y)
    bias = float(cell["bias"])
    predictor = ShiftedRegressor(fitted, (lambda X: -bias * sigma(X)) if bias else None)
    test = parts["test"]
    edges = np.quantile(test.X[:, 0], np.linspace(0, 1, 11)[1:-1])
    return {
        "predictor": predictor,
        "train": (parts["train"].X, parts["train"].y),
        "cal": (parts["cal"].X, parts["cal"].y),
        "test": (test.X, test.y),
        "bins": np.searchsorted(edges, test.X[:, 0]),
    }


def _diabetes(cell: Cell) -> dict[str, Any]:
    import numpy as np
    from sklearn.datasets import load_diabetes
    from sklearn.linear_model import RidgeCV

    X, y = load_diabetes(return_X_y=True)
    idx = cell.rng().permutation(len(y))
    cut = np.cumsum([int(cell["n_model"]), int(cell["n_tr"]), int(cell["n_cal"])])
    model, train, cal, test = np.split(idx, cut)
    predictor = RidgeCV(alphas=np.logspace(-3, 3, 13)).fit(X[model], y[model])
    pred = predictor.predict(X[test])
    n_bins = int(cell["bins"])
    edges = np.quantile(pred, np.linspace(0, 1, n_bins + 1)[1:-1])
    return {
        "predictor": predictor,
        "train": (X[train], y[train]),
        "cal": (X[cal], y[cal]),
        "test": (X[test], y[test]),
        "bins": np.searchsorted(edges, pred),
    }


# ---------------------------------------------------------------------------------------------------- cells
def run_bands(cell: Cell) -> dict[str, Any]:
    """Every arm on the same splits and base predictor: coverage, width, worst-bin coverage; the penalty picked."""
    import numpy as np

    from icml26.stats.ksos_conformal.baselines import mapie_bands
    from icml26.stats.ksos_conformal.estimator import KSoSConformal

    data = _diabetes(cell) if cell["data"] == "diabetes" else _synthetic(cell)
    predictor, (X_tr, y_tr), (X_cal, y_cal), (X_te, y_te) = (data[k] for k in ("predictor", "train", "cal", "test"))
    bins = data["bins"]

    def ksos(**kw: Any) -> Any:
        est = KSoSConformal(predictor, confidence_level=CONFIDENCE, random_state=cell.seed, **kw)
        return est.fit(X_tr, y_tr).conformalize(X_cal, y_cal)

    auto = ksos()
    bands = {"ksos_asym": auto.predict_interval(X_te)[1][:, :, 0]}
    for name, mu in (("ksos_sym", math.inf), ("ksos_mu0", 0.0)):
        bands[name] = ksos(symmetry_penalty=mu, length_scale=auto.length_scale_).predict_interval(X_te)[1][:, :, 0]
    for name, (lo, hi) in mapie_bands(
        predictor, X_tr, y_tr, X_cal, y_cal, X_te, confidence_level=CONFIDENCE, random_state=cell.seed
    ).items():
        bands[name] = np.stack([lo, hi], axis=1)

    metrics: dict[str, dict[str, float]] = {}
    by_bin = []
    for name, band in bands.items():
        covered = (y_te >= band[:, 0]) & (y_te <= band[:, 1])
        per_bin = [float(covered[bins == b].mean()) for b in range(int(bins.max()) + 1)]
        metrics[name] = {
            "coverage": float(covered.mean()),
            "width": float(np.mean(band[:, 1] - band[:, 0])),
            "worst_bin_coverage": float(min(per_bin)),
        }
        by_bin += [{"arm": name, "bin": b, "coverage": c} for b, c in enumerate(per_bin)]
    test = auto.symmetry_test_
    kept_symmetric = float(math.isinf(auto.symmetry_penalty_))
    metrics["ksos_asym"] |= {"symmetric_pick": kept_symmetric, "asymmetric_pick": 1.0 - kept_symmetric}
    info = {
        "length_scale": auto.length_scale_,
        "symmetry_penalty": "inf" if math.isinf(auto.symmetry_penalty_) else auto.symmetry_penalty_,
        "pvalue": None if test is None else test.pvalue,
        "statistic": None if test is None else test.statistic,
        "dual_converged": bool(auto.solution_.converged),
    }
    return {"metrics": metrics, "curves": {"coverage_by_bin": by_bin}, "info": info}


# ---------------------------------------------------------------------------------------------------- plots
def _ok(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["status"] == "ok"]


def _label(setting: dict[str, Any]) -> str:
    """A compact three-line tick label: noise (+ outlier share), bias and d, n_tr."""
    if setting["data"] == "diabetes":
        return "diabetes"
    extra = f"+{setting['outliers']:g}" if setting.get("outliers") else ""
    return f"{setting['noise'][:3]}{extra}\nb{setting['bias']:g} d{setting['d']}\nn{setting['n_tr']}"


def _per_setting(records: list[dict[str, Any]], metric: str) -> tuple[list[str], dict[str, list[float]]]:
    import numpy as np

    groups: dict[str, list[dict[str, Any]]] = {}
    for r in _ok(records):
        groups.setdefault(_label(r["spec"]["setting"]), []).append(r)
    labels = sorted(groups)
    return labels, {
        arm: [float(np.mean([r["metrics"][arm][metric] for r in groups[lab]])) for lab in labels] for arm in ARMS
    }


def _style(card: dict[str, Any], arm: str) -> dict[str, Any]:
    """The claim's method blue, its baselines their colours, every other arm its own distinct colour."""
    from icml26._core.plots import arm_style

    claim = card["claim"]
    others = [a for a in ARMS if a != claim["method"] and a not in claim["baselines"]]
    return arm_style(card, arm, index=others.index(arm) if arm in others else None)


def _arm_lines(card: dict[str, Any], ax: Any, labels: list[str], values: dict[str, list[float]]) -> None:
    """One line per arm across settings; with a single setting, one bar per arm."""
    if len(labels) == 1:
        for i, (arm, ys) in enumerate(values.items()):
            ax.bar(i, ys[0], color=_style(card, arm)["color"], alpha=0.8, label=arm)
        ax.set_xticks([])  # the legend names the bars
        ax.set_title(labels[0].replace("\n", " "), fontsize=8)
        ax.set_ylim(min(min(v) for v in values.values()) * 0.95, max(max(v) for v in values.values()) * 1.02)
        return
    x = range(len(labels))
    for arm, ys in values.items():
        ax.plot(x, ys, marker="o", ms=3, label=arm, **_style(card, arm))
    ax.set_xticks(list(x), labels, fontsize=5)


def plot_coverage(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """Marginal coverage of every arm per setting (mean over seeds), with the nominal level."""
    from icml26._core.plots import reference_line

    labels, values = _per_setting(records, "coverage")
    _arm_lines(card, ax, labels, values)
    reference_line(ax, CONFIDENCE, f"nominal {CONFIDENCE:g}")
    ax.set_ylabel("marginal coverage (mean over seeds)")
    ax.legend()


def plot_width(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """Mean width of every arm relative to symmetric kSoS, per setting (mean over seeds)."""
    import numpy as np

    from icml26._core.plots import reference_line

    labels, values = _per_setting(records, "width")
    ref = np.array(values["ksos_sym"])
    _arm_lines(card, ax, labels, {arm: list(np.array(v) / ref) for arm, v in values.items()})
    reference_line(ax, 1.0, "symmetric kSoS width")
    ax.set_ylabel("mean width / symmetric kSoS width")
    ax.legend()


def plot_conditional(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """Coverage per bin of x_1 (diabetes: of the prediction), every arm, pooled over settings and seeds."""
    import numpy as np

    from icml26._core.plots import reference_line

    rows = [row for r in _ok(records) for row in r["curves"]["coverage_by_bin"]]
    for arm in ARMS:
        bins = sorted({row["bin"] for row in rows if row["arm"] == arm})
        ys = [np.mean([row["coverage"] for row in rows if row["arm"] == arm and row["bin"] == b]) for b in bins]
        ax.plot(bins, ys, marker="o", ms=3, label=arm, **_style(card, arm))
    reference_line(ax, CONFIDENCE, f"nominal {CONFIDENCE:g}")
    ax.set_xlabel("bin of x_1 quantiles (noise sigma(x) high at both ends, low in the middle)")
    ax.set_ylabel("coverage in the bin (mean over cells)")
    ax.legend()


def plot_picks(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """p-values of the sign-flip symmetry test per setting, with the test level."""
    from icml26._core.plots import reference_line

    ok = _ok(records)
    labels = sorted({_label(r["spec"]["setting"]) for r in ok})
    for i, lab in enumerate(labels):
        ps = [r["info"]["pvalue"] for r in ok if _label(r["spec"]["setting"]) == lab]
        ps = [p for p in ps if p is not None]
        ax.scatter([i] * len(ps), ps, s=12, color="#0969da", alpha=0.6, label="p-value of one cell" if i == 0 else None)
    reference_line(ax, 0.1, "test level 0.1 (reject: asymmetric band)")
    ax.set_xticks(range(len(labels)), labels, fontsize=5)
    ax.set_ylabel("sign-flip p-value")
    ax.set_ylim(0, 1.02)
    ax.legend()


# --------------------------------------------------------------------------------------------------- claims
def syn(d: int, noise: str, bias: float, n_tr: int, **kw: Any) -> dict[str, Any]:
    """One synthetic setting (notes' protocol sizes unless overridden)."""
    return {
        "data": "synthetic",
        "d": d,
        "noise": noise,
        "bias": bias,
        "n_tr": n_tr,
        "n_model": 500,
        "n_cal": 300,
        "n_test": 2000,
        "outliers": 0.0,
    } | kw


DIABETES = {"data": "diabetes", "n_model": 100, "n_tr": 100, "n_cal": 100, "bins": 5}
NOISES = ("normal", "exponential", "gamma")
GRID = [syn(d, z, b, n) for d in (1, 5) for z in NOISES for b in (0.0, 0.3) for n in (100, 300)]
SMOKE = syn(1, "exponential", 0.3, 40, n_model=100, n_cal=40, n_test=200)
Q_BIASED = syn(1, "exponential", 0.3, 100)
Q_SYMMETRIC = syn(1, "normal", 0.0, 100)
Q_SKEWED = syn(1, "exponential", 0.0, 100)
# seconds per cell measured on the full run (2 workers): 1.1-1.5 (d = 1), 1.8-3.0 (d = 5), 2.1 (diabetes)
SEEDS, CELL_SECONDS = (1, 3, 10), (1.5, 1.5, 2.5)


def _grid(**match: Any) -> list[dict[str, Any]]:
    return [s for s in GRID if all(s[k] in v for k, v in match.items())]


def _synthetic_profiles(quick: list[dict[str, Any]], full: list[dict[str, Any]], smoke: dict[str, Any] = SMOKE) -> Any:
    return profiles(smoke=smoke, quick=quick, full=full, seeds=SEEDS, cell_seconds=CELL_SECONDS)


OUTLIERS = [syn(d, "normal", 0.0, n, outliers=0.05) for d in (1, 5) for n in (100, 300)]
SMALL = [syn(d, z, 0.3, 50) for d in (1, 5) for z in ("exponential", "gamma")]
DIABETES_PROFILES = profiles(
    smoke=DIABETES, quick=DIABETES, full=DIABETES, seeds=(1, 3, 20), cell_seconds=(2.5, 2.5, 2.5)
)

_RUN = dict(run=run_bands)
_DIABETES = ("scikit-learn (load_diabetes, 442 rows)",)
READING = "objective, dual and symmetry test are our reading of the abstract (package docstring)"


def _claim(claim_id: str, statement: str, metric: str, plot: Any, notes: str, **kw: Any) -> Claim:
    """A claim on ``ksos_asym`` from ``run_bands``; its notes end with what is our reading."""
    direction = "lower" if metric == "width" else "higher"
    return Claim(
        id=claim_id,
        statement=statement,
        metric=metric,
        direction=direction,
        method="ksos_asym",
        notes=f"{notes.strip()} {READING}",
        plot=with_judged_metric(plot),
        **_RUN,
        **kw,
    )


def _width_claim(claim_id: str, statement: str, baseline: str, margin: float, notes: str, **kw: Any) -> Claim:
    """A relative mean-width claim against one baseline (superiority unless ``test`` says)."""
    return _claim(
        claim_id, statement, "width", plot_width, notes, baselines=(baseline,), min_effect=margin, relative=True, **kw
    )


def _coverage_claim(claim_id: str, statement: str, margin: float, notes: str, **kw: Any) -> Claim:
    """Marginal coverage not below the nominal level by more than ``margin``."""
    return _claim(
        claim_id,
        statement,
        "coverage",
        plot_coverage,
        notes,
        reference=CONFIDENCE,
        test="noninferiority",
        min_effect=margin,
        **kw,
    )


def _conditional_claim(claim_id: str, statement: str, baselines: tuple[str, ...], notes: str, **kw: Any) -> Claim:
    """Worst-bin conditional coverage against ``baselines`` on the synthetic grid (3 points margin)."""
    return _claim(
        claim_id,
        statement,
        "worst_bin_coverage",
        plot_conditional,
        notes,
        baselines=baselines,
        min_effect=0.03,
        profiles=_synthetic_profiles([Q_BIASED, Q_SYMMETRIC, Q_SKEWED], GRID),
        **kw,
    )


CARD = PaperCard(
    slug="ksos_conformal",
    title="Asymmetric kernel-SoS conformal bands",
    group="stats",
    api="icml26.stats.ksos_conformal.KSoSConformal",
    extra="stats",
    summary="Split-conformal bands m - q sqrt(f-), m + q sqrt(f+) with kernel-SoS f+- coupled by a symmetry penalty "
    "chosen by a sign-flip test, against MAPIE's split-absolute, residual-normalised and CQR regressors and "
    "symmetric kSoS, on synthetic skewed/biased data and diabetes.",
    claims=(
        _coverage_claim(
            "C1",
            "The asymmetric kSoS bands keep marginal coverage at the nominal level 0.9 (finite-sample "
            "split-conformal guarantee), over the whole synthetic grid.",
            0.01,
            "margin 0.01 fixed before any run: E[coverage] = 271/301 = 0.9003 at n_cal = 300; the mean over "
            "the grid has a Monte Carlo sd of about 0.002. Full run: 0.9036 over 240 cells, every setting "
            "between 0.890 and 0.910; quick agrees. ",
            paper_figure="guaranteed marginal coverage (no number in the abstract)",
            profiles=_synthetic_profiles([Q_BIASED, Q_SYMMETRIC, Q_SKEWED], GRID),
        ),
        _width_claim(
            "C2",
            "Consenting to some asymmetry makes the bands narrower than symmetric kSoS with a biased "
            "predictive model (predictor off by 0.3 sigma(x)), at least 5% narrower on average.",
            "ksos_sym",
            0.05,
            "relative width gain; margin 5% fixed before any run from the notes' ~20%. Full run: +0.9% overall. The "
            "gain appears where the band can learn the skew, d = 1 and n_tr = 300 (exponential 6.7%, gamma 6.1%, "
            "normal 1.9% narrower; the test picks asymmetry in 60-80% of those cells); at d = 5 (a 5-d Gaussian "
            "kernel, noise driven by x_1 only, n_tr <= 300) its picks (0-70%) buy nothing (-1.5% to +5.3%). The notes' "
            "~20% is not found at our scale. Quick (d = 1, n_tr = 100, 3 seeds): +4.1%, inconclusive. ",
            paper_figure="abstract: asymmetry lets the bands better adapt to biased predictive models; notes: on the "
            "order of 20% narrower than symmetric kSoS",
            profiles=_synthetic_profiles([Q_BIASED], _grid(bias=(0.3,))),
        ),
        _width_claim(
            "C2b",
            "Under skewed noise with an unbiased predictor, asymmetric kSoS is narrower than symmetric kSoS "
            "by at least 2% on average.",
            "ksos_sym",
            0.02,
            "margin 2% fixed before any run (the oracle gain of the shortest interval is a few % for gamma, "
            "about 10% for exponential). Full run: -0.4% [-0.85%, +0.01%]: the test keeps the symmetric band in 89% "
            "of these cells, so the arms mostly coincide: asymmetry alone buys little, as the notes expect; quick "
            "agrees (3 of 3 symmetric). ",
            paper_figure="abstract: a procedure that bridges skewed and non-skewed noise; notes: oracle gain 3-12%, "
            "'asymmetry alone buys little'",
            profiles=_synthetic_profiles([Q_SKEWED], _grid(bias=(0.0,), noise=("exponential", "gamma"))),
        ),
        _width_claim(
            "C2c",
            "With a biased predictor, asymmetric kSoS is narrower than MAPIE's asymmetric split-absolute "
            "band (the MAPIE choice that already absorbs a bias) by at least 2%.",
            "split_abs_asym",
            0.02,
            "margin 2% fixed before any run. CQR and residual-normalised bands are reported, never claimed. Full run: "
            "-13% (kSoS wider). At d = 1, n_tr = 300 kSoS is 6-9% narrower than split_abs_asym; at d = 1, "
            "n_tr = 100 it is 4-7% wider; at d = 5 it is 10-38% wider: the isotropic 5-d kernel on <= 300 points "
            "spends width on four irrelevant inputs. Quick (d = 1, n_tr = 100): -3.2%, inconclusive. ",
            paper_figure="notes: 'modestly narrower than split-abs'",
            profiles=_synthetic_profiles([Q_BIASED], _grid(bias=(0.3,))),
        ),
        _claim(
            "C3",
            "The data-driven penalty identifies symmetric noise: on Gaussian noise with an unbiased "
            "predictor it keeps the symmetric band in at least 80% of the runs.",
            "symmetric_pick",
            plot_picks,
            "reference 0.9 = 1 - the test level (exact under symmetric residuals); margin 0.1 (>= 80%) fixed "
            "before any run. The fitted predictor's own error makes residuals not exactly symmetric. Full run: 0.85 "
            "(34 of 40), 95% CI [0.73, 0.97] contains the 0.8 bound: asymmetric picks 10% at d = 1 (the level) "
            "and 20% at d = 5 (not diagnosed further). Quick: 3 of 3. ",
            reference=0.9,
            test="noninferiority",
            min_effect=0.1,
            paper_figure="abstract: the penalty is chosen by a data-driven method which automatically identifies the "
            "symmetric nature of the noise; notes: symmetric in >= 4 of 5 seeds",
            profiles=_synthetic_profiles([Q_SYMMETRIC], _grid(noise=("normal",), bias=(0.0,))),
        ),
        _claim(
            "C3b",
            "The data-driven penalty identifies skewed residuals: with exponential noise and a biased "
            "predictor it moves to an asymmetric band in at least half of the runs.",
            "asymmetric_pick",
            plot_picks,
            "reference 0.1 = the pick rate under symmetry (the test level); effect >= 0.4 (rate >= 0.5) fixed "
            "before any run. Full run: 0.475 (19 of 40), 95% CI [0.31, 0.64]: 0.7-0.8 at d = 1, 0.1-0.3 at d = 5 "
            "(see C2). Quick (d = 1, n_tr = 100): 3 of 3. ",
            reference=0.1,
            min_effect=0.4,
            paper_figure="abstract: the intervals smoothly change from symmetric to asymmetric ones",
            profiles=_synthetic_profiles([Q_BIASED], _grid(noise=("exponential",), bias=(0.3,))),
        ),
        _width_claim(
            "C4",
            "With outliers (5% one-sided contamination of Gaussian noise), asymmetric kSoS is narrower than "
            "symmetric kSoS by at least 3%.",
            "ksos_sym",
            0.03,
            "contamination + U(3, 6) sigma(x) in every split (exchangeability kept); margin 3% fixed before any run. "
            "Full run: -1.0% [-3.2%, +1.0%]: the test picks asymmetry in 20% of the cells and the decoupled band "
            "(mu = 0) is wider still (4-24%). Quick (3 seeds): -10%, one seed picked mu = 0 (1.3x the width). ",
            paper_figure="abstract: asymmetry lets the bands better adapt to ... outliers",
            profiles=_synthetic_profiles([syn(1, "normal", 0.0, 100, outliers=0.05)], OUTLIERS),
        ),
        _width_claim(
            "C4b",
            "In the small-sample regime (50 band-learning points, skewed noise, biased predictor), "
            "asymmetric kSoS is narrower than symmetric kSoS by at least 3%.",
            "ksos_sym",
            0.03,
            "margin 3% fixed before any run. Full run: -4.3% [-10.1%, +1.1%]. With n_tr = 50 the symmetry test runs on "
            "17 selection points, where the calibrated width is the largest score; the asymmetric bands it picks "
            "(30% at d = 1) are wider (exponential +10%, gamma +8% at d = 1): the minimum over four penalties on "
            "17 points is a noisy choice. Quick: -24% (one seed picked mu = 0 at 1.7x the width). ",
            paper_figure="abstract: asymmetry lets the bands better adapt to small sample regimes",
            profiles=_synthetic_profiles([syn(1, "exponential", 0.3, 50)], SMALL),
        ),
        _conditional_claim(
            "C5",
            "The kSoS bands are adaptive: their worst-bin conditional coverage (10 bins of x_1) beats "
            "MAPIE's split-absolute band by at least 3 points on heteroscedastic data.",
            ("split_abs_sym",),
            "margin 3 coverage points fixed before any run (sigma varies 5x across x_1). Full run: +0.027 "
            "[+0.019, +0.034], 160 of 240 better: 6-10 points ahead at d = 1, n_tr = 300, within 4 points at d = 5; "
            "an effect of 3 points is neither shown nor excluded. Quick (d = 1, n_tr = 100, 3 seeds): -0.019. ",
            paper_figure="abstract: efficiency of penalized kernel SoS to construct adaptive prediction bands",
        ),
        _conditional_claim(
            "C5b",
            "The kSoS bands are as adaptive as MAPIE's adaptive bands: worst-bin conditional coverage not "
            "lower than residual-normalised (sym) and CQR by more than 3 points.",
            ("residual_normalised_sym", "cqr"),
            "non-inferiority margin 3 coverage points fixed before any run. Full run: -0.019 vs residual-normalised, "
            "-0.021 vs CQR, lower bounds -0.029 and -0.029: non-inferior by a hair; at d = 5 both MAPIE bands are "
            "4-6 points ahead on average (up to 10). Quick (3 seeds): -0.064 vs CQR, not reproduced. ",
            paper_figure="abstract: adaptive prediction bands",
            test="noninferiority",
        ),
        _coverage_claim(
            "C6",
            "Diabetes (real data, 20 random splits): asymmetric kSoS keeps coverage 0.9.",
            0.025,
            "n_cal = 100, 142 test points per split: the mean over 20 splits has sd ~0.01; margin 0.025 fixed "
            "before any run. Full run: 0.896, 95% CI [0.882, 0.910]. Quick (3 splits): interval +-0.06, "
            "inconclusive. ",
            paper_figure="real data: coverage guaranteed (no number in the abstract)",
            profiles=DIABETES_PROFILES,
            data=_DIABETES,
        ),
        _width_claim(
            "C6b",
            "Diabetes: the automatic penalty never costs width: asymmetric kSoS is not wider than symmetric "
            "kSoS by more than 5%.",
            "ksos_sym",
            0.05,
            "relative non-inferiority margin 5% fixed before any run. Full run: +0.36% [-0.9%, +1.7%]; the test picks "
            "asymmetry in 2 of 20 splits. ",
            paper_figure="abstract: the bands bridge symmetric and asymmetric noise",
            profiles=DIABETES_PROFILES,
            test="noninferiority",
            data=_DIABETES,
        ),
    ),
)
