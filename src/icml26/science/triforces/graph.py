"""Structures as tensors: checked inputs, a pure-torch periodic radius graph, and batches of atoms.

Edges follow ASE's ``neighbor_list("ijS")`` convention: edge (i, j, S) with vector r_j - r_i + S @ cell, one row per
directed pair and image, self pairs only for a non-zero image. Graphs are built once per structure (no gradient) and
the edge vectors are recomputed differentiably from positions, so forces come from autograd.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

MAX_Z = 118
DEFAULT_MIN_DISTANCE = 0.5  # Å: closer atoms are an input error (overlapping nuclei), never a silent huge energy


class StructureError(ValueError):
    """A structure the model cannot take: empty, unknown element, NaN coordinates, or atoms closer than the floor."""


def radius_graph(
    positions: Any, cutoff: float, cell: Any = None, pbc: Sequence[bool] | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Edges (i, j, S) of one structure with |r_j - r_i + S @ cell| < cutoff (vectorised over atoms and images).

    The image range along lattice vector k is ceil(cutoff * |b_k|) with b the reciprocal rows (1 / |b_k| is the
    spacing of the lattice planes), which covers every image within the cutoff even for skewed cells.
    Returns ``(i, j, S)`` as int64 tensors, ``S`` of shape (E, 3). (numpy inside: small arrays, no autograd.)
    """
    pos = np.asarray(positions.detach() if isinstance(positions, torch.Tensor) else positions, dtype=np.float64)
    pbc_t = [False] * 3 if pbc is None else [bool(p) for p in pbc]
    if cell is None or not any(pbc_t):
        shifts, cell_a = np.zeros((1, 3)), np.zeros((3, 3))
    else:
        cell_a = np.asarray(cell, dtype=np.float64)
        recip = np.linalg.inv(cell_a).T  # rows b_k with a_i . b_k = delta_ik
        reps = [math.ceil(cutoff * float(np.linalg.norm(recip[k]))) if pbc_t[k] else 0 for k in range(3)]
        grids = np.meshgrid(*[np.arange(-r, r + 1) for r in reps], indexing="ij")
        shifts = np.stack([g.ravel() for g in grids], axis=1).astype(np.float64)
    offsets = shifts @ cell_a  # (S, 3)
    vec = pos[None, :, None, :] - pos[:, None, None, :] + offsets[None, None]  # (i, j, s, 3)
    within = np.einsum("ijsk,ijsk->ijs", vec, vec) < cutoff * cutoff
    n = len(pos)
    within[np.arange(n), np.arange(n), np.flatnonzero((shifts == 0).all(1))[0]] = False  # no self pair in cell 0
    i, j, s = np.nonzero(within)
    return torch.from_numpy(i), torch.from_numpy(j), torch.from_numpy(shifts[s].astype(np.int64))


@dataclass
class Structure:
    """One checked structure: atomic numbers, positions (Å), cell and PBC, its graph, and optional labels."""

    z: torch.Tensor  # (n,) int64
    pos: torch.Tensor  # (n, 3) float64
    cell: torch.Tensor  # (3, 3) float64 (zeros without PBC)
    pbc: tuple[bool, bool, bool]
    edges: torch.Tensor  # (2, E) int64
    shifts: torch.Tensor  # (E, 3) float64: S @ cell, the Cartesian image offset of each edge
    energy: float | None = None  # eV
    forces: torch.Tensor | None = None  # (n, 3) eV/Å

    @property
    def n_atoms(self) -> int:
        return len(self.z)

    def with_positions(self, pos: torch.Tensor, cutoff: float) -> Structure:
        """The same structure at new positions (graph rebuilt, labels dropped): noised views, rattled queries."""
        return make_structure(self.z, pos, self.cell if any(self.pbc) else None, self.pbc, cutoff, check=False)


def _check(z: np.ndarray, pos: np.ndarray, where: str) -> None:
    if len(z) == 0:
        raise StructureError(f"{where}: empty structure (no atoms)")
    if pos.shape != (len(z), 3):
        raise StructureError(f"{where}: positions must have shape ({len(z)}, 3), got {pos.shape}")
    if not np.isfinite(pos).all():
        raise StructureError(f"{where}: positions contain NaN or infinite values")
    bad = (z < 1) | (z > MAX_Z)
    if bad.any():
        raise StructureError(f"{where}: unknown element(s) with atomic number {sorted(set(z[bad].tolist()))}")


def make_structure(
    z: Any,
    pos: Any,
    cell: Any = None,
    pbc: Sequence[bool] | bool | None = None,
    cutoff: float = 4.5,
    *,
    energy: float | None = None,
    forces: Any = None,
    min_distance: float = DEFAULT_MIN_DISTANCE,
    check: bool = True,
    where: str = "structure",
) -> Structure:
    """Check one structure (one clear :class:`StructureError` per bad input) and build its radius graph."""
    z_np = np.asarray(z, dtype=np.int64).reshape(-1)
    pos_np = np.asarray(pos, dtype=np.float64)
    if check:
        _check(z_np, pos_np, where)
    pbc_t = (bool(pbc),) * 3 if isinstance(pbc, bool | np.bool_) else tuple(bool(p) for p in (pbc or (False,) * 3))
    cell_t = torch.zeros(3, 3, dtype=torch.float64) if cell is None else torch.as_tensor(np.asarray(cell, float))
    if any(pbc_t) and abs(float(torch.linalg.det(cell_t))) < 1e-8:
        raise StructureError(f"{where}: periodic boundaries need a cell of non-zero volume")
    pos_t = torch.as_tensor(pos_np)
    i, j, s = radius_graph(pos_np, cutoff, cell_t.numpy(), pbc_t)
    shifts = s.double() @ cell_t
    if check and len(i):
        d = torch.linalg.norm(pos_t[j] - pos_t[i] + shifts, dim=-1)
        if float(d.min()) < min_distance:
            raise StructureError(
                f"{where}: atoms {int(i[d.argmin()])} and {int(j[d.argmin()])} are {float(d.min()):.3f} Å apart, "
                f"closer than the floor min_distance={min_distance} Å"
            )
    f = None if forces is None else torch.as_tensor(np.asarray(forces, dtype=np.float64))
    return Structure(torch.as_tensor(z_np), pos_t, cell_t, pbc_t, torch.stack([i, j]), shifts, energy, f)


def from_ase(atoms: Any, cutoff: float, *, labels: bool = False, where: str = "structure", **kw: Any) -> Structure:
    """One ``ase.Atoms`` as a :class:`Structure` (energy and forces read from its calculator if ``labels``)."""
    energy = forces = None
    if labels:
        energy, forces = float(atoms.get_potential_energy()), atoms.get_forces()
    return make_structure(
        atoms.numbers, atoms.positions, atoms.cell.array, tuple(atoms.pbc), cutoff, energy=energy, forces=forces,
        where=where, **kw,
    )  # fmt: skip


@dataclass
class AtomsBatch:
    """Concatenated structures: what every module of the model consumes (edges index into the concatenation)."""

    z: torch.Tensor  # (N,)
    pos: torch.Tensor  # (N, 3), float32 by default; set requires_grad for forces
    batch: torch.Tensor  # (N,) structure index of each atom
    edges: torch.Tensor  # (2, E)
    shifts: torch.Tensor  # (E, 3)
    n_structures: int
    energy: torch.Tensor | None = None  # (B,)
    forces: torch.Tensor | None = None  # (N, 3)

    @classmethod
    def collate(cls, structures: Sequence[Structure], dtype: torch.dtype = torch.float32) -> AtomsBatch:
        if not structures:
            raise StructureError("an empty list of structures")
        sizes = torch.tensor([s.n_atoms for s in structures])
        starts = torch.cumsum(sizes, 0) - sizes
        labelled = all(s.energy is not None and s.forces is not None for s in structures)
        return cls(
            z=torch.cat([s.z for s in structures]),
            pos=torch.cat([s.pos for s in structures]).to(dtype),
            batch=torch.repeat_interleave(torch.arange(len(structures)), sizes),
            edges=torch.cat([s.edges + st for s, st in zip(structures, starts, strict=True)], dim=1),
            shifts=torch.cat([s.shifts for s in structures]).to(dtype),
            n_structures=len(structures),
            energy=torch.tensor([s.energy for s in structures], dtype=dtype) if labelled else None,
            forces=torch.cat([s.forces for s in structures]).to(dtype) if labelled else None,  # type: ignore[misc]
        )

    @classmethod
    def from_ase(cls, atoms_list: Sequence[Any], cutoff: float, **kw: Any) -> AtomsBatch:
        """Check and batch ASE ``Atoms`` (one clear error per bad structure, naming its index)."""
        if len(atoms_list) == 0:
            raise StructureError("an empty list of structures")
        return cls.collate([from_ase(a, cutoff, where=f"structure {k}", **kw) for k, a in enumerate(atoms_list)])

    @property
    def n_atoms(self) -> torch.Tensor:
        return torch.bincount(self.batch, minlength=self.n_structures)

    def edge_vectors(self) -> torch.Tensor:
        """r_j - r_i + S @ cell for every edge, differentiable in ``pos``."""
        i, j = self.edges
        return self.pos[j] - self.pos[i] + self.shifts

    def replace(self, **kw: Any) -> AtomsBatch:
        return replace(self, **kw)
