"""TriForces (ICML 2026): a three-stream interatomic potential with label-free self-supervised pretraining.

    from icml26.science.triforces import SchNet, TriForces, TriForcesPretrainer, EnergyForceModel, TriForcesCalculator
    encoder = TriForces(SchNet(hidden=64), interaction_dim=64)          # three streams, fused per atom
    TriForcesPretrainer(encoder).fit(unlabelled_structures, steps=1000)   # no labels read
    model = EnergyForceModel(encoder).fit(labelled_structures)            # energy-conserving fine-tuning
    atoms.calc = TriForcesCalculator(model)                               # ASE dynamics, optimisers

The method, step by step (``streams``, ``model`` and ``ssl`` have the details):

1. Input: a structure (Z, positions, optional cell and PBC) and its radius graph (cutoff r_c, periodic images;
   ``graph.radius_graph`` matches ``ase.neighborlist.neighbor_list``). Bad inputs (empty, unknown element, NaN,
   atoms closer than ``min_distance``) raise one :class:`StructureError` each.
2. Interaction stream: any backbone returning per-atom features h_int (here SchNet: Gaussian radial basis,
   continuous-filter convolutions, cosine cutoff).
3. Composition stream (never sees positions): one token per element present with its count c_t, plus CLS; pre-LN
   transformer blocks whose attention is count-weighted, softmax_t(q . k_t / sqrt(d) + log c_t) (equal to
   repeating token t c_t times; equal to plain attention when every count is 1). An atom reads its element's token.
4. Structure stream (never sees Z): density c_{i,a,lm} = sum_j [W R(r_ij)]_a Y_lm(r_ij / r_ij) with a Bessel basis
   R and a learnable radial mix W, invariant power spectrum p_{i,ab,l} = sum_m c_{i,a,lm} c_{i,b,lm}, LayerNorm,
   an MLP with an orthogonal linear skip, then residual message passing.
5. Fusion: h_i = [h_int ‖ h_comp ‖ h_struct] (or a sum of projections); graph embedding g = MLP(mean_i h_i).
6. Self-supervised pretraining on two noised views (per-atom sigma ~ U(noise), a masked fraction of atoms given the
   mask token in every stream): L = w_dn MSE(-grad_r s, eps / sigma_max) + w_el CE(masked elements)
   + w_jepa (0.25 ||g_1 - g_2||^2 + SIGReg(g)), SIGReg the Epps-Pulley statistic of random 1-D projections of g
   against N(0, 1) (1024 projections, 17 knots on [0, 3]). The denoising head is the gradient of a scalar: an
   invariant network cannot output a vector through a plain MLP.
7. Fine-tuning: E = sum_i (e_ref(Z_i) + sigma_E eps(h_i)), F = -dE/dr by autograd; per-element least-squares
   references e_ref and the residual scale sigma_E from the training labels; Huber loss on standardised per-atom
   energies and forces.
8. Retrieval: cosine kNN on g (Recall@k, MRR).

Our readings, where the abstract leaves the method open: SchNet as the backbone of every claim, PaiNN (``PaiNN``) as
a second, tested backbone that the claims do not run (eSEN, MACE and Orb are not built); the structure stream at
l_max = 2 with one Bessel scale (the official config: l_max = 4, three scales); 2 composition blocks of width 64 and
4 heads by default (official: 4 blocks, d = 256, 8 heads); SSL weights w_dn = 10, w_el = 1, w_jepa = 0.1 (the
official MACE weights) with noise sigma ~ U(0.02, 0.1) Å and 10-30 % masking; no random rotation of views (every
stream here is exactly rotation invariant); the composition stream reads raw counts, so unlike the other two streams
it is not size-extensive (a doubled cell is not twice the energy). The abstract's baselines are not named: we
compare with the same backbone trained from scratch on the same labels, with the same element references.

Data substitutes (MatBench, OMat24 and LeMat-Bulk are not available offline): ASE's EMT fcc alloys
(``data.target_alloys``, ``data.unlabelled_pool``); QM9 molecules from qm9pack's CSVs (``data.qm9_molecules``).

References:
    A. Ramlaoui et al., "TriForces: ..." (ICML 2026), code https://github.com/Ramlaoui/triforces.
    K. T. Schütt et al., "SchNet - a deep learning architecture for molecules and materials", J. Chem. Phys. 2018.
    R. Balestriero, Y. LeCun, "LeJEPA: provable and scalable self-supervised learning without the heuristics",
    arXiv:2511.08544 (2025) (SIGReg).
    S. Zaidi et al., "Pre-training via denoising for molecular property prediction", ICLR 2023.
    T. W. Epps, L. B. Pulley, "A test for normality based on the empirical characteristic function", Biometrika 1983.
"""

from icml26.science.triforces.graph import AtomsBatch, Structure, StructureError, from_ase, make_structure, radius_graph
from icml26.science.triforces.model import (
    EncoderOutputs,
    EnergyForceModel,
    TriForces,
    build_encoder,
    element_references,
    errors,
)
from icml26.science.triforces.painn import PaiNN
from icml26.science.triforces.retrieval import embed, retrieval_metrics
from icml26.science.triforces.ssl import TriForcesPretrainer, sigreg
from icml26.science.triforces.streams import (
    BackboneOutputs,
    CompositionStream,
    SchNet,
    StructureStream,
    count_weighted_attention,
)

__all__ = [
    "AtomsBatch",
    "BackboneOutputs",
    "CompositionStream",
    "EncoderOutputs",
    "EnergyForceModel",
    "PaiNN",
    "SchNet",
    "Structure",
    "StructureError",
    "StructureStream",
    "TriForces",
    "TriForcesCalculator",
    "TriForcesPretrainer",
    "build_encoder",
    "count_weighted_attention",
    "element_references",
    "embed",
    "errors",
    "from_ase",
    "make_structure",
    "radius_graph",
    "retrieval_metrics",
    "sigreg",
]


def __getattr__(name: str):
    if name == "TriForcesCalculator":  # ase imported only when the calculator is asked for
        from icml26.science.triforces.calculator import TriForcesCalculator

        return TriForcesCalculator
    raise AttributeError(name)
