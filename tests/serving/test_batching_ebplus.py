"""EB+: closed forms against hand values and their monotonicity, the official calibrations and the
calibrate-from-logs workflow, the official hazard estimator against a brute-force oracle and known hazards, cost
models, simulator invariants, the jumped decode stretches against the step-by-step loop (exact), EB+'s official
rule, seeded claim assertions with margins, and one clear error per bad input."""

import itertools
import math
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
    switch_count,
    theta_asymptotic,
    theta_star,
)
from icml26.serving.batching_ebplus.calibrations import OFFICIAL_MB_FITS, OFFICIAL_STEP_CALIBRATIONS

RTX = LinearStepCost.paper_qwen3_8b("rtx_pro_6000")  # the simulator's world: step level throughout
H200 = LinearStepCost.paper_qwen3_8b("h200")
RTX_E2E = LinearStepCost.paper_qwen3_8b("rtx_pro_6000", "end_to_end")  # the published constants as EB+ uses them
H200_E2E = LinearStepCost.paper_qwen3_8b("h200", "end_to_end")


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
    assert RTX_E2E.interference_threshold() == pytest.approx(0.2058, abs=5e-4)  # notes: ~0.21
    assert H200_E2E.interference_threshold() == pytest.approx(0.3651, abs=5e-4)  # notes: ~0.37, not 0.8
    # the step-level world puts r* exactly at the abstract's thresholds
    assert RTX.interference_threshold() == pytest.approx(0.2) and H200.interference_threshold() == pytest.approx(0.8)
    # theta0 is a few percent on RTX and about half that on H200 (notes: 0.03-0.08 vs ~half)
    for mu_o in (128, 256, 512, 1024):
        rtx, h200 = theta_star(1 / mu_o, RTX.alpha_p, RTX.alpha_d), theta_star(1 / mu_o, H200.alpha_p, H200.alpha_d)
        assert 0.025 < rtx < 0.09 and 0.3 < h200 / rtx < 0.7


def test_official_calibrations_are_complete_and_carry_provenance():
    assert len(OFFICIAL_STEP_CALIBRATIONS) == 14  # every pd_calibration_*.json of the official repository
    models = {m for m, _ in OFFICIAL_STEP_CALIBRATIONS}
    assert len(models) == 7
    assert all((m, g) in OFFICIAL_STEP_CALIBRATIONS for m in models for g in ("h200", "rtx_pro_6000"))
    for cal in OFFICIAL_STEP_CALIBRATIONS.values():
        assert "pd_calibration_" in cal.provenance and cal.device_name in cal.provenance
        assert 0 < cal.beta_p < cal.beta_d and cal.alpha_d > 0 and 0.9 < cal.decode_r2 <= 1
        cost = LinearStepCost.official(cal.model, cal.gpu, mixed="none")
        assert cost.step_time(1000, 0) == pytest.approx(cal.alpha_p + 1000 * cal.beta_p)
        assert cost.step_time(0, 100) == pytest.approx(cal.alpha_d + 100 * cal.beta_d)
    # Hugging Face ids and display names resolve to the same entry
    by_hf_id = LinearStepCost.official("Qwen/Qwen3-8B", "RTX PRO 6000", "end_to_end")
    assert by_hf_id.mb_coeffs == RTX_E2E.mb_coeffs and by_hf_id.alpha_d == RTX_E2E.alpha_d
    llama = LinearStepCost.official("meta-llama/Meta-Llama-3.1-8B-Instruct", "h200")
    assert llama.alpha_d == pytest.approx(6.7907e-3, rel=1e-4)
    # the published H200 beta_MB(r) is an inverse end-to-end throughput: 1/beta_MB(r) = the runs' tokens/s
    fit = OFFICIAL_MB_FITS[("qwen3_8b", "h200")]
    for r, tokens_per_s in fit.fit_points:
        assert 1 / fit.inverse_throughput(r) == pytest.approx(tokens_per_s, rel=2e-3)
    assert H200_E2E.mb_coeffs == fit.coeffs


def test_calibrate_from_a_csv_log_of_steps(tmp_path):
    truth = LinearStepCost.paper_qwen3_8b("h200")
    rows = [(n_p, 0) for n_p in (256, 512, 1024, 2048, 4096)] + [(0, k) for k in (16, 64, 256, 512, 1024)]
    rows += [(n_p, k) for n_p in (512, 2048, 8192) for k in (32, 256, 1024)]
    lines = ["prefill_tokens,decode_requests,step_time_ms"]
    lines += [f"{n_p},{k},{1e3 * truth.step_time(n_p, k):.9f}" for n_p, k in rows] + ["1,1,"]  # an untimed row
    path = tmp_path / "steps.csv"
    path.write_text("\n".join(lines) + "\n")
    fitted = LinearStepCost.from_csv(path, time_unit="ms")
    np.testing.assert_allclose(
        [fitted.alpha_p, fitted.beta_p, fitted.alpha_d, fitted.beta_d, fitted.alpha_mb, *fitted.mb_coeffs],
        [truth.alpha_p, truth.beta_p, truth.alpha_d, truth.beta_d, truth.alpha_mb, *truth.mb_coeffs],
        rtol=1e-6,
        atol=1e-10,
    )
    assert fitted.interference_threshold() == pytest.approx(0.8, abs=1e-5)
    pure = tmp_path / "pure.csv"  # the official calibration has no mixed steps
    pure.write_text("\n".join(lines[: 1 + 10]) + "\n")
    with pytest.raises(ValueError, match="not enough distinct mixed steps"):
        LinearStepCost.from_csv(pure, time_unit="ms")
    threshold = LinearStepCost.from_csv(pure, time_unit="ms", mixed="threshold", interference_threshold=0.8)
    np.testing.assert_allclose(threshold.mb_coeffs, truth.mb_coeffs, rtol=1e-6)
    assert LinearStepCost.from_csv(pure, time_unit="ms", mixed="none").interference_threshold() == 1.0
    with pytest.raises(ValueError, match=r"missing column\(s\) \['step_time_s'\]"):
        LinearStepCost.from_csv(path)
    bad = tmp_path / "bad.csv"
    bad.write_text("prefill_tokens,decode_requests,step_time_s\n512,0,abc\n")
    with pytest.raises(ValueError, match="line 2: not a number"):
        LinearStepCost.from_csv(bad)


def test_ifr_correction_hand_value_zero_and_clamps():
    theta, p0, eta, n = 0.05, 1 / 512, 1e-8, 400
    lam = -math.log(1 - theta)
    rho = RTX.beta_d * n / RTX.alpha_d
    hand = eta * (1 - theta) ** 2 / (p0**2 * theta) * (lam * (theta / (1 - theta) - lam / 2) + rho * (lam - theta))
    assert ifr_correction(theta, p0, eta, RTX.beta_d, RTX.alpha_d, n) == pytest.approx(hand, rel=1e-12)
    assert ifr_correction(theta, p0, 0.0, RTX.beta_d, RTX.alpha_d, n) == 0.0
    assert ifr_correction(theta, p0, 1.0, RTX.beta_d, RTX.alpha_d, n) == pytest.approx(5 * theta)  # cap 5 theta
    assert ifr_correction(theta, p0, -1e-6, RTX.beta_d, RTX.alpha_d, n) == 0.0  # official: dtheta >= 0


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
    theta = theta_star(1 / mu_o, RTX_E2E.alpha_p, RTX_E2E.alpha_d)
    k = math.floor(theta * n)  # the integer threshold the EB phase machine uses
    r = mu_o / (mu_l + mu_o)
    a, b, c = RTX_E2E.mb_coeffs
    beta_mb = a + b * r + c * r * r
    beta_eb = (RTX_E2E.beta_p * mu_l + RTX_E2E.beta_d * mu_o) / (mu_l + mu_o)
    ap, ad = RTX_E2E.alpha_p, RTX_E2E.alpha_d
    overhead = (ap - ad * math.log(1 - k / n) * mu_o) / k - ap * (1 + mu_o) / n  # theta0 N -> k, k / N
    assert crossover_delta(RTX_E2E, mu_l, mu_o, n) == pytest.approx(beta_mb - beta_eb - overhead / (mu_l + mu_o))
    assert k / n == pytest.approx(theta, abs=1 / n)  # the integer k moves theta by less than 1 / N
    deltas = [crossover_delta(H200_E2E, 512, 256, n) for n in (16, 64, 256, 1024, 4096)]
    assert np.all(np.diff(deltas) > 0)  # the switching overhead shrinks like 1/N
    assert deltas[0] < 0 < deltas[-1]  # MB at small N, EB at large N (H200, the paper's 512/256 load)
    # without interference (gamma = 0) EB can never win in the fluid limit
    gamma0 = StructuralInterferenceCost.calibrated("rtx_pro_6000").without_interference().linear()
    assert all(crossover_delta(gamma0, 512, 512, n) < 0 for n in (2, 8, 128, 2048, 100_000))
    assert crossover_delta(gamma0, 512, 512, 1) == pytest.approx(0.0, abs=1e-15)  # one request: EB is MB


@settings(max_examples=60, deadline=None)
@given(theta=st.floats(0.001, 0.95), n=st.integers(1, 5000))
def test_crossover_delta_uses_the_simulators_switch_count(theta, n):
    """Delta's k is the EB phase machine's k = max(1, floor(theta N)), also where theta N < 1."""
    k = switch_count(theta, n)
    assert k == max(1, math.floor(theta * n)) and k >= 1
    tokens, r = 512 + 256, 256 / 768
    steps = 256 * (-math.log1p(-k / n) if k < n else 1.0)  # decode steps until k of the N finish
    overhead = ((H200.alpha_p + H200.alpha_d * steps) / k - H200.alpha_mb * 257 / n) / tokens
    expected = float(H200.beta_mb(r)) - H200.beta_eb(512, 256) - overhead
    assert crossover_delta(H200, 512, 256, n, theta) == pytest.approx(expected, rel=1e-12, abs=1e-18)
    eb = ExclusiveBatchingScheduler(theta=theta, n=n)
    eb.bind(type("Engine", (), {"capacity": 10**6, "max_num_seqs": 10**4})(), H200)
    assert eb._switch_count(n) == k


# -------------------------------------------------------------------------------------------- hazard
def _official_hazard_by_loops(lengths):
    """Brute force of the official estimator as its docstring and comments describe it (loops, no numpy)."""
    xs = sorted(int(v) for v in lengths)
    n, mean = len(xs), sum(xs) / len(xs)
    lo = max(xs[max(0, int(n * 0.05))], 1)
    hi = max(xs[int(n * 0.95)], lo + 10)
    counts = Counter(xs)
    sw = swt = swt2 = swh = swth = 0.0
    for t in range(lo, min(hi, xs[-1]) + 1):
        alive = sum(1 for v in xs if v >= t)
        if alive < 5:
            continue
        h = counts.get(t, 0) / alive
        sw, swt, swt2 = sw + alive, swt + alive * t, swt2 + alive * t * t
        swh, swth = swh + alive * h, swth + alive * t * h
    det = sw * swt2 - swt * swt
    if sw < 10 or abs(det) < 1e-10:
        return 1 / mean, 0.0
    p0, eta = (swt2 * swh - swt * swth) / det, (sw * swth - swt * swh) / det
    return min(max(p0, 1 / mean), 0.999), max(eta, 0.0)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 60), min_size=30, max_size=120))
def test_fit_hazard_equals_the_official_estimator_by_brute_force(lengths):
    fit = fit_hazard(np.array(lengths))
    p0, eta = _official_hazard_by_loops(lengths)
    assert fit.p0 == pytest.approx(p0, rel=1e-9, abs=1e-12) and fit.eta == pytest.approx(eta, rel=1e-9, abs=1e-12)
    assert fit.eta >= 0 and fit.p0 >= 1 / np.mean(lengths) - 1e-15


def _sample_linear_hazard(p0, eta, n, rng):
    """Exact draws from P(O = t | O >= t) = p0 + eta (t - 1), t = 1, 2, ... (inverse survival function)."""
    t = np.arange(1, 20_000)
    hazard = np.minimum(p0 + eta * (t - 1), 1.0)
    above = np.cumprod(1 - hazard)  # above[t - 1] = P(O > t), decreasing
    return np.searchsorted(-above, -rng.random(n), side="right") + 1  # the first t with P(O > t) < u


def test_fit_hazard_recovers_known_hazards():
    rng = np.random.default_rng(0)
    geometric = fit_hazard(_sample_linear_hazard(1 / 200, 0.0, 100_000, rng))
    assert geometric.p0 == pytest.approx(1 / 200, rel=0.05) and geometric.eta < 2e-7 and geometric.reliable
    ifr = _sample_linear_hazard(2e-3, 4e-5, 100_000, rng)
    fit = fit_hazard(ifr)
    assert fit.eta == pytest.approx(4e-5, rel=0.1)
    assert fit.p0 == pytest.approx(1 / ifr.mean())  # an IFR's intercept is below 1/mean: the floor binds
    assert fit.window == (int(np.sort(ifr)[5_000]), int(np.sort(ifr)[95_000]))
    dfr = np.concatenate([rng.geometric(1 / 20, 50_000), rng.geometric(1 / 400, 50_000)])  # decreasing hazard
    assert fit_hazard(dfr).eta == 0.0  # official: a DFR is treated as constant
    uniform = fit_hazard(np.random.default_rng(1).integers(384, 641, size=2000))
    assert uniform.eta > 0 and uniform.p0 == pytest.approx(1 / uniform.mean)  # IFR, p0 floored at 1/mean
    few = fit_hazard(np.full(40, 7))  # no spread: too few t to fit, the memoryless fallback, flagged
    assert not few.reliable and few.p0 == pytest.approx(1 / 7) and few.eta == 0.0


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
    heavy = ClosedLoopWorkload(3000, 1024, 128, 1024).sample(np.random.default_rng(0))  # Delta ~ 1.4e-4 > 1e-5
    sched = EBPlusScheduler(128, 1024, delta=1e-5, calibration=RTX_E2E)
    ServingSimulator(RTX, capacity, sched).run(heavy)
    assert sched.mode == "EB" and sched.switches == 1
    # once in EB, every later evaluation hands the smoothed theta and the memory-safe N to EB (official auto-N)
    assert len(sched.delta_trace) > sched.cooldown + 1
    assert sched.eb.theta_used == sched._theta and sched.eb.batch_size == sched._safe_n
    # without the published (end-to-end) constants, Delta is the world's own: 2.7e-5 < 1e-4, EB+ stays in MB
    sched = EBPlusScheduler(128, 1024)
    ServingSimulator(RTX, capacity, sched).run(heavy)
    assert sched.mode == "MB" and max(d for _, d, _ in sched.delta_trace) < 1e-4
    low = ClosedLoopWorkload(1500, 32, 512, 512).sample(np.random.default_rng(0))  # Delta < 0 at N = 32
    sched = EBPlusScheduler(512, 512, delta=1e-6, calibration=RTX_E2E)
    ServingSimulator(RTX, capacity, sched).run(low)
    assert sched.mode == "MB" and sched.switches == 0 and all(d < 0 for _, d, _ in sched.delta_trace)


def test_ebplus_official_n_switches_where_the_memory_safe_cap_does_not():
    """H200, Table 4 load at c = 2048: Delta(N = 2048) crosses the authors' 1e-5, Delta(N_hat ~ 1000) does not."""
    capacity = kv_capacity_tokens("h200", "qwen3_8b")
    requests = ClosedLoopWorkload(6200, 2048, 512, 256).sample(np.random.default_rng(0))
    runs = {}
    for cap in (False, True):
        sched = EBPlusScheduler(512, 256, delta=1e-5, calibration=H200_E2E, memory_safe_cap=cap)
        ServingSimulator(H200, capacity, sched).run(requests)
        runs[cap] = sched
    official, capped = runs[False], runs[True]
    assert official.switches >= 1 and max(official.batch_trace) > 2000
    assert capped.switches == 0 and max(capped.batch_trace) < 1100 and capped.mb.running_cap < 1100
    assert max(d for _, d, _ in capped.delta_trace) < 1e-5 < max(d for _, d, _ in official.delta_trace)
    # the drain gate: no switch on an engine with fewer than min_batch requests in flight, even at Delta > delta
    tiny = ClosedLoopWorkload(800, 8, 128, 1024).sample(np.random.default_rng(0))
    loud = replace(RTX_E2E, mb_coeffs=(1e-2, 0.0, 0.0))  # a huge interference: Delta > 0 already at N = 8
    for min_batch, switches in ((16, 0), (1, 1)):
        sched = EBPlusScheduler(delta=1e-5, calibration=loud, update_interval=50, min_batch=min_batch)
        ServingSimulator(RTX, kv_capacity_tokens("rtx_pro_6000", "qwen3_8b"), sched).run(tiny)
        assert sched.switches == switches and min(d for _, d, _ in sched.delta_trace) > 1e-5


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
    for seed in (0, 1):  # notes: EB/MB >= 1.05 on RTX decode-heavy at c = 1024 (recorded: ~1.13)
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
                    delta = crossover_delta(cost, mu_l, mu_o, min(eb.batch_size, c))  # the world's constants
                    agree += (delta > 0) == (t["eb"] > t["mb"])
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
    with pytest.raises(ValueError, match="no official step calibration for 'qwen3_8b' on 'l40s'"):
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
    with pytest.raises(ValueError, match="no official step calibration"):
        StructuralInterferenceCost.calibrated("l40s")
    assert StructuralInterferenceCost.calibrated("RTX PRO 6000").interference_threshold() == pytest.approx(0.2)
    with pytest.raises(ValueError, match="window >= max"):
        EBPlusScheduler(update_interval=600, window=500)
    with pytest.raises(ValueError, match="lacks 'hidden_size'"):
        ModelSpec.from_hf_config({"num_attention_heads": 8})


def test_the_review_issues_bad_inputs_get_one_clear_error_each():
    for theta in (0, 1, 1.5, -0.1, float("nan")):
        with pytest.raises(ValueError, match=r"theta must be in \(0, 1\)"):
            crossover_delta(RTX, 512, 512, 1024, theta=theta)
    for n in (0, 2.5, True):
        with pytest.raises(ValueError, match="batch size N must be an integer >= 1"):
            crossover_delta(RTX, 512, 512, n)
    with pytest.raises(ValueError, match="mean_prompt must be a finite number"):
        crossover_delta(RTX, float("nan"), 512, 1024)
    for coeffs in ((float("nan"), 0.0, 0.0), (1e-5, float("inf"), 0.0), (1e-5, 1e-5)):
        with pytest.raises(ValueError, match="mb_coeffs must be three finite numbers"):
            LinearStepCost(1e-3, 2e-5, 9e-3, 5e-5, 1e-3, coeffs)
    with pytest.raises(ValueError, match="alpha_p must be finite"):
        LinearStepCost(float("nan"), 2e-5, 9e-3, 5e-5, 1e-3, (1e-5, 1e-5, 0.0))
    fixed = make_scheduler("eb_theta0.1", 512, 512)
    assert isinstance(fixed, ExclusiveBatchingScheduler) and fixed.theta == 0.1
    assert make_scheduler("eb_theta", 512, 512, theta=0.2).theta == 0.2
    for name in ("eb_theta", "eb_thetaX"):
        with pytest.raises(ValueError, match="give the fixed theta in the name"):
            make_scheduler(name, 512, 512)
    with pytest.raises(ValueError, match="names theta already"):
        make_scheduler("eb_theta0.1", 512, 512, theta=0.2)
    with pytest.raises(ValueError, match=r"theta must be in \(0, 1\)"):
        make_scheduler("eb_theta1.5", 512, 512)
    with pytest.raises(ValueError, match="unknown scheduler 'fcfs'; choose one of"):
        make_scheduler("fcfs", 512, 512)
    with pytest.raises(ValueError, match="whole token counts"):
        fit_hazard(np.full(40, 100.5))
    with pytest.raises(ValueError, match="finite"):
        fit_hazard(np.r_[np.full(40, 100.0), np.nan])
    with pytest.raises(ValueError, match="1-D"):
        fit_hazard(np.ones((40, 2), int))
    with pytest.raises(ValueError, match="at least 30 output lengths"):
        fit_hazard([])
    assert fit_hazard(np.arange(1.0, 61.0)).n == 60  # whole-valued floats are fine
    with pytest.raises(ValueError, match="no official step calibration for 'gpt5' on 'h200'; published:"):
        LinearStepCost.official("gpt5", "h200")
    with pytest.raises(ValueError, match="no published mixed-batching fit for 'mistral_7b_v0_1'"):
        LinearStepCost.official("mistral_7b_v0_1", "h200", mixed="end_to_end")
    with pytest.raises(ValueError, match="mixed must be 'threshold', 'end_to_end' or 'none'"):
        LinearStepCost.official("qwen3_8b", "h200", mixed="both")
    with pytest.raises(ValueError, match=r"interference threshold r\* must be in \(0, 1\]"):
        RTX.with_interference_threshold(0.0)
    with pytest.raises(ValueError, match="calibration must be a LinearStepCost"):
        EBPlusScheduler(calibration=RooflineStepCost("h200", "qwen3_8b"))
    with pytest.raises(ValueError, match="delta >= 0"):
        EBPlusScheduler(delta=float("nan"))
