"""Tie-aware alignment: likelihood closed forms, DPO losses and guards, the preference world, the TRL trainer."""

import math
import os

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.llm.tie_aware_alignment import (
    Arm,
    Objective,
    PreferenceWorld,
    ResolutionLimitedLabeler,
    davidson_log_probs,
    labels_from_is_tie,
    outcome_log_probs,
    rao_kupper_log_probs,
    tie_aware_loss,
    tie_dpo_loss,
    train_arms,
)
from icml26.llm.tie_aware_alignment.world import reward_at_matched_kl

D64 = torch.float64


def _naive_rk(d, nu):
    a = math.log(nu)
    win, lose = 1 / (1 + math.exp(-(d - a))), 1 / (1 + math.exp(d + a))
    return win, 1 - win - lose, lose


def _naive_davidson(d, nu):
    z = math.exp(d / 2) + math.exp(-d / 2) + nu
    return math.exp(d / 2) / z, nu / z, math.exp(-d / 2) / z


# ------------------------------------------------------------------------------------------- likelihoods
@settings(max_examples=200, deadline=None)
@given(d=st.floats(-60, 60), nu=st.floats(1.0, 50.0), model=st.sampled_from(["rao_kupper", "davidson"]))
def test_outcome_probabilities_sum_to_one_and_are_symmetric(d, nu, model):
    lp = outcome_log_probs(torch.tensor([d, -d], dtype=D64), nu, model)
    total = lp.win.exp() + lp.tie.exp() + lp.lose.exp()
    assert torch.allclose(total, torch.ones(2, dtype=D64), atol=1e-12)
    assert torch.isfinite(lp.win).all() and torch.isfinite(lp.lose).all()
    # swapping the pair swaps win and lose; a tie has no orientation
    assert torch.allclose(lp.win[0], lp.lose[1]) and torch.allclose(lp.tie[0], lp.tie[1], equal_nan=True)


@pytest.mark.parametrize("nu", [1.1, 2.0, 4.0])
@pytest.mark.parametrize("d", [-4.0, -0.7, 0.0, 0.3, 2.5])
def test_closed_forms_match_the_definitions(d, nu):
    for fn, naive in ((rao_kupper_log_probs, _naive_rk), (davidson_log_probs, _naive_davidson)):
        lp = fn(torch.tensor([d], dtype=D64), nu)
        got = [float(v.exp()) for v in (lp.win, lp.tie, lp.lose)]
        assert got == pytest.approx(naive(d, nu), rel=1e-12, abs=1e-15)


def test_rao_kupper_tie_is_stable_where_the_subtraction_cancels():
    """1 - sigma(d - a) - sigma(-d - a) is 0 (or negative) in float64 for |d| >~ 37; the closed form in log space
    matches the analytic asymptote log((nu^2 - 1)/nu) - |d| to 1e-12."""
    nu = 2.0
    for d in (40.0, -40.0, 200.0, -700.0):
        tie = float(rao_kupper_log_probs(torch.tensor([d], dtype=D64), nu).tie)
        exact = (
            math.log(nu**2 - 1)
            - abs(d)
            - math.log(nu)
            - math.log1p(math.exp(-abs(d)) / nu)
            - math.log1p(nu * math.exp(-abs(d)))
        )
        assert tie == pytest.approx(exact, rel=1e-12)
        naive = _naive_rk(40.0, nu)[1]
        assert naive <= 1e-16  # what the subtraction gives: nothing left


def test_bradley_terry_limits():
    d = torch.linspace(-8, 8, 33, dtype=D64)
    bt = F.logsigmoid(d)
    # Rao-Kupper at nu = 1 and Davidson at nu = 0 are Bradley-Terry exactly; ties have probability 0
    for lp in (rao_kupper_log_probs(d, 1.0), davidson_log_probs(d, 0.0)):
        assert torch.allclose(lp.win, bt, atol=1e-14) and torch.isneginf(lp.tie).all()
    # and continuously so as nu approaches its lower end
    for nu_rk, nu_dv in ((1 + 1e-6, 1e-6), (1 + 1e-9, 1e-9)):
        assert (rao_kupper_log_probs(d, nu_rk).win - bt).abs().max() < 2e-6
        assert (davidson_log_probs(d, nu_dv).win - bt).abs().max() < 2e-6
        assert rao_kupper_log_probs(d, nu_rk).tie.exp().max() < 3e-6


def test_tie_probability_peaks_at_zero_margin_and_grows_with_nu():
    d = torch.linspace(-6, 6, 121, dtype=D64)
    for fn in (rao_kupper_log_probs, davidson_log_probs):
        tie = fn(d, 2.0).tie
        assert int(tie.argmax()) == 60
        assert (fn(d, 3.0).tie > tie).all()


def test_gradcheck_of_the_losses():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    logps = [torch.randn(7, dtype=D64, generator=g, requires_grad=True) for _ in range(4)]
    labels = torch.tensor([1, -1, 0, 0, 1, 0, -1])
    for model in ("rao_kupper", "davidson", "bt_drop"):
        # stop_higher changes the gradient on purpose (a stop-gradient): its own test checks what it does
        for guard in (None, "anchor") if model != "bt_drop" else (None,):

            def f(*x, model=model, guard=guard):
                return tie_dpo_loss(*x, labels, beta=0.7, nu=1.8, model=model, tie_weight=0.5, guard=guard)

            assert torch.autograd.gradcheck(f, tuple(logps), eps=1e-6, atol=1e-7)
    margin = torch.randn(7, dtype=D64, generator=g, requires_grad=True)
    nu = torch.tensor(1.7, dtype=D64, requires_grad=True)
    for model in ("rao_kupper", "davidson"):
        assert torch.autograd.gradcheck(lambda m, n, model=model: tie_aware_loss(m, labels, n, model), (margin, nu))


def test_bt_drop_is_trls_sigmoid_loss_on_the_decided_pairs():
    g = torch.Generator().manual_seed(2)
    pa, pb, ra, rb = (torch.randn(9, dtype=D64, generator=g) * 3 for _ in range(4))
    labels = torch.tensor([1, 1, 0, 1, 0, 1, 1, 0, 1])
    beta = 0.1
    keep = labels == 1
    trl = -F.logsigmoid(beta * ((pa - ra) - (pb - rb)))[keep].mean()  # TRL 1.16's "sigmoid" branch
    got = tie_dpo_loss(pa, pb, ra, rb, labels, beta=beta, model="bt_drop")
    assert torch.allclose(got, trl, rtol=1e-14)
    # with no ties, Rao-Kupper at nu = 1 and Davidson at nu = 0 are DPO too
    decided = torch.ones(9, dtype=torch.long)
    plain = -F.logsigmoid(beta * ((pa - ra) - (pb - rb))).mean()
    for model, nu in (("rao_kupper", 1.0), ("davidson", 0.0)):
        assert torch.allclose(tie_dpo_loss(pa, pb, ra, rb, decided, beta=beta, model=model, nu=nu), plain)


def test_orientation_weights_and_reductions():
    g = torch.Generator().manual_seed(3)
    pa, pb, ra, rb = (torch.randn(6, dtype=D64, generator=g) for _ in range(4))
    labels = torch.tensor([1, -1, 0, 1, 0, -1])
    for model in ("rao_kupper", "davidson"):
        loss = tie_dpo_loss(pa, pb, ra, rb, labels, model=model, tie_weight=0.3)
        swapped = tie_dpo_loss(pb, pa, rb, ra, -labels, model=model, tie_weight=0.3)
        assert torch.allclose(loss, swapped)
        per = tie_dpo_loss(pa, pb, ra, rb, labels, model=model, tie_weight=0.3, reduction="none")
        w = torch.where(labels == 0, 0.3, 1.0).double()
        assert torch.allclose(loss, per.sum() / w.sum())
        assert torch.allclose(tie_dpo_loss(pa, pb, ra, rb, labels, model=model, reduction="sum"),
                              tie_dpo_loss(pa, pb, ra, rb, labels, model=model, reduction="none").sum())  # fmt: skip
        # the per-pair terms are -log P(label | d) of the likelihood
        d = 0.1 * ((pa - ra) - (pb - rb))
        lp = outcome_log_probs(d, 2.0, model)
        nll = -torch.where(labels == 1, lp.win, torch.where(labels == -1, lp.lose, lp.tie))
        assert torch.allclose(per, w * nll)
    # a batch of ties only, dropped: zero loss that still has a graph
    x = torch.zeros(3, dtype=D64, requires_grad=True)
    out = tie_dpo_loss(x, x, x.detach(), x.detach(), torch.zeros(3, dtype=torch.long), model="bt_drop")
    assert float(out.detach()) == 0.0 and out.requires_grad


def test_stop_higher_guard_moves_only_the_lower_rated_response():
    pa = torch.tensor([2.0, -1.0], dtype=D64, requires_grad=True)
    pb = torch.tensor([0.0, 0.5], dtype=D64, requires_grad=True)
    ref = torch.zeros(2, dtype=D64)
    labels = torch.tensor([0, 0])
    plain = tie_dpo_loss(pa, pb, ref, ref, labels, model="rao_kupper")
    guarded = tie_dpo_loss(pa, pb, ref, ref, labels, model="rao_kupper", guard="stop_higher")
    assert torch.allclose(plain, guarded)  # same value
    guarded.backward()
    # pair 0: a is higher -> only b moves (up); pair 1: b is higher -> only a moves (up)
    assert pa.grad[0] == 0 and pb.grad[0] < 0 and pb.grad[1] == 0 and pa.grad[1] < 0
    # decided pairs are untouched by the guard
    pa.grad = pb.grad = None
    d_labels = torch.tensor([1, -1])
    a = torch.autograd.grad(tie_dpo_loss(pa, pb, ref, ref, d_labels, guard="stop_higher"), (pa, pb))
    b = torch.autograd.grad(tie_dpo_loss(pa, pb, ref, ref, d_labels), (pa, pb))
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


def test_anchor_guard_adds_the_bco_term_on_ties_only():
    g = torch.Generator().manual_seed(4)
    pa, pb, ra, rb = (torch.randn(5, dtype=D64, generator=g) for _ in range(4))
    labels = torch.tensor([0, 1, 0, -1, 0])
    beta = 0.5
    base = tie_dpo_loss(pa, pb, ra, rb, labels, beta=beta, model="davidson", reduction="none")
    anch = tie_dpo_loss(pa, pb, ra, rb, labels, beta=beta, model="davidson", guard="anchor", anchor_weight=0.2,
                        reduction="none")  # fmt: skip
    term = 0.2 * (F.softplus(-beta * (pa - ra)) + F.softplus(-beta * (pb - rb)))
    assert torch.allclose(anch - base, torch.where(labels == 0, term, torch.zeros_like(term)))


def test_labels_from_is_tie():
    assert labels_from_is_tie(torch.tensor([True, False])).tolist() == [0, 1]
    assert labels_from_is_tie(torch.tensor([1, 0])).tolist() == [0, 1]
    with pytest.raises(ValueError, match="is_tie"):
        labels_from_is_tie(torch.tensor([2, 0]))


# ------------------------------------------------------------------------------------------------ bad input
def test_named_bad_inputs_get_one_clear_error_each():
    x = torch.zeros(3, dtype=D64)
    ok = torch.tensor([1, 0, -1])
    cases = [
        ({"nu": 0.5}, ValueError, "nu out of range.*Rao-Kupper needs nu >= 1"),
        ({"nu": -1.0, "model": "davidson"}, ValueError, "nu out of range"),
        ({"nu": float("nan")}, ValueError, "nu out of range"),
        ({"nu": float("inf"), "model": "davidson"}, ValueError, "nu out of range"),
        ({"nu": 1.0}, ValueError, "makes ties impossible"),
        ({"nu": 0.0, "model": "davidson"}, ValueError, "makes ties impossible"),
        ({"model": "bt"}, ValueError, "model must be one of"),
        ({"guard": "clip"}, ValueError, "guard must be one of"),
        ({"guard": "anchor", "model": "bt_drop"}, ValueError, "drops the ties"),
        ({"beta": 0.0}, ValueError, "beta"),
        ({"tie_weight": -1.0}, ValueError, "tie_weight"),
        ({"reduction": "max"}, ValueError, "reduction"),
    ]
    for kwargs, exc, match in cases:
        with pytest.raises(exc, match=match):
            tie_dpo_loss(x, x, x, x, ok, **kwargs)
    for labels, match in (([2, 0, 1], "labels outside"), ([0.5, 0, 1], "labels outside"), ([1, 0], "3 pairs")):
        with pytest.raises(ValueError, match=match):
            tie_dpo_loss(x, x, x, x, torch.tensor(labels))
    with pytest.raises(TypeError, match="not booleans"):
        tie_dpo_loss(x, x, x, x, torch.tensor([True, False, True]))
    empty = torch.zeros(0, dtype=D64)
    with pytest.raises(ValueError, match="empty batch"):
        tie_dpo_loss(empty, empty, empty, empty, torch.zeros(0, dtype=torch.long))
    with pytest.raises(ValueError, match="empty batch"):
        tie_aware_loss(empty, torch.zeros(0, dtype=torch.long))
    with pytest.raises(ValueError, match="same shape"):
        tie_dpo_loss(x, torch.zeros(4, dtype=D64), x, x, ok)
    with pytest.raises(ValueError, match="1-D"):
        tie_dpo_loss(x[None], x[None], x[None], x[None], ok)
    nan = torch.tensor([0.0, float("nan"), 0.0], dtype=D64)
    with pytest.raises(ValueError, match="policy_logps_b has NaN"):
        tie_dpo_loss(x, nan, x, x, ok)
    with pytest.raises(ValueError, match="margin has NaN"):
        tie_aware_loss(nan, ok)
    with pytest.raises(ValueError, match="nu out of range"):
        rao_kupper_log_probs(x, 0.99)


# ----------------------------------------------------------------------------------------------- the world
@pytest.fixture(scope="module")
def small_world():
    return PreferenceWorld.random(n_prompts=30, n_candidates=5, n_features=4, seed=0)


def test_world_exact_evaluation_against_brute_force(small_world):
    w = small_world
    theta = np.array([0.3, -1.0, 0.5, 2.0])
    logits = w.features @ theta
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    r = w.features @ w.true_weights
    assert float(w.expected_reward(theta)) == pytest.approx(float((p * r).sum(1).mean()), rel=1e-12)
    assert float(w.kl(theta)) == pytest.approx(float((p * np.log(p * 5)).sum(1).mean()), rel=1e-12)
    assert float(w.kl(np.zeros(4))) == 0.0
    assert float(w.normalised_reward(np.zeros(4))) == pytest.approx(0.0, abs=1e-12)
    assert float(w.normalised_reward(1e4 * w.true_weights)) == pytest.approx(1.0, abs=1e-9)
    # the true reward slightly dislikes the spurious length feature; random pair gaps have sd ~ 1
    assert w.true_weights[0] < 0
    assert math.sqrt(2) * np.linalg.norm(w.true_weights) == pytest.approx(1.0)


@settings(max_examples=30, deadline=None)
@given(direction=st.lists(st.floats(-3, 3), min_size=4, max_size=4), kl=st.floats(0.05, 1.2))
def test_reward_at_matched_kl_hits_the_budget_and_the_true_direction_is_best(small_world, direction, kl):
    """Gibbs: among all policies at a given KL from the reference, the tilt along the true reward is best; every
    linear direction is such a policy."""
    w = small_world
    u = torch.tensor(direction, dtype=D64)
    best = float(w.reward_at_kl(w.true_weights, kl))
    got = float(w.reward_at_kl(u, kl))
    assert got <= best + 1e-9
    if float(u.norm()) > 1e-3:
        scores = torch.einsum("pkd,d->pk", torch.from_numpy(w.features), u)
        # the policy found has exactly the requested KL
        centred = scores - scores.mean(-1, keepdim=True)
        unit = centred / centred.abs().max()
        lo, hi = 0.0, 1e6
        for _ in range(200):
            mid = (lo + hi) / 2
            logp = torch.log_softmax(mid * unit, -1)
            lo, hi = (mid, hi) if float((logp.exp() * (logp + math.log(5))).sum(-1).mean()) < kl else (lo, mid)
        logp = torch.log_softmax(lo * unit, -1)
        expected = float((logp.exp() * torch.from_numpy(w.true_reward)).sum(-1).mean())
        normalised = (expected - w.uniform_reward) / (w.oracle_reward - w.uniform_reward)
        assert got == pytest.approx(normalised, abs=1e-6)


def test_reward_at_matched_kl_rejects_bad_budgets(small_world):
    with pytest.raises(ValueError, match="kl must lie"):
        small_world.reward_at_kl(small_world.true_weights, 2.0)
    with pytest.raises(ValueError, match="shape"):
        reward_at_matched_kl(torch.zeros(3, 4), torch.zeros(3, 5), 0.5)


def test_labeler_rules():
    ra = np.array([0.0, 0.0, 1.0, -2.0, 0.05, 0.3])
    rb = np.array([0.2, -0.1, 0.0, 0.0, 0.0, 0.0])
    la, lb = np.array([1.0, 5.0, 0, 0, 3.0, 0.0]), np.array([2.0, 1.0, 0, 0, 1.0, 9.0])
    silent = ResolutionLimitedLabeler(0.0, 0.25).label(ra, rb)
    assert silent.tolist() == [0, 0, 1, -1, 0, 1]
    spurious = ResolutionLimitedLabeler(0.0, 0.25, forced=True, tiebreak="spurious")
    assert spurious.label(ra, rb, spurious_a=la, spurious_b=lb).tolist() == [-1, 1, 1, -1, 1, 1]
    position = ResolutionLimitedLabeler(0.0, 0.25, forced=True, tiebreak="position")
    assert position.label(ra, rb).tolist() == [1, 1, 1, -1, 1, 1]
    coin = ResolutionLimitedLabeler(0.0, 10.0, forced=True, seed=0).label(np.zeros(4000), np.zeros(4000))
    assert set(np.unique(coin)) == {-1, 1} and abs(coin.mean()) < 0.05
    # common random numbers: the same noise draw, scaled by sigma
    noise = np.array([1.0, -1.0])
    noisy = ResolutionLimitedLabeler(1.0, 0.0).label(np.zeros(2), np.array([0.5, -0.5]), noise=noise)
    assert noisy.tolist() == [1, -1]
    for kwargs, match in (
        ({"sigma": -1.0, "tau": 0.0}, "sigma"),
        ({"sigma": 0.0, "tau": float("nan")}, "tau"),
        ({"sigma": 0.0, "tau": 0.0, "tiebreak": "length"}, "tiebreak"),
    ):
        with pytest.raises(ValueError, match=match):
            ResolutionLimitedLabeler(**kwargs)
    with pytest.raises(ValueError, match="spurious_a"):
        spurious.label(ra, rb)
    with pytest.raises(ValueError, match="1-D of one shape"):
        spurious.label(ra, rb[:2])


# ------------------------------------------------------------------------------------------------ training
def _toy_setup(seed=0, pairs=800, prompts=120):
    rng = np.random.default_rng(seed)
    world = PreferenceWorld.random(n_prompts=prompts, seed=rng)
    return world, world.sample_pairs(pairs, rng), rng.standard_normal(pairs)


def test_vectorised_sweep_loss_equals_tie_dpo_loss_arm_by_arm():
    from icml26.llm.tie_aware_alignment.toy import _group_loss

    world, pairs, noise = _toy_setup(pairs=50, prompts=20)
    labels = torch.from_numpy(world.label(pairs, ResolutionLimitedLabeler(0.5, 0.6), noise))
    objectives = [
        Objective(model=m, nu=nu, tie_weight=tw, guard=g, anchor_weight=0.3)
        for m in ("rao_kupper", "davidson")
        for nu, tw, g in ((1.5, 1.0, None), (2.0, 0.25, "stop_higher"), (4.0, 1.0, "anchor"))
    ]
    theta = torch.randn(len(objectives), 12, dtype=D64, generator=torch.Generator().manual_seed(0))
    beta = 2.0
    logp = world.log_policy(theta)
    h = beta * (logp + math.log(8))
    p, a, b = (torch.from_numpy(v) for v in (pairs.prompt, pairs.a, pairs.b))
    h_a, h_b = h[:, p, a], h[:, p, b]
    for model in ("rao_kupper", "davidson"):
        rows = [i for i, o in enumerate(objectives) if o.model == model]
        vec = _group_loss([objectives[i] for i in rows], h_a[rows], h_b[rows], labels.expand(len(rows), -1), beta)
        for j, i in enumerate(rows):
            o = objectives[i]
            ref = torch.full_like(logp[i, p, a], -math.log(8))
            one = tie_dpo_loss(logp[i, p, a], logp[i, p, b], ref, ref, labels, beta=beta, nu=o.nu, model=model,
                               tie_weight=o.tie_weight, guard=o.guard, anchor_weight=0.3)  # fmt: skip
            assert torch.allclose(vec[j], one, rtol=1e-10)


def test_training_recovers_the_true_direction_and_drop_ignores_ties():
    world, pairs, noise = _toy_setup()
    perfect = world.label(pairs, ResolutionLimitedLabeler(0.0, 0.0, forced=True))
    silent = world.label(pairs, ResolutionLimitedLabeler(0.5, 0.6), noise)
    other = silent.copy()
    other[silent == 0] = 0  # ties stay ties; their count and place are what drop ignores
    trained = train_arms(
        world,
        pairs,
        [
            Arm("perfect", Objective(), perfect),
            Arm("drop", Objective(), silent),
            Arm("rk", Objective(model="rao_kupper"), silent),
        ],
        beta=2.0,
        steps=200,
    )
    scores = trained.scores((0.5,))
    assert scores["perfect"]["cosine"] > 0.99
    assert scores["rk"]["kl"] < scores["drop"]["kl"]  # ties regularise (Chen et al.)
    # drop is blind to the ties: forced-random labels on the same decided pairs leave it unchanged
    coin = np.where(np.random.default_rng(1).random(len(silent)) < 0.5, 1, -1)
    filled = np.where(silent == 0, coin, silent)
    again = train_arms(world, pairs, [Arm("drop", Objective(), silent), Arm("forced", Objective(), filled)], 2.0, 50)
    assert not torch.allclose(again.coef[0], again.coef[1])
    ties_removed = train_arms(world, pairs, [Arm("drop", Objective(), np.where(silent == 0, 0, silent))], 2.0, 50)
    assert torch.allclose(ties_removed.coef[0], again.coef[0])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_silence_beats_a_length_biased_forced_choice(seed):
    """The C1 mechanism on a small world, paired per seed: at matched KL, the weak labeler that stays silent beats
    the same labeler forced with a length tie-break by a sizeable margin (pilot runs: ~0.06 of the oracle gap)."""
    from icml26.llm.tie_aware_alignment.experiments import run_labelers

    setting = {
        "prompts": 150, "candidates": 8, "features": 12, "length_weight": -0.15, "pairs": 1500, "beta": 2.0,
        "steps": 200, "lr": 0.05, "kl_budget": 0.5,
    }  # fmt: skip
    m = run_labelers(setting, seed)["metrics"]
    assert m["silent_weak"]["reward_at_kl"] - m["forced_weak_spurious"]["reward_at_kl"] > 0.03
    assert m["forced_weak_spurious"]["length_share"] > 0 > m["silent_weak"]["length_share"]
    assert 0.3 < m["silent_weak"]["tie_fraction"] < 0.5


# ------------------------------------------------------------------------------------------------------ TRL
@pytest.fixture(scope="module")
def tiny_trl():
    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    os.environ["HF_HUB_OFFLINE"] = "1"
    pytest.importorskip("trl")
    from icml26.llm.tie_aware_alignment.lm import word_tokenizer
    from icml26.models import tiny_llama

    tokenizer = word_tokenizer([*map(str, range(10)), "+", "="])

    def model(seed=0):
        return tiny_llama(seed, vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                          num_attention_heads=2, num_key_value_heads=2, pad_token_id=0, eos_token_id=1)  # fmt: skip

    return model, tokenizer


def _pairs(is_tie):
    from datasets import Dataset

    n = len(is_tie)
    return Dataset.from_dict(
        {
            "prompt": [f"{i % 10} + {(i * 3) % 10} =" for i in range(n)],
            "chosen": [f" {(i * 7) % 10}" for i in range(n)],
            "rejected": [f" {(i * 7 + 1) % 10} {i % 10}" for i in range(n)],
            "is_tie": is_tie,
        }
    )


def _args(tmp_path, **kw):
    from icml26.llm.tie_aware_alignment import TiesDPOConfig

    base = {"output_dir": str(tmp_path), "per_device_train_batch_size": 4, "max_steps": 2, "report_to": "none",
            "use_cpu": True, "logging_steps": 1, "save_strategy": "no", "disable_tqdm": True,
            "learning_rate": 1e-2}  # fmt: skip
    return TiesDPOConfig(**(base | kw))


def test_collator_keeps_the_tie_flags():
    pytest.importorskip("trl")
    from icml26.llm.tie_aware_alignment import DataCollatorForTiePreference

    c = DataCollatorForTiePreference(pad_token_id=0)
    ex = [
        {"prompt_ids": [1, 2], "chosen_ids": [3], "rejected_ids": [4, 5], "is_tie": True},
        {"prompt_ids": [1], "chosen_ids": [3, 3], "rejected_ids": [4], "is_tie": False},
    ]
    out = c(ex)
    assert out["is_tie"].tolist() == [True, False] and out["input_ids"].shape[0] == 4
    with pytest.raises(ValueError, match="no 'is_tie'"):
        c([{k: v for k, v in e.items() if k != "is_tie"} for e in ex])
    with pytest.raises(ValueError, match="booleans"):
        c([{**ex[0], "is_tie": "yes"}])


def test_trainer_keeps_tie_flags_end_to_end(tiny_trl, tmp_path):
    """One TiesDPOTrainer run on a tiny random Llama: the flags survive column pruning and the collator (the logged
    tie fraction is the data's), the loss is the tie likelihood at d = 0 on the first step, weights move."""
    from icml26.llm.tie_aware_alignment import TiesDPOTrainer

    make, tokenizer = tiny_trl
    model = make()
    is_tie = [True, False, False, True, False, False, False, True]
    args = _args(tmp_path, tie_model="davidson", nu=2.0, precompute_ref_log_probs=True, per_device_train_batch_size=8)
    trainer = TiesDPOTrainer(model=model, args=args, train_dataset=_pairs(is_tie), processing_class=tokenizer)
    before = [p.detach().clone() for p in model.parameters()]
    trainer.train()
    first = trainer.state.log_history[0]
    assert first["ties/fraction"] == pytest.approx(3 / 8)
    # at the reference, d = 0: Davidson(nu = 2) gives -log(1/4) per decided pair and -log(1/2) per tie
    assert first["loss"] == pytest.approx((5 * math.log(4) + 3 * math.log(2)) / 8, rel=1e-5)
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_trainer_loss_equals_trl_dpo_loss_without_ties(tiny_trl, tmp_path):
    """bt_drop on data without ties is TRL's own sigmoid DPO: the same loss on the same batch (ground truth for the
    re-implemented forward), and Rao-Kupper's loss there is -log sigma(d - log nu) on TRL's margins."""
    from trl import DPOConfig, DPOTrainer

    from icml26.llm.tie_aware_alignment import TiesDPOTrainer

    make, tokenizer = tiny_trl
    data = _pairs([False] * 8)
    kw = {"output_dir": str(tmp_path), "report_to": "none", "use_cpu": True, "beta": 0.5}
    ref = make(1)
    trl = DPOTrainer(model=make(0), ref_model=ref, args=DPOConfig(**kw), train_dataset=data.remove_columns("is_tie"),
                     processing_class=tokenizer)  # fmt: skip
    ours = TiesDPOTrainer(model=make(0), ref_model=make(1), args=_args(tmp_path, beta=0.5, tie_model="bt_drop"),
                          train_dataset=data, processing_class=tokenizer)  # fmt: skip
    rk = TiesDPOTrainer(model=make(0), ref_model=make(1), args=_args(tmp_path, beta=0.5, tie_model="rao_kupper"),
                        train_dataset=data, processing_class=tokenizer)  # fmt: skip
    batch = ours.data_collator([ours.train_dataset[i] for i in range(8)])
    plain = {k: v for k, v in batch.items() if k != "is_tie"}
    with torch.no_grad():
        a = trl.compute_loss(trl.model, plain)
        b = ours.compute_loss(ours.model, batch)
        c = rk.compute_loss(rk.model, batch)
        # TRL's own summed log-probs of the same batch (its reference helper, called on the policy and the reference)
        pol_c, pol_r = trl.compute_ref_log_probs(trl.model, plain)
        ref_c, ref_r = trl.compute_ref_log_probs(trl.ref_model, plain)
    assert float(b) == pytest.approx(float(a), rel=1e-6)
    expected = tie_dpo_loss(pol_c, pol_r, ref_c, ref_r, torch.ones(8, dtype=torch.long), beta=0.5, nu=2.0)
    assert float(c) == pytest.approx(float(expected), rel=1e-4)  # float32 forwards through two code paths


def test_trainer_bad_inputs(tiny_trl, tmp_path):
    from trl import DPOConfig

    from icml26.llm.tie_aware_alignment import TiesDPOConfig, TiesDPOTrainer

    make, tokenizer = tiny_trl
    with pytest.raises(ValueError, match="no 'is_tie' column"):
        TiesDPOTrainer(model=make(), args=_args(tmp_path), train_dataset=_pairs([False] * 4).remove_columns("is_tie"),
                       processing_class=tokenizer)  # fmt: skip
    with pytest.raises(TypeError, match="TiesDPOConfig"):
        TiesDPOTrainer(
            model=make(), args=DPOConfig(output_dir=str(tmp_path), use_cpu=True), train_dataset=_pairs([False] * 4)
        )
    common = {"output_dir": str(tmp_path), "report_to": "none", "use_cpu": True}
    for kwargs, match in (
        ({"nu": 0.5}, "nu out of range"),
        ({"tie_model": "davidson", "nu": -0.1}, "nu out of range"),
        ({"tie_model": "thurstone"}, "model must be one of"),
        ({"tie_weight": -1.0}, "tie_weight"),
        ({"tie_guard": "clip"}, "tie_guard"),
        ({"tie_model": "bt_drop", "tie_guard": "anchor"}, "drops the ties"),
        ({"loss_type": "ipo"}, "loss_type"),
        ({"label_smoothing": 0.1}, "label_smoothing"),
        ({"ld_alpha": 0.5}, "ld_alpha"),
    ):
        with pytest.raises(ValueError, match=match):
            TiesDPOConfig(**common, **kwargs)


# ---------------------------------------------------------------------------------------------- benchmark
def test_benchmark_rows_tiny():
    pytest.importorskip("trl")
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_tie_aware_alignment.py"
    spec = importlib.util.spec_from_file_location("bench_tie_aware_alignment", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.rows("tiny")
    assert len(rows) >= 2 and all(r.ours > 0 and r.anchor > 0 for r in rows)
    assert all("TRL" in r.anchor_name for r in rows)
    with pytest.raises(ValueError, match="size"):
        module.rows("huge")


def test_public_names_resolve_lazily():
    import icml26.llm.tie_aware_alignment as room

    assert set(room._MODULE_OF) == set(room.__all__) and len(room.__all__) == len(room._MODULE_OF)
    for name in room.__all__:
        assert getattr(room, name) is not None
    with pytest.raises(AttributeError, match="no attribute"):
        room.not_a_name  # noqa: B018
