"""Small-policy experiments behind the claims: the methods as per-token weights, gradient bias, GRPO training.

Every method is a detached weight w_it on the per-token policy-gradient term A_i grad log pi_theta(y_it | c_it),
computed from the same rollout (so comparisons are paired); at theta = pi_old the PPO ratio is 1 and clipping is
inactive, so these weights are exactly what TRL's loss applies at the first step of a batch:

- ``none``: w = min(rho_t, 3), TRL's default rollout correction (``token_truncate``, cap 3), no mask;
- ``token_mask``: w = rho_t if rho_t <= 3 else 0 (TRL ``token_mask`` at its default cap 3);
- ``token_mask_tr``: w = rho_t if 1/2 <= rho_t <= 2 else 0 (TRL ``token_mask`` with
  ``vllm_importance_sampling_clip_min=0.5, clip_max=2``): the same per-token trust region as ``trm_max``'s delta,
  applied token by token instead of to the whole sequence (the token-level rule that does act under our mismatch);
- ``sequence_mask``: w = prod_t rho_t if <= 3 else 0 (TRL ``sequence_mask``);
- ``opsm``: ``none`` x TRL's OPSM keep-mask (mean KL > delta_mean and A < 0 drops);
- ``trm_max``: ``none`` x TRM keep-mask, max_t k2_t <= delta_max;
- ``trm_avg``: ``none`` x TRM keep-mask, mean_t k3_t <= delta_mean.

Thresholds are fixed a priori: delta_max = (log 2)^2 / 2 (every token ratio within a factor of 2), delta_mean =
0.02 nats per token for both mean-based rules. The task is *counting*: token t should be y_{t-1} + 1 mod V;
R = share of correct steps (dense), length of the correct prefix (prefix) or 1[all correct] (sparse).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import torch

from icml26.llm.trm.masking import (
    opsm_mask,
    sequence_ratio_mask,
    token_divergence,
    token_mask,
    trust_region_mask,
)
from icml26.llm.trm.rollout import GRUPolicy, MismatchedRollout

METHODS = ("none", "token_mask", "token_mask_tr", "sequence_mask", "opsm", "trm_max", "trm_avg")
DELTA_MAX = 0.5 * math.log(2.0) ** 2
DELTA_MEAN = 0.02
IS_CAP = 3.0
TOKEN_TRUST_REGION = (0.5, 2.0)  # the per-token ratio range that delta_max allows: |log rho| <= log 2


def counting_reward(tokens: torch.Tensor, vocab: int, kind: str = "prefix") -> torch.Tensor:
    """Counting task: step t >= 1 is correct iff y_t = y_{t-1} + 1 mod V.

    ``"prefix"``: length of the correct prefix over T - 1 (a global reward: one wrong step loses everything after
    it, as a wrong step in a derivation does); ``"dense"``: share of correct steps; ``"sparse"``: all correct.
    """
    correct = (tokens[:, 1:] == (tokens[:, :-1] + 1) % vocab).float()
    if kind == "dense":
        return correct.mean(dim=1)
    if kind == "sparse":
        return correct.all(dim=1).float()
    return correct.cumprod(dim=1).mean(dim=1)


def pretrain_counting(policy: GRUPolicy, horizon: int, steps: int, seed: int, lr: float = 3e-3) -> GRUPolicy:
    """Supervised warm start ("SFT") on counting sequences from a random first token: RL starts from a policy
    that can already count, so it has something to lose (and to collapse from)."""
    gen = torch.Generator().manual_seed(40_000 + seed)
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    V = policy.vocab
    for _ in range(steps):
        start = torch.randint(0, V, (64, 1), generator=gen)
        tokens = (start + torch.arange(horizon)) % V
        logp, _ = policy.token_log_probs(tokens)
        loss = -logp[:, 1:].mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return policy


def method_weights(
    method: str, logp_cur: torch.Tensor, logp_roll: torch.Tensor, adv: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """The detached per-token weight w_it (B, T) of one method (see the module docstring)."""
    log_rho = (logp_cur - logp_roll).detach()
    truncated = log_rho.exp().clamp(max=IS_CAP) * mask
    if method == "none":
        return truncated
    if method == "token_mask":
        return token_mask(logp_cur, logp_roll, mask, 0.0, IS_CAP)
    if method == "token_mask_tr":
        return token_mask(logp_cur, logp_roll, mask, *TOKEN_TRUST_REGION)
    if method == "sequence_mask":
        return sequence_ratio_mask(logp_cur, logp_roll, mask, 0.0, IS_CAP) * mask
    if method == "opsm":
        return truncated * opsm_mask(adv, logp_cur, logp_roll, mask, DELTA_MEAN)
    if method == "trm_max":
        return truncated * trust_region_mask(token_divergence(logp_cur, logp_roll, mask, "k2"), mask, DELTA_MAX)
    if method == "trm_avg":
        div = token_divergence(logp_cur, logp_roll, mask, "k3")
        return truncated * trust_region_mask(div, mask, DELTA_MEAN, "mean")
    raise ValueError(f"unknown method {method!r}; methods are {METHODS}")


def make_policy(vocab: int, hidden: int, seed: int, logit_scale: float = 3.0) -> GRUPolicy:
    """A GRU policy with peaked next-token distributions (so rollout-only top-p truncates something)."""
    torch.manual_seed(seed)
    policy = GRUPolicy(vocab, hidden)
    with torch.no_grad():
        policy.head.weight.mul_(logit_scale)
    return policy


@functools.lru_cache(maxsize=16)
def _warm_state(vocab: int, hidden: int, sft_steps: int, seed: int) -> dict[str, torch.Tensor]:
    policy = pretrain_counting(make_policy(vocab, hidden, seed, logit_scale=1.0), 32, sft_steps, seed)
    return {k: v.detach().clone() for k, v in policy.state_dict().items()}


def warm_policy(vocab: int, hidden: int, sft_steps: int, seed: int) -> GRUPolicy:
    """The warm-started ("SFT") counting policy of a seed: trained once per worker process, then copied (the
    claims that share a seed share this set-up; the weights are identical to training it afresh)."""
    policy = GRUPolicy(vocab, hidden)
    policy.load_state_dict(_warm_state(vocab, hidden, sft_steps, seed))
    return policy


def _flat_grad(loss: torch.Tensor, params: list[torch.Tensor], retain: bool) -> torch.Tensor:
    grads = torch.autograd.grad(loss, params, retain_graph=retain, allow_unused=True)
    return torch.cat(
        [(g if g is not None else torch.zeros_like(p)).reshape(-1) for g, p in zip(grads, params, strict=True)]
    )


def bias_estimate(batches: torch.Tensor, reference: torch.Tensor) -> dict[str, float]:
    """Bias of one gradient estimator against another, from independent batch gradients of each.

    ``batches`` (K, P) and ``reference`` (K_ref, P) hold one gradient per independent batch (K, K_ref >= 2).
    With means g, r and the noise of each mean v = tr(Cov) / K (unbiased: sum_k ||g_k - g||^2 / (K (K - 1))),
    ||E g - E r||^2 is estimated without bias by (||g||^2 - v_g) + (||r||^2 - v_r) - 2 <g, r> (the two sets are
    independent, so <g, r> is unbiased for <E g, E r>). Returned: ``relative_bias`` = ||E g - E r|| / ||E r||,
    ``cosine`` = <E g, E r> / (||E g|| ||E r||) and ``norm_ratio`` = ||E g|| / ||E r||, each from those unbiased
    pieces (ratios of unbiased estimates), and ``noise`` = sqrt((v_g + v_r) / ||E r||^2), the relative
    Monte Carlo error of the difference of the two means (what sampling alone would make ``relative_bias``).
    """
    if batches.shape[0] < 2 or reference.shape[0] < 2:
        raise ValueError("need at least two independent batches of each estimator")

    def mean_and_noise(g: torch.Tensor) -> tuple[torch.Tensor, float]:
        k = g.shape[0]
        mean = g.double().mean(0)
        return mean, float(((g.double() - mean) ** 2).sum() / (k * (k - 1)))

    g, v_g = mean_and_noise(batches)
    r, v_r = mean_and_noise(reference)
    sq_g, sq_r, inner = float(g @ g) - v_g, float(r @ r) - v_r, float(g @ r)
    if sq_r <= 0:
        raise ValueError("the reference gradient is not distinguishable from zero at this sample size")
    bias_sq = max(sq_g + sq_r - 2 * inner, 0.0)
    sq_g = max(sq_g, 1e-300)
    return {
        "relative_bias": math.sqrt(bias_sq / sq_r),
        "cosine": max(-1.0, min(1.0, inner / math.sqrt(sq_g * sq_r))),
        "norm_ratio": math.sqrt(sq_g / sq_r),
        "noise": math.sqrt((v_g + v_r) / sq_r),
    }


def gradient_bias(setting: dict[str, Any], seed: int) -> dict[str, Any]:
    """Bias of each method's off-policy gradient against the on-policy gradient, uncoupled, over independent batches.

    ``batches`` independent batches of ``n`` sequences from the mismatched engine feed every method (paired: the
    same rollouts); as many independent batches of ``n`` sequences from pi_theta itself (fp32, never the engine,
    no shared noise with it) give the on-policy REINFORCE gradient sum_t grad log pi_theta(y_t|c_t) (R - mean R).
    Each method's batch gradients are compared with the on-policy ones by :func:`bias_estimate` (noise-corrected).
    Staleness: the trainer policy moves ``staleness`` small random steps away from the weights the engine holds.
    """
    V, T, N, K = int(setting["vocab"]), int(setting["T"]), int(setting["n"]), int(setting["batches"])
    policy = warm_policy(V, int(setting["hidden"]), int(setting["sft_steps"]), seed)
    params = list(policy.parameters())
    rollout = MismatchedRollout(
        policy,
        precision=str(setting.get("precision", "bf16")),
        spike_p=float(setting["spike_p"]),
        spike_sd=float(setting["spike_sd"]),
        top_p=float(setting["top_p"]),
        staleness=int(setting["staleness"]),
    )
    gen = torch.Generator().manual_seed(10_000 + seed)
    with torch.no_grad():
        for _ in range(int(setting["staleness"])):
            for p in params:
                p.add_(float(setting["stale_sd"]) * torch.randn(p.shape, generator=gen))
            rollout.sync()
    exact = MismatchedRollout(policy, precision="fp32")
    kind = str(setting.get("reward", "prefix"))
    mask = torch.ones(N, T)
    on_grads: list[torch.Tensor] = []
    grads: dict[str, list[torch.Tensor]] = {m: [] for m in METHODS}
    masked_seq: dict[str, list[float]] = {m: [] for m in METHODS}
    masked_tok: dict[str, list[float]] = {m: [] for m in METHODS}
    spiked, rewards_on, rewards_off = [], [], []
    for _ in range(K):
        on = exact.sample(N, T, gen)
        r_on = counting_reward(on.tokens, V, kind)
        logp_on, _ = policy.token_log_probs(on.tokens)
        on_grads.append(_flat_grad(((r_on - r_on.mean())[:, None] * logp_on).sum() / N, params, retain=False))
        off = rollout.sample(N, T, gen)
        r_off = counting_reward(off.tokens, V, kind)
        adv = r_off - r_off.mean()
        logp_cur, _ = policy.token_log_probs(off.tokens)
        for i, method in enumerate(METHODS):
            w = method_weights(method, logp_cur, off.logp_roll, adv, mask)
            grads[method].append(
                _flat_grad((w * adv[:, None] * logp_cur).sum() / N, params, retain=i < len(METHODS) - 1)
            )
            masked_seq[method].append(float((w.abs().sum(1) == 0).float().mean()))
            masked_tok[method].append(float((w == 0).float().mean()))
        spiked.append(float(off.spiked.any(1).float().mean()))
        rewards_on.append(float(r_on.mean()))
        rewards_off.append(float(r_off.mean()))
    reference = torch.stack(on_grads)
    out = {
        m: {
            **bias_estimate(torch.stack(grads[m]), reference),
            "masked_fraction": float(np.mean(masked_seq[m])),
            "masked_token_fraction": float(np.mean(masked_tok[m])),
        }
        for m in METHODS
    }
    info = {
        "spiked_sequences": float(np.mean(spiked)),
        "on_policy_reward": float(np.mean(rewards_on)),
        "engine_reward": float(np.mean(rewards_off)),
    }
    return {"metrics": out, "info": info}


def train_grpo(setting: dict[str, Any], seed: int, method: str) -> dict[str, Any]:
    """GRPO-style training of a GRU policy on counting, sampling with a mismatched engine.

    Per step: sample a group of ``batch`` sequences from the engine, GRPO advantages (R - mean) / (std + 1e-4),
    one Adam step on the method's weighted loss -(1 / #tokens) sum_it w_it A_i log pi_theta (normalised by all
    tokens), then sync the engine. Every ``eval_every`` steps: reward of ``eval_n`` samples from pi_theta itself
    (never from the engine). Collapse: any evaluation falls below half of the running peak of the evaluations so
    far (the notes' definition; a collapse that later recovers still counts).
    """
    V, T, B = int(setting["vocab"]), int(setting["T"]), int(setting["batch"])
    policy = warm_policy(V, int(setting["hidden"]), int(setting["sft_steps"]), seed)
    opt = torch.optim.Adam(policy.parameters(), lr=float(setting["lr"]))
    rollout = MismatchedRollout(
        policy,
        precision="bf16",
        spike_p=float(setting["spike_p"]),
        spike_sd=float(setting["spike_sd"]),
        top_p=float(setting["top_p"]),
        staleness=int(setting["staleness"]),
    )
    exact = MismatchedRollout(policy, precision="fp32")
    gen = torch.Generator().manual_seed(20_000 + seed)
    eval_gen = torch.Generator().manual_seed(30_000 + seed)
    kind = str(setting.get("reward", "prefix"))
    mask = torch.ones(B, T)
    evals, masked, grad_norms = [], [], []
    for step in range(int(setting["steps"])):
        if step % int(setting["eval_every"]) == 0:
            evals.append(
                float(counting_reward(exact.sample(int(setting["eval_n"]), T, eval_gen).tokens, V, kind).mean())
            )
        off = rollout.sample(B, T, gen)
        reward = counting_reward(off.tokens, V, kind)
        adv = (reward - reward.mean()) / (reward.std() + 1e-4)
        logp_cur, _ = policy.token_log_probs(off.tokens)
        w = method_weights(method, logp_cur, off.logp_roll, adv, mask)
        masked.append(float((w.abs().sum(1) == 0).float().mean()))
        loss = -(w * adv[:, None] * logp_cur).sum() / mask.sum()
        opt.zero_grad()
        loss.backward()
        grad_norms.append(float(torch.nn.utils.clip_grad_norm_(policy.parameters(), float("inf"))))
        opt.step()
        rollout.sync()
    evals.append(float(counting_reward(exact.sample(int(setting["eval_n"]), T, eval_gen).tokens, V, kind).mean()))
    curve = np.asarray(evals)
    peak = np.maximum.accumulate(curve)
    g = np.asarray(grad_norms)
    return {
        "final_reward": float(curve[-1]),
        "peak_reward": float(peak[-1]),
        "collapsed": float(np.any(curve < 0.5 * peak)),
        "masked_fraction": float(np.mean(masked)),
        "max_grad_norm": float(g.max()),
        "median_grad_norm": float(np.median(g)),
        "curve": curve.tolist(),
    }
