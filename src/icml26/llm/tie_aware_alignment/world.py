"""A procedural preference world with a known true reward, exact policy evaluation, and a resolution-limited labeler.

No real preference data exists offline, so the claims are tested where the truth is known:

- ``P`` prompts, each with ``K`` candidate responses described by ``d`` features ``phi(x, y) ~ N(0, I)``;
  feature 0 is a spurious "length": the true reward ``r*(x, y) = w* . phi(x, y)`` slightly *dislikes* it
  (``w*_0 < 0``), which is what makes a length-biased labeler harmful;
- policies are linear-softmax, ``pi_theta(y | x) = softmax_y(theta . phi(x, y))``; the reference is uniform
  (``theta = 0``); expected true reward and ``KL(pi_theta || pi_ref)`` are exact sums over the ``K`` candidates;
- pairs are drawn from the reference: a prompt uniformly, two distinct candidates uniformly;
- :class:`ResolutionLimitedLabeler`: perceived gap ``g = r*_a - r*_b + sigma * eps``; a label ``sign(g)`` when
  ``|g| >= tau`` (its resolution limit); below it the labeler stays silent (a tie), or, forced to choose, breaks
  the tie at random, by the spurious feature (the longer response wins: an LLM judge's length bias) or by position
  (the first response wins).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import torch

__all__ = ["TIEBREAKS", "PairSet", "PreferenceWorld", "ResolutionLimitedLabeler", "reward_at_matched_kl"]

TIEBREAKS: tuple[str, ...] = ("random", "spurious", "position")
Tiebreak = Literal["random", "spurious", "position"]


def reward_at_matched_kl(scores: torch.Tensor, rewards: torch.Tensor, kl: float, iters: int = 40) -> torch.Tensor:
    """Normalised true reward of the tilted policy ``pi_s(k | x) = softmax_k(s * scores[x, k])`` whose mean KL to
    the uniform distribution over the ``K`` candidates is exactly ``kl`` nats.

    ``scores`` ``(..., P, K)`` (a policy's logits, or a learned implicit reward on candidates sampled from the
    reference: the uniform distribution over reference samples is the empirical reference), ``rewards`` ``(P, K)``.
    ``s >= 0`` is found by bisection: the KL grows monotonically along the ray (``dKL/ds = s Var_pi(scores)``).
    Returns ``(E_pi r - E_unif r) / (E max_k r - E_unif r)`` (0: the reference, 1: the best candidate every time),
    shape ``(...)``; scores that are constant within every prompt stay at the reference (0).
    """
    scores = torch.as_tensor(scores, dtype=torch.float64)
    rewards = torch.as_tensor(rewards, dtype=torch.float64)
    if scores.shape[-2:] != rewards.shape or rewards.dim() != 2:
        raise ValueError(f"scores (..., P, K) must end in the rewards' shape (P, K), got {tuple(scores.shape)}")
    log_k = math.log(rewards.shape[1])
    if not 0 < kl < log_k:
        raise ValueError(f"kl must lie in (0, log K = {log_k:.3f}), got {kl!r}")
    if not (bool(torch.isfinite(scores).all()) and bool(torch.isfinite(rewards).all())):
        raise ValueError("scores and rewards must be finite")
    lead = scores.shape[:-2]
    centred = scores - scores.mean(-1, keepdim=True)
    spread = centred.abs().amax(dim=(-2, -1), keepdim=True)
    unit = centred / spread.clamp_min(1e-300)  # scale-free: the bisection runs on s >= 0 along this ray

    def kl_of(s: torch.Tensor) -> torch.Tensor:
        logp = torch.log_softmax(s * unit, dim=-1)
        return (logp.exp() * (logp + log_k)).sum(-1).mean(-1, keepdim=True).unsqueeze(-1)

    live = spread > 0
    lo, hi = torch.zeros_like(spread), torch.ones_like(spread)
    for _ in range(64):  # grow hi until it brackets the target (the max KL may be below it: then s stays large)
        short = (kl_of(hi) < kl) & live
        if not bool(short.any()) or bool((hi > 1e12).all()):
            break
        hi = torch.where(short, hi * 2, hi)
    for _ in range(iters):
        mid = (lo + hi) / 2
        below = kl_of(mid) < kl
        lo, hi = torch.where(below, mid, lo), torch.where(below, hi, mid)
    s = torch.where(live, (lo + hi) / 2, torch.zeros_like(lo))
    expected = (torch.softmax(s * unit, dim=-1) * rewards).sum(-1).mean(-1)
    uniform, best = rewards.mean(), rewards.max(dim=1).values.mean()
    out = (expected - uniform) / (best - uniform)
    return out.reshape(lead)


def _rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


@dataclass(frozen=True)
class PairSet:
    """Pairs drawn from the reference policy: prompt index and the two candidates' indices, each ``(N,)``."""

    prompt: np.ndarray
    a: np.ndarray
    b: np.ndarray

    def __len__(self) -> int:
        return len(self.prompt)


@dataclass
class PreferenceWorld:
    """Features ``(P, K, d)``, true weights ``(d,)`` (``true_weights[length_feature] < 0``) and exact evaluation.

    Build one with :meth:`random`. Every evaluation method accepts one ``theta`` ``(d,)`` or a batch ``(R, d)``.
    """

    features: np.ndarray
    true_weights: np.ndarray
    length_feature: int = 0
    _phi: torch.Tensor = field(init=False, repr=False)
    _reward: torch.Tensor = field(init=False, repr=False)

    def __post_init__(self) -> None:
        f = np.asarray(self.features, dtype=np.float64)
        w = np.asarray(self.true_weights, dtype=np.float64)
        if f.ndim != 3 or f.shape[1] < 2 or f.shape[0] < 1:
            raise ValueError(f"features must be (prompts, candidates >= 2, features), got shape {f.shape}")
        if w.shape != (f.shape[2],):
            raise ValueError(f"true_weights must have shape ({f.shape[2]},), got {w.shape}")
        if not (np.isfinite(f).all() and np.isfinite(w).all()):
            raise ValueError("features and true_weights must be finite")
        if not 0 <= self.length_feature < f.shape[2]:
            raise ValueError(f"length_feature must index a feature in [0, {f.shape[2]}), got {self.length_feature}")
        self.features, self.true_weights = f, w
        self._phi = torch.from_numpy(f)
        self._reward = self._phi @ torch.from_numpy(w)

    @classmethod
    def random(
        cls,
        n_prompts: int = 400,
        n_candidates: int = 8,
        n_features: int = 12,
        length_weight: float = -0.15,
        gap_scale: float = 1.0,
        seed: int | np.random.Generator | None = None,
    ) -> PreferenceWorld:
        """Gaussian features; true weights: a random unit direction on the non-length features, ``length_weight``
        on feature 0 (relative to that direction), scaled so that the true gap of a random pair has standard
        deviation ``gap_scale``."""
        if n_features < 2:
            raise ValueError("n_features must be >= 2 (the length feature and at least one real one)")
        rng = _rng(seed)
        features = rng.standard_normal((n_prompts, n_candidates, n_features))
        direction = rng.standard_normal(n_features - 1)
        w = np.concatenate([[length_weight], direction / np.linalg.norm(direction)])
        w *= gap_scale / (math.sqrt(2.0) * np.linalg.norm(w))  # Var(r_a - r_b) = 2 |w|^2 = gap_scale^2
        return cls(features, w, 0)

    # ------------------------------------------------------------------------------------- ground truth
    @property
    def shape(self) -> tuple[int, int, int]:
        return tuple(self.features.shape)  # type: ignore[return-value]

    @property
    def true_reward(self) -> np.ndarray:
        """``r*(x, y)``, shape ``(P, K)``."""
        return self._reward.numpy()

    @property
    def oracle_reward(self) -> float:
        """Expected true reward of the best deterministic policy (argmax of ``r*`` per prompt)."""
        return float(self._reward.max(dim=1).values.mean())

    @property
    def uniform_reward(self) -> float:
        """Expected true reward of the reference (uniform) policy."""
        return float(self._reward.mean())

    def _theta(self, theta: torch.Tensor | np.ndarray) -> torch.Tensor:
        t = torch.as_tensor(theta, dtype=torch.float64)
        if t.shape[-1] != self.features.shape[2] or t.dim() not in (1, 2):
            raise ValueError(f"theta must be (d,) or (R, d) with d = {self.features.shape[2]}, got {tuple(t.shape)}")
        return t

    def log_policy(self, theta: torch.Tensor | np.ndarray) -> torch.Tensor:
        """``log pi_theta(y | x)``: ``(P, K)`` for one theta, ``(R, P, K)`` for a batch (differentiable)."""
        t = self._theta(theta)
        return torch.log_softmax(torch.einsum("pkd,...d->...pk", self._phi, t), dim=-1)

    def expected_reward(self, theta: torch.Tensor | np.ndarray) -> torch.Tensor:
        """Exact ``E_x E_{y ~ pi_theta} r*(x, y)`` (scalar, or ``(R,)``)."""
        return (self.log_policy(theta).exp() * self._reward).sum(-1).mean(-1)

    def kl(self, theta: torch.Tensor | np.ndarray) -> torch.Tensor:
        """Exact ``E_x KL(pi_theta(. | x) || uniform)`` in nats (scalar, or ``(R,)``)."""
        logp = self.log_policy(theta)
        return (logp.exp() * (logp + math.log(self.features.shape[1]))).sum(-1).mean(-1)

    def normalised_reward(self, theta: torch.Tensor | np.ndarray) -> torch.Tensor:
        """``(J(theta) - J(uniform)) / (J(oracle) - J(uniform))``: 0 = the reference, 1 = the best possible policy."""
        return (self.expected_reward(theta) - self.uniform_reward) / (self.oracle_reward - self.uniform_reward)

    def reward_at_kl(self, direction: torch.Tensor | np.ndarray, kl: float) -> torch.Tensor:
        """Normalised true reward of the policy along ``direction`` (``softmax(s * direction . phi)``) at exactly
        ``kl`` nats from the reference: what a direction is worth once the regularisation strength (its length) is
        matched (:func:`reward_at_matched_kl`)."""
        u = self._theta(direction)
        scores = torch.einsum("pkd,...d->...pk", self._phi, u)
        return reward_at_matched_kl(scores, self._reward, kl)

    # --------------------------------------------------------------------------------------------- data
    def sample_pairs(self, n: int, seed: int | np.random.Generator | None = None) -> PairSet:
        """``n`` pairs from the uniform reference: a prompt, then two distinct candidates in random order."""
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        rng = _rng(seed)
        P, K, _ = self.features.shape
        prompt = rng.integers(0, P, n)
        a = rng.integers(0, K, n)
        b = (a + rng.integers(1, K, n)) % K  # uniform over the other K - 1 candidates
        return PairSet(prompt, a, b)

    def pair_rewards(self, pairs: PairSet) -> tuple[np.ndarray, np.ndarray]:
        r = self.true_reward
        return r[pairs.prompt, pairs.a], r[pairs.prompt, pairs.b]

    def pair_lengths(self, pairs: PairSet) -> tuple[np.ndarray, np.ndarray]:
        f = self.features[..., self.length_feature]
        return f[pairs.prompt, pairs.a], f[pairs.prompt, pairs.b]

    def label(self, pairs: PairSet, labeler: ResolutionLimitedLabeler, noise: np.ndarray | None = None) -> np.ndarray:
        """``labeler``'s labels for ``pairs`` (``noise``: standard normal draws, to share across labelers)."""
        ra, rb = self.pair_rewards(pairs)
        la, lb = self.pair_lengths(pairs)
        return labeler.label(ra, rb, spurious_a=la, spurious_b=lb, noise=noise)


@dataclass(frozen=True)
class ResolutionLimitedLabeler:
    """A labeler that perceives the true gap with noise ``sigma`` and cannot resolve gaps below ``tau``.

    ``forced=False``: silent below the resolution limit (label 0, a tie). ``forced=True``: it must choose, and
    breaks sub-resolution pairs by ``tiebreak``: ``"random"`` (a fair coin), ``"spurious"`` (the response with the
    larger spurious feature, e.g. the longer one, wins) or ``"position"`` (the first response wins).
    Labels: +1 a preferred, -1 b preferred, 0 tie.
    """

    sigma: float
    tau: float
    forced: bool = False
    tiebreak: Tiebreak = "random"
    seed: int | None = None

    def __post_init__(self) -> None:
        for name in ("sigma", "tau"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not (0 <= v < float("inf")):
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
        if self.tiebreak not in TIEBREAKS:
            raise ValueError(f"tiebreak must be one of {TIEBREAKS}, got {self.tiebreak!r}")
        if not isinstance(self.forced, bool):
            raise TypeError(f"forced must be a bool, got {self.forced!r}")

    @property
    def name(self) -> str:
        mode = f"forced-{self.tiebreak}" if self.forced else "silent"
        return f"sigma={self.sigma:g}, tau={self.tau:g}, {mode}"

    def label(
        self,
        r_a: np.ndarray,
        r_b: np.ndarray,
        *,
        spurious_a: np.ndarray | None = None,
        spurious_b: np.ndarray | None = None,
        noise: np.ndarray | None = None,
        rng: np.random.Generator | None = None,
    ) -> np.ndarray:
        """Labels in {-1, 0, +1} (int64) for pairs with true rewards ``r_a``, ``r_b``; ``spurious_a/_b`` are needed
        for ``tiebreak="spurious"``; ``noise`` (standard normal, shape of ``r_a``) overrides the labeler's own draws
        so that several labelers can judge with common random numbers."""
        r_a, r_b = np.asarray(r_a, dtype=np.float64), np.asarray(r_b, dtype=np.float64)
        if r_a.shape != r_b.shape or r_a.ndim != 1:
            raise ValueError(f"r_a and r_b must be 1-D of one shape, got {r_a.shape} and {r_b.shape}")
        if not (np.isfinite(r_a).all() and np.isfinite(r_b).all()):
            raise ValueError("rewards must be finite")
        rng = rng if rng is not None else np.random.default_rng(self.seed)
        eps = rng.standard_normal(r_a.shape) if noise is None else np.asarray(noise, dtype=np.float64)
        if eps.shape != r_a.shape:
            raise ValueError(f"noise must have shape {r_a.shape}, got {eps.shape}")
        gap = r_a - r_b + self.sigma * eps
        below = np.abs(gap) < self.tau
        labels = np.where(gap > 0, 1, np.where(gap < 0, -1, 0)).astype(np.int64)
        if self.forced:
            labels = np.where(below | (labels == 0), self._break(r_a.shape, spurious_a, spurious_b, rng), labels)
        else:
            labels[below] = 0
        return labels

    def _break(
        self, shape: tuple[int, ...], s_a: np.ndarray | None, s_b: np.ndarray | None, rng: np.random.Generator
    ) -> np.ndarray:
        coin = np.where(rng.random(shape) < 0.5, 1, -1)
        if self.tiebreak == "random":
            return coin
        if self.tiebreak == "position":
            return np.ones(shape, dtype=np.int64)
        if s_a is None or s_b is None:
            raise ValueError("tiebreak='spurious' needs spurious_a and spurious_b (e.g. the two responses' lengths)")
        diff = np.asarray(s_a, dtype=np.float64) - np.asarray(s_b, dtype=np.float64)
        if diff.shape != shape:
            raise ValueError(f"spurious_a/_b must have shape {shape}, got {diff.shape}")
        return np.where(diff > 0, 1, np.where(diff < 0, -1, coin))
