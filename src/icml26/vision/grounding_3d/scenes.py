"""Procedural rooms of furniture built from parametric parts, and referring expressions unique by construction.

A room is ``W x D`` metres (x = east, y = north, z = up). Every object is one of eight classes, built from
axis-aligned cuboid parts (a table is a top and four legs, a chair a seat, a back and legs...), turned by a multiple
of 90 degrees (so its box stays axis-aligned and IoU is exact), coloured from an eight-colour palette and sampled as
``points_per_object`` surface points with RGB. Floor objects never overlap; boxes and bins may stand on tables and
cabinets, or under tables.

Each scene is built around one relation family (:mod:`.vocab`): the target class has at least two same-class
distractors, the anchors are the only objects of their class, and every placement keeps a margin from the solver's
decision boundaries (:mod:`.solver`), so that the expression has exactly one referent. The generator never calls the
solver: the tests check that the solver, written separately from these rules, finds the generator's target.
View and vertical scenes carry both words of a minimal pair (left/right or front/behind; on/under): the same scene,
two expressions, two different targets. :func:`mirror_probe` builds the left/right probe: scenes that are
symmetric under the point reflection about the anchor, where a pair code that is even in the offset must tie.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from icml26.vision.grounding_3d.vocab import (
    CLASSES,
    COLOURS,
    FAMILIES,
    PARTNER,
    SECTOR_ANGLE,
    VIEWPOINTS,
    Parsed,
    utterance,
)

# Class -> (w range, d range, h range) in metres, before the 90-degree turn.
SIZES: dict[str, tuple[tuple[float, float], tuple[float, float], tuple[float, float]]] = {
    "table": ((1.0, 1.6), (0.6, 0.9), (0.70, 0.80)),
    "chair": ((0.42, 0.55), (0.42, 0.55), (0.80, 1.00)),
    "cabinet": ((0.5, 1.0), (0.4, 0.6), (0.80, 1.30)),
    "sofa": ((1.6, 2.1), (0.8, 1.0), (0.70, 0.90)),
    "lamp": ((0.30, 0.45), (0.30, 0.45), (1.30, 1.70)),
    "box": ((0.25, 0.45), (0.25, 0.45), (0.25, 0.45)),
    "bin": ((0.28, 0.40), (0.28, 0.40), (0.35, 0.55)),
    "shelf": ((0.8, 1.2), (0.30, 0.40), (1.40, 1.90)),
}
_SIZE_RANGES = {c: (np.array([r[0] for r in v]), np.array([r[1] for r in v])) for c, v in SIZES.items()}
TARGET_CLASSES = ("table", "chair", "cabinet", "lamp", "box", "bin")  # classes that come three or four at a time
_COLOUR_NAMES = tuple(COLOURS)
SMALL = ("box", "bin")  # what stands on or under furniture
GAP = 0.08  # free space between floor footprints
TOP = 0.05  # table top thickness
# Family weights for scenes, so that expressions are balanced: view and vertical scenes carry two expressions.
SCENE_WEIGHTS = {"view": 0.5, "distance": 1.0, "between": 1.0, "vertical": 0.5, "size": 1.0, "colour": 1.0}


def _parts(cls: str, w: float, d: float, h: float) -> np.ndarray:
    """Cuboid parts [K, 6] (centre xyz, size xyz) in the object's frame, floor at z = 0, centred in x and y."""
    leg = 0.05
    if cls == "table":
        lx, ly = w / 2 - leg / 2, d / 2 - leg / 2
        legs = [(sx * lx, sy * ly, (h - TOP) / 2, leg, leg, h - TOP) for sx in (-1, 1) for sy in (-1, 1)]
        return np.array([(0, 0, h - TOP / 2, w, d, TOP), *legs])
    if cls == "chair":
        seat = 0.45
        lx, ly = w / 2 - 0.02, d / 2 - 0.02
        legs = [(sx * lx, sy * ly, seat / 2, 0.04, 0.04, seat) for sx in (-1, 1) for sy in (-1, 1)]
        return np.array(
            [(0, 0, seat + 0.025, w, d, 0.05), (0, d / 2 - 0.025, (seat + h) / 2, w, 0.05, h - seat), *legs]
        )
    if cls == "sofa":
        base = 0.42
        return np.array(
            [
                (0, 0, base / 2, w, d, base),
                (0, d / 2 - 0.1, (base + h) / 2, w, 0.2, h - base),
                (-w / 2 + 0.09, 0, base + 0.1, 0.18, d, 0.2),
                (w / 2 - 0.09, 0, base + 0.1, 0.18, d, 0.2),
            ]
        )
    if cls == "lamp":
        shade = 0.3
        return np.array(
            [
                (0, 0, 0.02, 0.6 * w, 0.6 * d, 0.04),
                (0, 0, (h - shade) / 2, 0.04, 0.04, h - shade),
                (0, 0, h - shade / 2, w, d, shade),
            ]
        )
    if cls == "shelf":
        boards = [(0, 0, z, w - 0.04, d, 0.03) for z in np.linspace(0.1, h - 0.015, 4)]
        sides = [(sx * (w / 2 - 0.01), 0, h / 2, 0.02, d, h) for sx in (-1, 1)]
        return np.array([*boards, *sides, (0, d / 2 - 0.01, h / 2, w, 0.02, h)])
    if cls == "bin":  # four walls and a bottom, open at the top
        t = 0.02
        walls = [(sx * (w / 2 - t / 2), 0, h / 2, t, d, h) for sx in (-1, 1)]
        walls += [(0, sy * (d / 2 - t / 2), h / 2, w, t, h) for sy in (-1, 1)]
        return np.array([*walls, (0, 0, t / 2, w, d, t)])
    return np.array([(0, 0, h / 2, w, d, h)])  # cabinet, box: one solid block


def _surface_points(parts: list[np.ndarray], n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` points uniform over each object's part faces (area-weighted), for every object at once: [M, n, 3]."""
    m = len(parts)
    faces = np.array([6 * len(p) for p in parts])
    allp = np.concatenate(parts)  # [K, 6]
    c, s = allp[:, :3], allp[:, 3:]
    # two faces normal to each axis per part, in the order (axis0-, axis0+, axis1-, ...); area = the other two sizes
    areas = np.repeat(np.stack([s[:, 1] * s[:, 2], s[:, 0] * s[:, 2], s[:, 0] * s[:, 1]], axis=1), 2, axis=1).ravel()
    owner = np.repeat(np.arange(m), faces)
    cum = np.cumsum(areas / np.bincount(owner, weights=areas)[owner])
    end = np.cumsum(faces) - 1
    cum -= np.concatenate([[0.0], cum[end[:-1]]])[owner]
    key = owner + cum  # object o's faces tile [o, o + 1]
    key[end] = np.arange(1, m + 1)
    u = (rng.random((m, n)) + np.arange(m)[:, None]).ravel()
    face = np.searchsorted(key, u, side="right")
    part, axis, side = face // 6, (face % 6) // 2, face % 2
    offset = rng.uniform(-0.5, 0.5, size=(m * n, 3)) * s[part]
    offset[np.arange(m * n), axis] = (side - 0.5) * s[part, axis]
    return (c[part] + offset).reshape(m, n, 3)


@dataclass
class ObjectSpec:
    """One object before placement: class, colour, turned size (w, d, h), its parts and quarter turns.

    Its surface points are drawn once the layout is final (``_local_points``); two placements of one spec (the
    mirror probe's copies) get the same points."""

    cls: str
    colour: str
    size: np.ndarray
    parts: np.ndarray
    turn: int
    half: np.ndarray = field(init=False)  # half footprint (x, y)

    def __post_init__(self) -> None:
        self.half = self.size[:2] / 2


def _local_points(specs: list[ObjectSpec], rng: np.random.Generator, n_points: int) -> np.ndarray:
    """[M, P, 6] for distinct specs: xyz relative to the box centre (turned), then RGB with shading and noise."""
    xyz = _surface_points([sp.parts for sp in specs], n_points, rng)
    height = np.array([sp.size[2] for sp in specs])
    xyz[..., 2] -= height[:, None] / 2  # centre the box vertically
    turn = np.array([sp.turn for sp in specs])
    cos, sin = np.round(np.cos(turn * np.pi / 2))[:, None], np.round(np.sin(turn * np.pi / 2))[:, None]
    x, y = xyz[..., 0].copy(), xyz[..., 1].copy()
    xyz[..., 0], xyz[..., 1] = cos * x - sin * y, sin * x + cos * y  # quarter turns: (x, y) -> (-y, x) each
    base = np.array([COLOURS[sp.colour] for sp in specs])[:, None, :]
    shade = rng.uniform(0.85, 1.0, size=(len(specs), n_points, 1))
    rgb = np.clip(base * shade + rng.normal(0, 0.03, size=(len(specs), n_points, 3)), 0, 1)
    return np.concatenate([xyz, rgb], axis=-1)


def make_object(
    cls: str,
    rng: np.random.Generator,
    *,
    colour: str | None = None,
    base: np.ndarray | None = None,
    scale: float = 1.0,
    height: float | None = None,
) -> ObjectSpec:
    """Sample a class instance: size from the class ranges (or ``base``), times ``scale``, a random quarter turn."""
    size = rng.uniform(*_SIZE_RANGES[cls]) if base is None else np.array(base, float)
    size = size * scale
    if height is not None:
        size[2] = height
    parts = _parts(cls, *size)
    turn = int(rng.integers(4))
    if turn % 2:
        size = size[[1, 0, 2]]
    return ObjectSpec(cls, colour or _COLOUR_NAMES[int(rng.integers(len(_COLOUR_NAMES)))], size, parts, turn)


@dataclass(frozen=True)
class Expression:
    """One referring expression on a scene: its text, the target's index, and what the breakdowns read."""

    text: str
    target: int
    family: str
    word: str
    anchors: tuple[int, ...]
    n_distractors: int  # same-class objects other than the target
    pair: int = -1  # index (in the scene's expression list) of the minimal-pair partner, -1 if none


@dataclass
class Scene:
    """A room: per-object class, colour, box (centre xyz, size xyz) and local points [N, P, 6]; expressions."""

    room: tuple[float, float]
    classes: list[str]
    colours: list[str]
    boxes: np.ndarray
    local_points: np.ndarray
    expressions: list[Expression] = field(default_factory=list)

    @property
    def n_objects(self) -> int:
        return len(self.classes)

    def world_points(self) -> np.ndarray:
        """Every object's points in room coordinates, [N, P, 6]."""
        pts = self.local_points.copy()
        pts[..., :3] += self.boxes[:, None, :3]
        return pts


class _PlacementFailed(Exception):
    """A layout that does not fit: the caller draws a new room."""


class _Layout:
    """Objects placed so far; floor footprints never overlap, stacked objects live on their support."""

    def __init__(self, room: tuple[float, float]) -> None:
        self.room = room
        self.specs: list[ObjectSpec] = []
        self.centres: list[np.ndarray] = []
        self._floor_xy = np.zeros((0, 2))  # centres and half sizes of the floor footprints
        self._floor_half = np.zeros((0, 2))

    def free(self, spec: ObjectSpec, xy: np.ndarray) -> bool:
        lo, hi = xy - spec.half, xy + spec.half
        if lo[0] < 0.05 or lo[1] < 0.05 or hi[0] > self.room[0] - 0.05 or hi[1] > self.room[1] - 0.05:
            return False
        clash = np.abs(self._floor_xy - xy) < self._floor_half + spec.half + GAP
        return not bool(np.any(clash[:, 0] & clash[:, 1]))

    def add(self, spec: ObjectSpec, xy: np.ndarray, bottom: float = 0.0, floor: bool = True) -> int:
        self.specs.append(spec)
        self.centres.append(np.array([xy[0], xy[1], bottom + spec.size[2] / 2]))
        if floor:
            self._floor_xy = np.vstack([self._floor_xy, xy[None]])
            self._floor_half = np.vstack([self._floor_half, spec.half[None]])
        return len(self.specs) - 1

    def place_near(self, spec: ObjectSpec, rng: np.random.Generator, propose, tries: int = 40) -> int:
        """Place at the first free position that ``propose(rng)`` draws; fail the layout after ``tries``."""
        for _ in range(tries):
            xy = np.asarray(propose(rng), float)
            if self.free(spec, xy):
                return self.add(spec, xy)
        raise _PlacementFailed

    def anywhere(self, rng: np.random.Generator):
        lo, hi = np.array([0.3, 0.3]), np.array(self.room) - 0.3
        return lambda r: lo + (hi - lo) * r.random(2)

    def scene(self, rng: np.random.Generator, expressions: list[Expression], n_points: int) -> Scene:
        """Shuffle the object order (no index shortcut) and return the scene with re-indexed expressions."""
        n = len(self.specs)
        order = rng.permutation(n)
        new_of = np.empty(n, dtype=int)
        new_of[order] = np.arange(n)
        specs = [self.specs[i] for i in order]
        boxes = np.array([np.concatenate([self.centres[i], self.specs[i].size]) for i in order])
        exprs = [
            Expression(
                e.text,
                int(new_of[e.target]),
                e.family,
                e.word,
                tuple(int(new_of[a]) for a in e.anchors),
                e.n_distractors,
                e.pair,
            )
            for e in expressions
        ]
        return Scene(
            self.room,
            [s.cls for s in specs],
            [s.colour for s in specs],
            boxes,
            _points_of(specs, rng, n_points),
            exprs,
        )


def _points_of(specs: list[ObjectSpec], rng: np.random.Generator, n_points: int) -> np.ndarray:
    """Local points per placed object; a spec placed twice gets the same points."""
    distinct: dict[int, int] = {}
    for sp in specs:
        distinct.setdefault(id(sp), len(distinct))
    unique = list({id(sp): sp for sp in specs}.values())
    return _local_points(unique, rng, n_points)[[distinct[id(sp)] for sp in specs]]


def _radius(*specs: ObjectSpec) -> float:
    """Half-diagonals of the footprints plus the gap: the least centre distance at which they cannot touch."""
    return float(sum(np.hypot(*s.half) for s in specs)) + GAP


def _polar(rng: np.random.Generator, lo: float, hi: float) -> np.ndarray:
    """A random direction in the xy plane times a length drawn in [lo, hi]."""
    phi = rng.uniform(0, 2 * np.pi)
    return rng.uniform(lo, hi) * np.array([np.cos(phi), np.sin(phi)])


def _frame(viewpoint: str) -> tuple[np.ndarray, np.ndarray]:
    """(right, forward) unit vectors in the room's xy plane for a viewer facing ``viewpoint``."""
    f = np.array(VIEWPOINTS[viewpoint])
    return np.array([f[1], -f[0]]), f


def _fill(layout: _Layout, rng: np.random.Generator, n_total: int, banned: set[str]) -> None:
    """Add objects of other classes anywhere free until ``n_total`` (fewer if the room is full)."""
    allowed = [c for c in CLASSES if c not in banned]
    for _ in range(max(0, n_total - len(layout.specs))):
        spec = make_object(str(rng.choice(allowed)), rng)
        try:
            layout.place_near(spec, rng, layout.anywhere(rng), tries=15)
        except _PlacementFailed:
            continue


def _two_classes(rng: np.random.Generator, target_pool=TARGET_CLASSES) -> tuple[str, str]:
    target = str(rng.choice(target_pool))
    anchor = str(rng.choice([c for c in CLASSES if c != target]))
    return target, anchor


def _centre_anchor(layout: _Layout, spec: ObjectSpec, rng: np.random.Generator, margin: float = 1.6) -> int:
    W, D = layout.room
    return layout.place_near(
        spec,
        rng,
        lambda r: r.uniform([min(margin, W / 2), min(margin, D / 2)], [max(W - margin, W / 2), max(D - margin, D / 2)]),
    )


# ------------------------------------------------------------------------------------------- families
def _view(layout: _Layout, rng: np.random.Generator) -> tuple[list[Expression], set[str]]:
    target_cls, anchor_cls = _two_classes(rng)
    viewpoint = str(rng.choice(list(VIEWPOINTS)))
    right, forward = _frame(viewpoint)
    word = str(rng.choice(["left", "front"]))
    pair = (word, PARTNER[word])
    others = [s for s in SECTOR_ANGLE if s not in pair]
    sectors = [*pair, *rng.choice(others, size=int(rng.integers(1, 3)), replace=False)]
    anchor = _centre_anchor(layout, make_object(anchor_cls, rng), rng)
    base = layout.centres[anchor][:2]
    by_sector = {}
    for sector in sectors:
        spec = make_object(target_cls, rng)
        r0 = _radius(layout.specs[anchor], spec)

        def propose(r, sector=sector, r0=r0):
            phi = np.deg2rad(SECTOR_ANGLE[sector] + r.uniform(-22.0, 22.0))  # the solver's boundary is at +-30
            rho = r0 + r.uniform(0.1, 1.0)
            return base + rho * (np.cos(phi) * right + np.sin(phi) * forward)

        by_sector[sector] = layout.place_near(spec, rng, propose)
    n_d = len(sectors) - 1
    exprs = [
        Expression(
            utterance(Parsed("view", w, target_cls, (anchor_cls,), viewpoint)),
            by_sector[w],
            "view",
            w,
            (anchor,),
            n_d,
            pair=1 - k,
        )
        for k, w in enumerate(pair)
    ]
    return exprs, {target_cls, anchor_cls}


def _distance(layout: _Layout, rng: np.random.Generator) -> tuple[list[Expression], set[str]]:
    target_cls, anchor_cls = _two_classes(rng)
    anchor = _centre_anchor(layout, make_object(anchor_cls, rng), rng, margin=1.2)
    base = layout.centres[anchor][:2]
    k = int(rng.integers(3, 5))
    specs = [make_object(target_cls, rng) for _ in range(k)]
    rho = max(_radius(layout.specs[anchor], s) for s in specs) + rng.uniform(0, 0.3)
    placed = []
    for spec in specs:
        placed.append(layout.place_near(spec, rng, lambda r, rho=rho: base + _polar(r, rho, rho), tries=60))
        rho += rng.uniform(0.45, 0.75)  # xy gaps >= 0.45 m; the solver asks >= 0.25 m in 3D
    word = str(rng.choice(["closest", "farthest"]))
    target = placed[0] if word == "closest" else placed[-1]
    text = utterance(Parsed("distance", word, target_cls, (anchor_cls,)))
    return [Expression(text, target, "distance", word, (anchor,), k - 1)], {target_cls, anchor_cls}


def _between(layout: _Layout, rng: np.random.Generator) -> tuple[list[Expression], set[str]]:
    target_cls = str(rng.choice(TARGET_CLASSES))
    a1_cls, a2_cls = rng.choice([c for c in CLASSES if c != target_cls], size=2, replace=False)
    a1 = layout.place_near(make_object(str(a1_cls), rng), rng, layout.anywhere(rng))
    p1 = layout.centres[a1][:2]
    spec2 = make_object(str(a2_cls), rng)
    a2 = layout.place_near(spec2, rng, lambda r: p1 + _polar(r, 2.4, 3.6))
    p2 = layout.centres[a2][:2]
    axis = p2 - p1
    length = float(np.linalg.norm(axis))
    normal = np.array([-axis[1], axis[0]]) / length
    target = layout.place_near(
        make_object(target_cls, rng),
        rng,
        lambda r: p1 + r.uniform(0.4, 0.6) * axis + r.uniform(-0.08, 0.08) * length * normal,
    )

    # far from the segment: lambda outside [-0.1, 1.1] or |perp| > 0.6 L (the solver's loose region is inside)
    def outside(r):
        for _ in range(100):
            xy = r.uniform([0.3, 0.3], [layout.room[0] - 0.3, layout.room[1] - 0.3])
            lam = float((xy - p1) @ axis) / length**2
            perp = abs(float((xy - p1) @ normal))
            if lam < -0.1 or lam > 1.1 or perp > 0.6 * length:
                return xy
        return np.array([-1.0, -1.0])  # never free: counts as a failed try

    k = int(rng.integers(2, 4))
    for _ in range(k):
        layout.place_near(make_object(target_cls, rng), rng, outside)
    text = utterance(Parsed("between", "between", target_cls, (str(a1_cls), str(a2_cls))))
    return [Expression(text, target, "between", "between", (a1, a2), k)], {target_cls, str(a1_cls), str(a2_cls)}


def _small_on(layout: _Layout, support: int, spec: ObjectSpec, rng: np.random.Generator) -> int:
    """Stand ``spec`` on top of object ``support``, fully on its top face."""
    slack = layout.specs[support].half - spec.half
    if np.any(slack < 0):
        raise _PlacementFailed
    xy = layout.centres[support][:2] + rng.uniform(-slack, slack)
    top = layout.centres[support][2] + layout.specs[support].size[2] / 2
    return layout.add(spec, xy, bottom=top, floor=False)


def _vertical(layout: _Layout, rng: np.random.Generator) -> tuple[list[Expression], set[str]]:
    target_cls = str(rng.choice(SMALL))
    table = _centre_anchor(layout, make_object("table", rng), rng, margin=1.2)
    on = _small_on(layout, table, make_object(target_cls, rng), rng)
    # under: on the floor, inside the table's footprint between the legs, lower than the top's underside
    t_spec, t_xy = layout.specs[table], layout.centres[table][:2]
    clearance = t_spec.size[2] - TOP - 0.05
    spec = make_object(target_cls, rng)
    spec = make_object(target_cls, rng, base=spec.size, scale=min(1.0, clearance / spec.size[2]))
    slack = t_spec.half - 0.06 - spec.half
    if np.any(slack < 0):
        raise _PlacementFailed
    under = layout.add(spec, t_xy + rng.uniform(-slack, slack))  # inside the table's footprint, by design
    k = int(rng.integers(1, 3))
    for _ in range(k):
        spec = make_object(target_cls, rng)
        if rng.random() < 0.5:  # on a cabinet of its own, if its top is large enough
            cabinet = make_object("cabinet", rng)
            if np.all(cabinet.half >= spec.half):
                _small_on(layout, layout.place_near(cabinet, rng, layout.anywhere(rng)), spec, rng)
                continue
        layout.place_near(spec, rng, layout.anywhere(rng))
    exprs = [
        Expression(
            utterance(Parsed("vertical", w, target_cls, ("table",))), t, "vertical", w, (table,), k + 1, pair=1 - j
        )
        for j, (w, t) in enumerate((("on", on), ("under", under)))
    ]
    return exprs, {target_cls, "table"}


def _size(layout: _Layout, rng: np.random.Generator) -> tuple[list[Expression], set[str]]:
    target_cls = str(rng.choice(TARGET_CLASSES))
    k = int(rng.integers(3, 5))
    base = np.array([np.mean(r) for r in SIZES[target_cls]])
    scales = [rng.uniform(0.75, 0.85)]
    for _ in range(k - 1):
        scales.append(scales[-1] * rng.uniform(1.12, 1.2))  # volume ratios >= 1.40; the solver asks >= 1.2
    placed = [
        layout.place_near(make_object(target_cls, rng, base=base, scale=s), rng, layout.anywhere(rng)) for s in scales
    ]
    word = str(rng.choice(["biggest", "smallest"]))
    target = placed[-1] if word == "biggest" else placed[0]
    return [Expression(utterance(Parsed("size", word, target_cls)), target, "size", word, (), k - 1)], {target_cls}


def _colour(layout: _Layout, rng: np.random.Generator) -> tuple[list[Expression], set[str]]:
    target_cls = str(rng.choice(TARGET_CLASSES))
    k = int(rng.integers(3, 5))
    colour = str(rng.choice(list(COLOURS)))
    others = [c for c in COLOURS if c != colour]
    colours = [colour, *rng.choice(others, size=k - 1)]
    placed = [
        layout.place_near(make_object(target_cls, rng, colour=str(c)), rng, layout.anywhere(rng)) for c in colours
    ]
    return [Expression(utterance(Parsed("colour", colour, target_cls)), placed[0], "colour", colour, (), k - 1)], {
        target_cls
    }


BUILDERS = {
    "view": _view,
    "distance": _distance,
    "between": _between,
    "vertical": _vertical,
    "size": _size,
    "colour": _colour,
}


def generate_scene(
    rng: np.random.Generator,
    family: str | None = None,
    objects: tuple[int, int] = (8, 12),
    points_per_object: int = 64,
    max_tries: int = 200,
) -> Scene:
    """One room built around ``family`` (drawn by :data:`SCENE_WEIGHTS` if None), with its expression(s)."""
    if family is None:
        w = np.array([SCENE_WEIGHTS[f] for f in FAMILIES])
        family = str(rng.choice(FAMILIES, p=w / w.sum()))
    if family not in BUILDERS:
        raise ValueError(f"unknown relation family {family!r}; families are {FAMILIES}")
    lo, hi = objects
    if not (1 <= lo <= hi):
        raise ValueError(f"objects must be a range (lo, hi) with 1 <= lo <= hi, got {objects}")
    for _ in range(max_tries):
        layout = _Layout((float(rng.uniform(5.0, 8.0)), float(rng.uniform(5.0, 8.0))))
        try:
            exprs, used = BUILDERS[family](layout, rng)
        except _PlacementFailed:
            continue
        _fill(layout, rng, int(rng.integers(lo, hi + 1)), used)
        return layout.scene(rng, exprs, points_per_object)
    raise RuntimeError(f"could not lay out a {family!r} scene in {max_tries} tries")


# --------------------------------------------------------------------------------------------- probe
PROBE_CLASSES = ("table", "chair", "cabinet", "sofa")  # classes whose height range holds PROBE_HEIGHT
PROBE_HEIGHT = 0.8


def mirror_probe(
    rng: np.random.Generator, n_fillers: int = 2, points_per_object: int = 64, max_tries: int = 200
) -> Scene:
    """A left/right probe scene, symmetric under the point reflection through the anchor's centre.

    The anchor sits in the middle; the target class comes as two identical copies at ``c_a +- delta`` roughly along
    the viewer's right axis (and two more along the forward axis); fillers come as identical pairs at
    ``c_a +- delta_k``. Every centre is at the same height, so the reflection maps the scene onto itself with the
    left and right candidates exchanged: a model whose pair code is even in the offset scores them equally.
    Expressions: "left" and "right" (a minimal pair).
    """
    for _ in range(max_tries):
        layout = _Layout((float(rng.uniform(6.0, 8.0)), float(rng.uniform(6.0, 8.0))))
        target_cls, anchor_cls = rng.choice(PROBE_CLASSES, size=2, replace=False)
        viewpoint = str(rng.choice(list(VIEWPOINTS)))
        right, forward = _frame(viewpoint)
        a_spec = make_object(str(anchor_cls), rng, height=PROBE_HEIGHT)
        centre = np.array(layout.room) / 2
        anchor = layout.add(a_spec, centre)
        try:
            pairs = {}
            for axis_angle, classes in ((0.0, [target_cls]), (90.0, [target_cls]), *[(None, None)] * n_fillers):
                cls = (
                    str(classes[0])
                    if classes
                    else str(rng.choice([c for c in PROBE_CLASSES if c not in (target_cls, anchor_cls)]))
                )
                spec = make_object(cls, rng, height=PROBE_HEIGHT)
                r0 = _radius(a_spec, spec)
                for _attempt in range(40):
                    angle = rng.uniform(0, 360) if axis_angle is None else axis_angle + rng.uniform(-20, 20)
                    phi = np.deg2rad(angle)
                    delta = (r0 + rng.uniform(0.1, 1.2)) * (np.cos(phi) * right + np.sin(phi) * forward)
                    if (
                        layout.free(spec, centre + delta)
                        and layout.free(spec, centre - delta)
                        and np.any(np.abs(2 * delta) >= 2 * spec.half + GAP)
                    ):
                        i = layout.add(spec, centre + delta)
                        j = layout.add(spec, centre - delta)  # the same object: same points, size and colour
                        pairs[axis_angle] = (i, j)
                        break
                else:
                    raise _PlacementFailed
        except _PlacementFailed:
            continue
        plus, minus = pairs[0.0]  # plus is on the right (angle ~ 0), minus on the left
        texts = {
            w: utterance(Parsed("view", w, str(target_cls), (str(anchor_cls),), viewpoint)) for w in ("left", "right")
        }
        exprs = [
            Expression(texts["left"], minus, "view", "left", (anchor,), 3, pair=1),
            Expression(texts["right"], plus, "view", "right", (anchor,), 3, pair=0),
        ]
        return layout.scene(rng, exprs, points_per_object)
    raise RuntimeError(f"could not lay out a mirror probe in {max_tries} tries")
