"""Genotype -> phenotype: a bounded latent z in [-B, B]^d decoded into a planar articulated body.

The family ("MorphReach"): a 3-link planar chain fixed at its base, one torque motor per joint. A design is
link lengths, motor gains, motor gear signs and joint limits. The gear signs form four *control regimes*: a mirror
sign m (every motor reversed) and a base sign b (the base motor reversed against the others), gears
``(m b, m, m)``; the same observation needs opposite torques in two regimes, so one controller that ignores the
design cannot serve them all (the notes' "genuinely conflicting control regimes").

The decoder is a fixed, seeded random MLP (ours; *not* a learned VAE): ``h = W2 tanh(W1 z + b1) + b2``; the
continuous parameters are squashed into their ranges by a sigmoid and the two regime bits are ``sign(h)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "LATENT_BOUND",
    "LATENT_DIM",
    "N_LINKS",
    "RANGES",
    "DesignError",
    "LatentError",
    "Morphology",
    "RandomMLPDecoder",
    "morphology_distance",
]

LATENT_DIM = 8
LATENT_BOUND = 3.0
N_LINKS = 3
# Ranges of the continuous parameters (per link/joint); a design outside them is outside the family.
RANGES = {
    "lengths": (0.3, 1.0),
    "gains": (0.5, 2.0),
    "limits": (math.pi / 4, math.pi),
}


class LatentError(ValueError):
    """A latent the decoder refuses: wrong shape, not finite, or outside the bounded box [-B, B]^d."""


class DesignError(ValueError):
    """A morphology outside the family (wrong sizes, parameters out of range, gear signs not in a regime)."""


@dataclass(frozen=True)
class Morphology:
    """One decoded body. Arrays of shape (N_LINKS,); ``gear_signs`` in {-1, +1} with gears[1:] equal."""

    lengths: tuple[float, ...]
    gains: tuple[float, ...]
    gear_signs: tuple[int, ...]
    limits: tuple[float, ...]

    def __post_init__(self) -> None:
        for name in ("lengths", "gains", "limits"):
            v = np.asarray(getattr(self, name), dtype=float)
            lo, hi = RANGES[name]
            if v.shape != (N_LINKS,):
                raise DesignError(f"{name} must have {N_LINKS} entries, got shape {v.shape}")
            if not np.all(np.isfinite(v)) or np.any(v < lo - 1e-9) or np.any(v > hi + 1e-9):
                raise DesignError(f"{name} {v.tolist()} outside the family's range [{lo:.4g}, {hi:.4g}]")
            object.__setattr__(self, name, tuple(float(x) for x in v))
        s = tuple(int(x) for x in np.asarray(self.gear_signs).ravel())
        if len(s) != N_LINKS or any(x not in (-1, 1) for x in s) or len(set(s[1:])) != 1:
            raise DesignError(
                f"gear_signs {list(self.gear_signs)} is not a regime of the family: (m*b, m, m) with m, b in {{-1, 1}}"
            )
        object.__setattr__(self, "gear_signs", s)

    @property
    def regime(self) -> int:
        """The control regime 0..3: 2 * [mirror m = -1] + [base sign b = -1]."""
        m = self.gear_signs[1]
        b = self.gear_signs[0] * m
        return 2 * int(m < 0) + int(b < 0)

    @property
    def reach(self) -> float:
        return float(sum(self.lengths))

    def vector(self) -> np.ndarray:
        """Continuous parameters scaled to [0, 1] (lengths, gains, limits), the space of morphology distances."""
        parts = []
        for name in ("lengths", "gains", "limits"):
            lo, hi = RANGES[name]
            parts.append((np.asarray(getattr(self, name)) - lo) / (hi - lo))
        return np.concatenate(parts)


def morphology_distance(a: Morphology, b: Morphology) -> float:
    """Distance in [0, 1]: half the RMS gap of the scaled continuous parameters, half the share of differing
    regime bits (mirror, base sign). Ours: the paper measures limb count and mass-bias vectors of voxel bodies."""
    rms = float(np.sqrt(np.mean((a.vector() - b.vector()) ** 2)))
    bits_a = (a.gear_signs[1] < 0, a.gear_signs[0] * a.gear_signs[1] < 0)
    bits_b = (b.gear_signs[1] < 0, b.gear_signs[0] * b.gear_signs[1] < 0)
    return 0.5 * rms + 0.5 * float(np.mean([x != y for x, y in zip(bits_a, bits_b, strict=True)]))


class RandomMLPDecoder:
    """``decode(z) -> Morphology``: a fixed random MLP R^8 -> morphology (seeded; the same seed, the same family).

    ``decode_batch(Z)`` returns the raw parameter arrays of many latents at once (what the simulator consumes).
    Latents must be finite, of shape (d,) or (n, d), inside [-bound, bound]^d: one :class:`LatentError` otherwise
    (clip them yourself, e.g. ``np.clip(z, -bound, bound)``, if that is what you mean).
    """

    def __init__(self, latent_dim: int = LATENT_DIM, hidden: int = 32, bound: float = LATENT_BOUND, seed: int = 0):
        if latent_dim < 2 or hidden < 1 or not bound > 0:
            raise ValueError(f"need latent_dim >= 2, hidden >= 1, bound > 0; got {latent_dim}, {hidden}, {bound}")
        rng = np.random.default_rng([seed, 41])
        self.latent_dim, self.bound = int(latent_dim), float(bound)
        n_out = 3 * N_LINKS + 2  # lengths, gains, limits, mirror bit, base bit
        self.w1 = rng.standard_normal((latent_dim, hidden)) / math.sqrt(latent_dim)
        self.b1 = 0.3 * rng.standard_normal(hidden)
        self.w2 = rng.standard_normal((hidden, n_out)) * 1.5 / math.sqrt(hidden)
        self.b2 = 0.1 * rng.standard_normal(n_out)

    def check(self, z: np.ndarray | list[float]) -> np.ndarray:
        """The latent(s) as a float array of shape (n, d), or one clear LatentError."""
        arr = np.asarray(z, dtype=float)
        if arr.ndim == 1:
            arr = arr[None]
        if arr.ndim != 2 or arr.shape[1] != self.latent_dim or arr.shape[0] == 0:
            raise LatentError(
                f"latents must have shape ({self.latent_dim},) or (n, {self.latent_dim}), got {np.shape(z)}"
            )
        if not np.all(np.isfinite(arr)):
            raise LatentError("latents contain NaN or infinity")
        if np.any(np.abs(arr) > self.bound + 1e-9):
            raise LatentError(
                f"latents outside the bounded box [-{self.bound:g}, {self.bound:g}]^{self.latent_dim} "
                f"(max |z| = {np.abs(arr).max():.3g}); unbounded latents decode to bodies outside the family"
            )
        return arr

    def decode_batch(self, z: np.ndarray) -> dict[str, np.ndarray]:
        """Raw arrays of shape (n, N_LINKS): lengths, gains, gear_signs, limits."""
        h = np.tanh(self.check(z) @ self.w1 + self.b1) @ self.w2 + self.b2
        sig = 1.0 / (1.0 + np.exp(-h))
        out = {}
        for i, name in enumerate(("lengths", "gains", "limits")):
            lo, hi = RANGES[name]
            out[name] = lo + (hi - lo) * sig[:, i * N_LINKS : (i + 1) * N_LINKS]
        m = np.where(h[:, -2] >= 0, 1.0, -1.0)
        b = np.where(h[:, -1] >= 0, 1.0, -1.0)
        out["gear_signs"] = np.stack([m * b, m, m], axis=1)
        return out

    def decode(self, z: np.ndarray | list[float]) -> Morphology:
        """One latent (shape (d,)) -> its Morphology."""
        if np.ndim(z) != 1:
            raise LatentError(
                f"decode takes one latent of shape ({self.latent_dim},), got {np.shape(z)}; use decode_batch"
            )
        raw = self.decode_batch(np.asarray(z, float)[None])
        return Morphology(
            tuple(raw["lengths"][0]),
            tuple(raw["gains"][0]),
            tuple(int(s) for s in raw["gear_signs"][0]),
            tuple(raw["limits"][0]),
        )
