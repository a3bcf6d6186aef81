"""Frame construction time: our minimum-coherence UNTF against naive alternating projection on the Gram.

Ours (``etf_matrix(kind="untf")``): UNTF by column normalisation + polar projection, then p-frame-potential
descent with re-projection; O(n² r) per step. The anchor (Tropp et al. 2005 style, aimed at the Welch bound):
alternate Gram clipping and a rank-r eigen-projection of the n x n Gram; O(n³) per step.

The anchor is run for the same number of steps as ours (100) where that is affordable (n = 576); at n = 4096 a
single eigendecomposition takes seconds, so it runs ``NAIVE_STEPS_LARGE`` steps and its time is extrapolated
linearly to 100 (reported as such). Coherence vs the Welch bound is printed for every frame.

    .venv/bin/python benchmarks/bench_lora_etf.py
"""

from __future__ import annotations

import time

import torch

from icml26.llm.lora_etf import coherence, etf_matrix, welch_bound
from icml26.llm.lora_etf.frames import alternating_projection_gram

STEPS = 100
NAIVE_STEPS_LARGE = 3


def timed(fn):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def main() -> None:
    torch.set_num_threads(1)
    print(f"single thread; {STEPS} descent steps for ours")
    for r, n in ((8, 576), (16, 4096)):
        ours, t_ours = timed(lambda r=r, n=n: etf_matrix(r, n, "untf", coherence_iters=STEPS, seed=0))
        naive_steps = STEPS if n <= 1024 else NAIVE_STEPS_LARGE
        naive, t_naive = timed(lambda r=r, n=n, k=naive_steps: alternating_projection_gram(r, n, iters=k, seed=0))
        t_naive_100 = t_naive * STEPS / naive_steps
        note = "" if naive_steps == STEPS else f" (ran {naive_steps} steps in {t_naive:.1f} s, extrapolated)"
        wb = welch_bound(r, n)
        print(
            f"r={r:>2} n={n:>5}: ours {t_ours:6.2f} s (coherence {coherence(ours):.3f}); naive alternating projection "
            f"{t_naive_100:7.1f} s for {STEPS} steps{note} (coherence {coherence(naive):.3f}); Welch bound {wb:.3f}; "
            f"naive / ours = x{t_naive_100 / t_ours:.1f}"
        )


if __name__ == "__main__":
    main()
