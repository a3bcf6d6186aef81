"""The nine structured locations and the box rules of the official pipelines.

Step 5 of construction (``bbox_to_location.py`` of the official code): normalise the character's box by the image
size, compute its *containment* in each region (intersection over the box's own area), sort the regions by it
(a stable sort: ties keep the list order below) and keep the best region only if its containment exceeds 0.75.
Step 1 of evaluation: two boxes agree when their IoU exceeds 0.7, and then the larger one is kept.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "REGIONS",
    "REGION_NAMES",
    "bbox_to_region",
    "containment",
    "iou",
    "official_position",
    "region_from_official",
]

# [x0, y0, x1, y1] as fractions of the image, in the official list order (the order breaks ties).
REGIONS: dict[str, tuple[float, float, float, float]] = {
    "upper": (0.3, 0.0, 0.7, 0.5),
    "lower": (0.3, 0.5, 0.7, 1.0),
    "left": (0.0, 0.3, 0.5, 0.7),
    "right": (0.5, 0.3, 1.0, 0.7),
    "middle": (0.3, 0.3, 0.7, 0.7),
    "upper left": (0.0, 0.0, 0.4, 0.4),
    "lower left": (0.0, 0.6, 0.4, 1.0),
    "upper right": (0.6, 0.0, 1.0, 0.4),
    "lower right": (0.6, 0.6, 1.0, 1.0),
}
REGION_NAMES: tuple[str, ...] = tuple(REGIONS)
_REGION_ARRAY = np.array(list(REGIONS.values()))


def official_position(region: str | None) -> str | None:
    """``"upper left"`` -> ``"The upper left part of the image"`` (the official string)."""
    return None if region is None else f"The {region} part of the image"


def region_from_official(text: str) -> str:
    t = text.lower().strip().removeprefix("the ").removesuffix(".").removesuffix(" part of the image").strip()
    if t not in REGIONS:
        raise ValueError(
            f"{text!r} is not one of the nine official locations ({[official_position(r) for r in REGIONS]})"
        )
    return t


def _as_box(box: Sequence[float]) -> np.ndarray:
    b = np.asarray(box, dtype=float)
    if b.shape != (4,) or not np.all(np.isfinite(b)):
        raise ValueError(f"a box is four finite numbers [x0, y0, x1, y1], got {box!r}")
    return b


def containment(box: Sequence[float], regions: np.ndarray = _REGION_ARRAY) -> np.ndarray:
    """Share of the (normalised) box's area inside each region, as in the official ``occupy_cal``.

    A degenerate box (zero area) has containment 0 everywhere; boxes that only touch a region have 0."""
    b = _as_box(box)
    area = (b[2] - b[0]) * (b[3] - b[1])
    w = np.minimum(b[2], regions[:, 2]) - np.maximum(b[0], regions[:, 0])
    h = np.minimum(b[3], regions[:, 3]) - np.maximum(b[1], regions[:, 1])
    inter = np.where((w >= 0) & (h >= 0), w * h, 0.0)
    return inter / area if area > 0 else np.zeros(len(regions))


def bbox_to_region(box: Sequence[float], size: tuple[int, int], threshold: float = 0.75) -> str | None:
    """The official location of a pixel box [x0, y0, x1, y1] in an image of ``size`` = (width, height).

    The region that contains most of the box, if it contains more than ``threshold`` of it; else None.
    """
    width, height = size
    if width <= 0 or height <= 0:
        raise ValueError(f"image size must be positive, got {size!r}")
    b = _as_box(box) / np.array([width, height, width, height], dtype=float)
    occ = containment(b)
    best = int(np.argmax(occ))  # argmax returns the first maximum: the official stable sort's tie rule
    return REGION_NAMES[best] if occ[best] > threshold else None


def iou(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection over union of two [x0, y0, x1, y1] boxes (0 for disjoint or degenerate boxes)."""
    p, q = _as_box(a), _as_box(b)
    w = min(p[2], q[2]) - max(p[0], q[0])
    h = min(p[3], q[3]) - max(p[1], q[1])
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    union = (p[2] - p[0]) * (p[3] - p[1]) + (q[2] - q[0]) * (q[3] - q[1]) - inter
    return float(inter / union) if union > 0 else 0.0
