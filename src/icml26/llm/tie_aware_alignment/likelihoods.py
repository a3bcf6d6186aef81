"""Paired-comparison likelihoods with ties (Rao-Kupper, Davidson), in log space, and their negative log-likelihood.

For a strength margin ``d = r_a - r_b`` and a tie propensity ``nu`` (``alpha = log nu``):

- Rao-Kupper (1967), ``nu >= 1``:
  ``P(a > b) = sigma(d - alpha)``, ``P(b > a) = sigma(-d - alpha)`` and
  ``P(tie) = 1 - sigma(d - alpha) - sigma(-d - alpha) = (nu^2 - 1) e^d / ((e^d + nu)(1 + nu e^d))``, computed as
  ``log P(tie) = log(nu - 1) + log(nu + 1) + log sigma(d - alpha) + log sigma(-d - alpha)``: no cancellation at any
  ``d`` (the subtraction ``1 - sigma - sigma`` underflows to 0 or goes negative for ``|d| >~ 17``);
- Davidson (1970), ``nu >= 0``: with ``log Z = logsumexp(d/2, -d/2, alpha)``,
  ``log P(a > b) = d/2 - log Z``, ``log P(b > a) = -d/2 - log Z``, ``log P(tie) = alpha - log Z``.

Both reduce to Bradley-Terry, ``P(a > b) = sigma(d)`` and ``P(tie) = 0``: Rao-Kupper at ``nu = 1``, Davidson at
``nu = 0``. Both tie probabilities are even in ``d`` and largest at ``d = 0``: a tie asks for no orientation and
pulls the margin towards zero.

Labels, everywhere in this package: ``+1`` means a is preferred, ``-1`` means b is preferred, ``0`` a tie.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import torch
import torch.nn.functional as F

__all__ = [
    "TIE_MODELS",
    "OutcomeLogProbs",
    "check_labels",
    "check_nu",
    "davidson_log_probs",
    "outcome_log_probs",
    "rao_kupper_log_probs",
    "tie_aware_loss",
]

TieModel = Literal["rao_kupper", "davidson", "bt_drop"]
TIE_MODELS: tuple[str, ...] = ("rao_kupper", "davidson", "bt_drop")
_NU_MIN = {"rao_kupper": 1.0, "davidson": 0.0, "bt_drop": 0.0}
_REDUCTIONS = ("mean", "sum", "none")


class OutcomeLogProbs(NamedTuple):
    """Log-probabilities of the three outcomes of one comparison: a wins, a tie, b wins (they sum to 1)."""

    win: torch.Tensor
    tie: torch.Tensor
    lose: torch.Tensor


def check_nu(nu: float | torch.Tensor, model: str) -> None:
    """One clear error for a tie propensity outside the model's range (``nu >= 1`` Rao-Kupper, ``>= 0`` Davidson)."""
    if model not in TIE_MODELS:
        raise ValueError(f"model must be one of {TIE_MODELS}, got {model!r}")
    if isinstance(nu, bool) or not isinstance(nu, int | float | torch.Tensor):
        raise TypeError(f"nu must be a number or a tensor, got {type(nu).__name__}")
    values = nu.detach() if isinstance(nu, torch.Tensor) else torch.tensor(float(nu))
    low = _NU_MIN[model]
    if not bool(torch.isfinite(values).all()) or bool((values < low).any()):
        why = "Rao-Kupper needs nu >= 1 (nu = 1 is Bradley-Terry)" if model == "rao_kupper" else "nu >= 0"
        raise ValueError(f"nu out of range for {model}: {why}, finite; got {nu!r}")


def _nu_tensor(nu: float | torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return nu.to(like.dtype) if isinstance(nu, torch.Tensor) else torch.tensor(float(nu), dtype=like.dtype)


def rao_kupper_log_probs(margin: torch.Tensor, nu: float | torch.Tensor = 2.0) -> OutcomeLogProbs:
    """Rao-Kupper outcome log-probabilities at margin ``d`` (any shape), stable for every ``d``; ``nu >= 1``."""
    check_nu(nu, "rao_kupper")
    margin = torch.as_tensor(margin)
    nu_t = _nu_tensor(nu, margin)
    alpha = torch.log(nu_t)
    win = F.logsigmoid(margin - alpha)
    lose = F.logsigmoid(-margin - alpha)
    tie = torch.log(nu_t - 1.0) + torch.log1p(nu_t) + win + lose  # log(nu^2 - 1) + log sigma(d-a) + log sigma(-d-a)
    return OutcomeLogProbs(win, tie, lose)


def davidson_log_probs(margin: torch.Tensor, nu: float | torch.Tensor = 1.0) -> OutcomeLogProbs:
    """Davidson outcome log-probabilities at margin ``d`` (any shape); ``nu >= 0`` (``nu = 0``: Bradley-Terry)."""
    check_nu(nu, "davidson")
    margin = torch.as_tensor(margin)
    alpha = torch.log(_nu_tensor(nu, margin))
    half = margin / 2
    log_z = torch.logaddexp(torch.logaddexp(half, -half), alpha)
    return OutcomeLogProbs(half - log_z, alpha - log_z + torch.zeros_like(margin), -half - log_z)


def outcome_log_probs(margin: torch.Tensor, nu: float | torch.Tensor, model: TieModel) -> OutcomeLogProbs:
    """The three outcome log-probabilities under ``model``; ``"bt_drop"`` is Bradley-Terry (``log P(tie) = -inf``)."""
    if model == "rao_kupper":
        return rao_kupper_log_probs(margin, nu)
    if model == "davidson":
        return davidson_log_probs(margin, nu)
    if model == "bt_drop":
        margin = torch.as_tensor(margin)
        return OutcomeLogProbs(F.logsigmoid(margin), torch.full_like(margin, -torch.inf), F.logsigmoid(-margin))
    raise ValueError(f"model must be one of {TIE_MODELS}, got {model!r}")


def check_labels(labels: torch.Tensor | list[int], n: int | None = None) -> torch.Tensor:
    """Labels as a 1-D tensor with values in {-1, 0, +1}; one clear error for anything else (booleans included:
    pass an ``is_tie`` flag through :func:`labels_from_is_tie` instead)."""
    labels = torch.as_tensor(labels)
    if labels.dtype == torch.bool:
        raise TypeError("labels must be -1 (b preferred), 0 (tie) or +1 (a preferred), not booleans")
    if labels.dim() != 1:
        raise ValueError(f"labels must be a 1-D tensor of pairs, got shape {tuple(labels.shape)}")
    if labels.numel() == 0:
        raise ValueError("empty batch: no preference pairs")
    if n is not None and labels.numel() != n:
        raise ValueError(f"labels has {labels.numel()} entries but the batch has {n} pairs")
    bad = ~((labels == 1) | (labels == 0) | (labels == -1))
    if bool(bad.any()):
        raise ValueError(
            f"labels outside {{-1, 0, 1}}: {labels[bad][:5].tolist()} (+1: a preferred, -1: b preferred, 0: tie)"
        )
    return labels


def _check_options(model: str, tie_weight: float, reduction: str) -> None:
    if model not in TIE_MODELS:
        raise ValueError(f"model must be one of {TIE_MODELS}, got {model!r}")
    if isinstance(tie_weight, bool) or not isinstance(tie_weight, int | float) or not (0 <= tie_weight < float("inf")):
        raise ValueError(f"tie_weight must be a finite number >= 0, got {tie_weight!r}")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction must be one of {_REDUCTIONS}, got {reduction!r}")


def pair_nll(margin: torch.Tensor, labels: torch.Tensor, nu: float | torch.Tensor, model: TieModel) -> torch.Tensor:
    """Per-pair ``-log P(label | d)`` (0 for ties under ``bt_drop``, whose weight is 0); no input checks."""
    lp = outcome_log_probs(margin, nu, model)
    if model == "bt_drop":
        return -torch.where(labels == 1, lp.win, torch.where(labels == -1, lp.lose, torch.zeros_like(margin)))
    return -torch.where(labels == 1, lp.win, torch.where(labels == -1, lp.lose, lp.tie))


def pair_weights(
    labels: torch.Tensor, model: TieModel, tie_weight: float | torch.Tensor, dtype: torch.dtype
) -> torch.Tensor:
    """1 for a decided pair; ``tie_weight`` for a tie (0 under ``bt_drop``: the tie is dropped). ``tie_weight`` may
    be a tensor that broadcasts against ``labels`` (one weight per row of a batch of experiments)."""
    w_tie = torch.as_tensor(0.0 if model == "bt_drop" else tie_weight, dtype=dtype)
    return torch.where(labels == 0, w_tie, torch.ones((), dtype=dtype))


def reduce_pairs(per_pair: torch.Tensor, weights: torch.Tensor, reduction: str) -> torch.Tensor:
    """Over the last dimension (the pairs): weighted mean ``sum(w l) / sum(w)`` (a batch of dropped ties gives 0,
    with a graph), sum, or the weighted per-pair terms."""
    weighted = weights * per_pair
    if reduction == "none":
        return weighted
    if reduction == "sum":
        return weighted.sum(-1)
    return weighted.sum(-1) / weights.sum(-1).clamp_min(torch.finfo(weights.dtype).tiny)


def tie_aware_loss(
    margin: torch.Tensor,
    labels: torch.Tensor | list[int],
    nu: float | torch.Tensor = 2.0,
    model: TieModel = "rao_kupper",
    tie_weight: float = 1.0,
    reduction: str = "mean",
) -> torch.Tensor:
    """Negative log-likelihood of win / tie / lose labels given strength margins ``d = r_a - r_b``.

    ``margin`` is a 1-D tensor (a reward model's score difference, or DPO's implicit margin: see
    :func:`~icml26.llm.tie_aware_alignment.tie_dpo_loss`); ``labels`` in {-1, 0, +1}. ``model``: ``"rao_kupper"``
    (``nu >= 1``), ``"davidson"`` (``nu >= 0``) or ``"bt_drop"`` (Bradley-Terry on the decided pairs, ties dropped:
    the usual practice, made explicit). A tie's term is weighted by ``tie_weight``; ``reduction="mean"`` is the
    weighted mean ``sum_i w_i l_i / sum_i w_i`` (so ``bt_drop`` is exactly DPO's mean over the decided pairs).
    ``nu`` may be a tensor (learnable: parameterise it as ``1 + softplus(u)`` for Rao-Kupper).
    """
    _check_options(model, tie_weight, reduction)
    check_nu(nu, model)
    margin = torch.as_tensor(margin)
    if margin.dim() != 1:
        raise ValueError(f"margin must be a 1-D tensor of pairs, got shape {tuple(margin.shape)}")
    labels = check_labels(labels, margin.numel()).to(margin.device)
    if not bool(torch.isfinite(margin).all()):
        raise ValueError("margin has NaN or infinite entries")
    _check_impossible_ties(labels, nu, model)
    per_pair = pair_nll(margin, labels, nu, model)
    return reduce_pairs(per_pair, pair_weights(labels, model, tie_weight, margin.dtype), reduction)


def _check_impossible_ties(labels: torch.Tensor, nu: float | torch.Tensor, model: str) -> None:
    """A tie under a model that gives ties probability 0 (Rao-Kupper at nu = 1, Davidson at nu = 0) has an infinite
    loss: say so rather than return inf."""
    boundary = _NU_MIN[model]
    if model == "bt_drop" or not bool((labels == 0).any()):
        return
    values = nu.detach() if isinstance(nu, torch.Tensor) else torch.tensor(float(nu))
    if bool((values == boundary).any()):
        raise ValueError(
            f"nu = {boundary:g} makes ties impossible under {model} (it is Bradley-Terry), but the batch has ties: use "
            f"nu > {boundary:g}, or model='bt_drop' to drop them"
        )
