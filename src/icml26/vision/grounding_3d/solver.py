"""A rule-based solver for the benchmark's utterances: it checks the generator, it is not part of any model.

It reads the utterance (:func:`.vocab.parse`), takes every object of the target class as a candidate and keeps
those that satisfy the relation, with these rules (metres and degrees; boxes are centre + size):

- view: offset of the candidate's centre from the anchor's, in the viewer's frame (right, forward), at angle
  phi = atan2(forward, right): right 0, behind 90, left 180, front -90. A candidate satisfies the word if phi is
  within 45 of its sector's centre; the answer is unambiguous if the referent is within 30 of it and every other
  candidate at least 60 away (no candidate near a sector's border);
- distance: 3D centre distance; the gap between the best and the second best candidate must be >= 0.25 m;
- between: in the xy plane, lambda = projection on the anchor-anchor segment (0 at the first anchor, 1 at the
  second) and the perpendicular distance; satisfied with lambda in [0.25, 0.75] and distance <= 0.25 L; no other
  candidate may lie in the loose region lambda in [0, 1], distance <= 0.5 L;
- vertical: "on": the candidate's bottom within 3 cm of the anchor's top and its centre above the anchor's
  footprint; "under": its top below the anchor's top by > 2 cm, its centre inside the anchor's footprint;
- size: box volume; the biggest (smallest) must exceed (stay below) the runner-up by a factor 1.2;
- colour: the candidates of that colour.

Anchors must be the only objects of their class. An answer is ``unambiguous`` if exactly one candidate satisfies
the relation with the margins above.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from icml26.vision.grounding_3d.vocab import SECTOR_ANGLE, VIEWPOINTS, parse


@dataclass(frozen=True)
class Solution:
    """The referent (or None), every candidate satisfying the relation, and whether the answer is unambiguous."""

    referent: int | None
    satisfying: tuple[int, ...]
    candidates: tuple[int, ...]
    unambiguous: bool
    reason: str = ""


def _angle_gap(a: np.ndarray, b: float) -> np.ndarray:
    return np.abs((a - b + 180.0) % 360.0 - 180.0)


def solve(classes: Sequence[str], colours: Sequence[str], boxes: np.ndarray, text: str) -> Solution:
    """The referent of ``text`` in a scene given by per-object classes, colours and boxes [N, 6]."""
    p = parse(text)
    boxes = np.asarray(boxes, float)
    cand = np.array([i for i, c in enumerate(classes) if c == p.target_class], dtype=int)
    anchors = []
    for name in p.anchors:
        idx = [i for i, c in enumerate(classes) if c == name]
        if len(idx) != 1:
            return Solution(None, (), tuple(cand), False, f"anchor class {name!r} occurs {len(idx)} times")
        anchors.append(idx[0])
    if cand.size == 0:
        return Solution(None, (), (), False, "no candidate")
    centre, size = boxes[cand, :3], boxes[cand, 3:]
    if p.family == "view":
        f = np.array(VIEWPOINTS[p.viewpoint])
        r = np.array([f[1], -f[0]])
        delta = centre[:, :2] - boxes[anchors[0], :2]
        gap = _angle_gap(np.degrees(np.arctan2(delta @ f, delta @ r)), SECTOR_ANGLE[p.word])
        sat = gap <= 45.0
        ok = sat.sum() == 1 and gap[sat].max() <= 30.0 and np.all(gap[~sat] >= 60.0)
    elif p.family == "distance":
        dist = np.linalg.norm(centre - boxes[anchors[0], :3], axis=1)
        score = dist if p.word == "closest" else -dist
        order = np.argsort(score)
        sat = np.zeros(cand.size, bool)
        sat[order[0]] = True
        ok = cand.size == 1 or score[order[1]] - score[order[0]] >= 0.25
    elif p.family == "between":
        p1, p2 = boxes[anchors[0], :2], boxes[anchors[1], :2]
        axis = p2 - p1
        length = float(np.linalg.norm(axis))
        rel = centre[:, :2] - p1
        lam = rel @ axis / length**2
        perp = np.abs(rel @ np.array([-axis[1], axis[0]])) / length
        sat = (lam >= 0.25) & (lam <= 0.75) & (perp <= 0.25 * length)
        loose = (lam >= 0.0) & (lam <= 1.0) & (perp <= 0.5 * length)
        ok = sat.sum() == 1 and loose.sum() == 1
    elif p.family == "vertical":
        a_c, a_s = boxes[anchors[0], :3], boxes[anchors[0], 3:]
        inside = np.all(np.abs(centre[:, :2] - a_c[:2]) <= a_s[:2] / 2, axis=1)
        a_top = a_c[2] + a_s[2] / 2
        bottom, top = centre[:, 2] - size[:, 2] / 2, centre[:, 2] + size[:, 2] / 2
        on = inside & (np.abs(bottom - a_top) <= 0.03)
        sat = on if p.word == "on" else inside & ~on & (top < a_top - 0.02)
        ok = sat.sum() == 1
    elif p.family == "size":
        vol = np.prod(size, axis=1)
        score = vol if p.word == "biggest" else 1.0 / vol
        order = np.argsort(-score)
        sat = np.zeros(cand.size, bool)
        sat[order[0]] = True
        ok = cand.size == 1 or score[order[0]] >= 1.2 * score[order[1]]
    else:  # colour
        sat = np.array([colours[i] == p.word for i in cand])
        ok = sat.sum() == 1
    satisfying = tuple(int(i) for i in cand[sat])
    referent = satisfying[0] if ok and len(satisfying) == 1 else None
    reason = "" if referent is not None else f"{len(satisfying)} candidate(s) satisfy {p.word!r} or a margin fails"
    return Solution(referent, satisfying, tuple(int(i) for i in cand), referent is not None, reason)
