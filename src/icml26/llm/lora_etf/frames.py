"""Frames for LoRA's A: exact equiangular tight frames, minimum-coherence unit-norm tight frames, and ablations.

Notation: A is r x n (LoRA rank r, n = in_features); its *columns* a_1..a_n in R^r are the frame vectors
(reading (i) of the paper, the frame-theory one).

- **Tight**: A Aᵀ = (‖A‖_F² / r) I. With unit columns (a *unit-norm tight frame*, UNTF) this is A Aᵀ = (n/r) I:
  the rows of A are orthogonal and all have squared norm n/r.
- **Coherence** μ(A) = max_{i≠j} |⟨a_i, a_j⟩| / (‖a_i‖ ‖a_j‖). Welch (1974): for n unit vectors in R^r,
  μ ≥ √((n − r) / (r (n − 1))), with equality iff the frame is an **equiangular tight frame** (ETF):
  tight and every |⟨a_i, a_j⟩| equal.
- **Existence**: a real ETF needs n ≤ r (r + 1) / 2 (the Gerzon bound) and exists only for special (r, n). We
  build the exact ones of three classical families (:func:`known_etf`): n = r (an orthonormal basis, μ = 0),
  n = r + 1 (the regular simplex) and n = 2r from a Paley conference matrix (2r − 1 a prime ≡ 1 mod 4). For
  every other (r, n), in particular LoRA's n ≫ r(r+1)/2, we return a UNTF whose coherence is *minimised*, not an
  ETF, and :func:`frame_stats` says how far it is from the Welch bound.

Minimum-coherence UNTF (:func:`untf`), the fast route (Strohmer & Heath 2003; Tropp et al. 2005 build Grams):

1. Start from a seeded Gaussian r x n matrix.
2. Project onto the UNTFs by alternating the two exact projections (each is cheap, O(n r²)):
   column normalisation a_j ← a_j / ‖a_j‖, and the polar (nearest tight) projection A ← √(n/r) U Vᵀ for
   A = U Σ Vᵀ. Stop when both the tightness and the column-norm errors are below ``tol``.
3. Descend the p-frame potential FP_p(A) = Σ_{i≠j} |⟨a_i, a_j⟩|^p (Benedetto & Fickus 2003 for p = 2, where
   every UNTF is a minimiser; a large p, 32 by default, approximates max |⟨a_i, a_j⟩|, i.e. the coherence): a
   normalised gradient step along −∇_{a_k} = −2p Σ_j sign(g_kj) |g_kj|^{p−1} a_j (tangent to the sphere), then
   two rounds of step 2 to return near the UNTFs; keep the iterate of lowest coherence and project it exactly.
   Each step costs O(n² r) (one float32 Gram), so r = 16, n = 4096 takes seconds (see the benchmark).
   The coherence reached is well above the Welch bound when n ≫ r(r+1)/2, where the bound is unattainable.

**How close can a UNTF get?** Three lower bounds on the coherence of n unit vectors in R^r
(:func:`coherence_bounds`): Welch (1974), μ ≥ √((n − r) / (r (n − 1))), attained only by ETFs; and, beyond the
Gerzon bound n > r (r + 1) / 2 where no real ETF exists and Welch cannot be attained, the orthoplex (Rankin) bound
μ ≥ 1/√r and the Levenshtein bound μ² ≥ (3n − r² − 2r) / ((r + 2)(n − r)) (attained, e.g., by the 120 lines of
the E8 root system, r = 8, μ = 1/2). At LoRA's sizes (r = 8, n = 576) Levenshtein (0.539) is the binding one,
far above Welch (0.351): :func:`frame_stats` reports all three and the ratio to the best. Tropp et al.'s
alternating projection aimed at the Welch bound degenerates there (coherence → 1), which is why step 3 descends
a frame potential instead.

Ablations (not ETFs, never called so): :func:`simplex_rows`, reading (ii), the r rows form a regular simplex
(A Aᵀ = r/(r−1) (I − 11ᵀ/r), rank r − 1); :func:`orthonormal_rows`, reading (iii), a degenerate tight frame.

References
----------
- L. R. Welch, "Lower bounds on the maximum cross correlation of signals", IEEE Trans. IT, 1974.
- T. Strohmer, R. W. Heath, "Grassmannian frames with applications to coding and communication", ACHA, 2003.
- J. A. Tropp, I. S. Dhillon, R. W. Heath, T. Strohmer, "Designing structured tight frames via an alternating
  projection method", IEEE Trans. IT, 2005.
- J. J. Benedetto, M. Fickus, "Finite normalized tight frames", Adv. Comput. Math., 2003 (frame potential).
- J. H. Conway, R. H. Hardin, N. J. A. Sloane, "Packing lines, planes, etc.", Experimental Math., 1996
  (orthoplex bound); V. I. Levenshtein, "Bounds on the maximal cardinality of a code with bounded modulus of the
  inner product", Soviet Math. Dokl., 1982.
"""

from __future__ import annotations

import math
import operator
import warnings
from typing import Any, Literal

import torch

__all__ = [
    "FrameKind",
    "coherence",
    "coherence_bounds",
    "etf_matrix",
    "frame_stats",
    "gerzon_bound",
    "known_etf",
    "minimise_coherence",
    "orthonormal_rows",
    "project_to_untf",
    "simplex_rows",
    "subspace_projector",
    "untf",
    "welch_bound",
]

FrameKind = Literal["untf", "simplex", "orthogonal"]
FRAME_KINDS: tuple[str, ...] = ("untf", "simplex", "orthogonal")


# ------------------------------------------------------------------------------------------------ checks
def _as_int(value: Any, name: str) -> int:
    """An integer argument (Python or numpy integer, or a 0-d integer array); anything else is a TypeError."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {value!r}") from None


def _check_shape(r: Any, n: Any, min_r: int = 1) -> tuple[int, int]:
    r, n = _as_int(r, "r"), _as_int(n, "n")
    if r < min_r:
        raise ValueError(f"a frame of rank r={r} is degenerate here: need r >= {min_r}")
    if r > n:
        raise ValueError(f"no r x n frame with r={r} > n={n}: A Aᵀ would be singular (LoRA rank above in_features)")
    return r, n


def _check_seed(seed: Any) -> int | None:
    return None if seed is None else _as_int(seed, "seed")


def as_frame(A: Any, name: str = "A") -> torch.Tensor:
    """A as a float64 r x n tensor (torch tensors, numpy arrays and nested lists are accepted), or one clear
    ValueError: not 2-d, empty, complex, not finite, or all zeros (no frame to measure)."""
    if not isinstance(A, torch.Tensor):
        try:
            import numpy as np

            A = torch.from_numpy(np.array(A, copy=True))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name} must be a real r x n matrix (tensor or array), got {type(A).__name__}") from exc
    if A.is_complex():
        raise ValueError(f"{name} must be real (the frames here are real), got dtype {A.dtype}")
    if A.dtype == torch.bool or not (A.is_floating_point() or A.dtype in _INT_DTYPES):
        raise ValueError(f"{name} must be a real numeric matrix, got dtype {A.dtype}")
    if A.ndim != 2:
        raise ValueError(f"{name} must be a 2-d r x n matrix (rows of LoRA's A), got shape {tuple(A.shape)}")
    if A.numel() == 0:
        raise ValueError(f"{name} is empty (shape {tuple(A.shape)})")
    A = A.detach().to(torch.float64)
    if not bool(torch.isfinite(A).all()):
        raise ValueError(f"{name} has NaN or infinite entries")
    if not bool(A.any()):
        raise ValueError(f"{name} is all zeros: no frame to measure")
    return A


_INT_DTYPES = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)


def _generator(seed: Any) -> torch.Generator:
    gen = torch.Generator()
    seed = _check_seed(seed)
    if seed is None:
        seed = int(torch.randint(0, 2**62, (1,)).item())  # follows torch.manual_seed, like PEFT's own inits
    gen.manual_seed(int(seed))
    return gen


def _gaussian(r: int, n: int, gen: torch.Generator) -> torch.Tensor:
    return torch.randn(r, n, generator=gen, dtype=torch.float64)


# ------------------------------------------------------------------------------------------------ bounds
def _check_bound_args(r: Any, n: Any) -> tuple[int, int]:
    r, n = _as_int(r, "r"), _as_int(n, "n")
    if r < 1 or n < 1:
        raise ValueError(f"a bound on n unit vectors in R^r needs r >= 1 and n >= 1, got r={r}, n={n}")
    return r, n


def welch_bound(r: int, n: int) -> float:
    """Smallest possible coherence of n unit vectors in R^r: √((n − r) / (r (n − 1))) (0 when n ≤ r)."""
    r, n = _check_bound_args(r, n)
    if n <= r:
        return 0.0
    return math.sqrt((n - r) / (r * (n - 1)))


def gerzon_bound(r: int) -> int:
    """Largest n for which a real ETF of n vectors in R^r can exist: r (r + 1) / 2."""
    r = _as_int(r, "r")
    if r < 1:
        raise ValueError(f"r must be >= 1, got {r}")
    return r * (r + 1) // 2


def coherence_bounds(r: int, n: int) -> dict[str, float | None]:
    """Lower bounds on the coherence of n unit vectors in R^r (real): ``welch``; beyond the Gerzon bound
    (n > r(r+1)/2, where no real ETF exists) ``orthoplex`` 1/√r and ``levenshtein``
    √((3n − r² − 2r) / ((r + 2)(n − r))), else None; ``best`` is the largest that applies."""
    r, n = _check_bound_args(r, n)
    welch = welch_bound(r, n)
    orthoplex = levenshtein = None
    if n > gerzon_bound(r):
        orthoplex = 1.0 / math.sqrt(r)
        levenshtein = math.sqrt((3 * n - r * r - 2 * r) / ((r + 2) * (n - r)))
    best = max(b for b in (welch, orthoplex, levenshtein) if b is not None)
    return {"welch": welch, "orthoplex": orthoplex, "levenshtein": levenshtein, "best": best}


def coherence(A: torch.Tensor) -> float:
    """max_{i≠j} |cos(a_i, a_j)| over the columns of A (zero columns are ignored; 0 for fewer than two)."""
    A = as_frame(A)
    norms = A.norm(dim=0)
    keep = norms > 1e-12 * float(norms.max())
    U = A[:, keep] / norms[keep]
    if U.shape[1] < 2:
        return 0.0
    G = (U.T @ U).abs_()
    G.fill_diagonal_(0.0)
    return float(G.max())


# ------------------------------------------------------------------------------------------ exact ETFs
def _factor_gram(G: torch.Tensor, r: int) -> torch.Tensor:
    """A (r x n) with Aᵀ A = G, for a PSD Gram of rank r (top-r eigenpairs)."""
    vals, vecs = torch.linalg.eigh(G)
    vals, vecs = vals[-r:].clamp_min(0.0), vecs[:, -r:]
    return (vecs * vals.sqrt()).T.contiguous()


def _is_prime(q: int) -> bool:
    return q >= 2 and all(q % d for d in range(2, math.isqrt(q) + 1))


def paley_conference_matrix(q: int) -> torch.Tensor:
    """Symmetric conference matrix C of order q + 1 (zero diagonal, ±1 elsewhere, C² = q I) for a prime
    q ≡ 1 (mod 4): C[0, j] = 1 and C[i, j] = χ(i − j), the Legendre symbol of GF(q) (Paley 1933)."""
    if not (_is_prime(q) and q % 4 == 1):
        raise ValueError(f"the Paley construction here needs a prime q ≡ 1 (mod 4), got {q}")
    squares = {(x * x) % q for x in range(1, q)}
    chi = torch.tensor([0.0] + [1.0 if x in squares else -1.0 for x in range(1, q)], dtype=torch.float64)
    idx = torch.arange(q)
    C = torch.zeros(q + 1, q + 1, dtype=torch.float64)
    C[0, 1:] = 1.0
    C[1:, 0] = 1.0
    C[1:, 1:] = chi[(idx[:, None] - idx[None, :]) % q]
    return C


def known_etf(r: int, n: int, seed: int | None = None) -> torch.Tensor | None:
    """An exact real ETF (unit columns, A Aᵀ = (n/r) I, all |⟨a_i, a_j⟩| equal to the Welch bound), or None.

    Families: n = r (a random orthonormal basis), n = r + 1 (the regular simplex, Gram n/(n−1) (I − 11ᵀ/n)),
    n = 2r with 2r − 1 a prime ≡ 1 (mod 4) (Gram I + C / √(2r − 1) for a Paley conference matrix C). The
    result is rotated by a seeded random orthogonal r x r matrix (rotations keep every frame property).
    """
    r, n = _check_shape(r, n)
    seed = _check_seed(seed)
    if n == r:
        G = torch.eye(n, dtype=torch.float64)
    elif n == r + 1:
        G = n / (n - 1) * (torch.eye(n, dtype=torch.float64) - 1.0 / n)
    elif n == 2 * r and _is_prime(2 * r - 1) and (2 * r - 1) % 4 == 1:
        G = torch.eye(n, dtype=torch.float64) + paley_conference_matrix(2 * r - 1) / math.sqrt(2 * r - 1)
    else:
        return None
    A = _factor_gram(G, r)
    Q, R = torch.linalg.qr(_gaussian(r, r, _generator(seed)))
    Q = Q * torch.sign(torch.diagonal(R))  # Haar-distributed rotation
    return Q @ A


# ------------------------------------------------------------------------------------------------ UNTFs
def _tight_and_norm_errors(A: torch.Tensor) -> tuple[float, float]:
    r, n = A.shape
    tight = float(torch.linalg.matrix_norm(A @ A.T - (n / r) * torch.eye(r, dtype=A.dtype), ord=2))
    norms = float((A.norm(dim=0) - 1.0).abs().max())
    return tight, norms


def project_to_untf(A: torch.Tensor, tol: float = 1e-9, max_iter: int = 500) -> torch.Tensor:
    """Project onto the UNTFs: alternate column normalisation and the polar projection √(n/r) U Vᵀ until
    ‖A Aᵀ − (n/r) I‖₂ and max_j |‖a_j‖ − 1| are both below ``tol`` (float64; ends on normalised columns)."""
    A = as_frame(A)
    r, n = A.shape
    if r > n:
        raise ValueError(f"no unit-norm tight frame of n={n} vectors in R^r with r={r} > n")
    scale = math.sqrt(n / r)
    for _ in range(max_iter):
        U, _, Vh = torch.linalg.svd(A, full_matrices=False)
        A = scale * (U @ Vh)
        A = A / A.norm(dim=0).clamp_min(1e-300)
        tight, norms = _tight_and_norm_errors(A)
        if tight < tol and norms < tol:
            return A
    warnings.warn(
        f"project_to_untf did not reach tol={tol:g} in {max_iter} iterations (tightness error {tight:.2e}, "
        f"column-norm error {norms:.2e}); frame_stats(A) reports what was reached",
        RuntimeWarning,
        stacklevel=2,
    )
    return A


def untf(r: int, n: int, seed: int | None = None, tol: float = 1e-9) -> torch.Tensor:
    """A unit-norm tight frame from a seeded Gaussian (step 2 of the module docstring), no coherence descent."""
    r, n = _check_shape(r, n)
    return project_to_untf(_gaussian(r, n, _generator(seed)), tol=tol)


def _signed_power(G: torch.Tensor, p: int) -> torch.Tensor:
    """sign(g) |g|^{p-1} for p a power of two, in place on G (|g| <= 1): repeated squaring, no pow()."""
    square = G.square()
    while p > 2:
        G.mul_(square)
        p //= 2
        if p > 2:
            square.square_()
    return G


def _polar_steps(X: torch.Tensor, steps: int) -> torch.Tensor:
    """A few rounds of (polar projection, column normalisation): close to the UNTFs, cheap (SVD of r x n)."""
    r, n = X.shape
    scale = math.sqrt(n / r)
    for _ in range(steps):
        U, _, Vh = torch.linalg.svd(X, full_matrices=False)
        X = scale * (U @ Vh)
        X = X / X.norm(dim=0).clamp_min(1e-30)
    return X


def _check_p(p: Any) -> int:
    p = _as_int(p, "p")
    if p < 4 or p & (p - 1):
        raise ValueError(f"p must be a power of two >= 4, got {p}")
    return p


def minimise_coherence(
    A: torch.Tensor, iters: int = 100, p: int = 32, step: float = 0.3, shrink: float = 0.9, tol: float = 1e-9
) -> torch.Tensor:
    """Descend the p-frame potential from A, staying near the UNTFs; return the iterate of lowest coherence,
    projected exactly onto the UNTFs (float64). Step 3 of the module docstring.

    Each step: Gram G = Xᵀ X (float32, the O(n² r) cost, in row blocks), μ = max off-diagonal |g|,
    W = sign(G) |G/μ|^{p−1}, gradient X W made tangent to each column's sphere, a step of ``step`` x (its
    largest column norm), two polar/normalise rounds. The step shrinks by ``shrink`` whenever the coherence
    did not improve. ``p`` must be a power of two (the power is computed by repeated squaring).
    """
    p, iters = _check_p(p), _as_int(iters, "iters")
    if iters < 0:
        raise ValueError(f"iters must be >= 0, got {iters}")
    X = project_to_untf(as_frame(A), tol=tol).float()
    best, best_mu = X, math.inf
    for _ in range(iters):
        mu, grad = _potential_gradient(X, p)
        if mu < best_mu:
            best, best_mu = X, mu
        else:
            step *= shrink
        grad -= X * (X * grad).sum(0)
        gmax = float(grad.norm(dim=0).max())
        if gmax < 1e-12:
            break
        X = _polar_steps(X - (step / gmax) * grad, 2)
    return project_to_untf(best.double(), tol=tol)


def _off_diagonal_gram(X: torch.Tensor, start: int, stop: int) -> torch.Tensor:
    """Rows start:stop of Xᵀ X with the diagonal entries zeroed."""
    block = X[:, start:stop].T @ X
    rows = torch.arange(stop - start)
    block[rows, rows + start] = 0.0
    return block


def _potential_gradient(X: torch.Tensor, p: int, block: int = 128) -> tuple[float, torch.Tensor]:
    """(μ, X W) with μ = max off-diagonal |g| and W = sign(G) |G/μ|^{p−1}, G = Xᵀ X, computed in row blocks
    of G so that the elementwise power runs in cache (two passes: μ first, then the blocks of X W = Σ).
    G is symmetric, so the columns start:stop of X W are X (W[start:stop])ᵀ."""
    n = X.shape[1]
    mu = 0.0
    for start in range(0, n, block):
        lo, hi = _off_diagonal_gram(X, start, min(start + block, n)).aminmax()
        mu = max(mu, -float(lo), float(hi))
    grad = torch.empty_like(X)
    for start in range(0, n, block):
        stop = min(start + block, n)
        grad[:, start:stop] = X @ _signed_power(_off_diagonal_gram(X, start, stop).div_(mu), p).T
    return mu, grad


def simplex_rows(r: int, n: int, seed: int | None = None) -> torch.Tensor:
    """Reading (ii), an ablation: A = √(r/(r−1)) (I − 11ᵀ/r) Uᵀ with U (n x r) random orthonormal; the r rows
    are unit vectors with pairwise inner product −1/(r−1) (a regular simplex), so rank(A) = r − 1."""
    r, n = _check_shape(r, n, min_r=2)
    U = orthonormal_rows(r, n, seed).T
    centring = torch.eye(r, dtype=torch.float64) - 1.0 / r
    return math.sqrt(r / (r - 1)) * centring @ U.T


def orthonormal_rows(r: int, n: int, seed: int | None = None) -> torch.Tensor:
    """Reading (iii), an ablation: r orthonormal rows (Haar-random), A Aᵀ = I; tight, columns not unit-norm."""
    r, n = _check_shape(r, n)
    Q, R = torch.linalg.qr(_gaussian(n, r, _generator(_check_seed(seed))))
    return (Q * torch.sign(torch.diagonal(R))).T.contiguous()


def etf_matrix(
    r: int,
    n: int,
    kind: FrameKind = "untf",
    coherence_iters: int = 100,
    seed: int | None = None,
    p: int = 32,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """An r x n frame, unscaled (see :func:`icml26.llm.lora_etf.apply_etf_init` for the LoRA scale).

    - ``"untf"`` (the paper's reading): an exact ETF when :func:`known_etf` has one for (r, n), otherwise a UNTF
      with minimised coherence (``coherence_iters`` descent steps on the p-frame potential; 0 to skip).
      Unit columns, A Aᵀ = (n/r) I. :func:`frame_stats` gives the achieved coherence against the Welch bound and,
      beyond r(r+1)/2 columns, the orthoplex and Levenshtein bounds.
    - ``"simplex"``: rows form a regular simplex (rank r − 1); ablation.
    - ``"orthogonal"``: orthonormal rows; ablation.

    ``r``, ``n``, ``coherence_iters``, ``seed`` and ``p`` accept Python or numpy integers; a bad value (r < 2,
    r > n, a negative ``coherence_iters``, ``p`` not a power of two, an unknown ``kind``) is one clear error.
    """
    if kind not in FRAME_KINDS:
        raise ValueError(f"kind must be one of {FRAME_KINDS}, got {kind!r}")
    r, n = _check_shape(r, n, min_r=2)
    coherence_iters, seed, p = _as_int(coherence_iters, "coherence_iters"), _check_seed(seed), _check_p(p)
    if coherence_iters < 0:
        raise ValueError(f"coherence_iters must be >= 0 (0 skips the coherence descent), got {coherence_iters}")
    if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point and not dtype.is_complex):
        raise ValueError(f"dtype must be a real floating torch dtype, got {dtype!r}")
    if kind == "untf":
        A = known_etf(r, n, seed)
        if A is None:
            A = untf(r, n, seed)
            if coherence_iters > 0:
                A = minimise_coherence(A, iters=coherence_iters, p=p)
    elif kind == "simplex":
        A = simplex_rows(r, n, seed)
    else:
        A = orthonormal_rows(r, n, seed)
    return A.to(dtype)


# ------------------------------------------------------------------------------------------ diagnostics
def frame_stats(A: Any) -> dict[str, Any]:
    """Frame properties of the columns of A (r x n; a tensor or an array), scale-free.

    - ``tightness_err``: ‖A Aᵀ − c I‖₂ / c with c = ‖A‖_F² / r (0 for a tight frame);
    - ``column_norm_spread``: max ‖a_j‖ / min ‖a_j‖ − 1 (0 for equal-norm columns; inf with a zero column);
    - ``coherence`` against its lower bounds (:func:`coherence_bounds`): ``welch_bound`` (equality iff an ETF),
      and for n > r(r+1)/2, where no real ETF exists and Welch is unattainable, ``orthoplex_bound`` and
      ``levenshtein_bound`` (None below); ``coherence_bound`` is the largest that applies, and
      ``coherence_over_welch`` / ``coherence_over_bound`` say how far A is from each (1 = optimal);
    - ``is_etf``: tight, equal-norm and coherence within 1e-6 of the Welch bound;
    - ``rank`` and ``cond`` (σ_max / σ_min of A; inf when rank < r).

    Raises ValueError for a matrix that is not 2-d, empty, complex, not finite or all zeros.
    """
    A = as_frame(A)
    r, n = A.shape
    c = float((A * A).sum()) / r
    tight = float(torch.linalg.matrix_norm(A @ A.T - c * torch.eye(r, dtype=A.dtype), ord=2)) / c
    norms = A.norm(dim=0)
    spread = float(norms.max() / norms.min()) - 1.0 if bool(norms.min() > 0) else math.inf
    sv = torch.linalg.svdvals(A)
    rank = int((sv > sv[0] * 1e-10).sum())
    mu, bounds = coherence(A), coherence_bounds(r, n)

    def ratio(bound: float) -> float:
        return mu / bound if bound > 0 else (1.0 if mu < 1e-9 else math.inf)

    return {
        "r": r,
        "n": n,
        "tightness_err": tight,
        "column_norm_spread": spread,
        "coherence": mu,
        "welch_bound": bounds["welch"],
        "orthoplex_bound": bounds["orthoplex"],
        "levenshtein_bound": bounds["levenshtein"],
        "coherence_bound": bounds["best"],
        "coherence_over_welch": ratio(bounds["welch"]),
        "coherence_over_bound": ratio(bounds["best"]),
        "is_etf": bool(tight < 1e-6 and spread < 1e-6 and abs(mu - bounds["welch"]) < 1e-6),
        "rank": rank,
        "cond": float(sv[0] / sv[-1]) if rank == r else math.inf,
    }


def subspace_projector(A: torch.Tensor) -> torch.Tensor:
    """P_A = Aᵀ (A Aᵀ)^† A (n x n): the orthogonal projector onto the row space of A, where LoRA's update
    B A lives. Computed from the SVD (robust for rank-deficient A such as the simplex reading)."""
    A = as_frame(A)
    _, sv, Vh = torch.linalg.svd(A, full_matrices=False)
    V = Vh[sv > sv[0] * 1e-10].T
    return V @ V.T
