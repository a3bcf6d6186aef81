"""Training runs at fixed steps T or at a fixed FLOP budget R, with matched learning-rate schedules.

Every run of one comparison uses the same peak learning rate, the same schedule *shape* (linear warm-up over the
first 5% of its steps, then a cosine decay to 10% of the peak at its last step), the same optimiser (Adam), the
same gradient clipping, the same initial weights (parameters do not depend on K) and the same stream of batches.
At fixed T the schedules are identical; at fixed R each run's schedule spans its own T(K) = floor(R / cost(K)),
the usual compute-matched protocol (a schedule cut short would penalise the runs with more steps).

The theory's quantity is probed every ``grad_every`` steps on a fixed large sample of the *training* distribution
(the "full batch"): f(theta_t) and ||grad f(theta_t)||^2 of the task loss alone (without the balancing loss);
its running average over the probes (1/T) sum_t ||grad f||^2 is the left side of the fixed-T bound.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from icml26.llm.moe_topk.data import MixtureOfRegressions, char_corpus
from icml26.llm.moe_topk.flops import MoEConfig, flops_per_step, steps_for_budget
from icml26.llm.moe_topk.models import build_model

__all__ = ["CharLMTask", "RegressionTask", "lr_at", "sweep", "train_run"]

WARMUP = 0.05
FINAL_LR = 0.1


def lr_at(step: int, total: int, peak: float, warmup: float = WARMUP, final: float = FINAL_LR) -> float:
    """Linear warm-up over ``warmup * total`` steps, then cosine from ``peak`` to ``final * peak`` at the last step."""
    n_warm = max(1, round(warmup * total))
    if step < n_warm:
        return peak * (step + 1) / n_warm
    span = max(1, total - n_warm - 1)
    progress = min(1.0, (step - n_warm) / span)
    return peak * (final + (1 - final) * 0.5 * (1 + math.cos(math.pi * progress)))


@dataclass
class RegressionTask:
    """The synthetic mixture of regressions (:class:`MixtureOfRegressions`) with a token-wise MoE regressor."""

    config: MoEConfig
    world_seed: int
    batch_size: int = 256
    eval_size: int = 8192
    probe_size: int = 4096
    world: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._world = MixtureOfRegressions(
            input_size=self.config.input_size, output_size=self.config.output_size, seed=self.world_seed, **self.world
        )
        g = torch.Generator().manual_seed(self.world_seed + 7)
        self.eval_batch = self._world.sample(self.eval_size, g)
        self.probe_batch = self._world.sample(self.probe_size, g)

    @property
    def tokens_per_step(self) -> int:
        return self.batch_size

    def train_batch(self, generator: torch.Generator) -> Any:
        return self._world.sample(self.batch_size, generator)


@dataclass
class CharLMTask:
    """Next-character prediction on Shakespeare with :class:`CharMoELM` (train: comedies and histories; evaluation:
    windows of the held-out tragedies). ``config.max_position_embeddings`` is the window length."""

    config: MoEConfig
    world_seed: int
    batch_size: int = 16
    eval_windows: int = 256
    probe_windows: int = 32

    def __post_init__(self) -> None:
        corpus = char_corpus()
        if self.config.vocab_size != corpus.vocab_size:
            raise ValueError(f"config.vocab_size must be the corpus' {corpus.vocab_size}, got {self.config.vocab_size}")
        self._corpus = corpus
        seq = self.config.max_position_embeddings
        # evaluation windows are fixed for the whole study (seed-independent); the probe follows the seed
        self.eval_batch = corpus.windows("valid", self.eval_windows, seq, torch.Generator().manual_seed(12345))
        self.probe_batch = corpus.windows(
            "train", self.probe_windows, seq, torch.Generator().manual_seed(self.world_seed + 7)
        )

    @property
    def tokens_per_step(self) -> int:
        return self.batch_size * self.config.max_position_embeddings

    def train_batch(self, generator: torch.Generator) -> Any:
        return self._corpus.batch(self.batch_size, self.config.max_position_embeddings, generator)


Task = RegressionTask | CharLMTask


def _make_model(task: Task, k: int, seed: int) -> nn.Module:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build_model(task.config.with_k(k))


def _probe(model: nn.Module, batch: Any) -> tuple[float, float]:
    """f(theta) and ||grad f(theta)||^2 of the task loss on a fixed batch (the aux loss is not part of f)."""
    model.zero_grad(set_to_none=True)
    loss, _ = model.loss(batch)
    loss.backward()
    sq = sum(float(p.grad.pow(2).sum()) for p in model.parameters() if p.grad is not None)
    model.zero_grad(set_to_none=True)
    return float(loss.detach()), sq


def _evaluate(model: nn.Module, batch: Any) -> float:
    with torch.no_grad():
        return float(model.loss(batch)[0])


def train_run(
    task: Task,
    k: int,
    steps: int,
    seed: int,
    lr: float,
    grad_every: int | None = None,
    clip: float = 1.0,
) -> dict[str, Any]:
    """Train one model at K = ``k`` for ``steps`` steps; the init and batch stream depend on ``seed`` only.

    Returns the final held-out loss ``eval_loss``, the final full-batch training loss ``train_loss``, the FLOPs
    spent, and with ``grad_every`` the probes (step, f, ||grad f||^2) and their running average ``running_grad_sq``.
    """
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive int, got {steps!r}")
    model = _make_model(task, k, seed)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=lr, foreach=True)
    data = torch.Generator().manual_seed(int(seed) * 1_000_003 + 17)
    probes: list[tuple[int, float, float]] = []
    for step in range(steps):
        if grad_every and step % grad_every == 0:
            probes.append((step, *_probe(model, task.probe_batch)))
        for group in opt.param_groups:
            group["lr"] = lr_at(step, steps, lr)
        loss, aux = model.loss(task.train_batch(data))
        if not torch.isfinite(loss):
            raise FloatingPointError(f"training diverged at step {step} (K = {k}, lr = {lr})")
        opt.zero_grad(set_to_none=True)
        (loss + aux).backward()
        nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
    final_f, final_sq = _probe(model, task.probe_batch)
    out: dict[str, Any] = {
        "k": k,
        "steps": steps,
        "flops": flops_per_step(task.config, task.tokens_per_step, k) * steps,
        "eval_loss": _evaluate(model, task.eval_batch),
        "train_loss": final_f,
        "final_grad_sq": final_sq,
    }
    if grad_every:
        out["probes"] = probes
        out["running_grad_sq"] = float(np.mean([p[2] for p in probes]))
    return out


def sweep(task: Task, ks: Iterable[int], budget: float, seeds: Sequence[int], lr: float = 3e-3) -> dict[str, Any]:
    """A fixed-budget sweep over K: every (K, seed) trains for T(K) = floor(R / cost(K)) steps (JSON-serialisable).

    Returns ``{"budget", "tokens_per_step", "runs": [{"k", "seed", "steps", "flops", "eval_loss", "train_loss"}]}``.
    """
    ks = [int(k) for k in ks]
    runs = []
    for seed in seeds:
        for k in ks:
            steps = steps_for_budget(budget, task.config, k, task.tokens_per_step)
            r = train_run(task, k, steps, int(seed), lr)
            runs.append(
                {"seed": int(seed), **{key: r[key] for key in ("k", "steps", "flops", "eval_loss", "train_loss")}}
            )
    return {"budget": float(budget), "tokens_per_step": task.tokens_per_step, "runs": runs}
