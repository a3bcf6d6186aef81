"""One cell of the reproduction: the whole top-K procedure on one task and seed.

1. Fixed T (the abstract's first bound): every K in the grid trains for the same T steps with the same schedule;
   the running average of the full-batch ||grad f||^2 and the final training loss are recorded (claim C1).
2. Fit (the procedure of the notes): a, b of Q sqrt(T) = a + b M / K to the fixed-T running ||grad f||^2, and
   K* from the exact cost split c0 + K c_e of the model (:func:`optimal_topk`) (claim C3).
3. Fixed R (the second bound): every K trains for T(K) = floor(R / cost(K)) steps; held-out loss at the end
   (claims C2, C3). R is given as a number of steps of the densest K in the grid, R = steps x cost(K_max).
4. Interior optimum without selection bias (ours): the interior K with the lowest held-out loss is chosen on an
   independent *selection replicate* (other initial weights and batch stream, same world and budget), and its
   loss on the evaluation replicate (step 3) is compared with K = 1 and K = M there. Choosing the argmin on the
   evaluation runs themselves would favour the interior (a minimum over three noisy values against single ones).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from icml26.llm.moe_topk.flops import MoEConfig, flops_per_step, steps_for_budget
from icml26.llm.moe_topk.theory import optimal_topk
from icml26.llm.moe_topk.training import CharLMTask, RegressionTask, train_run

__all__ = ["SELECTION_SEED_OFFSET", "arm", "budget_study", "fixed_steps_study", "make_task", "spearman"]

SELECTION_SEED_OFFSET = 1_000


def arm(k: int) -> str:
    """The method name of one K in cards and plots."""
    return f"K={k}"


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation (average ranks for ties)."""
    from scipy.stats import spearmanr

    rho = spearmanr(np.asarray(x, float), np.asarray(y, float)).statistic
    return 0.0 if not math.isfinite(rho) else float(rho)


def make_task(setting: Mapping[str, Any], seed: int) -> RegressionTask | CharLMTask:
    """The task of a cell setting: ``{"task": "regression" | "char_lm", "model": {...MoEConfig fields}, ...}``."""
    kind = setting["task"]
    model = dict(setting.get("model", {}))
    if kind == "regression":
        return RegressionTask(MoEConfig(**model), world_seed=seed, batch_size=int(setting.get("batch_size", 256)))
    if kind == "char_lm":
        from icml26.llm.moe_topk.data import char_corpus

        config = MoEConfig(**(model | {"vocab_size": char_corpus().vocab_size}))
        return CharLMTask(config, world_seed=seed, batch_size=int(setting.get("batch_size", 16)))
    raise ValueError(f"unknown task {kind!r}; expected 'regression' or 'char_lm'")


def fixed_steps_study(setting: Mapping[str, Any], seed: int) -> dict[str, Any]:
    """Step 1 (claim C1): every K for the same T steps; running ||grad f||^2, training loss, and the fit (info)."""
    task = make_task(setting, seed)
    cfg = task.config
    ks = sorted(int(k) for k in setting["ks"])
    lr, m, steps = float(setting["lr"]), cfg.num_experts, int(setting["fixed_steps"])
    runs = {k: train_run(task, k, steps, seed, lr, grad_every=int(setting["grad_every"])) for k in ks}
    grad_sq = [runs[k]["running_grad_sq"] for k in ks]
    train_loss = [runs[k]["train_loss"] for k in ks]
    fit = optimal_topk([(k, steps, runs[k]["running_grad_sq"]) for k in ks], m, config=cfg, candidates=ks)
    fit_loss = optimal_topk([(k, steps, runs[k]["train_loss"]) for k in ks], m, config=cfg, candidates=ks)
    metrics: dict[str, dict[str, float]] = {
        arm(k): {"running_grad_sq": runs[k]["running_grad_sq"], "train_loss": runs[k]["train_loss"]} for k in ks
    }
    metrics["larger_k"] = {
        "spearman_running_grad_sq": spearman(ks, grad_sq),
        "spearman_train_loss": spearman(ks, train_loss),
    }
    probes = [{"k": k, "step": s, "train_loss": f, "grad_sq": g} for k in ks for (s, f, g) in runs[k]["probes"]]
    return {
        "metrics": metrics,
        "curves": {"probes": probes},
        "info": {
            "steps": steps,
            "tokens_per_step": task.tokens_per_step,
            "fit_running_grad_sq": _fit_info(fit),
            "fit_train_loss": _fit_info(fit_loss),
        },
    }


def _fit_info(fit: Any) -> dict[str, float]:
    return {
        "a": fit.a,
        "b": fit.b,
        "k_star": fit.k_star,
        "k_best_on_grid": fit.k,
        "relative_rmse": fit.constants.relative_rmse,
        "c0": fit.c0,
        "c_e": fit.c_e,
        "convex_in_k_below": fit.convexity.convex_in_k_below,
    }


def budget_study(setting: Mapping[str, Any], seed: int) -> dict[str, Any]:
    """Steps 2-4 (claims C2, C3): short fixed-T runs at ``fit_ks`` and the fit, then the fixed-R sweep over every K
    (evaluation replicate) and over the interior K (selection replicate)."""
    task = make_task(setting, seed)
    cfg = task.config
    ks = sorted(int(k) for k in setting["ks"])
    lr, m, tokens = float(setting["lr"]), cfg.num_experts, task.tokens_per_step
    dense_steps = int(setting["budget_dense_steps"])
    budget = flops_per_step(cfg, tokens, ks[-1]) * dense_steps

    fit_ks = sorted(int(k) for k in setting["fit_ks"])
    short = {k: train_run(task, k, dense_steps, seed, lr, grad_every=int(setting["grad_every"])) for k in fit_ks}
    fit = optimal_topk([(k, dense_steps, short[k]["running_grad_sq"]) for k in fit_ks], m, config=cfg, candidates=ks)
    fit_loss = optimal_topk([(k, dense_steps, short[k]["train_loss"]) for k in fit_ks], m, config=cfg, candidates=ks)

    steps = {k: steps_for_budget(budget, cfg, k, tokens) for k in ks}
    # a short run with the budget's own horizon (K = M) is the same run as its evaluation run: reuse it
    evaluation = {
        k: short[k] if k in short and short[k]["steps"] == steps[k] else train_run(task, k, steps[k], seed, lr)
        for k in ks
    }
    interior = [k for k in ks if ks[0] < k < ks[-1]]
    selection = {k: train_run(task, k, steps[k], seed + SELECTION_SEED_OFFSET, lr) for k in interior}
    k_sel = min(interior, key=lambda k: selection[k]["eval_loss"])
    k_emp = min(ks, key=lambda k: evaluation[k]["eval_loss"])

    metrics: dict[str, dict[str, float]] = {arm(k): {"eval_loss": evaluation[k]["eval_loss"]} for k in ks}
    metrics["interior_selected"] = {"eval_loss": evaluation[k_sel]["eval_loss"], "k": float(k_sel)}
    metrics["fitted_k_star"] = {
        "abs_log2_ratio": abs(math.log2(fit.k_star / k_emp)),
        "k_star": fit.k_star,
        "k_empirical": float(k_emp),
        "abs_log2_ratio_loss_fit": abs(math.log2(fit_loss.k_star / k_emp)),
    }
    rows = [{"k": k, "replicate": "evaluation", "steps": steps[k], "eval_loss": evaluation[k]["eval_loss"]} for k in ks]
    rows += [
        {"k": k, "replicate": "selection", "steps": steps[k], "eval_loss": selection[k]["eval_loss"]} for k in interior
    ]
    return {
        "metrics": metrics,
        "curves": {"budget": rows},
        "info": {
            "budget_flops": budget,
            "tokens_per_step": tokens,
            "steps_at_budget": {str(k): steps[k] for k in ks},
            "k_selected": k_sel,
            "k_empirical_argmin": k_emp,
            "fit_running_grad_sq": _fit_info(fit),
            "fit_train_loss": _fit_info(fit_loss),
            "short_runs": {
                str(k): {"running_grad_sq": short[k]["running_grad_sq"], "train_loss": short[k]["train_loss"]}
                for k in fit_ks
            },
        },
    }
