"""Reproduction of MMFLD's claims on a constrained mean-field problem with a grid reference solution.

Problem (the notes' quick problem, ``problems.interaction_box``): X = [0, 1], F(mu) = int V dmu + 1/2 iint K dmu dmu
with V(x) = -1.5 x and a Gaussian K (bandwidth 0.2, weight 1; positive definite, so F is convex), lam = 0.05. The
minimiser mu* has a boundary layer at x = 1 (mean 0.880); it is computed once on a 2000-cell grid by the damped
fixed-point iteration (``grid_fixed_point``) and the metrics compare particles with it.

- C1 (linear convergence, the paper's continuous-time theorem): MMFLD from uniform particles; the gap
  L(mu_N) - L(mu*) of a 50-bin histogram (Miller-Madow entropy, the reference on the same bins), pooled over the
  replicas; the slope of log gap against time t = k eta, fitted over the records before the gap first falls below
  2e-3 (the start of the finite-N / binning floor; fixed before any run).
- C2, C2b, C2c (feasibility without boundary atoms, and the stationary bias): MMFLD, projected, reflected and
  reparameterised MFLD from the SAME initial particles, drawn from mu* (so every arm is compared at stationarity,
  not at the slow start of the mirror dynamics near the boundary, the notes' trap), same step, noise stream and
  horizon T = 10 (quick, eta = 0.02) or 30 (full, eta = 0.01 and 0.02) time units, about 1-3 relaxation times
  (1 / rate; C1 measures a rate of ~0.1 per time unit); the metrics are
  averaged over the records of the second half: the fraction of particles within 1e-9 of the boundary, the error of
  the mean |mean - mean*| (pooled over replicas), and W1 to mu*.
- C3 (propagation of chaos): MMFLD at N = 25 ... 400 from mu*; the W1 distance of the N-particle empirical measure
  to mu*, averaged over the second half of the run and the replicas, against N; the slope of log W1 on log N.

The abstract reports no numbers (the claims are theorems): each claim tests the qualitative behaviour the theorem
and the notes predict, with margins fixed before any run and stated in the claim's notes.
"""

from __future__ import annotations

import functools
from typing import Any

from icml26._core import Cell, Claim, PaperCard, profiles, single_torch_thread
from icml26._core.plots import with_judged_metric

GAP_FLOOR = 2e-3  # C1's fit window ends where the gap first drops below this (fixed before any run)
ARMS = ("mmfld", "projected", "reflected", "reparameterized")


@functools.lru_cache(maxsize=2)
def _problem(name: str = "interaction_box1d") -> Any:
    from icml26.probabilistic.mmfld.problems import get_problem

    prob = get_problem(name)
    prob.reference()  # computed once per process
    return prob


def _solver(arm: str) -> Any:
    from icml26.probabilistic.mmfld import dynamics

    return {
        "mmfld": dynamics.MirrorMFLD,
        "projected": dynamics.ProjectedMFLD,
        "reflected": dynamics.ReflectedMFLD,
        "reparameterized": dynamics.ReparameterizedMFLD,
    }[arm]


def _reference_start(prob: Any, cell: Cell, n: int, replicas: int) -> Any:
    import torch

    from icml26.probabilistic.mmfld.reference import sample_reference

    gen = torch.Generator().manual_seed(10_000 + cell.seed)
    return sample_reference(prob.reference(), (replicas, n), gen)


def fit_log_gap_slope(times: Any, gaps: Any, floor: float = GAP_FLOOR) -> tuple[float, int]:
    """Least-squares slope of log(gap) on time over the records before the gap first falls below ``floor``
    (at least the first two records); returns (slope, number of records used)."""
    import numpy as np

    t, g = np.asarray(times, float), np.asarray(gaps, float)
    below = np.flatnonzero(~(g > floor))
    end = max(2, int(below[0]) if below.size else len(g))
    return float(np.polyfit(t[:end], np.log(np.maximum(g[:end], 1e-300)), 1)[0]), end


# ---------------------------------------------------------------------------------------------------- cells
@single_torch_thread()
def run_convergence(cell: Cell) -> dict[str, Any]:
    """C1: MMFLD from uniform particles; the histogram gap L(mu_N) - L(mu*) along the run and its log-slope."""
    from icml26.probabilistic.mmfld.dynamics import MirrorMFLD

    prob = _problem()
    binned = prob.binned()
    l_star = binned.of_reference(prob.reference())
    gaps: list[tuple[float, float]] = []
    step = float(cell["step"])

    def record(k: int, x: Any) -> None:
        gaps.append((k * step, binned.of_samples(x) - l_star))

    replicas = int(cell["replicas"])
    solver = MirrorMFLD(
        prob.objective, prob.domain, prob.lam, step, int(cell["n"]), n_replicas=replicas, seed=cell.seed
    )
    solver.run(int(cell["n_steps"]), record_every=int(cell["record_every"]), callback=record)
    times, values = zip(*gaps, strict=True)
    slope, used = fit_log_gap_slope(times, values)
    return {
        "metrics": {"mmfld": {"log_gap_slope": slope, "final_gap": values[-1], "fit_records": used}},
        "curves": {"gap": [{"time": t, "gap": g} for t, g in gaps]},
        "info": {"l_star_binned": l_star, "floor": GAP_FLOOR},
    }


@single_torch_thread()
def run_stationary(cell: Cell) -> dict[str, Any]:
    """C2: every arm from the same draws of mu*, same step, noise stream and horizon; second-half averages."""
    import numpy as np

    from icml26.probabilistic.mmfld.reference import wasserstein1_to_reference

    prob = _problem()
    ref = prob.reference()
    n, replicas, step = int(cell["n"]), int(cell["replicas"]), float(cell["step"])
    n_steps = round(float(cell["horizon"]) / step)
    every = max(1, n_steps // 60)
    init = _reference_start(prob, cell, n, replicas)
    mean_star = float(ref.mean[0])
    metrics, curves = {}, []
    for arm in ARMS:
        w1: list[Any] = []
        solver = _solver(arm)(prob.objective, prob.domain, prob.lam, step, n, seed=cell.seed)
        res = solver.run(
            n_steps,
            init,
            record_every=every,
            callback=lambda k, x, out=w1: out.append(wasserstein1_to_reference(x, ref)),
        )
        h = res.history
        late = h["step"] >= n_steps / 2
        mean = float(np.mean(h["mean"][late]))
        metrics[arm] = {
            "boundary_mass": float(np.mean(h["boundary_mass"][late])),
            "mean_error": abs(mean - mean_star),
            "w1": float(np.mean(np.stack([w.numpy() for w in w1])[late])),
            "infeasible_fraction": float(np.mean(h["infeasible_fraction"])),
        }
        curves += [
            {"arm": arm, "time": float(t), "boundary_mass": float(np.mean(b)), "mean": float(np.mean(m))}
            for t, b, m in zip(h["time"], h["boundary_mass"], h["mean"], strict=True)
        ]
    return {"metrics": metrics, "curves": {"trajectory": curves}, "info": {"mean_star": mean_star, "steps": n_steps}}


@single_torch_thread()
def run_chaos(cell: Cell) -> dict[str, Any]:
    """C3: MMFLD's W1 to mu* (second-half average) at each particle count N; the slope of log W1 on log N."""
    import numpy as np

    from icml26.probabilistic.mmfld.dynamics import MirrorMFLD
    from icml26.probabilistic.mmfld.reference import wasserstein1_to_reference

    prob = _problem()
    ref = prob.reference()
    step, replicas = float(cell["step"]), int(cell["replicas"])
    n_steps = round(float(cell["horizon"]) / step)
    every = max(1, n_steps // 60)
    rows = []
    for n in cell["ns"]:
        w1: list[float] = []
        init = _reference_start(prob, cell, int(n), replicas)
        solver = MirrorMFLD(prob.objective, prob.domain, prob.lam, step, int(n), seed=cell.seed)
        res = solver.run(
            n_steps,
            init,
            record_every=every,
            callback=lambda k, x, out=w1: out.append(float(wasserstein1_to_reference(x, ref).mean())),
        )
        late = res.history["step"] >= n_steps / 2
        rows.append({"n": int(n), "w1": float(np.mean(np.asarray(w1)[late]))})
    ns, w = np.array([r["n"] for r in rows], float), np.array([r["w1"] for r in rows])
    slope = float(np.polyfit(np.log(ns), np.log(w), 1)[0])
    return {"metrics": {"mmfld": {"w1_slope": slope, "w1_at_max_n": float(w[-1])}}, "curves": {"chaos": rows}}


# ---------------------------------------------------------------------------------------------------- plots
def _ok(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["status"] == "ok"]


def _legend_outside(ax: Any) -> None:
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)


def plot_convergence(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    import numpy as np

    for i, r in enumerate(_ok(records)):
        rows = r["curves"]["gap"]
        t, g = np.array([x["time"] for x in rows]), np.array([x["gap"] for x in rows])
        used = int(r["metrics"]["mmfld"]["fit_records"])
        slope = r["metrics"]["mmfld"]["log_gap_slope"]
        ax.semilogy(t, np.where(g > 0, g, np.nan), ".", ms=3, color=f"C{i}", label=f"MMFLD seed {r['spec']['seed']}")
        intercept = float(np.polyfit(t[:used], np.log(np.maximum(g[:used], 1e-300)), 1)[1])  # the judged fit's line
        ax.semilogy(
            t[:used], np.exp(intercept + slope * t[:used]), "-", lw=0.8, color=f"C{i}", label=f"fit {slope:.3f}/t"
        )
    ax.axhline(GAP_FLOOR, color="grey", ls="--", lw=0.8, label="fit floor 2e-3")
    ax.set_xlabel("time t = k eta")
    ax.set_ylabel("L(mu_N) - L(mu*) (histogram)")
    _legend_outside(ax)


def _arm_box(records: list[dict[str, Any]], ax: Any, metric: str, label: str, log: bool = False) -> None:
    ok = _ok(records)
    data = [[r["metrics"][a][metric] for r in ok] for a in ARMS]
    ax.boxplot(data, tick_labels=list(ARMS))
    for i, vals in enumerate(data):
        ax.plot([i + 1] * len(vals), vals, "o", ms=3, color="C1", label="cells (seed x step)" if i == 0 else None)
    ax.tick_params(axis="x", labelrotation=15, labelsize=7)
    ax.set_ylabel(label)
    if log:
        ax.set_yscale("symlog", linthresh=1e-4)


def plot_boundary(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    _arm_box(records, ax, "boundary_mass", "fraction within 1e-9 of the boundary")
    ax.axhline(0.0, color="C2", ls="--", lw=0.8, label="mu* (no atom)")
    _legend_outside(ax)


def plot_mean_error(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    _arm_box(records, ax, "mean_error", "|mean - mean*| (second half)", log=True)
    ax.axhline(0.0, color="C2", ls="--", lw=0.8, label="exact")
    _legend_outside(ax)


def plot_w1(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    _arm_box(records, ax, "w1", "W1(mu_N, mu*) (second half)")
    _legend_outside(ax)


def plot_chaos(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    import numpy as np

    for i, r in enumerate(_ok(records)):
        rows = r["curves"]["chaos"]
        ax.loglog(
            [x["n"] for x in rows],
            [x["w1"] for x in rows],
            "o-",
            ms=3,
            color=f"C{i}",
            label=f"MMFLD seed {r['spec']['seed']}",
        )
    ok = _ok(records)
    if ok:
        rows = ok[0]["curves"]["chaos"]
        ns = np.array([x["n"] for x in rows], float)
        ax.loglog(ns, rows[0]["w1"] * (ns / ns[0]) ** -0.5, "k--", lw=0.8, label="slope -1/2 (iid)")
    ax.set_xlabel("particles N")
    ax.set_ylabel("W1(mu_N, mu*)")
    _legend_outside(ax)


# ---------------------------------------------------------------------------------------------------- claims
CONVERGENCE = profiles(
    smoke={"n": 30, "replicas": 1, "step": 0.04, "n_steps": 150, "record_every": 15},
    quick={"n": 100, "replicas": 2, "step": 0.04, "n_steps": 1500, "record_every": 50},
    full={"n": 200, "replicas": 4, "step": 0.02, "n_steps": 4000, "record_every": 50},
    seeds=(1, 3, 5),
    cell_seconds=(1.5, 1, 5),
)
STATIONARY = profiles(
    smoke={"n": 30, "replicas": 1, "step": 0.01, "horizon": 1.0},
    quick={"n": 100, "replicas": 2, "step": 0.02, "horizon": 10.0},
    full=[{"n": 200, "replicas": 2, "step": s, "horizon": 30.0} for s in (0.01, 0.02)],
    seeds=(1, 3, 5),
    cell_seconds=(1, 1, 6),
)
CHAOS = profiles(
    smoke={"ns": [10, 20], "replicas": 1, "step": 0.02, "horizon": 1.0},
    quick={"ns": [25, 50, 100], "replicas": 2, "step": 0.02, "horizon": 10.0},
    full={"ns": [25, 50, 100, 200, 400], "replicas": 2, "step": 0.02, "horizon": 30.0},
    seeds=(1, 3, 5),
    cell_seconds=(1, 1, 5),
)
_STAT = dict(run=run_stationary, profiles=STATIONARY, method="mmfld")
_NO_NUMBERS = "no numbers in the abstract (theorems); notes: "

CARD = PaperCard(
    slug="mmfld",
    title="Mirror mean-field Langevin dynamics",
    group="probabilistic",
    api="icml26.probabilistic.mmfld.MirrorMFLD",
    extra="probabilistic",
    summary="Mean-field Langevin dynamics through a log-barrier mirror map on a box, against projected, reflected and "
    "reparameterised MFLD on an entropy-regularised interaction energy with a grid reference solution.",
    claims=(
        Claim(
            id="C1",
            statement="MMFLD converges linearly: the slope of log(L(mu_N) - L(mu*)) against time is negative, below "
            "-0.05 per time unit, on the convex interaction energy on [0, 1].",
            metric="log_gap_slope",
            direction="lower",
            method="mmfld",
            reference=0.0,
            min_effect=0.05,
            paper_figure=_NO_NUMBERS + "the fitted slope of log(L - L*) over the first phase is negative",
            unit="1/time",
            notes="margin 0.05 per time unit fixed before any run: a slower rate would not bring the gap from its "
            "start (~0.35) to the 2e-3 floor within the horizon (T = 60 quick, 80 full); the gap is a 50-bin "
            "histogram estimate (Miller-Madow entropy), so it plateaus at a finite-N / binning floor and the fit "
            "stops there.",
            plot=with_judged_metric(plot_convergence, title="MMFLD gap and its fitted log-slope"),
            run=run_convergence,
            profiles=CONVERGENCE,
        ),
        Claim(
            id="C2",
            statement="MMFLD's particles never sit on the boundary, while projected MFLD piles an atom there: the "
            "fraction of particles within 1e-9 of the boundary is lower for MMFLD by more than 0.05.",
            metric="boundary_mass",
            direction="lower",
            baselines=("projected",),
            min_effect=0.05,
            paper_figure=_NO_NUMBERS + "projected MFLD piles tens of percent of the particles on the boundary at "
            "eta = 0.01; MMFLD none",
            notes="margin 0.05 (absolute fraction) fixed before any run from the notes' 'tens of percent'; all arms "
            "start from the same draws of mu* (our reading, so that the comparison is at stationarity).",
            plot=plot_boundary,
            **_STAT,
        ),
        Claim(
            id="C2b",
            statement="MMFLD's stationary error of the mean is less than half projected MFLD's at the same step.",
            metric="mean_error",
            direction="lower",
            baselines=("projected",),
            min_effect=0.5,
            relative=True,
            paper_figure=_NO_NUMBERS + "|mean_proj - mean*| > 2x the MMFLD error",
            notes="relative effect 1 - err_MMFLD / err_projected > 0.5 (the notes' 2x), fixed before any run.",
            plot=plot_mean_error,
            **_STAT,
        ),
        Claim(
            id="C2c",
            statement="Against the stronger box baseline, reflected MFLD (exact in continuous time), MMFLD is not "
            "worse: its stationary W1 to mu* exceeds reflected MFLD's by less than 0.005.",
            metric="w1",
            direction="lower",
            baselines=("reflected",),
            test="noninferiority",
            min_effect=0.005,
            paper_figure=_NO_NUMBERS + "keep reflected MFLD, leaving it out overstates MMFLD",
            notes="margin 0.005 fixed before any run: about the sampling W1 of N = 200 draws of mu* (sd ~ 0.1), "
            "i.e. a difference below the particle noise.",
            plot=plot_w1,
            **_STAT,
        ),
        Claim(
            id="C3",
            statement="Propagation of chaos: the W1 distance of MMFLD's N-particle measure to mu* shrinks with N; "
            "the slope of log W1 on log N is below -0.25.",
            metric="w1_slope",
            direction="lower",
            method="mmfld",
            reference=0.0,
            min_effect=0.25,
            paper_figure=_NO_NUMBERS + "uniform-in-time propagation of chaos for the time- and particle-discretised "
            "scheme",
            notes="margin 0.25 (half the iid rate 1/2) fixed before any run; W1 of the empirical measure contains the "
            "sampling error (N^(-1/2)) and the chaos error, so a floor from the interaction or the step would flatten "
            "the slope. The quick profile spans N = 25-100 (a factor 4, shorter runs), so its interval is wide and it "
            "may be inconclusive where the full profile (N = 25-400, a factor 16) decides.",
            plot=with_judged_metric(plot_chaos, title="W1 to mu* against N"),
            run=run_chaos,
            profiles=CHAOS,
        ),
    ),
)
