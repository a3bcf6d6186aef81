"""What LoRA's A does to the gradient, measured; and the exact-dynamics toy (matrix regression through W0 + s B A).

**The first update.** With W = W0 + s B A and B = 0, ∇_B f = s G Aᵀ and ∇_A f = s Bᵀ G = 0 (G = ∇f(W)), so one
step of size η moves W by ΔW = s B' A = −η s² G AᵀA: the gradient is seen through AᵀA. At any later time
ΔW = s B_t A_t, whose rows lie in the row space of A_t: the update lives in the range of the projector
P_A = Aᵀ (A Aᵀ)^† A (:func:`icml26.llm.lora_etf.subspace_projector`).

**Energy preserved**, two precise readings, both in [0, 1]:

- :func:`projector_energy` ‖G P_A‖_F² / ‖G‖_F²: how much of G lies in the row space. For an isotropic random G
  its mean is rank(A)/n for *every* A of that rank: ETF or Gaussian, no difference (the simplex loses a rank);
- :func:`update_alignment` cos²(G, G AᵀA) = ⟨G, G AᵀA⟩² / (‖G‖² ‖G AᵀA‖²): how well the first LoRA update
  keeps the gradient's descent direction. If AᵀA = c P_A (A Aᵀ ∝ I: a tight frame) it equals the projector
  energy, its maximum for the row space; otherwise AᵀA distorts G (Cauchy-Schwarz over the eigenvalues of A Aᵀ:
  for isotropic G it is ≈ (tr AAᵀ)² / (n tr (AAᵀ)²) ≤ r/n, equality iff all eigenvalues are equal). This is
  the sense in which "AᵀA preserves the maximum information" for a tight A, ETF or not.
- :func:`worst_coordinate_energy` min_j ‖P_A e_j‖² · n / r: the share kept of the worst-served input coordinate
  (1 iff all columns of A Aᵀ-whitened A have equal norm, as in a UNTF; a Haar-orthonormal A is below 1).

**The toy** (:func:`train_lora_regression`): y = W* x, x ~ N(0, I_n), W* = W0 + ΔW* with ΔW* = U Vᵀ of rank k;
loss f(W) = ½ mean_x ‖(W − W*) x‖² on a fixed sample; train (B, A) from B = 0 with full-batch SGD or Adam.
Two targets (:func:`lora_regression_problem`): ``"isotropic"`` (V Haar-random: the problem is invariant under
rotations of the input space, so under SGD *every* tight A of a given norm has the same loss distribution, any
rotation of one tight A being another) and ``"coordinate"`` (V = k standard basis vectors: the target uses a few
input features, which breaks that symmetry; how evenly A serves the coordinates, its column norms and angles,
can matter there, and under Adam, whose steps are coordinate-wise, for either target).
``auc`` is the area under the relative loss curve over the budget, mean_t loss_t / loss_0 for t = 0..steps: it
ranks inits by speed even where all of them converge within the budget.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch

TARGETS: tuple[str, ...] = ("isotropic", "coordinate")

__all__ = [
    "TARGETS",
    "lora_regression_problem",
    "projector_energy",
    "row_space_residual",
    "train_lora_regression",
    "train_lora_regressions",
    "update_alignment",
    "worst_coordinate_energy",
]


def _gradient_and_frame(G: Any, A: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """(G, A) as float64 tensors, or one clear ValueError (shapes m x n and r x n, finite, non-zero)."""
    from icml26.llm.lora_etf.frames import as_frame

    G, A = as_frame(G, "G"), as_frame(A, "A")
    if G.shape[1] != A.shape[1]:
        raise ValueError(f"G (m x n) and A (r x n) need the same n, got G {tuple(G.shape)} and A {tuple(A.shape)}")
    return G, A


def projector_energy(G: torch.Tensor, A: torch.Tensor) -> float:
    """‖G P_A‖_F² / ‖G‖_F² (G is m x n, A is r x n)."""
    from icml26.llm.lora_etf.frames import subspace_projector

    G, A = _gradient_and_frame(G, A)
    return float((G @ subspace_projector(A)).square().sum() / G.square().sum())


def update_alignment(G: torch.Tensor, A: torch.Tensor) -> float:
    """cos²(G, G AᵀA): the share of the gradient's energy along the first LoRA update direction."""
    G, A = _gradient_and_frame(G, A)
    U = (G @ A.T) @ A
    norm = float(U.square().sum())
    if norm == 0.0:
        return 0.0  # G is orthogonal to the row space of A: the first update is zero
    return float((G * U).sum().square() / (G.square().sum() * norm))


def worst_coordinate_energy(A: torch.Tensor) -> float:
    """min_j ‖P_A e_j‖² · n / r: the worst input coordinate's kept share, relative to the average r/n."""
    from icml26.llm.lora_etf.frames import as_frame, subspace_projector

    A = as_frame(A)
    P = subspace_projector(A)
    r, n = A.shape
    return float(torch.diagonal(P).min() * n / r)


def row_space_residual(delta_w: torch.Tensor, A: torch.Tensor) -> float:
    """‖ΔW (I − P_A)‖_F / ‖ΔW‖_F: how much of an update leaves the row space of A (0 for ΔW = B A or ΔW = 0)."""
    from icml26.llm.lora_etf.frames import as_frame, subspace_projector

    A = as_frame(A)
    delta_w = torch.as_tensor(delta_w).double()
    if delta_w.ndim != 2 or delta_w.shape[1] != A.shape[1]:
        raise ValueError(f"delta_w must be m x {A.shape[1]} (A's n), got shape {tuple(delta_w.shape)}")
    if not bool(delta_w.any()):
        return 0.0
    outside = delta_w - delta_w @ subspace_projector(A)
    return float(outside.norm() / delta_w.norm())


def lora_regression_problem(
    m: int, n: int, k: int, samples: int, gen: torch.Generator, target: str = "isotropic"
) -> dict[str, torch.Tensor]:
    """W0 (N(0, 1/n) entries), a rank-k target shift ΔW* = U Vᵀ (orthonormal U, V: k unit singular values; V
    Haar-random for ``target="isotropic"``, k distinct standard basis vectors for ``"coordinate"``) and inputs X
    (samples x n, N(0, 1)); float64. Every init of a cell trains on this same problem."""
    if target not in TARGETS:
        raise ValueError(f"target must be one of {TARGETS}, got {target!r}")
    if not (1 <= k <= min(m, n)) or samples < 1:
        raise ValueError(f"need 1 <= k <= min(m, n) and samples >= 1, got m={m}, n={n}, k={k}, samples={samples}")
    w0 = torch.randn(m, n, generator=gen, dtype=torch.float64) / math.sqrt(n)
    U = torch.linalg.qr(torch.randn(m, k, generator=gen, dtype=torch.float64))[0]
    if target == "isotropic":
        V = torch.linalg.qr(torch.randn(n, k, generator=gen, dtype=torch.float64))[0]
    else:
        V = torch.eye(n, dtype=torch.float64)[:, torch.randperm(n, generator=gen)[:k]]
    X = torch.randn(samples, n, generator=gen, dtype=torch.float64)
    return {"w0": w0, "w_star": w0 + U @ V.T, "x": X}


ADAM_BETAS, ADAM_EPS = (0.9, 0.999), 1e-8  # torch.optim.Adam's defaults


def train_lora_regressions(
    problem: Mapping[str, torch.Tensor],
    a_inits: torch.Tensor,
    optimiser: str = "sgd",
    lrs: Any = 0.1,
    steps: int = 100,
    scaling: float = 2.0,
) -> dict[str, torch.Tensor]:
    """K independent runs at once: train W0 + s B_k A_k (B_k = 0, A_k = ``a_inits[k]``) on the same problem,
    full batch, float64, each at its own rate ``lrs[k]`` (a number applies to all).

    The loss is ½ mean_x ‖D x‖² = ½ tr(D Σ Dᵀ) with D = W − W*, Σ = XᵀX / N, so the gradients are exact and
    closed-form: ∇_W = D Σ, ∇_B = s ∇_W Aᵀ, ∇_A = s Bᵀ ∇_W. SGD is p ← p − η g; Adam is torch.optim.Adam's rule
    (β = 0.9, 0.999, ε = 1e-8, bias-corrected), written out so that the K runs are batched (tested equal to
    torch.optim on autograd). Returns ``loss`` (K x (steps + 1)), the final ``a`` (K x r x n) and ``b``
    (K x m x r). A run that diverges (a non-finite loss) is a RuntimeError naming the rate.
    """
    w0, w_star, X = problem["w0"], problem["w_star"], problem["x"]
    m, n = w0.shape
    if a_inits.ndim != 3 or a_inits.shape[2] != n:
        raise ValueError(f"a_inits must be K x r x {n} (the problem's input size), got {tuple(a_inits.shape)}")
    if optimiser not in ("sgd", "adam"):
        raise ValueError(f"optimiser must be 'sgd' or 'adam', got {optimiser!r}")
    K, r = a_inits.shape[:2]
    lr = torch.as_tensor(lrs, dtype=torch.float64).expand(K).clone()
    if not (isinstance(steps, int) and steps >= 0) or not bool(torch.isfinite(lr).all() and (lr > 0).all()):
        raise ValueError(f"lrs must be positive numbers and steps an integer >= 0, got lrs={lrs!r}, steps={steps!r}")
    lr = lr[:, None, None]
    sigma = X.T @ X / X.shape[0]
    offset = w0 - w_star
    A = a_inits.detach().double().clone()
    B = torch.zeros(K, m, r, dtype=torch.float64)
    moments = [torch.zeros_like(A), torch.zeros_like(B), torch.zeros_like(A), torch.zeros_like(B)]
    losses = torch.empty(K, steps + 1, dtype=torch.float64)
    for t in range(steps + 1):
        D = offset + scaling * B @ A
        grad_w = D @ sigma
        losses[:, t] = 0.5 * (D * grad_w).sum((1, 2))
        if t == steps:
            break
        grads = (scaling * B.transpose(1, 2) @ grad_w, scaling * grad_w @ A.transpose(1, 2))  # (∇_A, ∇_B)
        if optimiser == "sgd":
            A, B = A - lr * grads[0], B - lr * grads[1]
            continue
        (b1, b2), step = ADAM_BETAS, t + 1
        new = []
        for i, (p, g) in enumerate(zip((A, B), grads, strict=True)):
            moments[i].mul_(b1).add_(g, alpha=1 - b1)
            moments[i + 2].mul_(b2).addcmul_(g, g, value=1 - b2)
            denom = (moments[i + 2] / (1 - b2**step)).sqrt_().add_(ADAM_EPS)
            new.append(p - lr * (moments[i] / (1 - b1**step)) / denom)
        A, B = new
    bad = ~torch.isfinite(losses).all(1)
    if bool(bad.any()):
        k = int(bad.nonzero()[0])
        raise RuntimeError(f"{optimiser} at lr={float(lr[k]):g} diverged (run {k}: a non-finite loss)")
    return {"loss": losses, "a": A, "b": B}


def train_lora_regression(
    problem: Mapping[str, torch.Tensor],
    a_init: torch.Tensor,
    optimiser: str = "sgd",
    lr: float = 0.1,
    steps: int = 100,
    scaling: float = 2.0,
) -> dict[str, Any]:
    """Train W0 + s B A (B = 0, A = ``a_init``) on ½ mean ‖(W − W*) x‖²; full batch, float64 (one run of
    :func:`train_lora_regressions`).

    Returns ``loss`` (the curve, steps + 1 values), ``rel_loss`` (loss / initial loss, the same for every init
    since B = 0), ``auc`` (mean of ``rel_loss``: the area under it over the budget), the final A and ΔW, and
    ``row_space_residual`` of ΔW against the final A (0 up to rounding).
    """
    a_init = torch.as_tensor(a_init)
    if a_init.ndim != 2:
        raise ValueError(f"a_init must be an r x n matrix, got shape {tuple(a_init.shape)}")
    out = train_lora_regressions(problem, a_init[None], optimiser, lr, steps, scaling)
    losses = out["loss"][0].tolist()
    rel_loss = [v / losses[0] for v in losses]
    A, delta_w = out["a"][0], scaling * out["b"][0] @ out["a"][0]
    return {
        "loss": losses,
        "rel_loss": rel_loss,
        "auc": sum(rel_loss) / len(rel_loss),
        "a": A,
        "delta_w": delta_w,
        "row_space_residual": row_space_residual(delta_w, A),
    }
