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


def test_trm_hook_ignores_the_advantage_sign_and_uses_the_max():
    pytest.importorskip("trl")
    from icml26.llm.trm.trainer import TRMGRPOTrainer

    trainer = TRMGRPOTrainer.__new__(TRMGRPOTrainer)  # the hook only needs its TRM settings and metrics
    trainer.trm_estimator, trainer.trm_reduce, trainer.model = "k2", "max", None
    from collections import defaultdict

    trainer._metrics = {"train": defaultdict(list), "eval": defaultdict(list)}
    sampling = torch.full((3, 50), -1.0)
    current = sampling.clone()
    current[0, 10] = -3.0  # one spike, positive advantage: OPSM would keep it
    current[2, 5] = float("nan")
    sampling[2, 5] = float("nan")  # an unscorable token gives no evidence (as in TRL)
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


def test_trm_grpo_trainer_runs_one_offline_step(tiny_trl_setup, tmp_path):
    """One GRPOTrainer step on a tiny random Llama with a bf16-rounded rollout_func: the TRM hook is called, logs
    its masked fraction, and (bf16 rounding alone staying inside delta) the step updates the weights."""
    from datasets import Dataset
    from trl import GRPOConfig

    from icml26.llm.trm import TRMGRPOTrainer, make_rollout_func

    model, tokenizer = tiny_trl_setup
    roll = MismatchedRollout(model, precision="bf16")
    args = GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=4,
        num_generations=4,
        max_steps=1,
        max_completion_length=5,
        report_to="none",
        use_cpu=True,
        logging_steps=1,
        save_strategy="no",
    )
    trainer = TRMGRPOTrainer(
        model=model,
        reward_funcs=lambda completions, **kw: [float("3" in c) for c in completions],
        args=args,
        train_dataset=Dataset.from_dict({"prompt": ["1 + 2 =", "3 + 4 ="] * 4}),
        processing_class=tokenizer,
        rollout_func=make_rollout_func(roll, 5),
        trm_delta=0.05,
    )
    assert trainer.off_policy_mask_threshold == 0.05
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
        trm_delta=0.05,
    )
    trainer.train()
    assert trainer.state.log_history[0]["trm/masked_fraction"] > 0.5

    with pytest.raises(ValueError, match="trm_delta"):
        TRMGRPOTrainer(model=model, reward_funcs=[], args=args, trm_delta=0.0)
    with pytest.warns(UserWarning, match="pi_old"):
        TRMGRPOTrainer(
            model=model,
            reward_funcs=lambda completions, **kw: [0.0] * len(completions),
            args=args,
            train_dataset=Dataset.from_dict({"prompt": ["1 + 2 ="] * 4}),
            processing_class=tokenizer,
        )
