"""Tie-aware DPO overhead against TRL's own DPO loss on the same batch (the outside anchor).

Rows (``rows(size)``, size in tiny / quick / full; interleaved medians, one torch thread):

1. **DPO step, TRL's own**: ``DPOTrainer.compute_loss`` + backward (the ``"sigmoid"`` loss) against
   ``TiesDPOTrainer.compute_loss`` + backward (Rao-Kupper, a quarter of the pairs tied) on the same collated batch of
   a random ``LlamaConfig`` model, same weights, same reference model: what ties cost a TRL user per step (TRL's
   path also computes its ``mean_logits``/``is_top1`` metric outputs, which ours skips). Goal: under 10% overhead.
2. **Loss only**: TRL 1.16's sigmoid expression ``-logsigmoid(beta * delta).mean()`` (written here as TRL's
   ``_compute_loss`` has it: TRL has no standalone loss function) against :func:`tie_dpo_loss` (Rao-Kupper, input
   checks included) on the same summed log-probs, forward + backward. Microseconds either way.

    .venv/bin/python benchmarks/bench_tie_aware_alignment.py [tiny|quick|full]
"""

from __future__ import annotations

import copy
import os
import sys
import tempfile
import warnings
from typing import Any

import torch
import torch.nn.functional as F

from icml26._core import single_torch_thread
from icml26._core.bench import BenchRow, interleaved_medians, print_rows
from icml26.llm.tie_aware_alignment import tie_dpo_loss

# model (layers, hidden, vocab), batch (pairs, prompt tokens, completion tokens), loss-only pairs, repeats
SIZES: dict[str, dict[str, Any]] = {
    "tiny": {"model": (1, 32, 256), "batch": (4, 8, 8), "pairs": 1024, "repeat": 3},
    "quick": {"model": (2, 128, 2048), "batch": (8, 32, 64), "pairs": 16384, "repeat": 5},
    "full": {"model": (4, 256, 8192), "batch": (8, 64, 128), "pairs": 65536, "repeat": 7},
}
BETA, NU = 0.1, 2.0


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
    )


def _tokenizer(vocab: int) -> Any:
    from icml26.llm.tie_aware_alignment.lm import word_tokenizer

    return word_tokenizer([f"w{i}" for i in range(vocab - 3)])


def _dataset(pairs: int, prompt: int, completion: int, vocab: int) -> Any:
    from datasets import Dataset

    g = torch.Generator().manual_seed(0)

    def text(n: int) -> str:
        return " ".join(f"w{int(i)}" for i in torch.randint(0, vocab - 3, (n,), generator=g))

    return Dataset.from_dict(
        {
            "prompt": [text(prompt) for _ in range(pairs)],
            "chosen": [" " + text(completion) for _ in range(pairs)],
            "rejected": [" " + text(completion - 1) for _ in range(pairs)],
            "is_tie": [i % 4 == 0 for i in range(pairs)],
        }
    )


def _trainers(size: dict[str, Any], out: str) -> tuple[Any, Any, dict[str, Any]]:
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")
    from datasets.utils.logging import disable_progress_bar
    from trl import DPOConfig, DPOTrainer

    disable_progress_bar()

    from icml26.llm.tie_aware_alignment import TiesDPOConfig, TiesDPOTrainer

    layers, hidden, vocab = size["model"]
    pairs, prompt, completion = size["batch"]
    data, tokenizer = _dataset(pairs, prompt, completion, vocab), _tokenizer(vocab)
    common = {"output_dir": out, "report_to": "none", "use_cpu": True, "beta": BETA, "disable_tqdm": True}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        policy, ref = _model(layers, hidden, vocab), _model(layers, hidden, vocab)
        trl = DPOTrainer(model=policy, ref_model=ref, args=DPOConfig(**common),
                         train_dataset=data.remove_columns("is_tie"), processing_class=tokenizer)  # fmt: skip
        ours = TiesDPOTrainer(model=copy.deepcopy(policy), ref_model=copy.deepcopy(ref),
                              args=TiesDPOConfig(**common, tie_model="rao_kupper", nu=NU), train_dataset=data,
                              processing_class=tokenizer)  # fmt: skip
    batch = ours.data_collator([ours.train_dataset[i] for i in range(pairs)])
    return trl, ours, batch


def _step(trainer: Any, batch: dict[str, Any]) -> None:
    trainer.model.zero_grad(set_to_none=True)
    trainer.compute_loss(trainer.model, batch).backward()


def rows(size: str = "full") -> list[BenchRow]:
    if size not in SIZES:
        raise ValueError(f"size must be one of {tuple(SIZES)}, got {size!r}")
    cfg = SIZES[size]
    out = []
    with single_torch_thread(), tempfile.TemporaryDirectory() as tmp:
        trl, ours, batch = _trainers(cfg, tmp)
        plain = {k: v for k, v in batch.items() if k != "is_tie"}
        t = interleaved_medians({"ours": lambda: _step(ours, batch), "trl": lambda: _step(trl, plain)}, cfg["repeat"])
        layers, hidden, vocab = cfg["model"]
        pairs, prompt, completion = cfg["batch"]
        out.append(
            BenchRow(
                "tie_aware_alignment",
                f"DPO step fwd+bwd, Llama {layers}x{hidden} V={vocab}, {pairs} pairs x {prompt}+{completion} tok",
                "TRL 1.16 DPOTrainer.compute_loss (sigmoid)",
                t["ours"],
                t["trl"],
                "s",
                ours_name="TiesDPOTrainer (Rao-Kupper, 25% ties)",
                notes="same batch, weights and reference model; TRL's path also builds mean_logits/is_top1 metrics",
            )
        )
        n = cfg["pairs"]
        g = torch.Generator().manual_seed(1)
        logps = [torch.randn(n, generator=g) * 5 for _ in range(4)]
        labels = torch.where(torch.arange(n) % 4 == 0, 0, 1)
        leaf = [x.clone().requires_grad_(True) for x in logps]

        def trl_loss() -> None:
            delta = (leaf[0] - leaf[2]) - (leaf[1] - leaf[3])
            (-F.logsigmoid(BETA * delta)).mean().backward()

        def tie_loss() -> None:
            tie_dpo_loss(*leaf, labels, beta=BETA, nu=NU, model="rao_kupper").backward()

        t = interleaved_medians({"ours": tie_loss, "trl": trl_loss}, repeat=cfg["repeat"] * 5)
        out.append(
            BenchRow(
                "tie_aware_alignment",
                f"loss only fwd+bwd, {n} pairs (summed log-probs given)",
                "TRL 1.16 sigmoid loss expression",
                t["ours"],
                t["trl"],
                "s",
                ours_name="tie_dpo_loss (Rao-Kupper, checks included)",
                notes="the loss is microseconds against a model step (row 1)",
            )
        )
    return out


if __name__ == "__main__":
    print_rows(rows(sys.argv[1] if len(sys.argv) > 1 else "full"))
