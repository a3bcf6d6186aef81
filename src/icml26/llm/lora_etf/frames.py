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

Naive alternating projection (Tropp et al. 2005) on the n x n Gram, aimed at the Welch bound, costs an
eigendecomposition O(n³) per step and degenerates when the bound is infeasible (n > r(r+1)/2): it is kept only
as :func:`alternating_projection_gram` for the benchmark.

Ablations (not ETFs, never called so): :func:`simplex_rows`, reading (ii), the r rows form a regular simplex
(A Aᵀ = r/(r−1) (I − 11ᵀ/r), rank r − 1); :func:`orthonormal_rows`, reading (iii), a degenerate tight frame.

References
----------
- L. R. Welch, "Lower bounds on the maximum cross correlation of signals", IEEE Trans. IT, 1974.
- T. Strohmer, R. W. Heath, "Grassmannian frames with applications to coding and communication", ACHA, 2003.
- J. A. Tropp, I. S. Dhillon, R. W. Heath, T. Strohmer, "Designing structured tight frames via an alternating
  projection method", IEEE Trans. IT, 2005.
- J. J. Benedetto, M. Fickus, "Finite normalized tight frames", Adv. Comput. Math., 2003 (frame potential).
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Literal

import torch

__all__ = [
    "FrameKind",
    "alternating_projection_gram",
    "coherence",
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
def _check_shape(r: int, n: int, min_r: int = 1) -> None:
    if not (isinstance(r, int) and isinstance(n, int)):
        raise TypeError(f"r and n must be integers, got r={r!r}, n={n!r}")
    if r < min_r:
        raise ValueError(f"a frame of rank r={r} is degenerate here: need r >= {min_r}")
    if r > n:
        raise ValueError(f"no r x n frame with r={r} > n={n}: A Aᵀ would be singular (LoRA rank above in_features)")


def _generator(seed: int | None) -> torch.Generator:
    gen = torch.Generator()
    if seed is None:
        seed = int(torch.randint(0, 2**62, (1,)).item())  # follows torch.manual_seed, like PEFT's own inits
    gen.manual_seed(int(seed))
    return gen


def _gaussian(r: int, n: int, gen: torch.Generator) -> torch.Tensor:
    return torch.randn(r, n, generator=gen, dtype=torch.float64)


# ------------------------------------------------------------------------------------------------ bounds
def welch_bound(r: int, n: int) -> float:
    """Smallest possible coherence of n unit vectors in R^r: √((n − r) / (r (n − 1))) (0 when n ≤ r)."""
    if n <= r:
        return 0.0
    return math.sqrt((n - r) / (r * (n - 1)))


def gerzon_bound(r: int) -> int:
    """Largest n for which a real ETF of n vectors in R^r can exist: r (r + 1) / 2."""
    return r * (r + 1) // 2


def coherence(A: torch.Tensor) -> float:
    """max_{i≠j} |cos(a_i, a_j)| over the columns of A (zero columns are ignored)."""
    A = A.detach().double()
    norms = A.norm(dim=0)
    keep = norms > 1e-12 * max(float(norms.max()), 1e-300)
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
    _check_shape(r, n)
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
    r, n = A.shape
    A = A.double()
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
    _check_shape(r, n)
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
    if p < 4 or p & (p - 1):
        raise ValueError(f"p must be a power of two >= 4, got {p}")
    X = project_to_untf(A, tol=tol).float()
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
    _check_shape(r, n, min_r=2)
    U = orthonormal_rows(r, n, seed).T
    centring = torch.eye(r, dtype=torch.float64) - 1.0 / r
    return math.sqrt(r / (r - 1)) * centring @ U.T


def orthonormal_rows(r: int, n: int, seed: int | None = None) -> torch.Tensor:
    """Reading (iii), an ablation: r orthonormal rows (Haar-random), A Aᵀ = I; tight, columns not unit-norm."""
    _check_shape(r, n)
    Q, R = torch.linalg.qr(_gaussian(n, r, _generator(seed)))
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
      Unit columns, A Aᵀ = (n/r) I. Check :func:`frame_stats` for the achieved coherence vs the Welch bound.
    - ``"simplex"``: rows form a regular simplex (rank r − 1); ablation.
    - ``"orthogonal"``: orthonormal rows; ablation.
    """
    if kind == "untf":
        _check_shape(r, n, min_r=2)
        A = known_etf(r, n, seed)
        if A is None:
            A = untf(r, n, seed)
            if coherence_iters > 0:
                A = minimise_coherence(A, iters=coherence_iters, p=p)
    elif kind == "simplex":
        A = simplex_rows(r, n, seed)
    elif kind == "orthogonal":
        _check_shape(r, n, min_r=2)
        A = orthonormal_rows(r, n, seed)
    else:
        raise ValueError(f"kind must be one of {FRAME_KINDS}, got {kind!r}")
    return A.to(dtype)


# ------------------------------------------------------------------------------------------ diagnostics
def frame_stats(A: torch.Tensor) -> dict[str, Any]:
    """Frame properties of the columns of A (r x n), scale-free.

    - ``tightness_err``: ‖A Aᵀ − c I‖₂ / c with c = ‖A‖_F² / r (0 for a tight frame);
    - ``column_norm_spread``: max ‖a_j‖ / min ‖a_j‖ − 1 (0 for equal-norm columns);
    - ``coherence`` and ``welch_bound`` (coherence ≥ bound; equality iff an ETF), ``coherence_over_welch``;
    - ``is_etf``: tight, equal-norm and coherence within 1e-6 of the bound;
    - ``rank`` and ``cond`` (σ_max / σ_min of A; inf when rank < r).
    """
    A = A.detach().double()
    r, n = A.shape
    c = float((A * A).sum()) / r
    tight = float(torch.linalg.matrix_norm(A @ A.T - c * torch.eye(r, dtype=A.dtype), ord=2)) / max(c, 1e-300)
    norms = A.norm(dim=0)
    spread = float(norms.max() / norms.min().clamp_min(1e-300)) - 1.0
    sv = torch.linalg.svdvals(A)
    rank = int((sv > sv[0] * 1e-10).sum())
    mu, wb = coherence(A), welch_bound(r, n)
    return {
        "r": r,
        "n": n,
        "tightness_err": tight,
        "column_norm_spread": spread,
        "coherence": mu,
        "welch_bound": wb,
        "coherence_over_welch": mu / wb if wb > 0 else (1.0 if mu < 1e-9 else math.inf),
        "is_etf": bool(tight < 1e-6 and spread < 1e-6 and abs(mu - wb) < 1e-6),
        "rank": rank,
        "cond": float(sv[0] / sv[-1]) if rank == r else math.inf,
    }


def subspace_projector(A: torch.Tensor) -> torch.Tensor:
    """P_A = Aᵀ (A Aᵀ)^† A (n x n): the orthogonal projector onto the row space of A, where LoRA's update
    B A lives. Computed from the SVD (robust for rank-deficient A such as the simplex reading)."""
    A = A.detach().double()
    _, sv, Vh = torch.linalg.svd(A, full_matrices=False)
    V = Vh[sv > sv[0] * 1e-10].T
    return V @ V.T


# --------------------------------------------------------------------------------------- naive anchor
def alternating_projection_gram(r: int, n: int, iters: int = 50, seed: int | None = None) -> torch.Tensor:
    """Tropp et al. (2005)-style alternating projection on the n x n Gram, aimed at the Welch bound: clip the
    off-diagonal to |g| ≤ μ_W with a unit diagonal, then project to the nearest Gram of a UNTF (top r
    eigenvectors, eigenvalues n/r). O(n³) per step; kept as the benchmark's naive anchor."""
    _check_shape(r, n)
    mu = welch_bound(r, n)
    A = project_to_untf(_gaussian(r, n, _generator(seed)))
    G = A.T @ A
    for _ in range(iters):
        H = G.clamp(-mu, mu)
        H.fill_diagonal_(1.0)
        _, vecs = torch.linalg.eigh(H)
        V = vecs[:, -r:]
        G = (n / r) * (V @ V.T)
    return project_to_untf(_factor_gram(G, r))
