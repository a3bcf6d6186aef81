"""Zhang's FCI orientation rules R0-R4 and R8-R10 (no selection bias), on a :class:`~.pag.PAG` in place.

Marks follow the pcalg convention: ``m[a, b]`` is the mark *at b* on ``a *-* b``. Reading aid for each rule:
``a *-> b`` is ``m[a, b] == ARROW``; ``a -> b`` adds ``m[b, a] == TAIL``; ``a o-* b`` is ``m[b, a] == CIRCLE``.

1. **R0** (unshielded colliders): ``a *-* b *-* c``, ``a, c`` non-adjacent, ``b`` not in ``sepset(a, c)``:
   ``a *-> b <-* c``.
2. **R1**: ``a *-> b o-* c``, ``a, c`` non-adjacent: ``b -> c``.
3. **R2**: ``a -> b *-> c`` or ``a *-> b -> c``, and ``a *-o c``: ``a *-> c``.
4. **R3**: ``a *-> b <-* c``, ``a *-o d o-* c``, ``a, c`` non-adjacent, ``d *-o b``: ``d *-> b``.
5. **R4** (discriminating path ``<d, ..., a, b, c>`` for ``b``, with ``b o-* c``): if ``b`` is in
   ``sepset(d, c)``, ``b -> c``; otherwise ``a <-> b <-> c``.
6. **R8**: ``a -> b -> c`` or ``a -o b -> c``, and ``a o-> c``: ``a -> c``.
7. **R9**: ``a o-> c`` and an uncovered potentially directed path ``<a, b, ..., c>`` with ``b, c``
   non-adjacent: ``a -> c``.
8. **R10**: ``a o-> c``, ``b -> c <- d``, uncovered p.d. paths from ``a`` to ``b`` and to ``d`` whose second
   nodes ``mu != omega`` are non-adjacent: ``a -> c``.

R5-R7 concern selection bias (undirected edges) and are not needed here. ``extra_rules`` (e.g. the F-node
rules of I-FCI) are interleaved with these until nothing changes: causal-learn applies background knowledge only
once, up front, which loses orientations that become available later.

Reference: J. Zhang, "On the completeness of orientation rules for causal discovery in the presence of latent
confounders and selection bias", Artificial Intelligence 172, 2008.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np

from icml26.causal.ifci_completion.pag import ARROW, CIRCLE, PAG, TAIL

Rule = Callable[[PAG], bool]


def _set(pag: PAG, at: int, other: int, mark: int) -> bool:
    """Set the mark at ``at`` on the edge ``other *-* at``; True iff it changed (only circles are ever changed)."""
    if pag.marks[other, at] != mark:
        if pag.marks[other, at] != CIRCLE:
            if pag.conflicts == "keep":
                return False  # finite samples: keep the first orientation (unfaithful test results)
            raise RuntimeError(
                f"rule conflict: tried to change a non-circle mark at {pag.names[at]} on the edge with "
                f"{pag.names[other]} (the independences are not faithful to any MAG)"
            )
        pag.marks[other, at] = mark
        return True
    return False


def orient_unshielded_colliders(pag: PAG) -> bool:
    """R0 (needs ``pag.sepsets`` for every non-adjacent pair it meets)."""
    m, changed = pag.marks, False
    for b in range(pag.n):
        nb = pag.neighbours(b)
        for i, a in enumerate(nb):
            for c in nb[i + 1 :]:
                if m[a, c]:
                    continue
                sep = pag.sepset(a, c)
                if sep is None:
                    raise ValueError(f"no sepset recorded for non-adjacent {pag.names[a]}, {pag.names[c]}")
                if b not in sep:
                    changed |= _set(pag, b, a, ARROW)
                    changed |= _set(pag, b, c, ARROW)
    return changed


def rule1(pag: PAG) -> bool:
    m, changed = pag.marks, False
    for b in range(pag.n):
        for a in pag.neighbours(b):
            if m[a, b] != ARROW:
                continue
            for c in pag.neighbours(b):
                if c != a and m[c, b] == CIRCLE and not m[a, c]:
                    changed |= _set(pag, b, c, TAIL)
                    changed |= _set(pag, c, b, ARROW)
    return changed


def rule2(pag: PAG) -> bool:
    m, changed = pag.marks, False
    for a in range(pag.n):
        for c in pag.neighbours(a):
            if m[a, c] != CIRCLE:
                continue
            for b in pag.neighbours(a):
                if b == c or not m[b, c]:
                    continue
                first = m[a, b] == ARROW and m[b, a] == TAIL and m[b, c] == ARROW
                second = m[a, b] == ARROW and m[b, c] == ARROW and m[c, b] == TAIL
                if first or second:
                    changed |= _set(pag, c, a, ARROW)
                    break
    return changed


def rule3(pag: PAG) -> bool:
    m, changed = pag.marks, False
    for b in range(pag.n):
        parents_into_b = [a for a in pag.neighbours(b) if m[a, b] == ARROW]
        for d in pag.neighbours(b):
            if m[d, b] != CIRCLE:
                continue
            for i, a in enumerate(parents_into_b):
                for c in parents_into_b[i + 1 :]:
                    if a == d or c == d or m[a, c]:
                        continue
                    if m[a, d] == CIRCLE and m[c, d] == CIRCLE:
                        changed |= _set(pag, b, d, ARROW)
    return changed


def _discriminating_paths(pag: PAG, b: int, c: int) -> Iterator[tuple[int, int]]:
    """Yield ``(d, a)`` for each discriminating path ``<d, ..., a, b, c>`` for ``b`` (BFS over colliders).

    Path nodes strictly between ``d`` and ``b`` are colliders on the path and parents of ``c``; ``d`` is not
    adjacent to ``c``.
    """
    m = pag.marks
    for a in pag.neighbours(b):
        # on the path, a is a collider (prev *-> a <-* b) and a parent of c (a -> c)
        if a == c or m[b, a] != ARROW or not (m[a, c] == ARROW and m[c, a] == TAIL):
            continue
        # BFS backwards from a through colliders that are parents of c.
        queue, seen = [a], {a, b, c}
        while queue:
            node = queue.pop(0)
            for prev in pag.neighbours(node):
                if prev in seen or m[prev, node] != ARROW:
                    continue
                if not m[prev, c]:
                    yield prev, a
                    continue
                if m[node, prev] == ARROW and m[prev, c] == ARROW and m[c, prev] == TAIL:
                    seen.add(prev)
                    queue.append(prev)


def rule4(pag: PAG) -> bool:
    m, changed = pag.marks, False
    for b in range(pag.n):
        for c in pag.neighbours(b):
            if m[c, b] != CIRCLE:
                continue
            for d, a in _discriminating_paths(pag, b, c):
                sep = pag.sepset(d, c)
                if sep is None:
                    raise ValueError(f"no sepset recorded for non-adjacent {pag.names[d]}, {pag.names[c]}")
                if b in sep:
                    changed |= _set(pag, b, c, TAIL)
                    changed |= _set(pag, c, b, ARROW)
                else:
                    changed |= _set(pag, a, b, ARROW)
                    changed |= _set(pag, b, a, ARROW)
                    changed |= _set(pag, b, c, ARROW)
                    changed |= _set(pag, c, b, ARROW)
                break
    return changed


def rule8(pag: PAG) -> bool:
    m, changed = pag.marks, False
    for a in range(pag.n):
        for c in pag.neighbours(a):
            if not (m[a, c] == ARROW and m[c, a] == CIRCLE):
                continue
            for b in pag.neighbours(a):
                if b == c or not (m[b, c] == ARROW and m[c, b] == TAIL):
                    continue
                if m[b, a] == TAIL and m[a, b] in (ARROW, CIRCLE):
                    changed |= _set(pag, a, c, TAIL)
                    break
    return changed


def _potentially_directed(pag: PAG, u: int, w: int) -> bool:
    """Edge ``u *-* w`` can be oriented ``u -> w``: no arrowhead at u, no tail at w."""
    return pag.marks[w, u] != ARROW and pag.marks[u, w] != TAIL


def uncovered_pd_paths(pag: PAG, start: int, end: int, forbidden: Iterable[int] = ()) -> Iterator[list[int]]:
    """Every uncovered potentially directed path from ``start`` to ``end`` (DFS; small graphs)."""
    m = pag.marks
    banned = set(forbidden)

    def extend(path: list[int]) -> Iterator[list[int]]:
        last = path[-1]
        for nxt in pag.neighbours(last):
            if nxt in path or nxt in banned or not _potentially_directed(pag, last, nxt):
                continue
            if len(path) >= 2 and m[path[-2], nxt]:
                continue  # covered triple
            if nxt == end:
                yield [*path, nxt]
            else:
                yield from extend([*path, nxt])

    yield from extend([start])


def rule9(pag: PAG) -> bool:
    m, changed = pag.marks, False
    for a in range(pag.n):
        for c in pag.neighbours(a):
            if not (m[a, c] == ARROW and m[c, a] == CIRCLE):
                continue
            for b in pag.neighbours(a):
                if b == c or m[b, c] or not _potentially_directed(pag, a, b):
                    continue
                # the path <a, b, theta, ..., c> must be uncovered at its first triple too: a, theta non-adjacent
                if any(not m[a, p[1]] for p in uncovered_pd_paths(pag, b, c, forbidden=[a])):
                    changed |= _set(pag, a, c, TAIL)
                    break
    return changed


def rule10(pag: PAG) -> bool:
    m, changed = pag.marks, False
    for c in range(pag.n):
        into_c = [b for b in pag.neighbours(c) if m[b, c] == ARROW and m[c, b] == TAIL]
        if len(into_c) < 2:
            continue
        for a in pag.neighbours(c):
            if not (m[a, c] == ARROW and m[c, a] == CIRCLE):
                continue
            firsts: dict[int, set[int]] = {}
            for b in into_c:
                if b == a:
                    continue
                starts = set()
                for mu in pag.neighbours(a):
                    if mu == c or not _potentially_directed(pag, a, mu):
                        continue
                    if mu == b or any(
                        not (len(p) > 1 and m[a, p[1]]) for p in uncovered_pd_paths(pag, mu, b, forbidden=[a])
                    ):
                        starts.add(mu)
                firsts[b] = starts
            done = False
            for i, b in enumerate(firsts):
                for d in list(firsts)[i + 1 :]:
                    if any(mu != om and not m[mu, om] for mu in firsts[b] for om in firsts[d]):
                        changed |= _set(pag, a, c, TAIL)
                        done = True
                        break
                if done:
                    break
    return changed


FCI_RULES: tuple[Rule, ...] = (rule1, rule2, rule3, rule4, rule8, rule9, rule10)


def orient(pag: PAG, extra_rules: Iterable[Rule] = (), skip_r0: bool = False) -> PAG:
    """R0 once, then ``extra_rules`` and R1-R4, R8-R10 interleaved until a fixed point. Mutates and returns."""
    extra = tuple(extra_rules)
    with pag.frozen_adjacency():  # rules change marks, never edges
        if not skip_r0:
            orient_unshielded_colliders(pag)
        changed = True
        while changed:
            changed = False
            for rule in (*extra, *FCI_RULES):
                changed |= bool(rule(pag))
    return pag


def circles_mask(pag: PAG) -> np.ndarray:
    return pag.marks == CIRCLE
