"""Reproduction of ACE's claims: exact L1 to the target and mode discovery at equal trajectory budgets.

One cell = one environment and one seed; it trains every arm from the *same* initial canonical network (the seed
fixes it) on the same budget of trajectories, explorer trajectories included, batch 16:

- ``ace``: ACE, alpha = 0.5 fixed, floor = 10 nats, divergent TB for the explorer (our reading, see the package
  docstring), canonical TB on every trajectory;
- ``tb``: on-policy TB;
- ``tb_eps``: TB with epsilon-uniform exploration, epsilon = 0.1 (the notes' protocol);
- ``rnd``: an RND explorer at the same mixture alpha = 0.5, trained by TB on R(x) exp(n(x) / mean n) (the notes'
  form of the curiosity / RND baseline), canonical TB on every trajectory, as for ACE;
- ``ace_adaptive`` (no claim; our reading of "adaptive"): ACE with alpha_t = clip(Z_E / (Z_E + Z_C), 0.05, 0.5).

Metrics per arm: ``l1`` = the exact sum_x |P_T(x) - R(x)/Z| of the canonical sampler at the end of the budget
(forward dynamic program over the DAG; never of the mixture or of the training samples), ``mode_states_frac`` =
the fraction of maximal-reward states among all sampled trajectories by the end, plus ``mode_states``,
``modes`` (grid corners reached), ``discovery_auc`` (mean fraction found over 20 checkpoints) and ``l1_auc``.

Settings: HyperGrid 2-D, H = 20, R0 = 1e-3, R1 = 0.5, R2 = 2 (16 mode states), 32,000 trajectories (the notes'
protocol); quick uses H = 10 (4 mode states) and 4,800 trajectories. Bit sequences: 12 bits built from 2-bit
words in any order (6 slots, 15,625 states, 6! orderings per string), 8 planted modes, log R = -2 d_Hamming,
16,000 trajectories. MLPs: 2 hidden layers of 64, Adam 1e-3 (networks) and 0.1 (log Z).

Margins were fixed before any claim run: 0.1 of L1 (5 points of total variation), 0.1 of the mode states.
"""

from __future__ import annotations

from typing import Any

from icml26._core import Cell, Claim, PaperCard, profiles, single_torch_thread

ARMS = ("ace", "tb", "tb_eps", "rnd", "ace_adaptive")
TRAIN = {"batch": 16, "hidden": 64, "lr": 1e-3, "lr_log_z": 0.1, "alpha": 0.5, "floor": 10.0, "epsilon": 0.1}
CHECKPOINTS = 20


def make_env(setting: Any) -> Any:
    from icml26.decision.ace_gflownet import BitSequence, HyperGrid

    if setting["env"] == "hypergrid":
        return HyperGrid(int(setting["ndim"]), int(setting["height"]), R0=float(setting["R0"]))
    if setting["env"] == "bitseq":
        return BitSequence(
            int(setting["n_bits"]), int(setting["word_size"]), int(setting["n_modes"]), beta=float(setting["beta"])
        )
    raise ValueError(f"unknown env {setting['env']!r}")


def make_trainer(arm: str, env: Any, seed: int) -> Any:
    from icml26.decision.ace_gflownet import ACETrainer, RNDTrainer, TBTrainer

    common = dict(hidden=TRAIN["hidden"], lr=TRAIN["lr"], lr_log_z=TRAIN["lr_log_z"], seed=seed)
    if arm == "ace":
        return ACETrainer(env, alpha=TRAIN["alpha"], floor=TRAIN["floor"], **common)
    if arm == "ace_adaptive":
        return ACETrainer(env, alpha=TRAIN["alpha"], floor=TRAIN["floor"], adaptive=True, min_alpha=0.05, **common)
    if arm == "tb":
        return TBTrainer(env, **common)
    if arm == "tb_eps":
        return TBTrainer(env, epsilon=TRAIN["epsilon"], **common)
    if arm == "rnd":
        return RNDTrainer(env, alpha=TRAIN["alpha"], **common)
    raise ValueError(f"unknown arm {arm!r}")


def run_exploration(cell: Cell) -> dict[str, Any]:
    """Every arm at the same budget from the same initial canonical network; exact L1 and mode discovery."""
    import numpy as np

    env = make_env(cell.setting)
    budget, batch = int(cell["trajectories"]), TRAIN["batch"]
    n_modes = len(env.mode_states())
    metrics: dict[str, dict[str, float]] = {}
    curve: list[dict[str, Any]] = []
    with single_torch_thread():
        for arm in ARMS:
            trainer = make_trainer(arm, env, cell.seed)
            hist = trainer.train(budget, batch, eval_every=budget // CHECKPOINTS)
            frac = np.asarray(hist.mode_states_found, float) / n_modes
            metrics[arm] = {
                "l1": hist.l1[-1],
                "l1_auc": float(np.mean(hist.l1)),
                "mode_states_frac": float(frac[-1]),
                "mode_states": float(hist.mode_states_found[-1]),
                "modes": float(hist.modes_found[-1]),
                "discovery_auc": float(frac.mean()),
                "log_z_error": abs(hist.log_z[-1] - env.log_partition),
            }
            curve += [{"method": arm, **row} for row in hist.as_rows()]
    info = {"env": repr(env), "log_partition": env.log_partition, "mode_states_total": n_modes, "budget": budget}
    return {"metrics": metrics, "curves": {"training": curve}, "info": info}


# ---------------------------------------------------------------------------------------------------- plots
def _curve_plot(column: str, ylabel: str, scale: str = "value"):  # type: ignore[no-untyped-def]
    """Mean over seeds (band: +/- 1 sd) of a training curve per arm, against trajectories spent."""

    def plot(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
        import numpy as np

        from icml26._core.plots import arm_style, band_key, reference_line

        claim = card["claim"]
        arms = [claim["method"], *claim["baselines"]] + [
            a for a in ARMS if a not in (claim["method"], *claim["baselines"])
        ]
        ok = [r for r in records if r["status"] == "ok"]
        for i, arm in enumerate(arms):
            runs = []
            for r in ok:
                pts = [p for p in r["curves"]["training"] if p["method"] == arm]
                total = r["info"]["mode_states_total"] if scale == "fraction" else 1.0
                runs.append(([p["trajectories"] for p in pts], [p[column] / total for p in pts]))
            if not runs:
                continue
            xs = np.asarray(runs[0][0], float)
            ys = np.asarray([y for _, y in runs], float)
            style = arm_style(card, arm, index=i)
            role = "method" if arm == claim["method"] else "baseline" if arm in claim["baselines"] else "other arm"
            if role == "other arm":
                style = {**style, "ls": ":", "lw": 1.0}
            ax.plot(xs, ys.mean(0), label=f"{arm} ({role}), mean of {len(runs)} seeds", **style)
            ax.fill_between(xs, ys.mean(0) - ys.std(0), ys.mean(0) + ys.std(0), color=style["color"], alpha=0.15, lw=0)
        if scale == "fraction":  # the best an arm can do: every maximal-reward state found
            reference_line(ax, 1.0, "reference: all mode states found")
        else:  # the exact sampler of R/Z
            reference_line(ax, 0.0, "reference: exact sampler, L1 = 0")
        band_key(ax)
        ax.legend()
        settings = sorted({r["info"]["env"] for r in ok})
        ax.set_xlabel("trajectories spent (explorer trajectories included)\n" + "; ".join(settings), fontsize=7)
        ax.set_ylabel(ylabel, fontsize=8)

    return plot


def _plot(column: str, ylabel: str, title: str, scale: str = "value"):  # type: ignore[no-untyped-def]
    from icml26._core.plots import with_judged_metric

    return with_judged_metric(_curve_plot(column, ylabel, scale), title=title)


PLOT_L1 = _plot("l1", "exact L1 of the canonical sampler to R/Z (lower is better)", "L1 along training")
PLOT_MODES = _plot(
    "mode_states_found", "fraction of maximal-reward states found (higher is better)", "discovery", "fraction"
)

# ------------------------------------------------------------------------------------------------- settings
GRID_SMOKE = {"env": "hypergrid", "ndim": 2, "height": 8, "R0": 1e-3, "trajectories": 800}
GRID_QUICK = {"env": "hypergrid", "ndim": 2, "height": 10, "R0": 1e-3, "trajectories": 4800}
GRID_FULL = {"env": "hypergrid", "ndim": 2, "height": 20, "R0": 1e-3, "trajectories": 32000}
BITS_SMOKE = {"env": "bitseq", "n_bits": 6, "word_size": 2, "n_modes": 4, "beta": 2.0, "trajectories": 320}
BITS_QUICK = {"env": "bitseq", "n_bits": 8, "word_size": 2, "n_modes": 4, "beta": 2.0, "trajectories": 1600}
BITS_FULL = {"env": "bitseq", "n_bits": 12, "word_size": 2, "n_modes": 8, "beta": 2.0, "trajectories": 16000}

GRID = profiles(GRID_SMOKE, GRID_QUICK, GRID_FULL, seeds=(1, 3, 5), cell_seconds=(2.0, 12.0, 115.0))
BITS = profiles(BITS_SMOKE, BITS_QUICK, BITS_FULL, seeds=(1, 3, 5), cell_seconds=(1.0, 4.0, 45.0))

_KINDS = {  # what a claim judges: its metric, plot and margin note (margins fixed before any claim run)
    "l1": dict(
        metric="l1",
        direction="lower",
        unit="L1",
        plot=PLOT_L1,
        note="Margin 0.1 of L1 (in [0, 2]; 5 points of total variation), fixed before any claim run. ",
    ),
    "modes": dict(
        metric="mode_states_frac",
        direction="higher",
        unit="fraction",
        plot=PLOT_MODES,
        note="Metric: distinct maximal-reward states among all trajectories sampled in training (every arm's "
        "behaviour samples, the explorer's included), as a fraction of all of them (16 at H = 20, 4 at H = 10, the "
        "planted strings on bit sequences); margin 0.1 of them, fixed before any claim run. ",
    ),
}
_COMMON_NOTE = (
    "Equal budgets: every arm spends the same number of trajectories (explorer trajectories counted), batch 16, "
    "from the same initial canonical network (paired by seed). ACE's explorer objective (divergent TB: log Z_E + "
    "log P_F^E = log[R P_B - Z_C P_F^C]_+, floored 10 nats below log R P_B) and the fixed mixture alpha = 0.5 are "
    "our reading of the abstract and the paper's title; the abstract gives no equations. RND explorer: TB on "
    "R(x) exp(n(x) / mean n), the notes' form, same mixture alpha = 0.5. Full: 5 seeds per setting (the notes' "
    "protocol); the notes' further settings (H = 32, a 4-D grid) are not run, to fit the time budget."
)
_GRID_NOTE = (
    " Quick runs H = 10 with 4,800 trajectories and 3 seeds (the notes' H = 20 protocol costs minutes per seed): "
    "a smaller, easier grid on which the verdict may differ from the full profile's."
)
_BITS_NOTE = (
    " A second task of another structure (a DAG with 6! orderings per string, no low-reward valley); quick uses "
    "8 bits and 4 modes."
)
# Outcomes of the recorded full run (5 seeds), written after it; the margins and claims above were not changed.
_GRID_OUTCOME = (
    " Outcome (full): TB and epsilon-TB stay stuck near s0 on every seed (L1 1.44-1.50, 4-7 of 16 mode states); "
    "ACE breaks out on 4 of 5 seeds (L1 0.16-0.32, all 16 states; seed 0 only starts to: L1 1.24, 13 states), "
    "as the notes expect. The RND explorer at the same mixture breaks out on every seed and earlier (all 16 states "
    "by 8,000-9,600 trajectories, ACE by 22,400-25,600; final L1 0.12-0.17), so ACE is not better than RND at our "
    "scale (lower L1 on 0 of 5 seeds). The adaptive arm (our reading, no claim) stays stuck (L1 about 1.5): its "
    "alpha falls to its floor 0.05 within the first few thousand trajectories, before any breakout. "
    "Quick and full verdicts differ by horizon: quick's 4,800 trajectories on H = 10 end around ACE's "
    "breakout (ACE 3 of 4 mode states on average, L1 1.38 vs 1.42-1.49), the full budget leaves time for it."
)
_BITS_OUTCOME = (
    " Outcome (full): every arm samples 6-8 of the 8 planted modes (no valley to cross: nothing for an explorer "
    "to find), and ACE's canonical sampler ends with a higher L1 (0.78-0.93) than epsilon-TB (0.68-0.74) and the "
    "RND arm (0.65-0.68) on every seed. The RND arm trains its canonical sampler on the same 50/50 mixture and "
    "does not lose, so the cost comes from what ACE's explorer samples (the residual flow), not from the mixture: "
    "not reproduced at our scale."
)


def _claim(cid: str, kind: str, statement: str, baselines: tuple[str, ...], figure: str) -> Claim:
    """One claim of ACE against ``baselines`` on the HyperGrid (C1, C2) or bit-sequence (C3, C4) cells."""
    k = dict(_KINDS[kind])
    bits = cid.startswith(("C3", "C4"))
    note = str(k.pop("note")) + _COMMON_NOTE + (_BITS_NOTE + _BITS_OUTCOME if bits else _GRID_NOTE + _GRID_OUTCOME)
    grid = BITS if bits else GRID
    return Claim(
        id=cid,
        statement=statement,
        method="ace",
        baselines=baselines,
        min_effect=0.1,
        run=run_exploration,
        profiles=grid,
        paper_figure=figure,
        notes=note,
        **k,
    )


_GRID = "(HyperGrid 2-D, H = 20, R0 = 1e-3, 32,000 trajectories)"
CARD = PaperCard(
    slug="ace_gflownet",
    title="ACE for GFlowNets",
    group="decision",
    api="icml26.decision.ace_gflownet.ACETrainer",
    extra="decision",
    summary="An exploration GFlowNet trained towards the reward the canonical sampler does not yet cover; exact "
    "L1 and mode discovery on HyperGrid and bit sequences at equal trajectory budgets.",
    claims=(
        _claim(
            "C1",
            "l1",
            "ACE improves approximation accuracy to the target distribution: at an equal trajectory budget its "
            "canonical sampler has a lower exact L1 to R/Z than TB with epsilon-uniform exploration and on-policy "
            f"TB {_GRID}.",
            ("tb_eps", "tb"),
            "qualitative (abstract): 'consistently and significantly improves ... approximation accuracy'; notes: "
            "lower by several tenths",
        ),
        _claim(
            "C1r",
            "l1",
            "ACE's canonical sampler has a lower exact L1 to R/Z than the canonical sampler trained with a curiosity "
            f"/ RND explorer at the same mixture and budget {_GRID}.",
            ("rnd",),
            "qualitative (abstract): improves upon curiosity-driven search and RND",
        ),
        _claim(
            "C2",
            "modes",
            "ACE discovers more diverse high-reward states: by the end of an equal trajectory budget it has sampled "
            f"more of the maximal-reward states than TB with epsilon-uniform exploration and on-policy TB {_GRID}.",
            ("tb_eps", "tb"),
            "qualitative (abstract): 'discovery rate of diverse high-reward states'; notes: several more of 16",
        ),
        _claim(
            "C2r",
            "modes",
            "ACE discovers more of the maximal-reward states than a curiosity / RND explorer at the same mixture "
            f"and budget {_GRID}.",
            ("rnd",),
            "qualitative (abstract): improves upon curiosity-driven search and RND",
        ),
        _claim(
            "C3",
            "l1",
            "On bit sequences (12 bits from 2-bit words placed in any order, 8 planted modes, 16,000 trajectories), "
            "ACE's canonical sampler has a lower exact L1 to R/Z than epsilon-TB and the RND explorer.",
            ("tb_eps", "rnd"),
            "qualitative (abstract): 'extensive experiments'",
        ),
        _claim(
            "C4",
            "modes",
            "On bit sequences, ACE samples more of the planted modes than epsilon-TB and the RND explorer within "
            "the same budget.",
            ("tb_eps", "rnd"),
            "qualitative (abstract): 'discovery rate of diverse high-reward states'",
        ),
    ),
)
