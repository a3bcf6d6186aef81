"""An ASE calculator front end: a fitted :class:`EnergyForceModel` drives ASE dynamics and optimisers."""

from __future__ import annotations

from typing import Any

from ase.calculators.calculator import Calculator, all_changes

from icml26.science.triforces.graph import DEFAULT_MIN_DISTANCE, AtomsBatch, from_ase
from icml26.science.triforces.model import EnergyForceModel


class TriForcesCalculator(Calculator):
    """``atoms.calc = TriForcesCalculator(model)``: energy (eV) and forces (eV/Å) of a fitted model.

    Inputs are checked like the model's (unknown or unfitted elements, empty structures, NaN positions, atoms
    closer than ``min_distance``): one :class:`StructureError` each.
    """

    implemented_properties = ("energy", "free_energy", "forces")

    def __init__(self, model: EnergyForceModel, min_distance: float = DEFAULT_MIN_DISTANCE, **kw: Any) -> None:
        super().__init__(**kw)
        self.model, self.min_distance = model, min_distance

    def calculate(self, atoms: Any = None, properties: Any = ("energy",), system_changes: Any = all_changes) -> None:
        super().calculate(atoms, properties, system_changes)
        structure = from_ase(self.atoms, self.model.cutoff, min_distance=self.min_distance)
        self.model.check_elements(structure.z)
        self.model.eval()
        batch = AtomsBatch.collate([structure], dtype=next(self.model.parameters()).dtype)
        energy, forces = self.model(batch, forces=True)
        energy = energy.detach()
        self.results = {
            "energy": float(energy[0]),
            "free_energy": float(energy[0]),
            "forces": forces.detach().double().numpy(),
        }
