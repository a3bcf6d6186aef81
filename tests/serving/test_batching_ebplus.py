"""EB+: closed forms against hand values and their monotonicity, cost models, simulator invariants, the jumped
decode stretches against the step-by-step loop (exact), seeded claim assertions with margins, and bad input."""

import itertools
import math

import numpy as np
import pytest

from icml26.serving.batching_ebplus import (
    ClosedLoopWorkload,
    EBPlusScheduler,
    ExclusiveBatchingScheduler,
    GPUSpec,
    LengthDist,
    LinearStepCost,
    MixedBatchingScheduler,
    ModelSpec,
    Phase,
    PhasedWorkload,
    PoissonWorkload,
    RooflineStepCost,
    ServingSimulator,
    StructuralInterferenceCost,
    crossover_delta,
    fit_hazard,
    get_cost_model,
    ifr_correction,
    kv_capacity_tokens,
    make_scheduler,
    memory_safe_batch_size,
    theta_asymptotic,
    theta_star,
)

RTX = LinearStepCost.paper_qwen3_8b("rtx_pro_6000")
H200 = LinearStepCost.paper_qwen3_8b("h200")


# ------------------------------------------------------------------------------------------ closed forms
def test_theta_star_hits_a_hand_root():
    # theta = 0.1: 0.1/0.9 + ln 0.9 = 0.00575060... ; choose p0 with -ln(1 - p0) equal to it and alpha_p = alpha_d.
    rhs = 0.1 / 0.9 + math.log(0.9)
    assert theta_star(-math.expm1(-rhs), 1.0, 1.0) == pytest.approx(0.1, abs=1e-11)
    assert theta_asymptotic(-math.expm1(-rhs), 1.0, 1.0) == pytest.approx(math.sqrt(2 * rhs))


def test_theta_star_is_monotone_and_matches_its_asymptote():
    x = np.geomspace(1e-6, 1e-1, 40)  # x = -ln(1 - p0) alpha_p / alpha_d
    thetas = [theta_star(-math.expm1(-v), 1.0, 1.0) for v in x]
    assert np.all(np.diff(thetas) > 0)
    # theta0 depends on p0 and alpha_p / alpha_d only through their product (the right-hand side)
    assert theta_star(0.01, 2.0, 4.0) == pytest.approx(theta_star(-math.expm1(0.5 * math.log1p(-0.01)), 1, 1))
    small = theta_star(1e-5, 1, 1)
    assert small == pytest.approx(theta_asymptotic(1e-5, 1, 1), rel=0.01)


def test_published_constants_give_the_notes_thresholds_and_thetas():
    assert RTX.interference_threshold() == pytest.approx(0.2058, abs=5e-4)  # notes: ~0.21
    assert H200.interference_threshold() == pytest.approx(0.3649, abs=5e-4)  # notes: ~0.37, not 0.8
    # theta0 is a few percent on RTX and about half that on H200 (notes: 0.03-0.08 vs ~half)
    for mu_o in (128, 256, 512, 1024):
        rtx, h200 = theta_star(1 / mu_o, RTX.alpha_p, RTX.alpha_d), theta_star(1 / mu_o, H200.alpha_p, H200.alpha_d)
        assert 0.025 < rtx < 0.09 and 0.3 < h200 / rtx < 0.7


def test_ifr_correction_hand_value_zero_and_cap():
    theta, p0, eta, n = 0.05, 1 / 512, 1e-8, 400
    lam = -math.log(1 - theta)
    rho = RTX.beta_d * n / RTX.alpha_d
    hand = eta * (1 - theta) ** 2 / (p0**2 * theta) * (lam * (theta / (1 - theta) - lam / 2) + rho * (lam - theta))
    assert ifr_correction(theta, p0, eta, RTX.beta_d, RTX.alpha_d, n) == pytest.approx(hand, rel=1e-12)
    assert ifr_correction(theta, p0, 0.0, RTX.beta_d, RTX.alpha_d, n) == 0.0
    assert ifr_correction(theta, p0, 1.0, RTX.beta_d, RTX.alpha_d, n) == pytest.approx(5 * theta)


def test_memory_safe_batch_size_monotone_bounded_and_tight():
    capacity, mu_l, p0, theta = 485_956, 512, 1 / 512, 0.04
    for method in ("clt", "linear"):
        ns = [memory_safe_batch_size(capacity, mu_l, p0, theta, eps, method) for eps in (0.3, 0.1, 0.01, 1e-4, 1e-8)]
        assert all(a >= b for a, b in itertools.pairwise(ns)) and ns[0] > ns[-1], (method, ns)
        assert ns[0] <= capacity / mu_l
    # CLT: N is the largest integer with N D + sigma sqrt(N ln(1/eps)) <= C
    lam = -math.log(1 - theta)
    d = mu_l + (1 - theta) / (theta * p0) * lam
    sigma = math.sqrt(2 * lam * (1 + (p0 * mu_l + lam / theta) ** 2)) / p0
    n = memory_safe_batch_size(capacity, mu_l, p0, theta, 0.01)
    load = lambda k: k * d + sigma * math.sqrt(k * math.log(100))  # noqa: E731
    assert load(n) <= capacity < load(n + 1)


def test_crossover_delta_hand_value_and_shape():
    mu_l, mu_o, n = 128, 1024, 1024
    theta = theta_star(1 / mu_o, RTX.alpha_p, RTX.alpha_d)
    r = mu_o / (mu_l + mu_o)
    beta_mb = 6.293e-5 + 1.969e-4 * r + 9.90e-6 * r * r
    beta_eb = (5.008e-5 * mu_l + 1.0388e-4 * mu_o) / (mu_l + mu_o)
    overhead = (4.691e-3 - 1.0376e-2 * math.log(1 - theta) * mu_o) / (theta * n) - 4.691e-3 * (1 + mu_o) / n
    assert crossover_delta(RTX, mu_l, mu_o, n) == pytest.approx(beta_mb - beta_eb - overhead / (mu_l + mu_o))
    deltas = [crossover_delta(H200, 512, 256, n) for n in (16, 64, 256, 1024, 4096)]
    assert np.all(np.diff(deltas) > 0)  # the switching overhead shrinks like 1/N
    assert deltas[0] < 0 < deltas[-1]  # MB at small N, EB at large N (H200, the paper's 512/256 load)
    # without interference (gamma = 0) EB can never win in the fluid limit
    gamma0 = StructuralInterferenceCost.calibrated("rtx_pro_6000").without_interference().linear()
    assert all(crossover_delta(gamma0, 512, 512, n) < 0 for n in (8, 128, 2048, 100_000))


def test_hazard_fit_recovers_a_constant_hazard():
    lengths = np.random.default_rng(0).geometric(1 / 200, size=20_000)
    fit = fit_hazard(lengths)
    assert fit.p0 == pytest.approx(1 / 200, rel=0.1)
    assert abs(fit.eta) < 1e-6
    uniform = fit_hazard(np.random.default_rng(1).integers(384, 641, size=2000))
    assert uniform.eta > 0 and uniform.p0 == pytest.approx(1 / uniform.mean)  # IFR, p0 floored at 1/mean


# -------------------------------------------------------------------------------------------- cost models
def test_structural_thresholds_are_the_calibrated_ones_and_fit_is_exact():
    for gpu, r_star in (("h200", 0.8), ("rtx_pro_6000", 0.2)):
        structural = StructuralInterferenceCost.calibrated(gpu)
        assert structural.interference_threshold() == pytest.approx(r_star)
        assert structural.linear().interference_threshold() == pytest.approx(r_star)
    rng = np.random.default_rng(0)
    n_p = rng.integers(0, 4000, 300) * (rng.random(300) < 0.7)
    n_d = rng.integers(0, 1000, 300) * (rng.random(300) < 0.7)
    keep = n_p + n_d > 0
    fitted = LinearStepCost.fit(n_p[keep], n_d[keep], RTX.step_time(n_p[keep], n_d[keep]))
    np.testing.assert_allclose(
        [fitted.alpha_p, fitted.beta_p, fitted.alpha_d, fitted.beta_d, fitted.alpha_mb, *fitted.mb_coeffs],
        [RTX.alpha_p, RTX.beta_p, RTX.alpha_d, RTX.beta_d, RTX.alpha_mb, *RTX.mb_coeffs],
        rtol=1e-6,
        atol=1e-12,
    )


def test_pure_roofline_has_no_interference_and_eta_adds_it():
    rng = np.random.default_rng(0)
    for gpu in ("h200", "rtx_pro_6000", "l40s", "h100"):
        pure = RooflineStepCost(gpu, "llama3_8b")
        n_p, n_d = rng.integers(1, 8192, 200), rng.integers(1, 1024, 200)
        ctx = n_d * rng.integers(100, 3000, 200)
        mixed = pure.step_time(n_p, n_d, ctx)
        separate = pure.step_time(n_p, 0 * n_d, 0) + pure.step_time(0 * n_p, n_d, ctx)
        assert np.all(mixed <= separate + 1e-15)  # a mixed step never costs more than its two pure steps
        assert pure.linear().interference_threshold() > 0.9
        slow = RooflineStepCost(gpu, "llama3_8b", mixed_attention_efficiency=0.5)
        assert slow.linear().interference_threshold() < 0.9
    assert kv_capacity_tokens("rtx_pro_6000", "qwen3_8b") == int((96e9 - ModelSpecBytes()) * 0.9 // 147456)


def ModelSpecBytes() -> int:  # helper: Qwen3-8B weight bytes from its config
    from icml26.serving.batching_ebplus import get_model

    return get_model("qwen3_8b").weight_bytes


def test_model_specs_from_hf_configs():
    llama = ModelSpec.from_hf_config(
        {
            "num_hidden_layers": 32,
            "hidden_size": 4096,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "intermediate_size": 14336,
            "vocab_size": 128256,
        },
        name="llama",
    )
    assert llama.kv_bytes_per_token == 128 * 1024 and 7.9e9 < llama.num_params < 8.1e9
    from icml26.serving.batching_ebplus import get_model

    assert get_model("qwen3_8b").kv_bytes_per_token == 144 * 1024  # notes: 144 KiB per token in bf16
    assert 69e9 < get_model("llama3_70b").num_params < 72e9


# -------------------------------------------------------------------------------------------- simulator
class RecordingCost:
    """Wraps a cost model and records every (n_p, n_d) it is asked about."""

    def __init__(self, inner):
        self.inner, self.name, self.calls = inner, inner.name, []

    def step_time(self, n_p, n_d, ctx=0):
        self.calls.append((np.atleast_1d(n_p).copy(), np.atleast_1d(n_d).copy()))
        return self.inner.step_time(n_p, n_d, ctx)

    def linear(self):
        return self.inner.linear()


def _policies(mu_l, mu_o):
    return {
        "mb": make_scheduler("mb", mu_l, mu_o),
        "mb_vllm": make_scheduler("mb_vllm", mu_l, mu_o),
        "eb": make_scheduler("eb", mu_l, mu_o),
        "eb_n1024": make_scheduler("eb_n1024", mu_l, mu_o),
        "ebplus": EBPlusScheduler(mu_l, mu_o, update_interval=20, delta=1e-6),
    }


@pytest.mark.parametrize("policy", ["mb", "mb_vllm", "eb", "eb_n1024", "ebplus"])
def test_invariants_tokens_requests_kv_and_phase_purity(policy):
    requests = ClosedLoopWorkload(400, 96, LengthDist(200), LengthDist(300, "geometric")).sample(
        np.random.default_rng(3)
    )
    cost = RecordingCost(RTX)
    sched = _policies(200, 300)[policy]
    result = ServingSimulator(cost, 20_000, sched, check_invariants=True).run(requests)  # KV under pressure
    n = len(requests)
    assert np.all(np.isfinite(result.finish)) and np.all(result.finish >= result.first_token)
    assert np.all(result.first_token > result.arrival)
    # every output token is sampled once: by a decode step or by a completing prefill
    assert result.decode_tokens + result.prefill_completions == requests.output.sum()
    # every KV token written is part of a finished request or was discarded by a recorded preemption
    written = result.prefill_tokens + result.decode_tokens
    assert written == (requests.prompt + requests.output - 1).sum() + result.discarded_kv_tokens
    assert (result.discarded_kv_tokens > 0) == (result.preemptions > 0)
    assert result.prefill_completions >= n and (result.preemptions > 0 or result.prefill_completions == n)
    if policy == "mb_vllm":
        assert result.preemptions > 0  # stock MB overflows at this load: the invariant is exercised
    if policy.startswith("eb") and policy != "ebplus":
        mixed = [np.any((p > 0) & (d > 0)) for p, d in cost.calls]
        assert not any(mixed), "an EB step mixed prefill and decode"


def test_zero_interference_gives_mb_at_least_eb():
    gamma0 = StructuralInterferenceCost.calibrated("rtx_pro_6000").without_interference()
    with_gamma = StructuralInterferenceCost.calibrated("rtx_pro_6000")
    capacity = kv_capacity_tokens("rtx_pro_6000", "qwen3_8b")
    for (mu_l, mu_o), c in (((128, 1024), 512), ((512, 512), 32), ((1024, 128), 256)):
        requests = ClosedLoopWorkload(4 * c + 200, c, mu_l, mu_o).sample(np.random.default_rng(c))

        def run(cost, name, mu_l=mu_l, mu_o=mu_o, requests=requests):
            return ServingSimulator(cost, capacity, make_scheduler(name, mu_l, mu_o)).run(requests).throughput

        assert run(gamma0, "mb") >= run(gamma0, "eb")
        if c >= 256:  # the same load with the calibrated interference gamma flips to EB
            assert run(with_gamma, "eb") > run(with_gamma, "mb")


@pytest.mark.parametrize(
    ("policy", "cost", "workload"),
    [
        ("mb", RTX, "closed"),
        ("mb_vllm", RTX, "closed"),
        ("eb", RTX, "closed"),
        ("eb_n1024", H200, "closed"),
        ("ebplus", RTX, "closed"),
        ("mb", "roofline", "poisson"),
        ("eb", "roofline", "poisson"),
        ("ebplus", H200, "phased"),
    ],
)
def test_jumped_stretches_equal_the_step_by_step_loop_exactly(policy, cost, workload):
    cost = RooflineStepCost("rtx_pro_6000", "qwen3_8b") if cost == "roofline" else cost
    wl = {
        "closed": ClosedLoopWorkload(300, 64, LengthDist(100), LengthDist(150, "geometric")),
        "poisson": PoissonWorkload(300, 40.0, LengthDist(100), LengthDist(120, "lognormal"), burstiness=2.0),
        "phased": PhasedWorkload((Phase(150, 16, 300, 40), Phase(150, 96, 60, 300))),
    }[workload]
    requests = wl.sample(np.random.default_rng(7))
    results = []
    for jump in (True, False):
        sched = _policies(100, 150)[policy]
        results.append(ServingSimulator(cost, 12_000, sched, jump=jump, check_invariants=not jump).run(requests))
    fast, slow = results
    np.testing.assert_array_equal(fast.finish, slow.finish)  # bit-identical times
    np.testing.assert_array_equal(fast.first_token, slow.first_token)
    assert (fast.steps, fast.preemptions, fast.decode_tokens) == (slow.steps, slow.preemptions, slow.decode_tokens)
    assert fast.loop_iterations < slow.loop_iterations


def test_closed_loop_concurrency_is_respected_and_shifts():
    wl = PhasedWorkload((Phase(200, 8, 50, 50), Phase(200, 64, 50, 50)))
    requests = wl.sample(np.random.default_rng(0))
    result = ServingSimulator(H200, 100_000, MixedBatchingScheduler()).run(requests)
    for i in range(len(requests)):  # requests issued up to i and unfinished when i is issued
        in_flight = np.sum(result.finish[: i + 1] > result.arrival[i])
        assert in_flight <= requests.concurrency[i]
    assert np.max([np.sum((result.arrival <= t) & (result.finish > t)) for t in result.arrival[250:300]]) == 64


def test_eb_overflow_rate_at_memory_safe_n_is_about_eps():
    """Prop. 3 under geometric lengths: the KV cache overflows at a step with probability <= eps + 0.02.

    Recorded (eps = 0.01): 1.1% of steps; per decode *phase* (any step of it) 4.3%, which the per-time bound
    of Prop. 3 does not cover; asserted loosely (<= 0.1) so that a regression in N shows.
    """
    eps, mu_l, mu_o, capacity = 0.01, 64, 128, 12_000
    sched = ExclusiveBatchingScheduler(mu_l, mu_o, eps=eps)
    requests = ClosedLoopWorkload(20_000, 400, LengthDist(mu_l, "fixed"), LengthDist(mu_o, "geometric")).sample(
        np.random.default_rng(0)
    )
    result = ServingSimulator(RTX, capacity, sched).run(requests)
    assert sched.cycles > 1000 and result.overflow_events > 0
    assert result.overflow_events / result.steps <= eps + 0.02
    assert sched.overflowed_cycles / sched.cycles <= 0.1


def test_ebplus_switches_with_the_sign_of_delta():
    capacity = kv_capacity_tokens("rtx_pro_6000", "qwen3_8b")
    heavy = ClosedLoopWorkload(3000, 1024, 128, 1024).sample(np.random.default_rng(0))  # Delta ~ 1.3e-4 > 1e-4
    sched = EBPlusScheduler(128, 1024)
    ServingSimulator(RTX, capacity, sched).run(heavy)
    assert sched.mode == "EB" and sched.switches == 1
    # once in EB, every later evaluation hands the smoothed theta and the (possibly smaller) safe N to EB
    assert len(sched.delta_trace) > sched.cooldown + 1
    assert sched.eb.theta_used == sched._theta and sched.eb.batch_size <= sched._safe_n
    low = ClosedLoopWorkload(1500, 32, 512, 512).sample(np.random.default_rng(0))  # Delta < 0 at N = 32
    sched = EBPlusScheduler(512, 512, delta=1e-6)
    ServingSimulator(RTX, capacity, sched).run(low)
    assert sched.mode == "MB" and sched.switches == 0 and all(d < 0 for _, d, _ in sched.delta_trace)


# ----------------------------------------------------------------------------------------- seeded claims
def _throughputs(cost, gpu, mu_l, mu_o, c, n, seed, names=("mb", "eb")):
    capacity = kv_capacity_tokens(gpu, "qwen3_8b")
    requests = ClosedLoopWorkload(n, c, mu_l, mu_o).sample(np.random.default_rng(seed))
    return {
        name: ServingSimulator(cost, capacity, make_scheduler(name, mu_l, mu_o)).run(requests).throughput
        for name in names
    }


@pytest.mark.claim
def test_claim_eb_beats_mb_on_rtx_decode_heavy_at_high_concurrency():
    for seed in (0, 1):  # notes: EB/MB >= 1.05 on RTX decode-heavy at c = 1024 (recorded: ~1.3)
        t = _throughputs(RTX, "rtx_pro_6000", 128, 1024, 1024, 4200, seed)
        assert t["eb"] / t["mb"] >= 1.05, t


@pytest.mark.claim
def test_claim_mb_keeps_its_advantage_on_h200_at_low_concurrency():
    for seed in (0, 1):  # recorded: MB/EB ~1.08 on the paper's 512/256 load at c = 32
        t = _throughputs(H200, "h200", 512, 256, 32, 1200, seed)
        assert t["mb"] / t["eb"] >= 1.03, t


@pytest.mark.claim
def test_claim_delta_sign_matches_the_simulated_winner():
    agree = clear = 0
    for cost, gpu in ((RTX, "rtx_pro_6000"), (H200, "h200")):
        capacity = kv_capacity_tokens(gpu, "qwen3_8b")
        for mu_l, mu_o in ((128, 1024), (512, 256), (1024, 128)):
            for c in (32, 256):
                t = _throughputs(cost, gpu, mu_l, mu_o, c, 4 * c + 400, 0)
                if abs(t["eb"] / t["mb"] - 1) > 0.05:
                    eb = make_scheduler("eb", mu_l, mu_o)
                    eb.bind(type("S", (), {"capacity": capacity, "max_num_seqs": 2048})(), cost)
                    clear += 1
                    agree += (crossover_delta(cost, mu_l, mu_o, min(eb.batch_size, c)) > 0) == (t["eb"] > t["mb"])
    assert clear >= 4 and agree / clear >= 0.8, (agree, clear)


# -------------------------------------------------------------------------------------------- bad input
def test_bad_input_raises_clear_errors():
    with pytest.raises(ValueError, match="kv_capacity_tokens must be a positive integer"):
        ServingSimulator(RTX, 0, MixedBatchingScheduler())
    with pytest.raises(ValueError, match="kv_capacity_tokens must be a positive integer"):
        ServingSimulator(RTX, -5, MixedBatchingScheduler())
    requests = ClosedLoopWorkload(10, 2, LengthDist(5000, "fixed"), LengthDist(10, "fixed")).sample(
        np.random.default_rng(0)
    )
    with pytest.raises(ValueError, match=r"impossible workload: request \d+ needs 5010 KV tokens"):
        ServingSimulator(RTX, 4000, MixedBatchingScheduler()).run(requests)
    with pytest.raises(ValueError, match="unknown GPU preset 'a100'"):
        kv_capacity_tokens("a100", "qwen3_8b")
    with pytest.raises(ValueError, match="unknown model preset 'gpt5'"):
        kv_capacity_tokens("h200", "gpt5")
    with pytest.raises(ValueError, match="does not fit"):
        kv_capacity_tokens("l40s", "llama3_70b")
    with pytest.raises(ValueError, match="no published Qwen3-8B calibration"):
        LinearStepCost.paper_qwen3_8b("l40s")
    with pytest.raises(ValueError, match="unknown cost backend"):
        get_cost_model("magic", "h200")
    with pytest.raises(ValueError, match="KV capacity must be positive"):
        memory_safe_batch_size(0, 512, 0.01, 0.05)
    with pytest.raises(ValueError, match="no memory-safe batch"):
        memory_safe_batch_size(100, 512, 0.01, 0.05)
    with pytest.raises(ValueError, match="hazard p0 must be in"):
        theta_star(1.5, 1, 1)
    with pytest.raises(ValueError, match="mean >= 1 token"):
        LengthDist(0)
    with pytest.raises(ValueError, match="concurrency must be >= 1"):
        Phase(10, 0, 10, 10)
    with pytest.raises(ValueError, match="bandwidth_bytes_per_s must be positive"):
        GPUSpec("broken", 80e9, -1.0, 1e15)
    with pytest.raises(ValueError, match="needs the workload's mean_prompt"):
        ExclusiveBatchingScheduler()
    with pytest.raises(ValueError, match="no published Qwen3-8B calibration"):
        StructuralInterferenceCost.calibrated("l40s")
    assert StructuralInterferenceCost.calibrated("RTX PRO 6000").interference_threshold() == pytest.approx(0.2)
    with pytest.raises(ValueError, match="window >= max"):
        EBPlusScheduler(update_interval=600, window=500)
    with pytest.raises(ValueError, match="lacks 'hidden_size'"):
        ModelSpec.from_hf_config({"num_attention_heads": 8})
