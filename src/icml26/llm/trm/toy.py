"""Small-policy experiments behind the claims: the methods as per-token weights, gradient bias, GRPO training.

Every method is a detached weight w_it on the per-token policy-gradient term A_i grad log pi_theta(y_it | c_it),
computed from the same rollout (so comparisons are paired); at theta = pi_old the PPO ratio is 1 and clipping is
inactive, so these weights are exactly what TRL's loss applies at the first step of a batch:

- ``none``: w = min(rho_t, 3), TRL's default rollout correction (``token_truncate``, cap 3), no mask;
- ``token_mask``: w = rho_t if rho_t <= 3 else 0 (TRL ``token_mask``);
- ``sequence_mask``: w = prod_t rho_t if <= 3 else 0 (TRL ``sequence_mask``);
- ``opsm``: ``none`` x TRL's OPSM keep-mask (mean KL > delta_mean and A < 0 drops);
- ``trm_max``: ``none`` x TRM keep-mask, max_t k2_t <= delta_max;
- ``trm_avg``: ``none`` x TRM keep-mask, mean_t k3_t <= delta_mean.

Thresholds are fixed a priori: delta_max = (log 2)^2 / 2 (every token ratio within a factor of 2), delta_mean =
0.02 nats per token for both mean-based rules. The task is *counting*: token t should be y_{t-1} + 1 mod V;
R = share of correct steps (dense) or 1[all correct] (sparse).
"""

from __future__ import annotations

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

METHODS = ("none", "token_mask", "sequence_mask", "opsm", "trm_max", "trm_avg")
DELTA_MAX = 0.5 * math.log(2.0) ** 2
DELTA_MEAN = 0.02
IS_CAP = 3.0


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


def _flat_grad(loss: torch.Tensor, params: list[torch.Tensor], retain: bool) -> torch.Tensor:
    grads = torch.autograd.grad(loss, params, retain_graph=retain, allow_unused=True)
    return torch.cat(
        [(g if g is not None else torch.zeros_like(p)).reshape(-1) for g, p in zip(grads, params, strict=True)]
    )


def gradient_bias(setting: dict[str, Any], seed: int) -> dict[str, Any]:
    """Cosine of each method's off-policy gradient with the on-policy gradient, on coupled samples.

    pi_theta and pi_roll sample with the same Gumbel noise (common random numbers), so their sequences agree
    until the two distributions first disagree and the comparison measures bias more than sampling noise.
    The on-policy gradient is the REINFORCE gradient sum_t grad log pi_theta(y_t|c_t) (R - mean R) on
    pi_theta's own samples. Staleness: the trainer policy moves ``staleness`` small random steps away from the
    weights the engine holds.
    """
    V, T, N = int(setting["vocab"]), int(setting["T"]), int(setting["n"])
    policy = make_policy(V, int(setting["hidden"]), seed, logit_scale=1.0)
    pretrain_counting(policy, 32, int(setting["sft_steps"]), seed)
    params = [p for p in policy.parameters()]
    rollout = MismatchedRollout(
        policy,
        precision="bf16",
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
    gumbel = -torch.log(-torch.log(torch.rand((N, T, V), generator=gen).clamp_min(1e-20)))
    on = exact.sample(N, T, gen, gumbel=gumbel)
    off = rollout.sample(N, T, gen, gumbel=gumbel)
    mask = torch.ones(N, T)

    r_on = counting_reward(on.tokens, V, setting.get("reward", "prefix"))
    logp_on, _ = policy.token_log_probs(on.tokens)
    g_true = _flat_grad(((r_on - r_on.mean())[:, None] * logp_on).sum() / N, params, retain=False)

    r_off = counting_reward(off.tokens, V, setting.get("reward", "prefix"))
    adv = r_off - r_off.mean()
    logp_cur, _ = policy.token_log_probs(off.tokens)
    out: dict[str, dict[str, float]] = {}
    for i, method in enumerate(METHODS):
        w = method_weights(method, logp_cur, off.logp_roll, adv, mask)
        g = _flat_grad((w * adv[:, None] * logp_cur).sum() / N, params, retain=i < len(METHODS) - 1)
        kept = float((w.abs().sum(1) > 0).float().mean())
        out[method] = {
            "cosine": float(torch.nn.functional.cosine_similarity(g, g_true, dim=0)),
            "relative_bias": float((g - g_true).norm() / g_true.norm()),
            "masked_fraction": 1.0 - kept,
        }
    div = token_divergence(logp_cur, off.logp_roll, mask, "k2")
    info = {
        "spiked_sequences": float(off.spiked.any(1).float().mean()),
        "mean_token_k2": float(div.mean()),
        "on_policy_reward": float(r_on.mean()),
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
    policy = make_policy(V, int(setting["hidden"]), seed, logit_scale=1.0)
    pretrain_counting(policy, 32, int(setting["sft_steps"]), seed)
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
