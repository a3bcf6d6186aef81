"""PEARL: confidence-gap-guided, entropy-aware differentially private decoding for retrieval-augmented generation.

A RAG system answers a query q from retrieved private documents D; the answer must not expose any single
document's PII. PEARL decodes under differential privacy and spends the budget where the confidence gap says the
private context matters. The algorithm as built here (every step below the abstract is **our reading**: the
paper's code is not public):

1. Partition (neighbouring relation: add or remove one document). Each document goes to partition
   hash(doc_id) mod m; each partition has its own BM25 index and retrieves its own top-r documents
   (:class:`PartitionedBM25`), so one document changes one partition's retrieval and nothing else.
2. Two kinds of next-token distributions per step t, computed as one batch of m + 1 streams with a KV cache:
   public p_pub = p(. | q, y_<t) (no context) and private p_i = p(. | q, D_i, y_<t), aggregated
   p_bar = (1/m) sum_i p_i; a unit of p_bar has sensitivity Delta = 1/m.
3. Confidence gap: CG_t = H(p_pub) - H(p_priv) (:func:`confidence_gap`; Bi et al. 2025's "confidence gain").
   Large where the context supplies the token (copied PII), small or negative where it adds nothing.
4. Mechanism (:func:`exp_topk_distribution`): at eps_t > 0 a token is drawn from
   P(y) ∝ p_pub(y) exp(eps_t u(y) / (2 Delta)), u = p_bar, over the public top-k candidates (eps_t-DP; the
   public base measure makes eps_t -> 0 public decoding); at eps_t = 0 the public greedy token is emitted, free.
5. Allocation (:class:`PEARLAllocator`), per sentence then per token:
   - CG gate: since H(p_priv) >= 0, CG_t <= H(p_pub): a step with public entropy <= h_gate cannot carry a large
     gap, so it gets the public greedy token (no budget; deterministic decoding "stabilises" it);
   - a sentence starts with a share s of the remaining budget; a token past the gate gets
     eps_t = (sentence budget / n_planned) * min(1, H(p_pub) / log k) (entropy-aware: more budget where the public
     model is unsure, the hallucination-prone steps), times pii_factor < 1 where the public prediction looks like
     PII (digits, '@'): stronger protection on PII-bearing spans;
   - the allocation reads only public or already-released data (``privatize="public_bound"``, our default, cost
     0); ``privatize="svt"`` adds a sparse-vector test on how many partitions show their own CG > 1 nat, charged.
6. Accounting (:class:`PrivacyLedger`): every charge is a pure eps-DP event; sum_t eps_t <= eps is enforced (valid
   for adaptive allocation: a pure-DP filter), so each response is (eps, 0)-DP and hence (eps, delta)-DP; Google's
   ``dp_accounting`` PLD gives the tighter non-adaptive eps(delta) of the same events, reported alongside.

Baselines: :class:`UniformAllocator` (eps / T per token, "DP alone"), :class:`SVTAllocator` (DP-RAG-style
sparse-vector voting, Koga et al. 2024), non-private RAG and no RAG (``generate_nonprivate``, ``generate_public``).
Evaluation: :func:`pii_leakage` (exact canary and >= 6-digit partial), :func:`factual_em`,
:func:`unsupported_rate`; the two attacks :func:`repeat_context` and :func:`targeted_pii`; a faker corpus
(:func:`synthetic_records`).

Readings the abstract leaves open, all ours: the neighbouring relation and partitioning; the mechanism and its
base measure; CG's exact definition (entropy difference); the allocation rules and constants (h_gate = 1 nat,
2 planned private tokens per sentence, sentence share 0.6, PII factor 0.25, top-k = 32); that the allocation is
driven by the public bound of CG rather than the CG itself (privatising CG per token is hopeless at m = 4: the
sparse vector's noise exceeds the statistic's range, which ``privatize="svt"`` lets a user see for themselves).

Use::

    from icml26.llm.pearl import PearlDecoder
    decoder = PearlDecoder(model, tokenizer, [(doc_id, text), ...], epsilon=5.0, delta=1e-5, n_partitions=4)
    out = decoder.generate("What is the clinic for asthma?", max_new_tokens=24)
    out.text, out.eps_spent, out.per_token_eps, out.cg

References
----------
- PEARL, ICML 2026 (OpenReview qIUR54yyro); abstract only, code in the supplementary material (not public).
- T. Koga, R. Wu, K. Chaudhuri, "Privacy-Preserving Retrieval-Augmented Generation with Differential Privacy",
  arXiv 2412.04697 (DP-RAG: voting and the sparse vector technique).
- B. Bi et al., "Parameters vs. Context: Fine-Grained Control of Knowledge Reliance in Language Models" (CK-PLUG,
  confidence gain), 2025.
- F. McSherry, K. Talwar, "Mechanism Design via Differential Privacy" (exponential mechanism), FOCS 2007.
- M. Lyu, D. Su, N. Li, "Understanding the Sparse Vector Technique for Differential Privacy", VLDB 2017.
- P. Kairouz, S. Oh, P. Viswanath, "The Composition Theorem for Differential Privacy", ICML 2015.
- R. Rogers, A. Roth, J. Ullman, S. Vadhan, "Privacy Odometers and Filters: Pay-as-you-Go Composition", NeurIPS 2016.
- S. Zeng et al., "The Good and The Bad: Exploring Privacy Issues in Retrieval-Augmented Generation", 2024 (attack).
- Google dp-accounting (privacy loss distributions), https://github.com/google/differential-privacy.
"""

from typing import TYPE_CHECKING

from icml26._core.lazy import lazy_exports

# Public name -> submodule; lazy so that ``reproduce`` (the CARD) and ``icml26 list`` load neither torch nor faker.
_MODULE_OF = {
    **dict.fromkeys(("BudgetExceededError", "PrivacyLedger", "kov_delta", "validate_budget"), "accounting"),
    **dict.fromkeys(
        ("Allocator", "PEARLAllocator", "SVTAllocator", "SparseVector", "Step", "UniformAllocator"), "allocators"
    ),
    **dict.fromkeys(("DIAGNOSES", "Question", "Record", "questions", "synthetic_records"), "data"),
    **dict.fromkeys(("PearlDecoder", "PrivateGeneration", "PrivateRAGDecoder", "format_prompt"), "decoder"),
    **dict.fromkeys(
        ("entities", "factual_em", "pii_leakage", "repeat_context", "targeted_pii", "unsupported_rate"), "evaluation"
    ),
    **dict.fromkeys(
        ("confidence_gap", "entropy", "exp_topk_distribution", "max_log_ratio", "public_candidates"), "mechanism"
    ),
    **dict.fromkeys(("PartitionedBM25", "hash_partition", "words"), "retrieval"),
    "ByteTokenizer": "toy",
}
__all__ = [
    "DIAGNOSES",
    "Allocator",
    "BudgetExceededError",
    "ByteTokenizer",
    "PEARLAllocator",
    "PartitionedBM25",
    "PearlDecoder",
    "PrivacyLedger",
    "PrivateGeneration",
    "PrivateRAGDecoder",
    "Question",
    "Record",
    "SVTAllocator",
    "SparseVector",
    "Step",
    "UniformAllocator",
    "confidence_gap",
    "entities",
    "entropy",
    "exp_topk_distribution",
    "factual_em",
    "format_prompt",
    "hash_partition",
    "kov_delta",
    "max_log_ratio",
    "pii_leakage",
    "public_candidates",
    "questions",
    "repeat_context",
    "synthetic_records",
    "targeted_pii",
    "unsupported_rate",
    "validate_budget",
    "words",
]

if TYPE_CHECKING:
    from icml26.llm.pearl.accounting import BudgetExceededError, PrivacyLedger, kov_delta, validate_budget
    from icml26.llm.pearl.allocators import (
        Allocator,
        PEARLAllocator,
        SparseVector,
        Step,
        SVTAllocator,
        UniformAllocator,
    )
    from icml26.llm.pearl.data import DIAGNOSES, Question, Record, questions, synthetic_records
    from icml26.llm.pearl.decoder import PearlDecoder, PrivateGeneration, PrivateRAGDecoder, format_prompt
    from icml26.llm.pearl.evaluation import (
        entities,
        factual_em,
        pii_leakage,
        repeat_context,
        targeted_pii,
        unsupported_rate,
    )
    from icml26.llm.pearl.mechanism import (
        confidence_gap,
        entropy,
        exp_topk_distribution,
        max_log_ratio,
        public_candidates,
    )
    from icml26.llm.pearl.retrieval import PartitionedBM25, hash_partition, words
    from icml26.llm.pearl.toy import ByteTokenizer

_NEEDS = {
    "accounting": "dp-accounting",
    "allocators": "numpy",
    "data": "faker",
    "decoder": "torch, transformers, rank-bm25 and dp-accounting",
    "evaluation": "the standard library",
    "mechanism": "numpy",
    "retrieval": "rank-bm25",
    "toy": "the standard library",
}
__getattr__, __dir__ = lazy_exports(globals(), _MODULE_OF, _NEEDS, "llm")
