"""MS-Flow against D-Flow: time and activation memory of one gradient, and of one reconstruction at equal NFE.

Anchor: D-Flow as a user would build it from the field's ODE library, torchdiffeq (``odeint`` with the fixed-grid
Euler solver, backpropagated through the whole trajectory; D-Flow's own code path), and torchdiffeq's adjoint
(``odeint_adjoint``: memory independent of N, paid for by a backward ODE solve). Our D-Flow (plain autograd through
our Euler loop) is a secondary row. Workload: an MLP flow prior (hidden 128, trained here, cached) on 8x8 digits,
2x super-resolution, B images per batch, one torch thread.

Rows (ratio = anchor / ours; > 1 when ours is better):
1. time of one gradient of the objective, N steps: MS-Flow (K = N / 2 segment VJPs) vs torchdiffeq D-Flow;
2. peak activation bytes of that gradient (saved-tensor hooks, weights excluded) vs torchdiffeq D-Flow;
3. the same bytes and time vs torchdiffeq's adjoint (its memory does not grow with N either; it pays with a
   backward ODE solve, and its gradient of the discrete trajectory is approximate);
4. time of a whole reconstruction at equal NFE (L-BFGS, PnP-Flow's D-Flow settings) vs D-Flow on torchdiffeq;
5. (secondary) time of one gradient vs our own D-Flow in plain autograd.

torchdiffeq is a benchmark-only dependency (``pip install torchdiffeq``); without it the rows compare with our own
D-Flow only.

    .venv/bin/python benchmarks/bench_msflow.py [tiny|quick|full]
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

import torch

from icml26._core import single_torch_thread
from icml26._core.bench import BenchRow, interleaved_medians, print_rows
from icml26.probabilistic.msflow import AvgPoolSR, DFlow, MSFlow, digits, saved_tensor_bytes, train_flow_prior
from icml26.probabilistic.msflow.solvers import chi_regulariser

SIZES = {  # N steps, images, prior training steps, L-BFGS outer x inner, repeats
    "tiny": (8, 4, 200, (2, 5), 1),
    "quick": (32, 20, 1000, (5, 10), 3),
    "full": (64, 20, 3000, (20, 20), 3),
}


class TorchdiffeqDFlow:
    """D-Flow on torchdiffeq: the trajectory by ``odeint`` (fixed-grid Euler, step 1/N) or ``odeint_adjoint``."""

    def __init__(self, prior: Any, op: Any, n_steps: int, adjoint: bool, lam: float = 0.01):
        import torchdiffeq

        self.prior, self.op, self.n, self.lam = prior, op, n_steps, lam
        self.solve_ode = torchdiffeq.odeint_adjoint if adjoint else torchdiffeq.odeint
        self.adjoint = adjoint

    def field(self, t: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return self.prior(x, t)

    def end(self, z: torch.Tensor) -> torch.Tensor:
        kw: dict[str, Any] = {"method": "euler", "options": {"step_size": 1.0 / self.n}}
        if self.adjoint:
            kw |= {"adjoint_params": (), "adjoint_method": "euler", "adjoint_options": {"step_size": 1.0 / self.n}}
        return self.solve_ode(self.field, z, torch.tensor([0.0, 1.0]), **kw)[-1]

    def objective(self, z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        r = self.op.A(self.end(z)) - y
        return (0.5 * r.reshape(len(z), -1).square().sum(1) + 0.5 * self.lam * chi_regulariser(z)).sum()

    def gradient(self, z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        z = z.detach().requires_grad_(True)
        with torch.enable_grad():
            return torch.autograd.grad(self.objective(z, y), z)[0]

    def solve(self, y: torch.Tensor, z0: torch.Tensor, outer: int, inner: int) -> torch.Tensor:
        z = z0.clone().requires_grad_(True)
        opt = torch.optim.LBFGS([z], lr=1.0, max_iter=inner, line_search_fn="strong_wolfe")

        def closure() -> torch.Tensor:
            opt.zero_grad()
            loss = self.objective(z, y)
            loss.backward()
            return loss

        with torch.enable_grad():
            for _ in range(outer):
                opt.step(closure)
        with torch.no_grad():
            return self.end(z.detach())


@single_torch_thread()
def rows(size: str) -> list[BenchRow]:
    n, b, prior_steps, (outer, inner), repeat = SIZES[size]
    prior = train_flow_prior(digits("train"), steps=prior_steps, seed=0, hidden=128, depth=3, batch_size=128)
    weights = list(prior.parameters())
    op = AvgPoolSR((1, 8, 8), 2)
    x = torch.as_tensor(digits("test")[:b])
    g = torch.Generator().manual_seed(0)
    y = op.A(x) + 0.01 * torch.randn(op.A(x).shape, generator=g)
    z = torch.randn(x.shape, generator=g)
    ms = MSFlow(prior, op, n_shoot=n // 2, substeps=2, rho=0.1, nfe_budget=10**9, outer=outer, inner=inner)
    ours_dflow = DFlow(prior, op, n_steps=n, outer=outer, inner=inner)
    if importlib.util.find_spec("torchdiffeq") is None:  # a benchmark-only dependency: fall back to our D-Flow
        return _without_torchdiffeq(ms, ours_dflow, z, y, weights, f"one gradient, N={n}, B={b}, 2x SR", repeat)
    anchor = TorchdiffeqDFlow(prior, op, n, adjoint=False)
    adjoint = TorchdiffeqDFlow(prior, op, n, adjoint=True)
    with torch.no_grad():
        states = [z]
        for k in range(ms.K):
            states.append(ms.segment(states[-1], k))
        assert torch.allclose(anchor.end(z), states[-1], atol=1e-4), "torchdiffeq's Euler grid differs from ours"
    torch.testing.assert_close(anchor.gradient(z, y), ours_dflow.gradient(z, y), atol=1e-4, rtol=1e-4)

    t = interleaved_medians(
        {
            "msflow": lambda: ms.gradient(states, y),
            "torchdiffeq": lambda: anchor.gradient(z, y),
            "adjoint": lambda: adjoint.gradient(z, y),
            "ours_dflow": lambda: ours_dflow.gradient(z, y),
        },
        repeat=repeat,
    )
    mem = {
        "msflow": saved_tensor_bytes(lambda: ms.gradient(states, y), weights),
        "torchdiffeq": saved_tensor_bytes(lambda: anchor.gradient(z, y), weights),
        "adjoint": saved_tensor_bytes(lambda: adjoint.gradient(z, y), weights),
    }
    work = f"one gradient, N={n}, B={b}, 2x SR"
    out = [
        BenchRow("msflow", work, "torchdiffeq odeint (euler) D-Flow", t["msflow"], t["torchdiffeq"], "s"),
        BenchRow(
            "msflow",
            work + ", activation bytes",
            "torchdiffeq odeint (euler) D-Flow",
            mem["msflow"],
            mem["torchdiffeq"],
            "B",
            notes="peak bytes saved for backward, weights excluded",
        ),
        BenchRow(
            "msflow",
            work + ", activation bytes",
            "torchdiffeq odeint_adjoint (euler)",
            mem["msflow"],
            mem["adjoint"],
            "B",
            notes="the adjoint re-integrates backwards (memory flat in N too, ~2x the NFE per gradient)",
        ),
        BenchRow(
            "msflow",
            work,
            "torchdiffeq odeint_adjoint (euler)",
            t["msflow"],
            t["adjoint"],
            "s",
            notes="the adjoint's gradient is not exact for a discrete Euler trajectory (a reverse Euler solve)",
        ),
        BenchRow(
            "msflow",
            work,
            "our D-Flow (plain autograd)",
            t["msflow"],
            t["ours_dflow"],
            "s",
            notes="secondary: our own baseline",
        ),
    ]
    # a whole reconstruction at equal NFE: D-Flow on torchdiffeq first, MS-Flow then spends the same NFE
    z0 = ours_dflow.initial_noise(y, torch.Generator().manual_seed(1))
    before = prior.nfe
    anchor.solve(y, z0, outer, inner)
    budget = prior.nfe - before
    ms_eq = MSFlow(prior, op, n_shoot=n // 2, substeps=2, rho=0.1, nfe_budget=budget, outer=outer, inner=inner)
    t2 = interleaved_medians(
        {
            "msflow": lambda: ms_eq.solve(y, torch.Generator().manual_seed(1)),
            "torchdiffeq": lambda: anchor.solve(y, z0, outer, inner),
        },
        repeat=max(1, repeat - 2),
        warmup=0,
    )
    out.append(
        BenchRow(
            "msflow",
            f"reconstruction at equal NFE ({budget}), N={n}, B={b}",
            "torchdiffeq D-Flow + torch L-BFGS",
            t2["msflow"],
            t2["torchdiffeq"],
            "s",
            notes=f"L-BFGS {outer}x{inner}, strong Wolfe; MS-Flow stops at D-Flow's NFE",
        )
    )
    return out


def _without_torchdiffeq(
    ms: MSFlow, dflow: DFlow, z: torch.Tensor, y: torch.Tensor, weights: list, work: str, repeat: int
) -> list[BenchRow]:
    with torch.no_grad():
        states = [z]
        for k in range(ms.K):
            states.append(ms.segment(states[-1], k))
    t = interleaved_medians({"ms": lambda: ms.gradient(states, y), "d": lambda: dflow.gradient(z, y)}, repeat=repeat)
    bytes_ms = saved_tensor_bytes(lambda: ms.gradient(states, y), weights)
    bytes_d = saved_tensor_bytes(lambda: dflow.gradient(z, y), weights)
    note = "torchdiffeq is not installed: our own D-Flow is the anchor (pip install torchdiffeq for the outside one)"
    return [
        BenchRow("msflow", work, "our D-Flow (plain autograd)", t["ms"], t["d"], "s", notes=note),
        BenchRow("msflow", work + ", bytes", "our D-Flow (plain autograd)", bytes_ms, bytes_d, "B", notes=note),
    ]


if __name__ == "__main__":
    print_rows(rows(sys.argv[1] if len(sys.argv) > 1 else "full"))
