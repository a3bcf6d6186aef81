"""Reproduction of EB+'s claims in the event-driven simulator with the official Qwen3-8B calibration.

- World cost (what a step takes in the simulator): ``LinearStepCost.paper_qwen3_8b(gpu)``, the official step
  calibration (GPU times of single prefill and decode steps) with step-level interference at the abstract's
  threshold (r* = 0.8 on H200, 0.2 on RTX PRO 6000). Review issue 21 found that the published beta_MB(r) is an
  inverse *end-to-end* throughput fit (the official JSON says so; 1/beta_MB(r) at its three r is the measured
  tokens/s); used as a step cost it pins simulated MB at the throughput of those serving runs while EB is built
  from kernel times. The old world (``mixed="end_to_end"``) and a world without interference are run beside it
  where it matters (C2 and C6). KV capacity (141 or 96 GB - weights) * 0.9 / 144 KiB.
- EB+ evaluates Delta with the official inputs: the published calibration *including* the end-to-end
  beta_MB(r) (``calibration=``), as the authors' scripts export it, and delta = 1e-5 on every GPU (the
  authors' Table 4/5 scripts and README: "match observed |LHS - RHS|"). Official N in Delta = running +
  waiting; ``ebplus_cap`` is our variant capping that N (and the MB mode) at the memory-safe N.
- Workloads: closed loop at concurrency c, lengths uniform +-25% around (mu_L, mu_O) in {decode_heavy (128,
  1024), balanced (512, 512), prefill_heavy (1024, 128), paper (512, 256)}; every policy of a point serves the
  same sampled requests. Throughput: total tokens/s between the c-th and (n-c)-th completion (first wave and
  drain cut; needs n >= 4c). C6 follows the authors' Table 4 protocol instead (below).
- Policies: ``mb`` (vLLM-like MB, running set capped at the memory-safe N of Prop. 3 so that MB and EB admit
  alike), ``mb_vllm`` (stock: no cap, recompute preemption), ``eb`` (theta0 from Prop. 1, N from Prop. 3 CLT,
  eps = 0.01), ``eb_n1024`` (N = 1024, the paper figures' setting), ``ebplus`` (official rule, delta = 1e-5);
  the full profile adds the delta sweep {1e-4, 1e-5, 1e-6} with and without the memory-safe cap.
- C1 / C1b: the decode share at which the *published* beta_MB(r) reaches beta_d (deterministic). C2: EB vs MB
  on RTX PRO 6000 at c >= 256 (decode-heavy and balanced); C2b: MB vs EB on H200 at c = 32. C3: EB+'s worst
  ratio to the best of (MB, stock MB, EB) over a GPU's grid. C3b: EB+ vs stock MB under shifts. C4: share of
  points with a clear (> 5%) EB-MB gap where sign(Delta(N)), from the official constants at the EB batch
  actually used, names the winner. C5: bandwidth sweep on the roofline backend. C6: the simulator beside the
  paper's Table 4 (H200, 512/256, c = 32 / 512 / 2048).

Margins, fixed before any run: 5% everywhere a gap must be "clear" (the notes' EB/MB >= 1.05 and their 5% gap
for C4); 25% relative for "far lower" in C1 (beyond the 10-20% drift of the authors' own re-runs); 0.1
absolute for C1b (the abstract's rounding is to tens of percent); C3 is the notes' EB+ >= 0.95 max(EB, MB); C6
allows 0.10 in EB/MB per concurrency (the low end of the authors' 10-20% re-run drift; fixed before C6's first
run). Scope cuts: no best-fixed-theta grid; one load in the bandwidth sweep; the grid's full profile runs 10k
requests per point with 5 seeds (the notes' protocol); shifts run 6k requests with 3 seeds.
"""

from __future__ import annotations

from typing import Any

from icml26._core import Cell, Claim, PaperCard, profiles

SCENARIOS: dict[str, tuple[int, int]] = {
    "decode_heavy": (128, 1024),
    "balanced": (512, 512),
    "prefill_heavy": (1024, 128),
    "paper": (512, 256),
}
AUTHORS_DELTA = 1e-5  # the authors' EB+ scripts (Table 4 and 5 runs) on every GPU
DELTA_SWEEP = (1e-4, 1e-5, 1e-6)  # review issue 21: 1e-4 is the code's default, 1e-6 the README's fallback
BASE_POLICIES = ("mb", "mb_vllm", "eb", "eb_n1024", "ebplus")
CLEAR_GAP = 0.05
HIGH_C = 256  # notes: "EB > MB at c >= 256 on decode-heavy and balanced workloads" (RTX-like)
MAX_NUM_SEQS = 2048
MB_CAP_NOTE = (
    "the judged MB is capped at EB's memory-safe N (Prop. 3) so that MB and EB admit alike; stock vLLM-like MB "
    "(mb_vllm, no cap, recompute preemption) and mb_best = max(mb, mb_vllm) per point are reported"
)
WORLD_NOTE = (
    "world cost = official step calibration + step-level interference at the abstract's threshold (the fix of "
    "review issue 21: the published beta_MB(r) is an inverse end-to-end throughput, see C6)"
)


def ebplus_variants(sweep: bool) -> dict[str, dict[str, Any]]:
    """EB+ policy name -> (delta, memory_safe_cap); the judged one is 'ebplus' (authors' delta, official rule)."""
    variants = {"ebplus": {"delta": AUTHORS_DELTA, "memory_safe_cap": False}}
    if sweep:
        for cap in (False, True):
            for delta in DELTA_SWEEP:
                suffix = "" if delta == AUTHORS_DELTA else "_d" + f"{delta:.0e}".replace("e-0", "e-")
                name = ("ebplus_cap" if cap else "ebplus") + suffix
                variants[name] = {"delta": delta, "memory_safe_cap": cap}
    return variants


def _engine(gpu: str, mixed: str = "threshold") -> tuple[Any, int]:
    from icml26.serving.batching_ebplus import LinearStepCost, kv_capacity_tokens

    return LinearStepCost.paper_qwen3_8b(gpu, mixed), kv_capacity_tokens(gpu, "qwen3_8b")  # type: ignore[arg-type]


def _calibration(gpu: str) -> Any:
    """The constants EB+ evaluates Delta with: the published ones, end-to-end beta_MB(r) included."""
    from icml26.serving.batching_ebplus import LinearStepCost

    return LinearStepCost.paper_qwen3_8b(gpu, "end_to_end")


def _scheduler(policy: str, gpu: str, mean_prompt: float, mean_output: float) -> Any:
    from icml26.serving.batching_ebplus import make_scheduler

    variants = ebplus_variants(sweep=True)
    if policy in variants:
        sched = make_scheduler("ebplus", mean_prompt, mean_output, calibration=_calibration(gpu), **variants[policy])
        sched.name = policy
        return sched
    return make_scheduler(policy, mean_prompt, mean_output)


def _simulate(cost: Any, capacity: int, sched: Any, requests: Any, **engine: int) -> Any:
    from icml26.serving.batching_ebplus import ServingSimulator

    return ServingSimulator(cost, capacity, sched, **engine).run(requests)


def run_grid(cell: Cell) -> dict[str, Any]:
    """Every policy at every (scenario, concurrency) of one GPU; one shared request sample per point."""
    import numpy as np

    from icml26.serving.batching_ebplus import ClosedLoopWorkload, LengthDist, crossover_delta

    gpu = cell["gpu"]
    cost, capacity = _engine(gpu)
    calibration = _calibration(gpu)
    variants = ebplus_variants(bool(cell.get("sweep", False)))
    policies = (*BASE_POLICIES[:-1], *variants)
    n, kind = int(cell["n_requests"]), cell.get("lengths", "uniform")
    rows: list[dict[str, Any]] = []
    for si, scenario in enumerate(cell["scenarios"]):
        mu_l, mu_o = SCENARIOS[scenario]
        for c in cell["concurrencies"]:
            rng = np.random.default_rng([cell.seed, si, int(c)])
            requests = ClosedLoopWorkload(n, int(c), LengthDist(mu_l, kind), LengthDist(mu_o, kind)).sample(rng)
            row: dict[str, Any] = {"gpu": gpu, "scenario": scenario, "c": int(c)}
            for policy in policies:
                sched = _scheduler(policy, gpu, mu_l, mu_o)
                result = _simulate(cost, capacity, sched, requests)
                row[policy] = result.throughput
                row[f"{policy}_preemptions"] = result.preemptions
                if policy == "eb":
                    row["eb_batch"] = min(sched.batch_size, int(c))
                    row["eb_theta"] = sched.theta_used
                if policy.startswith("ebplus"):
                    row[f"{policy}_eb_share"] = result.summary()["eb_time_share"]
                    row[f"{policy}_switches"] = sched.switches
            if scenario in ("decode_heavy", "balanced") and int(c) >= HIGH_C:  # the controls behind C2
                for world, label in (("none", "no_interference"), ("end_to_end", "end_to_end")):
                    other, _ = _engine(gpu, world)
                    for policy in ("mb", "eb"):
                        sched = _scheduler(policy, gpu, mu_l, mu_o)
                        row[f"{policy}_{label}"] = _simulate(other, capacity, sched, requests).throughput
            r = mu_o / (mu_l + mu_o)
            row["interference"] = float(cost.beta_mb(r)) - cost.beta_eb(mu_l, mu_o)
            row["delta"] = crossover_delta(cost, mu_l, mu_o, row["eb_batch"])
            row["delta_published"] = crossover_delta(calibration, mu_l, mu_o, row["eb_batch"])
            row["eb_over_mb"] = row["eb"] / row["mb"]
            rows.append(row)
    return {"metrics": _grid_metrics(rows, tuple(variants)), "curves": {"points": rows}, "info": _delta_info(gpu)}


def _delta_info(gpu: str) -> dict[str, Any]:
    """The largest Delta EB+ can see per load (N = max_num_seqs; capped: the memory-safe N) against delta."""
    from icml26.serving.batching_ebplus import crossover_delta, memory_safe_batch_size, theta_star

    cal = _calibration(gpu)
    _, capacity = _engine(gpu)
    info: dict[str, Any] = {}
    for scenario, (mu_l, mu_o) in SCENARIOS.items():
        theta = theta_star(1.0 / mu_o, cal.alpha_p, cal.alpha_d)
        n_hat = min(memory_safe_batch_size(capacity, mu_l, 1.0 / mu_o, theta), MAX_NUM_SEQS)
        top, top_cap = crossover_delta(cal, mu_l, mu_o, MAX_NUM_SEQS), crossover_delta(cal, mu_l, mu_o, n_hat)
        info[scenario] = {
            "delta_max": top,
            "delta_max_capped": top_cap,
            "n_hat": n_hat,
            "deltas_above_max": [d for d in DELTA_SWEEP if d > top],
            "deltas_above_max_capped": [d for d in DELTA_SWEEP if d > top_cap],
        }
    return {"delta_reach": info}


def _grid_metrics(rows: list[dict[str, Any]], variants: tuple[str, ...]) -> dict[str, dict[str, float]]:
    import numpy as np

    high = [r for r in rows if r["scenario"] in ("decode_heavy", "balanced") and r["c"] >= HIGH_C] or rows
    low_c = min(r["c"] for r in rows)
    low = [r for r in rows if r["c"] == low_c]
    metrics: dict[str, dict[str, float]] = {
        p: {
            "tput_highc_decode_balanced": float(np.mean([r[p] for r in high])),
            "tput_lowc": float(np.mean([r[p] for r in low])),
            "tput_mean": float(np.mean([r[p] for r in rows])),
        }
        for p in (*BASE_POLICIES[:-1], *variants)
    }
    # The stronger of the two MB variants per point: the cost of the memory-safe cap on MB, reported.
    metrics["mb_best"] = {
        key: float(np.mean([max(r["mb"], r["mb_vllm"]) for r in subset]))
        for key, subset in (("tput_highc_decode_balanced", high), ("tput_lowc", low), ("tput_mean", rows))
    }
    controlled = [r for r in high if "mb_no_interference" in r]
    for label in ("no_interference", "end_to_end"):
        for p in ("mb", "eb"):
            values = [r[f"{p}_{label}"] for r in controlled] or [0.0]
            metrics[p][f"tput_highc_{label}"] = float(np.mean(values))
        ratios = [r[f"eb_{label}"] / r[f"mb_{label}"] for r in controlled] or [0.0]
        metrics["eb"][f"ratio_to_mb_max_{label}"] = float(max(ratios))
    metrics["eb"]["ratio_to_mb_max"] = float(max(r["eb"] / r["mb"] for r in high))
    for p in variants:
        ratios = [r[p] / max(r["mb"], r["mb_vllm"], r["eb"]) for r in rows]
        metrics[p]["ratio_to_best_min"] = float(min(ratios))
        metrics[p]["ratio_to_best_mean"] = float(np.mean(ratios))
        metrics[p]["share_within_5pct"] = float(np.mean([x >= 1 - CLEAR_GAP for x in ratios]))
        metrics[p]["eb_time_share"] = float(np.mean([r[f"{p}_eb_share"] for r in rows]))
    clear = [r for r in rows if abs(r["eb_over_mb"] - 1) > CLEAR_GAP]
    agree = [(r["delta"] > 0) == (r["eb_over_mb"] > 1) for r in clear]
    agree_published = [(r["delta_published"] > 0) == (r["eb_over_mb"] > 1) for r in clear]
    metrics["closed_form"] = {
        "sign_agreement": float(np.mean(agree)) if agree else 1.0,
        "sign_agreement_published": float(np.mean(agree_published)) if agree_published else 1.0,
        "clear_points": float(len(clear)),
    }
    return metrics


# ----------------------------------------------------------------------------------------------- Table 4
# Paper Table 4 (H200, Qwen3-8B, mu_L = 512, mu_O = 256), tokens/s: (MB, EB, EB+).
TABLE4 = {32: (11584.0, 8609.0, 11586.0), 512: (27464.0, 27207.0, 27460.0), 2048: (26368.0, 27198.0, 27043.0)}
# The authors' own re-run with their KV-aware scheduler (reproduce/PAPER_VS_KVAWARE_COMPARISON.md).
TABLE4_RERUN = {32: (11543.0, 10779.0, 11673.0), 512: (24099.0, 23876.0, 24435.0), 2048: (23055.0, 22957.0, 23690.0)}
T4_WORLDS = {"threshold": "simulator", "end_to_end": "end_to_end_world", "none": "no_interference_world"}


def _ifr_eb(cost: Any, capacity: int, outputs: Any, mean_prompt: float, max_num_seqs: int) -> Any:
    """EB(k*) as the authors run it (IFR controller, auto N), frozen at what it estimates from one window.

    theta = Prop. 1 at the fitted p0 plus the IFR correction (official hazard estimator on the first 500 output
    lengths, N = the memory-safe N), then N from Prop. 3 at that theta: the online controller's fixed point.
    """
    from icml26.serving.batching_ebplus import (
        ExclusiveBatchingScheduler,
        corrected_theta,
        fit_hazard,
        memory_safe_batch_size,
        theta_star,
    )

    hazard = fit_hazard(outputs[:500])
    theta0 = theta_star(hazard.p0, cost.alpha_p, cost.alpha_d)
    n_hat = min(memory_safe_batch_size(capacity, mean_prompt, hazard.p0, theta0), max_num_seqs)
    theta = corrected_theta(hazard.p0, hazard.eta, cost, n_hat)
    return ExclusiveBatchingScheduler(mean_prompt, hazard.mean, theta=theta, name="eb_ifr")


def run_table4(cell: Cell) -> dict[str, Any]:
    """The authors' Table 4 protocol: stock MB, EB(k*) and EB+ at each c; EB/MB and EB+/MB against Table 4."""
    import numpy as np

    from icml26.serving.batching_ebplus import ClosedLoopWorkload, LengthDist

    mu_l, mu_o = SCENARIOS["paper"]
    spread, n = float(cell["spread"]), int(cell["n_requests"])
    engine = {"max_num_seqs": int(cell["max_num_seqs"]), "token_budget": int(cell["token_budget"])}
    metrics: dict[str, dict[str, float]] = {}
    rows: list[dict[str, Any]] = []
    for world in cell["worlds"]:
        cost, capacity = _engine("h200", world)
        errors: dict[str, list[float]] = {"eb_ifr": [], "eb": [], "ebplus": []}
        for ci, c in enumerate(cell["concurrencies"]):
            rng = np.random.default_rng([cell.seed, ci])
            prompt, output = LengthDist(mu_l, spread=spread), LengthDist(mu_o, spread=spread)
            requests = ClosedLoopWorkload(n, int(c), prompt, output).sample(rng)
            tput = {}
            for policy in ("mb_vllm", "eb_ifr", "eb", "ebplus"):
                if policy == "eb_ifr":
                    sched = _ifr_eb(cost, capacity, requests.output, mu_l, engine["max_num_seqs"])
                else:
                    sched = _scheduler(policy, "h200", mu_l, mu_o)
                result = _simulate(cost, capacity, sched, requests, **engine)
                tput[policy] = requests.total_tokens / result.makespan  # vllm bench serve's total throughput
            mb, eb, plus = TABLE4[int(c)]
            paper = {"eb_ifr": eb / mb, "eb": eb / mb, "ebplus": plus / mb}
            row: dict[str, Any] = {
                "world": world,
                "c": int(c),
                "paper_eb_over_mb": eb / mb,
                "paper_ebplus_over_mb": plus / mb,
                **{f"tput_{k}": v for k, v in tput.items()},
            }
            for policy in errors:
                row[f"{policy}_over_mb"] = tput[policy] / tput["mb_vllm"]
                errors[policy].append(abs(row[f"{policy}_over_mb"] - paper[policy]))
            if int(c) in TABLE4_RERUN:
                rmb, reb, rplus = TABLE4_RERUN[int(c)]
                row.update(rerun_eb_over_mb=reb / rmb, rerun_ebplus_over_mb=rplus / rmb)
            rows.append(row)
            metrics.setdefault(T4_WORLDS[world], {}).update(
                {f"{policy}_over_mb_c{c}": row[f"{policy}_over_mb"] for policy in errors}
                | {f"mb_tput_c{c}": tput["mb_vllm"], f"eb_tput_c{c}": tput["eb_ifr"]}
            )
        metrics[T4_WORLDS[world]].update(
            eb_over_mb_error_max=max(errors["eb_ifr"]),
            eb_prop1_over_mb_error_max=max(errors["eb"]),
            ebplus_over_mb_error_max=max(errors["ebplus"]),
        )
    return {"metrics": metrics, "curves": {"table4": rows}}


def _shift_phases(shift: str, n: int) -> tuple[Any, tuple[float, float]]:
    from icml26.serving.batching_ebplus import Phase, PhasedWorkload

    third = n // 3
    if shift == "distribution":  # decode-heavy -> prefill-heavy -> decode-heavy at c = 1024
        spec = [("decode_heavy", 1024), ("prefill_heavy", 1024), ("decode_heavy", 1024)]
    elif shift == "concurrency":  # paper lengths at c = 32 -> 1024 -> 32
        spec = [("paper", 32), ("paper", 1024), ("paper", 32)]
    else:
        raise ValueError(f"unknown shift {shift!r}")
    phases = tuple(Phase(third, c, SCENARIOS[s][0], SCENARIOS[s][1]) for s, c in spec)
    mean_l = sum(SCENARIOS[s][0] for s, _ in spec) / 3
    mean_o = sum(SCENARIOS[s][1] for s, _ in spec) / 3
    return PhasedWorkload(phases), (mean_l, mean_o)


def run_shift(cell: Cell) -> dict[str, Any]:
    """Stock and capped MB, EB (tuned to the overall means) and EB+ on a phased workload; tokens / makespan."""
    gpu = cell["gpu"]
    cost, capacity = _engine(gpu)
    workload, (mean_l, mean_o) = _shift_phases(cell["shift"], int(cell["n_requests"]))
    requests = workload.sample(cell.rng())
    metrics: dict[str, dict[str, float]] = {}
    trace: list[dict[str, Any]] = []
    policies = ("mb", "mb_vllm", "eb", *ebplus_variants(bool(cell.get("sweep", False))))
    for policy in policies:
        sched = _scheduler(policy, gpu, mean_l, mean_o)
        result = _simulate(cost, capacity, sched, requests)
        metrics[policy] = {
            "throughput": requests.total_tokens / result.makespan,
            "preemptions": float(result.preemptions),
            "eb_time_share": result.summary()["eb_time_share"],
        }
        if policy == "ebplus":
            trace = [{"t": t, "delta": d, "mode": m} for t, d, m in sched.delta_trace]
    return {"metrics": metrics, "curves": {"ebplus_delta": trace}}


def run_thresholds(cell: Cell) -> dict[str, Any]:
    """The interference threshold r* of the published fit per GPU, with theta0 and the crossover N per load."""
    from icml26.serving.batching_ebplus import PAPER_INTERFERENCE_THRESHOLDS, crossover_delta, theta_star

    metrics: dict[str, dict[str, float]] = {}
    info: dict[str, Any] = {}
    for gpu in ("h200", "rtx_pro_6000"):
        cost = _calibration(gpu)
        metrics[gpu] = {"interference_threshold": cost.interference_threshold()}
        metrics[f"paper_{gpu}"] = {"interference_threshold": PAPER_INTERFERENCE_THRESHOLDS[gpu]}
        # like for like: beta_MB(0.5) minus the chord between the fit's own r = 0 and r = 1 ends is -c / 4
        info[f"{gpu}/end_to_end_chord_excess_at_r0.5"] = -cost.mb_coeffs[2] * 0.25
        for scenario, (mu_l, mu_o) in SCENARIOS.items():
            crossover = next((n for n in range(1, 4097) if crossover_delta(cost, mu_l, mu_o, n) > 0), None)
            info[f"{gpu}/{scenario}"] = {
                "theta0": theta_star(1.0 / mu_o, cost.alpha_p, cost.alpha_d),
                "delta_favours_eb_from_N": crossover,
            }
    return {"metrics": metrics, "info": info}


SWEEP_GPUS = ("l40s", "rtx_pro_6000", "h100", "h200")  # ascending bandwidth: 0.864, 1.792, 3.35, 4.8 TB/s
MIXED_ATTENTION_EFFICIENCY = 0.5  # the sweep's one interference input (assumed, not measured)


def run_bandwidth(cell: Cell) -> dict[str, Any]:
    """EB / MB on the roofline backend for each GPU, with and without the mixed-step attention penalty."""
    from icml26.serving.batching_ebplus import (
        ClosedLoopWorkload,
        RooflineStepCost,
        get_gpu,
        kv_capacity_tokens,
        make_scheduler,
    )

    mu_l, mu_o = SCENARIOS[cell["scenario"]]
    c, n = int(cell["concurrency"]), int(cell["n_requests"])
    requests = ClosedLoopWorkload(n, c, mu_l, mu_o).sample(cell.rng())
    metrics: dict[str, dict[str, float]] = {}
    rows = []
    for gpu in SWEEP_GPUS:
        capacity = kv_capacity_tokens(gpu, "qwen3_8b")
        ratios = {}
        for label, eta in (("eb_over_mb", MIXED_ATTENTION_EFFICIENCY), ("eb_over_mb_pure_roofline", 1.0)):
            cost = RooflineStepCost(gpu, "qwen3_8b", mixed_attention_efficiency=eta)
            tput = {p: _simulate(cost, capacity, make_scheduler(p, mu_l, mu_o), requests) for p in ("mb", "eb")}
            ratios[label] = tput["eb"].throughput / tput["mb"].throughput
        metrics[gpu] = ratios
        rows.append({"gpu": gpu, "bandwidth_tb_s": get_gpu(gpu).bandwidth_bytes_per_s / 1e12, **ratios})
    return {"metrics": metrics, "curves": {"sweep": rows}}


# ---------------------------------------------------------------------------------------------------- plots
def _legend_outside(ax: Any, **kwargs: Any) -> None:
    """Below the axes (never over data; the title above stays centred)."""
    ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False, **kwargs)


def plot_thresholds(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """The published beta_MB(r) / beta_d per GPU: where it crosses 1 is r* (dotted), the abstract's r* dashed."""
    import numpy as np

    r = np.linspace(0, 1, 101)
    for i, gpu in enumerate(("h200", "rtx_pro_6000")):
        cost = _calibration(gpu)
        ax.plot(r, cost.beta_mb(r) / cost.beta_d, color=f"C{i}", label=f"{gpu}: published beta_MB(r) / beta_d")
        ax.axvline(cost.interference_threshold(), color=f"C{i}", ls=":", lw=1, label=f"{gpu}: r* of the fit")
        paper = {"h200": 0.8, "rtx_pro_6000": 0.2}[gpu]
        ax.axvline(paper, color=f"C{i}", ls="--", lw=0.8, label=f"{gpu}: abstract's r* = {paper:.0%}")
    ax.axhline(1.0, color="k", lw=0.8, label="mixed token = decode token")
    ax.set_xlabel("decode share r of a mixed step")
    ax.set_ylabel("marginal cost per mixed token / per decode token")
    _legend_outside(ax)


def _points(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [row for rec in records if rec["status"] == "ok" for row in rec["curves"]["points"]]


def _plot_ratio_vs_c(
    records: list[dict[str, Any]], ax: Any, ratio: Any, ylabel: str, band: tuple[float, float], band_label: str
) -> None:
    import numpy as np

    acc: dict[tuple[str, str, int], list[float]] = {}
    for row in _points(records):
        acc.setdefault((row["gpu"], row["scenario"], row["c"]), []).append(ratio(row))
    keys = sorted({(g, s) for g, s, _ in acc})
    for i, (gpu, scenario) in enumerate(keys):
        cs = sorted(c for g, s, c in acc if (g, s) == (gpu, scenario))
        ys = [float(np.mean(acc[(gpu, scenario, c)])) for c in cs]
        ax.semilogx(
            cs, ys, marker="o", ls="-" if gpu == "rtx_pro_6000" else "--", color=f"C{i % 10}", label=f"{gpu} {scenario}"
        )
    ax.axhline(1.0, color="k", lw=0.8, label="parity")
    ax.axhspan(*band, color="0.9", label=band_label)
    ax.set_xlabel("concurrency c (solid: RTX PRO 6000, dashed: H200)")
    ax.set_ylabel(ylabel)
    _legend_outside(ax)


def plot_grid(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """EB / MB per (GPU, load) against concurrency; the grey band is |EB/MB - 1| <= 5% (no clear gap)."""
    _plot_ratio_vs_c(
        records,
        ax,
        lambda r: r["eb"] / r["mb"],
        "EB / MB throughput (mean over seeds)",
        (1 - CLEAR_GAP, 1 + CLEAR_GAP),
        "within 5% (margin)",
    )


def plot_ebplus(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """Worst EB+ / best-policy ratio over a GPU's grid, per delta, with (open) and without the memory-safe cap."""
    import numpy as np

    names = [n for n in ebplus_variants(True) if any(n in (rec.get("metrics") or {}) for rec in records)]
    gpus = sorted({rec["spec"]["setting"]["gpu"] for rec in records if rec["status"] == "ok"})
    width = 0.8 / max(len(names), 1)
    lowest = 1.0
    for j, name in enumerate(names):
        ys = []
        for gpu in gpus:
            mine = [rec for rec in records if rec["status"] == "ok" and rec["spec"]["setting"]["gpu"] == gpu]
            vals = [rec["metrics"][name]["ratio_to_best_min"] for rec in mine if name in rec["metrics"]]
            ys.append(float(np.mean(vals)) if vals else np.nan)
        lowest = min(lowest, float(np.nanmin(ys)))
        judged = name == "ebplus"
        label = name + (" (judged: official rule, delta 1e-5)" if judged else "")
        ax.plot(
            np.arange(len(gpus)) + (j - (len(names) - 1) / 2) * width,
            ys,
            ls="none",
            color=f"C{j}",
            marker="D" if judged else "o",
            ms=9 if judged else 6,
            mfc="none" if "cap" in name else f"C{j}",
            label=label,
        )
    ax.axhline(1.0, color="k", lw=0.8, label="best of MB, stock MB, EB")
    ax.axhline(1 - CLEAR_GAP, color="C3", ls="--", lw=1, label="non-inferiority margin 0.95")
    ax.set_ylim(min(0.9, lowest - 0.03), 1.03)
    ax.set_xticks(range(len(gpus)), gpus)
    ax.set_xlim(-0.6, len(gpus) - 0.4)
    ax.set_ylabel("worst point: EB+ / best policy")
    _legend_outside(ax, title="open markers: memory-safe cap (ours); mean over seeds", title_fontsize=6)


def plot_delta(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """Closed-form Delta(N) (world constants, judged) against the simulated EB / MB - 1: two quadrants agree."""
    for i, gpu in enumerate(("rtx_pro_6000", "h200")):
        rows = [r for r in _points(records) if r["gpu"] == gpu]
        ax.scatter(
            [r["delta"] * 1e6 for r in rows], [r["eb_over_mb"] - 1 for r in rows], s=12, color=f"C{i}", label=gpu
        )
    ax.axhline(0, color="k", lw=0.8)
    ax.axvline(0, color="k", lw=0.8)
    ax.axhspan(-CLEAR_GAP, CLEAR_GAP, color="0.9", label="no clear gap (|EB/MB - 1| <= 5%), not judged")
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlabel("closed-form Delta(N), world constants (us per token; > 0 predicts EB)")
    ax.set_ylabel("simulated EB / MB - 1")
    _legend_outside(ax)


def plot_table4(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """EB(k*) / MB against c: the paper's Table 4, the authors' re-run, and the simulator in three cost worlds."""
    import numpy as np

    rows = [row for rec in records if rec["status"] == "ok" for row in rec["curves"]["table4"]]
    cs = sorted(TABLE4)
    paper = [TABLE4[c][1] / TABLE4[c][0] for c in cs]
    ax.errorbar(cs, paper, yerr=0.10, fmt="ks", capsize=4, label="paper Table 4 (bars: +-0.10 margin)")
    ax.plot(cs, [TABLE4_RERUN[c][1] / TABLE4_RERUN[c][0] for c in cs], "^", color="0.5", label="authors' re-run")
    styles = {
        "threshold": ("C0", "-", "simulator (judged): step-level world"),
        "end_to_end": ("C1", "--", "published end-to-end beta_MB as step cost"),
        "none": ("C2", ":", "no interference"),
    }
    for world, (color, ls, label) in styles.items():
        ys = [
            np.mean([r["eb_ifr_over_mb"] for r in rows if r["world"] == world and r["c"] == c] or [np.nan]) for c in cs
        ]
        if not np.all(np.isnan(ys)):
            ax.plot(cs, ys, marker="o", color=color, ls=ls, label=label)
    ax.axhline(1.0, color="k", lw=0.6)
    ax.set_xscale("log")
    ax.set_xlabel("concurrency c (H200, Qwen3-8B, mu_L = 512, mu_O = 256)")
    ax.set_ylabel("EB(k*) / MB throughput (tokens / duration)")
    _legend_outside(ax)


def plot_shift(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """Throughput of each policy relative to stock MB, per (GPU, shift); the dashed line is the 5% margin."""
    import numpy as np

    ok = [rec for rec in records if rec["status"] == "ok"]
    keys = sorted({(rec["spec"]["setting"]["gpu"], rec["spec"]["setting"]["shift"]) for rec in ok})
    policies = [p for p in ("mb", "eb", "ebplus", "ebplus_cap") if ok and p in ok[0]["metrics"]]
    width = 0.8 / len(policies)
    for j, policy in enumerate(policies):
        ys = []
        for key in keys:
            mine = [
                rec["metrics"] for rec in ok if (rec["spec"]["setting"]["gpu"], rec["spec"]["setting"]["shift"]) == key
            ]
            ys.append(np.mean([m[policy]["throughput"] / m["mb_vllm"]["throughput"] for m in mine]))
        ax.bar(np.arange(len(keys)) + (j - (len(policies) - 1) / 2) * width, ys, width, label=policy)
    ax.axhline(1.0, color="k", lw=0.8, label="stock MB (baseline)")
    ax.axhline(1 + CLEAR_GAP, color="C3", ls="--", lw=1, label="+5% (margin)")
    ax.set_xticks(range(len(keys)), [f"{g}\n{s}" for g, s in keys], fontsize=7)
    ax.set_ylabel("throughput / stock MB (tokens / makespan)")
    _legend_outside(ax)


def plot_bandwidth(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """EB / MB against HBM bandwidth, with (eta = 0.5) and without (pure roofline) mixed-step interference."""
    import numpy as np

    rows = [row for rec in records if rec["status"] == "ok" for row in rec["curves"]["sweep"]]
    bw = sorted({r["bandwidth_tb_s"] for r in rows})
    for key, style, label in (
        ("eb_over_mb", "o-", "EB / MB, mixed attention at 50% efficiency"),
        ("eb_over_mb_pure_roofline", "s--", "EB / MB, pure roofline (control)"),
    ):
        ys = [float(np.mean([r[key] for r in rows if r["bandwidth_tb_s"] == b])) for b in bw]
        ax.plot(bw, ys, style, label=label)
    for b in bw:
        ax.annotate(next(r["gpu"] for r in rows if r["bandwidth_tb_s"] == b), (b, 1.0), fontsize=7, rotation=90)
    ax.axhline(1.0, color="k", lw=0.8, label="parity")
    ax.set_xlabel("HBM bandwidth (TB/s, spec sheet)")
    ax.set_ylabel("EB / MB throughput (roofline backend)")
    _legend_outside(ax)


# --------------------------------------------------------------------------------------------------- claims
def _grid(gpus: list[str], scenarios: list[str], concurrencies: list[int], n: int, sweep: bool) -> list[dict[str, Any]]:
    return [
        {"gpu": g, "scenarios": scenarios, "concurrencies": concurrencies, "n_requests": n, "sweep": sweep}
        for g in gpus
    ]


ALL = list(SCENARIOS)
SMOKE_GRID = dict(scenarios=["balanced"], concurrencies=[32, 64], n=300, sweep=False)
QUICK_GRID = dict(scenarios=ALL, concurrencies=[32, 256], n=1024, sweep=False)
FULL_GRID = dict(scenarios=ALL, concurrencies=[32, 256, 1024, 2048], n=10_000, sweep=True)
GRID_SEEDS = (1, 3, 5)
GRID_SECONDS = (
    1.0,
    4.0,
    90.0,
)  # per (GPU, seed) cell on one core of the reference machine (quick: 28 s CPU measured for the whole paper)


def _grid_profiles(gpus: list[str]) -> dict[str, Any]:
    return profiles(
        _grid(gpus, **SMOKE_GRID),  # type: ignore[arg-type]
        _grid(gpus, **QUICK_GRID),  # type: ignore[arg-type]
        _grid(gpus, **FULL_GRID),  # type: ignore[arg-type]
        seeds=GRID_SEEDS,
        cell_seconds=GRID_SECONDS,
    )


def _shifts(n: int, sweep: bool) -> list[dict[str, Any]]:
    return [
        {"gpu": g, "shift": s, "n_requests": n, "sweep": sweep}
        for g in ("rtx_pro_6000", "h200")
        for s in ("distribution", "concurrency")
    ]


def _table4(worlds: list[str], concurrencies: list[int], n: int) -> dict[str, Any]:
    # The authors' run_table4_sweep.sh: max_num_seqs 1024, max_num_batched_tokens 14336, 4000 prompts,
    # vllm bench serve --random-range-ratio 0.5 (uniform +-50%), total tokens / benchmark duration.
    return {
        "worlds": worlds,
        "concurrencies": concurrencies,
        "n_requests": n,
        "max_num_seqs": 1024,
        "token_budget": 14336,
        "spread": 0.5,
    }


_THRESHOLDS = dict(
    metric="interference_threshold",
    run=run_thresholds,
    profiles=profiles({}, {}, {}, seeds=(1, 1, 1), cell_seconds=(0.1, 0.1, 0.1)),
    deterministic=True,
    plot=plot_thresholds,
    revision=2,
)
_GRID = dict(run=run_grid, direction="higher", relative=True, unit="tokens/s", plot=plot_grid, revision=2)
C1_FIT_NOTE = (
    "deterministic: solves beta_MB(r) = beta_d on the official constants. The published beta_MB(r) is an inverse "
    "end-to-end throughput fit while beta_d is a kernel step cost, so r* compares two measurement levels; "
    "against its own extrapolated pure ends the fit is convex (c > 0 on both GPUs), i.e. below its chord: read "
    "like for like it shows no interference at any r (info: end_to_end_chord_excess_at_r0.5 < 0). Not a "
    "re-derivation of the abstract's numbers"
)

CARD = PaperCard(
    slug="batching_ebplus",
    title="EB+ (exclusive vs mixed batching)",
    group="serving",
    api="icml26.serving.batching_ebplus.EBPlusScheduler",
    extra="serving",
    summary="Exclusive vs mixed batching under prefill-decode interference: closed-form crossover and EB+, "
    "in an event-driven simulator with the paper's Qwen3-8B calibration.",
    claims=(
        Claim(
            id="C1",
            statement="Prefill-decode interference inflates MB's per-step marginal cost above that of pure decode "
            "... on the bandwidth-constrained RTX PRO 6000 this threshold plummets [far below the H200's] "
            "(read on the published calibration: r* at least 25% lower on RTX PRO 6000 than on H200).",
            method="rtx_pro_6000",
            baselines=("h200",),
            direction="lower",
            relative=True,
            min_effect=0.25,
            paper_figure="abstract: 80% (H200) vs 20% (RTX PRO 6000); published fit: ~0.37 vs ~0.21",
            notes=C1_FIT_NOTE,
            **_THRESHOLDS,
        ),
        Claim(
            id="C1b",
            statement="On the H200 the interference threshold is 80% (the abstract's figure, checked against the "
            "published H200 calibration within +-0.1).",
            method="h200",
            reference=0.8,
            direction="higher",
            test="equivalence",
            min_effect=0.1,
            paper_figure="abstract: 80% on H200",
            notes=f"the notes warn that the published constants give ~0.37, not 0.8; {C1_FIT_NOTE}",
            **_THRESHOLDS,
        ),
        Claim(
            id="C2",
            statement="Optimized EB achieves up to 41.9% higher throughput on bandwidth-constrained GPUs "
            "(RTX PRO 6000, decode-heavy and balanced loads, c >= 256: EB/MB >= 1.05).",
            metric="tput_highc_decode_balanced",
            method="eb",
            baselines=("mb",),
            min_effect=CLEAR_GAP,
            profiles=_grid_profiles(["rtx_pro_6000"]),
            paper_figure="up to +41.9% (abstract)",
            notes=f"{WORLD_NOTE}. Does +40% survive the fix? As a mean, no: the judged effect (mean over the "
            "decode-heavy and balanced points at c >= 256) is +28% in the step-level world, where the old world "
            "(the published end-to-end beta_MB(r) as the step cost) gave +40%. As the abstract's 'up to', yes: "
            "the largest point, eb.ratio_to_mb_max, is +49% (balanced, c >= 1024; old world +56%, "
            "ratio_to_mb_max_end_to_end). Without interference EB never wins (ratio_to_mb_max_no_interference "
            f"0.96), so every EB gain here is the abstract's 20% threshold at work; {MB_CAP_NOTE}",
            **_GRID,
        ),
        Claim(
            id="C2b",
            statement="MB retains its advantage on high-bandwidth hardware (H200 at low concurrency, c = 32).",
            metric="tput_lowc",
            method="mb",
            baselines=("eb",),
            min_effect=CLEAR_GAP,
            profiles=_grid_profiles(["h200"]),
            paper_figure="Table 4 (H200, 512/256, c = 32): MB 11,584 vs EB 8,609 tok/s (+34.6%)",
            notes=f"mean over the four loads at c = 32 (the cap is inactive there: N_hat > 32); {WORLD_NOTE}",
            **_GRID,
        ),
        Claim(
            id="C3",
            statement="EB+ attains the highest or near-highest throughput in every setting (worst point of a GPU's "
            "grid: EB+ >= 0.95 max(MB, stock MB, EB)).",
            metric="ratio_to_best_min",
            method="ebplus",
            reference=1.0,
            test="noninferiority",
            min_effect=CLEAR_GAP,
            profiles=_grid_profiles(["rtx_pro_6000", "h200"]),
            paper_figure="Table 4 (H200): EB+ 11,586 vs MB 11,584 (c = 32); 27,043 vs EB 27,198 (c = 2048)",
            notes="judged: the official rule at the authors' delta = 1e-5 (their EB+ scripts, every GPU), N in "
            "Delta = running + waiting, Delta from the published constants. The full profile shows the sweep "
            "delta in {1e-4, 1e-5, 1e-6} with and without our memory-safe cap (ebplus_*, ebplus_cap_*); "
            "info.delta_reach lists per load the largest Delta reachable (theta0 of Prop. 1; N = 2048, capped: N_hat) "
            "and which delta exceed it, so that EB+ can never leave MB there: 1e-4 exceeds it on three of the four "
            "RTX loads (all but decode-heavy) and on all four H200 loads; 1e-5 on H200 prefill-heavy, and with the "
            "cap also on the H200 512/256 load (Table 4's), where N = 2048 reaches 1.07e-5. Outcome: within 5% of "
            "the best policy at every RTX point with delta <= 1e-5 (cap or not), 0.63 at worst with 1e-4 (stuck in "
            "MB); on the H200 EB+ misses by 7-11% on the decode-heavy load (Delta from the published end-to-end "
            "beta_MB(r) favours EB where the step world favours MB) and at c = 1024 on the 512/256 load (stays in "
            "MB, EB 8% better), so the worst point is below the margin on one GPU and above it on the other: "
            "inconclusive. Quick (not reproduced) and full (inconclusive) differ by horizon: quick stops at "
            f"c = 256 with 1024 requests, where EB+'s first 100 completions in MB weigh ~10% of the run. {WORLD_NOTE}",
            **{**_GRID, "relative": False, "unit": "", "plot": plot_ebplus},
        ),
        Claim(
            id="C3b",
            statement="Under non-stationary traffic with distribution or concurrency shifts, EB+ outperforms MB "
            "(by at least 5%).",
            metric="throughput",
            method="ebplus",
            baselines=("mb_vllm",),
            direction="higher",
            relative=True,
            min_effect=CLEAR_GAP,
            run=run_shift,
            profiles=profiles(
                _shifts(600, False)[:1],
                _shifts(1500, False),
                _shifts(6000, True),
                seeds=(1, 2, 3),
                cell_seconds=(0.5, 1.5, 10.0),
            ),
            notes="throughput = total tokens / makespan for every policy (the shifts are the point, so no "
            "steady-state window); baseline: stock MB, which is what EB+'s MB mode runs; capped MB and EB "
            f"(tuned to the overall means) reported; EB+ as in C3; {WORLD_NOTE}",
            paper_figure="up to +36.4% over MB (abstract); README: L40S +42.3%, RTX PRO 6000 +11.8%, H200 +2.2%",
            unit="tokens/s",
            plot=plot_shift,
            revision=2,
        ),
        Claim(
            id="C4",
            statement="The closed-form condition for the EB-MB crossover (sign of Delta(N)) names the simulated "
            "winner in at least 80% of the points with a clear (> 5%) gap.",
            metric="sign_agreement",
            method="closed_form",
            reference=0.8,
            direction="higher",
            profiles=_grid_profiles(["rtx_pro_6000", "h200"]),
            paper_figure="Prop. 4 (the notes' assertion: >= 80% of cells with a gap over 5%)",
            notes="'clear' = |EB/MB - 1| > 0.05, fixed a priori from the notes; Delta(N) at the EB batch actually "
            "used, min(N_hat, c), against the capped MB, with the constants of the simulated world (Prop. 4 as a "
            "condition: fed the cost model it assumes); sign_agreement_published is the same with the published "
            "constants (end-to-end beta_MB(r), what EB+ acts on), reported. Changed with the world cost (review "
            f"issue 21): before, world and published constants were the same; {WORLD_NOTE}",
            run=run_grid,
            plot=plot_delta,
            revision=2,
        ),
        Claim(
            id="C5",
            statement="The optimal choice between MB and EB depends on GPU memory bandwidth: on the roofline "
            "backend with one interference input (decode attention inside a mixed step at 50% memory "
            "efficiency), EB/MB is at least 0.05 higher on the L40S (0.864 TB/s) than on the H200 (4.8 TB/s).",
            metric="eb_over_mb",
            method="l40s",
            baselines=("h200",),
            direction="higher",
            min_effect=CLEAR_GAP,
            run=run_bandwidth,
            profiles=profiles(
                {"scenario": "balanced", "concurrency": 64, "n_requests": 300},
                {"scenario": "balanced", "concurrency": 512, "n_requests": 2048},
                {"scenario": "balanced", "concurrency": 1024, "n_requests": 4096},
                seeds=(1, 3, 3),
                cell_seconds=(0.3, 2.0, 3.0),
            ),
            paper_figure="abstract: the EB-MB choice fundamentally depends on GPU memory bandwidth",
            notes="eta = 0.5 is an assumed input, not a measurement; the same runs with eta = 1 (pure roofline, "
            "eb_over_mb_pure_roofline) are the control in which MB >= EB is expected; Qwen3-8B, GPU specs approximate. "
            "Reading the outcome: a constant eta makes the interference threshold 0.5 on every GPU (it scales with "
            "1/bandwidth like the decode cost it is compared with), and the L40S's 48 GB caps the memory-safe N at "
            "~180, where EB's switching overhead weighs most; a bandwidth-dependent threshold needs a contention "
            "model this backend does not have",
            plot=plot_bandwidth,
            revision=2,
        ),
        Claim(
            id="C6",
            statement="The simulator reproduces the paper's Table 4 (H200, Qwen3-8B, mu_L = 512, mu_O = 256): "
            "simulated EB/MB within 0.10 of Table 4's at every c in {32, 512, 2048} (worst absolute error).",
            metric="eb_over_mb_error_max",
            method="simulator",
            reference=0.0,
            direction="lower",
            test="noninferiority",
            min_effect=0.10,
            run=run_table4,
            profiles=profiles(
                _table4(["threshold"], [32, 512], 1000),
                _table4(["threshold"], [32, 512, 2048], 4000),
                _table4(["threshold", "end_to_end", "none"], [32, 512, 2048], 4000),
                seeds=(1, 3, 5),
                cell_seconds=(0.5, 4.0, 12.0),
            ),
            paper_figure="Table 4: EB/MB = 0.743 (c = 32), 0.991 (512), 1.031 (2048); authors' KV-aware re-run "
            "0.934, 0.991, 0.996",
            notes="the authors' Table 4 protocol (max_num_seqs 1024, token budget 14336, 4000 requests, lengths "
            "uniform +-50%, total tokens / duration); MB = stock vLLM-like; EB = EB(k*) as the authors run it (IFR "
            "controller with auto N), frozen at its estimate from the first 500 outputs (theta ~0.19: the IFR "
            "correction's 5 theta cap binds on uniform lengths); the Prop. 1 EB of the grid is reported "
            "(eb_prop1_over_mb_error_max); EB+ as in C3. Review issue 21 "
            "asked for this check. The full profile also runs the old world (the published end-to-end beta_MB(r) "
            "as the mixed step cost: end_to_end_world) and a world without interference (no_interference_world); "
            "their errors are reported, not judged. The choice of the judged world was made on the grounds in "
            "the cost module's docstring (every term at the step level), after the three had been tried on "
            "these points: a diagnosis, not a blind test. Outcome (full): EB(k*)/MB = 0.88, 1.00, 1.05 at c = 32, "
            "512, 2048 against Table 4's 0.74, 0.99, 1.03: within 0.02 at c >= 512 and 0.14 off at c = 32, where "
            "the authors' own re-run (0.93) disowns the paper's figure; every world misses c = 32 alike (few mixed "
            "steps there). The old end-to-end world is 0.13 and 0.16 off at c = 512 and 2048 (the gap review issue "
            "21 found), the world without interference 0.10 off (MB ahead). EB+/MB matches Table 4 within 0.01 "
            "(1.00, 1.00, 1.03). Our simulator has no KV-aware phase guard",
            plot=plot_table4,
            revision=2,
        ),
    ),
)
