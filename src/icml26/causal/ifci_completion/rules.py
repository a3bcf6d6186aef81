"""Additional local rules from F-node semantics: Zhou & Kocaoglu (2026)'s method (ii), as we read it.

The abstract says the paper derives "a set of additional local orientation rules that provably tighten I-FCI
without increasing asymptotic complexity", but does not state them. The two rules below stand for the paper's
rules: they are our reading of what F-node semantics allow, derived here, and validated against the exact
enumeration completion (they never orient a mark the completion does not, and never a wrong one: see
``tests/causal/test_ifci_completion.py`` and claims C1r, C2r). Where the paper's own rules differ, our claims
measure these, not those.

**What F-node semantics give.** ``F`` is a root whose children in the augmented graph are exactly ``S_F``. So if
``F`` is adjacent to ``Y`` (``Y`` not in ``S_F``) in the I-MAG, ``F`` is an ancestor of ``Y`` and the directed
path leaves ``F`` through a target: *some* ``X`` in ``S_F`` is an ancestor of ``Y``. Kocaoglu's Rule 9 uses this
only when ``S_F = {X}``.

**Rule F-anc (generalised Rule 9).** For an F-edge ``F -> Y`` with ``Y`` not in ``S_F``, let ``C`` be the targets
``X`` in ``S_F`` with a *potentially directed* path ``X ~> Y`` in the current PAG (every edge ``a *-* b`` on it
has no arrowhead at ``a`` and no tail at ``b``). Every directed path of every member MAG is potentially directed
in a sound PAG, so the ancestor target lies in ``C``. If ``C = {X}``, then ``X`` is an ancestor of ``Y`` in every
member, and for every ``Z`` adjacent to ``Y`` that is ``X`` itself or a definite ancestor of ``X`` (a path of
fully oriented ``->`` edges), ``Z`` is an ancestor of ``Y`` and ``Y`` is not an ancestor of ``Z`` (acyclicity):
orient ``Z -> Y``.

**Rule F-host.** Look closer at that path. In the latent DAG, the edge ``F - Y`` of the I-MAG is an inducing
path ``F -> X ... Y`` whose first node ``X`` is a target; ``X`` is observed, so it is a collider on the path, hence
an ancestor of ``Y``; and the rest of the path, ``X ... Y``, is itself an inducing path, so ``X`` and ``Y`` are
*adjacent* in the I-MAG, by an edge ``X -> Y``. So let ``H`` be the targets ``X`` adjacent to ``Y`` whose edge can
still be ``X -> Y`` (no arrowhead at ``X``, no tail at ``Y``). If ``H = {X}``, orient ``X -> Y``. This also
generalises Rule 9 (``S_F = {X}``: ``H = {X}``), and differs from F-anc: a target with a potentially directed
path to ``Y`` but no edge to it cannot host ``F``'s edge.

With ``S_F = {X}`` and ``Z = X``, F-anc is Kocaoglu's Rule 9 too. It fires when every other target is ruled out as an
ancestor of ``Y`` -- typically a target whose edges all carry arrowheads at it, or one with no potentially
directed path to ``Y``. Cost: one reachability search per F-edge, so the rules keep I-FCI's polynomial order.

Both rules read only the PAG around each F-edge (one reachability search or one scan of ``S_F`` per F-edge).
What we do **not** claim: that they match the paper's rules word for word, or that they close every gap; the
study measures the share of the I-FCI-vs-completion gap they close.

References
----------
- M. Kocaoglu, A. Jaber, K. Shanmugam, E. Bareinboim, "Characterization and learning of causal graphs with
  latent variables from soft interventions", NeurIPS 2019 (F-nodes, Rules 8 and 9).
- T. S. Richardson and P. Spirtes, "Ancestral graph Markov models", Annals of Statistics 2002 (inducing paths:
  adjacency in a MAG).
- Z. Zhou, M. Kocaoglu, "Towards Completeness in Causal Discovery from Soft Interventions with Known Targets",
  ICML 2026.
"""

from __future__ import annotations

from icml26.causal.ifci_completion.orientation import Rule, _potentially_directed, _set
from icml26.causal.ifci_completion.pag import ARROW, PAG, TAIL


def _pd_reachable(pag: PAG, source: int) -> set[int]:
    """Nodes reachable from ``source`` by a potentially directed path avoiding F-nodes (source excluded)."""
    seen, stack = {source}, [source]
    while stack:
        u = stack.pop()
        for w in pag.neighbours(u):
            if w not in seen and not pag.is_f(w) and _potentially_directed(pag, u, w):
                seen.add(w)
                stack.append(w)
    return seen - {source}


def _definite_ancestors(pag: PAG, node: int) -> set[int]:
    """Nodes with a path of fully oriented ``->`` edges into ``node`` (node included)."""
    m = pag.marks
    seen, stack = {node}, [node]
    while stack:
        v = stack.pop()
        for u in pag.neighbours(v):
            if u not in seen and not pag.is_f(u) and m[u, v] == ARROW and m[v, u] == TAIL:
                seen.add(u)
                stack.append(u)
    return seen


def rule_f_unique_ancestor_target(pag: PAG) -> bool:
    """Rule F-anc (see the module docstring)."""
    changed = False
    for f, targets in pag.f_targets.items():
        reach = {x: _pd_reachable(pag, x) for x in targets}
        for y in pag.neighbours(f):
            if y in targets:
                continue
            candidates = [x for x in targets if y in reach[x]]
            if len(candidates) != 1:
                continue
            for z in _definite_ancestors(pag, candidates[0]):
                if z != y and pag.adjacent(z, y):
                    changed |= _set(pag, z, y, TAIL)
                    changed |= _set(pag, y, z, ARROW)
    return changed


def rule_f_unique_host_target(pag: PAG) -> bool:
    """Rule F-host (see the module docstring): the only target that can be ``X -> Y`` is oriented so."""
    m, changed = pag.marks, False
    for f, targets in pag.f_targets.items():
        for y in pag.neighbours(f):
            if y in targets:
                continue
            hosts = [x for x in targets if m[x, y] and m[y, x] != ARROW and m[x, y] != TAIL]
            if len(hosts) == 1:
                changed |= _set(pag, hosts[0], y, TAIL)
                changed |= _set(pag, y, hosts[0], ARROW)
    return changed


NEW_RULES: tuple[Rule, ...] = (rule_f_unique_host_target, rule_f_unique_ancestor_target)


def apply_new_rules(pag: PAG) -> PAG:
    """Interleave the new rules with Zhang's FCI rules and I-FCI's F-rules on a copy of ``pag``."""
    from icml26.causal.ifci_completion.ifci import IFCI_RULES
    from icml26.causal.ifci_completion.orientation import orient

    return orient(pag.copy(), extra_rules=(*IFCI_RULES, *NEW_RULES), skip_r0=True)
