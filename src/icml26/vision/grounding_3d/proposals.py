"""A simulated 3D detector: noisy proposals for the ScanRefer-style setting (Acc@0.25 / Acc@0.5).

From a scene's ground-truth boxes and points (:class:`.scenes.Scene`), in this order (all rates are ours):

1. each object is missed with probability ``p_miss``; otherwise its box is jittered: centre + N(0, (sigma_c *
   size)^2) per axis, size * exp(N(0, sigma_s^2)) per axis;
2. with probability ``p_merge`` two objects whose centres are within 1.2 m are merged into one proposal, the
   union of their boxes (an under-segmentation);
3. ``Poisson(fp_rate)`` (at most 3) fragments are added: a box of 0.2-0.6 m per side around a random surface
   point of a random object (an over-segmentation, low IoU with its object);
4. each proposal's points are the scene's points inside its box, resampled to ``P`` with replacement and centred
   on the proposal; empty proposals are dropped; the order is shuffled.

The referent of an expression is then scored by the IoU of the chosen proposal's box with the target's true box.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icml26.vision.grounding_3d.metrics import iou3d_aabb


@dataclass(frozen=True)
class DetectorNoise:
    """The simulated detector's error rates (our choice; ScanNet detectors are not available offline)."""

    p_miss: float = 0.05
    sigma_centre: float = 0.1
    sigma_size: float = 0.1
    p_merge: float = 0.15
    fp_rate: float = 1.0


def propose(
    boxes: np.ndarray, world_points: np.ndarray, rng: np.random.Generator, noise: DetectorNoise = DetectorNoise()
) -> tuple[np.ndarray, np.ndarray]:
    """Noisy proposals for one scene: boxes [K, 6] and local points [K, P, 6] (see the module docstring)."""
    n, P = world_points.shape[:2]
    keep = rng.random(n) >= noise.p_miss
    centre = boxes[:, :3] + rng.normal(0, noise.sigma_centre, (n, 3)) * boxes[:, 3:]
    size = boxes[:, 3:] * np.exp(rng.normal(0, noise.sigma_size, (n, 3)))
    out = [np.concatenate([c, s]) for c, s, k in zip(centre, size, keep, strict=True) if k]
    if rng.random() < noise.p_merge:
        d = np.linalg.norm(boxes[:, None, :3] - boxes[None, :, :3], axis=-1) + np.eye(n) * 1e9
        close = np.argwhere(d < 1.2)
        if len(close):
            i, j = close[rng.integers(len(close))]
            lo = np.minimum(boxes[i, :3] - boxes[i, 3:] / 2, boxes[j, :3] - boxes[j, 3:] / 2)
            hi = np.maximum(boxes[i, :3] + boxes[i, 3:] / 2, boxes[j, :3] + boxes[j, 3:] / 2)
            kept_index = np.cumsum(keep) - 1
            drop = {int(kept_index[k]) for k in (i, j) if keep[k]}
            out = [b for m, b in enumerate(out) if m not in drop] + [np.concatenate([(lo + hi) / 2, hi - lo])]
    cloud = world_points.reshape(-1, world_points.shape[-1])
    for _ in range(min(3, rng.poisson(noise.fp_rate))):
        seed_point = cloud[rng.integers(len(cloud)), :3]
        out.append(np.concatenate([seed_point + rng.uniform(-0.1, 0.1, 3), rng.uniform(0.2, 0.6, 3)]))
    props = np.array(out).reshape(-1, 6)
    lo, hi = props[:, None, :3] - props[:, None, 3:] / 2, props[:, None, :3] + props[:, None, 3:] / 2
    inside = np.all((cloud[None, :, :3] >= lo) & (cloud[None, :, :3] <= hi), axis=-1)  # [K, n*P]
    count = inside.sum(1)
    props, inside, count = props[count > 0], inside[count > 0], count[count > 0]
    order = rng.permutation(len(props))
    props, inside, count = props[order], inside[order], count[order]
    pts = np.empty((len(props), P, cloud.shape[-1]))
    for k in range(len(props)):
        idx = np.flatnonzero(inside[k])
        pts[k] = cloud[idx[rng.integers(count[k], size=P)]]
    pts[..., :3] -= props[:, None, :3]
    return props, pts


def best_match(proposals: np.ndarray, gt_box: np.ndarray) -> tuple[int, float]:
    """The proposal with the highest IoU with ``gt_box`` and that IoU (the training label; the oracle's ceiling)."""
    iou = np.asarray(iou3d_aabb(proposals, np.broadcast_to(gt_box, proposals.shape)))
    k = int(np.argmax(iou))
    return k, float(iou[k])
