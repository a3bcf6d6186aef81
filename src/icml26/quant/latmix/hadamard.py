"""Hadamard matrices of the orders a Llama needs, built without downloads: Sylvester (2^k), Paley I (q + 1 for a
prime q = 3 mod 4) and Paley II (2(q + 1) for a prime q = 1 mod 4), and their Kronecker products.

SmolLM2's hidden size 576 = 36 * 16 (Paley II with q = 17, times Sylvester 16) and its MLP size 1536 = 12 * 128
(Paley I with q = 11, times Sylvester 128); no zero padding to a power of two. Every matrix returned satisfies
H H^T = n I exactly (entries +-1, checked in the tests).
"""

from __future__ import annotations

from functools import lru_cache

import torch

__all__ = ["hadamard_factors", "hadamard_matrix", "has_hadamard", "paley_i", "paley_ii", "sylvester"]


def sylvester(n: int) -> torch.Tensor:
    """The Sylvester Hadamard matrix of order n = 2^k (entries +-1, float64)."""
    if n < 1 or n & (n - 1):
        raise ValueError(f"Sylvester Hadamard matrices have power-of-two orders, got {n}")
    h = torch.ones(1, 1, dtype=torch.float64)
    while h.shape[0] < n:
        h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)], 0)
    return h


def _is_prime(q: int) -> bool:
    return q > 1 and all(q % d for d in range(2, int(q**0.5) + 1))


def _jacobsthal(q: int) -> torch.Tensor:
    """Q[i, j] = chi(j - i) for the quadratic character chi of GF(q), q prime."""
    residues = {(k * k) % q for k in range(1, q)}
    chi = torch.tensor([0.0] + [1.0 if a in residues else -1.0 for a in range(1, q)], dtype=torch.float64)
    idx = torch.arange(q)
    return chi[(idx[None, :] - idx[:, None]) % q]


def paley_i(q: int) -> torch.Tensor:
    """Paley construction I: a Hadamard matrix of order q + 1 for a prime q = 3 (mod 4)."""
    if not _is_prime(q) or q % 4 != 3:
        raise ValueError(f"Paley I needs a prime q = 3 (mod 4), got {q}")
    c = torch.zeros(q + 1, q + 1, dtype=torch.float64)
    c[0, 1:] = 1.0
    c[1:, 0] = -1.0
    c[1:, 1:] = _jacobsthal(q)
    return c + torch.eye(q + 1, dtype=torch.float64)


def paley_ii(q: int) -> torch.Tensor:
    """Paley construction II: a Hadamard matrix of order 2(q + 1) for a prime q = 1 (mod 4)."""
    if not _is_prime(q) or q % 4 != 1:
        raise ValueError(f"Paley II needs a prime q = 1 (mod 4), got {q}")
    c = torch.zeros(q + 1, q + 1, dtype=torch.float64)
    c[0, 1:] = 1.0
    c[1:, 0] = 1.0
    c[1:, 1:] = _jacobsthal(q)
    zero = torch.tensor([[1.0, -1.0], [-1.0, -1.0]], dtype=torch.float64)
    plus = torch.tensor([[1.0, 1.0], [1.0, -1.0]], dtype=torch.float64)
    # entries 0 (the diagonal of C) -> [[1, -1], [-1, -1]], +-1 -> +-[[1, 1], [1, -1]]
    return torch.kron(c, plus) + torch.kron((c == 0).double(), zero)


def _base(m: int) -> torch.Tensor | None:
    """A non-power-of-two Hadamard core of order m from Paley I or II (None if neither applies)."""
    if m == 1:
        return torch.ones(1, 1, dtype=torch.float64)
    if _is_prime(m - 1) and (m - 1) % 4 == 3:
        return paley_i(m - 1)
    if m % 2 == 0 and _is_prime(m // 2 - 1) and (m // 2 - 1) % 4 == 1:
        return paley_ii(m // 2 - 1)
    return None


@lru_cache(maxsize=16)
def _factors(n: int) -> tuple[torch.Tensor, torch.Tensor] | None:
    power = n & -n  # the largest power of two dividing n
    while power >= 1:
        core = _base(n // power)
        if core is not None:
            return core, sylvester(power)
        power //= 2
    return None


def _hadamard(n: int) -> torch.Tensor | None:
    factors = _factors(n)
    return None if factors is None else torch.kron(*factors)


def hadamard_factors(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(C, S), float32 and each normalised, with hadamard_matrix(n) == kron(C, S): x H is then computed as
    C^T X S on x reshaped to (m, p), m + p multiply-adds per element instead of n (the Kronecker trick QuaRot's
    online Hadamard uses)."""
    hadamard_matrix(n)  # one clear error for unsupported orders
    core, syl = _factors(n)
    return (core / core.shape[0] ** 0.5).float(), (syl / syl.shape[0] ** 0.5).float()


def has_hadamard(n: int) -> bool:
    return n >= 1 and _hadamard(n) is not None


def hadamard_matrix(n: int, normalized: bool = True) -> torch.Tensor:
    """A Hadamard matrix of order n as float32 (divided by sqrt(n), hence orthogonal, when ``normalized``).

    Orders: 2^k * m where m = 1, m - 1 a prime = 3 (mod 4), or m / 2 - 1 a prime = 1 (mod 4); this covers
    SmolLM2's 576 and 1536 and every power of two; 92 (which needs Williamson's construction) is not covered.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"the order must be a positive integer, got {n!r}")
    h = _hadamard(n)
    if h is None:
        raise ValueError(
            f"no Hadamard construction here for order {n} (supported: 2^k times 1, q + 1 for a prime q = 3 mod 4, "
            "or 2(q + 1) for a prime q = 1 mod 4); use block_size=32 (block Hadamard) instead"
        )
    return (h / n**0.5 if normalized else h).float()
