"""A deterministic classical judge for the procedural world: it reads pixels, never the scene graph.

:func:`segment` (the hot path): estimate the backdrop from the image border and the light from it (the
(background, light) pair whose predicted colour is nearest), undo the light gain, mark as foreground the pixels
far from the backdrop that are neither near-black (outlines, tethers) nor the evaluator's pure-red boxes, open the
mask (drops noise specks and tether fringes), label connected components, and name each by the nearest glyph
prototype in a shape code (the 4x4 occupancy grid of its bounding box and its aspect ratio).

:class:`ClassicalJudge` answers the official questions from that parse: colour by the median chromaticity of the
glyph's brighter pixels; pattern by the mean shading of the eroded glyph (stripes shade about half the glyph,
dots about a sixth); outline by the darkness of a thin ring around it; size from the glyph's extent; location by
the official region rule on the red box; background and light from the backdrop estimate; style from backdrop
statistics (pixel runs for pixel art, the residual for photo noise, the anti-diagonal phase profile for pencil
hatching); relations from the glyph boxes (midpoint rules) and, for ``interacting with``, a dark tether along the
segment between the two glyphs.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from PIL import Image
from scipy import ndimage

from icml26.vision.detailmaster.prompts import BACKGROUND_TEXT, RELATION_TEXT, STYLE_TEXT
from icml26.vision.detailmaster.regions import bbox_to_region, region_from_official
from icml26.vision.detailmaster.synthetic.render import (
    BACKGROUND_RGB,
    COLORS,
    GLYPHS,
    GREY,
    HATCH_PERIOD,
    LIGHT_GAIN,
    PIXEL_BLOCK,
    SIZE_FRACTION,
    glyph_box,
    glyph_mask,
)
from icml26.vision.detailmaster.synthetic.world import margin_px, relation_holds

__all__ = ["ClassicalDetector", "ClassicalJudge", "Component", "Parse", "ShapeMatcher", "segment"]

FG_DISTANCE = 45.0  # foreground: this far (RGB) from the backdrop after undoing the light
DARK_MAX = 70.0  # near-black: every channel below this (outlines, tethers)
MIN_AREA = 150
GRID = 6
_OPEN = np.ones((3, 3), dtype=bool)


@dataclass
class Component:
    name: str | None
    distance: float
    box: tuple[int, int, int, int]  # glyph box [x0, y0, x1, y1), pixels
    mask: np.ndarray  # inside its box
    area: int


@dataclass
class Parse:
    background: str
    light: str
    gain: np.ndarray
    backdrop: np.ndarray  # corrected backdrop colour
    corrected: np.ndarray  # image / gain
    grey: np.ndarray  # channel mean of ``corrected``
    red: np.ndarray
    dark: np.ndarray
    fg: np.ndarray
    components: list[Component]

    def find(self, name: str) -> Component | None:
        hits = [c for c in self.components if c.name == name]
        return min(hits, key=lambda c: c.distance) if hits else None


def _shape_code(mask: np.ndarray) -> np.ndarray:
    h, w = mask.shape
    rows = np.linspace(0, h, GRID + 1).astype(int)
    cols = np.linspace(0, w, GRID + 1).astype(int)
    sums = np.add.reduceat(np.add.reduceat(mask.astype(float), rows[:-1], 0), cols[:-1], 1)
    cells = np.diff(rows)[:, None] * np.diff(cols)[None, :]
    return np.concatenate([(sums / np.maximum(cells, 1)).ravel(), [2.0 * np.log(h / w)]])


@lru_cache(maxsize=1)
def _prototypes() -> tuple[list[str], np.ndarray]:
    names, codes = [], []
    for name in GLYPHS:
        box = glyph_box(name, "large", 64, 64, 256)
        m = ndimage.binary_opening(glyph_mask(name, box, (128, 128)), _OPEN)
        ys, xs = np.nonzero(m)
        names.append(name)
        codes.append(_shape_code(m[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1]))
    return names, np.array(codes)


_COMBOS = [(b, li) for b in BACKGROUND_RGB for li in LIGHT_GAIN]
_COMBO_RGB = np.array([np.clip(np.array(BACKGROUND_RGB[b]) * np.array(LIGHT_GAIN[li]), 0, 255) for b, li in _COMBOS])


def segment(image: Image.Image | np.ndarray) -> Parse:
    """Parse an image of the procedural world into named glyph components (see the module docstring)."""
    arr = np.asarray(image, dtype=float)[..., :3]
    red = (arr[..., 0] == 255) & (arr[..., 1] == 0) & (arr[..., 2] == 0)
    border = np.concatenate(
        [arr[:3].reshape(-1, 3), arr[-3:].reshape(-1, 3), arr[:, :3].reshape(-1, 3), arr[:, -3:].reshape(-1, 3)]
    )
    border_red = np.concatenate([red[:3].ravel(), red[-3:].ravel(), red[:, :3].ravel(), red[:, -3:].ravel()])
    observed = np.median(border[~border_red], axis=0) if (~border_red).any() else np.median(border, axis=0)
    k = int(np.argmin(((_COMBO_RGB - observed) ** 2).sum(1)))
    background, light = _COMBOS[k]
    gain = np.array(LIGHT_GAIN[light])
    corrected = arr / gain
    backdrop = observed / gain
    r, g, b = corrected[..., 0], corrected[..., 1], corrected[..., 2]
    dist2 = (r - backdrop[0]) ** 2 + (g - backdrop[1]) ** 2 + (b - backdrop[2]) ** 2
    dark = np.maximum(np.maximum(r, g), b) < DARK_MAX
    fg = (dist2 > FG_DISTANCE**2) & ~dark & ~red
    fg = ndimage.binary_opening(fg, _OPEN)
    labels, n = ndimage.label(fg)
    names, codes = _prototypes()
    comps = []
    if n:
        areas = np.bincount(labels.ravel(), minlength=n + 1)
        for i, sl in enumerate(ndimage.find_objects(labels), start=1):
            if sl is None or areas[i] < MIN_AREA:
                continue
            mask = labels[sl] == i
            d = np.sqrt(((codes - _shape_code(mask)) ** 2).sum(1))
            j = int(np.argmin(d))
            box = (sl[1].start, sl[0].start, sl[1].stop, sl[0].stop)
            comps.append(Component(names[j] if d[j] < 1.5 else None, float(d[j]), box, mask, int(areas[i])))
    return Parse(background, light, gain, backdrop, corrected, (r + g + b) / 3.0, red, dark, fg, comps)


_CHROMA = {name: np.array(rgb, dtype=float) / sum(rgb) for name, rgb in {**COLORS, "grey": GREY}.items()}
_Q = {
    "attribute": re.compile(r'specifically the "(.+?)"\. Please determine whether "(.+?)" is one of'),
    "context": re.compile(
        r'the character "(.+?)" \(marked with a red bounding box.*?\) has the characteristic "(.+?)"'
    ),
    "location": re.compile(r'the character "(.+?)" \(marked with a red bounding box.*?\) is located in (.+?)\. Please'),
    "spatial": re.compile(r'the spatial condition in this image match the following description: "(.+?)"\. Please'),
    "scene": re.compile(
        r'Analyze whether the (\w+) condition in this image match the following description: "(.+?)"\. Please'
    ),
}
_REL = re.compile(r"The (\w+) is (" + "|".join(RELATION_TEXT.values()) + r") the (\w+)\.")


class ClassicalJudge:
    """The procedural world's judge: the ``VLMJudge`` protocol on a pixel parse (see the module docstring).

    It answers the official question templates (and our context-attribute one); any other question raises."""

    def __init__(self, cache: int = 32) -> None:
        self._cache: OrderedDict[bytes, Parse] = OrderedDict()
        self._size = cache

    def parse(self, image: Image.Image) -> Parse:
        arr = np.asarray(image)
        key = hashlib.blake2b(arr.tobytes(), digest_size=16).digest() + bytes(str(arr.shape), "ascii")
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        p = segment(arr)
        self._cache[key] = p
        if len(self._cache) > self._size:
            self._cache.popitem(last=False)
        return p

    def ground(self, image: Image.Image, phrase: str) -> list[int] | None:
        c = self.parse(image).find(phrase.strip().removeprefix("the ").strip())
        if c is None:
            return None
        m = margin_px(image.size[0])
        w, h = image.size
        return [max(0, c.box[0] - m), max(0, c.box[1] - m), min(w, c.box[2] + m), min(h, c.box[3] + m)]

    def yes_no(self, image: Image.Image, question: str) -> bool:
        if m := _Q["attribute"].search(question):
            return self._attribute(image, m.group(1), m.group(2))
        if m := _Q["context"].search(question):
            return self._context(image, m.group(1), m.group(2))
        if m := _Q["location"].search(question):
            return self._location(image, m.group(2))
        if m := _Q["spatial"].search(question):
            return self._relation(image, m.group(1))
        if m := _Q["scene"].search(question):
            return self._scene(image, m.group(1), m.group(2))
        raise ValueError(f"the classical judge cannot read this question: {question[:120]!r}")

    # --- attributes ---------------------------------------------------------------------------------------
    def _glyph(self, p: Parse, name: str) -> Component | None:
        c = p.find(name)
        if c is None and p.components:  # a crop: the character is its main component
            c = max(p.components, key=lambda x: x.area)
        return c

    def _attribute(self, image: Image.Image, name: str, feature: str) -> bool:
        key, _, value = feature.partition(":")
        p = self.parse(image)
        c = self._glyph(p, name)
        if c is None:
            return False
        x0, y0, x1, y1 = c.box
        pix = p.corrected[y0:y1, x0:x1]
        if key == "color":
            px = pix[c.mask]
            b = px.mean(1)
            px = px[b >= np.median(b)]
            chroma = np.median(px / np.maximum(px.sum(1, keepdims=True), 1e-9), axis=0)
            best = min(_CHROMA, key=lambda n: float(((_CHROMA[n] - chroma) ** 2).sum()))
            return best == value
        if key == "pattern":
            return _pattern(p, c) == value
        if key == "outline":
            return _outline(p, c) == value
        if key == "size":
            return self._size_of(c, image.size[0]) == value
        return False

    @staticmethod
    def _size_of(c: Component, width: int) -> str:
        extent = max(c.box[2] - c.box[0], c.box[3] - c.box[1]) / width
        return min(SIZE_FRACTION, key=lambda s: abs(SIZE_FRACTION[s] - extent))

    @staticmethod
    def _red_box(image: Image.Image) -> tuple[int, int, int, int] | None:
        arr = np.asarray(image)
        ys, xs = np.nonzero((arr[..., 0] == 255) & (arr[..., 1] == 0) & (arr[..., 2] == 0))
        if len(xs) == 0:
            return None
        return int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1

    def _context(self, image: Image.Image, name: str, feature: str) -> bool:
        key, _, value = feature.partition(":")
        rb = self._red_box(image)
        if rb is None or key != "size":
            return False
        w, h = image.size  # the boxed character is the main component of a crop a little wider than the box
        p = self.parse(image.crop((max(0, rb[0] - 8), max(0, rb[1] - 8), min(w, rb[2] + 8), min(h, rb[3] + 8))))
        if not p.components:
            return False
        c = max(p.components, key=lambda x: x.area)
        return self._size_of(c, image.size[0]) == value

    def _location(self, image: Image.Image, position: str) -> bool:
        rb = self._red_box(image)
        if rb is None:
            return False
        return bbox_to_region(rb, image.size) == region_from_official(position)

    # --- scene ----------------------------------------------------------------------------------------------
    def _scene(self, image: Image.Image, key: str, content: str) -> bool:
        p = self.parse(image)
        text = content.lower()
        if key == "background":
            return p.background != "plain" and BACKGROUND_TEXT[p.background] in text
        if key == "light":
            return p.light != "neutral" and re.search(rf"\b{p.light}\b", text) is not None
        if key == "style":
            style = _style(p)
            return style is not None and STYLE_TEXT[style] in text
        return False

    # --- relations ------------------------------------------------------------------------------------------
    def _relation(self, image: Image.Image, content: str) -> bool:
        m = _REL.search(content)
        if m is None:
            return False
        p = self.parse(image)
        a, b = p.find(m.group(1)), p.find(m.group(3))
        if a is None or b is None:
            return False
        predicate = {v: k for k, v in RELATION_TEXT.items()}[m.group(2)]
        if predicate == "interacting with":
            others = [c.box for c in p.components if c is not a and c is not b]
            return _tethered(p, a.box, b.box, margin_px(image.size[0]), others)
        return relation_holds(predicate, a.box, b.box, image.size[0], strict=False)


def _pattern(p: Parse, c: Component) -> str:
    x0, y0, x1, y1 = c.box
    inner = ndimage.binary_erosion(c.mask, iterations=3)  # away from the edge, where outline and backdrop bleed in
    if inner.sum() < 20:
        inner = c.mask
    g = ndimage.uniform_filter(p.grey[y0:y1, x0:x1], 3)
    base = max(float(np.percentile(g[inner], 75)), 1e-9)
    shade = np.where(inner, 1.0 - g / base, 0.0)
    shading = float(shade[inner].mean())
    if shading < 0.047:
        return "solid"
    # stripes run along x: the shading varies from row to row and hardly from column to column
    rows, cols = inner.any(1), inner.any(0)
    row_mean = shade.sum(1)[rows] / inner.sum(1)[rows]
    col_mean = shade.sum(0)[cols] / inner.sum(0)[cols]
    ratio = float(np.std(row_mean) / (np.std(col_mean) + 1e-3))
    if shading >= 0.1 or (shading >= 0.08 and ratio > 1.5):
        return "striped"
    return "dotted"


def _outline(p: Parse, c: Component) -> str:
    x0, y0, x1, y1 = c.box
    pad = 5
    h, w = p.fg.shape
    X0, Y0, X1, Y1 = max(0, x0 - pad), max(0, y0 - pad), min(w, x1 + pad), min(h, y1 + pad)
    full = np.zeros((Y1 - Y0, X1 - X0), dtype=bool)
    full[y0 - Y0 : y1 - Y0, x0 - X0 : x1 - X0] = c.mask
    ring = ndimage.binary_dilation(full, iterations=4) & ~ndimage.binary_dilation(full, iterations=1)
    if not ring.any():
        return "none"
    ring_b = np.percentile(p.grey[Y0:Y1, X0:X1][ring], 30)
    return "black" if ring_b < 0.6 * p.backdrop.mean() else "none"


def _style(p: Parse) -> str | None:
    g = p.grey
    bg = ~ndimage.maximum_filter(p.fg | p.red | p.dark, size=13)
    if bg.sum() < 200:
        return None
    # pixel art: within a block, neighbours are equal; the steps sit on one phase of the block grid
    dy = np.abs(np.diff(g, axis=0))
    rows = bg[1:] & bg[:-1]
    phase_y = np.array([dy[k::PIXEL_BLOCK][rows[k::PIXEL_BLOCK]].mean() for k in range(PIXEL_BLOCK)])
    if phase_y.max() > 0.3 and phase_y.min() < 0.25 * phase_y.max():
        return "pixel art"
    yy, xx = np.nonzero(bg)
    phase = np.bincount((xx + yy) % HATCH_PERIOD, weights=g[yy, xx], minlength=HATCH_PERIOD)
    phase /= np.maximum(np.bincount((xx + yy) % HATCH_PERIOD, minlength=HATCH_PERIOD), 1)
    if phase.max() - phase.min() > 6.0:
        return "sketch"
    pairs = bg[:, 1:] & bg[:, :-1]  # the ripple runs along y: along x a clean backdrop is flat, a noisy one is not
    return "photo" if np.median(np.abs(np.diff(g, axis=1))[pairs]) > 1.5 else None


def _tethered(p: Parse, a: Sequence[int], b: Sequence[int], m: float, others: Sequence[Sequence[int]] = ()) -> bool:
    """A dark line along most of the segment between the two glyphs (where no other glyph hides it)."""
    ca = np.array([(a[0] + a[2]) / 2, (a[1] + a[3]) / 2])
    cb = np.array([(b[0] + b[2]) / 2, (b[1] + b[3]) / 2])
    t = np.linspace(0, 1, 60)[:, None]
    pts = ca + t * (cb - ca)

    def outside(box: Sequence[int]) -> np.ndarray:
        return (pts[:, 0] < box[0] - m) | (pts[:, 0] > box[2] + m) | (pts[:, 1] < box[1] - m) | (pts[:, 1] > box[3] + m)

    keep = outside(a) & outside(b)
    for box in others:
        keep &= outside(box)
    pts = pts[keep]
    if len(pts) < 3:  # too close to see a tether between them: judge by touching
        return True
    darkest = ndimage.minimum_filter(p.grey, size=3)
    h, w = darkest.shape
    xs, ys = np.clip(pts[:, 0].astype(int), 0, w - 1), np.clip(pts[:, 1].astype(int), 0, h - 1)
    dark = darkest[ys, xs] < 0.7 * p.backdrop.mean()  # pixel art leaves half-covered blocks along a 2-px line
    return bool(np.mean(dark) > 0.8)


class ClassicalDetector:
    """An open-vocabulary detector stand-in: the same parse, a box one pixel looser than the judge's."""

    def __init__(self, judge: ClassicalJudge | None = None) -> None:
        self.judge = judge or ClassicalJudge()

    def detect(self, image: Image.Image, phrase: str) -> list[int] | None:
        b = self.judge.ground(image, phrase)
        if b is None:
            return None
        w, h = image.size
        return [max(0, b[0] - 1), max(0, b[1] - 1), min(w, b[2] + 1), min(h, b[3] + 1)]


class ShapeMatcher:
    """An image-text matcher stand-in: how close each crop's main glyph is to the named glyph's shape."""

    def score(self, crops: Sequence[Image.Image], text: str) -> list[float]:
        names, codes = _prototypes()
        if text not in names:
            return [0.0] * len(crops)
        out = []
        for crop in crops:
            p = segment(crop)
            if not p.components:
                out.append(0.0)
                continue
            c = max(p.components, key=lambda x: x.area)
            out.append(float(np.exp(-np.sqrt(((codes[names.index(text)] - _shape_code(c.mask)) ** 2).sum()))))
        return out
