"""Token divergences, the trust-region sequence mask, and the masked clipped policy loss.

Shapes: ``(B, T)`` for per-token tensors (B sequences, T completion positions), ``mask`` is 1 on valid
(completion) tokens and 0 on padding. Every function ignores what sits at padded positions, NaN included: padded
values are replaced *before* any arithmetic, so a NaN there never reaches a max, a mean or a gradient.

NaN at a *valid* token, one rule everywhere (these functions and :class:`~icml26.llm.trm.TRMGRPOTrainer`'s hook,
which calls them):

- a NaN rollout log-prob (``logp_roll``: an engine that could not score the token) carries no evidence: the
  token's log-ratio is taken as 0 (divergence 0, importance weight 1), as TRL does for its own OPSM and
  importance-sampling ratios; the rest of the sequence still decides its mask;
- a NaN trained-policy log-prob (``logp_cur``, ``logp_old``) is a broken forward pass: ``ValueError``, never a
  silently dropped sequence or a NaN loss.

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

import math
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


def _checked(mask: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """The mask itself, after a clear error if it does not have ``like``'s shape."""
    if mask.shape != like.shape:
        raise ValueError(f"mask has shape {tuple(mask.shape)}, expected {tuple(like.shape)} (B, T)")
    return mask


def _valid(mask: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """The mask as a bool tensor of ``like``'s shape, with a clear error on a shape mismatch."""
    return _checked(mask, like).bool()


def _check_pair(a: torch.Tensor, b: torch.Tensor, names: str) -> None:
    if a.shape != b.shape:
        raise ValueError(f"{names} must have the same shape, got {tuple(a.shape)} and {tuple(b.shape)}")
    if a.dim() != 2:
        raise ValueError(f"{names} must be (B, T), got {a.dim()} dimension(s)")


def _masked_sum(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """sum_t x_t w_t in one pass (a dot product, no temporary): NaN if x is NaN at a valid token, and also if x is
    NaN or inf at a padded one (inf * 0 = NaN)."""
    return torch.dot(x.reshape(-1), weight.reshape(-1)) if x.numel() else x.new_zeros(())


def _padded_nan(x: torch.Tensor, weight: torch.Tensor) -> bool:
    """Whether ``x`` is NaN at a valid token (fast path: a finite masked sum, the usual case, costs one pass)."""
    if torch.isfinite(_masked_sum(x, weight)):
        return False
    return bool(torch.isnan(torch.where(weight.bool(), x, torch.zeros_like(x))).any())


def _masked_log_ratio(
    logp_cur: torch.Tensor, logp_roll: torch.Tensor, valid: torch.Tensor, cur_name: str = "logp_cur"
) -> torch.Tensor:
    """log rho_t on valid tokens, exactly 0 on padding (whatever garbage, NaN or inf the padding holds).

    A NaN of ``logp_roll`` at a valid token gives 0 (no evidence, as in TRL); a NaN of ``logp_cur`` there raises;
    an infinite ratio stays decisive (+-float max: divergence inf, masked). Float arithmetic only, in place (no
    boolean selects): this is the hot path of the mask.
    """
    weight = valid.to(logp_cur.dtype)
    if _padded_nan(logp_cur, weight):
        raise ValueError(
            f"{cur_name} (the trained policy's log-probs) is NaN at a valid token: the model's forward pass is "
            "broken (padding may hold NaN; valid tokens may not)"
        )
    big = torch.finfo(logp_cur.dtype).max
    return torch.sub(logp_cur, logp_roll).nan_to_num_(nan=0.0, posinf=big, neginf=-big).mul_(weight)


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
            if torch.isnan(logits_cur).any(-1).logical_and_(valid).any():
                raise ValueError("logits_cur (the trained policy's) is NaN at a valid token: broken forward pass")
            lp_roll = torch.log_softmax(logits_roll.float(), dim=-1)
            lp_cur = torch.log_softmax(logits_cur.float(), dim=-1)
            p_roll = lp_roll.exp()
            # 0 * log 0 = 0: tokens outside pi_roll's support (top-p) contribute nothing.
            terms = torch.where(p_roll > 0, p_roll * (lp_roll - lp_cur), torch.zeros_like(p_roll))
            kl = terms.sum(-1).clamp_min(0.0)
            scored = valid & ~torch.isnan(kl)  # NaN engine logits: no evidence, as for NaN engine log-probs
            return torch.where(scored, kl, torch.zeros_like(kl))
        _check_pair(logp_cur, logp_roll, "logp_cur and logp_roll")
        log_ratio = _masked_log_ratio(logp_cur.detach(), logp_roll.detach(), _checked(mask, logp_cur))
        if kind == "abs_log_ratio":
            return log_ratio.abs_()
        if kind == "k2":
            return log_ratio.square_().mul_(0.5)
        return torch.expm1(log_ratio).sub_(log_ratio)  # k3 = rho - 1 - log rho, 0 on padding


def trust_region_mask(
    div: torch.Tensor, mask: torch.Tensor, delta: float, reduce: Literal["max", "mean"] = "max"
) -> torch.Tensor:
    """Keep (1.0) or drop (0.0) each sequence, ``(B, 1)``: 1[max_t d_t <= delta] (or the mean) over valid tokens.

    Padding (whatever it holds) enters the max as 0, which never changes whether the max exceeds delta > 0,
    and is left out of the mean's count. A sequence without any valid token is kept (it carries no loss). NaN at
    a valid token raises (see the module docstring); +inf there drops the sequence.
    """
    if not delta > 0:
        raise ValueError(f"delta must be > 0, got {delta!r}")
    if reduce not in ("max", "mean"):
        raise ValueError(f"reduce must be 'max' or 'mean', got {reduce!r}")
    if div.dim() != 2:
        raise ValueError(f"div must be (B, T), got shape {tuple(div.shape)}")
    if mask.shape != div.shape:
        raise ValueError(f"mask has shape {tuple(mask.shape)}, expected {tuple(div.shape)} (B, T)")
    with torch.no_grad():
        weight = mask.to(div.dtype) if div.is_floating_point() else mask.float()
        div = div.to(weight.dtype)
        if torch.isfinite(_masked_sum(div, weight)):  # no NaN or inf anywhere (the usual case): one pass
            clean = div * weight  # padding -> 0
        else:
            if _padded_nan(div, weight):
                raise ValueError(
                    "div is NaN at a valid token; token_divergence gives 0 for tokens the engine could not score "
                    "(NaN rollout log-probs), so compute div with it or replace such NaN by 0 yourself"
                )
            big = torch.finfo(weight.dtype).max
            clean = torch.nan_to_num(div, nan=0.0, posinf=big, neginf=-big).mul_(weight)  # padding -> 0
        # Padding (and an empty row) enters as 0 <= delta: it never changes whether max_t d_t <= delta.
        if reduce == "max":
            stat = clean.amax(dim=1, keepdim=True) if clean.shape[1] else clean.new_zeros(clean.shape[0], 1)
        else:
            stat = clean.sum(dim=1, keepdim=True) / weight.sum(dim=1, keepdim=True).clamp_min(1)
        keep = stat <= delta
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

    Raises ValueError if the shapes disagree, ``clip_eps`` is negative or not finite, ``is_cap`` is not positive,
    or a trained-policy log-prob is NaN at a valid token; a NaN rollout log-prob there is no evidence (weight 1,
    divergence 0; see the module docstring). If every sequence is masked the loss is an exact zero that still
    carries a graph (a no-op step), never a NaN.
    """
    _check_pair(logp_cur, logp_old, "logp_cur and logp_old")
    _check_pair(logp_cur, logp_roll, "logp_cur and logp_roll")
    valid = _valid(mask, logp_cur)
    if normalize not in ("kept_tokens", "all_tokens"):
        raise ValueError(f"normalize must be 'kept_tokens' or 'all_tokens', got {normalize!r}")
    if not (isinstance(clip_eps, int | float) and math.isfinite(clip_eps) and clip_eps >= 0):
        raise ValueError(f"clip_eps must be a finite number >= 0 (PPO's epsilon, e.g. 0.2), got {clip_eps!r}")
    if is_cap is not None and not (isinstance(is_cap, int | float) and is_cap > 0):
        raise ValueError(f"is_cap must be > 0 or None (no rollout correction), got {is_cap!r}")
    if delta is not None and not (isinstance(delta, int | float) and delta > 0):
        raise ValueError(f"delta must be > 0 or None (no masking), got {delta!r}")
    if torch.isnan(torch.where(valid, logp_old, torch.zeros_like(logp_old))).any():
        raise ValueError("logp_old (the recomputed old policy's log-probs) is NaN at a valid token")
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
