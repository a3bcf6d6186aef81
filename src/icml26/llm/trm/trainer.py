"""TRL integration: ``TRMGRPOTrainer``, a ``GRPOTrainer`` whose off-policy sequence mask is TRM.

TRL 1.16 computes, when ``off_policy_mask_threshold`` is set, a ``(B, 1)`` mask from
``get_off_policy_mask(advantages, per_token_logps, sampling_per_token_logps, mask, off_policy_threshold)`` and
multiplies it into the per-token loss, after clipping and before normalisation. Its own rule is DeepSeek-V3.2's
OPSM (drop iff the *mean* KL exceeds delta *and* the advantage is negative). ``TRMGRPOTrainer`` overrides that
one hook with TRM: drop iff the *max* token divergence exceeds delta, whatever the advantage's sign.
``sampling_per_token_logps`` are the rollout engine's log-probs (vLLM, or a ``rollout_func``): divergences are
measured against pi_roll, as the method requires. Without either, TRL hands the hook its recomputed
``old_per_token_logps`` instead (pi_old, equal to pi_theta at the first step of a batch), so TRM has nothing to
mask; the constructor warns in that case. Everything else (clipping, loss type, normalisation) is TRL's.

Usage::

    trainer = TRMGRPOTrainer(model=..., reward_funcs=..., args=GRPOConfig(...), train_dataset=...,
                             trm_delta=0.05, trm_estimator="k2", trm_reduce="max")

``trm_estimator="k2"`` with ``reduce="max"`` is verl's ``rollout_rs="seq_max_k2"`` (the official code).
The masked fraction is logged as ``trm/masked_fraction``.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import torch

from icml26.llm.trm.masking import DIVERGENCES, token_divergence, trust_region_mask

try:
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from trl import GRPOConfig, GRPOTrainer
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("TRMGRPOTrainer needs TRL: pip install 'icml26[llm]'") from exc

__all__ = ["TRMGRPOTrainer", "make_rollout_func"]


class TRMGRPOTrainer(GRPOTrainer):
    """``GRPOTrainer`` with Trust Region Masking in place of OPSM (see the module docstring)."""

    def __init__(
        self,
        *args: Any,
        trm_delta: float = 0.05,
        trm_estimator: str = "k2",
        trm_reduce: str = "max",
        **kwargs: Any,
    ):
        if not trm_delta > 0:
            raise ValueError(f"trm_delta must be > 0, got {trm_delta!r}")
        if trm_estimator not in DIVERGENCES or trm_estimator == "exact":
            raise ValueError(
                f"trm_estimator must be one of abs_log_ratio, k2, k3 (TRL passes no logits), got {trm_estimator!r}"
            )
        if trm_reduce not in ("max", "mean"):
            raise ValueError(f"trm_reduce must be 'max' or 'mean', got {trm_reduce!r}")
        config = kwargs.get("args") or (args[2] if len(args) > 2 else None)
        if config is None:
            raise ValueError("pass a GRPOConfig as args=...; TRM activates TRL's off-policy mask through it")
        if not isinstance(config, GRPOConfig):
            raise TypeError(f"args must be a GRPOConfig, got {type(config).__name__}")
        if trm_estimator == "k3" and trm_reduce == "max":
            warnings.warn(
                "trm_estimator='k3' with trm_reduce='max': k3 is asymmetric (about 94 at rho = 100, 3.6 at rho = "
                "0.01) and under-detects tokens pi_theta finds unlikely; use 'k2' or 'abs_log_ratio' for the max",
                stacklevel=2,
            )
        if not getattr(config, "use_vllm", False) and kwargs.get("rollout_func") is None:
            warnings.warn(
                "TRMGRPOTrainer without vLLM or a rollout_func: TRL then passes the recomputed old log-probs "
                "(pi_old) instead of the rollout engine's, so the divergence is measured against pi_old, not "
                "pi_roll, and TRM masks (almost) nothing",
                stacklevel=2,
            )
        config.off_policy_mask_threshold = float(trm_delta)  # the switch that makes TRL call the hook
        self.trm_delta, self.trm_estimator, self.trm_reduce = float(trm_delta), trm_estimator, trm_reduce
        super().__init__(*args, **kwargs)

    def get_off_policy_mask(  # type: ignore[override]  # TRL's is a staticmethod; same call signature
        self,
        advantages: torch.Tensor,
        per_token_logps: torch.Tensor,
        sampling_per_token_logps: torch.Tensor,
        mask: torch.Tensor,
        off_policy_threshold: float,
    ) -> torch.Tensor:
        """TRM-max (or -mean) keep mask ``(B, 1)``; the advantage is ignored. Tokens the engine could not score
        (NaN log-probs) give no evidence, as in TRL: they count as zero divergence."""
        sampling = torch.nan_to_num(sampling_per_token_logps, nan=0.0)
        current = torch.where(torch.isnan(sampling_per_token_logps), sampling, per_token_logps.detach())
        div = token_divergence(current, sampling, mask, self.trm_estimator)  # type: ignore[arg-type]
        keep = trust_region_mask(div, mask, off_policy_threshold, self.trm_reduce)  # type: ignore[arg-type]
        has_tokens = mask.bool().any(dim=1, keepdim=True)
        dropped = ((keep == 0) & has_tokens).sum() / has_tokens.sum().clamp_min(1)
        mode = "train" if self.model is None or self.model.training else "eval"
        self._metrics[mode]["trm/masked_fraction"].append(float(dropped))
        return keep.to(mask.dtype)


def make_rollout_func(rollout: Any, max_new_tokens: int, seed: int = 0) -> Any:
    """A TRL ``rollout_func`` that samples with a :class:`~icml26.llm.trm.MismatchedRollout` around a causal LM.

    It tokenises the prompts with the trainer's processing class, samples ``num_generations`` completions per
    prompt from the corrupted engine, and returns the engine's log-probs, which TRL hands to the loss as
    ``sampling_per_token_logps``. Each call is one generation: it calls ``rollout.sync()`` first, so
    ``staleness=k`` means weights from k generations ago.
    """
    generator = torch.Generator().manual_seed(seed)

    def rollout_func(prompts: list[str], trainer: GRPOTrainer) -> dict[str, list[list[Any]]]:
        tokenizer = trainer.processing_class
        rollout.sync()
        prompt_ids, completion_ids, logprobs = [], [], []
        for prompt in prompts:  # TRL already repeats each prompt num_generations times
            ids = torch.tensor([tokenizer(prompt)["input_ids"]], dtype=torch.long)
            out = rollout.sample(1, max_new_tokens, generator, prompt=ids)
            prompt_ids.append(ids[0].tolist())
            completion_ids.append(out.tokens[0].tolist())
            logprobs.append(out.logp_roll[0].tolist())
        return {"prompt_ids": prompt_ids, "completion_ids": completion_ids, "logprobs": logprobs}

    return rollout_func
