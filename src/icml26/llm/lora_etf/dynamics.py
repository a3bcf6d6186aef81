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

**The toy** (:func:`train_lora_regression`): y = W* x, x ~ N(0, I_n), W* = W0 + ΔW* with ΔW* of rank k;
loss f(W) = ½ mean_x ‖(W − W*) x‖² on a fixed sample; train (B, A) from B = 0 with full-batch SGD or Adam.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch

__all__ = [
    "lora_regression_problem",
    "projector_energy",
    "row_space_residual",
    "train_lora_regression",
    "update_alignment",
    "worst_coordinate_energy",
]


def projector_energy(G: torch.Tensor, A: torch.Tensor) -> float:
    """‖G P_A‖_F² / ‖G‖_F² (G is m x n, A is r x n)."""
    from icml26.llm.lora_etf.frames import subspace_projector

    G = G.double()
    return float((G @ subspace_projector(A)).square().sum() / G.square().sum())


def update_alignment(G: torch.Tensor, A: torch.Tensor) -> float:
    """cos²(G, G AᵀA): the share of the gradient's energy along the first LoRA update direction."""
    G, A = G.double(), A.double()
    U = (G @ A.T) @ A
    return float((G * U).sum().square() / (G.square().sum() * U.square().sum()))


def worst_coordinate_energy(A: torch.Tensor) -> float:
    """min_j ‖P_A e_j‖² · n / r: the worst input coordinate's kept share, relative to the average r/n."""
    from icml26.llm.lora_etf.frames import subspace_projector

    P = subspace_projector(A)
    r, n = A.shape
    return float(torch.diagonal(P).min() * n / r)


def row_space_residual(delta_w: torch.Tensor, A: torch.Tensor) -> float:
    """‖ΔW (I − P_A)‖_F / ‖ΔW‖_F: how much of an update leaves the row space of A (0 for ΔW = B A)."""
    from icml26.llm.lora_etf.frames import subspace_projector

    delta_w = delta_w.double()
    outside = delta_w - delta_w @ subspace_projector(A)
    return float(outside.norm() / delta_w.norm().clamp_min(1e-300))


def lora_regression_problem(m: int, n: int, k: int, samples: int, gen: torch.Generator) -> dict[str, torch.Tensor]:
    """W0 (N(0, 1/n) entries), a rank-k target shift ΔW* = U Vᵀ (orthonormal U, V: k unit singular values), and
    inputs X (samples x n, N(0, 1)); float64. Every init of a cell trains on this same problem."""
    w0 = torch.randn(m, n, generator=gen, dtype=torch.float64) / math.sqrt(n)
    U = torch.linalg.qr(torch.randn(m, k, generator=gen, dtype=torch.float64))[0]
    V = torch.linalg.qr(torch.randn(n, k, generator=gen, dtype=torch.float64))[0]
    X = torch.randn(samples, n, generator=gen, dtype=torch.float64)
    return {"w0": w0, "w_star": w0 + U @ V.T, "x": X}


def train_lora_regression(
    problem: Mapping[str, torch.Tensor],
    a_init: torch.Tensor,
    optimiser: str = "sgd",
    lr: float = 0.1,
    steps: int = 100,
    scaling: float = 2.0,
) -> dict[str, Any]:
    """Train W0 + s B A (B = 0, A = ``a_init``) on ½ mean ‖(W − W*) x‖²; full batch, float64.

    Returns ``loss`` (the curve, steps + 1 values), ``rel_loss`` (loss / initial loss, the same for every init
    since B = 0), the final A and ΔW, and ``row_space_residual`` of ΔW against the final A (0 up to rounding).
    """
    w0, w_star, X = problem["w0"], problem["w_star"], problem["x"]
    m, r = w0.shape[0], a_init.shape[0]
    A = a_init.detach().double().clone().requires_grad_(True)
    B = torch.zeros(m, r, dtype=torch.float64, requires_grad=True)
    if optimiser == "sgd":
        opt: torch.optim.Optimizer = torch.optim.SGD([A, B], lr=lr)
    elif optimiser == "adam":
        opt = torch.optim.Adam([A, B], lr=lr)
    else:
        raise ValueError(f"optimiser must be 'sgd' or 'adam', got {optimiser!r}")
    target = X @ w_star.T
    losses = []
    for _ in range(steps + 1):
        opt.zero_grad(set_to_none=True)
        pred = X @ (w0 + scaling * B @ A).T
        loss = 0.5 * (pred - target).square().sum(1).mean()
        losses.append(float(loss.detach()))
        if len(losses) <= steps:
            loss.backward()
            opt.step()
    delta_w = (scaling * B @ A).detach()
    return {
        "loss": losses,
        "rel_loss": [v / losses[0] for v in losses],
        "a": A.detach(),
        "delta_w": delta_w,
        "row_space_residual": row_space_residual(delta_w, A.detach()) if delta_w.norm() > 0 else 0.0,
    }
