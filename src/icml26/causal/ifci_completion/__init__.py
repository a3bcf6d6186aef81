"""I-FCI and its completion: causal discovery from soft interventions with known targets and latent confounders.

Setting. Environments ``0..K``: one observational, the others soft interventions with known target sets ``I_k``.
Besides within-environment independences, interventions induce *invariances* across environments. Both are
encoded by the **I-augmented graph**: one root F-node per pair of environments ``(i, j)``, with children
``S_F = I_i symmetric-difference I_j``. Its MAG over ``V u F`` (latents marginalised) is the **I-MAG**; the
I-MAGs with the same m-separations *and* realisable with F-nodes pointing only into ``S_F`` form the
interventional equivalence class, summarised by the **I-PAG** (a mark is kept iff every member has it).

Pipeline (one function per step):

1. ``oracle_from_admg(admg, targets)`` -- the exact independence oracle (m-separation in the augmented ADMG);
   any object with ``names``, ``f_targets`` and ``(x, y, cond) -> bool`` works in its place.
2. ``ifci(oracle)`` -- I-FCI (Kocaoglu et al. 2019):

   a. adjacency search over ``V u F`` (:mod:`.skeleton`): every test conditions on the other F-nodes (within-
      environment tests for ``X - Y``, invariances for ``F - Y``; never an F-F edge); a PC-style stage
      (conditioning sets ``W`` from the current adjacents, growing size, PC-stable order, optional
      ``max_cond_size``), then FCI's possible-D-SEP stage (``W`` from ``pds(a)``, restricted to nodes on paths
      between the pair that avoid F-nodes). With an exact oracle this is the I-MAG's skeleton; the PAGs are
      identical to those of an exhaustive search (``learn_skeleton_exhaustive``) on every n <= 6 test family;
   b. R0, then Zhang's R1-R4/R8-R10 interleaved with F-rule 8 (``F -> Y``) and F-rule 9 (``S_F = {X}``,
      ``F`` and ``X`` adjacent to ``Y`` => ``X -> Y``) until nothing changes. Sound, not complete.

3. ``complete_by_enumeration(pag)`` -- method (i) of Zhou & Kocaoglu (2026): resolve circles, keep valid,
   Markov-equivalent, realisable I-MAGs (an exact search over bows, no cap), intersect. Sound and complete;
   exponential in circles (capped by ``max_circles``, reported).
4. ``apply_new_rules(pag)`` / ``ifci(oracle, new_rules=True)`` -- method (ii), the paper's additional local rules
   from F-node semantics. The abstract does not state them; F-host and F-anc (:mod:`.rules`, two generalisations
   of Rule 9) are the paper's rules as we read them, validated against step 3.
5. ``true_ipag_bruteforce(targets, n)`` -- exact truth by brute force on n <= 4 observed nodes, with one target
   (1,135 classes at n = 4) or two (three F-nodes: 2,850 classes), cached.
6. ``IFCI(alpha).fit(datasets, targets)`` -- the same on data, with Fisher-z tests (:mod:`.data`); bad input
   (NaN, empty or 1-D arrays, too few samples, constant columns, targets that are not one set per
   interventional environment, no interventional environment, ``alpha`` outside (0, 1)) gets one clear
   ValueError each. ``est.pag_.plot()`` draws the result (:mod:`.draw`).

PAGs use pcalg's endpoint codes and orientation (``marks[a, b]`` is the mark at ``b``: 0 none, 1 circle,
2 arrow, 3 tail) and convert to and from causal-learn's ``GeneralGraph`` (``graph[a, b]`` is the mark at ``a``:
-1 tail, 1 arrow, 2 circle) with ``PAG.to_causallearn`` / ``PAG.from_causallearn``.

What the oracle runs show (``reproduce.py``): on both n = 4 brute-force families, I-FCI with Zhang's rules applied
to a fixed point is already complete (0 of 1,135 and 0 of 2,850 classes incomplete); causal-learn's FCI with
background knowledge is not, because it runs R4 only in passes where R1-R3 changed something. With two
interventions at n = 5-6 the gap the paper describes appears, and the two new rules close most (not all) of it.

Extension, unknown targets (Psi-FCI style, Jaber et al. 2020): ``ifci(oracle, known_targets=False)`` or
``IFCI().fit(datasets, "unknown")`` runs the same search and only the F-rule that needs no targets (Rule 8), as
dodiscover's ``PsiFCI(known_intervention_targets=False)`` does; ``pag.possible_targets(f)`` lists the observed
neighbours of an F-node, which contain its true targets. The new rules and the completion need known targets
(they raise otherwise). Tested for soundness against the known-target class; the claims do not measure it.

References
----------
- Z. Zhou, M. Kocaoglu, "Towards Completeness in Causal Discovery from Soft Interventions with Known Targets",
  ICML 2026.
- M. Kocaoglu, A. Jaber, K. Shanmugam, E. Bareinboim, "Characterization and learning of causal graphs with
  latent variables from soft interventions", NeurIPS 2019.
- J. Zhang, "On the completeness of orientation rules for causal discovery in the presence of latent confounders
  and selection bias", Artificial Intelligence 2008.
- T. Richardson, P. Spirtes, "Ancestral graph Markov models", Annals of Statistics 2002.
- A. Jaber, M. Kocaoglu, K. Shanmugam, E. Bareinboim, "Causal discovery from soft interventions with unknown
  targets: characterization and learning", NeurIPS 2020 (Psi-FCI).
- P. Spirtes, C. Glymour, R. Scheines, "Causation, Prediction, and Search", MIT Press 2000 (PC, FCI,
  possible-D-SEP); D. Colombo, M. Maathuis, JMLR 2014 (PC-stable).
"""

from icml26.causal.ifci_completion.admg import ADMG, augment
from icml26.causal.ifci_completion.completion import (
    CompletionReport,
    complete_by_enumeration,
    fci_pag_of_mag,
    is_realisable,
    is_valid_mag,
)
from icml26.causal.ifci_completion.data import FisherZOracle, check_datasets, simulate_linear_sem
from icml26.causal.ifci_completion.draw import plot_pag
from icml26.causal.ifci_completion.ground_truth import ONE_TARGET, TWO_TARGETS, EquivalenceClass, true_ipag_bruteforce
from icml26.causal.ifci_completion.ifci import (
    IFCI,
    IndependenceOracle,
    MSeparationOracle,
    check_environments,
    fci_pag_from_sepsets,
    ifci,
    learn_skeleton,
    learn_skeleton_exhaustive,
    oracle_from_admg,
    rule_f_exogenous,
    rule_f_single_target,
)
from icml26.causal.ifci_completion.pag import ARROW, CIRCLE, NONE, PAG, TAIL
from icml26.causal.ifci_completion.rules import (
    apply_new_rules,
    rule_f_unique_ancestor_target,
    rule_f_unique_host_target,
)

__all__ = [
    "ADMG",
    "ARROW",
    "CIRCLE",
    "IFCI",
    "NONE",
    "ONE_TARGET",
    "PAG",
    "TAIL",
    "TWO_TARGETS",
    "CompletionReport",
    "EquivalenceClass",
    "FisherZOracle",
    "IndependenceOracle",
    "MSeparationOracle",
    "apply_new_rules",
    "augment",
    "check_datasets",
    "check_environments",
    "complete_by_enumeration",
    "fci_pag_from_sepsets",
    "fci_pag_of_mag",
    "ifci",
    "is_realisable",
    "is_valid_mag",
    "learn_skeleton",
    "learn_skeleton_exhaustive",
    "oracle_from_admg",
    "plot_pag",
    "rule_f_exogenous",
    "rule_f_single_target",
    "rule_f_unique_ancestor_target",
    "rule_f_unique_host_target",
    "simulate_linear_sem",
    "true_ipag_bruteforce",
]
