"""Reproduction of SP-UCB-OLP's claims on instances with an exact oracle (no Monte Carlo error in T V_mix).

- Gap instance: the protocol's positive-gap instance (d = 2, b = (0.2, 0.2), K = 3, four request types each): the
  fluid optimum mixes the two mirror-image configurations; the best single configuration is worth about a quarter
  less per period. Its LP optimum accepts one request type *fractionally* (at r = p*.a exactly).
- Atomless instance: the same with every reward spread uniformly over +-0.03 (no atom at any price, so a threshold
  rule can realise the fluid acceptance); its oracle is a smooth convex program certified to ~1e-9.
- Regret(T) = T V_mix - realised reward, V_mix the switching-aware fluid value; every policy plays the same request
  stream (common random numbers) at each (T, seed), under the same budget rule unless the rule is what differs.
- Policies by name (``policies.make_policy``): ``sp_ucb_olp`` is the paper's rule (static budget (1 - eps) b, the
  saddle point's mixture), ``sp_ucb_olp_uniform`` the official code's uniform tie-break, ``*_remaining`` our
  remaining-budget variant of a policy.
- C1*: one cell = a block of inner seeds; the regret slope is fitted on log T vs log(mean regret over the block),
  i.e. the mean is taken over seeds *before* the log, as the protocol asks; cells are independent blocks.
- C2*: reward per period at T = 4000, against the exact best single-configuration value (C2) or against Greedy and
  a random configuration with online-LP prices, every arm on the paper's static budget (C2b) or every arm on our
  remaining budget (C2r): both rules side by side.
- C3: regret at fixed T against K on a family that adds balanced decoys of fixed, slightly lower value to the
  mirror pair; the slope of log regret on log K is compared with the sqrt(K) of the bound.

Re-solving runs on a grid that does not depend on T, the same for every arm: every 10 periods (the official code's
schedule), and once t > 1000 whenever t has grown by 1% (``resolve_growth=0.01``), so that long horizons stay
affordable. On the atomless instance the learners snap requests to a 0.0025 grid (a bounded LP; the official code
keeps every sample).
"""

from __future__ import annotations

from typing import Any

from icml26._core import Cell, Claim, PaperCard, profiles

REVISION = 3  # 2: paper's rule as the default, same budget rule for every arm, atomless instance; 3: unit-free PD step
METHOD = "sp_ucb_olp"  # the paper's rule
UNIFORM = "sp_ucb_olp_uniform"  # the official code's mixture
OURS = "sp_ucb_olp_remaining"  # our remaining-budget variant
RESOLVE = {"resolve_growth": 0.01}
ATOMLESS_RESOLUTION = 0.0025
REGRET_POLICIES = {
    "gap": (METHOD, UNIFORM, OURS, "greedy", "fixed_best", "ucb_no_admission", "primal_dual"),
    "atomless": (METHOD, UNIFORM, OURS, "fixed_best"),
}
STATIC_ARMS = (METHOD, "greedy", "random_olp")
REMAINING_ARMS = (OURS, "greedy_remaining", "random_olp_remaining")
REWARD_POLICIES = (*STATIC_ARMS, UNIFORM, *REMAINING_ARMS, "fixed_best", "ucb_no_admission", "primal_dual")

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


def _instance(name: str) -> tuple[Any, dict[str, Any]]:
    """The instance and the learners' options for it."""
    from icml26.serving.config_selection.instances import atomless_gap_instance, gap_instance

    if name == "gap":
        return gap_instance(), dict(RESOLVE)
    if name == "atomless":
        return atomless_gap_instance(), {**RESOLVE, "resolution": ATOMLESS_RESOLUTION}
    raise ValueError(f"unknown instance {name!r}")


def run_regret_vs_T(cell: Cell) -> dict[str, Any]:
    """Mean regret over a block of seeds at every T, for every policy; metric: its log-log slope."""
    from icml26.serving.config_selection.oracle import fluid_oracle
    from icml26.serving.config_selection.simulate import regret_curve

    instance, options = _instance(cell["instance"])
    value = fluid_oracle(instance).value
    Ts = tuple(int(T) for T in cell["Ts"])
    regrets = regret_curve(instance, REGRET_POLICIES[cell["instance"]], Ts, _inner_seeds(cell), value, **options)
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
        for name in REWARD_POLICIES
    }
    v_single = float(single_values(instance).max())
    v_mix = fluid_oracle(instance).value
    metrics["best_single_fluid"] = {"reward_per_period": v_single}
    return {"metrics": metrics, "info": {"V_mix": v_mix, "best_single": v_single}}


def run_regret_vs_K(cell: Cell) -> dict[str, Any]:
    """Mean regret of our variant of SP-UCB-OLP (and Greedy on the same rule) over a block of seeds at fixed T."""
    import math

    from icml26.serving.config_selection.instances import k_sweep_instance
    from icml26.serving.config_selection.oracle import fluid_oracle
    from icml26.serving.config_selection.simulate import regret_curve

    T, Ks = int(cell["T"]), tuple(int(k) for k in cell["Ks"])
    mean: dict[str, list[float]] = {OURS: [], "greedy_remaining": []}
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
DPI = 150


def _ok(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["status"] == "ok"]


def _curve_means(records: list[dict[str, Any]], x: str) -> dict[str, tuple[list[float], list[float]]]:
    import numpy as np

    acc: dict[str, dict[float, list[float]]] = {}
    for r in _ok(records):
        for row in r["curves"]["regret"]:
            acc.setdefault(row["policy"], {}).setdefault(row[x], []).append(row["mean_regret"])
    return {p: (sorted(v), [float(np.mean(v[k])) for k in sorted(v)]) for p, v in acc.items()}


def _slope_lines(card: dict[str, Any], ax: Any, xs: Any, y0: float, what: str) -> None:
    """The claim's reference slope and its margin(s), drawn through the judged method's first point."""
    import numpy as np

    claim = card["claim"]
    ref, margin = claim["reference"], claim["min_effect"]
    xs = np.asarray(xs, float)
    ax.loglog(xs, y0 * (xs / xs[0]) ** ref, "k:", lw=1, label=f"reference: slope {ref:g} in {what}")
    bounds = [ref + margin] if claim["test"] == "noninferiority" else [ref - margin, ref + margin]
    for s in bounds:
        ax.loglog(xs, y0 * (xs / xs[0]) ** s, "k--", lw=0.8, label=f"margin: slope {s:g} (verdict bound)")


def _legend_outside(ax: Any, extra: list[Any] | None = None) -> None:
    """Legend below the axes (never over data; the axes keep the figure's width for the title)."""
    ax.figure.set_dpi(DPI)
    handles, labels = ax.get_legend_handles_labels()
    for h in extra or []:
        handles.append(h)
        labels.append(h.get_label())
    ax.legend(
        handles,
        labels,
        fontsize=6.5,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.16),
        ncol=2,
        frameon=False,
    )


def _plain_x_ticks(ax: Any, xs: Any) -> None:
    """Ticks at the measured x values, written plainly (not 2 x 10^0) on a log axis."""
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    ax.set_xticks([float(x) for x in xs])
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())


def _mean_metric(records: list[dict[str, Any]], name: str, metric: str) -> float:
    import numpy as np

    return float(np.mean([r["metrics"][name][metric] for r in _ok(records)]))


def plot_regret_vs_T(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """Mean regret against T on log-log axes; legend entries carry each policy's judged metric (the mean over
    cells of the per-cell slope); the judged method is drawn thick, baselines thin."""
    import numpy as np

    method = card["claim"]["method"]
    curves = _curve_means(records, "T")
    for name, (xs, ys) in curves.items():
        slope = _mean_metric(records, name, "regret_slope")
        judged = name == method
        ax.loglog(
            xs,
            np.maximum(ys, 1e-3),
            marker="o",
            ms=4 if judged else 2.5,
            lw=2.4 if judged else 0.9,
            zorder=3 if judged else 2,
            label=f"{name}{' (judged)' if judged else ''}: slope {slope:.2f}",
        )
    xs = curves[method][0]
    _slope_lines(card, ax, xs, max(curves[method][1][0], 1.0), "T")
    _plain_x_ticks(ax, xs)
    ax.tick_params(axis="x", labelsize=7)
    ax.set_xlabel("horizon T")
    ax.set_ylabel("mean regret T V_mix - reward")
    _legend_outside(ax)


def plot_reward(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """Reward per period of the judged method and its baselines (one box per arm over seeds), with V_mix, the
    best single configuration and, for C2, the claim's threshold."""
    import textwrap

    from matplotlib.lines import Line2D

    ok = _ok(records)
    claim = card["claim"]
    names = [n for n in (claim["method"], *claim["baselines"]) if n != "best_single_fluid"]
    values = [[r["metrics"][n]["reward_per_period"] for r in ok] for n in names]
    ax.boxplot(values, tick_labels=[textwrap.fill(n.replace("_", " "), 12).replace(" ", "_") for n in names])
    ax.tick_params(axis="x", labelsize=7)
    info = ok[0]["info"]
    ax.axhline(info["V_mix"], color="C2", ls="--", label="V_mix (switching-aware fluid value)")
    ax.axhline(info["best_single"], color="C3", ls=":", label="max V_theta (best single configuration)")
    if "best_single_fluid" in claim["baselines"]:
        ax.axhline(info["best_single"] + claim["min_effect"], color="C3", ls="-.", lw=0.8, label="max V_theta + margin")
    lows = [min(v) for v in values] + [info["best_single"]]
    ax.set_ylim(bottom=min(lows) - 0.02, top=info["V_mix"] + 0.01)
    ax.set_ylabel(f"reward per period at T = {ok[0]['spec']['setting']['T']}")
    median = Line2D([], [], color="C1", label="median over seeds (box: quartiles; whiskers: 1.5 IQR)")
    outlier = Line2D([], [], color="k", marker="o", ls="", mfc="none", label="a seed beyond the whiskers")
    _legend_outside(ax, [median, outlier])


def plot_regret_vs_K(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """Mean regret at fixed T against K; legend entries carry each policy's judged slope."""
    import numpy as np

    method = card["claim"]["method"]
    curves = _curve_means(records, "K")
    for name, (xs, ys) in curves.items():
        judged = name == method
        slope = _mean_metric(records, name, "regret_K_slope")
        ax.loglog(
            xs,
            np.maximum(ys, 1e-3),
            marker="o",
            lw=2.4 if judged else 0.9,
            label=f"{name}{' (judged)' if judged else ''}: slope {slope:.2f}",
        )
    _slope_lines(card, ax, curves[method][0], max(curves[method][1][0], 1.0), "K")
    _plain_x_ticks(ax, curves[method][0])
    ax.set_xlabel("number of configurations K")
    ax.set_ylabel("regret at fixed T (mean over seeds)")
    _legend_outside(ax)


# --------------------------------------------------------------------------------------------------- claims
def _regret_profiles(instance: str, quick_seeds: int, cell_seconds: tuple[float, float, float]) -> dict[str, Any]:
    """Quick: 3 cells of ``quick_seeds`` inner seeds (the whole quick profile fits about a minute); full: 6 x 4."""
    return profiles(
        smoke={"instance": instance, "Ts": [100, 200], "inner_seeds": 1},
        quick={"instance": instance, "Ts": [500, 1000, 2000, 4000], "inner_seeds": quick_seeds},
        full={"instance": instance, "Ts": [500, 1000, 2000, 4000, 8000, 16000, 32000], "inner_seeds": 4},
        seeds=(1, 3, 6),
        cell_seconds=cell_seconds,
    )


_HORIZON = (
    "The claim is about the full profile's horizons, T = 500..32,000 (1.8 decades, 6 cells x 4 seeds); the quick "
    "profile (T <= 4,000, 3 cells x 3 seeds on the gap instance, x 2 on the atomless one) sees mostly the "
    "sqrt(T) phase and can read differently."
)
_GAP_SLOPE = dict(
    metric="regret_slope",
    direction="lower",
    run=run_regret_vs_T,
    profiles=_regret_profiles("gap", 3, (0.5, 5.5, 40.0)),
    plot=plot_regret_vs_T,
    revision=REVISION,
)
_ATOMLESS_SLOPE = {**_GAP_SLOPE, "profiles": _regret_profiles("atomless", 2, (1.5, 5.5, 45.0))}

_REWARD = dict(
    metric="reward_per_period",
    direction="higher",
    run=run_reward_per_period,
    profiles=profiles({"T": 300}, {"T": 4000}, {"T": 4000}, seeds=(2, 6, 20), cell_seconds=(0.4, 1.2, 1.2)),
    plot=plot_reward,
    revision=REVISION,
)
_PUBLISHED = "official code, 50 seeds: CR 0.952 +- 0.005 (alpha = 0.1) vs Greedy 0.848, Random 0.610"

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
            "up to a margin of 0.25), run as the paper states it (static budget (1 - eps) b, the saddle point's "
            "mixture) on the protocol's gap instance.",
            method=METHOD,
            reference=0.5,
            test="noninferiority",
            min_effect=0.25,
            paper_figure="O~(sqrt(KT)) regret; no measured slope in the abstract",
            notes="Margin 0.25 fixed before any run (the protocol's 'slope < 0.75'). " + _HORIZON + " Mechanism "
            "of a slope above 0.75 here (computed from the exact LP, a unit test): the gap instance's optimum "
            "accepts one request type fractionally, at exactly r = p*.a; a threshold rule accepts all of it, which "
            "at p* consumes (0.212, 0.201) per period against b = (0.2, 0.2) with the saddle mixture (5.8% over on "
            "resource 1) and (0.206, 0.206) with the official code's uniform mixture (3.1% over). With a static "
            "budget nothing corrects this drift: the slack eps = sqrt(log T / T) absorbs 5.8% only up to "
            "T ~ 2,500 and 3.1% up to T ~ 9,500; beyond, the budget runs out early and the regret grows linearly. "
            "So the quick profile (T <= 4,000) can read reproduced where full does not, and the uniform tie-break "
            "(plotted) fares better on this instance by the accident of its mixture. C1c and C1u judge the same "
            "rules on an atomless copy of the instance, where the mechanism is absent; C1r is our remaining-budget "
            "variant, which corrects the drift.",
            **_GAP_SLOPE,
        ),
        Claim(
            id="C1r",
            statement="Our variant of SP-UCB-OLP (re-solving with the remaining budget per remaining period) has "
            "regret slope at most 1/2 + 0.25 on the gap instance.",
            method=OURS,
            reference=0.5,
            test="noninferiority",
            min_effect=0.25,
            paper_figure="O~(sqrt(KT)) regret (for the paper's algorithm)",
            notes="Our variant, not the paper's rule, reported beside it (C1); margin fixed before any run. "
            + _HORIZON,
            **_GAP_SLOPE,
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
            notes="margin 0.15 fixed before any run. " + _HORIZON,
            **_GAP_SLOPE,
        ),
        Claim(
            id="C1c",
            statement="SP-UCB-OLP, the paper's rule (static budget, the saddle point's mixture), has regret slope at "
            "most 1/2 + 0.25 on an atomless instance (the gap instance with every reward spread uniformly over "
            "+-0.03), where a threshold rule can realise the fluid acceptance.",
            method=METHOD,
            reference=0.5,
            test="noninferiority",
            min_effect=0.25,
            paper_figure="O~(sqrt(KT)) regret; no measured slope in the abstract",
            notes="Added on review (issue 22): C1's instance has an atom at the fluid price, this one has none. The "
            "oracle is exact (a smooth convex program, primal-dual gap ~1e-9). The learners snap requests to a "
            "0.0025 grid to keep the LP bounded (the official code keeps every sample). Margin 0.25 fixed before "
            "any run, as C1's. " + _HORIZON,
            **_ATOMLESS_SLOPE,
        ),
        Claim(
            id="C1u",
            statement="SP-UCB-OLP as the official code runs it (static budget, uniform mixture over the "
            "configurations that attain the optimistic envelope) has regret slope at most 1/2 + 0.25 on the "
            "atomless instance.",
            method=UNIFORM,
            reference=0.5,
            test="noninferiority",
            min_effect=0.25,
            paper_figure="O~(sqrt(KT)) regret; no measured slope in the abstract",
            notes="Same cells as C1c. The uniform tie-break is exact only when one configuration attains the "
            "envelope; here the optimum mixes two (w* = 0.516 / 0.484), so a small drift is expected at long "
            "horizons. Margin 0.25 fixed before any run. " + _HORIZON,
            **_ATOMLESS_SLOPE,
        ),
        Claim(
            id="C2",
            statement="SP-UCB-OLP's reward per period exceeds what any single configuration can achieve (the value "
            "of mixing configurations over time); the paper's rule.",
            method=METHOD,
            baselines=("best_single_fluid",),
            min_effect=0.03,
            paper_figure=_PUBLISHED,
            notes="minimum effect 0.03 per period above max V_theta, fixed before any run",
            **_REWARD,
        ),
        Claim(
            id="C2b",
            statement="SP-UCB-OLP earns more per period than Greedy (no exploration bonus) and than a random "
            "configuration with online-LP prices (the paper's experimental baselines); every arm on the paper's "
            "static budget (1 - eps) b.",
            method=METHOD,
            baselines=("greedy", "random_olp"),
            min_effect=0.01,
            paper_figure=_PUBLISHED,
            notes="Minimum effect 0.01 per period, fixed before any run. Every arm runs the same budget rule (the "
            "first version ran the baselines on our remaining-budget rule: review issue 22); C2r is the same "
            "comparison with every arm on our remaining-budget rule. Quick (6 seeds) can stay inconclusive where "
            "full (20 seeds) decides: Greedy's losses are uneven across seeds.",
            **_REWARD,
        ),
        Claim(
            id="C2r",
            statement="Our remaining-budget variant of SP-UCB-OLP earns more per period than Greedy and than a "
            "random configuration with online-LP prices, every arm on the remaining-budget rule.",
            method=OURS,
            baselines=("greedy_remaining", "random_olp_remaining"),
            min_effect=0.01,
            paper_figure=_PUBLISHED,
            notes="C2b's comparison with every arm on our remaining-budget rule (side by side with the paper's "
            "static rule); minimum effect 0.01 per period, as C2b's, fixed before any run. On this rule Greedy "
            "either matches SP-UCB-OLP or locks onto one configuration for the whole run (about 1 seed in 5 at "
            "~0.27 per period, the best single value): a positive mean effect with a wide interval.",
            **_REWARD,
        ),
        Claim(
            id="C3",
            statement="The regret's dependence on the number of configurations is sqrt(K) at fixed T "
            "(log-log slope in K at most 1/2 up to a margin of 0.25), on a family of decoys of fixed value gap; "
            "our remaining-budget variant of SP-UCB-OLP, Greedy on the same rule for reference.",
            metric="regret_K_slope",
            direction="lower",
            method=OURS,
            reference=0.5,
            test="noninferiority",
            min_effect=0.25,
            run=run_regret_vs_K,
            profiles=profiles(
                {"T": 300, "Ks": [2, 4], "inner_seeds": 1},
                {"T": 2000, "Ks": [2, 4, 8], "inner_seeds": 2},
                {"T": 4000, "Ks": [2, 4, 8, 16], "inner_seeds": 4},
                seeds=(1, 3, 5),
                cell_seconds=(0.4, 1.2, 6.0),
            ),
            paper_figure="O~(sqrt(KT)): a sqrt(K) factor (an upper bound)",
            notes="sqrt(K) is a worst-case rate; with fixed gaps, regret K log T / gap (slope ~1) is expected, and "
            "K = 2 has no decoy at all; kept as the issue asks, read with that in mind. Our variant: on this atomic "
            "instance the paper's static rule's drift (C1) would swamp the K dependence.",
            plot=plot_regret_vs_K,
            revision=REVISION,
        ),
    ),
)
