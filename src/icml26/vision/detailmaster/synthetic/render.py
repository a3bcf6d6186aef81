"""The procedural world's renderer: a scene graph with boxes in, a PIL image out (numpy and PIL only).

Drawing order: background colour with a faint horizontal ripple (its texture); for ``sketch``, pencil hatching
(anti-diagonal lines every 8 px) on the background; the tethers of ``interacting with`` relations (dark 3-px
lines between the two characters); each character as its glyph (an outline 4 px outside the glyph if asked, the
glyph in its colour, stripes or dots in a darker shade of it); then the light (a per-channel gain on the whole
image) and the style's pixel operation (``pixel art``: 2x2 block means; ``photo``: Gaussian sensor noise).
A fact the scene leaves unset is drawn in a neutral default outside the vocabulary (a grey glyph, a grey backdrop,
neutral light, no style), so that it never matches a stated value by accident.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw
from scipy import ndimage

from icml26.vision.detailmaster.schema import Scene, SceneSpecError

__all__ = ["COLORS", "DEFAULTS", "GLYPHS", "LIGHT_GAIN", "SIZE_FRACTION", "Renderer", "glyph_mask"]

COLORS: Mapping[str, tuple[int, int, int]] = {
    "red": (220, 50, 50),
    "blue": (50, 80, 220),
    "yellow": (235, 200, 40),
    "purple": (150, 60, 190),
    "orange": (240, 140, 30),
    "pink": (240, 120, 190),
}
BACKGROUND_RGB: Mapping[str, tuple[int, int, int]] = {
    "meadow": (140, 185, 110),
    "sky": (160, 195, 235),
    "sand": (225, 200, 150),
    "lilac": (200, 170, 225),
    "plain": (200, 200, 200),  # default: no background stated
}
LIGHT_GAIN: Mapping[str, tuple[float, float, float]] = {
    "bright": (1.12, 1.12, 1.12),
    "dim": (0.55, 0.55, 0.55),
    "warm": (1.08, 0.92, 0.70),
    "cool": (0.78, 0.92, 1.08),
    "neutral": (1.0, 1.0, 1.0),  # default: no light stated
}
SIZE_FRACTION: Mapping[str, float] = {"small": 0.13, "medium": 0.19, "large": 0.26}
DEFAULTS: Mapping[str, str] = {"color": "grey", "size": "medium", "pattern": "solid", "outline": "none"}
GREY = (128, 128, 128)
DARK = (25, 25, 25)
SHADE = 0.6  # pattern shade: this share of the glyph's colour
OUTLINE_PX = 4
TETHER_PX = 2
STRIPE_PERIOD, DOT_PERIOD, DOT_RADIUS = 10, 9, 2.0
HATCH_PERIOD, HATCH_DARKEN = 8, 16.0
NOISE_SIGMA, PIXEL_BLOCK, RIPPLE = 6.0, 2, 4.0


def _star(points: int = 5, inner: float = 0.45) -> list[tuple[float, float]]:
    ang = -np.pi / 2 + np.arange(2 * points) * np.pi / points
    r = np.where(np.arange(2 * points) % 2 == 0, 1.0, inner)
    xy = np.stack([r * np.cos(ang), r * np.sin(ang)], 1)
    xy = (xy - xy.min(0)) / (xy.max(0) - xy.min(0))  # touch the unit box on all four sides
    return [tuple(p) for p in xy]


# name -> (kind, polygon in the unit box or None for an ellipse, height / width)
GLYPHS: Mapping[str, tuple[str, list[tuple[float, float]] | None, float]] = {
    "wizard": ("triangle", [(0.5, 0.0), (1.0, 1.0), (0.0, 1.0)], 1.0),
    "dancer": ("star", _star(), 1.0),
    "cat": ("disc", None, 1.0),
    "fish": ("ellipse", None, 0.5),
    "bird": ("diamond", [(0.5, 0.0), (1.0, 0.5), (0.5, 1.0), (0.0, 0.5)], 1.0),
    "crate": ("square", [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)], 1.0),
    "lamp": (
        "plus",
        [
            *[(1 / 3, 0), (2 / 3, 0), (2 / 3, 1 / 3), (1, 1 / 3), (1, 2 / 3), (2 / 3, 2 / 3), (2 / 3, 1)],
            *[(1 / 3, 1), (1 / 3, 2 / 3), (0, 2 / 3), (0, 1 / 3), (1 / 3, 1 / 3)],
        ],
        1.0,
    ),
}


def glyph_box(name: str, size: str, cx: float, cy: float, width: int) -> tuple[float, float, float, float]:
    """The pixel box of glyph ``name`` at ``size`` centred on (cx, cy) in an image ``width`` wide."""
    w = SIZE_FRACTION[size] * width
    h = w * GLYPHS[name][2]
    return (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)


def glyph_mask(
    name: str, box: tuple[float, float, float, float], shape: tuple[int, int], grow: float = 0.0
) -> np.ndarray:
    """Boolean mask of glyph ``name`` filling ``box`` (grown by ``grow`` px on each side) in an image of ``shape``."""
    x0, y0, x1, y1 = box[0] - grow, box[1] - grow, box[2] + grow, box[3] + grow
    img = Image.new("L", (shape[1], shape[0]), 0)
    draw = ImageDraw.Draw(img)
    _, poly, _ = GLYPHS[name]
    if poly is None:
        draw.ellipse([x0, y0, x1 - 1, y1 - 1], fill=1)
    else:
        draw.polygon([(x0 + u * (x1 - x0 - 1), y0 + v * (y1 - y0 - 1)) for u, v in poly], fill=1)
    return np.asarray(img, dtype=bool)


@lru_cache(maxsize=8)
def _grids(size: int) -> tuple[np.ndarray, np.ndarray]:
    return np.mgrid[0:size, 0:size].astype(np.int64)


class Renderer:
    """Draws a scene whose characters carry boxes (see :class:`~.world.SceneSampler`); ``size`` is the image side."""

    def __init__(self, size: int = 256) -> None:
        if size < 64:
            raise ValueError(f"the renderer needs images of at least 64 px, got {size}")
        self.size = size

    def render(self, scene: Scene, seed: int = 0) -> Image.Image:
        n = self.size
        yy, xx = _grids(n)
        attrs = scene.attributes
        bg = np.array(BACKGROUND_RGB[attrs.get("background", "plain")], dtype=float)
        img = np.empty((n, n, 3))
        img[:] = bg
        img += (RIPPLE * np.sin(2 * np.pi * yy / 23.0))[..., None]
        if attrs.get("style") == "sketch":
            img[(xx + yy) % HATCH_PERIOD == 0] -= HATCH_DARKEN
        boxes = {}
        for c in scene.characters:
            if c.box is None:
                raise SceneSpecError(f"character {c.name!r} has no box: place the scene before rendering it")
            boxes[c.name] = c.box
        pil = Image.fromarray(np.clip(img, 0, 255).astype(np.uint8))
        draw = ImageDraw.Draw(pil)
        for r in scene.relations:
            if r.predicate == "interacting with":
                a, b = boxes[r.subject], boxes[r.object]
                draw.line(
                    [((a[0] + a[2]) / 2, (a[1] + a[3]) / 2), ((b[0] + b[2]) / 2, (b[1] + b[3]) / 2)],
                    fill=DARK,
                    width=TETHER_PX,
                )
        img = np.asarray(pil, dtype=float).copy()
        for c in scene.characters:
            a = {**DEFAULTS, **c.attributes}
            # work in a window around the glyph (its outline included): the rest of the image is untouched
            g = OUTLINE_PX + 2
            X0, Y0 = max(0, int(np.floor(c.box[0])) - g), max(0, int(np.floor(c.box[1])) - g)
            X1, Y1 = min(n, int(np.ceil(c.box[2])) + g), min(n, int(np.ceil(c.box[3])) + g)
            local = (c.box[0] - X0, c.box[1] - Y0, c.box[2] - X0, c.box[3] - Y0)
            mask = glyph_mask(c.name, local, (Y1 - Y0, X1 - X0))
            win = img[Y0:Y1, X0:X1]
            if a["outline"] == "black":  # a stroke of even width around the glyph (a dilation of its mask)
                win[ndimage.binary_dilation(mask, iterations=OUTLINE_PX) & ~mask] = DARK
            colour = np.array(COLORS.get(a["color"], GREY), dtype=float)
            win[mask] = colour
            x0, y0 = int(np.floor(c.box[0])), int(np.floor(c.box[1]))
            ly, lx = yy[Y0:Y1, X0:X1], xx[Y0:Y1, X0:X1]
            if a["pattern"] == "striped":
                shade = ((ly - y0) // (STRIPE_PERIOD // 2)) % 2 == 1
            elif a["pattern"] == "dotted":
                dx = (lx - x0) % DOT_PERIOD - DOT_PERIOD // 2
                dy = (ly - y0) % DOT_PERIOD - DOT_PERIOD // 2
                shade = dx * dx + dy * dy <= DOT_RADIUS**2
            else:
                shade = None
            if shade is not None:
                win[mask & shade] = SHADE * colour
        img *= np.array(LIGHT_GAIN[attrs.get("light", "neutral")])
        style = attrs.get("style")
        if style == "pixel art":
            b = PIXEL_BLOCK
            m = n - n % b
            blocks = img[:m, :m].reshape(m // b, b, m // b, b, 3).mean(axis=(1, 3))
            img[:m, :m] = np.repeat(np.repeat(blocks, b, 0), b, 1)
        elif style == "photo":
            img += np.random.default_rng(seed).normal(0.0, NOISE_SIGMA, img.shape)
        return Image.fromarray(np.clip(np.rint(img), 0, 255).astype(np.uint8))
