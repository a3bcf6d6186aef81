"""Reproduction of AES's claims at toy scale: tabular soft Q-learning on a 5 x 5 gridworld whose goal jumps.

One cell = one seed; it calibrates (cached, on the separate calibration seeds 10_000 onwards, on the *stationary*
task: the notes' protocol), then trains every arm on the same drifting grid, same seed, same budget, each beside its
own no-drift counterfactual run (:func:`icml26.decision.aes.drift_experiment`):

- ``aes``: the AES schedule (EMA-ratio proxy of the 0.9 quantile of |TD error| over the 32 parallel envs, square
  root rule, clip [alpha*/4, 4 alpha*], warm-up of 500 updates at alpha*);
- ``fixed_small``: alpha* fixed (the best fixed alpha on stationary calibration runs);
- ``fixed_large``: 4 alpha* fixed;
- ``auto``: SAC's automatic temperature from alpha*, target entropy the best of a grid on stationary calibration;
- ``aes_variation`` (no claim): AES with the other reading of the proxy (sliding-window variation, warm-up
  reference).

Task: start in the centre of a 5 x 5 grid, reward 1 on entering the goal (episode restarts), episodes cut at 20
steps, gamma = 0.9, learning rate 0.5, 32 parallel envs per run; the goal sits in a corner and jumps to the next
corner every phase (abrupt drift; 2,000 steps x 5 phases in full, 1,500 x 4 in quick; the fifth phase revisits
the first corner). Every corner is 4 moves from the start, so the optimal reward rate (1/4 per step) is the same in
every phase. The full profile adds a 7 x 7 grid
(6 moves, episodes cut at 28 steps, 3,000-step phases): a harder exploration problem.

Margins were fixed before any claim run, from the notes' assertions and the metrics' units, not from results:
C1 0.05 of the optimal reward rate, C2 0.1 of a phase, C3 0.05 of the optimal rate (non-inferiority). Before that,
an exploratory look at three seeds chose the proxy (see the card's notes) and the task's constants.
"""

from __future__ import annotations

from typing import Any

from icml26._core import Cell, Claim, PaperCard, profiles

ARMS = ("aes", "fixed_small", "fixed_large", "auto", "aes_variation")


def run_drift(cell: Cell) -> dict[str, Any]:
    """Every arm on the same drifting grid and seed, each with its no-drift counterfactual (see the module)."""
    from icml26.decision.aes import drift_experiment

    return drift_experiment(dict(cell.setting), cell.seed)


# ---------------------------------------------------------------------------------------------------- plots
def _curves(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """Normalised reward rate along training (mean over seeds, band +/- 1 sd) per arm, drift points marked."""
    import numpy as np

    from icml26._core.plots import arm_style, band_key

    claim = card["claim"]
    ok = [r for r in records if r["status"] == "ok"]
    size = ok[0]["spec"]["setting"]["size"] if ok else None
    ok = [r for r in ok if r["spec"]["setting"]["size"] == size]  # curves of the first setting (5 x 5)
    shown = [claim["method"], *claim["baselines"]]
    for i, arm in enumerate([*shown, *(a for a in ARMS if a not in shown)]):
        runs = [[p for p in r["curves"]["training"] if p["method"] == arm] for r in ok]
        runs = [r for r in runs if r]
        if not runs:
            continue
        xs = np.asarray([p["step"] for p in runs[0]], float)
        ys = np.asarray([[p["rate"] for p in r] for r in runs], float)
        style = arm_style(card, arm, index=i)
        role = "method" if arm == claim["method"] else "baseline" if arm in shown else "other reading, no claim"
        if arm not in shown:
            style = {**style, "ls": ":", "lw": 1.0}
        ax.plot(xs, ys.mean(0), label=f"{arm} ({role}), mean of {len(runs)} seeds", **style)
        ax.fill_between(xs, ys.mean(0) - ys.std(0), ys.mean(0) + ys.std(0), color=style["color"], alpha=0.12, lw=0)
    for j, c in enumerate(ok[0]["info"]["change_points"] if ok else []):
        ax.axvline(c, color="0.4", ls=":", lw=0.9, label="goal jumps (abrupt drift)" if j == 0 else None)
    ax.axhline(1.0, color="black", ls="--", lw=1.0, label="reference: optimal reward rate")
    band_key(ax)
    ax.legend()
    ax.set_xlabel(f"training step on the {size} x {size} grid (32 envs per step; 100-step means)", fontsize=8)
    ax.set_ylabel("reward rate / optimal rate (higher is better)", fontsize=8)


def _judged(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """The judged metric per grid: one bar per arm (mean over seeds), every seed as a dot; pairs pool both grids."""
    import numpy as np

    from icml26._core.plots import arm_style

    claim = card["claim"]
    metric, arms = claim["metric"], [claim["method"], *claim["baselines"]]
    ok = [r for r in records if r["status"] == "ok"]
    sizes = sorted({r["spec"]["setting"]["size"] for r in ok})
    width = 0.8 / len(arms)
    for j, arm in enumerate(arms):
        style = arm_style(card, arm)
        for g, size in enumerate(sizes):
            ys = np.asarray([r["metrics"][arm][metric] for r in ok if r["spec"]["setting"]["size"] == size], float)
            x = g + (j - (len(arms) - 1) / 2) * width
            label = f"{arm} ({'method' if j == 0 else 'baseline'}): bar = mean over seeds" if g == 0 else None
            ax.bar(x, ys.mean(), width * 0.9, color=style["color"], alpha=0.5, label=label)
            jitter = np.linspace(-0.3, 0.3, ys.size) * width
            ax.plot(
                x + jitter, ys, ".", color=style["color"], ms=3, label="dot: one seed" if g == 0 and j == 0 else None
            )
    ax.set_xticks(range(len(sizes)), [f"{s} x {s} grid" for s in sizes])
    ax.set_ylabel(f"{metric} ({claim['unit']}), {claim['direction']} is better", fontsize=8)
    ax.legend()


def _plot():  # type: ignore[no-untyped-def]
    def two_panels(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
        from icml26._core.plots import panels

        own, judged = panels(ax, 2, width_ratios=(1.25, 1.0))
        _curves(card, records, own)
        own.set_title("reward rate under abrupt goal jumps", fontsize=8)
        _judged(card, records, judged)
        judged.set_title("what the verdict is judged on (pairs pooled over the grids)", fontsize=8)

    return two_panels


# ------------------------------------------------------------------------------------------------- settings
_BASE = {
    "size": 5,
    "horizon": 20,
    "n_envs": 32,
    "gamma": 0.9,
    "lr": 0.5,
    "alpha_grid": [0.0025, 0.005, 0.01, 0.02, 0.04],
    "entropy_grid": [0.1, 0.2, 0.4, 0.7],
    "auto_lr": 0.01,
    "proxy": "ema_ratio",
    "window": 50,
    "warmup": 500,
    "fast": 0.2,
    "slow": 0.01,
}
SMOKE = {
    **_BASE,
    "n_envs": 8,
    "phase_steps": 200,
    "phases": 3,
    "alpha_grid": [0.005, 0.02],
    "entropy_grid": [0.2],
    "calibration_seeds": 1,
    "warmup": 100,
}
QUICK = {**_BASE, "phase_steps": 1500, "phases": 4, "calibration_seeds": 2}
FULL = (
    {**_BASE, "phase_steps": 2000, "phases": 5, "calibration_seeds": 4},
    {**_BASE, "size": 7, "horizon": 28, "phase_steps": 3000, "phases": 5, "calibration_seeds": 4},
)
GRID = profiles(SMOKE, QUICK, FULL, seeds=(2, 3, 20), cell_seconds=(1.5, 8.0, 10.0))

_COMMON = (
    "Toy scale (ours): tabular soft Q-learning on a 5 x 5 gridworld whose goal jumps corner to corner (abrupt "
    "drift; the goal cycles through the four corners, so the fifth phase revisits the first corner), the notes' "
    "quick-profile task; the paper's SAC/PPO/MEow on MuJoCo and Isaac Gym (12 tasks, 4 drift "
    "modes) do not fit 2 CPU cores, so this card says nothing about them. Paired cells: every arm runs the same "
    "drift schedule, seed and budget, beside its own no-drift run. Calibration on separate seeds (10,000+) of the "
    "stationary task: alpha* = the best fixed alpha of {0.0025, ..., 0.04}; fixed_large = 4 alpha*; auto = SAC's "
    "temperature rule (SGD on log alpha, lr 0.01) with the best target entropy of {0.1, 0.2, 0.4, 0.7} nats; AES "
    "from alpha* with clip [alpha*/4, 4 alpha*]. AES's proxy (the EMA ratio fast 0.2 / slow 0.01 of the 0.9 "
    "quantile of |TD error| over the 32 envs of a run) and its constants are our reading: the abstract gives the "
    "square-root rule and 'observable drift proxies' only; its sliding-window-variation proxy with a warm-up "
    "reference (the other reading in the notes) pinned alpha at its maximum in a calibration look (the TD level "
    "at the end of warm-up is not a stable reference), so it is an option, not the default, reported as the "
    "aes_variation arm (no claim). Outcomes are bimodal per seed (a run finds the new corner or stays near the "
    "old one), hence 20 seeds. "
)
_QUICK = (
    "Quick: the 5 x 5 grid only, 1,500-step phases x 4, 3 seeds, 2 calibration seeds; full: 5 x 5 (2,000 x 5) and "
    "7 x 7 (3,000 x 5), 20 seeds each, 4 calibration seeds, pairs pooled over both grids. History: a first full run "
    "(5 x 5 only, 12 seeds, same code and margins) gave C1 inconclusive, C2 inconclusive (AES faster than both "
    "fixed weights, tied with auto), C3 reproduced, in 41 s; the profile of record adds the 7 x 7 grid and 20 "
    "seeds because the budget allowed it, with the margins unchanged. "
)
_C1 = (
    "Metric df: (R_nodrift - R_drift) / R_opt over the first 20% of each new phase (the share of the optimal reward "
    "rate lost to drift against the same learner and seed without drift; our bounded form of the notes' DF, which "
    "divides by the pre-drift level and blows up when it is near 0; the notes' form is reported as df_own). "
    "Margin 0.05 of the optimal rate, fixed before any claim run. "
)
_C2 = (
    "Metric rt: steps until the trailing 100-step mean reward rate of the drifting run reaches 0.9 max(its no-drift "
    "run's mean over the phase, R_opt / 2), as a fraction of the phase (1 = not recovered); the notes expect about "
    "2x shorter; margin 0.1 of a phase, fixed before any claim run (the notes' assertion RT_AES <= 0.8 RT_fixed is "
    "about 0.1 of a phase at the recovery times seen in calibration). "
)
_C3 = (
    "Metric nauc: mean reward rate over the last half of every phase of the drifting run, over the optimal rate. "
    "Non-inferiority margin 0.05 of the optimal rate, fixed before any claim run. "
)
# Outcomes of the recorded full run (40 pairs: 20 seeds x 2 grids), written after it; margins and claims unchanged.
_C1_OUT = (
    "Outcome (full): not reproduced. AES loses more right after a jump (df 0.64 vs 0.40 fixed_small, 0.41 "
    "fixed_large, 0.55 auto): no arm recovers within the first 20% of a phase, and AES's own no-drift run is much "
    "better (steady nAUC without drift 0.98 vs 0.83 for fixed_small on 5 x 5, 0.77 vs 0.30 on 7 x 7), so it has "
    "more to lose; the judged form compares each arm with its own no-drift run. "
)
_C2_OUT = (
    "Outcome (full): AES regains its no-drift level in 0.44 of a phase against 0.81 for the stationary-tuned "
    "fixed_small (40 of 40 pairs; about 1.8x faster, the notes' expectation) and 0.77 for fixed_large (34 of 40); "
    "against SAC's automatic temperature 0.44 vs 0.51 (21 of 40 pairs, 95% CI of the effect [-0.015, +0.14]): "
    "inconclusive, the automatic rule recovers about as fast at our scale. "
)
_C3_OUT = (
    "Outcome (full): reproduced; AES's steady nAUC 0.74 vs 0.30 fixed_small, 0.33 fixed_large, 0.64 auto (vs auto "
    "+0.095, 95% CI [-0.004, +0.19], inside the margin). AES's alpha sits below alpha* between jumps (mean 0.002 "
    "before a jump vs alpha* = 0.005 on 5 x 5) and rises after (0.004): the gain over the fixed weights comes from "
    "both sides of the schedule. The variation-proxy arm (no claim) sits near its clip 4 alpha* (steady nAUC 0.38 "
    "on 5 x 5, 0.21 on 7 x 7), as the notes' caution on an unnormalised early reference predicts. "
)
_QVF = (
    "Quick vs full: quick's 3 seeds leave every claim inconclusive (same directions as full: AES faster than the "
    "fixed weights, higher steady return); the full profile's 40 pairs decide C1 and C3. "
)
_FIG = "qualitative (abstract); notes: about 2x shorter recovery than a stationary-tuned fixed alpha"
_BASELINES = ("fixed_small", "fixed_large", "auto")


def _claim(cid: str, statement: str, metric: str, direction: str, test: str, margin: float, note: str) -> Claim:
    return Claim(
        id=cid,
        statement=statement,
        metric=metric,
        direction=direction,  # type: ignore[arg-type]
        test=test,  # type: ignore[arg-type]
        method="aes",
        baselines=_BASELINES,
        min_effect=margin,
        run=run_drift,
        profiles=GRID,
        paper_figure=_FIG,
        unit="fraction",
        plot=_plot(),
        revision=2,  # 2: the aes_variation arm and the 7 x 7 grid
        notes=note + _COMMON + _QUICK,
    )


CARD = PaperCard(
    slug="aes",
    title="Adaptive Entropy Scheduling",
    group="decision",
    api="icml26.decision.aes.AdaptiveEntropySchedule",
    extra="decision",
    summary="A square-root entropy schedule driven by a TD-error drift proxy (SB3 callback, soft-Q temperature); "
    "degradation, recovery and steady return under abrupt goal jumps on a toy gridworld against fixed and "
    "automatic temperatures.",
    claims=(
        _claim(
            "C1",
            "AES reduces the fraction of performance degradation caused by drift: right after an abrupt change, it "
            "loses less of its return than fixed small and large entropy weights and SAC's automatic temperature.",
            "df",
            "lower",
            "superiority",
            0.05,
            _C1 + _C1_OUT + _QVF,
        ),
        _claim(
            "C2",
            "AES accelerates recovery after abrupt changes: it regains its no-drift return sooner than fixed small "
            "and large entropy weights and SAC's automatic temperature.",
            "rt",
            "lower",
            "superiority",
            0.1,
            _C2 + _C2_OUT + _QVF,
        ),
        _claim(
            "C3",
            "AES does not lose steady-state return: between changes its return is not below that of fixed small and "
            "large entropy weights and SAC's automatic temperature.",
            "nauc",
            "higher",
            "noninferiority",
            0.05,
            _C3 + _C3_OUT + _QVF,
        ),
    ),
)
