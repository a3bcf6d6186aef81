"""NCP: a learned truncated SVD of the conditional expectation operator, and its G-equivariant version.

The density ratio p(x, y) / (p(x) p(y)) is modelled as 1 + u(x)^T S v(y) with centred embeddings u, v: X, Y -> R^r
and a matrix S of spectral norm <= 1 (initialised at I). Training minimises the L2 contrastive loss

    L = -2 E_{p(x,y)}[k] + E_{p(x)p(y)}[k^2],    k(x, y) = u_c(x)^T S v_c(y),

(the product-of-marginals term over the batch's off-diagonal pairs, in the factorised form tr(A^T A B^T B)), plus
orth_reg (||C_u - I||^2 + ||C_v - I||^2) + centering_reg 2 (||E u||^2 + ||E v||^2). Running (EMA) means are kept
for evaluation, so a prediction never depends on the batch it sits in.

Inference: E[z(Y) | x] = E z + u_c(x)^T S Cov(v, z), with Cov(v, z) estimated on training data (the linear decoder).

The equivariant version (:class:`EquivariantNCP`) uses equivariant embeddings into a latent space carrying copies of
the regular representation, an equivariant S (Reynolds projection, so block-diagonal S_k (x) I_{d_k} over isotypic
components by Schur's lemma), means projected onto the invariant subspace, covariances averaged over the group, and
a decoder estimated on the orbit of the training targets (group-averaged).
"""

from __future__ import annotations

import torch
from torch import nn

from icml26.stats.equivariant_spectral.groups import GroupError, Representation
from icml26.stats.equivariant_spectral.layers import _Float64Constants, equivariant_mlp, hidden_representation, reynolds

__all__ = ["NCP", "EquivariantNCP"]


class NCP(nn.Module):
    """Neural conditional probability model (Kostic et al. 2024) with two embedding networks."""

    def __init__(
        self,
        embedding_x: nn.Module,
        embedding_y: nn.Module,
        rank: int,
        orth_reg: float = 0.1,
        centering_reg: float = 0.01,
        momentum: float = 0.995,
    ) -> None:
        super().__init__()
        if rank < 1:
            raise ValueError(f"rank must be a positive integer, got {rank}")
        if not 0.0 <= momentum < 1.0:
            raise ValueError(f"momentum must lie in [0, 1), got {momentum}")
        if orth_reg < 0 or centering_reg < 0:
            raise ValueError("orth_reg and centering_reg must be non-negative")
        self.embedding_x, self.embedding_y, self.rank = embedding_x, embedding_y, rank
        self.orth_reg, self.centering_reg, self.momentum = orth_reg, centering_reg, momentum
        self.S_raw = nn.Parameter(torch.eye(rank))
        self.register_buffer("mean_u", torch.zeros(rank))
        self.register_buffer("mean_v", torch.zeros(rank))
        self.register_buffer("ema_started", torch.zeros((), dtype=torch.bool))
        self.register_buffer("cov_vz", torch.zeros(rank, 0))
        self.register_buffer("mean_z", torch.zeros(0))

    # ----------------------------------------------------------------------------------------- structure hooks
    def _project_mean(self, m: torch.Tensor, which: str) -> torch.Tensor:
        return m

    def _symmetrise_cov(self, C: torch.Tensor) -> torch.Tensor:
        return C

    def operator(self) -> torch.Tensor:
        """S with its spectral norm clamped to <= 1 (a scalar rescaling, so it keeps any equivariance)."""
        norm = torch.linalg.matrix_norm(self.S_raw, ord=2)
        return self.S_raw / torch.clamp(norm, min=1.0)

    # ----------------------------------------------------------------------------------------------- training
    def loss(self, fx: torch.Tensor, hy: torch.Tensor) -> torch.Tensor:
        """The regularised L2 contrastive loss of a batch of embeddings u(x_i), v(y_i) (rows paired)."""
        n = fx.shape[0]
        if n < 2:
            raise ValueError("the NCP loss needs a batch of at least 2 pairs")
        mu, mv = self._project_mean(fx.mean(0), "x"), self._project_mean(hy.mean(0), "y")
        u, v = fx - mu, hy - mv
        if self.training:
            self._update_ema(mu.detach(), mv.detach())
        A = u @ self.operator()
        joint = (A * v).sum(1)  # k(x_i, y_i)
        # sum over i != j of k(x_i, y_j)^2 = tr(A^T A  V^T V) - sum_i k(x_i, y_i)^2  (no n x n Gram matrix)
        cross = (torch.sum((A.T @ A) * (v.T @ v)) - torch.sum(joint**2)) / (n * (n - 1))
        contrastive = -2.0 * joint.mean() + cross
        eye = torch.eye(self.rank, dtype=fx.dtype, device=fx.device)
        Cu, Cv = self._symmetrise_cov(u.T @ u / n), self._symmetrise_cov(v.T @ v / n)
        orth = torch.sum((Cu - eye) ** 2) + torch.sum((Cv - eye) ** 2)
        centring = 2.0 * (torch.sum(mu**2) + torch.sum(mv**2))
        return contrastive + self.orth_reg * orth + self.centering_reg * centring

    @torch.no_grad()
    def _update_ema(self, mu: torch.Tensor, mv: torch.Tensor) -> None:
        if not bool(self.ema_started):
            self.mean_u.copy_(mu)
            self.mean_v.copy_(mv)
            self.ema_started.fill_(True)
        else:
            self.mean_u.mul_(self.momentum).add_((1 - self.momentum) * mu)
            self.mean_v.mul_(self.momentum).add_((1 - self.momentum) * mv)

    def training_loss(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.loss(self.embedding_x(x), self.embedding_y(y))

    # ---------------------------------------------------------------------------------------------- inference
    def u(self, x: torch.Tensor) -> torch.Tensor:
        """Centred x-embedding with the running (EMA) mean."""
        return self.embedding_x(x) - self._project_mean(self.mean_u, "x")

    def v(self, y: torch.Tensor) -> torch.Tensor:
        return self.embedding_y(y) - self._project_mean(self.mean_v, "y")

    def _decoder(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.mean_z, self.cov_vz

    def y_orbit(self, y: torch.Tensor) -> torch.Tensor:
        """The targets a decoder is estimated on: y itself here; its group orbit for the equivariant model."""
        return y

    @torch.no_grad()
    def fit_linear_decoder(self, y: torch.Tensor, z: torch.Tensor, y_first: bool = False) -> NCP:
        """Estimate E z and Cov(v(Y), z(Y)) on training targets y [n, dy] with observables z [n, k].

        ``y_first=True`` declares that z's first dy columns are y itself (the regression): the equivariant model
        then projects that block onto the equivariant maps at evaluation."""
        if z.ndim == 1:
            z = z[:, None]
        if z.shape[0] != y.shape[0]:
            raise ValueError(f"y and z must have the same number of rows, got {y.shape[0]} and {z.shape[0]}")
        v = self.v(y)
        self.mean_z = z.mean(0)
        self.cov_vz = v.T @ (z - self.mean_z) / len(z)
        self.y_columns = y.shape[1] if y_first else 0
        return self

    @torch.no_grad()
    def conditional_expectation(self, x: torch.Tensor) -> torch.Tensor:
        """E[z(Y) | x] for the observables of the last :meth:`fit_linear_decoder` call: [n, k]."""
        if self.cov_vz.shape[1] == 0:
            raise RuntimeError("call fit_linear_decoder(y, z) before conditional_expectation")
        mean_z, cov_vz = self._decoder()
        return mean_z + self.u(x) @ self.operator() @ cov_vz


class EquivariantNCP(NCP):
    """eNCP: NCP with G-equivariant embeddings, an equivariant S and group-averaged statistics and decoder.

    The latent space carries ``rank / |G|`` copies of the regular representation (``rank`` is rounded up to a
    multiple of |G|); ``rep_x`` and ``rep_y`` are the (orthogonal) actions on the inputs and targets.
    """

    def __init__(
        self,
        rep_x: Representation,
        rep_y: Representation,
        rank: int = 32,
        width: int = 64,
        depth: int = 2,
        **kwargs: float,
    ) -> None:
        if rep_x.group is not rep_y.group:
            raise GroupError("rep_x and rep_y must be representations of the same group")
        latent = hidden_representation(rep_x, rank)
        super().__init__(
            equivariant_mlp(rep_x, latent, width, depth),
            equivariant_mlp(rep_y, latent, width, depth),
            latent.dim,
            **kwargs,
        )
        self.rep_x, self.rep_y, self.latent = rep_x, rep_y, latent
        self.const = _Float64Constants(
            rho=latent.matrices,
            invariant=latent.invariant_projector(),
            rho_y=rep_y.matrices,
            invariant_y=rep_y.invariant_projector(),
        )

    def _project_mean(self, m: torch.Tensor, which: str) -> torch.Tensor:
        return self.const.get("invariant", m.dtype) @ m

    def _symmetrise_cov(self, C: torch.Tensor) -> torch.Tensor:
        rho = self.const.get("rho", C.dtype)
        return reynolds(C, rho, rho)

    def operator(self) -> torch.Tensor:
        rho = self.const.get("rho", self.S_raw.dtype)
        S = reynolds(self.S_raw, rho, rho)
        return S / torch.clamp(torch.linalg.matrix_norm(S, ord=2), min=1.0)

    def _decoder(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The decoder's y block (z = y, which transforms by rho_Y) is projected onto the equivariant maps, so
        the regression is exactly equivariant whatever the rounding of the orbit averages; other columns (CDF
        indicators) are left as estimated on the orbit."""
        dt = self.cov_vz.dtype
        rho, rho_y = self.const.get("rho", dt), self.const.get("rho_y", dt)
        k = getattr(self, "y_columns", 0)
        if k == 0:
            return self.mean_z, self.cov_vz
        cov, mean = self.cov_vz.clone(), self.mean_z.clone()
        cov[:, :k] = reynolds(cov[:, :k], rho, rho_y)
        mean[:k] = self.const.get("invariant_y", dt) @ mean[:k]
        return mean, cov

    def y_orbit(self, y: torch.Tensor) -> torch.Tensor:
        """[|G| n, dy]: every training target moved by every group element (the law of Y is G-invariant)."""
        return torch.einsum("gij,nj->gni", self.const.get("rho_y", y.dtype), y).reshape(-1, y.shape[1])
