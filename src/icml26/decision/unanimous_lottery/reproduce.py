"""Reproduction: query counts of every algorithm on the same instances, against the lower-bound shapes.

One cell = one setting and one seed, a block of instances; every arm runs on every instance of the block and
every answer is checked against the ground truth (``certify``: a wrong answer fails the cell). Every family
here is feasible by construction, so every arm must also *solve* every instance: the cells record each arm's
``solve_rate`` and fail unless all are 1 (an arm that gives up early is not cheaper, and claims reading a
failed cell are inconclusive instead of comparing query counts). Counts are exact, so the only randomness is
the instances' (and the randomised order's).

- Random cells (C1, C2b, C4): random feasible instances (n, m, ε on the notes' grid), with the arms
  full / deterministic / randomized, the same two on the adversarial order, and the advised variants
  (exact lottery = the witness; wrong vertex; exact binding set = the duals at the true Chebyshev centre;
  adversarial binding set = the m slackest stakeholders; budget m). One random infeasible instance per
  feasible one is solved too (info only: queries and certificate kinds). Exact advice must cost exactly n
  queries on every instance (else the cell fails). C2b, C4a and C4b read ``queries_per_deterministic``, the
  per-instance ratio to the deterministic algorithm in the same order (1 for that baseline), so that the
  card's means and its effect always agree in sign; the advice-overhead claims (C4c, C4d) read the worst
  instance of each block, since they say "at most".
- Chain cells (C2): the adversarial chain of L links (m = 2, ε = 1e-9); the randomised algorithm runs ``instances``
  times (a fresh order each), full elicitation and the deterministic order once (they are deterministic).
- Window cells (C3): narrow-window instances (m = 2, window 4ε), swept over n at ε = 1e-3 and over ε at n = 30;
  the R² of the linear fits of mean queries on n and on log2(1/ε). The Ω(n) and Ω(log 1/ε) lower bounds are
  drawn as reference lines, never tested.
"""

from __future__ import annotations

import math
from typing import Any

from icml26._core import Cell, Claim, PaperCard, profiles

ROBUST = ("full", "deterministic", "randomized")
ADVERSARIAL = ("deterministic_adversarial", "randomized_adversarial")
ADVISED = ("advice_exact", "advice_wrong_vertex", "advice_binding", "advice_binding_adversarial")
RANDOM_ARMS = ROBUST + ADVERSARIAL + ADVISED
CHAIN_EPS = 1e-9
WINDOW = {"m": 2, "eps_at": 1e-3, "n_at": 30}


def _r2(x: Any, y: Any) -> tuple[float, float]:
    """Slope and R² of the least-squares line y ~ a + b x."""
    import numpy as np

    x, y = np.asarray(x, float), np.asarray(y, float)
    b, a = np.polyfit(x, y, 1)
    ss_res, ss_tot = float(np.sum((y - a - b * x) ** 2)), float(np.sum((y - y.mean()) ** 2))
    return float(b), (1.0 - ss_res / ss_tot) if ss_tot > 0 else 1.0


def _solve_checked(inst: Any, eps: float, method: str, seed: int | None = None, **kw: Any) -> Any:
    """Solve and check the answer against the ground truth (a wrong answer fails the cell); ``seed`` only
    reaches the randomised method (the deterministic ones refuse an rng)."""
    from icml26.decision.unanimous_lottery import check_result, find_unanimous_lottery

    rng = seed if method == "randomized" else None
    result = find_unanimous_lottery(inst.oracle(), inst.n_options, eps, method=method, rng=rng, **kw)
    report = check_result(result, (inst.utilities, inst.thresholds))
    if not report.valid:
        raise AssertionError(f"{method} on {inst.name}: wrong answer: {report.reason}")
    return result


def _require_solved(solved: dict[str, list[bool]], family: str) -> dict[str, float]:
    """Solve rate of every arm on instances documented as feasible; any unsolved instance fails the cell."""
    import numpy as np

    rates = {arm: float(np.mean(v)) for arm, v in solved.items()}
    short = {arm: rate for arm, rate in rates.items() if rate < 1.0}
    if short:
        raise AssertionError(
            f"arms left feasible {family} instances unsolved (solve rates {short}): a method that gives up "
            "early is not cheaper, so this cell compares nothing"
        )
    return rates


def _random_arms(inst: Any, eps: float, rng: Any) -> dict[str, Any]:
    from icml26.decision.unanimous_lottery import (
        Advice,
        adversarial_binding,
        adversarial_order,
        true_binding,
        wrong_vertex,
    )

    m, seed = inst.n_options, int(rng.integers(2**31))
    adv = adversarial_order(inst)
    runs = {
        "full": _solve_checked(inst, eps, "full"),
        "deterministic": _solve_checked(inst, eps, "deterministic"),
        "randomized": _solve_checked(inst, eps, "randomized", seed),
        "deterministic_adversarial": _solve_checked(adv, eps, "deterministic"),
        "randomized_adversarial": _solve_checked(adv, eps, "randomized", seed),
        "advice_exact": _solve_checked(inst, eps, "deterministic", advice=Advice(lottery=inst.witness)),
        "advice_wrong_vertex": _solve_checked(inst, eps, "deterministic", advice=Advice(lottery=wrong_vertex(inst))),
        "advice_binding": _solve_checked(inst, eps, "deterministic", advice=Advice(binding=true_binding(inst))),
        "advice_binding_adversarial": _solve_checked(
            inst, eps, "deterministic", advice=Advice(binding=adversarial_binding(inst, m))
        ),
    }
    return runs


def run_random(cell: Cell) -> dict[str, Any]:
    """All arms on a block of random feasible (and infeasible) instances at one (n, m, eps).

    Every arm must solve every feasible instance (``solve_rate`` 1), else the cell fails: all claims reading
    it then fail their cells instead of comparing query counts.
    """
    import numpy as np

    from icml26.decision.unanimous_lottery import elicitation_cost, random_feasible, random_infeasible

    n, m, eps, block = int(cell["n"]), int(cell["m"]), float(cell["eps"]), int(cell["instances"])
    rng = cell.rng(by_setting=True)
    cap = n + m * elicitation_cost(m, eps)  # n queries for p̂ and m nominal elicitations: the advice budget
    rows: dict[str, dict[str, list[float]]] = {a: {} for a in RANDOM_ARMS}
    solved: dict[str, list[bool]] = {a: [] for a in RANDOM_ARMS}
    infeasible: dict[str, list[Any]] = {a: [] for a in ROBUST}
    for _ in range(block):
        runs = _random_arms(random_feasible(n, m, rng), eps, rng)
        if runs["advice_exact"].n_queries != n:  # the witness is accepted by all: exactly n queries, always
            raise AssertionError(f"exact advice cost {runs['advice_exact'].n_queries} queries, not n = {n}")
        q_full = runs["full"].n_queries
        for arm, r in runs.items():
            same_order = "deterministic_adversarial" if arm in ADVERSARIAL else "deterministic"
            solved[arm].append(bool(r.feasible))
            for key, value in (
                ("queries", r.n_queries),
                ("queries_over_n", r.n_queries / n),
                ("fraction_of_full", r.n_queries / q_full),
                ("queries_per_deterministic", r.n_queries / runs[same_order].n_queries),
                ("elicited", r.n_elicited),
                ("overhead_ratio", (r.n_queries - runs["deterministic"].n_queries) / cap),
            ):
                rows[arm].setdefault(key, []).append(value)
        bad = random_infeasible(n, m, rng)
        for arm in ROBUST:
            r = _solve_checked(bad, eps, arm, int(rng.integers(2**31)))
            infeasible[arm].append((r.n_queries, r.certificate.kind))
    rates = _require_solved(solved, "random")
    metrics = {arm: {k: float(np.mean(v)) for k, v in values.items()} for arm, values in rows.items()}
    for arm, values in rows.items():  # "at most" claims read the worst instance of the block, not the mean
        metrics[arm]["max_overhead_ratio"] = float(np.max(values["overhead_ratio"]))
        metrics[arm]["solve_rate"] = rates[arm]
    for arm, runs_ in infeasible.items():
        metrics[arm]["infeasible_queries"] = float(np.mean([q for q, _ in runs_]))
    kinds = {arm: sorted({k for _, k in runs_}) for arm, runs_ in infeasible.items()}
    return {"metrics": metrics, "info": {"infeasible_certificate_kinds": kinds, "advice_cap_queries": cap}}


def run_chain(cell: Cell) -> dict[str, Any]:
    """Full, deterministic (index order: every link elicited) and randomised on the L-link chain."""
    import numpy as np

    from icml26.decision.unanimous_lottery import chain

    links, block = int(cell["links"]), int(cell["instances"])
    inst = chain(links, CHAIN_EPS)
    rng = cell.rng(by_setting=True)
    rows: dict[str, dict[str, list[float]]] = {a: {"elicited": [], "queries": []} for a in ROBUST}
    solved: dict[str, list[bool]] = {a: [] for a in ROBUST}
    for arm in ROBUST:  # full and deterministic are deterministic on a fixed instance: one run each suffices
        for _ in range(block if arm == "randomized" else 1):
            r = _solve_checked(inst, CHAIN_EPS, arm, int(rng.integers(2**31)) if arm == "randomized" else None)
            solved[arm].append(bool(r.feasible))
            rows[arm]["elicited"].append(r.n_elicited)
            rows[arm]["queries"].append(r.n_queries)
    rates = _require_solved(solved, "chain")
    metrics = {a: {k: float(np.mean(v)) for k, v in d.items()} | {"solve_rate": rates[a]} for a, d in rows.items()}
    harmonic = float(sum(1.0 / k for k in range(1, links + 1)))
    return {"metrics": metrics, "info": {"links": links, "harmonic_number": harmonic}}


def run_window(cell: Cell) -> dict[str, Any]:
    """Mean queries on narrow windows against n (at eps_at) and against log2(1/eps) (at n_at); their R²."""
    import numpy as np

    from icml26.decision.unanimous_lottery import narrow_window

    block, rng = int(cell["instances"]), cell.rng(by_setting=True)
    sweeps = {
        "n": [(int(n), WINDOW["eps_at"]) for n in cell["ns"]],
        "log2_inv_eps": [(WINDOW["n_at"], float(e)) for e in cell["eps_grid"]],
    }
    metrics: dict[str, dict[str, float]] = {a: {} for a in ROBUST}
    solved: dict[str, list[bool]] = {a: [] for a in ROBUST}
    curves = []
    for sweep, points in sweeps.items():
        means: dict[str, list[float]] = {a: [] for a in ROBUST}
        for n, eps in points:
            instances = [narrow_window(n, WINDOW["m"], eps, rng) for _ in range(block)]
            for arm in ROBUST:
                results = [_solve_checked(i, eps, arm, int(rng.integers(2**31))) for i in instances]
                solved[arm].extend(bool(r.feasible) for r in results)
                means[arm].append(float(np.mean([r.n_queries for r in results])))
                x = n if sweep == "n" else math.log2(1 / eps)
                curves.append({"sweep": sweep, "x": x, "method": arm, "mean_queries": means[arm][-1]})
        xs = [n for n, _ in points] if sweep == "n" else [math.log2(1 / e) for _, e in points]
        for arm in ROBUST:
            slope, r2 = _r2(xs, means[arm])
            metrics[arm][f"r2_{sweep}"], metrics[arm][f"slope_{sweep}"] = r2, slope
    for arm, rate in _require_solved(solved, "narrow-window").items():
        metrics[arm]["solve_rate"] = rate
    return {"metrics": metrics, "curves": {"queries": curves}}


# ---------------------------------------------------------------------------------------------------- plots
DPI = 150


def _finish(ax: Any, xlabel: str, ylabel: str, xticks: list[float] | None = None) -> None:
    """Labels, plain tick labels, a legend outside the axes (it never covers data) and >= 150 dpi."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    plain = FuncFormatter(lambda v, _: f"{v:.3g}")
    if xticks is not None:
        ax.set_xticks(xticks, [f"{x:.4g}" for x in xticks])
        ax.xaxis.set_minor_formatter(NullFormatter())
    if ax.get_yscale() == "log":
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    ax.figure.set_dpi(DPI)
    ax.figure.set_size_inches(8.0, 4.4)


def _by_n(records: list[dict[str, Any]], value: Any, arms: tuple[str, ...]) -> dict[str, tuple[list, list]]:
    """Mean over the cells of each n (all m and eps) of ``value(record, arm)``."""
    import numpy as np

    acc: dict[str, dict[int, list[float]]] = {a: {} for a in arms}
    for r in records:
        if r["status"] == "ok":
            for a in arms:
                acc[a].setdefault(r["spec"]["setting"]["n"], []).append(value(r, a))
    return {a: (sorted(v), [float(np.mean(v[k])) for k in sorted(v)]) for a, v in acc.items()}


def _plot_vs_n(value: Any, arms: tuple[str, ...], lines: list[tuple[float, str]], ylabel: str, logy: bool):  # type: ignore[no-untyped-def]
    """The verdict's per-cell quantity against n, per arm (the claim's method bold), with reference lines."""

    def plot(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
        claim = card["claim"]
        for arm, (xs, ys) in _by_n(records, value, arms).items():
            role = " (method)" if arm == claim["method"] else " (baseline)" if arm in claim["baselines"] else ""
            ax.plot(xs, ys, marker="o", ms=3, lw=2.2 if role else 1.0, label=f"{arm}{role}")
        for y, label in lines:
            ax.axhline(y, color="k", ls="--", lw=0.8, label=label)
        ax.set_xscale("log")
        if logy:
            ax.set_yscale("log")
        ns = sorted({r["spec"]["setting"]["n"] for r in records if r["status"] == "ok"})
        _finish(ax, "stakeholders n (mean over the cells' m and eps)", ylabel, ns)

    return plot


def _metric(name: str):  # type: ignore[no-untyped-def]
    return lambda r, arm: r["metrics"][arm][name]


def _ratio_to_full(r: dict[str, Any], arm: str) -> float:
    """The cell's mean queries over full elicitation's: 1 - the cell's relative effect (the C1 verdict)."""
    return r["metrics"][arm]["queries"] / r["metrics"]["full"]["queries"]


def plot_chain(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    import numpy as np

    ok = [r for r in records if r["status"] == "ok"]
    links = sorted({r["info"]["links"] for r in ok})
    style = {"full": dict(marker="s", ms=9, mfc="none", ls=":"), "deterministic": dict(marker="o"), "randomized": {}}
    for arm in ROBUST:  # full and deterministic coincide (both elicit all L links): full drawn as hollow squares
        ys = [np.mean([r["metrics"][arm]["elicited"] for r in ok if r["info"]["links"] == L]) for L in links]
        method = arm == card["claim"]["method"]
        label = arm + (" (method)" if method else " (baseline)")
        ax.plot(links, ys, lw=2.2 if method else 1.0, label=label, **({"marker": "o"} | style[arm]))
    ax.plot(links, [sum(1 / k for k in range(1, L + 1)) for L in links], "k:", label="H_L (expected, random order)")
    ax.plot(links, [L / 2 for L in links], "k--", lw=0.8, label="L/2 (min effect: half of the baselines' L)")
    _finish(ax, "chain links L (mean over seeds; randomised: mean over its orders)", "stakeholders elicited", links)


def _plot_window(sweep: str):  # type: ignore[no-untyped-def]
    """Mean queries along the sweep (per arm), the deterministic arm's least-squares line whose R² the verdict
    reads (R² per seed in the legend), and the lower bound's shape as a reference line."""

    def plot(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
        import numpy as np

        ok = [r for r in records if r["status"] == "ok"]
        acc: dict[str, dict[float, list[float]]] = {}
        for r in ok:
            for row in r["curves"]["queries"]:
                if row["sweep"] == sweep:
                    acc.setdefault(row["method"], {}).setdefault(row["x"], []).append(row["mean_queries"])
        for arm, d in acc.items():
            xs = sorted(d)
            method = arm == card["claim"]["method"]
            ax.plot(
                xs,
                [np.mean(d[x]) for x in xs],
                marker="o",
                lw=2.2 if method else 1.0,
                label=arm + (" (method)" if method else ""),
            )
        xs = np.array(sorted(next(iter(acc.values()))))
        det = [np.mean(acc["deterministic"][x]) for x in xs]
        slope, intercept = np.polyfit(xs, det, 1)
        r2 = ", ".join(f"{r['metrics']['deterministic'][card['claim']['metric']]:.3f}" for r in ok)
        ax.plot(xs, intercept + slope * xs, color="0.35", ls="-.", lw=1, label=f"linear fit (R² per seed: {r2})")
        if sweep == "n":
            ax.plot(xs, xs, "k--", lw=0.8, label="lower bound n (everyone sees the answer)")
            ax.set_xscale("log")
            ax.set_yscale("log")
            xlabel = f"stakeholders n (eps = {WINDOW['eps_at']:g}; mean over seeds)"
        else:
            ax.plot(xs, xs - 2, "k--", lw=0.8, label="lower bound log2(1/(4 eps)) (window position)")
            xlabel = f"log2(1/eps) (n = {WINDOW['n_at']}; mean over seeds)"
        _finish(ax, xlabel, "queries (mean over instances)", list(xs))

    return plot


# --------------------------------------------------------------------------------------------------- claims
def _grid(ns: tuple[int, ...], ms: tuple[int, ...], epss: tuple[float, ...], instances: int) -> list[dict[str, Any]]:
    return [{"n": n, "m": m, "eps": e, "instances": instances} for n in ns for m in ms for e in epss]


GRID_M, GRID_EPS = (3, 5, 8), (1e-2, 1e-3, 1e-4)
# quick: the grid's corners (m in {3, 8}, eps in {1e-2, 1e-4}), 5 instances per cell (whole quick profile ~30 s);
# full: the whole grid, 50 instances per cell (~8 min of cell time, ~4 min on 2 workers)
RANDOM_ALL = profiles(
    smoke=_grid((10, 30), (3,), (1e-2,), 3),
    quick=_grid((10, 30, 100, 300), (3, 8), (1e-2, 1e-4), 5),
    full=_grid((10, 30, 100, 300, 1000), GRID_M, GRID_EPS, 50),
    seeds=(1, 1, 1),
    cell_seconds=(0.5, 0.7, 9.0),
)
RANDOM_LARGE = profiles(  # the notes' C1 assertion is for n >= 50: the same cells, restricted to n >= 100
    smoke=_grid((30,), (3,), (1e-2,), 3),
    quick=_grid((100, 300), (3, 8), (1e-2, 1e-4), 5),
    full=_grid((100, 300, 1000), GRID_M, GRID_EPS, 50),
    seeds=(1, 1, 1),
    cell_seconds=(0.5, 1.0, 12.0),
)
WINDOW_PROFILES = profiles(
    smoke={"ns": [10, 20, 30], "eps_grid": [1e-2, 1e-3, 1e-4], "instances": 3},
    quick={"ns": [10, 30, 100, 300], "eps_grid": [1e-2, 1e-3, 1e-4, 1e-5, 1e-6], "instances": 10},
    full={"ns": [10, 30, 100, 300, 1000], "eps_grid": [1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8], "instances": 20},
    seeds=(1, 3, 5),
    cell_seconds=(0.5, 3.5, 8.0),
)
# revision 3: refined, well-conditioned elicitation (issue 15); every arm must solve every feasible instance;
# the per-instance ratio queries_per_deterministic
_VS_FULL = dict(metric="queries", direction="lower", baselines=("full",), relative=True, run=run_random, revision=3)
_ADVICE = dict(direction="lower", run=run_random, profiles=RANDOM_ALL, revision=3)
_SAVING_NOTE = (
    "metric: queries / the deterministic algorithm's queries on the same instance in the same order, averaged "
    "over a cell's instances (so the baseline's value is exactly 1 and the effect, 1 - the method's mean ratio, "
    "is the mean per-instance saving: the summary cannot read as a win when the effect is a loss). "
    "min_effect 0.1, fixed before the rerun (issue 15): a saving under a tenth of the baseline's queries is not "
    "counted as an improvement in query complexity; the notes give no figure. Cells fail unless every arm "
    "solves every feasible instance."
)
_OVERHEAD_NOTE = (
    "overhead ratio = (queries - deterministic queries on the same instance) / (n + budget x nominal elicitation "
    "cost), budget m; the metric is its maximum over the block's instances (an 'at most' statement), averaged "
    "over settings by the verdict. Not a theorem instance by instance: the advised stakeholders seed the loop, "
    "which then follows another trajectory than the unadvised run. The proven guarantee is the worst-case bound "
    "query_bound(n, m, eps, advice_lottery=True) = n + k E + (k + 1) n, k <= n elicited. The cap uses the "
    "statement's nominal elicitation cost; the refinement halvings of the advised elicitations (a few per cent) "
    "count against it."
)
_BLOCK_MAX_NOTE = (
    " Quick and full profiles may disagree: the metric is the maximum over a block of instances, 5 in quick and "
    "50 in full (which also adds n = 1000), and a block's maximum grows with its size."
)
_PER_DET = "queries / deterministic's (same instance, same order)"
_TENTH = [(0.9, "0.9: min effect (a tenth fewer queries)")]
PLOT_VS_FULL = _plot_vs_n(
    _ratio_to_full,
    ROBUST,
    [(0.5, "0.5: min effect (half of full elicitation)")],
    "queries / full's (cell means) = 1 - effect",
    logy=True,
)
PLOT_ORDER_SAVING = _plot_vs_n(
    _metric("queries_per_deterministic"), ("randomized", *ADVERSARIAL), _TENTH, _PER_DET, logy=False
)
PLOT_ADVICE_SAVING = _plot_vs_n(
    _metric("queries_per_deterministic"), ("deterministic", *ADVISED), _TENTH, _PER_DET, logy=True
)
PLOT_OVERHEAD = _plot_vs_n(
    _metric("max_overhead_ratio"),
    ADVISED,
    [(1.0, "1: the cap (reference)")],
    "worst overhead in a block / (n + m E_nominal)",
    logy=False,
)

CARD = PaperCard(
    slug="unanimous_lottery",
    title="Unanimous lotteries by accept/reject queries",
    group="decision",
    api="icml26.decision.unanimous_lottery.find_unanimous_lottery",
    extra="decision",
    summary="Find a lottery every stakeholder accepts, or certify none exists, by accept/reject queries.",
    claims=(
        Claim(
            id="C1",
            statement="Adaptivity can avoid eliciting many stakeholders' constraints: the deterministic "
            "verify-then-elicit algorithm uses at most half the queries of full elicitation (n >= 100).",
            method="deterministic",
            min_effect=0.5,
            profiles=RANDOM_LARGE,
            paper_figure="qualitative (abstract); notes: adaptive ~1/10-1/5 of full elicitation",
            notes="relative saving (full - adaptive)/full >= 0.5, the notes' threshold for n >= 50. Cells fail "
            "unless every arm solves every feasible instance (solve_rate 1 per arm in every cell).",
            plot=PLOT_VS_FULL,
            **_VS_FULL,
        ),
        Claim(
            id="C1r",
            statement="The randomised verify-then-elicit algorithm also uses at most half the queries of full "
            "elicitation (n >= 100).",
            method="randomized",
            min_effect=0.5,
            profiles=RANDOM_LARGE,
            paper_figure="qualitative (abstract)",
            notes="as C1, for the random verification order",
            plot=PLOT_VS_FULL,
            **_VS_FULL,
        ),
        Claim(
            id="C2",
            statement="Randomisation further reduces the expected elicitation cost: on the adversarial chain the "
            "randomised order elicits at most half as many stakeholders as the deterministic order and as full "
            "elicitation (about H_L instead of L).",
            metric="elicited",
            direction="lower",
            method="randomized",
            baselines=("deterministic", "full"),
            relative=True,
            min_effect=0.5,
            run=run_chain,
            revision=2,
            profiles=profiles(
                smoke={"links": 6, "instances": 5},
                quick=[{"links": L, "instances": 30} for L in (8, 16)],
                full=[{"links": L, "instances": 100} for L in (8, 12, 16, 20)],
                seeds=(1, 3, 5),
                cell_seconds=(0.5, 0.5, 1.5),
            ),
            paper_figure="expected elicited H_n ~ ln n vs n (notes)",
            notes="threshold 0.5 from the notes; the chain is built against the implemented centring rule",
            plot=plot_chain,
        ),
        Claim(
            id="C2b",
            statement="A random verification order rescues adversarial orders: on random instances presented "
            "in an adversarial order, the randomised algorithm asks fewer queries than the deterministic one.",
            metric="queries_per_deterministic",
            direction="lower",
            method="randomized_adversarial",
            baselines=("deterministic_adversarial",),
            min_effect=0.1,
            run=run_random,
            revision=3,
            profiles=RANDOM_LARGE,
            paper_figure="qualitative (abstract)",
            notes=_SAVING_NOTE,
            plot=PLOT_ORDER_SAVING,
        ),
        Claim(
            id="C3a",
            statement="Linear dependence on the number of stakeholders: on narrow-window instances the "
            "deterministic algorithm's queries are linear in n (R² of the linear fit > 0.9); the Omega(n) lower "
            "bound is a reference line.",
            metric="r2_n",
            direction="higher",
            method="deterministic",
            reference=0.9,
            run=run_window,
            revision=2,
            profiles=WINDOW_PROFILES,
            paper_figure="Omega(n) lower bound; a measured curve, not a proof",
            notes="R² threshold 0.9 from the notes",
            plot=_plot_window("n"),
        ),
        Claim(
            id="C3b",
            statement="Logarithmic dependence on precision: on narrow-window instances the deterministic "
            "algorithm's queries are linear in log2(1/eps) (R² > 0.9); the Omega(log 1/eps) lower bound is a "
            "reference line.",
            metric="r2_log2_inv_eps",
            direction="higher",
            method="deterministic",
            reference=0.9,
            run=run_window,
            revision=2,
            profiles=WINDOW_PROFILES,
            paper_figure="Omega(log 1/eps) lower bound; a measured curve, not a proof",
            notes="R² threshold 0.9 from the notes. Inconclusive in both quick and full profiles: the curve rises "
            "by about 5.4 queries per bit of precision from eps = 1e-3 on, but the first step (1e-2 to 1e-3) is "
            "steeper, so the R² of a straight line sits near 0.93 with one seed of five just under 0.9: the "
            "logarithmic shape holds, the 0.9 threshold is on the edge at this sample size.",
            plot=_plot_window("log2_inv_eps"),
        ),
        Claim(
            id="C4a",
            statement="Accurate advice improves query complexity: an exact advised lottery costs exactly n "
            "queries, fewer than the robust deterministic algorithm.",
            metric="queries_per_deterministic",
            method="advice_exact",
            baselines=("deterministic",),
            min_effect=0.1,
            paper_figure="exactly n with exact advice (notes)",
            notes=_SAVING_NOTE + " Every cell also checks that exact advice costs exactly n on every instance.",
            plot=PLOT_ADVICE_SAVING,
            **_ADVICE,
        ),
        Claim(
            id="C4b",
            statement="Accurate advice about the binding stakeholders (the true constraints' active set, at most "
            "m) improves on the robust deterministic algorithm.",
            metric="queries_per_deterministic",
            method="advice_binding",
            baselines=("deterministic",),
            min_effect=0.1,
            paper_figure="qualitative (abstract)",
            notes=_SAVING_NOTE
            + " Not reproduced at our scale: eliciting the advised binding set up front (up to m stakeholders) "
            "costs up to m elicitations that the robust loop mostly does not spend on random instances, so the "
            "advice loses heavily at small n and pays off only once n-query verification rounds dominate "
            "(n >= 300 on this grid; see the plot by n).",
            plot=PLOT_ADVICE_SAVING,
            **_ADVICE,
        ),
        Claim(
            id="C4c",
            statement="Bad advice keeps the worst-case guarantee: a wrong advised lottery (the most-rejected "
            "vertex) costs at most n + m (m + (m - 1) log2(1/eps)) queries more than the robust algorithm on "
            "the same instance, on every instance of a block (worst overhead ratio < 1).",
            metric="max_overhead_ratio",
            method="advice_wrong_vertex",
            reference=1.0,
            paper_figure="preserving worst-case guarantees (abstract)",
            notes=_OVERHEAD_NOTE + _BLOCK_MAX_NOTE,
            plot=PLOT_OVERHEAD,
            **_ADVICE,
        ),
        Claim(
            id="C4d",
            statement="Bad advice keeps the worst-case guarantee: an adversarial advised binding set (the m "
            "slackest stakeholders) costs at most n + m (m + (m - 1) log2(1/eps)) queries more than the robust "
            "algorithm on the same instance, on every instance of a block (worst overhead ratio < 1).",
            metric="max_overhead_ratio",
            method="advice_binding_adversarial",
            reference=1.0,
            paper_figure="preserving worst-case guarantees (abstract)",
            notes=_OVERHEAD_NOTE + _BLOCK_MAX_NOTE,
            plot=PLOT_OVERHEAD,
            **_ADVICE,
        ),
    ),
)
