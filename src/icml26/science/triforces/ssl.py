"""Self-supervised pretraining without labels: denoising (gradient of a scalar), masked-element reconstruction and
LeJEPA (a two-view prediction term plus SIGReg, the Epps-Pulley Gaussianity test over random 1-D projections)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from icml26.science.triforces.graph import MAX_Z, AtomsBatch, Structure
from icml26.science.triforces.model import TriForces
from icml26.science.triforces.streams import MASK_TOKEN, SSP, scatter_sum


def sigreg(
    z: torch.Tensor, n_projections: int = 1024, n_points: int = 17, t_max: float = 3.0, generator=None
) -> torch.Tensor:
    """SIGReg: mean over random unit directions a of the Epps-Pulley statistic of the projections z a.

    EP = B * integral_{-t_max}^{t_max} |phi_hat(t) - exp(-t^2 / 2)|^2 exp(-t^2 / 2) dt, with phi_hat the empirical
    characteristic function of the B projected samples (trapezoid rule on ``n_points`` knots of [0, t_max], doubled
    by symmetry). It is small when every 1-D projection looks standard normal and large for collapsed embeddings.
    """
    if z.dim() != 2 or len(z) < 2:
        raise ValueError(f"sigreg needs a (batch >= 2, dim) tensor, got shape {tuple(z.shape)}")
    a = torch.randn(z.shape[1], n_projections, generator=generator, dtype=z.dtype)
    proj = z @ (a / a.norm(dim=0, keepdim=True))  # (B, K)
    t = torch.linspace(0.0, t_max, n_points, dtype=z.dtype)
    arg = proj[:, :, None] * t  # (B, K, T)
    gauss = torch.exp(-0.5 * t * t)
    err = (torch.cos(arg).mean(0) - gauss) ** 2 + torch.sin(arg).mean(0) ** 2  # (K, T)
    stat = 2.0 * torch.trapezoid(err * gauss, t, dim=-1) * len(z)
    return stat.mean()


class TriForcesPretrainer:
    """Label-free pretraining of a :class:`TriForces` encoder on two noised, masked views of each structure.

    Per view: per-atom noise sigma_i ~ U(noise), displacement eps_i = sigma_i * N(0, I); a fraction p ~ U(mask_prob)
    of the atoms gets the mask token in every stream (the structure stream never reads elements). Loss:
    w_denoise * MSE(-grad_r s(r~), eps / max(noise)) with s a scalar head summed over atoms (an invariant backbone
    predicts a vector only as a gradient) + w_element * CE(masked atoms' elements) + w_jepa * (0.25 ||g1 - g2||^2 +
    SIGReg(g1, g2)). Random rotations are not applied: every stream here is exactly rotation invariant.
    """

    def __init__(
        self,
        encoder: TriForces,
        noise: tuple[float, float] = (0.02, 0.1),
        mask_prob: tuple[float, float] = (0.1, 0.3),
        w_denoise: float = 10.0,
        w_element: float = 1.0,
        w_jepa: float = 0.1,
        n_projections: int = 1024,
    ) -> None:
        if not 0 <= noise[0] <= noise[1] or noise[1] <= 0:
            raise ValueError(f"noise must be (low, high) with 0 <= low <= high, high > 0; got {noise}")
        if not 0 <= mask_prob[0] <= mask_prob[1] < 1:
            raise ValueError(f"mask_prob must be (low, high) within [0, 1); got {mask_prob}")
        self.encoder, self.noise, self.mask_prob = encoder, noise, mask_prob
        self.w_denoise, self.w_element, self.w_jepa, self.n_projections = w_denoise, w_element, w_jepa, n_projections
        self.denoise_head = nn.Sequential(nn.Linear(encoder.dim, 64), SSP(), nn.Linear(64, 1))
        self.element_head = nn.Linear(encoder.dim, MAX_Z + 1)
        self.loss_curve_: list[dict[str, float]] = []

    def parameters(self) -> list[nn.Parameter]:
        return [*self.encoder.parameters(), *self.denoise_head.parameters(), *self.element_head.parameters()]

    def _view(
        self, structures: Sequence[Structure], rng: np.random.Generator
    ) -> tuple[AtomsBatch, torch.Tensor, torch.Tensor, torch.Tensor]:
        views, eps_all, masks = [], [], []
        for s in structures:
            sigma = rng.uniform(*self.noise, size=(s.n_atoms, 1))
            eps = torch.as_tensor(sigma * rng.standard_normal((s.n_atoms, 3)))
            view = s.with_positions(s.pos + eps, self.encoder.cutoff)
            masks.append(torch.as_tensor(rng.random(s.n_atoms) < rng.uniform(*self.mask_prob)))
            views.append(view)
            eps_all.append(eps)
        batch = AtomsBatch.collate(views)
        mask = torch.cat(masks)
        return batch.replace(z=torch.where(mask, MASK_TOKEN, batch.z)), torch.cat(eps_all).float(), mask, batch.z

    def losses(self, structures: Sequence[Structure], rng: np.random.Generator) -> dict[str, torch.Tensor]:
        parts: dict[str, list[torch.Tensor]] = {"denoise": [], "element": [], "graphs": []}
        for _ in range(2):
            batch, eps, mask, z_true = self._view(structures, rng)
            pos = batch.pos.detach().requires_grad_(True)
            out = self.encoder(batch.replace(pos=pos))
            s = scatter_sum(self.denoise_head(out.node).squeeze(-1), batch.batch, batch.n_structures).sum()
            (grad,) = torch.autograd.grad(s, pos, create_graph=True)
            parts["denoise"].append(((-grad - eps / self.noise[1]) ** 2).mean())
            if mask.any():
                logits = self.element_head(out.node[mask])
                parts["element"].append(nn.functional.cross_entropy(logits, z_true[mask]))
            parts["graphs"].append(out.graph)
        g1, g2 = parts["graphs"]
        jepa = 0.25 * (g1 - g2).pow(2).sum(-1).mean()
        if len(g1) >= 2:
            jepa = jepa + 0.5 * (sigreg(g1, self.n_projections) + sigreg(g2, self.n_projections))
        element = torch.stack(parts["element"]).mean() if parts["element"] else torch.zeros(())
        return {"denoise": torch.stack(parts["denoise"]).mean(), "element": element, "jepa": jepa}

    def fit(
        self, structures: Sequence[Structure], steps: int = 200, batch_size: int = 16, lr: float = 2e-3, seed: int = 0
    ) -> TriForcesPretrainer:
        """Pretrain on unlabelled structures (labels, if any, are never read)."""
        if not structures:
            raise ValueError("pretraining needs at least one structure")
        rng = np.random.default_rng(seed)
        torch.manual_seed(seed)
        opt = torch.optim.Adam(self.parameters(), lr=lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(steps, 1))
        self.encoder.train()
        for _ in range(steps):
            idx = rng.choice(len(structures), size=min(batch_size, len(structures)), replace=False)
            parts = self.losses([structures[k] for k in idx], rng)
            loss = self.w_denoise * parts["denoise"] + self.w_element * parts["element"] + self.w_jepa * parts["jepa"]
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            self.loss_curve_.append({k: float(v.detach()) for k, v in parts.items()} | {"total": float(loss.detach())})
        self.encoder.eval()
        return self
