"""Reproduction of Trust Region Masking's claims: exact bound checks, measured error scaling, gradient bias, stability.

- C1 (exact, no sampling): autoregressive tabular policies over V in {3, 4} tokens and T = 2..8 steps; pi_roll and
  pi_theta are perturbations of one base policy; the reward is a random table in [0, 1] *and* the worst-case
  table (the reward maximising J - L, which is linear in R). All V^T sequences are enumerated; J, the surrogate
  L and D_max are exact; every bound must exceed |J - L| in every case. The bounds' constants are derived here
  (only the abstract was available; :mod:`icml26.llm.trm.bounds`), not taken from the paper.
- C1b, C1c (measured scaling, exact): V = 2, T = 2..16; pi_theta sits at exactly the same KL D = 1e-3 from pi_roll
  in *every* context (so D_max is fixed while T grows); worst-case reward; |J - L| by enumeration, averaged over
  draws; its log-log slope in T (T >= 4) is compared with the growth of the classical O(T^2) bound (C1b) and the
  Mixed O(T) rate (C1c) on the same T grid. (The bounds' own slopes are properties of the formulas: unit tests.)
- C2 (gradient bias): a GRU policy (V = 8, warm-started by supervised counting) and a mismatched engine (bf16
  logits, routing spikes p = 0.002 with sd 3, rollout-only top-p 0.95, staleness 2 small steps). Independent
  batches from the engine feed every method (paired); independent batches from pi_theta itself (no shared noise)
  give the on-policy REINFORCE gradient; the bias ||E g_method - E g_on|| / ||E g_on|| is estimated without the
  sampling noise of either mean (``toy.bias_estimate``). Reward: correct-prefix length of a counting task.
- C3 (stability): GRPO on the same task from the warm start under a strong mismatch; collapse = an on-policy
  evaluation (samples from pi_theta, never the engine) below half of its running peak; calibration on the
  unmasked baseline only, recorded in ``CALIBRATION``; TRM's delta fixed beforehand and never revisited.

Thresholds and margins were fixed before the runs of record: delta_max = (ln 2)^2 / 2 on k2 (every token ratio
within a factor 2), delta_mean = 0.02 nats/token for OPSM and TRM-avg; TRL's token_mask is run twice, at its
default cap 3 (which our engine's tokens almost never exceed) and with the clip range [1/2, 2] of TRM's delta
(where it masks exactly the tokens TRM detects, token by token) (``toy``); margins are stated per claim.
"""

from __future__ import annotations

from typing import Any

from icml26._core import Cell, Claim, PaperCard, profiles, single_torch_thread

BOUND_NAMES = ("classical", "pinsker_marginal", "mixed")
GRAD_METHODS = ("trm_max", "trm_avg", "none", "token_mask", "token_mask_tr", "sequence_mask", "opsm")
STYLE = {  # one colour, marker and line style per method, the same in every plot
    "trm_max": ("C3", "o", "-"),
    "trm_avg": ("C1", "s", "--"),
    "none": ("k", "^", "-"),
    "token_mask": ("C0", "v", ":"),
    "token_mask_tr": ("C9", "D", "-."),
    "sequence_mask": ("C2", "P", "--"),
    "opsm": ("C4", "X", ":"),
}
DPI = 160
DERIVED = (
    "the bounds' constants are derived here from first principles (only the abstract was available), not the "
    "paper's; the abstract gives only the exponents of T"
)
C2_HISTORY = (
    "history: the first C2 (random-init policy, dense reward) showed no bias to remove and was replaced before "
    "any seed sweep; the second measured the cosine to an on-policy sample coupled by shared Gumbel noise, which "
    "rises whenever diverged sequences are dropped, bias or not (review, issue 20); this one is uncoupled and "
    "noise-corrected, and its metric (relative bias) and margin were fixed after the review and a one-seed "
    "look at the design, before the runs of record"
)
C2_OBSERVED = (
    "what the full run shows (an observation, not a verdict): TRM's gradient points the right way (noise-corrected "
    "cosine 0.98 to 1.00 with the on-policy gradient, against 0.51 to 0.66 unmasked, 5 of 5 seeds) but is 1.2 to "
    "1.8 times too long (plausibly because advantages are centred on the whole batch before masking, and the kept "
    "sequences are the unspiked, high-reward ones), and the relative bias counts that scale: TRM wins 4 of 5 seeds, "
    "the fifth (cosine 0.998, norm ratio 1.78) loses, so full is inconclusive where quick (3 seeds at T = 128, "
    "where the scale is not inflated) reproduced"
)
CALIBRATION = {
    "full: lr=3e-3, spike_p=0.01, staleness=4": "baseline: 0 collapses in 2 seeds (final 0.58, 0.47: no learning)",
    "full: lr=3e-3, spike_p=0.03, staleness=8": "baseline: 1 collapse in 3 seeds",
    "full: lr=1e-2, spike_p=0.01, staleness=4": "baseline: 2 collapses in 3 seeds: kept",
    "quick: T=32, batch 32, 40 steps, lr=1e-2": "baseline: 0 collapses in 2 seeds",
    "quick: T=32, batch 32, 60 steps, lr=3e-2": "baseline: 4 collapses in 5 seeds: kept",
}


def _slope(xs: Any, ys: Any) -> float:
    import numpy as np

    return float(np.polyfit(np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float)), 1)[0])


def _wide(ax: Any, width: float = 9.5) -> None:
    """Room for a legend outside the axes, at >= 150 dpi."""
    ax.figure.set_dpi(DPI)
    ax.figure.set_size_inches(width, 4.4)


def _legend_outside(ax: Any, **kw: Any) -> None:
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize=7, **kw)


def _integer_ticks(ax: Any, values: Any) -> None:
    from matplotlib.ticker import NullFormatter

    ax.set_xticks(list(values), [str(v) for v in values])
    ax.xaxis.set_minor_formatter(NullFormatter())


# ---------------------------------------------------------------------------------------------- C1: bounds
def run_bound_check(cell: Cell) -> dict[str, Any]:
    """Enumerate every (V, T, perturbation, reward) case; slack of each bound."""
    import numpy as np

    from icml26.llm.trm.bounds import TabularPolicy, exact_surrogate_error, worst_case_reward

    rng = cell.rng()
    slack: dict[str, float] = {b: np.inf for b in (*BOUND_NAMES, "mixed_dseq")}
    rows, cases = [], 0
    for vocab in cell["vocabs"]:
        for T in range(2, int(cell["max_T"]) + 1):
            for sd in [sd for sd in cell["perturbations"] for _ in range(int(cell["draws"]))]:
                base = TabularPolicy.random(int(vocab), T, rng)
                roll, theta = base.perturbed(rng, sd), base.perturbed(rng, sd)
                for reward_kind, reward in (
                    ("random", rng.random(int(vocab) ** T)),
                    ("worst_case", worst_case_reward(roll, theta)),
                ):
                    check = exact_surrogate_error(roll, theta, reward)
                    cases += 1
                    for name, value in check.bounds.items():
                        slack[name] = min(slack[name], (value - check.error) / value)
                    rows.append(
                        {
                            "V": int(vocab),
                            "T": T,
                            "sd": sd,
                            "reward": reward_kind,
                            "error": check.error,
                            "d_max": check.d_max,
                            "eps": check.eps,
                            **check.bounds,
                        }
                    )
    metrics: dict[str, dict[str, float]] = {name: {"min_relative_slack": float(slack[name])} for name in slack}
    metrics["all_bounds"] = {"min_relative_slack": float(min(slack.values()))}
    return {
        "metrics": metrics,
        "curves": {"cases": rows},
        "info": {
            "cases": cases,
            "max_error_over_best_bound": max(r["error"] / min(r[b] for b in BOUND_NAMES) for r in rows),
        },
    }


def plot_bounds(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    _wide(ax)
    ok = [r for r in records if r["status"] == "ok"]
    rows = [row for r in ok for row in r["curves"]["cases"]]
    for V, marker in ((3, "o"), (4, "s")):
        for kind, colour in (("worst_case", "k"), ("random", "0.6")):
            sel = [row for row in rows if row["V"] == V and row["reward"] == kind]
            if not sel:
                continue
            best = [min(row[b] for b in (*BOUND_NAMES, "mixed_dseq")) for row in sel]
            jitter = 1 + 0.04 * (V - 3.5)
            ax.scatter(
                [row["T"] * jitter for row in sel],
                [row["error"] / b for row, b in zip(sel, best, strict=True)],
                s=8,
                marker=marker,
                color=colour,
                alpha=0.6,
                label=f"V = {V}, {kind.replace('_', '-')} reward",
            )
    ax.axhline(1.0, color="C3", ls="--", lw=1, label="|J - L| = tightest bound (slack 0: the reference)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("horizon T (every enumerated case)")
    ax.set_ylabel("|J - L| / tightest derived bound  (= 1 - slack)")
    slack = card["metrics"]["all_bounds"]["min_relative_slack"]["mean"]
    ax.text(0.02, 0.02, f"min slack over all cases and bounds: {slack:.3f}", transform=ax.transAxes, fontsize=7)
    _integer_ticks(ax, sorted({row["T"] for row in rows}))
    _legend_outside(ax)


# -------------------------------------------------------------------------------- C1b, C1c: error scaling
def run_error_scaling(cell: Cell) -> dict[str, Any]:
    """Exact worst-case |J - L| at a fixed per-token KL in every context, against T; slopes on one T grid."""
    import numpy as np

    from icml26.llm.trm.bounds import BOUNDS, TabularPolicy, exact_surrogate_error, worst_case_reward

    rng = cell.rng()
    V, kl, fit_from = int(cell["vocab"]), float(cell["kl"]), int(cell["fit_from"])
    Ts = list(range(2, int(cell["max_T"]) + 1))
    rows = []
    for T in Ts:
        for draw in range(int(cell["draws"])):
            roll = TabularPolicy.random(V, T, rng)
            theta = roll.at_kl(rng, kl)
            check = exact_surrogate_error(roll, theta, worst_case_reward(roll, theta))
            rows.append({"T": T, "draw": draw, "error": check.error, "d_max": check.d_max, "eps": check.eps})
            rows[-1].update({f"{b}_bound": check.bounds[b] for b in BOUND_NAMES})
    fit_T = [t for t in Ts if t >= fit_from]
    mean_error = {T: float(np.mean([r["error"] for r in rows if r["T"] == T])) for T in Ts}
    metrics = {"exact_error": {"log_log_slope": _slope(fit_T, [mean_error[T] for T in fit_T])}}
    for name in BOUND_NAMES:
        metrics[name] = {"log_log_slope": _slope(fit_T, BOUNDS[name](fit_T, kl))}
    slack = min(min(r[f"{b}_bound"] for b in BOUND_NAMES) - r["error"] for r in rows)
    return {
        "metrics": metrics,
        "curves": {"scaling": rows},
        "info": {
            "fit_T": [fit_T[0], fit_T[-1]],
            "max_abs_d_max_minus_kl": max(abs(r["d_max"] - kl) for r in rows),
            "min_absolute_slack_of_best_bound": slack,
        },
    }


def plot_error_scaling(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    import numpy as np

    from icml26.llm.trm.bounds import BOUNDS

    _wide(ax)
    ok = [r for r in records if r["status"] == "ok"]
    rows = [row for r in ok for row in r["curves"]["scaling"]]
    setting = card["by_setting"][0]["setting"]
    kl, fit_from = float(setting["kl"]), int(setting["fit_from"])
    Ts = sorted({row["T"] for row in rows})
    err = np.array([np.mean([row["error"] for row in rows if row["T"] == T]) for T in Ts])
    slopes = {m: card["metrics"][m]["log_log_slope"]["mean"] for m in ("exact_error", *BOUND_NAMES)}
    ax.loglog(Ts, err, "ko", ms=4, label=f"exact worst-case |J - L| (mean of draws); slope {slopes['exact_error']:.2f}")
    for row in rows:
        ax.plot(row["T"], row["error"], ".", color="0.7", ms=2, zorder=0)
    anchor = Ts.index(fit_from)
    for i, name in enumerate(BOUND_NAMES):
        shape = BOUNDS[name](Ts, kl)
        ax.loglog(
            Ts,
            shape / shape[anchor] * err[anchor],
            f"C{i}--",
            lw=1,
            label=f"{name} bound's T-shape, matched at T = {fit_from}; slope {slopes[name]:.2f}",
        )
    ax.axvspan(fit_from, Ts[-1], color="0.93", zorder=-1, label="T range of the fitted slopes")
    ax.set_xlabel(f"horizon T (V = {setting['vocab']}, KL = {kl:g} in every context)")
    ax.set_ylabel("|J - L|  (grey dots: single draws)")
    _integer_ticks(ax, [t for t in Ts if t in (2, 4, 8, 12, 16) or t == Ts[-1]])
    _legend_outside(ax)


# ------------------------------------------------------------------------------------- C2: gradient bias
def run_gradient_bias(cell: Cell) -> dict[str, Any]:
    """Every method's gradient bias at every T; metrics at the largest T, and how TRM's gain grows with T."""
    from icml26.llm.trm.toy import gradient_bias

    with single_torch_thread():
        Ts = [int(T) for T in cell["Ts"]]
        results = {T: gradient_bias({**dict(cell.setting), "T": T}, cell.seed) for T in Ts}
    last, first = results[Ts[-1]], results[Ts[0]]
    metrics = {m: dict(last["metrics"][m]) for m in GRAD_METHODS}

    def gain(res: dict[str, Any]) -> float:
        return res["metrics"]["none"]["relative_bias"] - res["metrics"]["trm_max"]["relative_bias"]

    metrics["trm_max"]["gain_growth_over_T"] = gain(last) - gain(first)
    curves = [{"T": T, "method": m, **res["metrics"][m]} for T, res in results.items() for m in GRAD_METHODS]
    return {"metrics": metrics, "curves": {"gradient": curves}, "info": {str(T): r["info"] for T, r in results.items()}}


def plot_gradient_bias(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """Left: the verdict's metric (relative bias) against T. Right: its two parts, direction (noise-corrected
    cosine) and scale (norm ratio), at the largest T."""
    import numpy as np

    fig = ax.figure
    _wide(ax, 10.0)
    fig.set_size_inches(10.0, 5.4)
    grid = ax.get_subplotspec().subgridspec(1, 2, width_ratios=[1.3, 1.0], wspace=0.1)
    ax.set_subplotspec(grid[0])
    parts = fig.add_subplot(grid[1])
    rows = [row for r in records if r["status"] == "ok" for row in r["curves"]["gradient"]]
    Ts = sorted({row["T"] for row in rows})
    for m in GRAD_METHODS:
        ys = [[row["relative_bias"] for row in rows if row["T"] == T and row["method"] == m] for T in Ts]
        last = [row for row in rows if row["T"] == Ts[-1] and row["method"] == m]
        colour, marker, ls = STYLE[m]
        masked = np.mean([row["masked_token_fraction"] for row in last])
        ax.errorbar(
            Ts,
            [np.mean(y) for y in ys],
            yerr=[np.std(y) for y in ys],
            color=colour,
            marker=marker,
            ls=ls,
            capsize=3,
            lw=2 if m == "trm_max" else 1,
            label=f"{m} (masks {100 * masked:.2g}% of tokens at T = {Ts[-1]})",
        )
        parts.scatter(
            [row["norm_ratio"] for row in last], [row["cosine"] for row in last], color=colour, marker=marker, s=18
        )
    noise = [np.mean([row["noise"] for row in rows if row["T"] == T and row["method"] == "none"]) for T in Ts]
    ax.plot(Ts, noise, color="0.5", lw=0.8, ls=(0, (1, 3)), label="sampling noise of the difference of means")
    ax.set_xscale("log", base=2)
    _integer_ticks(ax, Ts)
    ax.set_xlabel("horizon T")
    ax.set_ylabel("relative bias ||E g - E g_on|| / ||E g_on||  (lower is better)", fontsize=8)
    ax.text(0.01, 0.99, "mean and std over seeds", transform=ax.transAxes, fontsize=6, va="top")
    parts.axvline(1.0, color="0.6", lw=0.8, ls="--")
    parts.axhline(1.0, color="0.6", lw=0.8, ls="--")
    parts.set_xlabel(f"norm ratio ||E g|| / ||E g_on|| at T = {Ts[-1]}", fontsize=8)
    parts.set_ylabel("cosine(E g, E g_on), noise-corrected", fontsize=8)
    parts.set_title("one dot per seed; on-policy at (1, 1) (dashed)", fontsize=7)
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=3, fontsize=7)


# ------------------------------------------------------------------------------------------ C3: stability
def run_stability(cell: Cell) -> dict[str, Any]:
    """GRPO training with every method from the same warm start and seed; collapse, final reward, masking."""
    from icml26.llm.trm.toy import train_grpo

    with single_torch_thread():
        runs = {m: train_grpo(dict(cell.setting), cell.seed, m) for m in GRAD_METHODS}
    every = int(cell["eval_every"])
    curves = [
        {"step": min(i * every, int(cell["steps"])), "method": m, "eval_reward": v}
        for m, r in runs.items()
        for i, v in enumerate(r["curve"])
    ]
    metrics = {m: {k: v for k, v in r.items() if k != "curve"} for m, r in runs.items()}
    return {"metrics": metrics, "curves": {"training": curves}}


def _plot_stability(card: dict[str, Any], records: list[dict[str, Any]], ax: Any, metric: str, label: str) -> None:
    import numpy as np

    fig = ax.figure
    _wide(ax, 9.5)
    grid = ax.get_subplotspec().subgridspec(1, 2, width_ratios=[1.6, 1.0], wspace=0.08)
    ax.set_subplotspec(grid[0])
    bars = fig.add_subplot(grid[1])
    ok = [r for r in records if r["status"] == "ok"]
    rows = [row for r in ok for row in r["curves"]["training"]]
    claim = card["claim"]
    shown = [claim["method"], *claim["baselines"]]
    shown += [m for m in GRAD_METHODS if m not in shown]
    for m in shown:
        colour, marker, ls = STYLE[m]
        steps = sorted({row["step"] for row in rows if row["method"] == m})
        mean = [np.mean([row["eval_reward"] for row in rows if row["method"] == m and row["step"] == s]) for s in steps]
        ax.plot(steps, mean, color=colour, ls=ls, lw=2 if m == "trm_max" else 1, label=m)
    ax.set_xlabel("training step")
    ax.set_ylabel("on-policy evaluation reward (mean over seeds)")
    n = len(ok)
    for i, m in enumerate(shown):
        colour, marker, _ = STYLE[m]
        values = [r["metrics"][m][metric] for r in ok]
        bars.bar(i, np.mean(values), color=colour, alpha=0.35)
        bars.scatter([i] * n + 0.08 * (np.arange(n) - (n - 1) / 2), values, color=colour, marker=marker, s=12)
    in_claim = len([claim["method"], *claim["baselines"]])
    bars.axvline(in_claim - 0.5, color="0.5", lw=0.8, ls=":")
    bars.set_xticks(range(len(shown)), shown, rotation=60, ha="right", fontsize=7)
    bars.set_ylabel(f"{label}\nper seed (dots), mean (bar)", fontsize=7)
    bars.yaxis.set_label_position("right")
    bars.yaxis.tick_right()
    bars.text(in_claim - 0.45, bars.get_ylim()[1], "not in the claim", fontsize=6, va="top")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncols=4, fontsize=7)


def plot_collapse(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    _plot_stability(card, records, ax, "collapsed", "collapsed (1 = an eval below half its running peak)")


def plot_final_reward(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    _plot_stability(card, records, ax, "final_reward", "final on-policy reward")


# --------------------------------------------------------------------------------------------------- claims
_C1_PROFILES = profiles(
    smoke={"vocabs": [3], "max_T": 4, "perturbations": [0.3], "draws": 1},
    quick={"vocabs": [3, 4], "max_T": 7, "perturbations": [0.05, 0.3, 1.0], "draws": 2},
    full={"vocabs": [3, 4], "max_T": 8, "perturbations": [0.05, 0.3, 1.0], "draws": 4},
    seeds=(1, 1, 1),  # exact and deterministic: one cell holds every case (draws x perturbations x V x T)
    cell_seconds=(0.1, 1.0, 6.0),
)
_SCALING_BASE = {"vocab": 2, "kl": 1e-3, "fit_from": 4}
_SCALING_PROFILES = profiles(
    smoke={**_SCALING_BASE, "max_T": 6, "draws": 1},
    quick={**_SCALING_BASE, "max_T": 12, "draws": 4},
    full={**_SCALING_BASE, "max_T": 16, "draws": 8},
    seeds=(1, 1, 1),
    cell_seconds=(0.1, 1.5, 30.0),
)
_SCALING = dict(
    metric="log_log_slope",
    direction="lower",
    method="exact_error",
    run=run_error_scaling,
    profiles=_SCALING_PROFILES,
    deterministic=True,
    plot=plot_error_scaling,
)
_C2_BASE = {
    "vocab": 8,
    "hidden": 32,
    "sft_steps": 100,
    "spike_p": 0.002,
    "spike_sd": 3.0,
    "top_p": 0.95,
    "staleness": 2,
    "stale_sd": 0.01,
    "reward": "prefix",
}
_C2_PROFILES = profiles(
    smoke={**_C2_BASE, "sft_steps": 10, "reward": "dense", "n": 64, "batches": 3, "Ts": [4, 8]},
    quick={**_C2_BASE, "n": 512, "batches": 4, "Ts": [16, 128]},
    full={**_C2_BASE, "n": 1024, "batches": 8, "Ts": [16, 64, 256]},
    seeds=(1, 3, 5),
    cell_seconds=(1.0, 8.0, 80.0),
)
_C2 = dict(
    metric="relative_bias",
    direction="lower",
    method="trm_max",
    run=run_gradient_bias,
    profiles=_C2_PROFILES,
    plot=plot_gradient_bias,
    revision=2,
)
_C3_BASE = {
    "vocab": 8,
    "T": 64,
    "batch": 64,
    "hidden": 32,
    "sft_steps": 100,
    "lr": 1e-2,
    "spike_p": 0.01,
    "spike_sd": 3.0,
    "top_p": 0.9,
    "staleness": 4,
    "steps": 150,
    "eval_every": 10,
    "eval_n": 256,
    "reward": "prefix",
}
_C3_PROFILES = profiles(
    smoke={**_C3_BASE, "T": 8, "batch": 16, "sft_steps": 5, "steps": 4, "eval_every": 2, "eval_n": 16},
    quick={**_C3_BASE, "T": 32, "batch": 32, "steps": 60, "eval_every": 5, "eval_n": 128, "lr": 3e-2},
    full=_C3_BASE,
    seeds=(1, 3, 5),
    cell_seconds=(0.5, 11.0, 95.0),
)
_C3 = dict(method="trm_max", run=run_stability, profiles=_C3_PROFILES, revision=3)
_C3_SCALE = (
    "quick runs a smaller, harsher calibration (T = 32, batch 32, 60 steps, lr 3e-2) than full (T = 64, batch 64, "
    "150 steps, lr 1e-2), each calibrated on the unmasked baseline only so that it collapses; with quick's 3 "
    "seeds a collapse count differing by 2 of 3 is still inside the t-interval, so quick is often inconclusive"
)

CARD = PaperCard(
    slug="trm",
    title="Trust Region Masking",
    group="llm",
    api="icml26.llm.trm.trust_region_mask",
    extra="llm",
    summary="Sequence-level masking on the max token divergence between rollout and trained policies, with "
    "derived O(T^2), O(T^1.5) and O(T) surrogate-error bounds checked exactly on enumerable policies.",
    claims=(
        Claim(
            id="C1",
            statement="The surrogate error |J - L| is bounded by the classical O(T^2), the Pinsker-Marginal "
            "O(T^1.5) and the Mixed O(T) bounds (with constants derived here), in every enumerated case, "
            "including the worst-case reward.",
            metric="min_relative_slack",
            direction="higher",
            method="all_bounds",
            reference=0.0,
            paper_figure="exponents only (no constants in the abstract); T = 4096, D = 1e-4: classical ~ 1677",
            notes=f"{DERIVED}; slack = (bound - |J - L|) / bound, minimum over every case and bound; exact "
            "arithmetic (float64); the constants are sharp (attained at T = 2, a unit test)",
            run=run_bound_check,
            profiles=_C1_PROFILES,
            deterministic=True,
            plot=plot_bounds,
            revision=2,
        ),
        Claim(
            id="C1b",
            statement="Classical trust region bounds scale as O(T^2), which is vacuous for long horizons: at a "
            "fixed per-token KL, the exact worst-case surrogate error grows with T markedly more slowly than the "
            "classical bound (measured log-log slope lower by at least 0.25 on the same T grid).",
            baselines=("classical",),
            min_effect=0.25,
            paper_figure="O(T^2) for the classical bound",
            notes=f"measured by enumeration (V = 2, T = 2..16 in full, 2..12 in quick; slope over T >= 4) with "
            "pi_theta at exactly KL 1e-3 from pi_roll in every context, random directions, worst-case reward; not "
            "the worst case over policy pairs; the classical value is its formula's slope on the same T grid; "
            f"margin 0.25 (half the gap between the exponents 2 and 1.5) fixed a priori; {DERIVED}",
            **_SCALING,
        ),
        Claim(
            id="C1c",
            statement="A Mixed bound scaling as O(T): the exact worst-case surrogate error at a fixed per-token KL "
            "grows no faster than linearly in T (measured log-log slope at most that of T, plus 0.1).",
            baselines=("mixed",),
            test="noninferiority",
            min_effect=0.1,
            paper_figure="O(T) for the Mixed bound (O(T^1.5) for Pinsker-Marginal, shown on the plot)",
            notes="same enumeration as C1b; noninferiority margin 0.1 on the slope fixed a priori (the margin the "
            "earlier formula-slope claims used); quick (T = 4 to 12, 4 draws) measured 1.13, outside the margin, "
            "full (T = 4 to 16, 8 draws) 1.06, inside: the local slope falls as T grows; caveat, seen only after "
            "the claim was fixed: at enumerable T the "
            "product T * D <= 0.016 is far below 4.5, where Pinsker-Marginal (O(T^1.5)) is the tighter bound; the "
            "Mixed bound's O(T) order is its long-horizon regime (T > 4.5 / D), so a slope above 1 here does not "
            f"contradict the Mixed bound (C1 checks the bound itself); {DERIVED}",
            **_SCALING,
        ),
        Claim(
            id="C2",
            statement="As a sequence-level term, the divergence cannot be controlled by token-independent methods: "
            "under a controlled mismatch, the TRM-masked gradient is less biased (relative to the on-policy "
            "gradient) than the token-level rollout corrections, at the longest horizon (T = 256 in full): "
            "truncated IS, TRL's token_mask at its default cap, and TRL's token_mask on TRM's own trust region.",
            baselines=("none", "token_mask", "token_mask_tr"),
            min_effect=0.05,
            paper_figure="no number in the abstract",
            notes="relative bias ||E g - E g_on|| / ||E g_on|| from independent batches (noise-corrected; it "
            "counts a wrong scale as bias too: cosine and norm ratio are on the card); margin 0.05 fixed a "
            "priori; quick stops at T = 128 (time budget); token_mask at cap 3 barely acts (engine tokens rarely "
            "have rho > 3), token_mask_tr ([1/2, 2]) masks the very tokens TRM detects; "
            + C2_OBSERVED
            + "; "
            + C2_HISTORY,
            **_C2,
        ),
        Claim(
            id="C2b",
            statement="TRM-max's gradient is also less biased than with TRL's sequence-level rules (OPSM, "
            "sequence_mask) at the longest horizon (the issue's comparison; not a claim of the abstract).",
            baselines=("opsm", "sequence_mask"),
            min_effect=0.05,
            notes="margin 0.05 fixed a priori; sequence_mask's product ratio shrinks its gradient (norm ratio "
            "on the card), which the relative bias counts; " + C2_HISTORY,
            **_C2,
        ),
        Claim(
            id="C2c",
            statement="TRM's advantage over the unmasked gradient grows with the horizon T (bias reduction at the "
            "largest T minus the reduction at the smallest).",
            metric="gain_growth_over_T",
            direction="higher",
            method="trm_max",
            reference=0.0,
            min_effect=0.05,
            run=run_gradient_bias,
            profiles=_C2_PROFILES,
            plot=plot_gradient_bias,
            revision=2,
            notes="gain = relative bias of 'none' minus that of 'trm_max'; margin 0.05 fixed a priori; quick "
            "(T = 16 to 128, 3 seeds) reproduced; full (T = 16 to 256, 5 seeds) gains 0.57, 0.18, 0.15, 0.18, "
            "-0.03: the last seed is the one where TRM's inflated scale outweighs its better direction (see C2); "
            + C2_HISTORY,
        ),
        Claim(
            id="C3",
            statement="TRM mitigates training collapse in long-horizon LLM-RL: fewer collapses (on-policy "
            "evaluation below half its running peak) than unmasked training and token-level masking, under a "
            "mismatch calibrated so that the unmasked baseline collapses.",
            metric="collapsed",
            direction="lower",
            baselines=("none", "token_mask", "token_mask_tr"),
            min_effect=0.2,
            paper_figure="'mitigate training collapse'; no number in the abstract",
            notes="collapse indicator per seed; margin 0.2 = one fewer collapse in five seeds, fixed a priori; "
            f"a dip below half the running peak counts even if training recovers; {_C3_SCALE}; calibration: "
            f"{CALIBRATION}",
            plot=plot_collapse,
            **_C3,
        ),
        Claim(
            id="C3c",
            statement="TRM-max has fewer collapses than TRL's sequence-level rules (OPSM, sequence_mask) under the "
            "same mismatch (the issue's comparison; not a claim of the abstract).",
            metric="collapsed",
            direction="lower",
            baselines=("opsm", "sequence_mask"),
            min_effect=0.2,
            notes="margin 0.2 fixed a priori; reported so that the comparison with TRL's own rules is visible; "
            f"{_C3_SCALE}; mismatch and lr calibrated on the unmasked baseline only: {CALIBRATION}",
            plot=plot_collapse,
            **_C3,
        ),
        Claim(
            id="C3b",
            statement="Under the same mismatch, TRM reaches a higher final on-policy reward than unmasked training "
            "and token-level masking.",
            metric="final_reward",
            direction="higher",
            baselines=("none", "token_mask", "token_mask_tr"),
            min_effect=0.05,
            notes="reward share in [0, 1]; margin 0.05 fixed a priori; "
            f"{_C3_SCALE}; mismatch and lr calibrated on the unmasked baseline only: {CALIBRATION}",
            plot=plot_final_reward,
            **_C3,
        ),
    ),
)
