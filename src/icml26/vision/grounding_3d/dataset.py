"""The procedural 3D referring-expression benchmark as a torch ``Dataset`` (one item per expression).

Scenes are generated once (numpy), padded to the largest object count, and stored per scene; expressions point at
their scene, so the two expressions of a minimal pair share one point cloud. ``proposals="gt"`` gives the
ground-truth objects (Nr3D/Sr3D's setting: the label is the target's index); ``proposals="noisy"`` gives the
simulated detector's proposals (:mod:`.proposals`; ScanRefer's setting: the label is the proposal that overlaps the
target most, and the answer is scored by its IoU with the true box).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from icml26.vision.grounding_3d.proposals import DetectorNoise, best_match, propose
from icml26.vision.grounding_3d.scenes import generate_scene, mirror_probe
from icml26.vision.grounding_3d.vocab import DIRECTION_AWARE, FAMILIES, MAX_TOKENS, Vocabulary

KEYS = ("points", "boxes", "mask", "tokens", "target", "gt_box")


class ProceduralReferDataset(torch.utils.data.Dataset):
    """``n_scenes`` procedural rooms and their referring expressions (see :mod:`.scenes` for the generator).

    Parameters: ``objects`` = (min, max) objects per room; ``families``: relation families to draw scenes from
    (default: all six, balanced by expression); ``points_per_object``: surface points per object (and per
    proposal); ``proposals``: ``"gt"`` or ``"noisy"``; ``probe=True`` builds the left/right mirror probe instead
    (:func:`.scenes.mirror_probe`); ``seed``: the generator's seed.

    Items are dicts of tensors: ``points`` [N, P, 6] (xyz relative to each box's centre, RGB), ``boxes`` [N, 6]
    (centre, size in metres), ``mask`` [N], ``tokens`` [L], ``target`` (index), ``gt_box`` [6]. ``batch(idx)``
    returns a stacked batch without a DataLoader. Per-expression metadata: ``texts``, ``family``, ``word``,
    ``pair`` (index of the minimal-pair partner or -1), ``n_distractors``, ``max_iou`` (1 with ground truth).
    """

    def __init__(
        self,
        n_scenes: int,
        objects: tuple[int, int] = (8, 12),
        families: tuple[str, ...] | None = None,
        points_per_object: int = 32,
        proposals: str = "gt",
        probe: bool = False,
        noise: DetectorNoise | None = None,
        seed: int = 0,
    ) -> None:
        if not isinstance(n_scenes, int | np.integer) or n_scenes < 1:
            raise ValueError(f"n_scenes must be a positive integer, got {n_scenes!r}")
        if proposals not in ("gt", "noisy"):
            raise ValueError(f"proposals must be 'gt' or 'noisy', got {proposals!r}")
        families = tuple(families) if families is not None else FAMILIES
        unknown = [f for f in families if f not in FAMILIES]
        if unknown or not families:
            raise ValueError(f"unknown relation families {unknown}; families are {FAMILIES}")
        if points_per_object < 1:
            raise ValueError(f"points_per_object must be >= 1, got {points_per_object}")
        rng = np.random.default_rng(seed)
        self.vocab = Vocabulary()
        self.proposals = proposals
        noise = noise or DetectorNoise()
        scenes = []
        for _ in range(int(n_scenes)):
            if probe:
                scenes.append(mirror_probe(rng, points_per_object=points_per_object))
            else:
                family = None if families == FAMILIES else str(rng.choice(families))
                scenes.append(generate_scene(rng, family, objects, points_per_object))
        views = []  # per scene: boxes [K, 6] and local points [K, P, 6] that the model sees
        for s in scenes:
            views.append(
                propose(s.boxes, s.world_points(), rng, noise) if proposals == "noisy" else (s.boxes, s.local_points)
            )
        n_max = max(len(b) for b, _ in views)
        S, P = len(scenes), points_per_object
        self._points = np.zeros((S, n_max, P, 6), np.float32)
        self._boxes = np.tile(np.array([0, 0, 0, 1, 1, 1], np.float32), (S, n_max, 1))  # padding: a unit box
        self._mask = np.zeros((S, n_max), bool)
        for k, (b, p) in enumerate(views):
            self._points[k, : len(b)], self._boxes[k, : len(b)], self._mask[k, : len(b)] = p, b, True
        self.scenes = scenes
        self.scene_of, self.texts, self.family, self.word, self.pair, self.n_distractors = [], [], [], [], [], []
        target, gt_box, max_iou = [], [], []
        for k, s in enumerate(scenes):
            first = len(self.texts)
            for e in s.expressions:
                self.scene_of.append(k)
                self.texts.append(e.text)
                self.family.append(e.family)
                self.word.append(e.word)
                self.pair.append(first + e.pair if e.pair >= 0 else -1)
                self.n_distractors.append(e.n_distractors)
                gt_box.append(s.boxes[e.target])
                if proposals == "noisy":
                    best, iou = best_match(views[k][0], s.boxes[e.target])
                    target.append(best)
                    max_iou.append(iou)
                else:
                    target.append(e.target)
                    max_iou.append(1.0)
        self.scene_of = np.array(self.scene_of)
        self._tokens = self.vocab.encode(self.texts, MAX_TOKENS)
        self._target = np.array(target, np.int64)
        self._gt_box = np.array(gt_box, np.float32)
        self.max_iou = np.array(max_iou)
        self.pair = np.array(self.pair)
        self.n_distractors = np.array(self.n_distractors)

    def __len__(self) -> int:
        return len(self.texts)

    def batch(self, idx: Any) -> dict[str, torch.Tensor]:
        """A stacked batch of the expressions ``idx`` (array of indices)."""
        idx = np.asarray(idx)
        s = self.scene_of[idx]
        return {
            "points": torch.from_numpy(self._points[s]),
            "boxes": torch.from_numpy(self._boxes[s]),
            "mask": torch.from_numpy(self._mask[s]),
            "tokens": torch.from_numpy(self._tokens[idx]),
            "target": torch.from_numpy(self._target[idx]),
            "gt_box": torch.from_numpy(self._gt_box[idx]),
        }

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        if not -len(self) <= i < len(self):
            raise IndexError(f"expression {i} out of range for {len(self)} expressions")
        return {k: v[0] for k, v in self.batch([i]).items()}

    def subset(self, name: str) -> np.ndarray:
        """Indices of a named breakdown: a family, ``direction_aware``, ``symmetric`` (distance, between),
        ``attribute`` (size, colour), ``pairs`` (expressions with a minimal-pair partner) or ``all``."""
        fam = np.array(self.family)
        groups = {
            "all": np.ones(len(self), bool),
            "direction_aware": np.isin(fam, DIRECTION_AWARE),
            "symmetric": np.isin(fam, ("distance", "between")),
            "attribute": np.isin(fam, ("size", "colour")),
            "pairs": self.pair >= 0,
            **{f: fam == f for f in FAMILIES},
        }
        if name not in groups:
            raise ValueError(f"unknown breakdown {name!r}; known: {sorted(groups)}")
        return np.flatnonzero(groups[name])
