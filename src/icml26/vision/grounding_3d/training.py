"""Training and evaluation loops shared by every arm (same data order, schedule and budget for all of them)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from icml26.vision.grounding_3d.dataset import ProceduralReferDataset
from icml26.vision.grounding_3d.metrics import iou3d_aabb


@dataclass(frozen=True)
class TrainConfig:
    """AdamW with linear warm-up and cosine decay; the batch order is drawn from ``seed`` (the same for every arm)."""

    steps: int = 800
    batch: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.01
    warmup: float = 0.05
    clip: float = 1.0
    seed: int = 0


def batch_order(n: int, config: TrainConfig) -> np.ndarray:
    """[steps, batch] indices: shuffled epochs, concatenated (the same sequence for every arm of a cell)."""
    rng = np.random.default_rng(config.seed)
    need = config.steps * config.batch
    order = np.concatenate([rng.permutation(n) for _ in range(math.ceil(need / n))])
    return order[:need].reshape(config.steps, config.batch)


def fit(model: torch.nn.Module, data: ProceduralReferDataset, config: TrainConfig = TrainConfig()) -> list[float]:
    """Cross-entropy over objects (the target, or the best proposal); returns the loss per step."""
    if len(data) == 0:
        raise ValueError("cannot train on an empty dataset")
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    warm = max(1, int(config.warmup * config.steps))

    def schedule(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        return 0.1 + 0.45 * (1 + math.cos(math.pi * (step - warm) / max(1, config.steps - warm)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
    model.train()
    losses = []
    for idx in batch_order(len(data), config):
        b = data.batch(idx)
        logits = model(b["points"], b["boxes"], b["tokens"], b["mask"])
        loss = F.cross_entropy(logits, b["target"])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    model.eval()
    return losses


@dataclass
class Evaluation:
    """Per-expression outcomes of one model on one dataset."""

    chosen: np.ndarray  # index of the chosen object / proposal
    correct: np.ndarray  # chose the target (ground truth) or the best-matching proposal
    iou: np.ndarray  # IoU of the chosen box with the target's true box

    def accuracy(self, idx: Any = None) -> float:
        sel = self.correct if idx is None else self.correct[idx]
        return float(np.mean(sel)) if sel.size else float("nan")

    def acc_at(self, k: float, idx: Any = None) -> float:
        sel = self.iou if idx is None else self.iou[idx]
        return float(np.mean(sel >= k)) if sel.size else float("nan")


@torch.no_grad()
def evaluate(model: torch.nn.Module, data: ProceduralReferDataset, batch: int = 256) -> Evaluation:
    model.eval()
    chosen, ious = [], []
    for start in range(0, len(data), batch):
        b = data.batch(np.arange(start, min(len(data), start + batch)))
        pick = model(b["points"], b["boxes"], b["tokens"], b["mask"]).argmax(1)
        chosen.append(pick.numpy())
        box = b["boxes"][torch.arange(len(pick)), pick]
        ious.append(iou3d_aabb(box.double(), b["gt_box"].double()).numpy())
    chosen_all = np.concatenate(chosen)
    return Evaluation(chosen_all, chosen_all == data._target, np.concatenate(ious))
