"""Reproduction of EB+'s claims with the paper-calibrated Qwen3-8B cost model in the event-driven simulator.

- Cost: ``LinearStepCost.paper_qwen3_8b`` (the official calibration) on H200 and RTX PRO 6000; KV capacity
  (141 or 96 GB - weights) * 0.9 / 144 KiB. The interference input behind every EB win is the published fit's
  beta_MB(r) > beta_EB (reported per point as ``interference``). Control, run on every C2 point: the same fit
  with beta_MB(r) replaced by the token-weighted (1 - r) beta_p + r beta_d (``without_interference``), reported
  as ``tput_highc_no_interference``; the test suite also checks MB >= EB with gamma = 0.
- Workloads: closed loop at concurrency c, lengths uniform +-25% around (mu_L, mu_O) in {decode_heavy (128,
  1024), balanced (512, 512), prefill_heavy (1024, 128), paper (512, 256)}; every policy of a point serves the
  same sampled requests. Throughput: total tokens/s between the c-th and (n-c)-th completion (first wave and
  drain cut; needs n >= 4c, so quick stops at c = 512).
- Policies: ``mb`` (vLLM-like MB, running set capped at the memory-safe N of Prop. 3 so that MB and EB admit
  alike), ``mb_vllm`` (stock: no cap, recompute preemption), ``eb`` (theta0 from Prop. 1, N from Prop. 3 CLT,
  eps = 0.01), ``eb_n1024`` (N = 1024, the paper figures' setting), ``ebplus`` (delta = 1e-4, or 1e-5 on H200
  as the authors needed: the notes' values), ``ebplus_lowdelta`` (delta = 1e-6 on both GPUs: a sensitivity run
  added after seeing that delta = 1e-4 keeps EB+ in MB on balanced RTX loads; reported, never judged).
- C5 (the notes' bandwidth sweep): EB / MB on the roofline backend for L40S, RTX PRO 6000, H100 and H200, with
  decode attention inside mixed steps at 50% memory efficiency (the one, explicit interference input) and
  without it (control); balanced load, c = 1024, 4096 requests.
- C1: the decode share at which beta_MB(r) = beta_d, from the published fit (deterministic). C1b checks the
  abstract's 80% on H200 against the same fit.
- C2: EB vs MB on RTX PRO 6000 at c >= 256 for decode-heavy and balanced loads; C2b: MB vs EB on H200 at
  c = 32. C3: EB+'s worst ratio to max(MB, EB) over all points of a GPU. C3b: EB+ vs MB under shifts.
  C4: the share of points with a clear (> 5%) EB-MB gap where sign(Delta(N)) names the winner (N = the EB
  batch actually used, min(N_hat, c)).

Margins, fixed before any run: 5% everywhere a gap must be "clear" (the notes' EB/MB >= 1.05 and their 5% gap
for C4); 25% relative for "far lower" in C1 (beyond the 10-20% drift of the authors' own re-runs); 0.1
absolute for C1b (the abstract's rounding is to tens of percent); C3 is the notes' EB+ >= 0.95 max(EB, MB).
Scope cuts: no best-fixed-theta grid (EB auto and N = 1024 only); one load in the bandwidth sweep; the full profile runs
10k requests per point with 5 seeds (the notes' protocol); shifts run 6k requests with 3 seeds.
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
POLICIES = ("mb", "mb_vllm", "eb", "eb_n1024", "ebplus", "ebplus_lowdelta")
EBPLUS_DELTA = {"rtx_pro_6000": 1e-4, "h200": 1e-5}  # notes: default 1e-4; the authors needed 1e-5 on H200
LOW_DELTA = 1e-6
CLEAR_GAP = 0.05
HIGH_C = 256  # notes: "EB > MB at c >= 256 on decode-heavy and balanced workloads" (RTX-like)
POSTHOC = (
    "ebplus_lowdelta (delta = 1e-6) is a post-hoc sensitivity run, added after seeing that delta = 1e-4 keeps "
    "EB+ in MB on RTX balanced loads: reported in the cells, never judged"
)
MB_CAP_NOTE = (
    "the judged MB is capped at EB's memory-safe N (Prop. 3) so that MB and EB admit alike; stock vLLM-like MB "
    "(mb_vllm, no cap, recompute preemption) and mb_best = max(mb, mb_vllm) per point are reported, not judged "
    "(the cap can cost MB a few percent where stock MB preempts little, e.g. the 512/256 load at c >= 1024)"
)


def _engine(gpu: str) -> tuple[Any, int]:
    from icml26.serving.batching_ebplus import LinearStepCost, kv_capacity_tokens

    return LinearStepCost.paper_qwen3_8b(gpu), kv_capacity_tokens(gpu, "qwen3_8b")


def _scheduler(policy: str, gpu: str, mean_prompt: float, mean_output: float) -> Any:
    from icml26.serving.batching_ebplus import make_scheduler

    if policy == "ebplus":
        return make_scheduler("ebplus", mean_prompt, mean_output, delta=EBPLUS_DELTA[gpu])
    if policy == "ebplus_lowdelta":
        sched = make_scheduler("ebplus", mean_prompt, mean_output, delta=LOW_DELTA)
        sched.name = "ebplus_lowdelta"  # type: ignore[attr-defined]
        return sched
    return make_scheduler(policy, mean_prompt, mean_output)


def run_grid(cell: Cell) -> dict[str, Any]:
    """Every policy at every (scenario, concurrency) of one GPU; one shared request sample per point."""
    import numpy as np

    from icml26.serving.batching_ebplus import ClosedLoopWorkload, LengthDist, ServingSimulator, crossover_delta

    gpu = cell["gpu"]
    cost, capacity = _engine(gpu)
    n, kind = int(cell["n_requests"]), cell.get("lengths", "uniform")
    rows: list[dict[str, Any]] = []
    for si, scenario in enumerate(cell["scenarios"]):
        mu_l, mu_o = SCENARIOS[scenario]
        for c in cell["concurrencies"]:
            rng = np.random.default_rng([cell.seed, si, int(c)])
            requests = ClosedLoopWorkload(n, int(c), LengthDist(mu_l, kind), LengthDist(mu_o, kind)).sample(rng)
            row: dict[str, Any] = {"gpu": gpu, "scenario": scenario, "c": int(c)}
            for policy in POLICIES:
                sched = _scheduler(policy, gpu, mu_l, mu_o)
                result = ServingSimulator(cost, capacity, sched, seed=cell.seed).run(requests)
                row[policy] = result.throughput
                row[f"{policy}_preemptions"] = result.preemptions
                if policy == "eb":
                    row["eb_batch"] = min(sched.batch_size, int(c))
                    row["eb_theta"] = sched.theta_used
                if policy == "ebplus":
                    row["ebplus_eb_share"] = result.summary()["eb_time_share"]
                    row["ebplus_switches"] = sched.switches
            if scenario in ("decode_heavy", "balanced") and int(c) >= HIGH_C:  # the control behind C2
                control = cost.without_interference()
                for policy in ("mb", "eb"):
                    sched = _scheduler(policy, gpu, mu_l, mu_o)
                    row[f"{policy}_no_interference"] = (
                        ServingSimulator(control, capacity, sched).run(requests).throughput
                    )
            r = mu_o / (mu_l + mu_o)
            row["interference"] = float(cost.beta_mb(r)) - cost.beta_eb(mu_l, mu_o)
            row["delta"] = crossover_delta(cost, mu_l, mu_o, row["eb_batch"])
            row["eb_over_mb"] = row["eb"] / row["mb"]
            rows.append(row)
    return {"metrics": _grid_metrics(rows), "curves": {"points": rows}}


def _grid_metrics(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
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
        for p in POLICIES
    }
    # The stronger of the two MB variants per point: reported so that the cost of the memory-safe cap on MB is
    # visible next to the judged (capped) baseline; never judged.
    metrics["mb_best"] = {
        key: float(np.mean([max(r["mb"], r["mb_vllm"]) for r in subset]))
        for key, subset in (("tput_highc_decode_balanced", high), ("tput_lowc", low), ("tput_mean", rows))
    }
    controlled = [r for r in high if "mb_no_interference" in r]
    for p in ("mb", "eb"):
        values = [r[f"{p}_no_interference"] for r in controlled] or [0.0]
        metrics[p]["tput_highc_no_interference"] = float(np.mean(values))
    for p in ("ebplus", "ebplus_lowdelta"):
        ratios = [r[p] / max(r["mb"], r["eb"]) for r in rows]
        metrics[p]["ratio_to_best_min"] = float(min(ratios))
        metrics[p]["ratio_to_best_mean"] = float(np.mean(ratios))
        metrics[p]["share_within_5pct"] = float(np.mean([x >= 1 - CLEAR_GAP for x in ratios]))
    clear = [r for r in rows if abs(r["eb_over_mb"] - 1) > CLEAR_GAP]
    agree = [(r["delta"] > 0) == (r["eb_over_mb"] > 1) for r in clear]
    metrics["closed_form"] = {
        "sign_agreement": float(np.mean(agree)) if agree else 1.0,
        "clear_points": float(len(clear)),
    }
    return metrics


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
    """MB, EB (tuned to the overall means) and EB+ on a phased workload; throughput = tokens / makespan."""
    from icml26.serving.batching_ebplus import ServingSimulator

    gpu = cell["gpu"]
    cost, capacity = _engine(gpu)
    workload, (mean_l, mean_o) = _shift_phases(cell["shift"], int(cell["n_requests"]))
    requests = workload.sample(cell.rng())
    metrics: dict[str, dict[str, float]] = {}
    trace: list[dict[str, Any]] = []
    for policy in ("mb", "eb", "ebplus", "ebplus_lowdelta"):
        sched = _scheduler(policy, gpu, mean_l, mean_o)
        result = ServingSimulator(cost, capacity, sched, seed=cell.seed).run(requests)
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
        cost, _ = _engine(gpu)
        metrics[gpu] = {"interference_threshold": cost.interference_threshold()}
        metrics[f"paper_{gpu}"] = {"interference_threshold": PAPER_INTERFERENCE_THRESHOLDS[gpu]}
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
        ServingSimulator,
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
            tput = {
                p: ServingSimulator(cost, capacity, make_scheduler(p, mu_l, mu_o)).run(requests).throughput
                for p in ("mb", "eb")
            }
            ratios[label] = tput["eb"] / tput["mb"]
        metrics[gpu] = ratios
        rows.append({"gpu": gpu, "bandwidth_tb_s": get_gpu(gpu).bandwidth_bytes_per_s / 1e12, **ratios})
    return {"metrics": metrics, "curves": {"sweep": rows}}


# ---------------------------------------------------------------------------------------------------- plots
def plot_thresholds(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    import numpy as np

    r = np.linspace(0, 1, 101)
    for i, gpu in enumerate(("h200", "rtx_pro_6000")):
        cost, _ = _engine(gpu)
        ax.plot(r, cost.beta_mb(r) / cost.beta_d, color=f"C{i}", label=f"{gpu}: beta_MB(r) / beta_d (published fit)")
        ax.axvline(cost.interference_threshold(), color=f"C{i}", ls=":", lw=1)
        paper = {"h200": 0.8, "rtx_pro_6000": 0.2}[gpu]
        ax.axvline(paper, color=f"C{i}", ls="--", lw=0.8, label=f"{gpu}: abstract's threshold {paper:.0%}")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xlabel("decode share r of a mixed step")
    ax.set_ylabel("marginal cost per mixed token / per decode token")
    ax.legend(fontsize=7)


def _points(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [row for rec in records if rec["status"] == "ok" for row in rec["curves"]["points"]]


def _plot_ratio_vs_c(records: list[dict[str, Any]], ax: Any, ratio: Any, ylabel: str) -> None:
    import numpy as np

    acc: dict[tuple[str, str, int], list[float]] = {}
    for row in _points(records):
        acc.setdefault((row["gpu"], row["scenario"], row["c"]), []).append(ratio(row))
    keys = sorted({(g, s) for g, s, _ in acc})
    for i, (gpu, scenario) in enumerate(keys):
        cs = sorted(c for g, s, c in acc if (g, s) == (gpu, scenario))
        ys = [float(np.mean(acc[(gpu, scenario, c)])) for c in cs]
        ax.semilogx(cs, ys, marker="o", ls="-" if gpu == "rtx_pro_6000" else "--", color=f"C{i % 10}",
                    label=f"{gpu} {scenario}")  # fmt: skip
    ax.axhline(1.0, color="k", lw=0.8)
    ax.axhspan(1 - CLEAR_GAP, 1 + CLEAR_GAP, color="0.9")
    ax.set_xlabel("closed-loop concurrency c")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=6, ncol=2)


def plot_grid(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """EB / MB per (GPU, load) against concurrency (RTX solid, H200 dashed)."""
    _plot_ratio_vs_c(records, ax, lambda r: r["eb_over_mb"], "EB / MB throughput (mean over seeds)")


def plot_ebplus(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """EB+ / max(MB, EB) per (GPU, load) against concurrency."""
    _plot_ratio_vs_c(records, ax, lambda r: r["ebplus"] / max(r["mb"], r["eb"]), "EB+ / max(MB, EB) (mean over seeds)")


def plot_delta(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """Closed-form Delta(N) against the simulated EB / MB - 1: agreement lives in two quadrants."""
    for i, gpu in enumerate(("rtx_pro_6000", "h200")):
        rows = [r for r in _points(records) if r["gpu"] == gpu]
        ax.scatter([r["delta"] * 1e6 for r in rows], [r["eb_over_mb"] - 1 for r in rows], s=12, color=f"C{i}",
                   label=gpu)  # fmt: skip
    ax.axhline(0, color="k", lw=0.8)
    ax.axvline(0, color="k", lw=0.8)
    ax.axhspan(-CLEAR_GAP, CLEAR_GAP, color="0.9")
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlabel("closed-form Delta(N) (microseconds per token; > 0 predicts EB)")
    ax.set_ylabel("simulated EB / MB - 1")
    ax.legend(fontsize=7)


# --------------------------------------------------------------------------------------------------- claims
def plot_bandwidth(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """EB / MB against HBM bandwidth, with (eta = 0.5) and without (pure roofline) mixed-step interference."""
    import numpy as np

    rows = [row for rec in records if rec["status"] == "ok" for row in rec["curves"]["sweep"]]
    bw = sorted({r["bandwidth_tb_s"] for r in rows})
    for key, style in (("eb_over_mb", "o-"), ("eb_over_mb_pure_roofline", "s--")):
        ys = [float(np.mean([r[key] for r in rows if r["bandwidth_tb_s"] == b])) for b in bw]
        ax.plot(bw, ys, style, label=key.replace("eb_over_mb", "EB / MB").replace("_", " "))
    for b in bw:
        ax.annotate(next(r["gpu"] for r in rows if r["bandwidth_tb_s"] == b), (b, 1.0), fontsize=7, rotation=90)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xlabel("HBM bandwidth (TB/s, spec sheet)")
    ax.set_ylabel("EB / MB throughput (roofline backend)")
    ax.legend(fontsize=7)


def _grid(gpus: list[str], scenarios: list[str], concurrencies: list[int], n: int) -> list[dict[str, Any]]:
    return [{"gpu": g, "scenarios": scenarios, "concurrencies": concurrencies, "n_requests": n} for g in gpus]


ALL = list(SCENARIOS)
SMOKE_GRID = dict(scenarios=["balanced"], concurrencies=[32, 64], n=300)
QUICK_GRID = dict(scenarios=ALL, concurrencies=[32, 256, 512], n=2048)
FULL_GRID = dict(scenarios=ALL, concurrencies=[32, 256, 1024, 2048], n=10_000)
GRID_SEEDS = (1, 3, 5)


def _grid_profiles(gpus: list[str]) -> dict[str, Any]:
    return profiles(
        _grid(gpus, **SMOKE_GRID),  # type: ignore[arg-type]
        _grid(gpus, **QUICK_GRID),  # type: ignore[arg-type]
        _grid(gpus, **FULL_GRID),  # type: ignore[arg-type]
        seeds=GRID_SEEDS,
    )


def _shifts(n: int) -> list[dict[str, Any]]:
    return [
        {"gpu": g, "shift": s, "n_requests": n}
        for g in ("rtx_pro_6000", "h200")
        for s in ("distribution", "concurrency")
    ]


_THRESHOLDS = dict(
    metric="interference_threshold",
    run=run_thresholds,
    profiles=profiles({}, {}, {}, seeds=(1, 1, 1)),
    deterministic=True,
    plot=plot_thresholds,
)
_GRID = dict(run=run_grid, direction="higher", relative=True, unit="tokens/s", plot=plot_grid)

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
            notes="deterministic: solves beta_MB(r) = beta_d on the official constants; the MB quadratic is an "
            "end-to-end fit, so this is what the fit says, not a re-derivation of the abstract's numbers",
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
            notes="the notes warn that the published constants give ~0.37, not 0.8",
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
            notes=f"{MB_CAP_NOTE}; {POSTHOC}",
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
            notes=f"mean over the four loads at c = 32 (the cap is inactive there: N_hat > 32); {POSTHOC}",
            **_GRID,
        ),
        Claim(
            id="C3",
            statement="EB+ attains the highest or near-highest throughput in every setting (worst point of a GPU's "
            "grid: EB+ >= 0.95 max(MB, EB)).",
            metric="ratio_to_best_min",
            method="ebplus",
            reference=1.0,
            test="noninferiority",
            min_effect=CLEAR_GAP,
            profiles=_grid_profiles(["rtx_pro_6000", "h200"]),
            paper_figure="Table 4 (H200): EB+ 11,586 vs MB 11,584 (c = 32); 27,043 vs EB 27,198 (c = 2048)",
            notes=f"EB+ with the notes' hysteresis (1e-4; 1e-5 on H200), judged against the capped MB; {POSTHOC}",
            **{**_GRID, "relative": False, "unit": "", "plot": plot_ebplus},
        ),
        Claim(
            id="C3b",
            statement="Under non-stationary traffic with distribution or concurrency shifts, EB+ outperforms MB "
            "(by at least 5%).",
            metric="throughput",
            method="ebplus",
            baselines=("mb",),
            direction="higher",
            relative=True,
            min_effect=CLEAR_GAP,
            run=run_shift,
            profiles=profiles(_shifts(600)[:1], _shifts(3000), _shifts(6000), seeds=(1, 2, 3)),
            notes="throughput = total tokens / makespan for every policy (the shifts are the point, so no "
            f"steady-state window); MB capped as in C2; EB tuned to the overall means; {POSTHOC}",
            paper_figure="up to +36.4% over MB (abstract); README: L40S +42.3%, RTX PRO 6000 +11.8%, H200 +2.2%",
            unit="tokens/s",
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
            f"used, min(N_hat, c), against the capped MB; {POSTHOC}",
            run=run_grid,
            plot=plot_delta,
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
            ),
            paper_figure="abstract: the EB-MB choice fundamentally depends on GPU memory bandwidth",
            notes="eta = 0.5 is an assumed input, not a measurement; the same runs with eta = 1 (pure roofline, "
            "eb_over_mb_pure_roofline) are the control in which MB >= EB is expected; Qwen3-8B, GPU specs approximate. "
            "Reading the outcome: a constant eta makes the interference threshold 0.5 on every GPU (it scales with "
            "1/bandwidth like the decode cost it is compared with), and the L40S's 48 GB caps the memory-safe N at "
            "~180, where EB's switching overhead weighs most; a bandwidth-dependent threshold needs a contention "
            "model this backend does not have",
            plot=plot_bandwidth,
        ),
    ),
)
