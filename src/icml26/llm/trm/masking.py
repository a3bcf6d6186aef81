"""Token divergences, the trust-region sequence mask, and the masked clipped policy loss.

Shapes: ``(B, T)`` for per-token tensors (B sequences, T completion positions), ``mask`` is 1 on valid
(completion) tokens and 0 on padding. Every function ignores what sits at padded positions, NaN included: padded
values are replaced *before* any arithmetic, so a NaN there never reaches a max, a mean or a gradient.

1. Per-token divergence between the rollout policy pi_roll (the inference engine that sampled the tokens) and
   the trained policy pi_theta, with log rho_t = log pi_theta(y_t|c_t) - log pi_roll(y_t|c_t):

   - ``"exact"``: d_t = KL(pi_roll(.|c_t) || pi_theta(.|c_t)), from the full logits of both engines;
   - ``"abs_log_ratio"``: |log rho_t|, a symmetric one-sample detector;
   - ``"k2"``: (log rho_t)^2 / 2, verl's ``seq_max_k2`` detector (second-order accurate for the KL);
   - ``"k3"``: rho_t - 1 - log rho_t, unbiased for KL(pi_roll || pi_theta) under y_t ~ pi_roll, but asymmetric
     (about 94 at rho = 100, only 3.6 at rho = 0.01): a poor detector under a max, kept for TRM-avg.

2. Trust region mask, one bit per sequence: M_i = 1[max_t d_it <= delta] over valid tokens (TRM-max), or the
   mean over valid tokens (TRM-avg). A sequence with no valid token is kept (its loss is zero anyway).
3. Loss: the PPO/GRPO clipped surrogate on the kept sequences only, with the rollout importance weight
   pi_old / pi_roll (truncated at ``is_cap``, TRL's ``token_truncate``) as a detached coefficient. TRM composes
   with clipping; it does not replace it.

Baseline masks (reimplemented from TRL 1.16 for paired comparisons): ``token_mask`` (TRL
``vllm_importance_sampling_mode="token_mask"``), ``sequence_ratio_mask`` (``"sequence_mask"``: the product ratio),
and ``opsm_mask`` (DeepSeek-V3.2's off-policy sequence mask: mean KL above delta *and* negative advantage).

References
----------
- Y. Li, J. Liu, J. Xu, Y. Tong, Z. Li, B. Wang, "Trust Region Masking for Long-Horizon LLM Reinforcement
  Learning", arXiv 2512.23075; official code: verl PR #4544 (``rollout_rs="seq_max_k2"``).
- J. Schulman et al., "Proximal Policy Optimization Algorithms", 2017 (the clipped surrogate).
- Z. Shao et al., "DeepSeekMath" (GRPO), 2024.
- J. Schulman, "Approximating KL divergence" (k1/k2/k3 estimators), 2020.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

__all__ = [
    "DIVERGENCES",
    "PolicyLoss",
    "masked_policy_loss",
    "opsm_mask",
    "sequence_ratio_mask",
    "token_divergence",
    "token_mask",
    "trust_region_mask",
]

Divergence = Literal["abs_log_ratio", "k2", "k3", "exact"]
DIVERGENCES: tuple[str, ...] = ("abs_log_ratio", "k2", "k3", "exact")


def _valid(mask: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """The mask as a bool tensor of ``like``'s shape, with a clear error on a shape mismatch."""
    if mask.shape != like.shape:
        raise ValueError(f"mask has shape {tuple(mask.shape)}, expected {tuple(like.shape)} (B, T)")
    return mask.bool()


def _check_pair(a: torch.Tensor, b: torch.Tensor, names: str) -> None:
    if a.shape != b.shape:
        raise ValueError(f"{names} must have the same shape, got {tuple(a.shape)} and {tuple(b.shape)}")
    if a.dim() != 2:
        raise ValueError(f"{names} must be (B, T), got {a.dim()} dimension(s)")


def _masked_log_ratio(logp_cur: torch.Tensor, logp_roll: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """log rho_t on valid tokens, exactly 0 on padding (whatever garbage, NaN or inf the padding holds)."""
    zero = torch.zeros((), dtype=logp_cur.dtype, device=logp_cur.device)
    return torch.where(valid, logp_cur, zero) - torch.where(valid, logp_roll, zero)


def token_divergence(
    logp_cur: torch.Tensor,
    logp_roll: torch.Tensor,
    mask: torch.Tensor,
    kind: Divergence = "k2",
    logits_cur: torch.Tensor | None = None,
    logits_roll: torch.Tensor | None = None,
) -> torch.Tensor:
    """Per-token divergence d_t between pi_roll and pi_theta, ``(B, T)``, exactly 0 on padding.

    ``logp_cur``/``logp_roll`` are log pi(y_t|c_t) of the sampled tokens under pi_theta and pi_roll. ``"exact"``
    needs the full ``(B, T, V)`` logits of both (rollout logits as the engine used them: after temperature,
    top-p, rounding; -inf for tokens outside its support) and returns KL(pi_roll || pi_theta) per position.
    Nothing is differentiated: divergences feed masks, never gradients.
    """
    if kind not in DIVERGENCES:
        raise ValueError(f"kind must be one of {DIVERGENCES}, got {kind!r}")
    with torch.no_grad():
        if kind == "exact":
            if logits_cur is None or logits_roll is None:
                raise ValueError("kind='exact' needs logits_cur and logits_roll, (B, T, V)")
            if logits_cur.shape != logits_roll.shape or logits_cur.shape[:2] != mask.shape:
                raise ValueError(
                    f"logits must both be (B, T, V) with (B, T) = {tuple(mask.shape)}; got "
                    f"{tuple(logits_cur.shape)} and {tuple(logits_roll.shape)}"
                )
            valid = mask.bool()
            lp_roll = torch.log_softmax(logits_roll.float(), dim=-1)
            lp_cur = torch.log_softmax(logits_cur.float(), dim=-1)
            p_roll = lp_roll.exp()
            # 0 * log 0 = 0: tokens outside pi_roll's support (top-p) contribute nothing.
            terms = torch.where(p_roll > 0, p_roll * (lp_roll - lp_cur), torch.zeros_like(p_roll))
            kl = terms.sum(-1).clamp_min(0.0)
            return torch.where(valid, kl, torch.zeros_like(kl))
        _check_pair(logp_cur, logp_roll, "logp_cur and logp_roll")
        log_ratio = _masked_log_ratio(logp_cur.detach(), logp_roll.detach(), _valid(mask, logp_cur))
        if kind == "abs_log_ratio":
            return log_ratio.abs()
        if kind == "k2":
            return 0.5 * log_ratio.square()
        return torch.expm1(log_ratio) - log_ratio  # k3 = rho - 1 - log rho, 0 on padding


def trust_region_mask(
    div: torch.Tensor, mask: torch.Tensor, delta: float, reduce: Literal["max", "mean"] = "max"
) -> torch.Tensor:
    """Keep (1.0) or drop (0.0) each sequence, ``(B, 1)``: 1[max_t d_t <= delta] (or the mean) over valid tokens.

    Padding never enters the reduction: for the max, padded positions are -inf; for the mean, they are
    excluded from both sum and count. A sequence without any valid token is kept (it carries no loss).
    """
    if not delta > 0:
        raise ValueError(f"delta must be > 0, got {delta!r}")
    if reduce not in ("max", "mean"):
        raise ValueError(f"reduce must be 'max' or 'mean', got {reduce!r}")
    if div.dim() != 2:
        raise ValueError(f"div must be (B, T), got shape {tuple(div.shape)}")
    valid = _valid(mask, div)
    with torch.no_grad():
        if reduce == "max":
            stat = torch.where(valid, div, torch.full_like(div, -torch.inf)).amax(dim=1, keepdim=True)
        else:
            total = torch.where(valid, div, torch.zeros_like(div)).sum(dim=1, keepdim=True)
            stat = total / valid.sum(dim=1, keepdim=True).clamp_min(1)
        keep = (stat <= delta) | ~valid.any(dim=1, keepdim=True)
    return keep.to(div.dtype if div.is_floating_point() else torch.float32)


# ------------------------------------------------------------------------------------------ TRL baselines
def token_mask(
    logp_cur: torch.Tensor, logp_roll: torch.Tensor, mask: torch.Tensor, low: float = 0.0, high: float = 3.0
) -> torch.Tensor:
    """TRL's ``token_mask``: per-token weight rho_t if low <= rho_t <= high, else 0 (``(B, T)``, 0 on padding)."""
    _check_pair(logp_cur, logp_roll, "logp_cur and logp_roll")
    valid = _valid(mask, logp_cur)
    rho = _masked_log_ratio(logp_cur.detach(), logp_roll.detach(), valid).exp()
    keep = (rho >= low) & (rho <= high) & valid
    return torch.where(keep, rho, torch.zeros_like(rho))


def sequence_ratio_mask(
    logp_cur: torch.Tensor, logp_roll: torch.Tensor, mask: torch.Tensor, low: float = 0.0, high: float = 3.0
) -> torch.Tensor:
    """TRL's ``sequence_mask``: the sequence ratio prod_t rho_t if in [low, high], else 0 (``(B, 1)``)."""
    _check_pair(logp_cur, logp_roll, "logp_cur and logp_roll")
    log_ratio = _masked_log_ratio(logp_cur.detach(), logp_roll.detach(), _valid(mask, logp_cur))
    rho_seq = log_ratio.sum(dim=1, keepdim=True).exp()
    return torch.where((rho_seq >= low) & (rho_seq <= high), rho_seq, torch.zeros_like(rho_seq))


def opsm_mask(
    advantages: torch.Tensor, logp_cur: torch.Tensor, logp_roll: torch.Tensor, mask: torch.Tensor, delta: float
) -> torch.Tensor:
    """TRL's ``get_off_policy_mask`` (OPSM): drop a sequence iff mean_t(log pi_roll - log pi_theta) > delta
    *and* its advantage is negative (``(B, 1)``). Sign-aware and mean-based: the two differences from TRM."""
    _check_pair(logp_cur, logp_roll, "logp_cur and logp_roll")
    valid = _valid(mask, logp_cur)
    kl = -_masked_log_ratio(logp_cur.detach(), logp_roll.detach(), valid)
    mean_kl = kl.sum(1, keepdim=True) / valid.sum(1, keepdim=True).clamp_min(1)
    adv = advantages.reshape(-1, 1) if advantages.dim() == 1 else advantages[:, :1]
    return ((adv >= 0) | (mean_kl <= delta)).to(logp_cur.dtype)


# --------------------------------------------------------------------------------------------------- loss
@dataclass(frozen=True)
class PolicyLoss:
    """The scalar loss and what a trainer should log with it."""

    loss: torch.Tensor
    masked_fraction: float  # share of sequences (with at least one valid token) that TRM dropped
    kept_tokens: int
    max_divergence: torch.Tensor  # (B,) per-sequence max_t d_t over valid tokens (0 for empty rows)


def masked_policy_loss(
    logp_cur: torch.Tensor,
    logp_old: torch.Tensor,
    logp_roll: torch.Tensor,
    adv: torch.Tensor,
    mask: torch.Tensor,
    delta: float | None,
    clip_eps: float = 0.2,
    normalize: Literal["kept_tokens", "all_tokens"] = "all_tokens",
    kind: Divergence = "k2",
    reduce: Literal["max", "mean"] = "max",
    is_cap: float | None = 3.0,
) -> PolicyLoss:
    """PPO/GRPO clipped surrogate over the sequences TRM keeps.

    per-token loss = -min(r_t A, clip(r_t, 1 - eps, 1 + eps) A) * w_t * M_i, with r_t = pi_theta / pi_old (the
    PPO ratio against the recomputed old policy), w_t = min(pi_old / pi_roll, is_cap) (detached rollout
    correction, TRL's ``token_truncate``; ``is_cap=None`` turns it off) and M_i the trust-region mask computed
    from the divergence between **pi_roll** and pi_theta (not pi_old: pi_old equals pi_theta at the first step
    and would leave nothing to mask). ``delta=None`` disables masking.

    Normalisation (the abstract leaves it open):

    - ``"all_tokens"`` (default): divide by every valid token of the batch, kept or not. Masking then lowers the
      gradient's scale in proportion to what it drops; the step size never grows because of the mask.
    - ``"kept_tokens"``: divide by the valid tokens of kept sequences (DAPO-style token mean over what is
      trained on). When many sequences are masked this silently raises the effective learning rate; log
      ``masked_fraction``.

    Raises ValueError if the shapes disagree; if every sequence is masked the loss is an exact zero that still
    carries a graph (a no-op step), never a NaN.
    """
    _check_pair(logp_cur, logp_old, "logp_cur and logp_old")
    _check_pair(logp_cur, logp_roll, "logp_cur and logp_roll")
    valid = _valid(mask, logp_cur)
    if normalize not in ("kept_tokens", "all_tokens"):
        raise ValueError(f"normalize must be 'kept_tokens' or 'all_tokens', got {normalize!r}")
    if adv.dim() == 1:
        adv = adv.unsqueeze(1)
    if adv.shape[0] != logp_cur.shape[0] or adv.shape[1] not in (1, logp_cur.shape[1]):
        raise ValueError(f"adv must be (B,), (B, 1) or (B, T) with B = {logp_cur.shape[0]}, got {tuple(adv.shape)}")
    zero = torch.zeros((), dtype=logp_cur.dtype, device=logp_cur.device)
    if adv.shape[1] > 1:
        adv = torch.where(valid, adv, zero)
    lp_cur = torch.where(valid, logp_cur, zero)
    lp_old = torch.where(valid, logp_old, zero).detach()
    ratio = torch.exp(lp_cur - lp_old)
    surrogate = torch.minimum(ratio * adv, ratio.clamp(1 - clip_eps, 1 + clip_eps) * adv)
    if is_cap is not None:
        surrogate = surrogate * _masked_log_ratio(lp_old, logp_roll.detach(), valid).exp().clamp(max=is_cap)
    div = token_divergence(logp_cur, logp_roll, mask, kind)
    has_tokens = valid.any(dim=1)
    keep = torch.ones_like(div[:, :1]) if delta is None else trust_region_mask(div, mask, delta, reduce)
    token_weight = valid.to(surrogate.dtype) * keep
    denominator = valid.sum() if normalize == "all_tokens" else token_weight.sum()
    loss = -(surrogate * token_weight).sum() / denominator.clamp_min(1)
    dropped = ((keep[:, 0] == 0) & has_tokens).sum()
    return PolicyLoss(
        loss=loss,
        masked_fraction=float(dropped / has_tokens.sum().clamp_min(1)),
        kept_tokens=int(token_weight.sum()),
        max_divergence=torch.where(valid, div, torch.zeros_like(div)).amax(dim=1),
    )
