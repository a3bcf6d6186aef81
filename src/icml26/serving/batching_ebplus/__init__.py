"""EB+: exclusive vs mixed batching for LLM serving, the closed-form crossover, and a serving simulator.

Mixed batching (MB: vLLM, Sarathi-Serve) puts prefill chunks and decode tokens in one forward pass. The paper
finds that a token in a mixed step can cost more than a pure-decode token (prefill-decode *interference*), and
that the decode share above which this happens depends on memory bandwidth: 80% on an H200, 20% on an RTX PRO
6000 (abstract). Exclusive batching (EB) never mixes: prefill N requests, decode until k finish, refill k.

1. **Step costs** (``cost``, ``calibrations``): t = alpha_p + beta_p n_p (prefill), alpha_d + beta_d n_d (decode),
   alpha_MB + beta_MB(r) (n_p + n_d) (mixed, r = decode share). ``LinearStepCost.official(model, gpu)`` has the
   official step calibrations of all 14 published (model, GPU) pairs with provenance; beta_MB(r) is step level
   with the abstract's threshold (default), the published end-to-end quadratic (``mixed="end_to_end"``: an
   inverse serving throughput, *not* a step cost, see ``cost``) or interference-free. ``LinearStepCost.fit`` /
   ``from_csv`` calibrate from step logs. Also a structural model with an explicit gamma and a roofline from
   ``GPUSpec`` / ``ModelSpec`` (``hardware``).
2. **Closed forms** (``theory``): theta0 solves theta/(1-theta) + ln(1-theta) = -ln(1-p0) alpha_p/alpha_d
   (Prop. 1) plus the IFR correction for h(t) = p0 + eta t, clamped to [0, 5 theta]; (p0, eta) from the official
   hazard estimator (WLS over [t_5%, t_95%], >= 5 survivors, eta >= 0, p0 >= 1/mean); the memory-safe N from
   N D(theta) + sigma sqrt(N ln(1/eps)) <= C (Prop. 3, CLT; linear form too); the crossover
   Delta(N) = [beta_MB(r) - beta_EB] - [(alpha_p - alpha_d ln(1-theta) mu_O)/k - alpha_MB (1+mu_O)/N]/(mu_L+mu_O)
   with k = max(1, floor(theta N)), the phase machine's k (Prop. 4; Delta > 0 => EB).
3. **Schedulers** (``schedulers``), one interface ``schedule(state) -> StepPlan`` / ``on_finish``:
   ``MixedBatchingScheduler``, ``ExclusiveBatchingScheduler(k="auto", n="auto", eps=0.01)``,
   ``EBPlusScheduler(update_interval=100, delta=1e-4, cooldown=3, sticky=3.0, window=500, calibration=None,
   memory_safe_cap=False)``: the official rule (N in Delta = running + waiting; leaving EB takes 3 delta; a
   drain gate at N < 16); ``memory_safe_cap=True`` is our variant. The authors' scripts run delta = 1e-5.
4. **Simulator** (``simulator``): event-driven and deterministic, KV capacity in tokens with recompute
   preemption, decode-only stretches advanced in one jump; workloads (``workload``): closed loop, Poisson /
   bursty Gamma, phased shifts; lengths uniform +-spread, geometric, lognormal (synthetic, matched means).

Readings where the abstract is silent (details in each module): throughput is total (prompt + output) tokens/s
in closed loop, measured in steady state; MB is vLLM v1-like (decodes first, 8192-token chunks, newest-first
recompute preemption); alpha_MB = alpha_p as in the official code; the step-level interference form between the
pure costs (the notes' structural one) with gamma calibrated to the abstract's thresholds. A pure roofline gives
MB >= EB: every EB win here traces back to an explicit interference input (gamma, the published beta_MB(r), or
the mixed-step attention efficiency eta).

Example::

    from icml26.serving.batching_ebplus import (ClosedLoopWorkload, EBPlusScheduler, LinearStepCost,
                                                ServingSimulator, kv_capacity_tokens)
    world = LinearStepCost.paper_qwen3_8b("rtx_pro_6000")
    published = LinearStepCost.paper_qwen3_8b("rtx_pro_6000", mixed="end_to_end")  # what EB+ is given
    capacity = kv_capacity_tokens("rtx_pro_6000", "qwen3_8b")
    scheduler = EBPlusScheduler(delta=1e-5, calibration=published)
    result = ServingSimulator(world, capacity, scheduler).run(
        ClosedLoopWorkload(10_000, concurrency=1024, prompt=128, output=1024))
    result.throughput, result.mode_trace[:3]

    cost = LinearStepCost.from_csv("my_steps.csv", time_unit="ms")  # calibrate from your own step log

References
----------
- "Threshold-Based Exclusive Batching for LLM Inference", ICML 2026 (arXiv 2606.00516); official code
  weifang231/eb-vllm (a vLLM v1 fork; its constants, hysteresis and hazard estimator were checked against it,
  its calibration files are transcribed in ``calibrations`` with provenance).
- A. Agrawal et al., "Taming Throughput-Latency Tradeoff in LLM Inference with Sarathi-Serve", OSDI 2024.
- W. Kwon et al., "Efficient Memory Management for Large Language Model Serving with PagedAttention", SOSP 2023.
- Y. Zhong et al., "DistServe: Disaggregating Prefill and Decoding for Goodput-optimized LLM Serving", OSDI 2024.
- S. Williams, A. Waterman, D. Patterson, "Roofline: an insightful visual performance model", CACM 2009.
"""

from icml26.serving.batching_ebplus.calibrations import (
    OFFICIAL_MB_FITS,
    OFFICIAL_STEP_CALIBRATIONS,
    MixedBatchFit,
    StepCalibration,
    official_mb_fit,
    official_step_calibration,
)
from icml26.serving.batching_ebplus.cost import (
    PAPER_INTERFERENCE_THRESHOLDS,
    LinearStepCost,
    RooflineStepCost,
    StepCost,
    StructuralInterferenceCost,
    get_cost_model,
)
from icml26.serving.batching_ebplus.hardware import (
    GPUS,
    MODELS,
    GPUSpec,
    ModelSpec,
    get_gpu,
    get_model,
    kv_capacity_tokens,
)
from icml26.serving.batching_ebplus.schedulers import (
    EBPlusScheduler,
    ExclusiveBatchingScheduler,
    MixedBatchingScheduler,
    make_scheduler,
)
from icml26.serving.batching_ebplus.simulator import (
    EngineState,
    ServingSimulator,
    SimulationError,
    SimulationResult,
    StepPlan,
)
from icml26.serving.batching_ebplus.theory import (
    HazardFit,
    corrected_theta,
    crossover_delta,
    fit_hazard,
    ifr_correction,
    memory_safe_batch_size,
    switch_count,
    theta_asymptotic,
    theta_star,
)
from icml26.serving.batching_ebplus.workload import (
    MATCHED_MEAN_OUTPUTS,
    ClosedLoopWorkload,
    LengthDist,
    Phase,
    PhasedWorkload,
    PoissonWorkload,
    RequestSet,
)

__all__ = [
    "GPUS",
    "MATCHED_MEAN_OUTPUTS",
    "MODELS",
    "OFFICIAL_MB_FITS",
    "OFFICIAL_STEP_CALIBRATIONS",
    "PAPER_INTERFERENCE_THRESHOLDS",
    "ClosedLoopWorkload",
    "EBPlusScheduler",
    "EngineState",
    "ExclusiveBatchingScheduler",
    "GPUSpec",
    "HazardFit",
    "LengthDist",
    "LinearStepCost",
    "MixedBatchFit",
    "MixedBatchingScheduler",
    "ModelSpec",
    "Phase",
    "PhasedWorkload",
    "PoissonWorkload",
    "RequestSet",
    "RooflineStepCost",
    "ServingSimulator",
    "SimulationError",
    "SimulationResult",
    "StepCalibration",
    "StepCost",
    "StepPlan",
    "StructuralInterferenceCost",
    "corrected_theta",
    "crossover_delta",
    "fit_hazard",
    "get_cost_model",
    "get_gpu",
    "get_model",
    "ifr_correction",
    "kv_capacity_tokens",
    "make_scheduler",
    "memory_safe_batch_size",
    "official_mb_fit",
    "official_step_calibration",
    "switch_count",
    "theta_asymptotic",
    "theta_star",
]
