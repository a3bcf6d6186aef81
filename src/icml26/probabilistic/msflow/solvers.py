"""D-Flow, MS-Flow and PnP-Flow: inverse problems y = A x + noise with a flow-matching prior.

All three share the Euler discretisation of the prior's ODE on the grid t_i = i / N, the data term
F(x) = 1/2 ||A x - y||^2, the chi regulariser R(z) = 1/2 ||z||^2 - (d - 1) log ||z|| on the initial noise, and the
initialisation z_0 = sqrt(alpha) Phi_{1->0}(x_bp) + sqrt(1 - alpha) eps with x_bp = A^T y / ||A||^2 (PnP-Flow's
D-Flow configuration). Each returns a :class:`Reconstruction` that counts velocity evaluations (NFE).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import torch

from icml26.probabilistic.msflow.operators import as_operator
from icml26.probabilistic.msflow.prior import FlowPrior

__all__ = ["DFlow", "MSFlow", "PnPFlow", "Reconstruction", "chi_regulariser"]


def chi_regulariser(z: torch.Tensor) -> torch.Tensor:
    """R(z) = 1/2 ||z||^2 - (d - 1) log ||z|| per sample: the negative log-density of chi_d at ||z|| (minimum at
    ||z|| = sqrt(d - 1)). PnP-Flow's ``d_flow.py`` adds this with the opposite sign; this is the sign that keeps
    ||z|| near the typical set of N(0, I_d)."""
    flat = z.reshape(z.shape[0], -1)
    norm = flat.norm(dim=1)
    return 0.5 * norm.square() - (flat.shape[1] - 1) * torch.log(norm)


@dataclass
class Reconstruction:
    """``x``: the estimate on the prior's range, Phi_{0->1}(z_0) (the stitched trajectory for MS-Flow);
    ``x_data``: MS-Flow's data-consistent last state z_K (None for the others); ``nfe``: velocity evaluations;
    ``history``: per-iteration objective values (MS-Flow: data term, penalty; D-Flow: loss per outer step)."""

    x: torch.Tensor
    z0: torch.Tensor
    nfe: int
    x_data: torch.Tensor | None = None
    states: list[torch.Tensor] | None = None
    history: list[dict[str, float]] = field(default_factory=list)


class _Solver:
    def __init__(self, prior: FlowPrior, operator: Any, n_steps: int, lam: float, alpha: float):
        if not isinstance(prior, FlowPrior):
            raise TypeError(f"prior must be a FlowPrior (train_flow_prior), got {type(prior).__name__}")
        if n_steps < 1:
            raise ValueError(f"the number of ODE steps must be >= 1, got {n_steps}")
        if lam < 0 or not 0.0 <= alpha <= 1.0:
            raise ValueError(f"need lam >= 0 and alpha in [0, 1], got lam={lam}, alpha={alpha}")
        self.prior, self.op = prior, as_operator(operator, prior.image_shape)
        self.n_steps, self.lam, self.alpha = int(n_steps), float(lam), float(alpha)

    def _check_y(self, y: torch.Tensor) -> torch.Tensor:
        y = torch.as_tensor(y, dtype=torch.float32)
        probe = self.op.A(torch.zeros(1, *self.prior.image_shape))
        if y.ndim != probe.ndim or tuple(y.shape[1:]) != tuple(probe.shape[1:]) or y.shape[0] < 1:
            raise ValueError(
                f"measurements y have shape {tuple(y.shape)}; this operator produces [B, "
                f"{', '.join(map(str, probe.shape[1:]))}]"
            )
        if not torch.isfinite(y).all():
            raise ValueError("measurements y contain NaN or inf")
        return y

    def initial_noise(self, y: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
        """sqrt(alpha) Phi_{1->0}(A^T y / ||A||^2) + sqrt(1 - alpha) eps (PnP-Flow's D-Flow initialisation)."""
        eps = torch.randn((y.shape[0], *self.prior.image_shape), generator=generator)
        with torch.no_grad():
            back = self.prior.flow(self.op.A_adjoint(y) / self.op.norm_sq, 1.0, 0.0, self.n_steps)
        return math.sqrt(self.alpha) * back + math.sqrt(1.0 - self.alpha) * eps

    def data_loss(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return 0.5 * (self.op.A(x) - y).reshape(x.shape[0], -1).square().sum(1)


class DFlow(_Solver):
    """D-Flow (Ben-Hamu et al., 2024): min_z F(Phi_{0->1}(z)) + lam R(z), backpropagating through all N steps.

    L-BFGS with strong-Wolfe line search, ``outer`` calls of ``inner`` iterations (PnP-Flow's 20 x 20), lam = 0.01,
    alpha = 0.1. The B images of a batch are one joint problem (their objectives summed; our reading, for speed):
    each image's gradient is its own, the quasi-Newton curvature pairs are shared.
    """

    def __init__(
        self,
        prior: FlowPrior,
        operator: Any,
        n_steps: int = 6,
        lam: float = 0.01,
        alpha: float = 0.1,
        outer: int = 20,
        inner: int = 20,
    ):
        super().__init__(prior, operator, n_steps, lam, alpha)
        if outer < 1 or inner < 1:
            raise ValueError(f"outer and inner must be >= 1, got {outer}, {inner}")
        self.outer, self.inner = int(outer), int(inner)

    def objective(self, z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x = self.prior.flow(z, 0.0, 1.0, self.n_steps)
        return (self.data_loss(x, y) + 0.5 * self.lam * chi_regulariser(z)).sum()

    def gradient(self, z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """One gradient of the objective by backpropagation through the whole trajectory (memory ~ N)."""
        z = z.detach().requires_grad_(True)
        with torch.enable_grad():
            (g,) = torch.autograd.grad(self.objective(z, y), z)
        return g

    def solve(self, y: Any, generator: torch.Generator | None = None) -> Reconstruction:
        y = self._check_y(y)
        start = self.prior.nfe
        z = self.initial_noise(y, generator).requires_grad_(True)
        opt = torch.optim.LBFGS([z], lr=1.0, max_iter=self.inner, line_search_fn="strong_wolfe")

        def closure() -> torch.Tensor:
            opt.zero_grad()
            loss = self.objective(z, y)
            loss.backward()
            return loss

        history = []
        with torch.enable_grad():
            for _ in range(self.outer):
                history.append({"loss": float(opt.step(closure).detach())})
        with torch.no_grad():
            x = self.prior.flow(z.detach(), 0.0, 1.0, self.n_steps)
        return Reconstruction(x=x, z0=z.detach(), nfe=self.prior.nfe - start, history=history)


class MSFlow(_Solver):
    """MS-Flow: multiple shooting for inverse problems with a flow prior (trajectory stitching).

    The N = K m step trajectory is cut into K segments of m Euler steps; the shooting points z_0..z_K are the
    variables of

        J = 1/2 ||A z_K - y||^2 + lam/2 R(z_0) + rho/2 sum_k ||z_{k+1} - Phi_k(z_k)||^2.

    Each iteration (i) takes one Adam step on z_0..z_{K-1} along the exact gradient of J, computed one segment at a
    time with a vector-Jacobian product (``jacobian="vjp"``: activation memory ~ m, not N) or the paper's
    Jacobian-free approximation J_Phi ~ I (``jacobian="free"``), all segments from the same iterate (Jacobi; our
    reading); (ii) sets z_K by the closed-form data step argmin 1/2 ||A z - y||^2 + rho/2 ||z - Phi_{K-1}(z_{K-1})||^2;
    (iii) grows rho geometrically (``rho_growth`` per iteration, capped at ``rho_max``). ``nfe_budget``
    (overrides ``iters``) spends that many velocity evaluations (for comparisons at equal compute).
    """

    def __init__(
        self,
        prior: FlowPrior,
        operator: Any,
        n_shoot: int = 4,
        substeps: int = 2,
        rho: float = 0.1,
        rho_growth: float = 1.0,
        rho_max: float = 1e4,
        lam: float = 0.01,
        alpha: float = 0.1,
        jacobian: str = "vjp",
        iters: int = 200,
        nfe_budget: int | None = None,
        lr: float = 0.05,
        optimizer: str = "lbfgs",
        outer: int = 20,
        inner: int = 20,
    ):
        if n_shoot < 1 or substeps < 1:
            raise ValueError(f"n_shoot and substeps must be >= 1, got {n_shoot}, {substeps}")
        super().__init__(prior, operator, n_shoot * substeps, lam, alpha)
        if jacobian not in ("vjp", "free"):
            raise ValueError(
                f"jacobian must be 'vjp' (exact) or 'free' (J ~ I, the paper's approximation), got {jacobian!r}"
            )
        if rho <= 0 or rho_growth < 1 or rho_max < rho or lr <= 0:
            raise ValueError("need rho > 0, rho_growth >= 1, rho_max >= rho and lr > 0")
        if nfe_budget is not None and nfe_budget < 2 * n_shoot * substeps:
            raise ValueError(f"nfe_budget {nfe_budget} is below one iteration plus the output (2 N)")
        self.K, self.m = int(n_shoot), int(substeps)
        self.rho, self.rho_growth, self.rho_max = float(rho), float(rho_growth), float(rho_max)
        self.jacobian, self.lr = jacobian, float(lr)
        if optimizer not in ("lbfgs", "adam"):
            raise ValueError(f"optimizer must be 'lbfgs' or 'adam', got {optimizer!r}")
        self.optimizer, self.outer, self.inner = optimizer, int(outer), int(inner)
        self.iters, self.nfe_budget = int(iters), nfe_budget

    def segment(self, z: torch.Tensor, k: int) -> torch.Tensor:
        """Phi_k: m Euler steps from t_k = k m / N."""
        dt = 1.0 / self.n_steps
        return self.prior.flow(z, k * self.m * dt, (k + 1) * self.m * dt, self.m)

    def objective(self, states: list[torch.Tensor], y: torch.Tensor, rho: float | None = None) -> torch.Tensor:
        """J (summed over the batch) at shooting points [z_0, ..., z_K], through autograd's ordinary graph."""
        rho = self.rho if rho is None else rho
        penalty = sum(
            (states[k + 1] - self.segment(states[k], k)).reshape(y.shape[0], -1).square().sum(1) for k in range(self.K)
        )
        return (self.data_loss(states[-1], y) + 0.5 * self.lam * chi_regulariser(states[0]) + 0.5 * rho * penalty).sum()

    def gradient(
        self, states: list[torch.Tensor], y: torch.Tensor, rho: float | None = None, data_step: bool = False
    ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """Gradients of J with respect to z_0..z_K, one segment's graph at a time, and the segment outputs.

        ``data_step=True`` first replaces z_K (in ``states``) by the exact data step from the fresh Phi_{K-1}(z_{K-1})
        (z_K eliminated: its gradient is then zero and the others are the reduced objective's, by the envelope rule).
        """
        rho = self.rho if rho is None else rho
        outs, grads = [], []
        for k in range(self.K):
            zk = states[k].detach()
            with torch.enable_grad() if self.jacobian == "vjp" else torch.no_grad():
                zk = zk.requires_grad_(self.jacobian == "vjp")
                out = self.segment(zk, k)
                if data_step and k == self.K - 1:
                    states[-1] = self.op.prox(out.detach(), y, 1.0 / rho)
                residual = states[k + 1] - out.detach()
                if self.jacobian == "vjp":
                    (g,) = torch.autograd.grad(out, zk, grad_outputs=-rho * residual)
                else:
                    g = -rho * residual
            out = out.detach()
            if k == 0:
                with torch.enable_grad():
                    z0 = states[0].detach().requires_grad_(True)
                    (g_reg,) = torch.autograd.grad(0.5 * self.lam * chi_regulariser(z0).sum(), z0)
                g = g + g_reg
            else:
                g = g + rho * (states[k] - outs[k - 1])
            outs.append(out)
            grads.append(g)
        grads.append(rho * (states[-1] - outs[-1]) + self.op.A_adjoint(self.op.A(states[-1]) - y))
        return grads, outs

    def _loss(self, states: list[torch.Tensor], outs: list[torch.Tensor], y: torch.Tensor, rho: float) -> float:
        gap = sum(float((states[k + 1] - outs[k]).square().sum()) for k in range(self.K))
        reg = float(chi_regulariser(states[0]).sum())
        return float(self.data_loss(states[-1], y).sum()) + 0.5 * self.lam * reg + 0.5 * rho * gap

    def _start(self, y: torch.Tensor, generator: torch.Generator | None) -> list[torch.Tensor]:
        z0 = self.initial_noise(y, generator)
        with torch.no_grad():  # start on a consistent trajectory: every penalty is zero
            states = [z0]
            for k in range(self.K):
                states.append(self.segment(states[-1], k))
        states[-1] = self.op.prox(states[-1], y, 1.0 / self.rho)
        return states

    def solve(self, y: Any, generator: torch.Generator | None = None, return_all: bool = False) -> Reconstruction:
        y = self._check_y(y)
        start = self.prior.nfe
        states = self._start(y, generator)
        run = self._lbfgs if self.optimizer == "lbfgs" else self._adam
        states, history = run(states, y, start)
        with torch.no_grad():
            x = self.prior.flow(states[0], 0.0, 1.0, self.n_steps)  # re-stitch: the trajectory from z_0
        if not torch.isfinite(x).all():
            warnings.warn("MS-Flow diverged (non-finite states); lower lr or rho", RuntimeWarning, stacklevel=2)
        return Reconstruction(
            x=x,
            z0=states[0],
            nfe=self.prior.nfe - start,
            x_data=states[-1],
            states=states if return_all else None,
            history=history,
        )

    def _budget_left(self, start: int) -> int:
        assert self.nfe_budget is not None
        return self.nfe_budget - self.n_steps - self.m - (self.prior.nfe - start)  # the output's N + m kept back

    def _adam(self, states: list[torch.Tensor], y: torch.Tensor, start: int) -> tuple[list[torch.Tensor], list]:
        m1 = [torch.zeros_like(s) for s in states[:-1]]
        m2 = [torch.zeros_like(s) for s in states[:-1]]
        b1, b2, eps = 0.9, 0.999, 1e-8
        rho, history = self.rho, []
        for it in range(1, self.iters + 1):
            if self.nfe_budget is not None and self._budget_left(start) < self.n_steps:
                break
            grads, outs = self.gradient(states, y, rho)
            for k in range(self.K):  # Adam on z_0..z_{K-1} (Jacobi: every gradient from the same iterate)
                m1[k].mul_(b1).add_(grads[k], alpha=1 - b1)
                m2[k].mul_(b2).addcmul_(grads[k], grads[k], value=1 - b2)
                step = self.lr * math.sqrt(1 - b2**it) / (1 - b1**it)
                states[k] = states[k] - step * m1[k] / (m2[k].sqrt() + eps)
            states[-1] = self.op.prox(outs[-1], y, 1.0 / rho)  # data step on z_K
            if it % 25 == 0:
                history.append({"iter": it, "rho": rho, "loss": self._loss(states, outs, y, rho)})
            rho = min(rho * self.rho_growth, self.rho_max)
        return states, history

    def _lbfgs(self, states: list[torch.Tensor], y: torch.Tensor, start: int) -> tuple[list[torch.Tensor], list]:
        """L-BFGS (strong Wolfe) on z_0..z_{K-1}, z_K eliminated by the exact data step; rho grows per outer call."""
        params = [s.clone().requires_grad_(True) for s in states[:-1]]
        rho, history = self.rho, []

        def closure() -> torch.Tensor:
            current = [p.detach() for p in params] + [states[-1]]
            grads, outs = self.gradient(current, y, rho, data_step=True)  # z_K: the data step, then every gradient
            for p, g in zip(params, grads[:-1], strict=True):
                p.grad = g
            return torch.tensor(self._loss(current, outs, y, rho))

        opt, opt_rho = None, None
        for _ in range(self.outer):
            left = self._budget_left(start) // self.n_steps if self.nfe_budget is not None else self.inner
            if left < 1:
                break
            if opt is None or opt_rho != rho:  # a new objective: fresh curvature pairs (as D-Flow, one per rho)
                opt, opt_rho = (
                    torch.optim.LBFGS(params, lr=1.0, max_iter=self.inner, line_search_fn="strong_wolfe"),
                    rho,
                )
            opt.param_groups[0]["max_eval"] = min(left, int(1.25 * self.inner))
            loss = opt.step(closure)
            history.append({"rho": rho, "loss": float(loss)})
            rho = min(rho * self.rho_growth, self.rho_max)
        rho = opt_rho if opt_rho is not None else rho
        with torch.no_grad():  # z_K from the accepted z_{K-1} (the last closure may have been a line-search trial)
            z_last = self.op.prox(self.segment(params[-1].detach(), self.K - 1), y, 1.0 / rho)
        return [p.detach() for p in params] + [z_last], history


class PnPFlow(_Solver):
    """PnP-Flow (Martin et al., ICLR 2025), a plug-and-play baseline: for t on a grid, a gradient step on F with
    step gamma / ||A||^2, interpolation to time t with fresh noise, then the flow's denoiser D_t(x) = x + (1 - t) v.
    """

    def __init__(self, prior: FlowPrior, operator: Any, n_steps: int = 100, gamma: float = 1.0):
        super().__init__(prior, operator, n_steps, 0.0, 0.0)
        self.gamma = float(gamma)

    @torch.no_grad()
    def solve(self, y: Any, generator: torch.Generator | None = None) -> Reconstruction:
        y = self._check_y(y)
        start = self.prior.nfe
        x = self.op.A_adjoint(y) / self.op.norm_sq
        for i in range(self.n_steps):
            t = i / self.n_steps
            z = x - (self.gamma / self.op.norm_sq) * self.op.A_adjoint(self.op.A(x) - y)
            xt = t * z + (1 - t) * torch.randn(z.shape, generator=generator)
            x = xt + (1 - t) * self.prior(xt, t)
        return Reconstruction(x=x, z0=x, nfe=self.prior.nfe - start)
