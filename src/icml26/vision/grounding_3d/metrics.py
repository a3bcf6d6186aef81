"""Grounding metrics: axis-aligned 3D IoU, Acc@IoU (ScanRefer's Acc@0.25 / Acc@0.5) and referential accuracy.

Boxes are ``[..., 6]`` = (centre x, y, z, size x, y, z). IoU = |A and B| / (|A| + |B| - |A and B|) with the
intersection's extent per axis ``max(0, min(hi_a, hi_b) - max(lo_a, lo_b))``. Functions accept numpy arrays or
torch tensors and answer in the same kind. A box with a non-positive or non-finite size is degenerate: ValueError.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def _xp(a: Any) -> Any:
    if type(a).__module__.startswith("torch"):
        import torch

        return torch
    return np


def check_boxes(boxes: Any, name: str = "boxes") -> None:
    """Raise one clear ValueError for a wrong shape, a non-finite value or a degenerate (size <= 0) box."""
    xp = _xp(boxes)
    if boxes.shape[-1:] != (6,):
        raise ValueError(f"{name} must have shape [..., 6] (centre xyz, size xyz), got {tuple(boxes.shape)}")
    if not bool(xp.all(xp.isfinite(boxes))):
        raise ValueError(f"{name} contain NaN or infinite values")
    if not bool(xp.all(boxes[..., 3:] > 0)):
        bad = np.argwhere(np.asarray(boxes[..., 3:] <= 0).any(-1))
        raise ValueError(f"{name} has degenerate boxes (a size <= 0) at index {bad[:3].tolist()}: sizes must be > 0")


def iou3d_aabb(a: Any, b: Any) -> Any:
    """IoU of axis-aligned boxes ``a`` and ``b`` (broadcast over leading dimensions)."""
    if _xp(a) is not _xp(b):
        raise TypeError("iou3d_aabb: give two numpy arrays or two torch tensors")
    xp = _xp(a)
    if xp is np:
        a, b = np.asarray(a, float), np.asarray(b, float)
    check_boxes(a, "a")
    check_boxes(b, "b")
    lo = xp.maximum(a[..., :3] - a[..., 3:] / 2, b[..., :3] - b[..., 3:] / 2)
    hi = xp.minimum(a[..., :3] + a[..., 3:] / 2, b[..., :3] + b[..., 3:] / 2)
    inter = (hi - lo).clip(0).prod(-1) if xp is np else (hi - lo).clamp(min=0).prod(-1)
    return inter / (a[..., 3:].prod(-1) + b[..., 3:].prod(-1) - inter)


def acc_at_iou(pred: Any, gt: Any, thr: float | Sequence[float] = (0.25, 0.5)) -> dict[str, float]:
    """Share of predictions whose box reaches IoU >= k with the ground truth, for each threshold k."""
    thresholds = (thr,) if isinstance(thr, int | float) else tuple(thr)
    if not thresholds or any(not 0 < k <= 1 for k in thresholds):
        raise ValueError(f"IoU thresholds must lie in (0, 1], got {thresholds}")
    iou = np.asarray(iou3d_aabb(pred, gt), float).reshape(-1)
    if iou.size == 0:
        raise ValueError("acc_at_iou needs at least one prediction")
    return {f"acc@{k:g}": float(np.mean(iou >= k)) for k in thresholds}


def accuracy(logits: Any, target: Any, mask: Any | None = None) -> float:
    """Share of rows whose highest-scoring valid object is the target (padding in ``mask`` never wins)."""
    logits = np.asarray(logits, float)
    if mask is not None:
        logits = np.where(np.asarray(mask, bool), logits, -np.inf)
    target = np.asarray(target)
    if logits.ndim != 2 or target.shape != logits.shape[:1]:
        raise ValueError(f"accuracy: logits [B, N] and target [B], got {logits.shape} and {target.shape}")
    return float(np.mean(logits.argmax(1) == target))
