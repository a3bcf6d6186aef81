"""The per-token DP mechanism: an exponential mechanism over the public top-k candidates, and the confidence gap.

Utility of a candidate y is the aggregated private probability u(y) = (1/m) sum_i p_i(y) of the m partition
distributions. Adding or removing one document changes one partition's p_i (hash partitions, per-partition
retrieval), so u changes by at most Delta = 1/m per candidate. The mechanism samples

    P(y) = p_pub(y) exp(eps * u(y) / (2 Delta)) / Z,   y in C = top-k of p_pub,

with the public distribution (no private context) as base measure: a data-independent prior keeps it
eps-DP (the usual factor 2 covers the normaliser), as eps -> 0 it falls back to public decoding, and restricting
to public candidates avoids the gibberish of a mechanism over the whole vocabulary.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["confidence_gap", "entropy", "exp_topk_distribution", "max_log_ratio", "public_candidates"]


def entropy(probs: np.ndarray) -> np.ndarray:
    """Shannon entropy (nats) along the last axis of probability vectors (0 log 0 = 0)."""
    p = np.asarray(probs, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log(p), 0.0)
    return terms.sum(axis=-1)


def confidence_gap(p_pub_logits: Any, p_priv_logits: Any) -> Any:
    """CG = H(softmax(public logits)) - H(softmax(private logits)) along the last axis, in nats.

    Positive where the private context makes the model more confident (copied content, PII); near zero or
    negative where the context adds nothing or conflicts with what the model believes. Accepts torch tensors
    (returns a tensor) or array-likes (returns an ndarray)."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is part of the extra
        torch = None
    if torch is not None and isinstance(p_pub_logits, torch.Tensor):
        pub = torch.log_softmax(p_pub_logits.double(), dim=-1)
        priv = torch.log_softmax(torch.as_tensor(p_priv_logits).double(), dim=-1)
        return -(pub.exp() * pub).sum(-1) + (priv.exp() * priv).sum(-1)
    pub, priv = np.asarray(p_pub_logits, dtype=float), np.asarray(p_priv_logits, dtype=float)
    if pub.shape[-1] != priv.shape[-1]:
        raise ValueError(f"public and private logits must share the vocabulary axis, got {pub.shape}, {priv.shape}")

    def _softmax(z: np.ndarray) -> np.ndarray:
        z = z - z.max(axis=-1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=-1, keepdims=True)

    return entropy(_softmax(pub)) - entropy(_softmax(priv))


def public_candidates(p_pub: np.ndarray, topk: int) -> np.ndarray:
    """Indices of the ``topk`` most likely public tokens, most likely first (ties by lower index)."""
    p = np.asarray(p_pub, dtype=float)
    k = min(int(topk), p.shape[-1])
    part = np.argpartition(-p, k - 1)[:k]
    return part[np.lexsort((part, -p[part]))]


def exp_topk_distribution(
    p_pub: np.ndarray, p_parts: np.ndarray, epsilon: float, topk: int
) -> tuple[np.ndarray, np.ndarray]:
    """(candidates, probabilities) of the eps-DP exponential mechanism over the public top-k (module docstring).

    ``p_pub``: (V,) public next-token probabilities; ``p_parts``: (m, V) one distribution per partition.
    """
    p_parts = np.atleast_2d(np.asarray(p_parts, dtype=float))
    p_pub = np.asarray(p_pub, dtype=float)
    m = p_parts.shape[0]
    if not np.isfinite(epsilon) or epsilon < 0:
        raise ValueError(f"epsilon must be finite and >= 0, got {epsilon}")
    if p_pub.ndim != 1 or p_parts.ndim != 2 or p_parts.shape[1] != p_pub.shape[0]:
        raise ValueError(
            f"p_pub must be (V,) and p_parts (m, V) over the same vocabulary, got {p_pub.shape} and {p_parts.shape}"
        )
    if not (np.isfinite(p_pub).all() and np.isfinite(p_parts).all()):
        raise ValueError("next-token probabilities contain NaN or infinite values")
    cand = public_candidates(p_pub, topk)
    base = p_pub[cand]
    base = base / base.sum()
    utility = p_parts[:, cand].mean(axis=0)  # sensitivity 1/m
    logits = np.log(np.maximum(base, 1e-300)) + epsilon * m * utility / 2.0
    logits -= logits.max()
    probs = np.exp(logits)
    return cand, probs / probs.sum()


def max_log_ratio(
    p_pub: np.ndarray, p_parts: np.ndarray, p_parts_neighbour: np.ndarray, epsilon: float, topk: int
) -> float:
    """max_y |log P(y | D) - log P(y | D')| of the mechanism on two datastores (exact, over every candidate)."""
    c1, q1 = exp_topk_distribution(p_pub, p_parts, epsilon, topk)
    c2, q2 = exp_topk_distribution(p_pub, p_parts_neighbour, epsilon, topk)
    if not np.array_equal(c1, c2):  # the candidates are public: they cannot differ
        raise AssertionError("candidate sets differ between neighbouring datastores")
    return float(np.max(np.abs(np.log(q1) - np.log(q2))))
