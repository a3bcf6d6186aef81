"""Trust Region Masking: exact bound checks on enumerable policies, mask and loss invariants (padding, monotonicity,
no mismatch), bad input, the mismatched rollout engine, and one offline TRL GRPO step with the TRM hook."""

import math
import os

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.llm.trm import (
    GRUPolicy,
    MismatchedRollout,
    TabularPolicy,
    classical,
    exact_surrogate_error,
    masked_policy_loss,
    mixed,
    opsm_mask,
    pinsker_marginal,
    token_divergence,
    top_p_filter,
    trust_region_mask,
    worst_case_reward,
)


# ------------------------------------------------------------------------------------------------- bounds
def test_bound_constants_are_pinned():
    """The paper's example (T = 4096, D = 1e-4, eps = 1) and our derived constants."""
    assert classical(4096, 1e-4) == pytest.approx(4096 * 4095 * 1e-4)
    assert classical(4096, 1e-4) == pytest.approx(1677.3, abs=0.1)
    assert pinsker_marginal(4096, 1e-4) == pytest.approx(2e-4 * np.sqrt(np.arange(4096)).sum())
    assert pinsker_marginal(4096, 1e-4) <= 4 / 3 * 1e-4 * 4096**1.5
    assert mixed(4096, 1e-4) == pytest.approx(2 * math.sqrt(2) * 4096 * 1e-2)
    assert mixed(10, 0.1, d_seq=8.0) == pytest.approx(mixed(10, 0.1))  # the TV factor saturates at 1
    assert mixed(10, 0.1, d_seq=0.02) == pytest.approx(mixed(10, 0.1) * 0.1)
    np.testing.assert_allclose(classical([1, 2, 3], 1.0), [0.0, 2.0, 6.0])
    with pytest.raises(ValueError, match="positive integer"):
        classical(0, 0.1)
    with pytest.raises(ValueError, match="d_max"):
        pinsker_marginal(4, -1.0)


@pytest.mark.parametrize("vocab", [2, 3])
def test_bounds_hold_exhaustively(vocab):
    """Every bound exceeds the exact |J - L| for random and worst-case rewards (the two surrogate forms agree
    inside ``exact_surrogate_error``, which raises otherwise)."""
    rng = np.random.default_rng(vocab)
    for T in range(1, 7):
        for sd in (0.02, 0.3, 1.5):
            base = TabularPolicy.random(vocab, T, rng)
            roll, theta = base.perturbed(rng, sd), base.perturbed(rng, sd)
            worst = worst_case_reward(roll, theta)
            for reward in (rng.random(vocab**T), worst):
                check = exact_surrogate_error(roll, theta, reward)
                assert check.d_seq <= T * check.d_max + 1e-12  # chain rule
                assert check.tv_max <= math.sqrt(check.d_max / 2) + 1e-12  # Pinsker
                for name, bound in check.bounds.items():
                    assert check.error <= bound + 1e-12, (vocab, T, sd, name, check)
            random_error = exact_surrogate_error(roll, theta, rng.random(vocab**T)).error
            assert exact_surrogate_error(roll, theta, worst).error >= random_error - 1e-12


@pytest.mark.parametrize("d", [0.05, 0.01])
def test_bounds_are_attained_at_t2(d):
    """The bounds are sharp, so an inflated constant would be caught: at T = 2, V = 2, pi_roll uniform and
    pi_theta a small perturbation (y_2's preference flipped with y_1), the worst-case |J - L| reaches the
    classical = Pinsker-marginal bound 2 eps D_max up to O(d^2)."""
    roll = TabularPolicy((np.zeros((1, 2)), np.zeros((2, 2))))
    theta = TabularPolicy((np.array([[d, -d]]), np.array([[d, -d], [-d, d]])))
    check = exact_surrogate_error(roll, theta, worst_case_reward(roll, theta))
    assert check.bounds["classical"] == pytest.approx(check.bounds["pinsker_marginal"])
    ratio = check.error / check.bounds["pinsker_marginal"]
    assert 1 - 2 * d**2 <= ratio <= 1 + 1e-12


def test_no_mismatch_means_no_error_and_zero_bounds():
    rng = np.random.default_rng(0)
    policy = TabularPolicy.random(3, 4, rng)
    check = exact_surrogate_error(policy, policy, rng.random(81))
    assert check.error == pytest.approx(0.0, abs=1e-14)
    assert check.d_max == pytest.approx(0.0, abs=1e-14)
    assert check.bounds["classical"] == pytest.approx(0.0, abs=1e-12)


def test_exact_check_rejects_bad_rewards():
    rng = np.random.default_rng(0)
    policy = TabularPolicy.random(2, 3, rng)
    with pytest.raises(ValueError, match="V\\*\\*T"):
        exact_surrogate_error(policy, policy, np.zeros(7))
    with pytest.raises(ValueError, match="\\[0, 1\\]"):
        exact_surrogate_error(policy, policy, np.full(8, 2.0))


# ------------------------------------------------------------------------------------------------ masking
def _batch(seed=0, B=6, T=9):
    g = torch.Generator().manual_seed(seed)
    logp_roll = -torch.rand(B, T, generator=g) * 3
    logp_cur = logp_roll + 0.3 * torch.randn(B, T, generator=g)
    lengths = torch.randint(1, T + 1, (B,), generator=g)
    mask = (torch.arange(T)[None, :] < lengths[:, None]).float()
    return logp_cur, logp_roll, mask


@pytest.mark.parametrize("kind", ["abs_log_ratio", "k2", "k3"])
def test_no_masking_without_mismatch(kind):
    _, logp_roll, mask = _batch()
    div = token_divergence(logp_roll.clone(), logp_roll, mask, kind)
    assert torch.equal(div, torch.zeros_like(div))
    for reduce in ("max", "mean"):
        assert trust_region_mask(div, mask, 1e-9, reduce).eq(1).all()


def test_no_masking_from_an_uncorrupted_engine():
    """An fp32 engine without spikes, top-p or staleness reproduces the trainer's log-probs: nothing is masked."""
    torch.manual_seed(0)
    policy = GRUPolicy(5, 8)
    out = MismatchedRollout(policy, precision="fp32").sample(16, 12, torch.Generator().manual_seed(1))
    logp_cur, full = policy.token_log_probs(out.tokens)
    mask = torch.ones(16, 12)
    div = token_divergence(logp_cur, out.logp_roll, mask, "k2")
    assert div.max() < 1e-10
    exact = token_divergence(logp_cur, out.logp_roll, mask, "exact", logits_cur=full, logits_roll=out.logits_roll)
    assert exact.max() < 1e-6
    assert trust_region_mask(div, mask, 1e-6).eq(1).all()


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 10_000),
    st.floats(1e-4, 2.0),
    st.floats(1e-4, 2.0),
    st.sampled_from(["max", "mean"]),
)
def test_mask_is_monotone_in_delta(seed, d1, d2, reduce):
    logp_cur, logp_roll, mask = _batch(seed)
    div = token_divergence(logp_cur, logp_roll, mask, "k2")
    lo, hi = sorted((d1, d2))
    assert (trust_region_mask(div, mask, lo, reduce) <= trust_region_mask(div, mask, hi, reduce)).all()


def test_max_criterion_catches_a_single_spike_that_the_mean_and_opsm_miss():
    T = 200
    logp_roll = torch.full((2, T), -1.0)
    logp_cur = logp_roll.clone()
    logp_cur[0, 50] = -4.0  # one token 20x less likely under pi_theta
    mask = torch.ones(2, T)
    adv = torch.tensor([1.0, -1.0])
    div = token_divergence(logp_cur, logp_roll, mask, "k2")
    assert trust_region_mask(div, mask, 0.24).flatten().tolist() == [0.0, 1.0]
    assert trust_region_mask(div, mask, 0.24, "mean").flatten().tolist() == [1.0, 1.0]
    assert opsm_mask(adv, logp_cur, logp_roll, mask, 0.01).flatten().tolist() == [1.0, 1.0]  # positive advantage


def test_k3_is_asymmetric_as_documented():
    mask = torch.ones(1, 2)
    div = token_divergence(torch.log(torch.tensor([[100.0, 0.01]])), torch.zeros(1, 2), mask, "k3")
    assert div[0, 0] == pytest.approx(100 - 1 - math.log(100))
    assert div[0, 1] == pytest.approx(0.01 - 1 - math.log(0.01))


def test_exact_kl_matches_the_definition_and_handles_top_p_support():
    g = torch.Generator().manual_seed(0)
    logits_cur, logits_roll = torch.randn(2, 3, 5, generator=g), torch.randn(2, 3, 5, generator=g)
    logits_roll = top_p_filter(logits_roll, 0.7)
    mask = torch.ones(2, 3)
    kl = token_divergence(mask, mask, mask, "exact", logits_cur=logits_cur, logits_roll=logits_roll)
    p = logits_roll.softmax(-1)
    lp_cur = logits_cur.log_softmax(-1)
    expected = sum(
        (p[..., v] * (p[..., v].clamp_min(1e-30).log() - lp_cur[..., v])) * (p[..., v] > 0) for v in range(5)
    )
    torch.testing.assert_close(kl, expected, atol=1e-6, rtol=1e-5)
    assert torch.isfinite(kl).all()


def test_padding_never_leaks():
    """NaN, inf or garbage at padded positions changes no divergence, mask, loss or gradient."""
    logp_cur, logp_roll, mask = _batch(3)
    adv = torch.randn(6)
    pad = mask == 0
    assert pad.any()
    garbage_cur = logp_cur.masked_fill(pad, float("nan"))
    garbage_roll = logp_roll.masked_fill(pad, 1e6)
    for kind in ("abs_log_ratio", "k2", "k3"):
        a = token_divergence(logp_cur, logp_roll, mask, kind)
        b = token_divergence(garbage_cur, garbage_roll, mask, kind)
        torch.testing.assert_close(a, b)
        for reduce in ("max", "mean"):
            torch.testing.assert_close(
                trust_region_mask(a, mask, 0.05, reduce), trust_region_mask(b, mask, 0.05, reduce)
            )
    grads, losses = [], []
    for cur, roll in ((logp_cur, logp_roll), (garbage_cur, garbage_roll)):
        leaf = cur.clone().requires_grad_(True)
        out = masked_policy_loss(leaf, cur.detach(), roll, adv, mask, delta=0.05)
        out.loss.backward()
        losses.append(out.loss.detach())
        grads.append(leaf.grad)
    torch.testing.assert_close(losses[0], losses[1])
    torch.testing.assert_close(grads[0], grads[1])
    assert torch.isfinite(grads[1]).all()
    assert grads[1][pad].eq(0).all()


def test_loss_normalisation_and_masked_fraction():
    logp_cur, logp_roll, mask = _batch(4)
    adv = torch.randn(6)
    ref = masked_policy_loss(logp_cur, logp_cur, logp_roll, adv, mask, delta=None)
    assert ref.masked_fraction == 0.0 and ref.kept_tokens == int(mask.sum())
    delta = float(token_divergence(logp_cur, logp_roll, mask, "k2").amax(1).median())
    all_tok = masked_policy_loss(logp_cur, logp_cur, logp_roll, adv, mask, delta=delta)
    kept_tok = masked_policy_loss(logp_cur, logp_cur, logp_roll, adv, mask, delta=delta, normalize="kept_tokens")
    assert 0 < all_tok.masked_fraction < 1
    assert kept_tok.loss * kept_tok.kept_tokens == pytest.approx(float(all_tok.loss * mask.sum()), rel=1e-5)
    # the loss at theta = pi_old equals -mean of w A over kept tokens (clipping inactive)
    w = (logp_cur - logp_roll).exp().clamp(max=3.0) * mask
    keep = trust_region_mask(token_divergence(logp_cur, logp_roll, mask, "k2"), mask, delta)
    expected = -(w * keep * adv[:, None]).sum() / mask.sum()
    assert float(all_tok.loss) == pytest.approx(float(expected), rel=1e-5)


def test_everything_masked_gives_a_zero_loss_with_a_graph():
    _, logp_roll, mask = _batch(5)
    leaf = (logp_roll + 5.0).requires_grad_(True)
    out = masked_policy_loss(leaf, leaf.detach(), logp_roll, torch.ones(6), mask, delta=1e-3)
    assert out.masked_fraction == 1.0 and out.kept_tokens == 0
    assert float(out.loss.detach()) == 0.0
    out.loss.backward()
    assert leaf.grad.eq(0).all()


def test_bad_input_raises_clear_errors():
    logp_cur, logp_roll, mask = _batch()
    div = token_divergence(logp_cur, logp_roll, mask)
    with pytest.raises(ValueError, match="same shape"):
        token_divergence(logp_cur[:, :3], logp_roll, mask)
    with pytest.raises(ValueError, match="mask has shape"):
        token_divergence(logp_cur, logp_roll, mask[:, :3])
    with pytest.raises(ValueError, match="kind"):
        token_divergence(logp_cur, logp_roll, mask, "k4")
    with pytest.raises(ValueError, match="logits"):
        token_divergence(logp_cur, logp_roll, mask, "exact")
    for delta in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="delta"):
            trust_region_mask(div, mask, delta)
    with pytest.raises(ValueError, match="reduce"):
        trust_region_mask(div, mask, 0.1, "min")
    with pytest.raises(ValueError, match="adv"):
        masked_policy_loss(logp_cur, logp_cur, logp_roll, torch.ones(5), mask, delta=0.1)
    with pytest.raises(ValueError, match="normalize"):
        masked_policy_loss(logp_cur, logp_cur, logp_roll, torch.ones(6), mask, delta=0.1, normalize="seq")
    # an empty batch and an all-padding row are documented behaviour: kept, no loss, no NaN
    empty = torch.zeros(0, 4)
    assert trust_region_mask(empty, empty, 0.1).shape == (0, 1)
    row_pad = mask.clone()
    row_pad[0] = 0
    assert trust_region_mask(div, row_pad, 1e-9)[0, 0] == 1.0


# -------------------------------------------------------------------------------------------- rollout engine
def test_mismatched_rollout_corruptions_and_staleness():
    torch.manual_seed(0)
    policy = GRUPolicy(6, 8)
    g = torch.Generator().manual_seed(0)
    out = MismatchedRollout(policy, spike_p=1.0, spike_sd=5.0).sample(8, 10, g)
    assert out.spiked.all()
    logp_cur, _ = policy.token_log_probs(out.tokens)
    assert token_divergence(logp_cur, out.logp_roll, torch.ones(8, 10), "k2").max() > 0.1
    nucleus = MismatchedRollout(policy, precision="fp32", top_p=0.5).sample(8, 10, g)
    assert torch.isinf(nucleus.logits_roll).any() and torch.isfinite(nucleus.logp_roll).all()
    stale = MismatchedRollout(policy, precision="fp32", staleness=2)
    before = {k: v.clone() for k, v in policy.state_dict().items()}
    with torch.no_grad():
        for _ in range(2):
            policy.head.bias.add_(1.0)
            stale.sync()
    stale.sample(1, 1, g)
    assert torch.equal(stale._engine.head.bias, before["head.bias"])  # two syncs ago = the initial weights
    with pytest.raises(ValueError, match="top_p"):
        MismatchedRollout(policy, top_p=0.0)


# ------------------------------------------------------------------------------------------------------ TRL
@pytest.fixture(scope="module")
def tiny_trl_setup():
    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    os.environ["HF_HUB_OFFLINE"] = "1"
    pytest.importorskip("trl")
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    words = ["<pad>", "<eos>", "<unk>", *map(str, range(10)), "+", "="]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(words),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=1,
    )
    return LlamaForCausalLM(config), tokenizer


def _bare_hook():
    """A TRMGRPOTrainer without __init__: the hook only needs its TRM settings and metrics."""
    from collections import defaultdict

    from icml26.llm.trm.trainer import TRMGRPOTrainer

    trainer = TRMGRPOTrainer.__new__(TRMGRPOTrainer)
    trainer.trm_estimator, trainer.trm_reduce, trainer.model = "k2", "max", None
    trainer._metrics = {"train": defaultdict(list), "eval": defaultdict(list)}
    return trainer


def test_trm_hook_ignores_the_advantage_sign_and_uses_the_max():
    pytest.importorskip("trl")
    trainer = _bare_hook()
    sampling = torch.full((3, 50), -1.0)
    current = sampling.clone()
    current[0, 10] = -3.0  # one spike, positive advantage: OPSM would keep it
    sampling[2, 5] = float("nan")  # a token the engine could not score gives no evidence (as in TRL)
    mask = torch.ones(3, 50)
    mask[1, 40:] = 0
    current[1, 40:] = 100.0  # garbage in padding
    keep = trainer.get_off_policy_mask(
        advantages=torch.tensor([[1.0], [-1.0], [1.0]]),
        per_token_logps=current,
        sampling_per_token_logps=sampling,
        mask=mask,
        off_policy_threshold=0.24,
    )
    assert keep.flatten().tolist() == [0.0, 1.0, 1.0]
    assert trainer._metrics["train"]["trm/masked_fraction"] == [pytest.approx(1 / 3)]


def test_nan_handling_agrees_between_the_core_and_the_trl_hook():
    """One rule on both paths: NaN engine log-prob at a valid token = no evidence (like TRL's own OPSM, which
    keeps such a sequence); NaN trained-policy log-prob at a valid token = ValueError."""
    pytest.importorskip("trl")
    from trl import GRPOTrainer

    trainer = _bare_hook()
    logp_cur, logp_roll, mask = _batch(7)
    logp_roll = logp_roll.clone()
    logp_roll[:, 0] = float("nan")  # every row has an unscored valid token
    adv = -torch.ones(6, 1)
    for delta in (0.01, 0.05, 1.0):
        core = trust_region_mask(token_divergence(logp_cur, logp_roll, mask, "k2"), mask, delta)
        hook = trainer.get_off_policy_mask(adv, logp_cur, logp_roll, mask, delta)
        assert torch.equal(core, hook)
        # the NaN token counts as zero divergence: same mask as with that token scored perfectly
        scored = logp_roll.clone()
        scored[:, 0] = logp_cur[:, 0]
        assert torch.equal(core, trust_region_mask(token_divergence(logp_cur, scored, mask, "k2"), mask, delta))
    # TRL's own OPSM on the same input: NaN is no evidence there too (a finite mean, no drop from the NaN alone)
    assert GRPOTrainer.get_off_policy_mask(adv, logp_cur, logp_roll, mask, 10.0).eq(1).all()
    broken = logp_cur.clone()
    broken[2, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN at a valid token"):
        token_divergence(broken, logp_roll, mask)
    with pytest.raises(ValueError, match="NaN at a valid token"):
        trainer.get_off_policy_mask(adv, broken, logp_roll, mask, 0.05)
    with pytest.raises(ValueError, match="NaN at a valid token"):
        masked_policy_loss(broken, logp_cur, logp_roll, adv[:, 0], mask, delta=0.05)
    with pytest.raises(ValueError, match="logp_old"):
        masked_policy_loss(logp_cur, broken, logp_roll, adv[:, 0], mask, delta=0.05)
    # the loss treats an unscored token as TRL does: importance weight 1, finite loss
    out = masked_policy_loss(logp_cur, logp_cur, logp_roll, adv[:, 0], mask, delta=0.05)
    assert torch.isfinite(out.loss)


def test_trm_grpo_trainer_runs_one_offline_step(tiny_trl_setup, tmp_path):
    """One GRPOTrainer step on a tiny random Llama with a bf16-rounded rollout_func: the TRM hook is called, logs
    its masked fraction, and (bf16 rounding alone staying inside delta) the step updates the weights."""
    from datasets import Dataset

    from icml26.llm.trm import TRMGRPOConfig, TRMGRPOTrainer, make_rollout_func

    model, tokenizer = tiny_trl_setup
    roll = MismatchedRollout(model, precision="bf16")
    args = TRMGRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=4,
        num_generations=4,
        max_steps=1,
        max_completion_length=5,
        report_to="none",
        use_cpu=True,
        logging_steps=1,
        save_strategy="no",
        trm_delta=0.05,
    )
    assert args.off_policy_mask_threshold == 0.05
    trainer = TRMGRPOTrainer(
        model=model,
        reward_funcs=lambda completions, **kw: [float("3" in c) for c in completions],
        args=args,
        train_dataset=Dataset.from_dict({"prompt": ["1 + 2 =", "3 + 4 ="] * 4}),
        processing_class=tokenizer,
        rollout_func=make_rollout_func(roll, 5),
    )
    assert trainer.off_policy_mask_threshold == 0.05 and trainer.trm_delta == 0.05
    before = [p.detach().clone() for p in model.parameters()]
    trainer.train()
    logs = trainer.state.log_history[0]
    assert logs["trm/masked_fraction"] == 0.0
    assert math.isfinite(logs["loss"])
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))

    # The hook sees the engine's log-probs (pi_roll), not a recomputed pi_old: an engine whose every token is
    # spiked must get sequences masked (against pi_old the divergence would be 0 and nothing masked).
    spiky = MismatchedRollout(model, precision="bf16", spike_p=1.0, spike_sd=5.0)
    trainer = TRMGRPOTrainer(
        model=model,
        reward_funcs=lambda completions, **kw: [float("3" in c) for c in completions],
        args=args,
        train_dataset=Dataset.from_dict({"prompt": ["1 + 2 =", "3 + 4 ="] * 4}),
        processing_class=tokenizer,
        rollout_func=make_rollout_func(spiky, 5),
    )
    trainer.train()
    assert trainer.state.log_history[0]["trm/masked_fraction"] > 0.5

    with pytest.warns(UserWarning, match="pi_old"):
        TRMGRPOTrainer(
            model=model,
            reward_funcs=lambda completions, **kw: [0.0] * len(completions),
            args=args,
            train_dataset=Dataset.from_dict({"prompt": ["1 + 2 ="] * 4}),
            processing_class=tokenizer,
        )


def test_trm_config_is_a_grpo_config_and_never_touches_the_callers(tmp_path):
    pytest.importorskip("trl")
    from trl import GRPOConfig

    from icml26.llm.trm import TRMGRPOConfig, TRMGRPOTrainer

    common = {"output_dir": str(tmp_path), "report_to": "none", "use_cpu": True}
    plain = GRPOConfig(**common)
    args = TRMGRPOConfig(**common, trm_delta=0.1, trm_estimator="abs_log_ratio", trm_reduce="mean")
    assert isinstance(args, GRPOConfig) and args.off_policy_mask_threshold == 0.1
    assert plain.off_policy_mask_threshold is None  # building ours changed nothing of a plain config
    assert TRMGRPOConfig(**common, off_policy_mask_threshold=0.05).off_policy_mask_threshold == 0.05  # agrees
    for bad, match in (
        ({"trm_delta": 0.0}, "trm_delta"),
        ({"trm_delta": -1.0}, "trm_delta"),
        ({"trm_delta": float("nan")}, "trm_delta"),
        ({"trm_estimator": "exact"}, "trm_estimator"),
        ({"trm_reduce": "min"}, "trm_reduce"),
        ({"trm_delta": 0.1, "off_policy_mask_threshold": 0.5}, "conflicts"),
    ):
        with pytest.raises(ValueError, match=match):
            TRMGRPOConfig(**common, **bad)
    with pytest.warns(UserWarning, match="asymmetric"):
        TRMGRPOConfig(**common, trm_estimator="k3")
    # a plain GRPOConfig is refused with one clear error, before TRL builds anything
    with pytest.raises(TypeError, match="TRMGRPOConfig"):
        TRMGRPOTrainer(model=torch.nn.Linear(1, 1), reward_funcs=[], args=plain)
    assert plain.off_policy_mask_threshold is None


# ----------------------------------------------------------------------------------------------- bad input
def test_named_bad_inputs_get_one_clear_error_each():
    logp_cur, logp_roll, mask = _batch()
    adv = torch.ones(6)
    for bad in (-0.1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="clip_eps"):
            masked_policy_loss(logp_cur, logp_cur, logp_roll, adv, mask, delta=0.1, clip_eps=bad)
    for bad in (0.0, -1.0):
        with pytest.raises(ValueError, match="is_cap"):
            masked_policy_loss(logp_cur, logp_cur, logp_roll, adv, mask, delta=0.1, is_cap=bad)
        with pytest.raises(ValueError, match="delta"):
            masked_policy_loss(logp_cur, logp_cur, logp_roll, adv, mask, delta=bad)
    policy = GRUPolicy(4, 8)
    for bad in (-1.0, 0.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="temperature"):
            MismatchedRollout(policy, temperature=bad)
    with pytest.raises(ValueError, match="spike_sd"):
        MismatchedRollout(policy, spike_sd=float("nan"))
    with pytest.raises(ValueError, match="spike_p"):
        MismatchedRollout(policy, spike_p=1.5)
    with pytest.raises(ValueError, match="staleness"):
        MismatchedRollout(policy, staleness=1.5)
    with pytest.raises(ValueError, match="precision"):
        MismatchedRollout(policy, precision="fp8")
    rng = np.random.default_rng(0)
    tab = TabularPolicy.random(2, 3, rng)
    reward = rng.random(8)
    reward[3] = np.nan
    with pytest.raises(ValueError, match="NaN or inf"):
        exact_surrogate_error(tab, tab, reward)
    broken = TabularPolicy((tab.logits[0], tab.logits[1], np.full((4, 2), np.nan)))
    with pytest.raises(ValueError, match="policy_b has NaN"):
        exact_surrogate_error(tab, broken, np.zeros(8))
    with pytest.raises(ValueError, match="shape"):
        TabularPolicy((np.zeros((1, 2)), np.zeros((3, 2))))
    with pytest.raises(ValueError, match="kl"):
        tab.at_kl(rng, -0.1)
    # exact divergence: NaN engine logits = no evidence, NaN trainer logits = error
    logits_cur, logits_roll = torch.randn(2, 3, 4), torch.randn(2, 3, 4)
    ones = torch.ones(2, 3)
    logits_roll[0, 1] = float("nan")
    kl = token_divergence(ones, ones, ones, "exact", logits_cur=logits_cur, logits_roll=logits_roll)
    assert kl[0, 1] == 0 and torch.isfinite(kl).all()
    logits_cur[1, 2, 0] = float("nan")
    with pytest.raises(ValueError, match="logits_cur"):
        token_divergence(ones, ones, ones, "exact", logits_cur=logits_cur, logits_roll=logits_roll)
    with pytest.raises(ValueError, match="div is NaN"):
        trust_region_mask(torch.tensor([[0.1, float("nan")]]), torch.ones(1, 2), 0.5)


def test_an_infinite_ratio_at_a_valid_token_drops_the_sequence():
    logp_cur, logp_roll, mask = torch.zeros(2, 3), torch.zeros(2, 3), torch.ones(2, 3)
    logp_roll[0, 1] = -torch.inf  # the engine claims it could not have sampled this token
    keep = trust_region_mask(token_divergence(logp_cur, logp_roll, mask, "k2"), mask, 1.0)
    assert keep.flatten().tolist() == [0.0, 1.0]


# ------------------------------------------------------------------------------ formulas and constructions
def test_bound_formulas_have_the_abstract_exponents():
    """The long-horizon log-log slopes of the derived formulas (were claims C1b-d; a property of the formulas,
    independent of D_max and eps): 2, 1.5 and 1 over T in [64, 4096]."""
    Ts = np.array([64, 128, 256, 512, 1024, 2048, 4096])
    for bound, exponent in ((classical, 2.0), (pinsker_marginal, 1.5), (mixed, 1.0)):
        for d_max in (1e-4, 0.3):
            slope = np.polyfit(np.log(Ts), np.log(bound(Ts, d_max)), 1)[0]
            assert slope == pytest.approx(exponent, abs=0.01)


def test_policy_at_a_fixed_kl_in_every_context():
    rng = np.random.default_rng(3)
    roll = TabularPolicy.random(3, 4, rng)
    theta = roll.at_kl(rng, 0.02)
    for a, b in zip(roll.log_probs(), theta.log_probs(), strict=True):
        np.testing.assert_allclose((np.exp(a) * (a - b)).sum(-1), 0.02, rtol=1e-9)
    check = exact_surrogate_error(roll, theta, worst_case_reward(roll, theta))
    assert check.d_max == pytest.approx(0.02, rel=1e-9)
    assert check.d_seq == pytest.approx(4 * 0.02, rel=1e-9)  # chain rule: every context at the same KL
    assert roll.at_kl(rng, 0.0).logits[2] == pytest.approx(roll.logits[2])


def test_bias_estimate_removes_sampling_noise():
    """Independent Gaussian batch gradients with known means: the estimate recovers the true relative bias (0.3),
    where the plain distance between the two sample means is inflated by their noise."""
    from icml26.llm.trm.toy import bias_estimate

    g = torch.Generator().manual_seed(0)
    P, K, sd = 100, 200, 3.0
    ref = torch.ones(P) + sd * torch.randn(K, P, generator=g)
    est = 1.3 * torch.ones(P) + sd * torch.randn(K, P, generator=g)
    out = bias_estimate(est, ref)
    naive = float((est.mean(0) - ref.mean(0)).norm() / ref.mean(0).norm())
    assert out["relative_bias"] == pytest.approx(0.3, abs=0.06)
    assert out["norm_ratio"] == pytest.approx(1.3, abs=0.06)
    assert out["cosine"] == pytest.approx(1.0, abs=0.03)
    assert naive > out["relative_bias"] + 0.1  # about sqrt(0.3^2 + 2 sd^2 / K) = 0.42
    same = bias_estimate(torch.ones(P) + sd * torch.randn(K, P, generator=g), ref)
    assert same["relative_bias"] < 0.1 and same["noise"] == pytest.approx(np.sqrt(2 * sd**2 * P / K / P), rel=0.1)
    with pytest.raises(ValueError, match="two independent batches"):
        bias_estimate(est[:1], ref)


def test_token_mask_on_the_trust_region_masks_exactly_what_trm_detects():
    """TRL's token_mask with clip [1/2, 2] zeroes exactly the tokens with |log rho| > log 2; TRM-max at
    delta = (log 2)^2 / 2 drops exactly the sequences holding one: same detector, token vs sequence."""
    from icml26.llm.trm.toy import DELTA_MAX, method_weights

    logp_cur, logp_roll, mask = _batch(11)
    logp_cur = logp_roll + 1.2 * (logp_cur - logp_roll)  # wider spread: some tokens leave the factor-2 region
    outside = ((logp_cur - logp_roll).abs() > math.log(2)) & mask.bool()
    assert outside.any() and not outside.all()
    adv = torch.randn(6)
    w = method_weights("token_mask_tr", logp_cur, logp_roll, adv, mask)
    assert torch.equal(w == 0, outside | ~mask.bool())
    trm = method_weights("trm_max", logp_cur, logp_roll, adv, mask)
    assert torch.equal((trm.abs().sum(1) == 0), outside.any(1))
    assert math.isclose(DELTA_MAX, 0.5 * math.log(2) ** 2)


def test_no_mismatch_means_no_measured_gradient_bias():
    """An fp32 engine without spikes, top-p or staleness: every method is the on-policy estimator (all weights 1),
    so the uncoupled bias estimate stays within its own noise."""
    from icml26.llm.trm.toy import gradient_bias

    setting = {"vocab": 6, "hidden": 8, "sft_steps": 10, "spike_p": 0.0, "spike_sd": 0.0, "top_p": 1.0}
    setting |= {"staleness": 0, "stale_sd": 0.0, "reward": "dense", "n": 64, "batches": 4, "T": 8}
    out = gradient_bias({**setting, "precision": "fp32"}, seed=0)["metrics"]
    for m, v in out.items():
        assert v["masked_fraction"] == 0.0, m
        assert v["relative_bias"] <= v["noise"], m


# -------------------------------------------------------------------------------------------- benchmark
def test_benchmark_rows_tiny():
    pytest.importorskip("trl")
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_trm.py"
    spec = importlib.util.spec_from_file_location("bench_trm", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.rows("tiny")
    assert len(rows) == 3 and all(r.ours > 0 and r.anchor > 0 for r in rows)
    assert "TRL" in rows[0].anchor_name and "TRL" in rows[1].anchor_name
    with pytest.raises(ValueError, match="size"):
        module.rows("huge")
