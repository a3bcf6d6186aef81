"""TRL integration: ``TRMGRPOConfig`` and ``TRMGRPOTrainer``, a ``GRPOTrainer`` whose off-policy mask is TRM.

TRL 1.16 computes, when ``off_policy_mask_threshold`` is set, a ``(B, 1)`` mask from
``get_off_policy_mask(advantages, per_token_logps, sampling_per_token_logps, mask, off_policy_threshold)`` and
multiplies it into the per-token loss, after clipping and before normalisation. Its own rule is DeepSeek-V3.2's
OPSM (drop iff the *mean* KL exceeds delta *and* the advantage is negative). ``TRMGRPOTrainer`` overrides that
one hook with TRM: drop iff the *max* token divergence exceeds delta, whatever the advantage's sign.
``sampling_per_token_logps`` are the rollout engine's log-probs (vLLM, or a ``rollout_func``): divergences are
measured against pi_roll, as the method requires. Without either, TRL hands the hook its recomputed
``old_per_token_logps`` instead (pi_old, equal to pi_theta at the first step of a batch), so TRM has nothing to
mask; the constructor warns in that case. Everything else (clipping, loss type, normalisation) is TRL's.

TRM's settings live in the config, as every TRL option does: :class:`TRMGRPOConfig` is a ``GRPOConfig`` with
``trm_delta``, ``trm_estimator`` and ``trm_reduce``; it sets its own ``off_policy_mask_threshold`` to
``trm_delta`` (the switch that makes TRL call the hook), so no caller's object is ever modified.

Usage::

    args = TRMGRPOConfig(output_dir="out", trm_delta=0.05, trm_estimator="k2", trm_reduce="max", ...)
    trainer = TRMGRPOTrainer(model=..., reward_funcs=..., args=args, train_dataset=..., rollout_func=...)

``trm_estimator="k2"`` with ``reduce="max"`` is verl's ``rollout_rs="seq_max_k2"`` (the official code).
The masked fraction is logged as ``trm/masked_fraction``.

NaN: the hook calls :func:`~icml26.llm.trm.token_divergence`, so it follows the core's single rule: a NaN engine
log-prob at a valid token (a token vLLM could not score) carries no evidence (divergence 0; TRL's OPSM does the
same), a NaN trained-policy log-prob raises ``ValueError``.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from typing import Any

import torch

from icml26.llm.trm.masking import DIVERGENCES, token_divergence, trust_region_mask

try:
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from trl import GRPOConfig, GRPOTrainer
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("TRMGRPOTrainer needs TRL: pip install 'icml26[llm]'") from exc

__all__ = ["TRMGRPOConfig", "TRMGRPOTrainer", "make_rollout_func"]

_ESTIMATORS = tuple(k for k in DIVERGENCES if k != "exact")  # TRL hands the hook log-probs, not logits


@dataclass
class TRMGRPOConfig(GRPOConfig):
    """``GRPOConfig`` plus Trust Region Masking (see the module docstring).

    Parameters
    ----------
    trm_delta: trust-region threshold on the per-token divergence (ours: 0.05 on k2, |log rho| <= 0.32; the
        abstract gives no value: tune it so that a small share, <~ 20%, of sequences is masked).
    trm_estimator: ``"k2"`` (default, verl's ``seq_max_k2``), ``"abs_log_ratio"`` or ``"k3"``.
    trm_reduce: ``"max"`` (TRM-max, the paper's rule) or ``"mean"`` (TRM-avg).

    ``off_policy_mask_threshold`` is set to ``trm_delta``; giving it a different value is an error.
    """

    trm_delta: float = field(default=0.05, metadata={"help": "TRM threshold on the per-token divergence."})
    trm_estimator: str = field(default="k2", metadata={"help": f"Per-token divergence, one of {_ESTIMATORS}."})
    trm_reduce: str = field(default="max", metadata={"help": "Sequence reduction: 'max' (TRM-max) or 'mean'."})

    def __post_init__(self) -> None:
        if isinstance(self.trm_delta, bool) or not (isinstance(self.trm_delta, int | float) and self.trm_delta > 0):
            raise ValueError(f"trm_delta must be a number > 0, got {self.trm_delta!r}")
        if self.trm_estimator not in _ESTIMATORS:
            raise ValueError(
                f"trm_estimator must be one of {_ESTIMATORS} (TRL passes no logits), got {self.trm_estimator!r}"
            )
        if self.trm_reduce not in ("max", "mean"):
            raise ValueError(f"trm_reduce must be 'max' or 'mean', got {self.trm_reduce!r}")
        if self.off_policy_mask_threshold is not None and self.off_policy_mask_threshold != self.trm_delta:
            raise ValueError(
                f"off_policy_mask_threshold={self.off_policy_mask_threshold!r} conflicts with trm_delta="
                f"{self.trm_delta!r}: TRMGRPOConfig sets the threshold from trm_delta; leave it unset"
            )
        if self.trm_estimator == "k3" and self.trm_reduce == "max":
            warnings.warn(
                "trm_estimator='k3' with trm_reduce='max': k3 is asymmetric (about 94 at rho = 100, 3.6 at rho = "
                "0.01) and under-detects tokens pi_theta finds unlikely; use 'k2' or 'abs_log_ratio' for the max",
                stacklevel=3,
            )
        self.trm_delta = float(self.trm_delta)
        self.off_policy_mask_threshold = self.trm_delta  # the switch that makes TRL call get_off_policy_mask
        super().__post_init__()


class TRMGRPOTrainer(GRPOTrainer):
    """``GRPOTrainer`` with Trust Region Masking in place of OPSM, configured by a :class:`TRMGRPOConfig`."""

    def __init__(self, model: Any, reward_funcs: Any = None, args: TRMGRPOConfig | None = None, **kwargs: Any):
        if args is None:
            name = model if isinstance(model, str) else getattr(model.config, "_name_or_path", "") or "model"
            args = TRMGRPOConfig(f"{str(name).split('/')[-1]}-TRM-GRPO")
        if not isinstance(args, TRMGRPOConfig):
            raise TypeError(
                f"args must be a TRMGRPOConfig (a GRPOConfig with trm_delta, trm_estimator, trm_reduce), got "
                f"{type(args).__name__}; build it as you would a GRPOConfig: TRMGRPOConfig(output_dir=..., "
                "trm_delta=0.05, ...)"
            )
        if not getattr(args, "use_vllm", False) and kwargs.get("rollout_func") is None:
            warnings.warn(
                "TRMGRPOTrainer without vLLM or a rollout_func: TRL then passes the recomputed old log-probs "
                "(pi_old) instead of the rollout engine's, so the divergence is measured against pi_old, not "
                "pi_roll, and TRM masks (almost) nothing",
                stacklevel=2,
            )
        self.trm_delta, self.trm_estimator, self.trm_reduce = args.trm_delta, args.trm_estimator, args.trm_reduce
        super().__init__(model, reward_funcs, args, **kwargs)

    def get_off_policy_mask(  # type: ignore[override]  # TRL's is a staticmethod; same call signature
        self,
        advantages: torch.Tensor,
        per_token_logps: torch.Tensor,
        sampling_per_token_logps: torch.Tensor,
        mask: torch.Tensor,
        off_policy_threshold: float,
    ) -> torch.Tensor:
        """TRM-max (or -mean) keep mask ``(B, 1)``; the advantage is ignored. NaN follows the core's rule (module
        docstring): an unscorable engine token gives no evidence, a NaN trained-policy log-prob raises."""
        div = token_divergence(per_token_logps, sampling_per_token_logps, mask, self.trm_estimator)  # type: ignore[arg-type]
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
