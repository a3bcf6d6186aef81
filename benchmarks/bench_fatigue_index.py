"""Fatigue Index: the price of monitoring generation, and the per-probe arithmetic against outside implementations.

Rows (one thread, :func:`icml26._core.bench.interleaved_medians`):

- generation with the monitor (:func:`generate_with_fatigue`: hooks on the last attention, the final norm and the
  output embeddings, the FI stopping criterion every token) against plain ``model.generate`` on the same eager
  model, prompts and greedy tokens; the ratio is plain / monitored (below 1: the monitor's overhead; the goal is
  under 10%, ratio > 0.91). tiny: a tiny random Llama; quick/full: SmolLM2-135M-Instruct (Q4_1-dequantised);
- E_t on a batch of raw logits (the vocabulary of SmolLM2, 49152) against ``torch.distributions.Categorical``'s
  entropy and against ``scipy.stats.entropy`` of the softmax (the values are asserted equal first);
- the whole probe (E_t, D_t, A_t, the normalisers and FI) on one step's tensors against the same quantities computed
  with the outside implementations (Categorical entropy, ``torch.cdist`` for the drift, a plain slice mean for A_t);
- secondary: FI of many probes against a per-element Python loop written here.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import torch

from icml26._core.bench import BenchRow, interleaved_medians, print_rows
from icml26.serving.fatigue_index import (
    FatigueConfig,
    embedding_drift,
    fatigue_index,
    generate_with_fatigue,
    predictive_entropy,
    prompt_attention,
)

PAPER = "fatigue_index"
GEN = {"tiny": (4, 16), "quick": (4, 12), "full": (8, 32)}  # (prompts, new tokens)
LOGITS = {"tiny": (8, 4096), "quick": (32, 49152), "full": (64, 49152)}
REPEATS = {"tiny": 3, "quick": 5, "full": 7}
GEN_REPEATS = {"tiny": 3, "quick": 2, "full": 3}


def _model(size: str) -> tuple[object, object, list[object]]:
    if size == "tiny":
        from icml26.models import tiny_llama

        model = tiny_llama(seed=0, max_position_embeddings=128, attn_implementation="eager")
        rng = np.random.default_rng(0)
        return model, None, [rng.integers(0, 64, size=10).tolist() for _ in range(GEN[size][0])]
    from icml26.models import load_smollm2
    from icml26.serving.fatigue_index import make_suite

    model, tokenizer = load_smollm2(attn_implementation="eager")
    return model, tokenizer, [t.prompt for t in make_suite(0, per_family=2, needle_words=30)][: GEN[size][0]]


def _generation_row(size: str) -> BenchRow:
    from icml26.serving.fatigue_index.monitor import _encode

    model, tokenizer, prompts = _model(size)
    _, enc = _encode(tokenizer, prompts, True)
    n = GEN[size][1]
    kw = {"max_new_tokens": n, "min_new_tokens": n, "do_sample": False}
    pad = getattr(tokenizer, "pad_token_id", None) or 0

    def plain() -> None:
        with torch.no_grad():
            model.generate(**enc, pad_token_id=pad, **kw)

    def monitored() -> None:
        generate_with_fatigue(model, tokenizer, prompts, **kw)

    t = interleaved_medians({"monitored": monitored, "plain": plain}, repeat=GEN_REPEATS[size])
    name = "tiny random Llama" if size == "tiny" else "SmolLM2-135M-Instruct (Q4_1-dequantised)"
    return BenchRow(
        PAPER,
        f"generate {len(prompts)} prompts x {n} tokens, {name}",
        "plain model.generate (same eager model)",
        t["monitored"],
        t["plain"],
        "s",
        notes=f"overhead {t['monitored'] / t['plain'] - 1:+.1%} (goal < 10%); greedy, EOS suppressed",
    )


def _entropy_rows(size: str) -> list[BenchRow]:
    from scipy.stats import entropy as scipy_entropy

    b, v = LOGITS[size]
    z = torch.randn(b, v, generator=torch.Generator().manual_seed(0)) * 4
    ours = predictive_entropy(z)
    cat = torch.distributions.Categorical(logits=z).entropy()
    sp = scipy_entropy(torch.softmax(z.double(), -1).numpy(), axis=-1)
    assert torch.allclose(ours, cat, atol=1e-4) and np.allclose(ours.numpy(), sp, atol=1e-4)
    t = interleaved_medians(
        {
            "ours": lambda: predictive_entropy(z),
            "categorical": lambda: torch.distributions.Categorical(logits=z).entropy(),
            "scipy": lambda: scipy_entropy(torch.softmax(z, -1).numpy(), axis=-1),
        },
        repeat=REPEATS[size],
    )
    work = f"E_t of {b} x {v} raw logits"
    return [
        BenchRow(PAPER, work, "torch.distributions.Categorical.entropy", t["ours"], t["categorical"], "s"),
        BenchRow(PAPER, work, "scipy.stats.entropy (softmax in torch)", t["ours"], t["scipy"], "s"),
    ]


def _probe_row(size: str) -> BenchRow:
    b, v = LOGITS[size]
    keys, heads, hidden, k = 256, 9, 576, 64
    g = torch.Generator().manual_seed(1)
    z = torch.randn(b, v, generator=g) * 4
    w = torch.softmax(torch.randn(b, heads, keys, generator=g), -1)
    h, h0 = torch.randn(b, hidden, generator=g), torch.randn(b, hidden, generator=g)
    cfg = FatigueConfig()

    def ours() -> np.ndarray:
        return fatigue_index(prompt_attention(w, k=k), predictive_entropy(z), embedding_drift(h, h0), cfg)

    def outside() -> np.ndarray:
        a = w[:, :, :k].mean(dim=(1, 2))
        e = torch.distributions.Categorical(logits=z).entropy()
        d = torch.cdist(h[:, None], h0[:, None])[:, 0, 0]
        low, high = cfg.entropy_band
        pe = torch.where(e < low, (low - e) / low, torch.where(e > high, (e - high) / cfg.entropy_beta, 0.0))
        fi = 0.40 * (1 - a.clamp(0, 1)) + 0.35 * pe.clamp(0, 1) + 0.25 * (d / cfg.drift_kappa).clamp(0, 1)
        return fi.double().numpy()

    assert np.allclose(ours(), outside(), atol=1e-5)
    t = interleaved_medians({"ours": ours, "outside": outside}, repeat=REPEATS[size])
    return BenchRow(
        PAPER,
        f"one probe (A, E, D, FI) for {b} sequences, vocab {v}",
        "Categorical entropy + torch.cdist + slice mean (outside)",
        t["ours"],
        t["outside"],
        "s",
    )


def _loop_row(size: str) -> BenchRow:
    n = {"tiny": 2_000, "quick": 20_000, "full": 100_000}[size]
    rng = np.random.default_rng(2)
    a, e, d = rng.random(n) * 0.05, rng.random(n) * 8, rng.random(n) * 40
    cfg = FatigueConfig()

    def loop() -> list[float]:
        low, high = cfg.entropy_band
        out = []
        for ai, ei, di in zip(a, e, d, strict=True):
            pe = (low - ei) / low if ei < low else ((ei - high) / cfg.entropy_beta if ei > high else 0.0)
            out.append(
                0.40 * (1 - min(max(ai, 0), 1)) + 0.35 * min(max(pe, 0), 1) + 0.25 * min(di / cfg.drift_kappa, 1)
            )
        return out

    assert np.allclose(fatigue_index(a, e, d, cfg), loop())
    t = interleaved_medians({"ours": lambda: fatigue_index(a, e, d, cfg), "loop": loop}, repeat=REPEATS[size])
    return BenchRow(PAPER, f"FI of {n} probes", "per-element Python loop (secondary, ours)", t["ours"], t["loop"], "s")


def rows(size: str) -> list[BenchRow]:
    if size not in GEN:
        raise ValueError(f"size must be one of {tuple(GEN)}, got {size!r}")
    torch.set_num_threads(1)
    out = [*_entropy_rows(size), _probe_row(size), _loop_row(size), _generation_row(size)]
    assert all(math.isfinite(r.ratio) for r in out)
    return out


if __name__ == "__main__":
    print_rows(rows(sys.argv[1] if len(sys.argv) > 1 else "full"))
