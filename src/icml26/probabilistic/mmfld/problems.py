"""The constrained test problems of the reproduction, each with its reference solution.

- ``interaction_box(dim)``: [0, 1]^d, V(x) = -1.5 x_1 (- 0.5 x_2), Gaussian interaction (bandwidth 0.2, weight 1),
  lam = 0.05 (the notes' quick problem): mu* has a boundary layer at x_1 = 1 of width ~ lam / 1.5.
- ``known_optimum_box(dim)``: entropy-regularised MMD fitting of the truncated exponential rho* ~ exp(20 x) on [0, 1]^d
  with rho* as Gibbs reference (``KnownOptimumDensity``): mu* = rho*, L* = 0 exactly.
- ``simplex_mmd()``: 1/2 MMD^2 towards 300 fixed Dirichlet(6, 3, 0.6) samples on the 2-simplex (the target sits near
  the face x_1 + x_2 = 1), Gaussian kernel (bandwidth 0.15), lam = 0.01.
- ``two_layer_net()``: teacher-student mean-field network, f_mu(x) = int a tanh(w x) dmu on 64 inputs in [-2, 2],
  teacher tanh(2x) (output weight on the bound |a| <= 1), theta = (a, w) in [-1, 1] x [-3, 3], lam = 0.005.

``Problem.reference()`` computes (once) the grid fixed point mu* and ``Problem.binned()`` the histogram objective
used to measure L(mu_N) - L(mu*).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from icml26.probabilistic.mmfld.domains import DTYPE, Box, Domain, Simplex
from icml26.probabilistic.mmfld.objectives import (
    GaussianKernel,
    InteractionEnergy,
    KnownOptimumDensity,
    LinearPotential,
    MeanFieldTwoLayerNet,
    MMDObjective,
)
from icml26.probabilistic.mmfld.reference import BinnedObjective, GridSolution, grid_fixed_point

__all__ = ["PROBLEMS", "Problem", "get_problem"]


@dataclass
class Problem:
    """An objective, its lam and domain, the grid size of its reference and the histogram bins of its gap."""

    name: str
    objective: Any
    lam: float
    domain: Domain
    grid_n: int
    bins: int
    _reference: GridSolution | None = field(default=None, repr=False)

    def reference(self) -> GridSolution:
        if self._reference is None:
            self._reference = grid_fixed_point(self.objective, self.lam, self.domain, self.grid_n)
        return self._reference

    def binned(self) -> BinnedObjective:
        return BinnedObjective(self.objective, self.lam, self.domain, self.bins)

    @property
    def is_box(self) -> bool:
        return isinstance(self.domain, Box)


def _kernel(bandwidth: float, fast: bool) -> GaussianKernel:
    return GaussianKernel(bandwidth, 1.0, compute_dtype=torch.float32 if fast else DTYPE)


def interaction_box(dim: int = 1, fast: bool = True) -> Problem:
    coef = [-1.5, -0.5][:dim]
    obj = InteractionEnergy(LinearPotential(coef), _kernel(0.2, fast))
    return Problem(
        f"interaction_box{dim}d", obj, 0.05, Box(0.0, 1.0, dim=dim), 2000 if dim == 1 else 200, 50 if dim == 1 else 20
    )


def known_optimum_box(dim: int = 1, fast: bool = True) -> Problem:
    box = Box(0.0, 1.0, dim=dim)
    obj = KnownOptimumDensity(box, 20.0, 0.05, _kernel(0.2, fast))
    return Problem(f"known_optimum_box{dim}d", obj, 0.05, box, 2000 if dim == 1 else 200, 50 if dim == 1 else 20)


def simplex_mmd(fast: bool = True) -> Problem:
    import numpy as np

    target = torch.as_tensor(np.random.default_rng(20260).dirichlet([6.0, 3.0, 0.6], 300)[:, :2], dtype=DTYPE)
    obj = MMDObjective(target, _kernel(0.15, fast))
    return Problem("simplex_mmd", obj, 0.01, Simplex(2), 200, 20)


def two_layer_net() -> Problem:
    x = torch.linspace(-2.0, 2.0, 64, dtype=DTYPE)
    obj = MeanFieldTwoLayerNet(x.unsqueeze(-1), torch.tanh(2.0 * x))
    return Problem("two_layer_net", obj, 0.005, Box([-1.0, -3.0], [1.0, 3.0]), 200, 20)


PROBLEMS = {
    "interaction_box1d": lambda: interaction_box(1),
    "interaction_box2d": lambda: interaction_box(2),
    "known_optimum_box1d": lambda: known_optimum_box(1),
    "simplex_mmd": simplex_mmd,
    "two_layer_net": two_layer_net,
}


def get_problem(name: str) -> Problem:
    if name not in PROBLEMS:
        raise KeyError(f"unknown problem {name!r}; known: {sorted(PROBLEMS)}")
    return PROBLEMS[name]()
