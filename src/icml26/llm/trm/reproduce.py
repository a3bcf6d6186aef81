"""Reproduction of Trust Region Masking's claims: exact bound checks, gradient bias, and training stability.

- C1 (exact, no sampling): autoregressive tabular policies over V in {3, 4} tokens and T = 2..8 steps; pi_roll and
  pi_theta are perturbations of one base policy; the reward is a random table in [0, 1] *and* the worst-case
  table (the reward maximising J - L, which is linear in R). All V^T sequences are enumerated; J, the surrogate
  L and D_max are exact; every bound must exceed |J - L| in every case. C1b-d: log-log slopes of the three
  derived bounds over T in [64, 4096] (the long-horizon regime); these are properties of the formulas (the
  slopes do not depend on D_max or eps), checked so that the constants in code are the ones documented.
- C2 (gradient bias): a GRU policy (V = 8, warm-started by supervised counting so that RL has something to lose)
  and a mismatched engine (bf16 logits, routing spikes p = 0.002 with sd 3, rollout-only top-p 0.95, staleness 2
  small steps). pi_theta and pi_roll sample with shared Gumbel noise; every method's gradient is computed on the
  same rollouts and compared (cosine) with the on-policy REINFORCE gradient. Reward: correct-prefix length of a
  counting task (a global reward: a wrong step loses the rest, as in a derivation).
- C3 (stability): GRPO on the same task at T = 64, from the warm start, with a strong mismatch (spikes p = 0.01
  sd 3, top-p 0.9, staleness 4) and lr 1e-2. Collapse = an on-policy evaluation (samples from pi_theta, never
  the engine) below half of its running peak. Calibration (done once, on the baseline ``none`` only, before
  the runs of record; recorded in ``CALIBRATION``): lr 3e-3 with this mismatch: no collapse in 2 seeds (the
  baseline did not learn either); lr 3e-3 with spikes p = 0.03 and staleness 8: 1 collapse in 3 seeds; lr 1e-2:
  2 collapses in 3 seeds, kept. TRM's delta was fixed beforehand and not revisited.

Thresholds and margins were fixed before the runs of record: delta_max = (ln 2)^2 / 2 on k2 (every token ratio
within a factor 2), delta_mean = 0.02 nats/token for OPSM and TRM-avg (``toy``); margins are stated per claim.
An earlier C2 design (random-init policy, dense per-step reward) showed no bias to remove: the unmasked
gradient already had cosine 0.97 with the on-policy one at T = 256 and TRM-max, dropping 35% of sequences, only
added variance (0.94). It was replaced by the warm-started, global-reward design above before any seed sweep;
we report this because it bounds what C2 shows: TRM helps when the reward couples tokens across the sequence.
"""

from __future__ import annotations

from typing import Any

from icml26._core import Cell, Claim, PaperCard, profiles, single_torch_thread

BOUND_NAMES = ("classical", "pinsker_marginal", "mixed")
SLOPE_T = (64, 128, 256, 512, 1024, 2048, 4096)
GRAD_METHODS = ("trm_max", "trm_avg", "none", "token_mask", "sequence_mask", "opsm")
C2_REDESIGN = (
    "design changed after a first look: an earlier C2 (random-init policy, dense per-step reward) showed no bias "
    "to remove (unmasked cosine 0.97 at T = 256; TRM-max, dropping 35% of sequences, 0.94); it was replaced, "
    "before any seed sweep, by the warm-started policy with the correct-prefix (global) reward; so C2 shows "
    "TRM's benefit when the reward couples tokens across the sequence, not in general"
)
FORMULA_SLOPE = (
    "a property of the derived formula (its log-log slope does not depend on D_max or eps), not a measurement "
    "of |J - L|; it checks that the constants in code are the documented ones"
)
CALIBRATION = {
    "lr=3e-3, spike_p=0.01, staleness=4": "baseline: 0 collapses in 2 seeds (final rewards 0.58, 0.47: no learning)",
    "lr=3e-3, spike_p=0.03, staleness=8": "baseline: 1 collapse in 3 seeds",
    "lr=1e-2, spike_p=0.01, staleness=4": "baseline: 2 collapses in 3 seeds: kept",
}


def _slope(xs: Any, ys: Any) -> float:
    import numpy as np

    return float(np.polyfit(np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float)), 1)[0])


# ---------------------------------------------------------------------------------------------- C1: bounds
def run_bound_check(cell: Cell) -> dict[str, Any]:
    """Enumerate every (V, T, perturbation, reward) case; slack of each bound; slopes of the formulas."""
    import numpy as np

    from icml26.llm.trm.bounds import BOUNDS, TabularPolicy, exact_surrogate_error, worst_case_reward

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
    metrics: dict[str, dict[str, float]] = {
        name: {"min_relative_slack": float(slack[name]), "log_log_slope": _slope(SLOPE_T, BOUNDS[name](SLOPE_T, 1e-4))}
        for name in BOUND_NAMES
    }
    metrics["mixed_dseq"] = {"min_relative_slack": float(slack["mixed_dseq"])}
    metrics["all_bounds"] = {"min_relative_slack": float(min(slack.values()))}
    worst = [r for r in rows if r["reward"] == "worst_case" and r["V"] == int(cell["vocabs"][0])]
    return {
        "metrics": metrics,
        "curves": {"cases": rows},
        "info": {
            "cases": cases,
            "max_error_over_best_bound": max(r["error"] / min(r[b] for b in BOUND_NAMES) for r in rows),
            "worst_case_error_slope_in_T": _slope([r["T"] for r in worst], [max(r["error"], 1e-12) for r in worst]),
        },
    }


def plot_bounds(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    import numpy as np

    from icml26.llm.trm.bounds import BOUNDS

    ok = [r for r in records if r["status"] == "ok"]
    rows = [row for r in ok for row in r["curves"]["cases"] if row["reward"] == "worst_case"]
    d_ref = 1e-4  # the paper's example D_max, eps = 1: where each bound stops being vacuous (crosses 1)
    Ts = sorted({row["T"] for row in rows})
    mean_err = [np.mean([row["error"] for row in rows if row["T"] == T]) for T in Ts]
    ax.loglog(Ts, mean_err, "ko-", label="|J - L| (worst-case reward, exact, mean over cases)")
    long_T = np.unique(np.geomspace(2, 4096, 40).astype(int))
    for i, name in enumerate(BOUND_NAMES):
        measured = [np.mean([row[name] for row in rows if row["T"] == T]) for T in Ts]
        ax.loglog(Ts, measured, f"C{i}s", ms=4, label=f"{name} at the cases' measured D_max, eps (mean)")
        ax.loglog(long_T, BOUNDS[name](long_T, d_ref), f"C{i}-", lw=1, label=f"{name}, D_max = 1e-4, eps = 1")
    ax.axhline(1.0, color="0.6", ls=":", lw=0.8, label="trivial bound |J - L| <= 1")
    ax.set_xlabel("horizon T")
    ax.set_ylabel("surrogate error and bounds")
    ax.legend(fontsize=6)


# ------------------------------------------------------------------------------------- C2: gradient bias
def run_gradient_bias(cell: Cell) -> dict[str, Any]:
    """Every method's gradient on the same coupled rollouts, at every T; metrics at the largest T."""
    from icml26.llm.trm.toy import gradient_bias

    with single_torch_thread():
        Ts = [int(T) for T in cell["Ts"]]
        results = {T: gradient_bias({**dict(cell.setting), "T": T}, cell.seed) for T in Ts}
    last, first = results[Ts[-1]], results[Ts[0]]
    metrics = {m: dict(last["metrics"][m]) for m in GRAD_METHODS}

    def gain(res: dict[str, Any]) -> float:
        return res["metrics"]["trm_max"]["cosine"] - res["metrics"]["none"]["cosine"]

    metrics["trm_max"]["gain_growth_over_T"] = gain(last) - gain(first)
    curves = [
        {"T": T, "method": m, **{k: v for k, v in res["metrics"][m].items()}}
        for T, res in results.items()
        for m in GRAD_METHODS
    ]
    return {"metrics": metrics, "curves": {"gradient": curves}, "info": {str(T): r["info"] for T, r in results.items()}}


def plot_gradient_bias(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    import numpy as np

    rows = [row for r in records if r["status"] == "ok" for row in r["curves"]["gradient"]]
    for i, m in enumerate(GRAD_METHODS):
        Ts = sorted({row["T"] for row in rows})
        ys = [[row["cosine"] for row in rows if row["T"] == T and row["method"] == m] for T in Ts]
        ax.errorbar(
            Ts,
            [np.mean(y) for y in ys],
            yerr=[np.std(y) for y in ys],
            marker="o",
            capsize=3,
            lw=2 if m == "trm_max" else 1,
            label=m,
            color=f"C{i}",
        )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("horizon T")
    ax.set_ylabel("cosine(off-policy gradient, on-policy gradient)")
    ax.legend(fontsize=7)


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


def plot_stability(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    import numpy as np

    rows = [row for r in records if r["status"] == "ok" for row in r["curves"]["training"]]
    for i, m in enumerate(GRAD_METHODS):
        steps = sorted({row["step"] for row in rows if row["method"] == m})
        seeds_curves = [[row["eval_reward"] for row in rows if row["method"] == m and row["step"] == s] for s in steps]
        ax.plot(steps, [np.mean(c) for c in seeds_curves], lw=2 if m == "trm_max" else 1, color=f"C{i}", label=m)
        for r in records:
            if r["status"] == "ok":
                ys = [row["eval_reward"] for row in r["curves"]["training"] if row["method"] == m]
                ax.plot(steps[: len(ys)], ys, lw=0.4, alpha=0.4, color=f"C{i}")
    ax.set_xlabel("training step")
    ax.set_ylabel("on-policy evaluation reward (samples from pi_theta)")
    ax.legend(fontsize=7)


# --------------------------------------------------------------------------------------------------- claims
_C1_PROFILES = profiles(
    smoke={"vocabs": [3], "max_T": 4, "perturbations": [0.3], "draws": 1},
    quick={"vocabs": [3, 4], "max_T": 7, "perturbations": [0.05, 0.3, 1.0], "draws": 2},
    full={"vocabs": [3, 4], "max_T": 8, "perturbations": [0.05, 0.3, 1.0], "draws": 4},
    seeds=(1, 1, 1),  # exact and deterministic: one cell holds every case (draws x perturbations x V x T)
)
_C1 = dict(run=run_bound_check, profiles=_C1_PROFILES, deterministic=True, plot=plot_bounds)
_SLOPE = dict(metric="log_log_slope", direction="lower", test="equivalence", min_effect=0.1, **_C1)
_C2_BASE = {
    "vocab": 8,
    "hidden": 32,
    "sft_steps": 150,
    "spike_p": 0.002,
    "spike_sd": 3.0,
    "top_p": 0.95,
    "staleness": 2,
    "stale_sd": 0.01,
    "reward": "prefix",
}
_C2_PROFILES = profiles(
    smoke={**_C2_BASE, "sft_steps": 10, "n": 64, "Ts": [8, 16]},
    quick={**_C2_BASE, "n": 512, "Ts": [16, 64, 256]},
    full={**_C2_BASE, "n": 2048, "Ts": [16, 64, 256]},
    seeds=(1, 3, 5),
)
_C2 = dict(
    metric="cosine",
    direction="higher",
    method="trm_max",
    run=run_gradient_bias,
    profiles=_C2_PROFILES,
    plot=plot_gradient_bias,
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
    quick={**_C3_BASE, "T": 32, "steps": 60, "eval_n": 128},
    full=_C3_BASE,
    seeds=(1, 2, 5),
)
_C3 = dict(method="trm_max", run=run_stability, profiles=_C3_PROFILES, plot=plot_stability, revision=2)

CARD = PaperCard(
    slug="trm",
    title="Trust Region Masking",
    group="llm",
    api="icml26.llm.trm.trust_region_mask",
    extra="llm",
    summary="Sequence-level masking on the max token divergence between rollout and trained policies, with the "
    "O(T^2), O(T^1.5) and O(T) surrogate-error bounds checked exactly on enumerable policies.",
    claims=(
        Claim(
            id="C1",
            statement="The surrogate error |J - L| is bounded by the classical O(T^2), the Pinsker-Marginal "
            "O(T^1.5) and the Mixed O(T) bounds (our derived constants), in every enumerated case, including the "
            "worst-case reward.",
            metric="min_relative_slack",
            direction="higher",
            method="all_bounds",
            reference=0.0,
            paper_figure="bounds stated in the abstract without constants; T = 4096, D = 1e-4: classical ~ 1677",
            notes="slack = (bound - |J - L|) / bound, minimum over every case and bound; exact arithmetic (float64)",
            **_C1,
        ),
        Claim(
            id="C1b",
            statement="Classical trust region bounds on this error scale as O(T^2) with sequence length T.",
            method="classical",
            reference=2.0,
            paper_figure="O(T^2)",
            notes=f"slope of log bound on log T over T in [64, 4096]; margin 0.1 fixed a priori; {FORMULA_SLOPE}",
            **_SLOPE,
        ),
        Claim(
            id="C1c",
            statement="A Pinsker-Marginal bound scaling as O(T^1.5).",
            method="pinsker_marginal",
            reference=1.5,
            paper_figure="O(T^{3/2})",
            notes=f"slope over T in [64, 4096]; margin 0.1 fixed a priori; {FORMULA_SLOPE}",
            **_SLOPE,
        ),
        Claim(
            id="C1d",
            statement="A Mixed bound scaling as O(T).",
            method="mixed",
            reference=1.0,
            paper_figure="O(T)",
            notes="slope over T in [64, 4096] (d_seq factor at its worst case 1); margin 0.1 fixed a priori; "
            + FORMULA_SLOPE,
            **_SLOPE,
        ),
        Claim(
            id="C2",
            statement="As a sequence-level term, the divergence cannot be controlled by token-independent methods: "
            "under a controlled mismatch, the TRM-masked gradient is closer (cosine) to the on-policy gradient "
            "than the token-level rollout corrections (truncated IS, TRL's token_mask), at T = 256.",
            baselines=("none", "token_mask"),
            min_effect=0.05,
            paper_figure="no number in the abstract",
            notes=f"cosine at the largest T of the profile; margin 0.05 fixed a priori; {C2_REDESIGN}",
            **_C2,
        ),
        Claim(
            id="C2b",
            statement="TRM-max's gradient is also closer to the on-policy gradient than TRL's sequence-level rules "
            "(OPSM, sequence_mask) at T = 256 (the issue's comparison; not a claim of the abstract).",
            baselines=("opsm", "sequence_mask"),
            min_effect=0.05,
            notes=f"margin 0.05 fixed a priori; {C2_REDESIGN}",
            **_C2,
        ),
        Claim(
            id="C2c",
            statement="TRM's advantage over the unmasked gradient grows with the horizon T (gain at the largest T "
            "minus gain at the smallest).",
            metric="gain_growth_over_T",
            direction="higher",
            method="trm_max",
            reference=0.0,
            min_effect=0.05,
            run=run_gradient_bias,
            profiles=_C2_PROFILES,
            plot=plot_gradient_bias,
            notes=f"margin 0.05 cosine fixed a priori; {C2_REDESIGN}",
        ),
        Claim(
            id="C3",
            statement="TRM mitigates training collapse in long-horizon LLM-RL: fewer collapses (on-policy "
            "evaluation below half its running peak) than unmasked training and token-level masking, under a "
            "mismatch calibrated so that the unmasked baseline collapses.",
            metric="collapsed",
            direction="lower",
            baselines=("none", "token_mask"),
            min_effect=0.2,
            paper_figure="'mitigate training collapse'; no number in the abstract",
            notes="collapse indicator per seed; margin 0.2 = one fewer collapse in five seeds, fixed a priori; "
            f"calibration: {CALIBRATION}",
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
            f"mismatch and lr calibrated on the unmasked baseline only: {CALIBRATION}",
            **_C3,
        ),
        Claim(
            id="C3b",
            statement="Under the same mismatch, TRM reaches a higher final on-policy reward than unmasked training "
            "and token-level masking.",
            metric="final_reward",
            direction="higher",
            baselines=("none", "token_mask"),
            min_effect=0.05,
            notes="reward share in [0, 1]; margin 0.05 fixed a priori; mismatch and lr calibrated on the unmasked "
            f"baseline only: {CALIBRATION}",
            **_C3,
        ),
    ),
)
