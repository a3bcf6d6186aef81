"""The classical judge's hot path against scikit-image, and the harness's throughput.

Workload: ground-truth renders of procedural DetailMaster scenes (256 x 256, 2-5 glyphs, every light and style).

Rows (ratio > 1 when ours is faster):

1. ``segment`` (backdrop and light estimate, foreground mask, 3x3 opening, connected components, per-component
   boxes, areas and shape codes; scipy.ndimage inside, vectorised) against the same parse written the way a
   scikit-image user would: ``skimage.morphology.opening`` + ``skimage.measure.label`` +
   ``regionprops`` (``bbox``, ``area``, ``image``), on the same mask. The two parses are checked equal first.
2. Connected components alone (labels, areas, boxes): ``ndimage.label`` + ``find_objects`` + ``bincount`` against
   ``skimage.measure.label`` + ``regionprops``.

The extra fields record what the issue asks for: prompts constructed per second and images evaluated per second
(every official question, the classical judge), one thread.

    .venv/bin/python benchmarks/bench_detailmaster.py [tiny|quick|full]
"""

from __future__ import annotations

import sys
import time

import numpy as np
from scipy import ndimage

from icml26._core.bench import BenchRow, interleaved_medians, print_rows
from icml26.vision.detailmaster import DetailMaster, compose_prompt
from icml26.vision.detailmaster.synthetic import OracleT2I, Renderer, SceneSampler
from icml26.vision.detailmaster.synthetic import judge as J

SIZES = {"tiny": (4, 1), "quick": (24, 5), "full": (64, 9)}  # images, repeats


def _skimage_parse(image) -> list[tuple[tuple[int, int, int, int], int, str | None]]:
    """The judge's parse with scikit-image's morphology and region properties (the anchor)."""
    from skimage import measure, morphology

    arr = np.asarray(image, dtype=float)[..., :3]
    red = (arr == (255, 0, 0)).all(-1)
    border = np.concatenate([arr[:3].reshape(-1, 3), arr[-3:].reshape(-1, 3)])
    border = np.concatenate([border, arr[:, :3].reshape(-1, 3), arr[:, -3:].reshape(-1, 3)])
    observed = np.median(border, axis=0)
    _, light = J._COMBOS[int(np.argmin(((J._COMBO_RGB - observed) ** 2).sum(1)))]
    gain = np.array(J.LIGHT_GAIN[light])
    arr, backdrop = arr / gain, observed / gain
    dist2 = ((arr - backdrop) ** 2).sum(-1)
    fg = (dist2 > J.FG_DISTANCE**2) & (arr.max(-1) >= J.DARK_MAX) & ~red
    fg = morphology.opening(fg, np.ones((3, 3), dtype=bool))
    names, codes = J._prototypes()
    out = []
    for region in measure.regionprops(measure.label(fg, connectivity=1)):
        if region.area < J.MIN_AREA:
            continue
        d = np.sqrt(((codes - J._shape_code(region.image)) ** 2).sum(1))
        j = int(np.argmin(d))
        y0, x0, y1, x1 = region.bbox
        out.append(((x0, y0, x1, y1), int(region.area), names[j] if d[j] < 1.5 else None))
    return out


def _ours(image) -> list[tuple[tuple[int, int, int, int], int, str | None]]:
    return [(c.box, c.area, c.name) for c in J.segment(image).components]


def _cc_ours(mask: np.ndarray) -> list[tuple[int, tuple[slice, slice]]]:
    labels, n = ndimage.label(mask)
    areas = np.bincount(labels.ravel(), minlength=n + 1)
    return list(zip(areas[1:].tolist(), ndimage.find_objects(labels), strict=True))


def _cc_skimage(mask: np.ndarray) -> list[tuple[int, tuple[int, int, int, int]]]:
    from skimage import measure

    return [(int(r.area), r.bbox) for r in measure.regionprops(measure.label(mask, connectivity=1))]


def rows(size: str) -> list[BenchRow]:
    n, repeat = SIZES[size]
    bench, samples = DetailMaster.procedural(n, seed=0)
    images = [Renderer().render(s.scene, i) for i, s in enumerate(samples)]
    for im in images:  # the anchor computes the same parse
        assert sorted(_ours(im)) == sorted(_skimage_parse(im))
    masks = [J.segment(im).fg for im in images]
    t = interleaved_medians(
        {"ours": lambda: [_ours(im) for im in images], "skimage": lambda: [_skimage_parse(im) for im in images]},
        repeat=repeat,
    )
    cc = interleaved_medians(
        {"ours": lambda: [_cc_ours(m) for m in masks], "skimage": lambda: [_cc_skimage(m) for m in masks]},
        repeat=repeat,
    )
    # throughput: prompts constructed per second, images evaluated per second (oracle images, every question)
    sampler, rng = SceneSampler(), np.random.default_rng(1)
    scenes = [sampler.sample(rng) for _ in range(n)]
    start = time.perf_counter()
    for sc in scenes:
        compose_prompt(sc, rng, 290)
    prompts_per_s = n / (time.perf_counter() - start)
    model = OracleT2I()
    generated = [model.generate(s.prompt, i) for i, s in enumerate(samples)]
    start = time.perf_counter()
    bench.evaluator.evaluate(samples, generated)
    images_per_s = n / (time.perf_counter() - start)
    extra = {"prompts_per_s": prompts_per_s, "images_evaluated_per_s": images_per_s, "images": n}
    return [
        BenchRow(
            "detailmaster",
            f"judge parse of {n} 256x256 renders",
            "scikit-image opening + label + regionprops",
            t["ours"],
            t["skimage"],
            "s",
            notes="same parse (checked equal): backdrop, light and mask in numpy in both; then scipy.ndimage "
            "(ours) or scikit-image (anchor) for the opening, labels and region properties",
            extra=extra,
        ),
        BenchRow(
            "detailmaster",
            f"connected components of {n} foreground masks",
            "skimage.measure.label + regionprops (area, bbox)",
            cc["ours"],
            cc["skimage"],
            "s",
            notes="scipy.ndimage.label + find_objects + bincount (what the judge runs)",
        ),
    ]


if __name__ == "__main__":
    print_rows(rows(sys.argv[1] if len(sys.argv) > 1 else "full"))
