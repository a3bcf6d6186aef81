"""Hash-partitioned BM25 retrieval: the neighbouring relation (add or remove one document) touches one partition.

Each document goes to partition ``hash(doc_id) mod m`` (blake2b, so assignment never depends on the rest of the
datastore: inserting a document moves no other). Each partition keeps its *own* BM25 index (rank-bm25's
``BM25Okapi``, statistics from that partition's documents only) and retrieves its own top-r documents. So adding
or removing one document changes one partition's index, one partition's retrieval and one partition's
next-token distribution, and nothing else: the sensitivity argument of the aggregation (1/m per unit of
probability) covers retrieval too. A global index would not: its IDF and ranking depend on every document.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

__all__ = ["PartitionedBM25", "hash_partition", "words"]

_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def hash_partition(doc_id: str, n_partitions: int) -> int:
    """Partition of a document from its id alone (stable under insertion and deletion of other documents)."""
    if n_partitions < 1:
        raise ValueError(f"n_partitions must be >= 1, got {n_partitions}")
    digest = hashlib.blake2b(str(doc_id).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % n_partitions


class PartitionedBM25:
    """``m`` disjoint BM25 indexes over ``documents`` (``(doc_id, text)`` pairs), assigned by :func:`hash_partition`.

    ``retrieve(query)`` returns, for every partition, its top ``per_partition`` documents among those that share
    at least one word with the query (a document sharing none is not retrieved, whatever BM25's IDF floor says).
    """

    def __init__(self, documents: Sequence[tuple[str, str]], n_partitions: int = 4, per_partition: int = 1) -> None:
        try:
            from rank_bm25 import BM25Okapi
        except ImportError as exc:
            raise ImportError("retrieval needs rank-bm25: pip install 'icml26[llm]'") from exc
        if not documents:
            raise ValueError("no documents: the private datastore is empty")
        if per_partition < 1:
            raise ValueError(f"per_partition must be >= 1, got {per_partition}")
        ids = [d for d, _ in documents]
        if len(set(ids)) != len(ids):
            raise ValueError("document ids must be unique (they decide the partitions)")
        self.n_partitions = int(n_partitions)
        self.per_partition = int(per_partition)
        self.partitions: list[list[tuple[str, str]]] = [[] for _ in range(self.n_partitions)]
        for doc_id, text in documents:
            self.partitions[hash_partition(doc_id, self.n_partitions)].append((doc_id, text))
        self._indexes = [BM25Okapi([words(t) for _, t in part]) if part else None for part in self.partitions]

    def retrieve(self, query: str) -> list[list[tuple[str, str]]]:
        import numpy as np

        terms = words(query)
        out: list[list[tuple[str, str]]] = []
        for part, index in zip(self.partitions, self._indexes, strict=True):
            if index is None or not terms:
                out.append([])
                continue
            scores = np.asarray(index.get_scores(terms), dtype=float)
            overlap = np.array([bool(set(terms) & set(words(t))) for _, t in part])
            order = [i for i in np.argsort(-scores, kind="stable") if overlap[i]]
            out.append([part[i] for i in order[: self.per_partition]])
        if not any(out):
            raise ValueError(f"empty retrieval: no document shares a word with the query {query!r}")
        return out
