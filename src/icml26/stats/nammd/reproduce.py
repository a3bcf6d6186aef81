"""Reproduction of NAMMD's claims: bounded type-I error at the closeness boundary, and higher power than the
MMD closeness test when the alternative pair is more concentrated (Gaussians, and weighted scikit-learn digits).

Design (our reading of the official protocol; see the package docstring):

- Gaussian data, d = 2, kernel bandwidth s0 = 1. Boundary pair P1 = N(0, I), Q1 = N(e1, I): epsilon is its exact
  NAMMD (0.0201) and epsilon_mmd its exact MMD^2. Alternatives at scale s: P = N(0, s^2 I), Q = N(delta e1, s^2 I)
  with delta found by root-finding so that NAMMD(P, Q) = epsilon + gap exactly. s < 1 is more concentrated
  (larger norms); s = 1 has the boundary pair's norms (the control).
- Digits (scikit-learn's 8x8 digits, 1797 images scaled to [0, 1]; *not* MNIST), Gaussian kernel with the median
  heuristic on the whole pool, exact population values from the pool's Gram matrix. Boundary pair A: uniform over
  the ten classes vs uniform over the even classes. Alternative pair B: concentrated on the two classes whose
  class-uniform distributions have the largest RKHS norms (fixed by that rule, computed exactly): U(c1) vs
  (1 - t) U(c1) + t U(c2), t by root-finding so that NAMMD_B = epsilon + gap.
- One cell = ``reps`` independent tests at one setting: both tests see the same samples; the metric is each
  test's rejection rate (type-I error at a boundary, power under an alternative). Each arm also reports its
  rejection rate with the official code's closed-form variance and how often that decision differs from ours.
- Per-test bandwidth selection (claims C1s, C2s; the official protocol): in each cell a held-out reference split
  of m pairs, drawn from the setting's pair as defined at s0 = 1, picks one bandwidth per test with the official
  rule (:func:`select_bandwidth`); the closeness problem is then set at the NAMMD test's kernel as the official
  script does (boundary pair N(0, I) vs N(beta e1, I) with NAMMD = epsilon, alternative at scale s with
  NAMMD = epsilon + gap, both by root-finding), and epsilon_mmd is the boundary pair's MMD^2 at the MMD test's
  kernel. The reference split is never tested.

The abstract gives no number for these claims ("higher test power ... with bounded type-I error").
"""

from __future__ import annotations

from functools import cache, lru_cache
from typing import Any

from icml26._core import Cell, Claim, PaperCard, Profile, profiles

ALPHA = 0.05
DIM = 2
BANDWIDTH = 1.0
BOUNDARY_SHIFT = 1.0
METHOD, BASELINE = "nammd_dct", "mmd_dct"
# Digits: pair A's alternative keeps the even classes; pair B uses the two most concentrated classes.
EVEN_CLASSES = (0, 2, 4, 6, 8)


# --------------------------------------------------------------------------------------------- Gaussian data
def _gaussian_values(scale: float, shift: float, bandwidth: float = BANDWIDTH) -> Any:
    import numpy as np

    from icml26.stats.nammd.population import population_gaussian

    cov = scale**2 * np.eye(DIM)
    return population_gaussian(np.zeros(DIM), cov, np.eye(DIM)[0] * shift, cov, bandwidth)


@cache
def gaussian_boundary() -> tuple[float, float]:
    """(epsilon, epsilon_mmd) of the boundary pair N(0, I) vs N(e1, I) at the fixed bandwidth s0 = 1."""
    v = _gaussian_values(1.0, BOUNDARY_SHIFT)
    return v.nammd, v.mmd2


@cache
def gaussian_shift(scale: float, target: float, bandwidth: float = BANDWIDTH) -> float:
    """The mean shift delta at which N(0, s^2 I) vs N(delta e1, s^2 I) has NAMMD exactly ``target``."""
    from scipy.optimize import brentq

    def excess(d: float) -> float:
        return float(_gaussian_values(scale, d, bandwidth).nammd - target)

    if excess(50.0 * max(1.0, bandwidth)) <= 0:
        raise ValueError(f"NAMMD {target:g} is out of reach at scale {scale:g} with bandwidth {bandwidth:g}")
    return float(brentq(excess, 0.0, 50.0 * max(1.0, bandwidth), xtol=1e-12))


def _draw_gaussian(rng: Any, reps: int, m: int, scale: float, shift: float) -> tuple[Any, Any]:
    X = scale * rng.standard_normal((reps, m, DIM))
    Y = scale * rng.standard_normal((reps, m, DIM))
    Y[..., 0] += shift
    return X, Y


# ----------------------------------------------------------------------------------------------- digits data
@lru_cache(maxsize=1)
def digits_setup() -> dict[str, Any]:
    """Pool, Gram matrix, labels, the boundary pair A and the two most concentrated classes (exact values)."""
    import numpy as np
    from sklearn.datasets import load_digits

    from icml26.stats.nammd.kernels import GaussianKernel, median_bandwidth
    from icml26.stats.nammd.population import population_discrete

    Z, y = load_digits(return_X_y=True)
    Z = Z / 16.0
    kernel = GaussianKernel(median_bandwidth(Z))
    gram = kernel(Z, Z)
    counts = np.bincount(y)

    def classes(weights: Any) -> Any:
        w = np.asarray(weights, float)[y] / counts[y]
        return w / w.sum()

    uniform = [classes(np.eye(10)[c]) for c in range(10)]
    norms = np.array([u @ gram @ u for u in uniform])
    c1, c2 = (int(c) for c in np.argsort(norms)[::-1][:2])
    p_a = classes(np.ones(10))
    q_a = classes(np.isin(np.arange(10), EVEN_CLASSES))
    boundary = population_discrete(Z, p_a, q_a, gram=gram)
    return {
        "gram": gram,
        "bandwidth": kernel.bandwidth,
        "uniform": uniform,
        "classes": (c1, c2),
        "norms": norms,
        "p_a": p_a,
        "q_a": q_a,
        "epsilon": boundary.nammd,
        "epsilon_mmd": boundary.mmd2,
    }


@cache
def digits_mixture(target: float) -> float:
    """t such that U(c1) vs (1 - t) U(c1) + t U(c2) has NAMMD exactly ``target``."""
    from scipy.optimize import brentq

    from icml26.stats.nammd.population import population_discrete

    s = digits_setup()
    p, q = s["uniform"][s["classes"][0]], s["uniform"][s["classes"][1]]

    def excess(t: float) -> float:
        return population_discrete(None, p, (1 - t) * p + t * q, gram=s["gram"]).nammd - target

    return float(brentq(excess, 0.0, 1.0, xtol=1e-12))


# ---------------------------------------------------------------------------------------------------- cells
def _pair_sampler(cell: Cell) -> tuple[Any, Any, Any, float, float, dict[str, float]]:
    """(sample(rng, reps) -> (X, Y), kernel, population values, epsilon, epsilon_mmd, info) for the setting."""

    from icml26.stats.nammd.kernels import GaussianKernel, PrecomputedKernel
    from icml26.stats.nammd.population import population_discrete

    m, gap = int(cell["m"]), float(cell["gap"])
    if cell["data"] == "gaussian":
        eps, eps_mmd = gaussian_boundary()
        scale = float(cell["scale"])
        shift = gaussian_shift(scale, eps + gap)
        values = _gaussian_values(scale, shift)

        def sample(rng: Any, reps: int) -> tuple[Any, Any]:
            return _draw_gaussian(rng, reps, m, scale, shift)

        return sample, GaussianKernel(BANDWIDTH), values, eps, eps_mmd, {"shift": shift}

    s = digits_setup()
    eps, eps_mmd = s["epsilon"], s["epsilon_mmd"]
    if cell["data"] == "digits_boundary":
        p, q, info = s["p_a"], s["q_a"], {}
    else:
        t = digits_mixture(eps + gap)
        p = s["uniform"][s["classes"][0]]
        q = (1 - t) * p + t * s["uniform"][s["classes"][1]]
        info = {"mixture": t, "class_1": s["classes"][0], "class_2": s["classes"][1]}
    values = population_discrete(None, p, q, gram=s["gram"])
    n = len(p)

    def sample_idx(rng: Any, reps: int) -> tuple[Any, Any]:
        X = rng.choice(n, size=(reps, m, 1), p=p).astype(float)
        Y = rng.choice(n, size=(reps, m, 1), p=q).astype(float)
        return X, Y

    return sample_idx, PrecomputedKernel(s["gram"]), values, eps, eps_mmd, info


def _rejections(
    sample: Any, kernels: tuple[Any, Any], thresholds: tuple[float, float], m: int, reps: int, rng: Any
) -> tuple[dict[str, dict[str, float]], list[Any]]:
    """Both closeness tests on ``reps`` draws of ``sample`` (the same draws for both): per arm its rejection rate
    with our variance (``rejection_rate``, the judged metric) and with the official closed form, and how often the
    two variances decide differently; also the NAMMD estimates. ``kernels``/``thresholds``: (NAMMD test, MMD test).
    """
    import numpy as np

    from icml26.stats.nammd.closeness import MMDClosenessTest, NAMMDClosenessTest
    from icml26.stats.nammd.estimators import paired_stats

    tests = {
        METHOD: (
            kernels[0],
            NAMMDClosenessTest(thresholds[0], ALPHA, kernels[0]),
            NAMMDClosenessTest(thresholds[0], ALPHA, kernels[0], variance="official"),
        ),
        BASELINE: (
            kernels[1],
            MMDClosenessTest(thresholds[1], ALPHA, kernels[1]),
            MMDClosenessTest(thresholds[1], ALPHA, kernels[1], variance="official"),
        ),
    }
    crit = tests[METHOD][1].critical_value()
    decisions: dict[str, list[list[Any]]] = {arm: [[], []] for arm in tests}
    estimates = []
    chunk = max(1, 4_000_000 // (m * m))  # bounds the (chunk, m, m) Gram blocks
    for start in range(0, reps, chunk):
        X, Y = sample(rng, min(chunk, reps - start))
        stats = {}
        for arm, (kernel, ours, official) in tests.items():
            key = id(kernel)
            if key not in stats:  # the two tests share one pass when they share the kernel
                stats[key] = paired_stats(X, Y, kernel, block=m)
            decisions[arm][0].append(ours.statistic(stats[key])[0] > crit)
            decisions[arm][1].append(official.statistic(stats[key])[0] > crit)
        estimates.append(stats[id(kernels[0])].nammd)
    metrics = {}
    for arm, (ours_rej, official_rej) in decisions.items():
        a, b = np.concatenate(ours_rej), np.concatenate(official_rej)
        metrics[arm] = {
            "rejection_rate": float(a.mean()),
            "rejection_rate_official_variance": float(b.mean()),
            "official_variance_disagreement": float((a != b).mean()),
        }
    agreement = float((np.concatenate(decisions[METHOD][0]) == np.concatenate(decisions[BASELINE][0])).mean())
    return metrics, [agreement, float(np.concatenate(estimates).mean())]


def run_rejections(cell: Cell) -> dict[str, Any]:
    """Rejection rates of both closeness tests over ``reps`` draws of the setting's pair (same samples, same
    fixed kernel)."""
    sample, kernel, values, eps, eps_mmd, info = _pair_sampler(cell)
    m, reps = int(cell["m"]), int(cell["reps"])
    metrics, (agreement, est) = _rejections(sample, (kernel, kernel), (eps, eps_mmd), m, reps, cell.rng(True))
    return {
        "metrics": metrics,
        "info": {
            "reps": reps,
            "agreement": agreement,
            "epsilon": eps,
            "epsilon_mmd": eps_mmd,
            "nammd": values.nammd,
            "mmd2": values.mmd2,
            "reg": values.reg,
            "nammd_estimate_mean": est,
            **info,
        },
    }


def run_selected(cell: Cell) -> dict[str, Any]:
    """Both tests with per-test bandwidths selected on a held-out reference split (official rule and protocol;
    see the module docstring), then ``reps`` draws of the alternative tested with each test's own kernel."""
    from icml26.stats.nammd.bandwidth import select_bandwidth

    scale, gap, m, reps = float(cell["scale"]), float(cell["gap"]), int(cell["m"]), int(cell["reps"])
    eps, _ = gaussian_boundary()
    rng = cell.rng(by_setting=True)
    X_ref, Y_ref = _draw_gaussian(rng, 1, m, scale, gaussian_shift(scale, eps + gap))
    k_nammd = select_bandwidth(X_ref[0], Y_ref[0], "nammd")
    k_mmd = select_bandwidth(X_ref[0], Y_ref[0], "mmd")
    beta = gaussian_shift(1.0, eps, k_nammd.bandwidth)  # the boundary pair at the NAMMD test's kernel
    shift = gaussian_shift(scale, eps + gap, k_nammd.bandwidth)
    eps_mmd = _gaussian_values(1.0, beta, k_mmd.bandwidth).mmd2
    values_nammd = _gaussian_values(scale, shift, k_nammd.bandwidth)
    values_mmd = _gaussian_values(scale, shift, k_mmd.bandwidth)

    def sample(r: Any, n: int) -> tuple[Any, Any]:
        return _draw_gaussian(r, n, m, scale, shift)

    metrics, (agreement, est) = _rejections(sample, (k_nammd, k_mmd), (eps, eps_mmd), m, reps, rng)
    return {
        "metrics": metrics,
        "info": {
            "reps": reps,
            "agreement": agreement,
            "bandwidth_nammd": k_nammd.bandwidth,
            "bandwidth_mmd": k_mmd.bandwidth,
            "boundary_shift": beta,
            "shift": shift,
            "epsilon": eps,
            "epsilon_mmd": eps_mmd,
            "nammd": values_nammd.nammd,
            "reg": values_nammd.reg,
            "mmd2_at_mmd_kernel": values_mmd.mmd2,
            "nammd_estimate_mean": est,
        },
    }


# ---------------------------------------------------------------------------------------------------- plots
TEST_NAMES = {METHOD: "NAMMD-DCT", BASELINE: "MMD-DCT"}
LINE_STYLES = ("-", "--", ":", "-.")
MARKERS = "osD^"


def _arm_colours(card: dict[str, Any]) -> dict[str, str]:
    """Colour = test: the claim's method in the house's method colour, the other test in a baseline colour."""
    from icml26._core.plots import arm_style

    return {arm: arm_style(card, arm, index=0)["color"] for arm in TEST_NAMES}


def _rate_and_se(records: list[dict[str, Any]], arm: str) -> tuple[float, float]:
    """Mean rejection rate over the records (seeds) and its binomial standard error over all their draws."""
    import numpy as np

    rate = float(np.mean([r["metrics"][arm]["rejection_rate"] for r in records]))
    n = sum(r["info"]["reps"] for r in records)
    return rate, float(np.sqrt(rate * (1 - rate) / n))


def plot_power(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """Rejection rate (the judged metric) against the NAMMD gap: colour = test, line style = m, marker = scale s;
    bars are +-1 binomial standard error over all draws of a point; alpha as the reference line."""
    from icml26._core.plots import reference_line, style_key

    groups: dict[tuple[float, int], dict[float, list[dict[str, Any]]]] = {}
    for r in records:
        if r["status"] != "ok":
            continue
        s = r["spec"]["setting"]
        groups.setdefault((float(s.get("scale", 0.0)), int(s["m"])), {}).setdefault(float(s["gap"]), []).append(r)
    ms = sorted({m for _, m in groups})
    scales = sorted({scale for scale, _ in groups if scale})
    colours = _arm_colours(card)
    method = card["claim"]["method"]
    for arm, name in TEST_NAMES.items():  # the legend's first entries: colour = test
        ax.plot([], [], color=colours[arm], lw=1.6 if arm == method else 1.1, label=f"{name} (bars: ±1 binomial se)")
    for (scale, m), by_gap in sorted(groups.items()):
        gaps = sorted(by_gap)
        for arm in TEST_NAMES:
            points = [_rate_and_se(by_gap[g], arm) for g in gaps]
            ax.errorbar(
                gaps,
                [p[0] for p in points],
                yerr=[p[1] for p in points],
                color=colours[arm],
                ls=LINE_STYLES[ms.index(m) % 4],
                marker=MARKERS[scales.index(scale) % 4] if scale else "o",
                ms=3.5,
                capsize=2,
                lw=1.6 if arm == method else 1.1,
            )
    if len(ms) > 1:
        style_key(ax, {LINE_STYLES[i % 4]: f"m = {m}" for i, m in enumerate(ms)})
    else:
        ax.plot([], [], color="0.35", ls=LINE_STYLES[0], label=f"m = {ms[0]}")
    for i, scale in enumerate(scales):  # marker key: empty labelled handles, like style_key for line styles
        ax.plot([], [], color="0.35", ls="none", marker=MARKERS[i % 4], label=f"s = {scale:g} (alternative's scale)")
    reference_line(ax, ALPHA, f"alpha = {ALPHA:g}")
    gaps_run = sorted({g for by_gap in groups.values() for g in by_gap})
    ax.set_xticks(gaps_run, [f"{g:g}" for g in gaps_run], fontsize=8)
    ax.set_xlabel("NAMMD gap above epsilon")
    ax.set_ylabel("rejection rate (power), higher is better")
    ax.set_ylim(0, 1)
    ax.legend()


def plot_type1(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """Rejection rate (the judged metric) at each boundary pair for both tests (+-1 binomial se), with alpha and
    the non-inferiority bound the verdict asks for."""
    import numpy as np

    from icml26._core.plots import decision_bounds

    labels: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        if r["status"] == "ok":
            s = r["spec"]["setting"]
            name = {"digits_boundary": "digits A", "digits": "digits B"}.get(s["data"]) or f"s={s['scale']:g}"
            labels.setdefault(f"{name}\nm={s['m']}", []).append(r)
    x = np.arange(len(labels))
    colours = _arm_colours(card)
    for offset, (arm, name) in zip((-0.15, 0.15), TEST_NAMES.items(), strict=True):
        points = [_rate_and_se(rs, arm) for rs in labels.values()]
        judged = arm == card["claim"]["method"]
        ax.errorbar(
            x + offset,
            [p[0] for p in points],
            yerr=[p[1] for p in points],
            fmt="o",
            color=colours[arm],
            ms=5 if judged else 3.5,
            capsize=3,
            label=f"{name}{' (judged)' if judged else ' (shown, not judged)'}, bars: ±1 binomial se",
        )
    decision_bounds(ax, card)
    ax.set_xticks(x, list(labels), fontsize=7)
    ax.set_ylabel("type-I error (rejection rate), lower is better")
    ax.set_ylim(bottom=0)
    ax.legend()


# --------------------------------------------------------------------------------------------------- claims
def _grid(data: str, scales: tuple[float, ...], gaps: tuple[float, ...], ms: tuple[int, ...], reps: int) -> tuple:
    """Settings for every (m, scale, gap); ``scales`` applies to Gaussian data only."""
    if data != "gaussian":
        return tuple({"data": data, "gap": g, "m": m, "reps": reps} for m in ms for g in gaps)
    return tuple({"data": data, "scale": s, "gap": g, "m": m, "reps": reps} for m in ms for s in scales for g in gaps)


GAPS = (0.005, 0.01, 0.015, 0.02)
DIGIT_GAPS = (0.0025, 0.005, 0.01)


def _boundary_settings(ms: tuple[int, ...], reps: int, digits_m: int, scales: tuple[float, ...], pair_b: bool) -> tuple:
    """Pairs with NAMMD = epsilon exactly: Gaussians at each scale, digits pair A, and (optionally) the
    concentrated digits pair B at gap 0. For s < 1 and pair B the MMD^2 is below epsilon_mmd: inside MMD's null,
    not on its boundary, so the MMD claim uses s = 1 and pair A only."""
    digits = ({"data": "digits_boundary", "gap": 0.0, "m": digits_m, "reps": reps},)
    if pair_b:
        digits += ({"data": "digits", "gap": 0.0, "m": digits_m, "reps": reps},)
    return (*_grid("gaussian", scales, (0.0,), ms, reps), *digits)


SEEDS = (2, 3, 4)  # smoke, quick, full
# Expected seconds per cell on one core (smoke, quick, full), from recorded runs.
BOUNDARY = profiles(
    smoke=_grid("gaussian", (1.0,), (0.0,), (100,), 50),
    quick=_boundary_settings((200,), 200, 150, (1.0, 0.7, 0.5), pair_b=True),
    full=_boundary_settings((100, 200, 400), 1000, 150, (1.0, 0.7, 0.5), pair_b=True),
    seeds=SEEDS,
    cell_seconds=(0.05, 0.35, 1.7),
)
MMD_BOUNDARY = profiles(
    smoke=_grid("gaussian", (1.0,), (0.0,), (100,), 50),
    quick=_boundary_settings((200,), 200, 150, (1.0,), pair_b=False),
    full=_boundary_settings((100, 200, 400), 1000, 150, (1.0,), pair_b=False),
    seeds=SEEDS,
    cell_seconds=(0.05, 0.6, 1.8),
)
_TYPE1 = dict(
    metric="rejection_rate",
    direction="lower",
    reference=ALPHA,
    test="noninferiority",
    min_effect=0.01,
    paper_figure="type-I error bounded by alpha = 0.05 (no number in the abstract)",
    plot=plot_type1,
    notes="margin 0.01 above alpha, fixed before any run; the test is valid asymptotically",
    run=run_rejections,
    data=("scikit-learn",),
    revision=2,
)

_POWER = dict(
    metric="rejection_rate",
    direction="higher",
    method=METHOD,
    baselines=(BASELINE,),
    plot=plot_power,
    run=run_rejections,
    revision=2,
)


def _power_profiles(
    data: str,
    scales: tuple[float, ...],
    gaps: tuple[float, ...],
    quick_m: tuple[int, ...],
    full_m: tuple[int, ...],
    cell_seconds: tuple[float, float, float],
) -> dict[str, Profile]:
    """smoke: one setting, m = 100, 50 draws; quick: every gap at ``quick_m``, 200 draws; full: 1000 draws."""
    return profiles(
        smoke=_grid(data, scales[:1], gaps[1:2], (100,), 50),
        quick=_grid(data, scales, gaps, quick_m, 200),
        full=_grid(data, scales, gaps, full_m, 1000),
        seeds=SEEDS,
        cell_seconds=cell_seconds,
    )


# Under selection the kernels are wide and C2's gaps saturate both tests (power 1.0 at gap 0.01, m = 200). Rule,
# fixed before any run of C2s and blind to the difference: gaps where the two tests' *average* power spans about
# 0.2-0.7 at m = 200 (pilot: 6 seeds x 300 draws per gap and scale).
SELECTED_GAPS = (0.002, 0.003, 0.005, 0.0075)
SELECTED_POWER = profiles(
    smoke=_grid("gaussian", (0.5,), (0.005,), (100,), 50),
    quick=_grid("gaussian", (0.5,), (0.003, 0.005), (200,), 200),
    full=_grid("gaussian", (0.5, 0.7), SELECTED_GAPS, (200, 400), 1000),
    seeds=SEEDS,
    cell_seconds=(0.1, 0.4, 5.4),
)
SELECTED_BOUNDARY = profiles(
    smoke=_grid("gaussian", (1.0,), (0.0,), (100,), 50),
    quick=_grid("gaussian", (1.0, 0.5), (0.0,), (200,), 200),
    full=_grid("gaussian", (1.0, 0.7, 0.5), (0.0,), (200, 400), 1000),
    seeds=SEEDS,
    cell_seconds=(0.1, 0.4, 4.5),
)

# C2's protocol note: numbers from the exact population values (a unit test recomputes them).
C2_NOTES = (
    "minimum effect: 3 points of power, fixed before any run. Part of the gain is built into the protocol (the "
    "official one, as we read it): the alternatives are chosen more concentrated than the boundary pair (Reg 3.0 "
    "at s = 0.5 and 3.32 at s = 0.7 against 3.6), so at equal NAMMD gap their MMD^2 sits relatively closer to "
    "epsilon_mmd: at s = 0.5 the MMD^2 excess is 4%, 25%, 45%, 66% of epsilon_mmd where the NAMMD excess is 25%, "
    "50%, 74%, 99% of epsilon, and below a gap of 0.0040 (s = 0.5) or 0.0017 (s = 0.7) the alternative's MMD^2 is "
    "at or below epsilon_mmd, inside MMD's null. The claim measures the protocol the paper argues for (thresholds "
    "that follow the norms), not power at an equal MMD gap; C2b (equal norms) is the control."
)

CARD = PaperCard(
    slug="nammd",
    title="NAMMD closeness test",
    group="stats",
    api="icml26.stats.nammd.NAMMDClosenessTest",
    extra="stats",
    summary="Norm-adaptive MMD and its distribution closeness test, against the MMD closeness test.",
    claims=(
        Claim(
            id="C1a",
            statement="NAMMD-based DCT ... with bounded type-I error (at the boundary NAMMD = epsilon: Gaussian "
            "pairs at three concentrations, digits pairs A and B).",
            method=METHOD,
            profiles=BOUNDARY,
            **_TYPE1,
        ),
        Claim(
            id="C1b",
            statement="MMD-based DCT keeps its type-I error bounded on its own boundary (MMD^2 = epsilon_mmd: the "
            "Gaussian pair at s = 1 and digits pair A), the baseline's side of C1.",
            method=BASELINE,
            profiles=MMD_BOUNDARY,
            **_TYPE1,
        ),
        Claim(
            id="C1s",
            statement="NAMMD-based DCT ... with bounded type-I error, with its bandwidth selected on a held-out "
            "reference split (official rule: median x logspace(-1, 1), 25 values, max NAMMD_u / se) and the "
            "boundary pair set at that kernel, Gaussian pairs at three concentrations.",
            method=METHOD,
            profiles=SELECTED_BOUNDARY,
            **{
                **_TYPE1,
                "run": run_selected,
                "data": (),
                "revision": 1,
                "notes": "margin 0.01 above alpha, fixed before any run; one selection per cell (seed) on m held-out "
                "pairs, never tested. The quick profile (2 settings x 3 seeds x 200 draws) is too small to bound the "
                "type-I error within the margin and comes out inconclusive; the full profile (24 cells x 1000 "
                "draws) is the profile of record.",
            },
        ),
        Claim(
            id="C2",
            statement="NAMMD-based DCT has higher test power compared to MMD-based DCT "
            "(alternatives more concentrated than the boundary pair, same NAMMD gap).",
            min_effect=0.03,
            profiles=_power_profiles("gaussian", (0.5, 0.7), GAPS, (200,), (100, 200, 400), (0.05, 0.2, 1.6)),
            paper_figure="higher power than MMD-DCT (no number in the abstract)",
            notes=C2_NOTES,
            **_POWER,
        ),
        Claim(
            id="C2b",
            statement="Control: with equal norms (alternatives shaped like the boundary pair) both tests agree.",
            test="equivalence",
            min_effect=0.02,
            profiles=_power_profiles("gaussian", (1.0,), GAPS, (200,), (100, 200, 400), (0.05, 0.2, 1.6)),
            paper_figure="no gain is expected when the norms are equal (control)",
            notes="equivalence margin: 2 points of power, fixed before any run",
            **_POWER,
        ),
        Claim(
            id="C2s",
            statement="NAMMD-based DCT has higher test power compared to MMD-based DCT, each test with its own "
            "bandwidth selected on a held-out reference split (the official rule and protocol).",
            min_effect=0.03,
            profiles=SELECTED_POWER,
            paper_figure="higher power than MMD-DCT (no number in the abstract)",
            notes="minimum effect: 3 points of power, fixed before any run (as C2). One selection per cell (seed) "
            "on m held-out pairs of the setting's pair at s0 = 1; the closeness problem is then set at the NAMMD "
            "test's kernel (epsilon fixed, the pairs re-solved), as the official script does after its selection. "
            "The selected kernels are wide (full run: NAMMD's s0 from 1.5 to 12, median 3.3, against the data's "
            "scale 0.5-1; a location shift favours a near-linear kernel), and a fixed epsilon is easier to test "
            "there, so C2's gaps saturate both tests; the gaps here were fixed by the two tests' average power "
            "(about 0.2-0.7 at m = 200 in a pilot), blind to their difference. As in C2, part of the gain is built "
            "into the protocol, more so at these small gaps: in 10 of the 64 full cells the alternative's MMD^2 at "
            "the MMD test's kernel is at or below epsilon_mmd (inside MMD's null), and on average MMD's relative "
            "excess over its threshold is 0.59 of NAMMD's (C2: 0.62). With the official closed-form variance, "
            "which overestimates at wide kernels, both tests reject less (0.350 vs 0.279, recorded on the card). "
            "Power is not monotone in the gap on the plot: every cell selects its own kernels, and the difficulty "
            "of a fixed epsilon follows the selected kernel.",
            **{**_POWER, "run": run_selected, "revision": 1},
        ),
        Claim(
            id="C3",
            statement="NAMMD-DCT has higher power than MMD-DCT on real images (weighted distributions over "
            "scikit-learn's digits, concentrated alternative, exact population values).",
            min_effect=0.03,
            profiles=_power_profiles("digits", (), DIGIT_GAPS, (150,), (150, 300), (0.05, 0.15, 1.4)),
            paper_figure="higher power on real images (paper: MNIST/CIFAR; no number in the abstract)",
            data=("scikit-learn",),
            notes="minimum effect: 3 points of power, fixed before any run",
            **_POWER,
        ),
    ),
)
