"""TRM overhead against TRL's own GRPO loss and off-policy mask (the outside anchor).

Rows (``rows(size)``, size in tiny / quick / full; times are interleaved medians, one torch thread):

1. **GRPO loss + backward, TRL's own** ``GRPOTrainer.compute_loss`` on a random ``LlamaConfig`` model, same batch,
   same weights: ``TRMGRPOTrainer`` (TRM's max-k2 mask in the ``get_off_policy_mask`` hook) against TRL's
   ``GRPOTrainer`` with ``off_policy_mask_threshold`` (its own OPSM mask, DeepSeek-V3.2). Everything else (model
   forward, entropy, clipping, DAPO normalisation) is TRL's in both: the ratio is what TRM costs a TRL user.
2. **Mask only**: TRL's static ``GRPOTrainer.get_off_policy_mask`` (OPSM) against our
   ``trust_region_mask(token_divergence(..., "k2"), ...)`` on the same ``(B, T)`` log-probs with NaN padding.
3. Secondary (our own naive reference): one GRPO step with :func:`icml26.llm.trm.masked_policy_loss` against the
   same step with a plain clipped loss written inline (no mask).

    .venv/bin/python benchmarks/bench_trm.py [tiny|quick|full]
"""

from __future__ import annotations

import os
import sys
import tempfile
import warnings
from typing import Any

import torch

from icml26._core import single_torch_thread
from icml26._core.bench import BenchRow, interleaved_medians, print_rows
from icml26.llm.trm import masked_policy_loss, token_divergence, trust_region_mask

# model (layers, hidden, vocab), batch (B, prompt, completion), mask-only (B, T, calls per timing), repeats
SIZES: dict[str, dict[str, Any]] = {
    "tiny": {"model": (1, 32, 256), "batch": (4, 8, 16), "mask": (64, 256, 5), "repeat": 3},
    "quick": {"model": (2, 128, 2048), "batch": (8, 32, 96), "mask": (256, 2048, 5), "repeat": 5},
    "full": {"model": (4, 256, 8192), "batch": (8, 64, 192), "mask": (1024, 8192, 5), "repeat": 7},
}
DELTA = 0.05


def _model(layers: int, hidden: int, vocab: int) -> Any:
    from icml26.models import tiny_llama

    return tiny_llama(
        0,
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=int(hidden * 2.6875),
        num_hidden_layers=layers,
        num_attention_heads=max(1, hidden // 64),
        num_key_value_heads=max(1, hidden // 64),
    ).train()


def _batch(model: Any, B: int, P: int, C: int, vocab: int) -> dict[str, torch.Tensor]:
    """TRL's post-generation inputs: ragged completions, engine log-probs = ours + noise, NaN on padding."""
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, vocab, (B, P + C), generator=g)
    completion_mask = (torch.arange(C)[None] < torch.randint(C // 2, C + 1, (B,), generator=g)[:, None]).long()
    with torch.no_grad():
        logits = model(input_ids=ids).logits[:, P - 1 : -1]
        logp = torch.log_softmax(logits.float(), -1).gather(-1, ids[:, P:, None])[..., 0]
    sampling = (logp + 0.05 * torch.randn(logp.shape, generator=g)).masked_fill(completion_mask == 0, float("nan"))
    return {
        "prompt_ids": ids[:, :P],
        "prompt_mask": torch.ones(B, P, dtype=torch.long),
        "completion_ids": ids[:, P:],
        "completion_mask": completion_mask,
        "advantages": torch.randn(B, generator=g),
        "old_per_token_logps": logp,
        "sampling_per_token_logps": sampling,
        "num_items_in_batch": completion_mask.sum(),
    }


def _trainers(model: Any, out: str) -> tuple[Any, Any]:
    """TRL's GRPOTrainer with OPSM and our TRMGRPOTrainer on the same model (offline, no generation)."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from datasets import Dataset
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    from trl import GRPOConfig, GRPOTrainer

    from icml26.llm.trm import TRMGRPOConfig, TRMGRPOTrainer

    words = ["<pad>", "<eos>", "<unk>", *map(str, range(10))]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")
    common = {"output_dir": out, "per_device_train_batch_size": 4, "num_generations": 4, "report_to": "none"}
    common |= {"use_cpu": True, "save_strategy": "no"}
    data = Dataset.from_dict({"prompt": ["1 2"] * 4})

    def reward(completions: list[Any], **_: Any) -> list[float]:
        return [0.0] * len(completions)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no vLLM or rollout_func": the batch below carries engine log-probs
        kw = {"train_dataset": data, "processing_class": tokenizer}
        trl = GRPOTrainer(model, reward, GRPOConfig(**common, off_policy_mask_threshold=DELTA), **kw)
        trm = TRMGRPOTrainer(model, reward, TRMGRPOConfig(**common, trm_delta=DELTA), **kw)
    for trainer in (trl, trm):
        trainer.current_gradient_accumulation_steps = 1  # set by Trainer's loop, which we do not run
    return trl, trm


def _plain_grpo_loss(logp_cur, logp_old, logp_roll, adv, mask, clip_eps=0.2, is_cap=3.0):  # type: ignore[no-untyped-def]
    logp_roll = torch.where(mask.bool(), logp_roll, logp_old)  # padding holds NaN, as in TRL
    ratio = torch.exp(logp_cur - logp_old)
    surrogate = torch.minimum(ratio * adv[:, None], ratio.clamp(1 - clip_eps, 1 + clip_eps) * adv[:, None])
    return -(surrogate * torch.exp(logp_old - logp_roll).clamp(max=is_cap) * mask).sum() / mask.sum()


def _trm_loss(logp_cur, logp_old, logp_roll, adv, mask):  # type: ignore[no-untyped-def]
    return masked_policy_loss(logp_cur, logp_old, logp_roll, adv, mask, delta=DELTA).loss


def rows(size: str) -> list[BenchRow]:
    if size not in SIZES:
        raise ValueError(f"size must be one of {tuple(SIZES)}, got {size!r}")
    spec = SIZES[size]
    (layers, hidden, vocab), (B, P, C), repeat = spec["model"], spec["batch"], spec["repeat"]
    out: list[BenchRow] = []
    with single_torch_thread(), tempfile.TemporaryDirectory() as tmp:
        model = _model(layers, hidden, vocab)
        inputs = _batch(model, B, P, C, vocab)
        trl, trm = _trainers(model, tmp)

        def trl_step(trainer: Any) -> None:
            loss = trainer.compute_loss(model, inputs)
            if not torch.isfinite(loss):
                raise RuntimeError(f"{type(trainer).__name__} gave a non-finite loss")
            loss.backward()
            model.zero_grad(set_to_none=True)

        t = interleaved_medians({"trm": lambda: trl_step(trm), "trl": lambda: trl_step(trl)}, repeat=repeat)
        workload = f"GRPO loss+backward, Llama {layers}x{hidden}, V={vocab}, {B}x{P}+{C}"
        out.append(
            BenchRow(
                "trm",
                workload,
                "TRL 1.16 GRPOTrainer.compute_loss with OPSM",
                t["trm"],
                t["trl"],
                "s",
                ours_name="TRMGRPOTrainer (same TRL loss, TRM hook)",
                notes="ratio < 1 = TRM's extra cost over TRL's own off-policy mask",
            )
        )

        # mask only, on a larger (B, T) grid: TRL's static OPSM against our divergence + max mask
        Bm, Tm, calls = spec["mask"]
        g = torch.Generator().manual_seed(1)
        logp = -3 * torch.rand(Bm, Tm, generator=g)
        mask = (torch.arange(Tm)[None] < torch.randint(Tm // 2, Tm + 1, (Bm,), generator=g)[:, None]).float()
        sampling = (logp + 0.1 * torch.randn(Bm, Tm, generator=g)).masked_fill(mask == 0, float("nan"))
        adv = torch.randn(Bm, 1, generator=g)
        opsm = type(trl).get_off_policy_mask

        def ours_mask() -> None:
            for _ in range(calls):
                trust_region_mask(token_divergence(logp, sampling, mask, "k2"), mask, DELTA)

        def trl_mask() -> None:
            for _ in range(calls):
                opsm(adv, logp, sampling, mask, DELTA)

        t = interleaved_medians({"ours": ours_mask, "trl": trl_mask}, repeat=max(repeat, 5))
        out.append(
            BenchRow(
                "trm",
                f"sequence mask only, {Bm}x{Tm} tokens",
                "TRL 1.16 GRPOTrainer.get_off_policy_mask (OPSM)",
                t["ours"] / calls,
                t["trl"] / calls,
                "s",
                ours_name="trust_region_mask(token_divergence(k2))",
                notes="ours also validates inputs (NaN check, shapes) and takes a max instead of a mean",
            )
        )

        # secondary: our masked loss against a plain inline clipped loss, whole step on the same model
        ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], 1)
        cmask = inputs["completion_mask"].float()

        def step(loss_fn: Any) -> None:
            logits = model(input_ids=ids).logits[:, P - 1 : -1]
            logp_cur = torch.log_softmax(logits.float(), -1).gather(-1, ids[:, P:, None])[..., 0]
            loss = loss_fn(logp_cur, logp_cur.detach(), inputs["sampling_per_token_logps"], inputs["advantages"], cmask)
            loss.backward()
            model.zero_grad(set_to_none=True)

        t = interleaved_medians({"ours": lambda: step(_trm_loss), "plain": lambda: step(_plain_grpo_loss)}, repeat)
        out.append(
            BenchRow(
                "trm",
                f"GRPO step, Llama {layers}x{hidden}, {B}x{P}+{C}",
                "plain clipped GRPO loss written inline (ours, naive; no mask)",
                t["ours"],
                t["plain"],
                "s",
                ours_name="masked_policy_loss",
                notes="secondary row: our own naive reference, not an outside implementation",
            )
        )
    return out


if __name__ == "__main__":
    print_rows(rows(sys.argv[1] if len(sys.argv) > 1 else "full"))
