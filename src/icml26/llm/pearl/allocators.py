"""Budget allocators: how much epsilon each generated token gets (0 = emit the public greedy token, for free).

A decoder asks its allocator once per step with a :class:`Step`: public quantities (the public entropy, whether
the public prediction looks like PII, whether a sentence starts) and, behind :meth:`Step.private`, statistics of
the private partitions. An allocator may read a private statistic only through a DP test whose cost it charges to
the ledger (the sparse vector technique here); everything else it decides is post-processing of public or
already-released data, so it costs nothing.

- :class:`UniformAllocator`: eps / T on every token (the "DP alone" baseline).
- :class:`SVTAllocator`: DP-RAG-style (Koga, Wu, Chaudhuri 2024): a sparse-vector test on how many partitions'
  top token differs from the public one; a positive answer buys one private token, the rest is public.
- :class:`PEARLAllocator`: our reading of PEARL's CG-guided, entropy-aware allocation (see the package docstring).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from icml26.llm.pearl.accounting import PrivacyLedger

__all__ = ["Allocator", "PEARLAllocator", "SVTAllocator", "SparseVector", "Step", "UniformAllocator"]


@dataclass
class Step:
    t: int
    max_new_tokens: int
    n_partitions: int
    topk: int
    public_entropy: float  # nats, public
    pii_like: bool  # public: the public top token or the last released character is a digit or '@'
    sentence_start: bool  # public: first token, or the released text ends a sentence
    private: Callable[[str], float] = field(repr=False, default=lambda name: 0.0)  # sensitivity-1 statistics


class Allocator:
    """Base class: ``start`` once per response, then ``decide`` once per token (returns eps_t >= 0)."""

    name = "allocator"

    def start(self, ledger: PrivacyLedger, max_new_tokens: int, rng: np.random.Generator) -> None:
        self.ledger, self.max_new_tokens, self.rng = ledger, max_new_tokens, rng

    def decide(self, step: Step) -> float:
        raise NotImplementedError


class UniformAllocator(Allocator):
    """eps_t = eps / T for every one of the T = max_new_tokens tokens (all tokens private)."""

    name = "uniform"

    def decide(self, step: Step) -> float:
        return min(self.ledger.epsilon / self.max_new_tokens, self.ledger.remaining)


class SparseVector:
    """AboveThreshold with up to ``c`` positive answers (Lyu, Su, Li 2017, Alg. 1): threshold noise
    Lap(Delta / eps1), query noise Lap(2 c Delta / eps2), eps1 = eps2 = eps_svt / 2; the whole test is eps_svt-DP,
    charged once when it is set up, however many negative answers it gives."""

    def __init__(self, ledger: PrivacyLedger, eps_svt: float, c: int, threshold: float, rng: np.random.Generator):
        if c < 1:
            raise ValueError(f"the sparse vector needs c >= 1 positive answers, got {c}")
        ledger.charge(eps_svt, "sparse vector test")
        self.eps1 = self.eps2 = eps_svt / 2.0
        self.c, self.rng, self.positives = int(c), rng, 0
        self.noisy_threshold = threshold + rng.laplace(scale=1.0 / self.eps1)

    @property
    def halted(self) -> bool:
        return self.positives >= self.c

    def above(self, value: float) -> bool:
        """One query of sensitivity 1; False once ``c`` positives have been answered."""
        if self.halted:
            return False
        hit = value + self.rng.laplace(scale=2.0 * self.c / self.eps2) >= self.noisy_threshold
        self.positives += int(hit)
        return bool(hit)


class SVTAllocator(Allocator):
    """DP-RAG-style decoding: SVT on the number of partitions whose argmax differs from the public argmax
    (sensitivity 1); each of at most ``max_private`` positives gets (1 - svt_fraction) eps / max_private."""

    name = "dp_rag_svt"

    def __init__(self, max_private: int = 4, svt_fraction: float = 0.5, threshold: float | None = None) -> None:
        if not 0 < svt_fraction < 1:
            raise ValueError(f"svt_fraction must lie in (0, 1), got {svt_fraction}")
        self.max_private, self.svt_fraction, self.threshold = int(max_private), float(svt_fraction), threshold

    def start(self, ledger: PrivacyLedger, max_new_tokens: int, rng: np.random.Generator) -> None:
        super().start(ledger, max_new_tokens, rng)
        self.svt: SparseVector | None = None
        self.eps_token = (1 - self.svt_fraction) * ledger.epsilon / self.max_private

    def decide(self, step: Step) -> float:
        if self.svt is None:
            threshold = step.n_partitions / 2 if self.threshold is None else self.threshold
            self.svt = SparseVector(
                self.ledger, self.svt_fraction * self.ledger.epsilon, self.max_private, threshold, self.rng
            )
        if not self.svt.above(step.private("disagreement")):
            return 0.0
        return min(self.eps_token, self.ledger.remaining)


class PEARLAllocator(Allocator):
    """Confidence-gap-guided, entropy-aware allocation (our reading; the package docstring gives the rules).

    - CG gate: CG_t = H(p_pub) - H(p_priv) <= H(p_pub), so a step whose public entropy is at most ``h_gate`` has a
      small confidence gap whatever the private data say: it gets the public greedy token, free and stable.
    - ``privatize="public_bound"`` (default): every other step is treated as a possible high-CG step (the bound
      is public, nothing is charged for the allocation). ``privatize="svt"``: a sparse-vector test on the number of
      partitions whose own CG exceeds ``cg_min`` decides (charged, ``svt_fraction`` of eps).
    - sentences: a sentence starts with ``sentence_share`` of what is left; tokens: a step gets
      sentence budget / ``planned_tokens`` x min(1, H_pub / log k) (more budget where the public model is less
      sure: hallucination-prone), times ``pii_factor`` where the public prediction looks like PII (digits, '@'):
      stronger protection on PII-bearing spans.
    """

    name = "pearl"

    def __init__(
        self,
        h_gate: float = 1.0,
        planned_tokens: int = 2,
        sentence_share: float = 0.6,
        pii_factor: float = 0.25,
        privatize: str = "public_bound",
        cg_min: float = 1.0,
        svt_fraction: float = 0.2,
        max_private: int = 6,
    ) -> None:
        if privatize not in ("public_bound", "svt"):
            raise ValueError(f"privatize must be 'public_bound' or 'svt', got {privatize!r}")
        if not 0 < sentence_share <= 1 or not 0 < pii_factor <= 1 or planned_tokens < 1 or h_gate < 0:
            raise ValueError("need 0 < sentence_share <= 1, 0 < pii_factor <= 1, planned_tokens >= 1, h_gate >= 0")
        self.h_gate, self.planned_tokens, self.sentence_share = (
            float(h_gate),
            int(planned_tokens),
            float(sentence_share),
        )
        self.pii_factor, self.privatize, self.cg_min = float(pii_factor), privatize, float(cg_min)
        self.svt_fraction, self.max_private = float(svt_fraction), int(max_private)

    def start(self, ledger: PrivacyLedger, max_new_tokens: int, rng: np.random.Generator) -> None:
        super().start(ledger, max_new_tokens, rng)
        self.svt: SparseVector | None = None
        self.sentence_budget = self.sentence_left = 0.0

    def decide(self, step: Step) -> float:
        if self.privatize == "svt" and self.svt is None:
            self.svt = SparseVector(
                self.ledger, self.svt_fraction * self.ledger.epsilon, self.max_private, step.n_partitions / 2, self.rng
            )
        if step.sentence_start:
            self.sentence_budget = self.sentence_left = self.sentence_share * self.ledger.remaining
        if step.public_entropy <= self.h_gate:
            return 0.0
        if self.svt is not None and not self.svt.above(step.private("cg_count")):
            return 0.0
        weight = min(1.0, step.public_entropy / math.log(max(step.topk, 2)))
        eps = self.sentence_budget / self.planned_tokens * weight * (self.pii_factor if step.pii_like else 1.0)
        eps = min(eps, self.sentence_left, self.ledger.remaining)
        if eps < 1e-6:
            return 0.0
        self.sentence_left -= eps
        return eps
