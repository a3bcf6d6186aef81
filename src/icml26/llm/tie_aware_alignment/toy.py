"""Train many DPO objectives at once on one :class:`PreferenceWorld`, and score them with the true reward.

Every arm (an objective and the labels it is given) trains its own linear-softmax policy on the *same* pairs, with
the same optimiser, steps and temperature; arms are stacked in one ``(R, d)`` parameter so that a whole sweep is one
vectorised run (Adam is per coordinate, and the arms' losses are summed, so they stay independent).

Parameterisation: the learned vector is ``c = beta * theta`` (``pi_theta = softmax(theta . phi)``), the
implicit-reward scale. Pairwise terms depend on ``c`` only, so the sweep's optimisation path does not depend on
``beta``; ``beta`` sets how sharp the resulting policy is (``theta = c / beta``) and enters the anchor guard.

Objectives (:class:`Objective`): ``"tie"`` is :func:`~icml26.llm.tie_aware_alignment.tie_dpo_loss` (Rao-Kupper,
Davidson, or ``bt_drop``, with the guards); on forced labels, the noise-robust baselines TRL offers, with TRL
1.16's formulas: ``"sigmoid"`` (DPO), ``"robust"`` (rDPO, ``label_smoothing`` = assumed flip rate) and ``"ipo"``
(on the summed log-ratio: a toy response has no tokens to average over); and ``"cdpo"`` (conservative DPO,
``-(1 - e) log sigma(d) - e log sigma(-d)``, which TRL 1.16's sigmoid branch no longer applies).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F

from icml26.llm.tie_aware_alignment.likelihoods import pair_nll, pair_weights, reduce_pairs
from icml26.llm.tie_aware_alignment.world import PairSet, PreferenceWorld

__all__ = ["Arm", "Objective", "TrainedArms", "train_arms"]

LossKind = Literal["tie", "sigmoid", "robust", "cdpo", "ipo"]
_LOSSES: tuple[str, ...] = ("tie", "sigmoid", "robust", "cdpo", "ipo")


@dataclass(frozen=True)
class Objective:
    """One training objective. ``loss="tie"`` uses ``model``/``nu``/``tie_weight``/``guard``/``anchor_weight``;
    ``"robust"`` and ``"cdpo"`` use ``label_smoothing``."""

    loss: LossKind = "tie"
    model: str = "bt_drop"
    nu: float = 2.0
    tie_weight: float = 1.0
    guard: str | None = None
    anchor_weight: float = 0.1
    label_smoothing: float = 0.1

    def __post_init__(self) -> None:
        if self.loss not in _LOSSES:
            raise ValueError(f"loss must be one of {_LOSSES}, got {self.loss!r}")

    @property
    def group(self) -> tuple[Any, ...]:
        """Arms in one group are computed together (tie objectives of one model share one vectorised loss, whatever
        their nu, weight and guard)."""
        return (self.loss, self.model) if self.loss == "tie" else (self.loss,)


@dataclass(frozen=True)
class Arm:
    name: str
    objective: Objective
    labels: np.ndarray  # (N,) in {-1, 0, +1}


@dataclass
class TrainedArms:
    """The learned implicit-reward vectors ``c`` (``(R, d)``), ``theta = c / beta``, and how to score them."""

    names: list[str]
    coef: torch.Tensor
    beta: float
    world: PreferenceWorld
    losses: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def theta(self) -> torch.Tensor:
        return self.coef / self.beta

    def scores(self, kl_budgets: tuple[float, ...] = ()) -> dict[str, dict[str, float]]:
        """Per arm: normalised true reward and KL at the trained ``beta``, the fraction of the true reward's
        direction captured (cosine), and the normalised reward at each matched KL budget."""
        with torch.no_grad():
            reward = self.world.normalised_reward(self.theta)
            kl = self.world.kl(self.theta)
            w = torch.from_numpy(self.world.true_weights)
            cosine = (self.coef @ w) / (self.coef.norm(dim=1) * w.norm()).clamp_min(1e-300)
            length = self.coef[:, self.world.length_feature] / self.coef.norm(dim=1).clamp_min(1e-300)
            at_kl = {k: self.world.reward_at_kl(self.coef, k) for k in kl_budgets}
        out = {}
        for i, name in enumerate(self.names):
            out[name] = {
                "reward": float(reward[i]),
                "kl": float(kl[i]),
                "cosine": float(cosine[i]),
                "length_share": float(length[i]),
                **{f"reward_at_kl_{k:g}": float(v[i]) for k, v in at_kl.items()},
            }
        return out


def _tie_rows_loss(objectives: list[Objective], h_a: torch.Tensor, h_b: torch.Tensor, labels: torch.Tensor) -> Any:
    """Per-arm :func:`~icml26.llm.tie_aware_alignment.tie_dpo_loss` (weighted mean over pairs) for rows of one
    tie model that differ in tie propensity, weight and guard: the same terms, selected row by row, so that a sweep
    costs one set of tensor operations (a unit test checks it against ``tie_dpo_loss`` arm by arm)."""
    col = {"dtype": h_a.dtype}
    model = objectives[0].model
    nu = torch.tensor([[o.nu] for o in objectives], **col)
    tie_weight = torch.tensor([[o.tie_weight] for o in objectives], **col)
    stop = torch.tensor([[o.guard == "stop_higher"] for o in objectives])
    anchor = torch.tensor([[o.guard == "anchor"] for o in objectives])
    tie = labels == 0
    margin = h_a - h_b
    if bool(stop.any()):
        a_higher = h_a.detach() >= h_b.detach()
        guarded = torch.where(a_higher, h_a.detach() - h_b, h_a - h_b.detach())
        margin = torch.where(stop & tie, guarded, margin)
    nll = pair_nll(margin, labels, nu, model)  # type: ignore[arg-type]
    if bool(anchor.any()):
        weight = torch.tensor([[o.anchor_weight] for o in objectives], **col)
        term = weight * (F.softplus(-h_a) + F.softplus(-h_b))
        nll = nll + torch.where(anchor & tie, term, torch.zeros_like(term))
    return reduce_pairs(nll, pair_weights(labels, model, tie_weight, h_a.dtype), "mean")  # type: ignore[arg-type]


def _group_loss(
    objectives: list[Objective], h_a: torch.Tensor, h_b: torch.Tensor, labels: torch.Tensor, beta: float
) -> torch.Tensor:
    """Per-arm losses ``(R_g,)`` of one group of arms (rows of ``h_a``, ``h_b``, ``labels``)."""
    first = objectives[0]
    if first.loss == "tie":
        return _tie_rows_loss(objectives, h_a, h_b, labels)
    if bool((labels == 0).any()):
        raise ValueError(f"loss={first.loss!r} needs decided labels (a forced labeler); got ties")
    d = labels * (h_a - h_b)  # oriented margin: > 0 when the preferred response is rated higher
    eps = torch.tensor([[o.label_smoothing] for o in objectives], dtype=h_a.dtype)
    if first.loss == "sigmoid":
        per = -F.logsigmoid(d)
    elif first.loss == "robust":
        per = (-(1 - eps) * F.logsigmoid(d) + eps * F.logsigmoid(-d)) / (1 - 2 * eps)
    elif first.loss == "cdpo":
        per = -(1 - eps) * F.logsigmoid(d) - eps * F.logsigmoid(-d)
    else:  # ipo: (log-ratio margin - 1 / (2 beta))^2, with log-ratio margin = d / beta
        per = (d / beta - 1 / (2 * beta)) ** 2
    return per.mean(-1)


def train_arms(
    world: PreferenceWorld,
    pairs: PairSet,
    arms: list[Arm],
    beta: float = 1.0,
    steps: int = 300,
    lr: float = 0.05,
) -> TrainedArms:
    """Adam on every arm's objective from the reference (``c = 0``), full batch, ``steps`` steps; one run for all."""
    if not arms:
        raise ValueError("no arms to train")
    n = len(pairs)
    for arm in arms:
        if np.shape(arm.labels) != (n,):
            raise ValueError(f"arm {arm.name!r}: labels must have shape ({n},), got {np.shape(arm.labels)}")
    dtype = torch.float32  # training precision; scoring is float64 (TrainedArms.scores)
    phi = torch.from_numpy(world.features).to(dtype)
    n_prompts, n_cand, n_feat = world.features.shape
    log_k = math.log(n_cand)
    prompt, a, b = (torch.from_numpy(np.asarray(v, dtype=np.int64)) for v in (pairs.prompt, pairs.a, pairs.b))
    phi_a, phi_b = phi[prompt, a].T.contiguous(), phi[prompt, b].T.contiguous()  # (d, N)
    flat = phi.reshape(n_prompts * n_cand, n_feat).T.contiguous()  # (d, P K)
    labels = torch.from_numpy(np.stack([np.asarray(arm.labels, dtype=np.int64) for arm in arms]))
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, arm in enumerate(arms):
        groups.setdefault(arm.objective.group, []).append(i)
    index = {key: torch.tensor(rows) for key, rows in groups.items()}
    # Pairwise terms need only c . phi_a - c . phi_b (the per-prompt normaliser cancels); the guards act on each
    # response's own implicit reward h = beta (log pi_theta - log pi_ref), normaliser included.
    guarded = {
        key: torch.tensor([j for j, i in enumerate(rows) if arms[i].objective.guard is not None], dtype=torch.long)
        for key, rows in groups.items()
    }
    coef = torch.zeros(len(arms), n_feat, dtype=dtype, requires_grad=True)
    opt = torch.optim.Adam([coef], lr=lr)
    last = torch.zeros(len(arms), dtype=dtype)
    for _ in range(steps):
        total = coef.new_zeros(())
        for key, rows in groups.items():
            c = coef[index[key]]
            h_a, h_b = c @ phi_a, c @ phi_b
            g = guarded[key]
            if len(g):
                log_z = torch.logsumexp((c[g] / beta @ flat).view(len(g), n_prompts, n_cand), dim=-1)
                shift = torch.zeros_like(h_a).index_put((g,), beta * (log_z - log_k)[:, prompt])
                h_a, h_b = h_a - shift, h_b - shift
            per_arm = _group_loss([arms[i].objective for i in rows], h_a, h_b, labels[index[key]], beta)
            last[index[key]] = per_arm.detach()
            total = total + per_arm.sum()
        opt.zero_grad()
        total.backward()
        opt.step()
    coef64 = coef.detach().to(torch.float64)
    return TrainedArms([arm.name for arm in arms], coef64, beta, world, last.double().numpy())
