"""Private RAG decoding with batched forward streams: one public stream (no context) and one per partition.

Every step runs the m + 1 streams as one batch with a KV cache (left padding, explicit positions), gives the
allocator the public statistics and a door to the private ones, and emits either the public greedy token (eps_t
= 0) or a draw of the exponential mechanism at eps_t, charged to the response's ledger. The same token is then
appended to every stream. Non-private RAG (one stream holding every retrieved document) and no-RAG (the public
stream alone) decode greedily with the same prompts.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from icml26.llm.pearl.accounting import PrivacyLedger, validate_budget
from icml26.llm.pearl.allocators import Allocator, PEARLAllocator, Step, UniformAllocator
from icml26.llm.pearl.mechanism import entropy, exp_topk_distribution, public_candidates
from icml26.llm.pearl.retrieval import PartitionedBM25

__all__ = ["PearlDecoder", "PrivateGeneration", "PrivateRAGDecoder", "format_prompt"]

CG_MIN = 1.0  # nats: a partition "has a confidence gap" when its entropy is this much below the public one


def format_prompt(tokenizer: Any, question: str, documents: Sequence[str]) -> str:
    """Chat-template prompt (the template's own default system message; the context if any, then the question);
    plain text without a template. No system message of ours: an instruction such as "answer in one short
    sentence" makes SmolLM2 paraphrase instead of copying, which hides the leak the attacks must find."""
    context = "\n".join(documents)
    user = f"Context:\n{context}\n\n{question}" if documents else question
    if getattr(tokenizer, "chat_template", None):
        messages = [{"role": "user", "content": user}]
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return f"{user}\nAnswer:"


@dataclass
class PrivateGeneration:
    """One response: the text, what each token cost and the diagnostics (never released by a private decoder)."""

    text: str
    token_ids: list[int]
    per_token_eps: list[float]
    eps_spent: float  # basic composition of every charge (the enforced budget)
    eps_pld: float  # dp_accounting's PLD epsilon(delta) of the same charges, non-adaptive (information)
    cg: list[float]  # H(p_pub) - H(p_priv) per step, p_priv the aggregated (or full-context) distribution
    public_entropy: list[float]
    arm: str = ""
    documents: list[str] = field(default_factory=list)

    @property
    def n_private(self) -> int:
        return int(sum(e > 0 for e in self.per_token_eps))

    def __getitem__(self, key: str) -> Any:  # {text, eps_spent, per_token_eps, cg} access, as in the paper's API
        return getattr(self, key)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Streams:
    """A left-padded batch of prompts with a KV cache; ``step(token)`` appends the same token to every row."""

    def __init__(self, model: Any, tokenizer: Any, prompts: Sequence[str]) -> None:
        import torch

        self.model = model
        encoded = [list(tokenizer(p, add_special_tokens=False)["input_ids"]) for p in prompts]
        width = max(len(e) for e in encoded)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (tokenizer.eos_token_id or 0)
        ids = torch.tensor([[pad] * (width - len(e)) + e for e in encoded], dtype=torch.long)
        self.mask = torch.tensor([[0] * (width - len(e)) + [1] * len(e) for e in encoded], dtype=torch.long)
        positions = (self.mask.cumsum(-1) - 1).clamp(min=0)
        with torch.no_grad():
            out = model(
                input_ids=ids, attention_mask=self.mask, position_ids=positions, use_cache=True, logits_to_keep=1
            )
        self.cache = out.past_key_values
        self.logits = out.logits[:, -1].double()

    def fork(self) -> _Streams:
        twin = copy.copy(self)
        twin.cache = copy.deepcopy(self.cache)
        return twin

    def probs(self) -> np.ndarray:
        import torch

        return torch.softmax(self.logits, dim=-1).numpy()

    def step(self, token: int) -> None:
        import torch

        batch = self.mask.shape[0]
        positions = self.mask.sum(-1, keepdim=True)
        self.mask = torch.cat([self.mask, torch.ones(batch, 1, dtype=torch.long)], dim=1)
        ids = torch.full((batch, 1), int(token), dtype=torch.long)
        with torch.no_grad():
            out = self.model(
                input_ids=ids, attention_mask=self.mask, position_ids=positions, cache=self.cache, use_cache=True
            )
        self.cache = out.past_key_values
        self.logits = out.logits[:, -1].double()


class PrivateRAGDecoder:
    """Differentially private RAG decoding (module docstring); ``allocator`` decides eps per token.

    ``retriever``: a :class:`PartitionedBM25` or a sequence of ``(doc_id, text)`` pairs (indexed here with
    ``n_partitions``). Guarantee: each response is (epsilon, 0)-DP, hence (epsilon, delta)-DP, with respect to
    adding or removing one document of the datastore (retrieval included, by hash partitions with their own
    indexes); ``cg`` and ``public_entropy`` in the result are diagnostics for the curator, not released output.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        retriever: PartitionedBM25 | Sequence[tuple[str, str]],
        *,
        epsilon: float = 5.0,
        delta: float = 1e-5,
        allocator: Allocator | None = None,
        n_partitions: int = 4,
        public_topk: int = 32,
        seed: int = 0,
    ) -> None:
        validate_budget(epsilon, delta)
        if public_topk < 1:
            raise ValueError(f"public_topk must be >= 1, got {public_topk}")
        if not isinstance(retriever, PartitionedBM25):
            retriever = PartitionedBM25(list(retriever), n_partitions=n_partitions)
        self.model, self.tokenizer, self.retriever = model, tokenizer, retriever
        self.epsilon, self.delta, self.public_topk = float(epsilon), float(delta), int(public_topk)
        self.allocator = allocator if allocator is not None else UniformAllocator()
        self.rng = np.random.default_rng(seed)
        eos = getattr(tokenizer, "eos_token_id", None)
        self._stop = {int(eos)} if eos is not None else set()

    # -------------------------------------------------------------------------------------------- retrieval
    def documents(self, query: str) -> list[list[str]]:
        return [[text for _, text in part] for part in self.retriever.retrieve(query)]

    def _check_tokens(self, max_new_tokens: int) -> None:
        if not (isinstance(max_new_tokens, int) and max_new_tokens >= 1):
            raise ValueError(f"max_new_tokens must be a positive integer, got {max_new_tokens!r}")

    def _private_streams(self, query: str, retrieval_query: str | None) -> tuple[_Streams, list[list[str]]]:
        parts = self.documents(retrieval_query or query)
        prompts = [format_prompt(self.tokenizer, query, [])] + [format_prompt(self.tokenizer, query, p) for p in parts]
        return _Streams(self.model, self.tokenizer, prompts), parts

    # --------------------------------------------------------------------------------------------- decoding
    def generate(
        self, query: str, max_new_tokens: int = 24, *, retrieval_query: str | None = None
    ) -> PrivateGeneration:
        """One private response to ``query`` (retrieval uses ``retrieval_query`` when given)."""
        return self.generate_arms(query, {self.allocator.name: self.allocator}, max_new_tokens, retrieval_query)[
            self.allocator.name
        ]

    def generate_arms(
        self,
        query: str,
        allocators: Mapping[str, Allocator],
        max_new_tokens: int = 24,
        retrieval_query: str | None = None,
    ) -> dict[str, PrivateGeneration]:
        """Several allocators on the same prompts and prefill (paired arms); each gets its own ledger."""
        self._check_tokens(max_new_tokens)
        base, parts = self._private_streams(query, retrieval_query)
        docs = [d for p in parts for d in p]
        out = {}
        for name, allocator in allocators.items():
            out[name] = self._decode(base.fork(), allocator, max_new_tokens, name, docs)
        return out

    def _decode(
        self, streams: _Streams, allocator: Allocator, max_new_tokens: int, arm: str, docs: list[str]
    ) -> PrivateGeneration:
        ledger = PrivacyLedger(self.epsilon, self.delta)
        allocator.start(ledger, max_new_tokens, self.rng)
        tokens: list[int] = []
        per_eps: list[float] = []
        cgs: list[float] = []
        h_pubs: list[float] = []
        text = ""
        for t in range(max_new_tokens):
            probs = streams.probs()
            p_pub, p_parts = probs[0], probs[1:]
            h_pub, h_parts = float(entropy(p_pub)), entropy(p_parts)
            top = int(public_candidates(p_pub, 1)[0])

            def private(name: str, _p=p_parts, _h=h_parts, _hp=h_pub, _top=top) -> float:
                if name == "disagreement":
                    return float(np.sum(_p.argmax(axis=-1) != _top))
                if name == "cg_count":
                    return float(np.sum(_hp - _h > CG_MIN))
                raise KeyError(f"unknown private statistic {name!r}")

            top_text = self.tokenizer.decode([top])
            pii_like = any(c.isdigit() or c == "@" for c in top_text) or (bool(text) and (text[-1].isdigit()))
            step = Step(
                t=t,
                max_new_tokens=max_new_tokens,
                n_partitions=p_parts.shape[0],
                topk=self.public_topk,
                public_entropy=h_pub,
                pii_like=pii_like,
                sentence_start=(t == 0 or text.rstrip(" ")[-1:] in (".", "!", "?", "\n")),
                private=private,
            )
            eps_t = float(allocator.decide(step))
            if eps_t > 0:
                ledger.charge(eps_t, f"token {t}")
                cand, q = exp_topk_distribution(p_pub, p_parts, eps_t, self.public_topk)
                token = int(cand[self.rng.choice(len(cand), p=q)])
            else:
                token = top
            per_eps.append(eps_t)
            cgs.append(h_pub - float(entropy(p_parts.mean(axis=0))))
            h_pubs.append(h_pub)
            if token in self._stop:
                break
            tokens.append(token)
            text = self.tokenizer.decode(tokens, skip_special_tokens=True)
            if t + 1 < max_new_tokens:
                streams.step(token)
        return PrivateGeneration(
            text=text,
            token_ids=tokens,
            per_token_eps=per_eps,
            eps_spent=ledger.spent,
            eps_pld=ledger.pld_epsilon(),
            cg=cgs,
            public_entropy=h_pubs,
            arm=arm,
            documents=docs,
        )

    def generate_nonprivate(
        self, query: str, max_new_tokens: int = 24, *, retrieval_query: str | None = None
    ) -> PrivateGeneration:
        """Non-private RAG: greedy decoding with every retrieved document in one context (the same documents the
        private arms see); ``cg`` is H(public) - H(full-context) along the answer. No privacy: eps = inf."""
        self._check_tokens(max_new_tokens)
        docs = [d for p in self.documents(retrieval_query or query) for d in p]
        prompts = [format_prompt(self.tokenizer, query, []), format_prompt(self.tokenizer, query, docs)]
        return self._greedy(_Streams(self.model, self.tokenizer, prompts), 1, max_new_tokens, "nonprivate", docs)

    def generate_public(self, query: str, max_new_tokens: int = 24) -> PrivateGeneration:
        """No RAG: greedy decoding from the question alone (eps = 0, nothing private is read)."""
        self._check_tokens(max_new_tokens)
        streams = _Streams(self.model, self.tokenizer, [format_prompt(self.tokenizer, query, [])])
        return self._greedy(streams, 0, max_new_tokens, "public", [])

    def _greedy(self, streams: _Streams, row: int, max_new_tokens: int, arm: str, docs: list[str]) -> PrivateGeneration:
        tokens: list[int] = []
        cgs: list[float] = []
        h_pubs: list[float] = []
        for t in range(max_new_tokens):
            probs = streams.probs()
            h_pub = float(entropy(probs[0]))
            cgs.append(h_pub - float(entropy(probs[row])))
            h_pubs.append(h_pub)
            token = int(np.argmax(probs[row]))
            if token in self._stop:
                break
            tokens.append(token)
            if t + 1 < max_new_tokens:
                streams.step(token)
        eps = math.inf if arm == "nonprivate" else 0.0
        return PrivateGeneration(
            text=self.tokenizer.decode(tokens, skip_special_tokens=True),
            token_ids=tokens,
            per_token_eps=[eps] * len(h_pubs) if arm == "nonprivate" else [0.0] * len(h_pubs),
            eps_spent=eps,
            eps_pld=eps,
            cg=cgs,
            public_entropy=h_pubs,
            arm=arm,
            documents=docs,
        )


class PearlDecoder(PrivateRAGDecoder):
    """PEARL: :class:`PrivateRAGDecoder` with the CG-guided, entropy-aware :class:`PEARLAllocator` by default."""

    def __init__(self, model: Any, tokenizer: Any, retriever: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allocator", PEARLAllocator())
        super().__init__(model, tokenizer, retriever, **kwargs)
