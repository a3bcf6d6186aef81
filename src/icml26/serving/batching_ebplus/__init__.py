"""EB+: exclusive vs mixed batching for LLM serving, the closed-form crossover, and a serving simulator.

Mixed batching (MB: vLLM, Sarathi-Serve) puts prefill chunks and decode tokens in one forward pass. The paper
finds that a token in a mixed step can cost more than a pure-decode token (prefill-decode *interference*), and
that the decode share above which this happens depends on memory bandwidth: 80% on an H200, 20% on an RTX PRO
6000 (abstract). Exclusive batching (EB) never mixes: prefill N requests, decode until k finish, refill k.

1. **Step costs** (``cost``): the paper-calibrated linear model (Qwen3-8B on H200 / RTX PRO 6000, official
   constants), a structural model with an explicit interference coefficient gamma, and a roofline from
   ``GPUSpec`` / ``ModelSpec`` (``hardware``); ``LinearStepCost.fit`` from measured steps.
2. **Closed forms** (``theory``): EB threshold theta0 (Prop. 1, bisection and asymptotic) and its IFR
   correction; memory-safe batch size N (Prop. 3, CLT and linear); crossover Delta(N) (Prop. 4, > 0 => EB).
3. **Schedulers** (``schedulers``), one interface ``schedule(state) -> StepPlan`` / ``on_finish``:
   ``MixedBatchingScheduler``, ``ExclusiveBatchingScheduler(k="auto", n="auto", eps=0.01)``,
   ``EBPlusScheduler(update_interval=100, delta=1e-4, cooldown=3, sticky=3.0, window=500)``.
4. **Simulator** (``simulator``): event-driven and deterministic, KV capacity in tokens with recompute
   preemption, decode-only stretches advanced in one jump; workloads (``workload``): closed loop, Poisson /
   bursty Gamma, phased shifts; lengths uniform +-25%, geometric, lognormal (synthetic, matched means).

Reading chosen where the abstract is silent (details in each module): throughput is total (prompt + output)
tokens/s in closed loop, measured in steady state; MB is vLLM v1-like (decodes first, 8192-token chunks,
newest-first recompute preemption); alpha_MB = alpha_p as in the official fit. A pure roofline gives MB >= EB:
every EB win here traces back to an explicit interference input (the fitted beta_MB(r) > beta_d, gamma, or the
mixed-step attention efficiency eta).

Example::

    from icml26.serving.batching_ebplus import (ClosedLoopWorkload, EBPlusScheduler, LinearStepCost,
                                                ServingSimulator, kv_capacity_tokens)
    cost = LinearStepCost.paper_qwen3_8b("rtx_pro_6000")
    capacity = kv_capacity_tokens("rtx_pro_6000", "qwen3_8b")
    result = ServingSimulator(cost, capacity, EBPlusScheduler(), seed=0).run(
        ClosedLoopWorkload(10_000, concurrency=1024, prompt=128, output=1024))
    result.throughput, result.mode_trace[:3]

References
----------
- "Threshold-Based Exclusive Batching for LLM Inference", ICML 2026 (arXiv 2606.00516); official code
  weifang231/eb-vllm (a vLLM v1 fork; not accessible here: its formulas and calibrations are as the notes
  summarise them).
- A. Agrawal et al., "Taming Throughput-Latency Tradeoff in LLM Inference with Sarathi-Serve", OSDI 2024.
- W. Kwon et al., "Efficient Memory Management for Large Language Model Serving with PagedAttention", SOSP 2023.
- Y. Zhong et al., "DistServe: Disaggregating Prefill and Decoding for Goodput-optimized LLM Serving", OSDI 2024.
- S. Williams, A. Waterman, D. Patterson, "Roofline: an insightful visual performance model", CACM 2009.
"""

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
    "PAPER_INTERFERENCE_THRESHOLDS",
    "ClosedLoopWorkload",
    "EBPlusScheduler",
    "EngineState",
    "ExclusiveBatchingScheduler",
    "GPUSpec",
    "HazardFit",
    "LengthDist",
    "LinearStepCost",
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
    "switch_count",
    "theta_asymptotic",
    "theta_star",
]
