"""The TriForces encoder (three streams fused per atom) and the energy-conserving fine-tuning model."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
from torch import nn

from icml26.science.triforces.graph import MAX_Z, AtomsBatch, Structure, StructureError
from icml26.science.triforces.streams import SSP, CompositionStream, SchNet, StructureStream, scatter_mean, scatter_sum

Fusion = Literal["concat", "add"]


@dataclass
class EncoderOutputs:
    node: torch.Tensor  # (N, D) fused per-atom features
    graph: torch.Tensor  # (B, out_dim) projected mean-pooled features: the embedding (retrieval, LeJEPA)


class TriForces(nn.Module):
    """Three-stream encoder: h_i = [h_int ‖ h_comp ‖ h_struct] (or their sum), graph = MLP(mean_i h_i).

    ``interaction`` is any backbone returning :class:`BackboneOutputs` with ``interaction_dim`` features per atom.
    With ``composition=False, structure=False`` it is the backbone alone with the same heads: the baseline arms use
    exactly this code path.
    """

    def __init__(
        self,
        interaction: nn.Module,
        interaction_dim: int,
        comp_dim: int = 64,
        struct_dim: int = 64,
        l_max: int = 2,
        n_radial: int = 6,
        fusion: Fusion = "concat",
        out_dim: int = 128,
        *,
        composition: bool = True,
        structure: bool = True,
        cutoff: float | None = None,
        comp_heads: int = 4,
        comp_blocks: int = 2,
    ) -> None:
        super().__init__()
        if fusion not in ("concat", "add"):
            raise ValueError(f"fusion must be 'concat' or 'add', got {fusion!r}")
        cutoff = cutoff if cutoff is not None else float(getattr(interaction, "cutoff", 4.5))
        self.interaction, self.fusion, self.cutoff = interaction, fusion, cutoff
        self.composition = CompositionStream(comp_dim, comp_heads, comp_blocks) if composition else None
        self.structure = StructureStream(struct_dim, l_max, n_radial, cutoff) if structure else None
        dims = [interaction_dim] + [comp_dim] * composition + [struct_dim] * structure
        if fusion == "add":
            self.proj = nn.ModuleList(nn.Linear(d, interaction_dim) for d in dims)
            self.dim = interaction_dim
        else:
            self.dim = sum(dims)
        self.projector = nn.Sequential(nn.Linear(self.dim, self.dim), nn.SiLU(), nn.Linear(self.dim, out_dim))

    def streams(self, batch: AtomsBatch) -> list[torch.Tensor]:
        """Per-atom features of each active stream: interaction, then composition, then structure."""
        out = [self.interaction(batch).node]
        if self.composition is not None:
            out.append(self.composition(batch.z, batch.batch, batch.n_structures)[0])
        if self.structure is not None:
            out.append(self.structure(batch.edge_vectors(), batch.edges, len(batch.z)))
        return out

    def forward(self, batch: AtomsBatch) -> EncoderOutputs:
        parts = self.streams(batch)
        node = (
            torch.cat(parts, -1)
            if self.fusion == "concat"
            else sum(p(x) for p, x in zip(self.proj, parts, strict=True))
        )
        graph = self.projector(scatter_mean(node, batch.batch, batch.n_structures))
        return EncoderOutputs(node=node, graph=graph)


def element_references(structures: Sequence[Structure], ridge: float = 1e-8) -> dict[int, float]:
    """Per-element reference energies e_Z by least squares: E_s ~ sum_Z n_{s,Z} e_Z (eV per atom of element Z)."""
    if not structures or any(s.energy is None for s in structures):
        raise ValueError("element references need labelled structures (energy set on every one)")
    elements = sorted({int(z) for s in structures for z in s.z.tolist()})
    counts = np.array([[int((s.z == e).sum()) for e in elements] for s in structures], dtype=float)
    energies = np.array([s.energy for s in structures], dtype=float)
    a = counts.T @ counts + ridge * np.eye(len(elements))
    refs = np.linalg.solve(a, counts.T @ energies)
    return dict(zip(elements, refs.tolist(), strict=True))


class EnergyForceModel(nn.Module):
    """E = sum_i (e_ref(Z_i) + sigma_E * eps(h_i)), F = -dE/dr: energy-conserving head on a :class:`TriForces`.

    ``fit`` sets the per-element least-squares references and the per-atom residual scale from the training labels,
    then minimises the Huber loss on standardised per-atom energies and forces with Adam (cosine decay).
    """

    def __init__(self, encoder: TriForces, element_refs: Literal["lstsq"] | dict[int, float] = "lstsq") -> None:
        super().__init__()
        self.encoder = encoder
        self.head = nn.Sequential(nn.Linear(encoder.dim, 64), SSP(), nn.Linear(64, 1))
        self.element_refs = element_refs
        self.register_buffer("refs", torch.full((MAX_Z + 1,), float("nan"), dtype=torch.float64))
        self.register_buffer("energy_scale", torch.tensor(1.0, dtype=torch.float64))
        self.register_buffer("force_scale", torch.tensor(1.0, dtype=torch.float64))
        self.loss_curve_: list[float] = []

    @property
    def cutoff(self) -> float:
        return self.encoder.cutoff

    def _set_references(self, structures: Sequence[Structure]) -> None:
        refs = element_references(structures) if self.element_refs == "lstsq" else dict(self.element_refs)
        self.refs.fill_(float("nan"))
        for z, e in refs.items():
            self.refs[int(z)] = float(e)
        resid = [(s.energy - sum(refs[int(z)] for z in s.z.tolist())) / s.n_atoms for s in structures]  # type: ignore[operator]
        self.energy_scale.fill_(max(float(np.std(resid)), 1e-3))
        forces = torch.cat([s.forces for s in structures])  # type: ignore[misc]
        self.force_scale.fill_(max(float(forces.pow(2).mean().sqrt()), 1e-3))

    def check_elements(self, z: torch.Tensor) -> None:
        unseen = sorted({int(e) for e in z[torch.isnan(self.refs[z])].tolist()})
        if unseen:
            raise StructureError(f"element(s) {unseen} have no reference energy: the model was not fitted on them")

    def forward(self, batch: AtomsBatch, forces: bool = True, create_graph: bool = False) -> tuple[torch.Tensor, ...]:
        """(energy (B,) in eV, forces (N, 3) in eV/Å or None)."""
        pos = batch.pos.detach().requires_grad_(forces)
        batch = batch.replace(pos=pos)
        h = self.encoder(batch).node
        eps = self.head(h).squeeze(-1) * self.energy_scale.to(h.dtype) + self.refs[batch.z].to(h.dtype)
        energy = scatter_sum(eps, batch.batch, batch.n_structures)
        if not forces:
            return energy, None  # type: ignore[return-value]
        (grad,) = torch.autograd.grad(energy.sum(), pos, create_graph=create_graph)
        return energy, -grad

    def fit(
        self,
        structures: Sequence[Structure],
        steps: int = 300,
        batch_size: int = 16,
        lr: float = 2e-3,
        force_weight: float = 1.0,
        huber_delta: float = 1.0,
        seed: int = 0,
    ) -> EnergyForceModel:
        if not structures:
            raise ValueError("fit needs at least one labelled structure")
        self._set_references(structures)
        self.check_elements(torch.cat([s.z for s in structures]))
        rng = np.random.default_rng(seed)
        opt = torch.optim.Adam(self.parameters(), lr=lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(steps, 1))
        huber = nn.HuberLoss(delta=huber_delta)
        self.train()
        self.loss_curve_ = []
        es, fs = float(self.energy_scale), float(self.force_scale)
        for _ in range(steps):
            idx = rng.choice(len(structures), size=min(batch_size, len(structures)), replace=False)
            batch = AtomsBatch.collate([structures[k] for k in idx])
            energy, f = self(batch, forces=True, create_graph=True)
            n = batch.n_atoms.to(energy.dtype)
            loss = huber(energy / n / es, batch.energy / n / es) + force_weight * huber(f / fs, batch.forces / fs)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            self.loss_curve_.append(float(loss.detach()))
        self.eval()
        return self

    def predict(self, structures: Sequence[Structure], batch_size: int = 32) -> tuple[np.ndarray, list[np.ndarray]]:
        """Energies (eV) and per-structure forces (eV/Å)."""
        energies, forces = [], []
        for k in range(0, len(structures), batch_size):
            chunk = list(structures[k : k + batch_size])
            batch = AtomsBatch.collate(chunk)
            self.check_elements(batch.z)
            e, f = self(batch, forces=True)
            energies.append(e.detach().double().numpy())
            forces += [x.numpy() for x in f.detach().double().split(batch.n_atoms.tolist())]
        return np.concatenate(energies), forces


def errors(model: EnergyForceModel, structures: Sequence[Structure]) -> dict[str, float]:
    """Energy MAE (meV/atom) and force MAE (meV/Å, per component) on labelled structures."""
    e, f = model.predict(structures)
    n = np.array([s.n_atoms for s in structures])
    e_true = np.array([s.energy for s in structures])
    f_err = np.concatenate([np.abs(fp - s.forces.numpy()).ravel() for fp, s in zip(f, structures, strict=True)])  # type: ignore[union-attr]
    return {"energy_mae": 1000 * float(np.mean(np.abs(e - e_true) / n)), "force_mae": 1000 * float(f_err.mean())}


def finetune_copy(encoder: TriForces) -> TriForces:
    """A fresh copy of a (pretrained) encoder for fine-tuning: the pretrained one stays untouched."""
    return copy.deepcopy(encoder)


def build_encoder(
    streams: bool,
    hidden: int = 64,
    n_interactions: int = 3,
    cutoff: float = 4.5,
    comp_dim: int = 64,
    struct_dim: int = 64,
    l_max: int = 2,
    n_radial: int = 6,
    out_dim: int = 128,
    seed: int = 0,
    **kw: Any,
) -> TriForces:
    """A SchNet backbone wrapped by :class:`TriForces`, with both extra streams (``streams``) or none."""
    torch.manual_seed(seed)
    backbone = SchNet(hidden=hidden, n_interactions=n_interactions, cutoff=cutoff)
    return TriForces(
        backbone, hidden, comp_dim, struct_dim, l_max, n_radial, out_dim=out_dim, composition=streams,
        structure=streams, cutoff=cutoff, **kw,
    )  # fmt: skip
