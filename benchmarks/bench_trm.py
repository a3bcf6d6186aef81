"""TRM overhead: what the trust-region mask and masked loss add to a GRPO training step.

One GRPO step on a small random ``LlamaConfig`` model (4 layers, hidden 256, vocabulary 8192; batch 8 x 256
tokens, 192 of them completion, ragged lengths): forward, per-token log-probs of the completion, loss, backward.
Two losses, timed interleaved in the same run on the same batch:

- ``grpo``: the clipped surrogate with TRL's truncated rollout correction, no mask (written inline);
- ``trm``: :func:`icml26.llm.trm.masked_policy_loss` (divergence, max-mask, masked loss, masked fraction).

The goal is a ratio trm / grpo below 1.05 (under 5% overhead). The mask and loss alone are also timed.

    .venv/bin/python benchmarks/bench_trm.py
"""

from __future__ import annotations

import statistics
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from icml26.llm.trm import masked_policy_loss

B, PROMPT, COMPLETION, VOCAB = 8, 64, 192, 8192
REPEATS = 7


def grpo_loss(logp_cur, logp_old, logp_roll, adv, mask, clip_eps=0.2, is_cap=3.0):
    logp_roll = torch.where(mask.bool(), logp_roll, logp_old)  # padding may hold NaN, as in TRL
    ratio = torch.exp(logp_cur - logp_old)
    surrogate = torch.minimum(ratio * adv[:, None], ratio.clamp(1 - clip_eps, 1 + clip_eps) * adv[:, None])
    weight = torch.exp(logp_old - logp_roll).clamp(max=is_cap)
    return -(surrogate * weight * mask).sum() / mask.sum()


def trm_loss(logp_cur, logp_old, logp_roll, adv, mask):
    return masked_policy_loss(logp_cur, logp_old, logp_roll, adv, mask, delta=0.05).loss


def step(model, ids, mask, logp_roll, adv, loss_fn) -> float:
    start = time.perf_counter()
    logits = model(input_ids=ids).logits[:, PROMPT - 1 : -1]
    logp_cur = torch.log_softmax(logits.float(), -1).gather(-1, ids[:, PROMPT:, None])[..., 0]
    loss = loss_fn(logp_cur, logp_cur.detach(), logp_roll, adv, mask)
    loss.backward()
    model.zero_grad(set_to_none=True)
    return time.perf_counter() - start


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=256,
        intermediate_size=688,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=4,
    )
    model = LlamaForCausalLM(config)
    ids = torch.randint(0, VOCAB, (B, PROMPT + COMPLETION))
    lengths = torch.randint(COMPLETION // 2, COMPLETION + 1, (B,))
    mask = (torch.arange(COMPLETION)[None] < lengths[:, None]).float()
    with torch.no_grad():
        logits = model(input_ids=ids).logits[:, PROMPT - 1 : -1]
        logp = torch.log_softmax(logits.float(), -1).gather(-1, ids[:, PROMPT:, None])[..., 0]
    logp_roll = (logp + 0.05 * torch.randn_like(logp)).masked_fill(mask == 0, float("nan"))
    adv = torch.randn(B)

    times: dict[str, list[float]] = {"grpo": [], "trm": []}
    step(model, ids, mask, logp_roll, adv, grpo_loss)  # warm-up
    for i in range(REPEATS):  # interleaved, alternating order, so drifts in machine load hit both alike
        order = (("grpo", grpo_loss), ("trm", trm_loss)) if i % 2 == 0 else (("trm", trm_loss), ("grpo", grpo_loss))
        for name, fn in order:
            times[name].append(step(model, ids, mask, logp_roll, adv, fn))
    med = {k: statistics.median(v) for k, v in times.items()}

    lp = logp.clone().requires_grad_(True)
    loss_only: dict[str, list[float]] = {"grpo": [], "trm": []}
    for _ in range(50):
        for name, fn in (("grpo", grpo_loss), ("trm", trm_loss)):
            start = time.perf_counter()
            fn(lp, lp.detach(), logp_roll, adv, mask).backward()
            loss_only[name].append(time.perf_counter() - start)
    loss_med = {k: statistics.median(v) for k, v in loss_only.items()}
    assert torch.isfinite(grpo_loss(lp, lp.detach(), logp_roll, adv, mask))
    assert torch.isfinite(trm_loss(lp, lp.detach(), logp_roll, adv, mask))
    print(f"model: Llama 4x256, vocab {VOCAB}; batch {B} x {PROMPT + COMPLETION} tokens; 1 thread; median of {REPEATS}")
    print(f"GRPO step, plain loss:   {med['grpo'] * 1e3:8.1f} ms")
    print(f"GRPO step, TRM loss:     {med['trm'] * 1e3:8.1f} ms")
    print(f"ratio TRM / plain:       {med['trm'] / med['grpo']:8.3f}  (goal < 1.05)")
    print(f"loss + backward only:    plain {loss_med['grpo'] * 1e3:.3f} ms, TRM {loss_med['trm'] * 1e3:.3f} ms")
    extra = (loss_med["trm"] - loss_med["grpo"]) / med["grpo"]
    print(f"TRM's extra loss time as a share of the step: {100 * extra:.2f}%")


if __name__ == "__main__":
    main()
