"""TriForces throughput (structures per second, energy + forces) against PyG's SchNet with the same hyper-parameters.

Workload: batches of Au-Pt-Pd clusters (the EMT alloy cells with periodicity switched off, 27-32 atoms), one torch
thread. Both models: hidden 64, 64 filters, 3 interactions, 32 Gaussians, 4.5 Å cosine cutoff, sum readout; forces
by autograd (F = -dE/dr, no graph for a second derivative).

Rows (ratio = ours / anchor in structures per second; > 1 when ours is faster):

1. Our SchNet backbone (``TriForces`` with the extra streams off, ``EnergyForceModel`` head) against
   ``torch_geometric.nn.models.SchNet``; both receive the same precomputed radius graph (PyG through
   ``interaction_graph=``, since its own ``radius_graph`` needs pyg-lib, which has no wheel for this torch).
2. The full TriForces encoder (three streams) against the same PyG SchNet: the price of the two extra streams.
3. End to end from positions: ours builds the graph (numpy, per structure) inside the timed call, PyG gets a
   pure-torch O(N^2) radius graph inside its forward.
4. End to end against ASE's EMT calculator, the physics model whose labels the potential learns (pure Python, one
   structure at a time): what a learned potential costs against its labeller at this size.

torch-geometric is a benchmark-only dependency (the ``bench`` extra); without it only row 4 runs.

    .venv/bin/python benchmarks/bench_triforces.py [tiny|quick|full]
"""

from __future__ import annotations

import sys

import numpy as np
import torch

from icml26._core import single_torch_thread
from icml26._core.bench import BenchRow, interleaved_medians, print_rows
from icml26.science.triforces import AtomsBatch, EnergyForceModel, build_encoder, from_ase
from icml26.science.triforces.data import TARGET_METALS, random_alloy

HIDDEN, N_INTERACTIONS, N_RBF, CUTOFF = 64, 3, 32, 4.5
SIZES = {"tiny": (4, 1), "quick": (16, 5), "full": (64, 7)}  # structures per batch, timing repeats


def clusters(n: int, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        atoms = random_alloy(rng, TARGET_METALS, (1, 3), (0.05, 0.15), 0.04)
        atoms.pbc = False
        out.append(atoms)
    return out


def ours_model(streams: bool) -> EnergyForceModel:
    enc = build_encoder(streams, hidden=HIDDEN, n_interactions=N_INTERACTIONS, cutoff=CUTOFF, seed=0)
    enc.interaction.__init__(HIDDEN, N_INTERACTIONS, N_RBF, CUTOFF)  # N_RBF Gaussians, as PyG's below
    model = EnergyForceModel(enc)
    model.refs.zero_()
    return model.eval()


def pyg_model(edges: torch.Tensor | None):
    from torch_geometric.nn.models import SchNet

    def precomputed(pos: torch.Tensor, batch: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        i, j = edges
        return edges, (pos[j] - pos[i]).norm(dim=-1)

    def radius(pos: torch.Tensor, batch: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        d = torch.cdist(pos, pos)
        keep = (d < CUTOFF) & (batch[:, None] == batch[None, :])
        keep.fill_diagonal_(False)
        i, j = keep.nonzero(as_tuple=True)
        return torch.stack([j, i]), d[i, j]

    torch.manual_seed(0)
    return SchNet(
        hidden_channels=HIDDEN,
        num_filters=HIDDEN,
        num_interactions=N_INTERACTIONS,
        num_gaussians=N_RBF,
        cutoff=CUTOFF,
        interaction_graph=precomputed if edges is not None else radius,
        readout="add",
    ).eval()


def _emt_energy_forces(atoms_list: list) -> None:
    from ase.calculators.emt import EMT

    for atoms in atoms_list:
        atoms = atoms.copy()  # a fresh calculator on a copy: nothing cached between repeats, the inputs untouched
        atoms.calc = EMT()
        atoms.get_potential_energy()
        atoms.get_forces()


def _pyg_energy_forces(model, z: torch.Tensor, pos: torch.Tensor, batch: torch.Tensor) -> None:
    pos = pos.detach().requires_grad_(True)
    energy = model(z, pos, batch)
    torch.autograd.grad(energy.sum(), pos)


@single_torch_thread()
def rows(size: str) -> list[BenchRow]:
    try:
        import torch_geometric
    except ImportError:
        torch_geometric = None
    n, repeat = SIZES[size]
    atoms = clusters(n)
    structures = [from_ase(a, CUTOFF) for a in atoms]
    batch = AtomsBatch.collate(structures)
    backbone = ours_model(False)
    timed = {
        "ours_e2e": lambda: backbone(AtomsBatch.collate([from_ase(a, CUTOFF) for a in atoms]), forces=True),
        "emt": lambda: _emt_energy_forces(atoms),
    }
    if torch_geometric is not None:
        edges = batch.edges.flip(0)  # PyG messages flow from edge_index[0] (source j) to edge_index[1] (target i)
        tri, pyg, pyg_radius = ours_model(True), pyg_model(edges), pyg_model(None)
        timed |= {
            "ours": lambda: backbone(batch, forces=True),
            "triforces": lambda: tri(batch, forces=True),
            "pyg": lambda: _pyg_energy_forces(pyg, batch.z, batch.pos, batch.batch),
            "pyg_e2e": lambda: _pyg_energy_forces(pyg_radius, batch.z, batch.pos, batch.batch),
        }
    t = interleaved_medians(timed, repeat=repeat)
    rate = {k: n / v for k, v in t.items()}
    workload = f"energy+forces, {n} clusters x ~30 atoms, hidden {HIDDEN}, {N_INTERACTIONS} interactions"
    common = dict(unit="structures/s", better="higher", threads=1)
    emt = BenchRow("triforces", workload + ", graph included", "ASE EMT (the labeller)", rate["ours_e2e"],
                   rate["emt"], ours_name="SchNet backbone + our graph", notes="EMT: pure Python, one structure at a "
                   "time, a fresh calculator each", **common)  # fmt: skip
    if torch_geometric is None:
        return [emt]
    return [
        BenchRow("triforces", workload, "PyG SchNet (same graph)", rate["ours"], rate["pyg"], ours_name="SchNet "
                 "backbone (ours)", notes="same precomputed radius graph for both", **common),
        BenchRow("triforces", workload, "PyG SchNet (same graph)", rate["triforces"], rate["pyg"],
                 ours_name="TriForces encoder (3 streams)", notes="the cost of the composition and structure streams",
                 **common),
        BenchRow("triforces", workload + ", graph included", "PyG SchNet + torch cdist radius graph",
                 rate["ours_e2e"], rate["pyg_e2e"], ours_name="SchNet backbone + our graph",
                 notes="ours: ASE Atoms -> checked structure -> numpy radius graph per structure", **common),
        emt,
    ]  # fmt: skip


if __name__ == "__main__":
    print_rows(rows(sys.argv[1] if len(sys.argv) > 1 else "full"))
