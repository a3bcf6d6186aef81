"""Fatigue Index: signals against exact values, normaliser axioms, smoothing and hysteresis, the online monitor
against an offline recomputation, the generate hooks on a tiny random Llama (left padding, raw logits), the task
checks and labels, the calibration split, and one clear error per named bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import entropy as scipy_entropy

from icml26.serving.fatigue_index import (
    FatigueConfig,
    FatigueMonitor,
    FatigueProbe,
    FatigueStoppingCriteria,
    auroc,
    distinct_n,
    embedding_drift,
    fatigue_index,
    fatigue_trajectory,
    generate_with_fatigue,
    hysteresis_alert,
    make_suite,
    needle_task,
    phi_attention,
    phi_drift,
    phi_entropy,
    predictive_entropy,
    prompt_attention,
    repetition_ratio,
    smooth,
    spearman,
)

floats = st.floats(min_value=-50, max_value=50, allow_nan=False)


# ------------------------------------------------------------------------------------------ signals: exact values
def test_uniform_attention_gives_one_over_length_and_mass_k_over_length():
    L, k = 40, 16
    w = torch.full((2, 3, L), 1.0 / L)
    assert torch.allclose(prompt_attention(w, k=k), torch.full((2,), 1.0 / L))
    assert torch.allclose(prompt_attention(w, k=k, reduce="mass"), torch.full((2,), k / L))
    # a prompt shorter than K: the slice is the whole prompt
    assert torch.allclose(prompt_attention(w, prompt_start=[0, 0], prompt_length=[5, 5], k=64), torch.full((2,), 1 / L))


def test_attention_slice_skips_left_padding():
    torch.manual_seed(0)
    w = torch.softmax(torch.randn(1, 4, 30), dim=-1)
    pad = 7
    padded = torch.cat([torch.zeros(1, 4, pad), w], dim=-1)  # masked pad keys carry no weight
    a = prompt_attention(w, k=10, prompt_length=[20])
    b = prompt_attention(padded, prompt_start=[pad], prompt_length=[20], k=10)
    assert torch.allclose(a, b)
    assert torch.allclose(a, w[0, :, :10].mean(0).mean())  # mean over heads, then over the K positions


def test_identical_states_give_zero_drift_and_drift_is_the_euclidean_distance():
    h = torch.randn(3, 8)
    assert torch.equal(embedding_drift(h, h), torch.zeros(3))
    assert torch.allclose(embedding_drift(h + torch.tensor([3.0, 4.0] + [0.0] * 6), h), torch.full((3,), 5.0))


def test_uniform_logits_give_log_vocab_and_entropy_matches_scipy():
    assert torch.allclose(predictive_entropy(torch.zeros(2, 1000)), torch.full((2,), math.log(1000)))
    z = torch.randn(4, 50, generator=torch.Generator().manual_seed(1)) * 3
    ref = scipy_entropy(torch.softmax(z.double(), -1).numpy(), axis=-1)
    assert np.allclose(predictive_entropy(z).numpy(), ref, atol=1e-5)


def test_post_processed_scores_are_refused():
    z = torch.randn(2, 10)
    z[0, 3] = -math.inf
    with pytest.raises(ValueError, match="raw logits"):
        predictive_entropy(z)


# -------------------------------------------------------------------------------------- normalisers and the index
@given(st.lists(floats, min_size=2, max_size=20))
def test_normalisers_are_bounded(xs):
    x = np.array(xs)
    for phi in (phi_attention(x), phi_entropy(x), phi_drift(np.abs(x))):
        assert ((phi >= 0) & (phi <= 1)).all()


@given(floats, floats)
def test_normalisers_are_monotone(x, y):
    lo, hi = min(x, y), max(x, y)
    assert phi_attention(hi) <= phi_attention(lo)  # more attention to the prompt, less fatigue
    assert phi_drift(abs(hi) + abs(lo)) >= phi_drift(abs(lo))  # more drift, more fatigue
    band = (3.8, 5.0)
    if hi <= band[0]:  # below the band: less entropy, more fatigue
        assert phi_entropy(lo, band) >= phi_entropy(hi, band)
    if lo >= band[1]:  # above the band: more entropy, more fatigue
        assert phi_entropy(hi, band) >= phi_entropy(lo, band)


def test_phi_entropy_values_at_and_around_the_band():
    e = np.array([0.0, 1.9, 3.8, 4.4, 5.0, 7.5, 100.0])
    assert np.allclose(phi_entropy(e, (3.8, 5.0), 5.0), [1.0, 0.5, 0.0, 0.0, 0.0, 0.5, 1.0])


@given(st.lists(st.tuples(floats, floats, floats), min_size=1, max_size=10))
def test_fatigue_index_is_the_weighted_sum_and_bounded(rows):
    a, e, d = (np.array(c) for c in zip(*rows, strict=True))
    d = np.abs(d)
    cfg = FatigueConfig()
    fi = fatigue_index(a, e, d, cfg)
    expected = 0.40 * phi_attention(a) + 0.35 * phi_entropy(e, (3.8, 5.0), 5.0) + 0.25 * phi_drift(d, 20.0)
    assert np.allclose(fi, expected)
    assert ((fi >= 0) & (fi <= 1)).all()


def test_smooth_is_the_trailing_mean():
    x = np.random.default_rng(0).random((3, 17))
    s = smooth(x, 5)
    brute = np.stack([x[:, max(0, t - 4) : t + 1].mean(axis=1) for t in range(17)], axis=1)
    assert np.allclose(s, brute)


@pytest.mark.parametrize("level", [0.0, 0.39, 0.45, 0.5, 0.9])
def test_hysteresis_does_not_chatter_on_constant_input(level):
    a = hysteresis_alert(np.full(50, level), 0.5, 0.4)
    assert (a == a[0]).all()
    assert a[0] == (level >= 0.5)


def test_hysteresis_holds_between_the_thresholds():
    s = np.array([0.3, 0.55, 0.45, 0.42, 0.41, 0.40, 0.45, 0.49, 0.5, 0.3])
    assert hysteresis_alert(s, 0.5, 0.4).tolist() == [0, 1, 1, 1, 1, 0, 0, 0, 1, 0]
    noisy = 0.45 + 0.04 * np.sin(np.arange(200))  # oscillates inside (off, on): never switches
    assert not hysteresis_alert(noisy, 0.5, 0.4).any()


def test_online_monitor_equals_offline_recomputation():
    rng = np.random.default_rng(3)
    a, e, d = rng.random((2, 30)) * 0.1, rng.random((2, 30)) * 8, rng.random((2, 30)) * 30
    cfg = FatigueConfig()
    mon = FatigueMonitor(cfg)
    online = [mon.update(a[:, t], e[:, t], d[:, t]) for t in range(30)]
    off = fatigue_trajectory(a, e, d, cfg)
    assert np.array_equal(np.stack([o[0] for o in online], 1), off["smoothed"])
    assert np.array_equal(np.stack([o[1] for o in online], 1), off["alert"])
    assert np.array_equal(mon.history["fi"], off["fi"])
    fi, alert = FatigueMonitor(cfg).update(0.01, 2.0, 10.0)  # scalars in, scalars out
    assert isinstance(fi, float) and isinstance(alert, bool)


@pytest.mark.parametrize(
    "changes",
    [
        {"weights": (0.5, 0.5, 0.5)},
        {"weights": (1.2, -0.1, -0.1)},
        {"entropy_band": (5.0, 3.8)},
        {"drift_kappa": 0.0},
        {"entropy_beta": float("nan")},
        {"hysteresis": (0.4, 0.5)},
        {"probe_every": 0},
        {"attention_reduce": "max"},
    ],
)
def test_config_rejects_bad_constants(changes):
    with pytest.raises(ValueError, match=next(iter(changes))):
        FatigueConfig(**changes)


def test_nan_signal_is_refused():
    with pytest.raises(ValueError, match="NaN"):
        fatigue_index(np.nan, 1.0, 1.0)


# -------------------------------------------------------------------------------------------------- calibration
class _T:  # a minimal trace for calibrate
    def __init__(self, entropy, drift):
        self.entropy, self.drift = np.asarray(entropy, float), np.asarray(drift, float)


def test_calibration_quantiles_and_freezing():
    rng = np.random.default_rng(0)
    traces = [_T(rng.normal(2.0, 0.3, 40), rng.normal(50, 5, 40)) for _ in range(10)]
    cfg = FatigueConfig().calibrate(traces, prefix_fraction=1.0)
    e = np.concatenate([t.entropy for t in traces])
    d = np.concatenate([t.drift for t in traces])
    assert np.allclose(cfg.entropy_band, np.quantile(e, [0.1, 0.9]))
    assert math.isclose(cfg.drift_kappa, np.quantile(d, 0.95))
    assert math.isclose(cfg.entropy_beta, np.quantile(e, 0.99) - cfg.entropy_band[1])
    assert cfg.weights == FatigueConfig().weights and cfg.hysteresis == FatigueConfig().hysteresis
    with pytest.raises(ValueError, match="empty"):
        FatigueConfig().calibrate([])


def test_calibration_never_sees_the_evaluation_split(monkeypatch):
    from icml26._core import Cell
    from icml26.serving.fatigue_index import config as config_module
    from icml26.serving.fatigue_index import reproduce

    seen = []
    original = config_module.FatigueConfig.calibrate

    def spy(self, traces, healthy=None, prefix_fraction=0.25):
        seen.append(list(traces))
        return original(self, traces, healthy, prefix_fraction)

    monkeypatch.setattr(config_module.FatigueConfig, "calibrate", spy)
    setting = reproduce.CARD.claim("C1").profiles["smoke"].settings[0]
    out = reproduce.run_suite(Cell("fatigue_index", "C1", "smoke", dict(setting), 0))
    rows = out["curves"]["sequences"]
    calibrated_ids = {id(t) for t in seen[0]}
    assert len(seen) == 1 and len(seen[0]) == sum(r["calibration"] for r in rows) > 0
    assert out["info"]["evaluated"] == sum(not r["calibration"] for r in rows)
    cal_prompts = {r["prompt"] for r in rows if r["calibration"]}
    ev_prompts = {r["prompt"] for r in rows if not r["calibration"]}
    assert not cal_prompts & ev_prompts  # split by prompt: no prompt on both sides, whatever the decoding
    assert len(calibrated_ids) == len(seen[0])


# ---------------------------------------------------------------------------------- generation hooks, tiny Llama
@pytest.fixture(scope="module")
def tiny():
    from icml26.models import tiny_llama

    model = tiny_llama(seed=1, max_position_embeddings=128, attn_implementation="eager")
    return model


def test_left_padding_does_not_change_the_signals(tiny):
    short, long = [5, 9, 2, 33, 7, 1], list(range(3, 21))
    cfg = FatigueConfig(prompt_slice_k=4, probe_every=1)
    alone = generate_with_fatigue(tiny, None, [short], cfg, max_new_tokens=10, do_sample=False)[0]
    batch = generate_with_fatigue(tiny, None, [short, long], cfg, max_new_tokens=10, do_sample=False)[0]
    assert np.array_equal(alone.token_ids, batch.token_ids)
    for name in ("attention", "entropy", "drift", "logprob"):
        assert np.allclose(getattr(alone, name), getattr(batch, name), atol=1e-4), name
    assert alone.steps.tolist() == list(range(1, 10))  # step 0 (the prompt) is the reference, not a probe


def test_hooked_entropy_equals_generate_output_logits_and_online_equals_offline(tiny):
    from transformers import StoppingCriteriaList

    cfg = FatigueConfig(probe_every=2, smooth_window=3, hysteresis=(0.3, 0.2))
    ids = torch.tensor([[1, 2, 3, 4, 5, 6, 7, 8]])
    probe = FatigueProbe(tiny, cfg)
    probe.begin(torch.ones_like(ids))
    crit = FatigueStoppingCriteria(probe)
    with probe, torch.no_grad():
        out = tiny.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=9,
            do_sample=True,
            top_p=0.5,
            temperature=0.7,
            output_logits=True,
            return_dict_in_generate=True,
            stopping_criteria=StoppingCriteriaList([crit]),
            pad_token_id=0,
        )
    raw = torch.stack(out.logits, 1)[0]  # (steps, vocab), before temperature and top-p
    assert crit.steps == [2, 4, 6, 8]
    expected = predictive_entropy(raw[crit.steps]).numpy()
    assert np.allclose(np.stack(crit.signals["entropy"], -1)[0], expected, atol=1e-5)
    chosen = out.sequences[0, ids.shape[1] :]
    lp = torch.log_softmax(raw, -1).gather(1, chosen[:, None])[:, 0].numpy()
    assert np.allclose(np.stack(crit.logprob, -1)[0], lp, atol=1e-5)
    hist = crit.monitor.history
    sig = {k: np.stack(v, -1) for k, v in crit.signals.items()}
    off = fatigue_trajectory(sig["attention"], sig["entropy"], sig["drift"], cfg)
    for k in ("fi", "smoothed", "alert"):
        assert np.array_equal(hist[k], off[k]), k


def test_stop_on_alert_cuts_the_trace(tiny):
    cfg = FatigueConfig(hysteresis=(0.05, 0.0), probe_every=1, smooth_window=1)  # fires at once on any model
    tr = generate_with_fatigue(tiny, None, [[1, 2, 3]], cfg, max_new_tokens=12, do_sample=False, stop_on_alert=True)[0]
    assert tr.onset == 1 and len(tr.token_ids) == 2


# ------------------------------------------------------------------------------------------------ bad inputs
def test_a_model_without_eager_attention_is_refused():
    from icml26.models import tiny_llama

    model = tiny_llama(attn_implementation="sdpa")
    with pytest.raises(ValueError, match="eager"):
        generate_with_fatigue(model, None, [[1, 2, 3]], max_new_tokens=2)


def test_empty_prompts_are_refused(tiny):
    with pytest.raises(ValueError, match="empty"):
        generate_with_fatigue(tiny, None, [], max_new_tokens=2)
    with pytest.raises(ValueError, match="empty prompt"):
        generate_with_fatigue(tiny, None, [[1, 2], []], max_new_tokens=2)
    probe = FatigueProbe(tiny)
    with pytest.raises(ValueError, match="empty prompt"):
        probe.begin(torch.tensor([[1, 1], [0, 0]]))
    with pytest.raises(ValueError, match="left-padded"):
        probe.begin(torch.tensor([[1, 0], [1, 1]]))


def test_generation_without_logits_is_refused(tiny):
    crit = FatigueStoppingCriteria(FatigueProbe(tiny))
    with pytest.raises(RuntimeError, match="no logits"):
        crit(torch.tensor([[1, 2]]), None)


# --------------------------------------------------------------------------------------------- tasks and labels
def test_repetition_and_distinct_n_exact_values():
    assert repetition_ratio("a b c a b c a b c") == pytest.approx(1 - 3 / 7)
    assert repetition_ratio("one two") == 0.0
    assert repetition_ratio("1. aloe\n2. aloe\n3. aloe\n4. aloe") == pytest.approx(1 - 1 / 2)  # numbers ignored
    assert distinct_n("a b a b", 2) == pytest.approx(2 / 3)
    assert distinct_n("a") == 1.0


def test_task_checks():
    suite = make_suite(0, per_family=1)
    enum, count, constraint, needle = suite
    assert [t.family for t in suite] == ["enumeration", "counting", "constraint", "needle"]
    assert enum.check("1. cat\n2. dog\n3. owl\n4. ca") and enum.fails("1. cat\n2. cat\n3. dog\n")
    a = count.meta["start"]
    assert count.check(", ".join(str(i) for i in range(a, a + 10)) + ", 1")
    assert count.fails(f"{a}, {a + 1}, {a + 3}, {a + 4}, ")
    good = "the sea is calm and blue today and the wind is soft"
    assert constraint.check(good) and constraint.fails("The " + good + ", Yes, ok")
    code = str(needle.meta["code"])
    assert code in needle.prompt and needle.check(f"It is {code}.") and needle.fails("I do not know.")
    rng = np.random.default_rng
    front, end = needle_task(rng(5), 50, "front"), needle_task(rng(5), 50, "end")
    assert front.meta["code"] == end.meta["code"] and front.prompt.startswith("(The secret number")
    assert make_suite(3) == make_suite(3)


def test_metrics_refuse_degenerate_inputs():
    with pytest.raises(ValueError, match="both classes"):
        auroc([True, True, True], [0.1, 0.2, 0.3])
    assert auroc([False, True, False, True], [0.1, 0.9, 0.2, 0.8]) == 1.0
    assert spearman([1, 1, 1, 1], [1, 2, 3, 4]) == 0.0
    assert spearman([1, 2, 3, 4], [2, 4, 6, 9]) == pytest.approx(1.0)
