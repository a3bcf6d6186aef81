"""Equivariant linear layers and MLPs for finite groups (PyTorch).

An equivariant linear map W: (V_in, rho_in) -> (V_out, rho_out) satisfies rho_out(g) W = W rho_in(g). Any free
matrix is mapped onto that space by the Reynolds projection W_eq = (1/|G|) sum_g rho_out(g) W rho_in(g)^T (an
orthogonal projection onto the commutant); the bias is projected onto the invariant subspace of rho_out. Hidden
layers carry copies of the regular representation (permutation matrices), so a pointwise activation commutes with
the group and the whole MLP is exactly equivariant: f(rho_in(g) x) = rho_out(g) f(x).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from icml26.stats.equivariant_spectral.groups import GroupError, Representation

__all__ = ["EquivariantLinear", "equivariant_mlp", "hidden_representation", "mlp", "reynolds"]


class _Float64Constants:
    """Group matrices kept in float64 outside the module's buffers (``module.float()`` would round them, and a
    rounded D3 rotation is no longer an exact group element) and cast to the working dtype on use."""

    def __init__(self, **arrays: np.ndarray) -> None:
        self.arrays = {k: torch.as_tensor(np.asarray(v), dtype=torch.float64) for k, v in arrays.items()}
        self.cache: dict[tuple[str, torch.dtype], torch.Tensor] = {}

    def get(self, name: str, dtype: torch.dtype) -> torch.Tensor:
        key = (name, dtype)
        if key not in self.cache:
            self.cache[key] = self.arrays[name].to(dtype)
        return self.cache[key]


def reynolds(weight: torch.Tensor, rho_out: torch.Tensor, rho_in: torch.Tensor) -> torch.Tensor:
    """(1/|G|) sum_g rho_out(g) W rho_in(g)^T for stacked matrices rho_out [|G|, o, o], rho_in [|G|, i, i]."""
    return torch.einsum("gab,bc,gdc->ad", rho_out, weight, rho_in) / rho_out.shape[0]


class EquivariantLinear(nn.Module):
    """A linear layer constrained to commute with the group: ``rho_out(g) layer(x) = layer(rho_in(g) x)``."""

    def __init__(self, rep_in: Representation, rep_out: Representation, bias: bool = True) -> None:
        super().__init__()
        if rep_in.group is not rep_out.group:
            raise GroupError("EquivariantLinear: the input and output representations must be of the same group")
        self.const = _Float64Constants(
            rho_in=rep_in.matrices, rho_out=rep_out.matrices, invariant=rep_out.invariant_projector()
        )
        # Kaiming-uniform start scaled up so that the projected weight keeps roughly a plain layer's variance.
        fan_in = rep_in.dim
        dim_commutant = float(np.einsum("gii,gjj->", rep_out.matrices, rep_in.matrices)) / rep_out.group.order
        boost = math.sqrt(rep_in.dim * rep_out.dim / max(dim_commutant, 1.0))
        bound = boost / math.sqrt(fan_in)
        self.weight = nn.Parameter(torch.empty(rep_out.dim, rep_in.dim).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.zeros(rep_out.dim)) if bias else None

    def equivariant_weight(self) -> torch.Tensor:
        dt = self.weight.dtype
        return reynolds(self.weight, self.const.get("rho_out", dt), self.const.get("rho_in", dt))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b = None if self.bias is None else self.const.get("invariant", self.bias.dtype) @ self.bias
        return nn.functional.linear(x, self.equivariant_weight(), b)


def hidden_representation(rep: Representation, width: int) -> Representation:
    """ceil(width / |G|) copies of the regular representation (a permutation representation)."""
    reg = rep.group.regular
    return reg.repeat(max(1, math.ceil(width / reg.dim)))


def equivariant_mlp(rep_in: Representation, rep_out: Representation, width: int = 64, depth: int = 2) -> nn.Sequential:
    """rep_in -> [regular^m, ELU] x depth -> rep_out, every layer equivariant."""
    hidden = hidden_representation(rep_in, width)
    layers: list[nn.Module] = []
    prev = rep_in
    for _ in range(depth):
        layers += [EquivariantLinear(prev, hidden), nn.ELU()]
        prev = hidden
    layers.append(EquivariantLinear(prev, rep_out))
    return nn.Sequential(*layers)


def mlp(d_in: int, d_out: int, width: int = 64, depth: int = 2) -> nn.Sequential:
    """The plain MLP with the same shape (widths, activation, depth) as :func:`equivariant_mlp`."""
    layers: list[nn.Module] = []
    prev = d_in
    for _ in range(depth):
        layers += [nn.Linear(prev, width), nn.ELU()]
        prev = width
    layers.append(nn.Linear(prev, d_out))
    return nn.Sequential(*layers)
