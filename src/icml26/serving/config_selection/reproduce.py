"""Reproduction of SP-UCB-OLP's claims on exact discrete instances (the oracle is an LP: no Monte Carlo error).

- Instance: the protocol's positive-gap instance (d = 2, b = (0.2, 0.2), K = 3): the fluid optimum mixes the two
  mirror-image configurations; the best single configuration is worth about a quarter less per period.
- Regret(T) = T V_mix - realised reward, V_mix the switching-aware fluid value; every policy plays the same
  request stream (common random numbers) at each (T, seed).
- C1: one cell = a block of inner seeds; the regret slope is fitted on log T vs log(mean regret over the block),
  i.e. the mean is taken over seeds *before* the log, as the protocol asks; cells are independent blocks.
- C2: reward per period at T = 4000 against the exact best single-configuration value (impossible without mixing).
- C3: regret at fixed T against K in {2, 4, 8, 16} on a family that adds balanced decoys of fixed, slightly lower
  value to the mirror pair; the slope of log regret on log K is compared with the sqrt(K) of the bound.

Re-solving runs on a grid that does not depend on T: every 10 periods, and once t > 1000 whenever t has grown
by 1% (``resolve_growth=0.01``), so that long horizons stay affordable.
"""

from __future__ import annotations

from typing import Any

from icml26._core import Cell, Claim, PaperCard, profiles
from icml26.serving.config_selection.policies import POLICIES

METHOD = "sp_ucb_olp"
RESOLVE = {"resolve_growth": 0.01}
C1_POLICIES = ("sp_ucb_olp_static", "sp_ucb_olp", "greedy", "fixed_best", "ucb_no_admission", "primal_dual")
OFFICIAL = "sp_ucb_olp_static"  # the algorithm as the notes and the official code state it: b_safe = (1 - eps) b
C2_POLICIES = POLICIES  # every policy at one horizon


REGRET_FLOOR = 1.0  # a mean regret below one request's reward counts as 1 in log-log fits (logs need y > 0)


def _slope(x: Any, y: Any) -> float:
    """Least-squares slope of log y on log x, with y floored at REGRET_FLOOR.

    A mean regret over a few seeds can be ~0 or even negative (T V_mix bounds the *expected* reward); its log
    would dominate the fit. The floor is one unit of reward, fixed before any run.
    """
    import numpy as np

    lx, ly = np.log(np.asarray(x, float)), np.log(np.maximum(np.asarray(y, float), REGRET_FLOOR))
    return float(np.polyfit(lx, ly, 1)[0])


def _inner_seeds(cell: Cell) -> tuple[int, ...]:
    n = int(cell["inner_seeds"])
    return tuple(range(cell.seed * n, (cell.seed + 1) * n))


def run_regret_vs_T(cell: Cell) -> dict[str, Any]:
    """Mean regret over a block of seeds at every T, for every policy; metric: its log-log slope."""
    from icml26.serving.config_selection.instances import gap_instance
    from icml26.serving.config_selection.oracle import fluid_oracle
    from icml26.serving.config_selection.simulate import regret_curve

    instance = gap_instance()
    value = fluid_oracle(instance).value
    Ts = tuple(int(T) for T in cell["Ts"])
    regrets = regret_curve(instance, C1_POLICIES, Ts, _inner_seeds(cell), value, **RESOLVE)
    mean = {name: r.mean(axis=1) for name, r in regrets.items()}
    return {
        "metrics": {
            name: {
                "regret_slope": _slope(Ts, m),
                "regret_at_max_T": float(m[-1]),
                "competitive_ratio_at_max_T": float(1 - m[-1] / (Ts[-1] * value)),
            }
            for name, m in mean.items()
        },
        "curves": {
            "regret": [
                {"T": T, "policy": n, "mean_regret": float(m[i])} for n, m in mean.items() for i, T in enumerate(Ts)
            ]
        },
        "info": {"V_mix": value, "inner_seeds": list(_inner_seeds(cell))},
    }


def run_reward_per_period(cell: Cell) -> dict[str, Any]:
    """Reward per period of every policy at one T, and the exact fluid values it is compared with."""
    from icml26.serving.config_selection.instances import gap_instance
    from icml26.serving.config_selection.oracle import fluid_oracle, single_values
    from icml26.serving.config_selection.policies import make_policy
    from icml26.serving.config_selection.simulate import TwoLayerEnv, run_policy

    instance = gap_instance()
    T = int(cell["T"])
    env = TwoLayerEnv(instance, T, cell.seed)
    metrics = {
        name: {
            "reward_per_period": run_policy(env, make_policy(name, instance, T, seed=cell.seed, **RESOLVE)).reward / T
        }
        for name in C2_POLICIES
    }
    v_single = float(single_values(instance).max())
    v_mix = fluid_oracle(instance).value
    metrics["best_single_fluid"] = {"reward_per_period": v_single}
    return {"metrics": metrics, "info": {"V_mix": v_mix, "best_single": v_single}}


def run_regret_vs_K(cell: Cell) -> dict[str, Any]:
    """Mean regret of SP-UCB-OLP (and Greedy, for reference) over a block of seeds at fixed T, for every K."""
    import math

    from icml26.serving.config_selection.instances import k_sweep_instance
    from icml26.serving.config_selection.oracle import fluid_oracle
    from icml26.serving.config_selection.simulate import regret_curve

    T, Ks = int(cell["T"]), tuple(int(k) for k in cell["Ks"])
    mean: dict[str, list[float]] = {METHOD: [], "greedy": []}
    for K in Ks:
        instance = k_sweep_instance(K)
        regrets = regret_curve(instance, tuple(mean), (T,), _inner_seeds(cell), fluid_oracle(instance).value, **RESOLVE)
        for name, r in regrets.items():
            mean[name].append(float(r.mean()))
    return {
        "metrics": {
            name: {
                "regret_K_slope": _slope(Ks, m),
                "max_regret_over_sqrt_KT": max(r / math.sqrt(K * T) for r, K in zip(m, Ks, strict=True)),
            }
            for name, m in mean.items()
        },
        "curves": {
            "regret": [{"K": K, "policy": n, "mean_regret": m[i]} for n, m in mean.items() for i, K in enumerate(Ks)]
        },
    }


# ---------------------------------------------------------------------------------------------------- plots
def _curve_means(records: list[dict[str, Any]], x: str) -> dict[str, tuple[list[float], list[float]]]:
    import numpy as np

    acc: dict[str, dict[float, list[float]]] = {}
    for r in records:
        if r["status"] == "ok":
            for row in r["curves"]["regret"]:
                acc.setdefault(row["policy"], {}).setdefault(row[x], []).append(row["mean_regret"])
    return {p: (sorted(v), [float(np.mean(v[k])) for k in sorted(v)]) for p, v in acc.items()}


def plot_regret_vs_T(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    import numpy as np

    curves = _curve_means(records, "T")
    for name, (xs, ys) in curves.items():
        ax.loglog(xs, np.maximum(ys, 1e-3), marker="o", ms=3, lw=2 if name == METHOD else 1, label=name)
    xs = np.array(next(iter(curves.values()))[0], float)
    ax.loglog(xs, 5 * np.sqrt(xs / xs[0]), "k:", lw=0.8, label="slope 1/2")
    ax.loglog(xs, 50 * xs / xs[0], "k--", lw=0.8, label="slope 1")
    ax.set_xlabel("horizon T")
    ax.set_ylabel("regret T V_mix - reward (mean over seeds)")
    ax.legend(fontsize=7)


def plot_reward(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    import numpy as np

    ok = [r for r in records if r["status"] == "ok"]
    names = [n for n in C2_POLICIES if n in ok[0]["metrics"]]
    values = [[r["metrics"][n]["reward_per_period"] for r in ok] for n in names]
    ax.boxplot(values, tick_labels=names)
    ax.tick_params(axis="x", labelrotation=30, labelsize=7)
    ax.axhline(ok[0]["info"]["V_mix"], color="C2", ls="--", label="V_mix (switching-aware fluid)")
    ax.axhline(ok[0]["info"]["best_single"], color="C3", ls=":", label="max V_theta (best single configuration)")
    ax.set_ylabel(f"reward per period, T = {ok[0]['spec']['setting']['T']}")
    ax.set_ylim(bottom=float(np.min(values)) * 0.9)
    ax.legend(fontsize=7)


def plot_regret_vs_K(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    import numpy as np

    curves = _curve_means(records, "K")
    for name, (xs, ys) in curves.items():
        ax.loglog(xs, np.maximum(ys, 1e-3), marker="o", label=name)
    xs = np.array(next(iter(curves.values()))[0], float)
    y0 = curves[METHOD][1][0]
    ax.loglog(xs, y0 * np.sqrt(xs / xs[0]), "k:", lw=0.8, label="slope 1/2 (sqrt K)")
    ax.loglog(xs, y0 * xs / xs[0], "k--", lw=0.8, label="slope 1")
    ax.set_xlabel("number of configurations K")
    ax.set_ylabel("regret at fixed T (mean over seeds)")
    ax.legend(fontsize=7)


# --------------------------------------------------------------------------------------------------- claims
REGRET_VS_T = profiles(
    smoke={"Ts": [100, 200], "inner_seeds": 1},
    quick={"Ts": [500, 1000, 2000, 4000], "inner_seeds": 4},
    full={"Ts": [500, 1000, 2000, 4000, 8000, 16000, 32000], "inner_seeds": 4},
    seeds=(1, 4, 6),
)
_SLOPE = dict(
    metric="regret_slope",
    direction="lower",
    run=run_regret_vs_T,
    profiles=REGRET_VS_T,
    plot=plot_regret_vs_T,
)

_REWARD = dict(
    metric="reward_per_period",
    direction="higher",
    method=OFFICIAL,
    run=run_reward_per_period,
    profiles=profiles({"T": 300}, {"T": 4000}, {"T": 4000}, seeds=(2, 6, 20)),
    plot=plot_reward,
)

CARD = PaperCard(
    slug="config_selection",
    title="SP-UCB-OLP (configuration selection with admission control)",
    group="serving",
    api="icml26.serving.config_selection.SPUCBOLP",
    extra="serving",
    summary="Online configuration selection with admission control against the switching-aware fluid oracle.",
    claims=(
        Claim(
            id="C1",
            statement="SP-UCB-OLP ... achieves O~(sqrt(KT)) regret against T V_mix (log-log slope in T at most 1/2 "
            "up to a margin of 0.25), run as the official code states it: re-solving with the static budget "
            "(1 - eps) b.",
            method=OFFICIAL,
            reference=0.5,
            test="noninferiority",
            min_effect=0.25,
            paper_figure="O~(sqrt(KT)) regret; no measured slope in the abstract",
            notes="margin 0.25 fixed before any run (the protocol's 'slope < 0.75')",
            **_SLOPE,
        ),
        Claim(
            id="C1r",
            statement="Our reading of SP-UCB-OLP (re-solving with the remaining budget per remaining period, which "
            "corrects the drift of threshold admission at price ties) has regret slope at most 1/2 + 0.25.",
            method=METHOD,
            reference=0.5,
            test="noninferiority",
            min_effect=0.25,
            paper_figure="O~(sqrt(KT)) regret (for the paper's algorithm)",
            notes="a variant, reported beside the official rule; margin fixed before any run",
            **_SLOPE,
        ),
        Claim(
            id="C1b",
            statement="Committing to the best single configuration has linear regret against the switching-aware "
            "benchmark (log-log slope within 1 +- 0.15).",
            method="fixed_best",
            reference=1.0,
            test="equivalence",
            min_effect=0.15,
            paper_figure="the switching-aware oracle exceeds any single configuration by T x gap",
            **_SLOPE,
        ),
        Claim(
            id="C2",
            statement="SP-UCB-OLP's reward per period exceeds what any single configuration can achieve (the value "
            "of mixing configurations over time); official static-budget rule.",
            baselines=("best_single_fluid",),
            min_effect=0.03,
            paper_figure="official code, 50 seeds: CR 0.952 +- 0.005 (alpha = 0.1) vs Greedy 0.848, Random 0.610",
            notes="minimum effect 0.03 per period above max V_theta, fixed before any run",
            **_REWARD,
        ),
        Claim(
            id="C2b",
            statement="SP-UCB-OLP earns more per period than Greedy (no exploration bonus) and than a random "
            "configuration with online-LP prices (the paper's experimental baselines); official rule.",
            baselines=("greedy", "random_olp"),
            min_effect=0.01,
            paper_figure="official code, 50 seeds: CR 0.952 (SP-UCB-OLP) vs 0.848 (Greedy) vs 0.610 (Random)",
            notes="minimum effect 0.01 per period, fixed before any run",
            **_REWARD,
        ),
        Claim(
            id="C3",
            statement="The regret's dependence on the number of configurations is sqrt(K) at fixed T "
            "(log-log slope in K at most 1/2 up to a margin of 0.25), on a family of decoys of fixed value gap; "
            "our remaining-budget variant of SP-UCB-OLP.",
            metric="regret_K_slope",
            direction="lower",
            method=METHOD,
            reference=0.5,
            test="noninferiority",
            min_effect=0.25,
            run=run_regret_vs_K,
            profiles=profiles(
                {"T": 300, "Ks": [2, 4], "inner_seeds": 1},
                {"T": 2000, "Ks": [2, 4, 8], "inner_seeds": 2},
                {"T": 4000, "Ks": [2, 4, 8, 16], "inner_seeds": 4},
                seeds=(1, 3, 5),
            ),
            paper_figure="O~(sqrt(KT)): a sqrt(K) factor (an upper bound)",
            notes="sqrt(K) is a worst-case rate; with fixed gaps, regret K log T / gap (slope ~1) is expected, and "
            "K = 2 has no decoy at all; kept as the issue asks, read with that in mind",
            plot=plot_regret_vs_K,
        ),
    ),
)
