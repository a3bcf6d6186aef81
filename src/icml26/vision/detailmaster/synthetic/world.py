"""Procedural scenes: random scene graphs with boxes placed so that every stated fact is true in the pixels.

:class:`SceneSampler` draws 2-5 distinct characters (attributes, one of the nine regions each), places their
glyphs by sequential rejection sampling (inside the image, apart from one another, and labelled with their region
by the official rule on the detector-style padded box, robustly to a few pixels of box error), then reads the true
spatial relations off the geometry (with margins, so that a judge measuring boxes to a few pixels agrees) and adds
tethers for ``interacting with``. :func:`place` is also what the simulated generators use to lay out what a prompt
asks for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from icml26.vision.detailmaster.regions import REGION_NAMES, REGIONS
from icml26.vision.detailmaster.schema import (
    ATTRIBUTES,
    BACKGROUNDS,
    CLASSES,
    LIGHTS,
    STYLES,
    Character,
    Relation,
    Scene,
    character_class,
)
from icml26.vision.detailmaster.synthetic.render import DEFAULTS, glyph_box

__all__ = ["SceneSampler", "box_gap", "margin_px", "pad", "place", "relation_holds"]

Box = tuple[float, float, float, float]
NAMES: tuple[str, ...] = tuple(n for names in CLASSES.values() for n in names)
LEFT_GAP = 0.03  # a true "left of"/"above": this share of the width between the boxes
NEXT_TO = 0.10  # a true "next to": boxes at most this share of the width apart
JUDGE_NEXT_TO = 0.13  # what the judge calls "next to" (between the two, a slack for box error)


def margin_px(width: int) -> float:
    """The padding a detector-style box puts around the glyph (and the room the evaluator's 5-px red box needs)."""
    return round(0.025 * width)


def pad(box: Sequence[float], m: float) -> Box:
    return (box[0] - m, box[1] - m, box[2] + m, box[3] + m)


def box_gap(a: Sequence[float], b: Sequence[float]) -> float:
    """Chebyshev gap between two boxes (0 if they touch or overlap)."""
    dx = max(b[0] - a[2], a[0] - b[2], 0.0)
    dy = max(b[1] - a[3], a[1] - b[3], 0.0)
    return max(dx, dy)


def relation_holds(predicate: str, a: Sequence[float], b: Sequence[float], width: int, strict: bool = True) -> bool:
    """Whether glyph box ``a`` stands in ``predicate`` to ``b`` (geometric predicates only).

    ``strict`` is the generator's rule (with margins); the judge uses ``strict=False`` (the midpoint rules)."""
    gap = LEFT_GAP * width if strict else 0.0
    if predicate == "left of":
        return a[2] + gap <= b[0]
    if predicate == "above":
        return a[3] + gap <= b[1]
    if predicate == "next to":
        return box_gap(a, b) <= (NEXT_TO if strict else JUDGE_NEXT_TO) * width
    raise ValueError(f"{predicate!r} is not a geometric predicate")


def _labels_ok(boxes: np.ndarray, region: str | None, width: int) -> np.ndarray:
    """Whether each candidate box [k, 4] gets ``region`` by the official rule on its padded box, for paddings
    within 3 px of the detector's (vectorised :func:`bbox_to_region`)."""
    if region is None:
        return np.ones(len(boxes), dtype=bool)
    regions = np.array(list(REGIONS.values()))
    target = REGION_NAMES.index(region)
    ok = np.ones(len(boxes), dtype=bool)
    for d in (-3, 0, 3):
        b = (boxes + np.array([-1, -1, 1, 1]) * (margin_px(width) + d)) / width
        area = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
        w = np.minimum(b[:, None, 2], regions[:, 2]) - np.maximum(b[:, None, 0], regions[:, 0])
        h = np.minimum(b[:, None, 3], regions[:, 3]) - np.maximum(b[:, None, 1], regions[:, 1])
        occ = np.where((w >= 0) & (h >= 0), w * h, 0.0) / area[:, None]
        ok &= (occ.argmax(1) == target) & (occ.max(1) > 0.75)
    return ok


def _holds(predicate: str, a: np.ndarray, b: np.ndarray, width: int) -> np.ndarray:
    """:func:`relation_holds` (strict) for arrays of boxes [k, 4]."""
    if predicate == "left of":
        return a[:, 2] + LEFT_GAP * width <= b[:, 0]
    if predicate == "above":
        return a[:, 3] + LEFT_GAP * width <= b[:, 1]
    dx = np.maximum(np.maximum(b[:, 0] - a[:, 2], a[:, 0] - b[:, 2]), 0.0)
    dy = np.maximum(np.maximum(b[:, 1] - a[:, 3], a[:, 1] - b[:, 3]), 0.0)
    return np.maximum(dx, dy) <= NEXT_TO * width


def place(
    characters: Sequence[Character],
    relations: Sequence[Relation],
    rng: np.random.Generator,
    width: int,
    tries: int = 64,
    restarts: int = 20,
) -> tuple[dict[str, Box], int]:
    """Boxes for ``characters`` (at their region, if any) satisfying the geometric ``relations``.

    Each character in turn draws ``tries`` candidate centres (in its region; half of them beside a placed
    ``next to`` partner) and takes the first that breaks no constraint with the characters already placed.
    Returns the boxes and the number of constraints left unsatisfied (0 unless sampling gave up after
    ``restarts``: then the layout with the fewest violations is returned)."""
    m = margin_px(width)
    edge = m + 2
    best: tuple[dict[str, Box], int] | None = None
    for _ in range(restarts):
        boxes: dict[str, Box] = {}
        violations = 0
        for c in characters:
            size = c.attributes.get("size", DEFAULTS["size"])
            w0 = glyph_box(c.name, size, 0, 0, width)
            half_w, half_h = w0[2], w0[3]
            lo_x, hi_x, lo_y, hi_y = edge + half_w, width - edge - half_w, edge + half_h, width - edge - half_h
            if c.position is not None:
                r = np.array(REGIONS[c.position]) * width
                lo_x, hi_x = max(lo_x, r[0] + half_w), min(hi_x, r[2] - half_w)
                lo_y, hi_y = max(lo_y, r[1] + half_h), min(hi_y, r[3] - half_h)
            if lo_x > hi_x or lo_y > hi_y:  # the glyph does not fit its region: best effort at its centre
                lo_x = hi_x = (lo_x + hi_x) / 2
                lo_y = hi_y = (lo_y + hi_y) / 2
            cx, cy = rng.uniform(lo_x, hi_x, tries), rng.uniform(lo_y, hi_y, tries)
            partner = [
                r
                for r in relations
                if c.name in (r.subject, r.object) and ({r.subject, r.object} - {c.name}) <= set(boxes)
            ]
            near = [r for r in partner if r.predicate == "next to"]
            if near:  # half the candidates beside the partner, at a gap a "next to" allows
                r = near[0]
                o = boxes[r.object if r.subject == c.name else r.subject]
                k = tries // 2
                side = rng.integers(4, size=k)
                g = rng.uniform(2 * m + 4, NEXT_TO * width, k)
                ox, oy = (
                    (o[0] + o[2]) / 2 + rng.uniform(-half_w, half_w, k),
                    (o[1] + o[3]) / 2 + rng.uniform(-half_h, half_h, k),
                )
                cx[:k] = np.select([side == 0, side == 1], [o[2] + g + half_w, o[0] - g - half_w], ox)
                cy[:k] = np.select([side == 2, side == 3], [o[3] + g + half_h, o[1] - g - half_h], oy)
            cand = np.stack([cx - half_w, cy - half_h, cx + half_w, cy + half_h], 1)
            bad = (~_labels_ok(cand, c.position, width)).astype(int)
            bad += 100 * (
                (cand[:, 0] < edge) | (cand[:, 1] < edge) | (cand[:, 2] > width - edge) | (cand[:, 3] > width - edge)
            )
            for b in boxes.values():
                pb = np.array(pad(b, m + 2))
                pc = cand + np.array([-1, -1, 1, 1]) * (m + 2)
                bad += (pc[:, 0] < pb[2]) & (pb[0] < pc[:, 2]) & (pc[:, 1] < pb[3]) & (pb[1] < pc[:, 3])
            for r in partner:
                if r.predicate == "interacting with":
                    continue
                # a relation outweighs a region: a layout keeps what the prompt relates when the two conflict
                if r.subject == c.name:
                    bad += 2 * ~_holds(r.predicate, cand, np.array([boxes[r.object]]), width)
                else:
                    bad += 2 * ~_holds(r.predicate, np.array([boxes[r.subject]]), cand, width)
            k = int(np.argmin(bad))  # the first candidate with the fewest violations
            boxes[c.name] = tuple(float(v) for v in cand[k])  # type: ignore[assignment]
            violations += int(bad[k])
        if best is None or violations < best[1]:
            best = (boxes, violations)
        if violations == 0:
            break
    assert best is not None
    return best


class SceneSampler:
    """Random ground-truth scenes of the procedural world (see the module docstring).

    ``characters``: the (min, max) number of characters; ``max_relations``: at most this many relations (each
    pair at most once), of which ``interacting with`` (a drawn tether) is one with probability ``p_interact``.
    """

    def __init__(
        self, size: int = 256, characters: tuple[int, int] = (2, 5), max_relations: int = 3, p_interact: float = 0.3
    ) -> None:
        lo, hi = characters
        if not 1 <= lo <= hi <= len(NAMES):
            raise ValueError(f"characters must be 1 <= min <= max <= {len(NAMES)}, got {characters}")
        self.size, self.characters, self.max_relations, self.p_interact = size, (lo, hi), max_relations, p_interact

    def sample(self, rng: np.random.Generator) -> Scene:
        n = int(rng.integers(self.characters[0], self.characters[1] + 1))
        for _ in range(50):
            names = [NAMES[i] for i in rng.choice(len(NAMES), size=n, replace=False)]
            chars = [
                Character(
                    name,
                    character_class(name),
                    {k: str(v[rng.integers(len(v))]) for k, v in ATTRIBUTES.items()},
                    REGION_NAMES[rng.integers(len(REGION_NAMES))],
                )
                for name in names
            ]
            boxes, bad = place(chars, (), rng, self.size, restarts=3)
            if bad == 0:
                break
        else:
            raise RuntimeError("could not place a scene in 50 attempts (image too small?)")
        chars = [replace(c, box=boxes[c.name]) for c in chars]
        attrs = {
            "background": str(BACKGROUNDS[rng.integers(len(BACKGROUNDS))]),
            "light": str(LIGHTS[rng.integers(len(LIGHTS))]),
            "style": str(STYLES[rng.integers(len(STYLES))]),
        }
        return Scene(tuple(chars), attrs, self._relations(chars, rng))

    def _tether_blocked(self, a: Character, b: Character, chars: list[Character]) -> bool:
        """Whether a tether between ``a`` and ``b`` would run under a third character (hidden: ambiguous)."""
        assert a.box is not None and b.box is not None
        t = np.linspace(0, 1, 50)[:, None]
        ca = np.array([(a.box[0] + a.box[2]) / 2, (a.box[1] + a.box[3]) / 2])
        cb = np.array([(b.box[0] + b.box[2]) / 2, (b.box[1] + b.box[3]) / 2])
        pts = ca + t * (cb - ca)
        m = margin_px(self.size)
        for c in chars:
            if c.name in (a.name, b.name) or c.box is None:
                continue
            x0, y0, x1, y1 = pad(c.box, m)
            if np.any((pts[:, 0] > x0) & (pts[:, 0] < x1) & (pts[:, 1] > y0) & (pts[:, 1] < y1)):
                return True
        return False

    def _relations(self, chars: list[Character], rng: np.random.Generator) -> tuple[Relation, ...]:
        pairs = [(a, b) for i, a in enumerate(chars) for b in chars[i + 1 :]]
        rels: list[Relation] = []
        for k in rng.permutation(len(pairs)):
            if len(rels) >= self.max_relations:
                break
            a, b = pairs[k]
            if rng.random() < 0.5:
                a, b = b, a
            if rng.random() < self.p_interact and not self._tether_blocked(a, b, chars):
                rels.append(Relation(a.name, "interacting with", b.name))
                continue
            true = [
                p
                for p in ("left of", "above", "next to")
                if relation_holds(p, a.box, b.box, self.size)  # type: ignore[arg-type]
            ]
            if not true:  # the reverse may hold ("b left of a")
                a, b = b, a
                true = [p for p in ("left of", "above") if relation_holds(p, a.box, b.box, self.size)]  # type: ignore[arg-type]
            if true:
                rels.append(Relation(a.name, str(true[rng.integers(len(true))]), b.name))
        return tuple(rels)
