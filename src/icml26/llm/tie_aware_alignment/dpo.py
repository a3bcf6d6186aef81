"""DPO on win / lose / tie labels: the implicit-reward margin under a tie-aware likelihood, and the guards (ours).

DPO's implicit reward of a response is ``h = beta * (log pi_theta(y|x) - log pi_ref(y|x))``; the margin of a pair is
``d = h_a - h_b``; the loss is ``-log P(label | d)`` under Rao-Kupper or Davidson (:mod:`.likelihoods`). A tie
term pulls ``d`` towards 0, and either response may move to satisfy it: lowering the better-rated one or raising
the other. The abstract speaks of objectives that mitigate "unreliable updates that lead to arbitrary distribution
shifts" without giving them; the guards below are **our reading**, each applied to tie pairs only:

- down-weighting: ``tie_weight < 1`` scales every tie term;
- ``guard="stop_higher"``: the tie term's gradient reaches only the response the policy currently rates lower
  (smaller ``h``); the higher one is detached, so a tie can lift a response but never push one down;
- ``guard="anchor"``: a BCO-style anchor ``anchor_weight * (softplus(-h_a) + softplus(-h_b))`` added to each
  tie term, which resists lowering either tied response below the reference.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F

from icml26.llm.tie_aware_alignment.likelihoods import (
    TieModel,
    _check_impossible_ties,
    _check_options,
    check_labels,
    check_nu,
    pair_nll,
    pair_weights,
    reduce_pairs,
)

__all__ = ["GUARDS", "labels_from_is_tie", "tie_dpo_loss"]

Guard = Literal["stop_higher", "anchor"]
GUARDS: tuple[str | None, ...] = (None, "stop_higher", "anchor")


def labels_from_is_tie(is_tie: torch.Tensor) -> torch.Tensor:
    """Labels for (chosen, rejected) pairs with a tie flag: +1 (chosen preferred) or 0 (tie, order meaningless)."""
    is_tie = torch.as_tensor(is_tie)
    if is_tie.dim() != 1:
        raise ValueError(f"is_tie must be a 1-D flag per pair, got shape {tuple(is_tie.shape)}")
    if is_tie.dtype != torch.bool:
        if not bool(((is_tie == 0) | (is_tie == 1)).all()):
            raise ValueError(f"is_tie must hold booleans (or 0/1), got values {is_tie.unique()[:5].tolist()}")
        is_tie = is_tie.bool()
    return torch.where(is_tie, 0, 1).long()


def _check_logps(tensors: dict[str, torch.Tensor]) -> int:
    shapes = {name: tuple(torch.as_tensor(t).shape) for name, t in tensors.items()}
    if len(set(shapes.values())) != 1:
        raise ValueError(f"the four log-prob tensors must have the same shape (B,), got {shapes}")
    shape = next(iter(shapes.values()))
    if len(shape) != 1:
        raise ValueError(f"log-probs must be 1-D, one summed log-prob per sequence (B,), got shape {shape}")
    if shape[0] == 0:
        raise ValueError("empty batch: no preference pairs")
    for name, t in tensors.items():
        if not bool(torch.isfinite(t).all()):
            raise ValueError(f"{name} has NaN or infinite entries (a broken forward pass, or an impossible response)")
    return shape[0]


def tie_dpo_loss(
    policy_logps_a: torch.Tensor,
    policy_logps_b: torch.Tensor,
    ref_logps_a: torch.Tensor,
    ref_logps_b: torch.Tensor,
    labels: torch.Tensor | list[int],
    beta: float = 0.1,
    nu: float | torch.Tensor = 2.0,
    model: TieModel = "rao_kupper",
    tie_weight: float = 1.0,
    guard: Guard | None = None,
    anchor_weight: float = 0.1,
    reduction: str = "mean",
) -> torch.Tensor:
    """DPO loss on win / lose / tie labels (DPO-RK, DPO-D, or DPO on the decided pairs with ties dropped).

    Parameters
    ----------
    policy_logps_a, policy_logps_b, ref_logps_a, ref_logps_b:
        summed log-probs ``(B,)`` of responses a and b under the policy and the reference.
    labels: ``(B,)`` in {-1, 0, +1}: +1 a preferred, -1 b preferred, 0 a tie (orientation irrelevant).
    beta: DPO's temperature (> 0).
    nu: tie propensity; Rao-Kupper needs ``nu >= 1``, Davidson ``nu >= 0`` (``nu`` at its lower end gives ties
        probability 0: Bradley-Terry).
    model: ``"rao_kupper"`` (DPO-RK), ``"davidson"`` (DPO-D) or ``"bt_drop"`` (plain DPO, ties dropped).
    tie_weight: weight of each tie term (down-weighting; a weighted mean over pairs with ``reduction="mean"``).
    guard: ``None``, ``"stop_higher"`` or ``"anchor"`` (ours; module docstring); tie pairs only.
    anchor_weight: weight of the ``"anchor"`` guard's term.
    reduction: ``"mean"`` (weighted mean), ``"sum"`` or ``"none"`` (weighted per-pair terms).
    """
    _check_options(model, tie_weight, reduction)
    check_nu(nu, model)
    if guard not in GUARDS:
        raise ValueError(f"guard must be one of {GUARDS}, got {guard!r}")
    if guard is not None and model == "bt_drop":
        raise ValueError(f"guard={guard!r} acts on tie terms; model='bt_drop' drops the ties (use guard=None)")
    if isinstance(beta, bool) or not isinstance(beta, int | float) or not (0 < beta < float("inf")):
        raise ValueError(f"beta must be a finite number > 0, got {beta!r}")
    if (
        isinstance(anchor_weight, bool)
        or not isinstance(anchor_weight, int | float)
        or not (0 <= anchor_weight < float("inf"))
    ):
        raise ValueError(f"anchor_weight must be a finite number >= 0, got {anchor_weight!r}")
    n = _check_logps(
        {
            "policy_logps_a": policy_logps_a,
            "policy_logps_b": policy_logps_b,
            "ref_logps_a": ref_logps_a,
            "ref_logps_b": ref_logps_b,
        }
    )
    labels = check_labels(labels, n).to(policy_logps_a.device)
    _check_impossible_ties(labels, nu, model)
    h_a = beta * (policy_logps_a - ref_logps_a)
    h_b = beta * (policy_logps_b - ref_logps_b)
    return _loss_from_rewards(h_a, h_b, labels, nu, model, tie_weight, guard, anchor_weight, reduction)


def _loss_from_rewards(
    h_a: torch.Tensor,
    h_b: torch.Tensor,
    labels: torch.Tensor,
    nu: float | torch.Tensor,
    model: TieModel,
    tie_weight: float | torch.Tensor,
    guard: str | None,
    anchor_weight: float | torch.Tensor,
    reduction: str,
) -> torch.Tensor:
    """The loss from implicit rewards, inputs already checked (the trainer and the toy call this directly).

    Shapes ``(..., B)``: leading dimensions are independent experiments (the toy trains many arms at once), with
    ``nu``, ``tie_weight`` and ``anchor_weight`` broadcasting against them; the reduction is over the pairs."""
    margin = h_a - h_b
    tie = labels == 0
    if guard == "stop_higher":
        # Same value; on ties the gradient reaches only the lower-rated side, so a tie never pushes a response down.
        a_higher = h_a.detach() >= h_b.detach()
        guarded = torch.where(a_higher, h_a.detach() - h_b, h_a - h_b.detach())
        margin = torch.where(tie, guarded, margin)
    per_pair = pair_nll(margin, labels, nu, model)
    if guard == "anchor":
        anchor = anchor_weight * (F.softplus(-h_a) + F.softplus(-h_b))
        per_pair = per_pair + torch.where(tie, anchor, torch.zeros_like(anchor))
    return reduce_pairs(per_pair, pair_weights(labels, model, tie_weight, margin.dtype), reduction)
