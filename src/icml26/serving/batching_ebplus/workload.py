"""Workloads: request lengths and how requests arrive.

A workload is sampled once into a ``RequestSet`` (prompt lengths, output lengths, and either arrival times
(open loop) or the client concurrency in force when each request is issued (closed loop)), so that every policy
of a comparison serves exactly the same requests.

- ``LengthDist``: ``uniform`` within +-25% of the mean (the paper's experiments), ``geometric`` (the theory's
  constant hazard), ``lognormal`` (heavy-ish tails; *synthetic, matched means*: no request traces ship offline,
  so ShareGPT / WildChat / NuminaMath are stood in for by lognormals with the authors' reported mean output
  lengths, ``MATCHED_MEAN_OUTPUTS``), and ``fixed``.
- ``ClosedLoopWorkload``: ``concurrency`` clients, each issuing its next request when the previous one finishes
  (the paper's throughput protocol).
- ``PoissonWorkload``: open loop, Gamma inter-arrival times with coefficient of variation ``burstiness``
  (1 = Poisson; > 1 = bursty).
- ``PhasedWorkload``: a sequence of closed-loop phases whose lengths or concurrency shift (the non-stationary
  traffic of the EB+ experiments).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

__all__ = [
    "MATCHED_MEAN_OUTPUTS",
    "ClosedLoopWorkload",
    "LengthDist",
    "Phase",
    "PhasedWorkload",
    "PoissonWorkload",
    "RequestSet",
]

# Mean output lengths the authors report for their datasets (notes); lognormal stand-ins use these means.
MATCHED_MEAN_OUTPUTS = {"sharegpt": 280, "wildchat": 310, "numinamath": 1039}


@dataclass(frozen=True)
class LengthDist:
    """A distribution of token counts >= 1 with a given mean."""

    mean: float
    kind: Literal["uniform", "geometric", "lognormal", "fixed"] = "uniform"
    spread: float = 0.25  # uniform: +-spread * mean
    sigma: float = 0.8  # lognormal: log-space standard deviation
    max_factor: float = 16.0  # lognormal: truncation at max_factor * mean (changes the mean by < 0.1% at sigma 0.8)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.mean) and self.mean >= 1):
            raise ValueError(f"a length distribution needs a mean >= 1 token, got {self.mean!r}")
        if self.kind not in ("uniform", "geometric", "lognormal", "fixed"):
            raise ValueError(f"unknown length distribution {self.kind!r}")
        if not 0 <= self.spread < 1:
            raise ValueError(f"spread must be in [0, 1), got {self.spread!r}")

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        if self.kind == "fixed":
            return np.full(n, round(self.mean), dtype=np.int64)
        if self.kind == "uniform":
            lo = max(1, round(self.mean * (1 - self.spread)))
            hi = max(lo, round(self.mean * (1 + self.spread)))
            return rng.integers(lo, hi + 1, size=n, dtype=np.int64)
        if self.kind == "geometric":
            return rng.geometric(min(1.0, 1.0 / self.mean), size=n).astype(np.int64)
        mu = math.log(self.mean) - self.sigma**2 / 2  # E[exp(N(mu, s^2))] = mean
        x = np.exp(rng.normal(mu, self.sigma, size=n))
        return np.clip(np.rint(x), 1, round(self.max_factor * self.mean)).astype(np.int64)


@dataclass(frozen=True)
class RequestSet:
    """Sampled requests. Open loop: ``arrival`` times; closed loop: ``concurrency[i]`` clients when i is issued."""

    prompt: np.ndarray
    output: np.ndarray
    arrival: np.ndarray | None = None
    concurrency: np.ndarray | None = None
    phase: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.prompt)
        if n == 0:
            raise ValueError("a workload needs at least one request")
        if len(self.output) != n:
            raise ValueError("prompt and output arrays must have the same length")
        if np.any(self.prompt < 1) or np.any(self.output < 1):
            raise ValueError("every request needs a prompt and an output of at least one token")
        if (self.arrival is None) == (self.concurrency is None):
            raise ValueError("give arrival times (open loop) or a concurrency per request (closed loop), not both")
        if self.concurrency is not None and np.any(self.concurrency < 1):
            raise ValueError("closed-loop concurrency must be >= 1")
        if self.arrival is not None and (np.any(np.diff(self.arrival) < 0) or np.any(self.arrival < 0)):
            raise ValueError("arrival times must be non-negative and sorted")

    def __len__(self) -> int:
        return len(self.prompt)

    @property
    def closed_loop(self) -> bool:
        return self.concurrency is not None

    @property
    def total_tokens(self) -> int:
        return int(self.prompt.sum() + self.output.sum())


def _as_dist(x: LengthDist | float) -> LengthDist:
    return x if isinstance(x, LengthDist) else LengthDist(float(x))


@dataclass(frozen=True)
class Phase:
    """One closed-loop phase: n requests at a concurrency, with their own length distributions."""

    n_requests: int
    concurrency: int
    prompt: LengthDist | float
    output: LengthDist | float

    def __post_init__(self) -> None:
        if self.n_requests < 1:
            raise ValueError(f"a phase needs at least one request, got {self.n_requests}")
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency}")


@dataclass(frozen=True)
class PhasedWorkload:
    """Closed-loop phases in sequence: a shift of lengths, of concurrency, or both."""

    phases: tuple[Phase, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if not self.phases:
            raise ValueError("a phased workload needs at least one phase")

    def sample(self, rng: np.random.Generator) -> RequestSet:
        prompts, outputs, conc, phase = [], [], [], []
        for i, ph in enumerate(self.phases):
            prompts.append(_as_dist(ph.prompt).sample(rng, ph.n_requests))
            outputs.append(_as_dist(ph.output).sample(rng, ph.n_requests))
            conc.append(np.full(ph.n_requests, ph.concurrency, dtype=np.int64))
            phase.append(np.full(ph.n_requests, i, dtype=np.int64))
        return RequestSet(
            np.concatenate(prompts),
            np.concatenate(outputs),
            concurrency=np.concatenate(conc),
            phase=np.concatenate(phase),
        )


@dataclass(frozen=True)
class ClosedLoopWorkload:
    """``concurrency`` clients issue ``n_requests`` in total; each waits for its previous request to finish."""

    n_requests: int
    concurrency: int
    prompt: LengthDist | float
    output: LengthDist | float

    def sample(self, rng: np.random.Generator) -> RequestSet:
        return PhasedWorkload((Phase(self.n_requests, self.concurrency, self.prompt, self.output),)).sample(rng)


@dataclass(frozen=True)
class PoissonWorkload:
    """Open loop: ``rate`` requests/s on average; Gamma inter-arrivals with CV ``burstiness`` (1 = Poisson)."""

    n_requests: int
    rate: float
    prompt: LengthDist | float
    output: LengthDist | float
    burstiness: float = 1.0

    def __post_init__(self) -> None:
        if self.n_requests < 1:
            raise ValueError(f"n_requests must be >= 1, got {self.n_requests}")
        if not (self.rate > 0 and self.burstiness > 0):
            raise ValueError(f"rate and burstiness must be positive, got {self.rate}, {self.burstiness}")

    def sample(self, rng: np.random.Generator) -> RequestSet:
        prompt = _as_dist(self.prompt).sample(rng, self.n_requests)
        output = _as_dist(self.output).sample(rng, self.n_requests)
        shape = 1.0 / self.burstiness**2
        gaps = rng.gamma(shape, 1.0 / (shape * self.rate), size=self.n_requests)
        return RequestSet(prompt, output, arrival=np.cumsum(gaps) - gaps[0])
