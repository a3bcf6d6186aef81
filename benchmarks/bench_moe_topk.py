"""TopKMoE (tokens sorted by expert, grouped_mm) against transformers' Mixtral sparse MoE block (the outside anchor)
and a per-expert Python loop, on CPU at the same shapes and weights; forward + backward of one block.

Rows (``rows(size)``, size in tiny / quick / full; interleaved medians, one torch thread):

1. transformers ``MixtralSparseMoeBlock`` with its eager experts (a Python loop over the experts that received
   tokens: transformers' reference path) vs ``TopKMoE``;
2. the same block with transformers' own ``grouped_mm`` experts (``experts_implementation="grouped_mm"``), the
   strongest outside anchor: the same algorithm, so the ratio shows the cost of our router, balancing loss and
   layout, not of a different kernel;
3. secondary: ``TopKMoE(experts_implementation="eager")``, our own per-expert loop.

Both blocks hold the same weights (ours transposed into Mixtral's (expert, out, in) layout), and their outputs are
checked to agree before timing. Mixtral's block computes no balancing loss (transformers adds it in the causal-LM
head), ours does, and is still timed with it.

    .venv/bin/python benchmarks/bench_moe_topk.py [tiny|quick|full]
"""

from __future__ import annotations

import sys
from typing import Any

import torch

from icml26._core import single_torch_thread
from icml26._core.bench import BenchRow, interleaved_medians, print_rows
from icml26.llm.moe_topk import TopKMoE

# tokens, hidden, intermediate (per expert), experts, K, repeats
SIZES: dict[str, list[tuple[int, int, int, int, int, int]]] = {
    "tiny": [(256, 16, 32, 16, 2, 3)],
    "quick": [(2048, 64, 64, 16, 2, 5), (2048, 64, 64, 16, 8, 5)],
    "full": [(8192, 128, 256, 16, 2, 7), (8192, 128, 256, 16, 8, 7), (8192, 128, 128, 64, 8, 7)],
}


def mixtral_block(ours: TopKMoE, implementation: str) -> Any:
    """transformers' Mixtral sparse block with the weights of ``ours``."""
    from transformers import MixtralConfig
    from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock

    config = MixtralConfig(
        hidden_size=ours.hidden_size,
        intermediate_size=ours.intermediate_size,
        num_local_experts=ours.num_experts,
        num_experts_per_tok=ours.num_experts_per_tok,
        router_jitter_noise=0.0,
    )
    config._experts_implementation = implementation
    block = MixtralSparseMoeBlock(config)
    with torch.no_grad():
        block.gate.weight.copy_(ours.gate.weight)
        block.experts.gate_up_proj.copy_(ours.gate_up_proj.transpose(1, 2))
        block.experts.down_proj.copy_(ours.down_proj.transpose(1, 2))
    return block.train()


def _step(module: Any, x: torch.Tensor, grad: torch.Tensor, ours: bool) -> None:
    module.zero_grad(set_to_none=True)
    x.grad = None
    if ours:
        y, aux = module(x)
        (y * grad).sum().add(aux).backward()
    else:
        (module(x) * grad).sum().backward()


def rows(size: str) -> list[BenchRow]:
    if size not in SIZES:
        raise ValueError(f"size must be one of {tuple(SIZES)}, got {size!r}")
    out = []
    with single_torch_thread():
        for n, h, i, m, k, repeat in SIZES[size]:
            torch.manual_seed(0)
            ours = TopKMoE(h, i, m, k).train()
            loop = TopKMoE(h, i, m, k, experts_implementation="eager").train()
            loop.load_state_dict(ours.state_dict())
            anchors = {name: mixtral_block(ours, name) for name in ("eager", "grouped_mm")}
            x = torch.randn(1, n, h, requires_grad=True)
            grad = torch.randn(1, n, h)
            with torch.no_grad():
                reference = ours(x)[0]
                for name, block in anchors.items():
                    err = (block(x) - reference).abs().max().item()
                    if err > 1e-4:
                        raise AssertionError(f"Mixtral ({name}) and TopKMoE disagree by {err}")
            t = interleaved_medians(
                {
                    "ours": lambda ours=ours, x=x, g=grad: _step(ours, x, g, True),
                    "loop": lambda loop=loop, x=x, g=grad: _step(loop, x, g, True),
                    **{name: (lambda b=b, x=x, g=grad: _step(b, x, g, False)) for name, b in anchors.items()},
                },
                repeat=repeat,
            )
            work = f"fwd+bwd N={n} H={h} I={i} M={m} K={k}"
            extra = {"tokens": n, "hidden": h, "intermediate": i, "experts": m, "k": k}
            out += [
                BenchRow(
                    "moe_topk",
                    work,
                    "transformers MixtralSparseMoeBlock (eager experts)",
                    t["ours"],
                    t["eager"],
                    "s",
                    extra=extra,
                    notes="same weights; ours includes the balancing loss",
                ),
                BenchRow(
                    "moe_topk",
                    work,
                    "transformers MixtralSparseMoeBlock (grouped_mm experts)",
                    t["ours"],
                    t["grouped_mm"],
                    "s",
                    extra=extra,
                    notes="the same kernel family as ours",
                ),
                BenchRow(
                    "moe_topk",
                    work,
                    "per-expert Python loop (ours, eager)",
                    t["ours"],
                    t["loop"],
                    "s",
                    extra=extra,
                    notes="secondary: our own naive loop",
                ),
            ]
    return out


if __name__ == "__main__":
    print_rows(rows(sys.argv[1] if len(sys.argv) > 1 else "full"))
