"""LoRA-ETF: our A initialisation against PEFT's own ``init_lora_weights="orthogonal"``, and our minimum-coherence
frame against the plain UNTF projection.

Anchor (outside implementation): PEFT's ``"orthogonal"`` LoRA init, run as PEFT runs it
(``LoraLayer.orthogonal_init`` on every LoRA layer of the model): A = (G Q_odd)ᵀ / 10 and B = (H Q_even) / 10
from a random orthogonal r x r matrix Q, so B A = 0 at init (a no-op) with B ≠ 0, and A of rank r/2. It is the
"tight-ish, structured A" a PEFT user would otherwise reach for. Rows (ratio > 1: ours is better):

- time to initialise every LoRA A of a Llama with SmolLM2's attention shapes (q/k/v/o, in_features 576, r = 8):
  ``apply_etf_init`` (one minimum-coherence UNTF per shape, 100 descent steps, then a signed column permutation
  per layer) against PEFT's ``orthogonal_init`` on the same layers (ours is slower: it solves a small
  optimisation once per shape);
- what the first update keeps of a random gradient, cos²(G, G AᵀA) / (r/n) (1 = the tight maximum; higher is
  better), and the coherence of A's columns (lower is better), for the A each method produced on the first layer;
- secondary (ours, naive): the minimum-coherence UNTF against the plain UNTF projection (alternating column
  normalisation and the polar projection, Strohmer & Heath 2003, no coherence descent): time and coherence, with
  the Levenshtein bound, the best possible coherence at these sizes, in the notes.

The earlier naive anchor (Tropp et al.'s alternating projection on the n x n Gram, aimed at the Welch bound) was
dropped: the Welch bound is unattainable for n > r(r+1)/2, and that projection degenerates there (coherence 1.000
at n = 576).

    .venv/bin/python benchmarks/bench_lora_etf.py [tiny|quick|full]
"""

from __future__ import annotations

import sys

import torch

from icml26._core.bench import BenchRow, interleaved_medians, print_rows
from icml26.llm.lora_etf import (
    apply_etf_init,
    coherence,
    coherence_bounds,
    etf_matrix,
    lora_linear_layers,
    untf,
    update_alignment,
)

PAPER = "lora_etf"
SIZES = {  # Llama layers with SmolLM2's attention shapes, frame sizes (r, n) for the construction rows, repeats
    "tiny": {"layers": 1, "hidden": 48, "heads": (4, 2), "frames": [(8, 64)], "repeat": 1},
    "quick": {"layers": 4, "hidden": 576, "heads": (9, 3), "frames": [(8, 576)], "repeat": 3},
    "full": {"layers": 30, "hidden": 576, "heads": (9, 3), "frames": [(8, 576), (16, 4096)], "repeat": 5},
}
ANCHOR = 'PEFT init_lora_weights="orthogonal" (LoraLayer.orthogonal_init)'
R = 8


def _peft_model(layers: int, hidden: int, heads: tuple[int, int]):  # type: ignore[no-untyped-def]
    """A random Llama with SmolLM2's attention shapes (small vocabulary: LoRA does not touch it) and two LoRA
    adapters on q/k/v/o: ``default`` for ours, ``peft`` for the anchor."""
    from peft import LoraConfig, get_peft_model

    from icml26.models import tiny_llama

    base = tiny_llama(
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads[0],
        num_key_value_heads=heads[1],
        vocab_size=256,
    )
    config = LoraConfig(r=R, lora_alpha=2 * R, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"])
    model = get_peft_model(base, config)
    model.add_adapter("peft", config)
    return model


def _gradient_share(A: torch.Tensor) -> float:
    """cos²(G, G AᵀA) / (r/n) for a fixed random gradient G (64 x n): 1 for any tight A."""
    r, n = A.shape
    G = torch.randn(64, n, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    return update_alignment(G, A.double()) / (r / n)


def rows(size: str = "full") -> list[BenchRow]:
    spec = SIZES[size]
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = _peft_model(spec["layers"], spec["hidden"], spec["heads"])
    anchor_layers = [layer for _, layer in lora_linear_layers(model, "peft")]
    n = spec["hidden"]
    workload = f"{len(anchor_layers)} LoRA layers (q/k/v/o of {spec['layers']} Llama layers), r={R}, n={n}"

    def ours() -> None:
        apply_etf_init(model, seed=0)

    def anchor() -> None:
        for layer in anchor_layers:
            layer.orthogonal_init("peft")

    times = interleaved_medians({"ours": ours, "anchor": anchor}, repeat=spec["repeat"])
    a_ours = next(iter(lora_linear_layers(model)))[1].lora_A["default"].weight.detach()
    a_peft = anchor_layers[0].lora_A["peft"].weight.detach()
    sv = torch.linalg.svdvals(a_peft.double())
    rank_peft = int((sv > 1e-4 * sv[0]).sum())  # A is float32: its zero singular values are ~1e-7 sv[0]
    out = [
        BenchRow(
            PAPER,
            f"init every LoRA A: {workload}",
            ANCHOR,
            times["ours"],
            times["anchor"],
            "s",
            notes="ours builds one minimum-coherence UNTF per shape (100 descent steps), then a signed column "
            "permutation per layer; the anchor draws a QR per layer",
        ),
        BenchRow(
            PAPER,
            f"first update's share of a random gradient, 1st layer: r={R}, n={n}",
            ANCHOR,
            _gradient_share(a_ours),
            _gradient_share(a_peft),
            "cos²(G, G AᵀA) / (r/n)",
            better="higher",
            notes=f"1 = the tight maximum; PEFT's orthogonal A has rank {rank_peft} of {R} (and B ≠ 0 at init)",
        ),
        BenchRow(
            PAPER,
            f"coherence of A's columns, 1st layer: r={R}, n={n}",
            ANCHOR,
            coherence(a_ours),
            coherence(a_peft),
            "coherence",
            notes=_bounds_note(R, n),
        ),
    ]
    for r, n_frame in spec["frames"]:
        frames: dict[str, torch.Tensor] = {}

        def ours_frame(r: int = r, n: int = n_frame, frames: dict[str, torch.Tensor] = frames) -> None:
            frames["ours"] = etf_matrix(r, n, "untf", coherence_iters=100, seed=0, dtype=torch.float64)

        def plain_frame(r: int = r, n: int = n_frame, frames: dict[str, torch.Tensor] = frames) -> None:
            frames["plain"] = untf(r, n, seed=0)

        t = interleaved_medians({"ours": ours_frame, "plain": plain_frame}, repeat=spec["repeat"])
        plain = "plain UNTF projection (column normalisation + polar, no coherence descent; ours, naive)"
        out += [
            BenchRow(PAPER, f"build a frame: r={r}, n={n_frame}", plain, t["ours"], t["plain"], "s"),
            BenchRow(
                PAPER,
                f"coherence of the frame: r={r}, n={n_frame}",
                plain,
                coherence(frames["ours"]),
                coherence(frames["plain"]),
                "coherence",
                notes=_bounds_note(r, n_frame),
            ),
        ]
    return out


def _bounds_note(r: int, n: int) -> str:
    b = coherence_bounds(r, n)
    text = f"lower bounds: Welch {b['welch']:.3f}"
    if b["levenshtein"] is not None:
        text += f", orthoplex {b['orthoplex']:.3f}, Levenshtein {b['levenshtein']:.3f} (best possible >= this)"
    return text


if __name__ == "__main__":
    print_rows(rows(sys.argv[1] if len(sys.argv) > 1 else "full"))
