"""TRL integration: ``TiesDPOConfig`` and ``TiesDPOTrainer``, TRL 1.16's ``DPOTrainer`` trained on win/tie labels.

Dataset: TRL's preference columns (``prompt``, ``chosen``, ``rejected``, conversational or not) plus a boolean
``is_tie``. A row with ``is_tie=False`` says chosen is preferred to rejected; a row with ``is_tie=True`` says the two
responses are tied (their order in the row is meaningless: every tie likelihood is even in the margin).

TRL has no tie support, and three places would lose the flag, each handled here:

1. the trainer keeps only its signature columns (``remove_unused_columns``): ``is_tie`` is added to them;
2. ``DataCollatorForPreference`` builds its batch from the ids only: :class:`DataCollatorForTiePreference` adds
   ``is_tie`` as a bool tensor ``(B,)`` (the trainer swaps TRL's default collator for it);
3. ``DPOTrainer._compute_loss`` is monolithic (the sigmoid loss is inline): it is re-implemented here for the
   configurations it supports (policy and reference forward exactly as TRL does, with the fused LM head, PEFT
   adapter disabling or a precomputed reference), with the loss of
   :func:`~icml26.llm.tie_aware_alignment.tie_dpo_loss` (Rao-Kupper, Davidson or ``bt_drop``, the guards).

Not supported (one clear error from :class:`TiesDPOConfig`): other ``loss_type`` values than ``["sigmoid"]`` (the
tie likelihood replaces it), ``f_divergence_type`` other than ``"reverse_kl"``, ``ld_alpha``, WPO weighting,
``label_smoothing``; vision datasets. Logged metrics: TRL's ``rewards/*`` and ``logps/*`` (margins and accuracies on
the decided pairs only), plus ``ties/fraction`` and ``ties/abs_margin`` (mean ``|d|`` on tied pairs).

Usage::

    args = TiesDPOConfig(output_dir="out", beta=0.1, tie_model="davidson", nu=2.0, tie_weight=1.0)
    trainer = TiesDPOTrainer(model=model, args=args, train_dataset=ds, processing_class=tokenizer)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import torch

from icml26.llm.tie_aware_alignment.dpo import GUARDS, _loss_from_rewards, labels_from_is_tie
from icml26.llm.tie_aware_alignment.likelihoods import TIE_MODELS, check_nu

try:
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from accelerate.utils import is_peft_model
    from trl import DPOConfig, DPOTrainer
    from trl.models.utils import disable_gradient_checkpointing
    from trl.trainer.dpo_trainer import DataCollatorForPreference
    from trl.trainer.utils import use_adapter
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("TiesDPOTrainer needs TRL: pip install 'icml26[llm]'") from exc

__all__ = ["DataCollatorForTiePreference", "TiesDPOConfig", "TiesDPOTrainer"]

_NON_MODEL_KEYS = {"completion_mask", "ref_chosen_logps", "ref_rejected_logps", "is_tie"}


@dataclass
class TiesDPOConfig(DPOConfig):
    """``DPOConfig`` plus the tie model (see the module docstring).

    Parameters
    ----------
    tie_model: ``"rao_kupper"`` (DPO-RK), ``"davidson"`` (DPO-D) or ``"bt_drop"`` (plain DPO, ties dropped).
    nu: tie propensity (Rao-Kupper ``>= 1``, Davidson ``>= 0``; ours: 2.0, the abstract gives none).
    tie_weight: weight of each tie term (the loss is the weighted mean over pairs).
    tie_guard: ``None``, ``"stop_higher"`` or ``"anchor"`` (our readings of the abstract's "mitigating unreliable
        updates"; see :mod:`icml26.llm.tie_aware_alignment.dpo`).
    anchor_weight: weight of the ``"anchor"`` guard.
    """

    tie_model: str = field(default="rao_kupper", metadata={"help": f"Tie likelihood, one of {TIE_MODELS}."})
    nu: float = field(default=2.0, metadata={"help": "Tie propensity (Rao-Kupper >= 1, Davidson >= 0)."})
    tie_weight: float = field(default=1.0, metadata={"help": "Weight of each tie term."})
    tie_guard: str | None = field(default=None, metadata={"help": "None, 'stop_higher' or 'anchor' (ours)."})
    anchor_weight: float = field(default=0.1, metadata={"help": "Weight of the 'anchor' guard's term."})

    def __post_init__(self) -> None:
        check_nu(self.nu, self.tie_model)
        if isinstance(self.tie_weight, bool) or not (0 <= float(self.tie_weight) < float("inf")):
            raise ValueError(f"tie_weight must be a finite number >= 0, got {self.tie_weight!r}")
        if self.tie_guard not in GUARDS:
            raise ValueError(f"tie_guard must be one of {GUARDS}, got {self.tie_guard!r}")
        if self.tie_guard is not None and self.tie_model == "bt_drop":
            raise ValueError("tie_guard acts on tie terms; tie_model='bt_drop' drops the ties")
        if not 0 <= float(self.anchor_weight) < float("inf"):
            raise ValueError(f"anchor_weight must be a finite number >= 0, got {self.anchor_weight!r}")
        super().__post_init__()
        unsupported = {
            "loss_type": (self.loss_type, ["sigmoid"]),
            "f_divergence_type": (str(self.f_divergence_type), "reverse_kl"),
            "ld_alpha": (self.ld_alpha, None),
            "use_weighting": (self.use_weighting, False),
            "label_smoothing": (self.label_smoothing, 0.0),
        }
        for name, (value, supported) in unsupported.items():
            if value != supported:
                raise ValueError(
                    f"TiesDPOConfig supports {name}={supported!r} only (the tie likelihood replaces DPO's sigmoid "
                    f"loss), got {value!r}"
                )
        self.nu, self.tie_weight, self.anchor_weight = float(self.nu), float(self.tie_weight), float(self.anchor_weight)


@dataclass
class DataCollatorForTiePreference(DataCollatorForPreference):
    """TRL's preference collator plus the ``is_tie`` flag, a bool tensor ``(B,)`` in the order of the pairs."""

    def torch_call(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        if not examples:
            raise ValueError("empty batch: no preference pairs")
        if any("is_tie" not in e for e in examples):
            raise ValueError(
                "a preference example has no 'is_tie' field: TiesDPOTrainer needs a boolean is_tie column "
                "(False: chosen is preferred, True: the two responses are tied)"
            )
        out = super().torch_call(examples)
        flags = [e["is_tie"] for e in examples]
        if any(f not in (True, False, 0, 1) for f in flags):
            raise ValueError(f"is_tie must hold booleans, got {[f for f in flags if f not in (True, False, 0, 1)][:5]}")
        out["is_tie"] = torch.tensor([bool(f) for f in flags], dtype=torch.bool)
        return out


def _columns(dataset: Any) -> list[str] | None:
    names = getattr(dataset, "column_names", None)
    if isinstance(names, list):
        return names
    try:
        return list(next(iter(dataset)).keys())
    except (StopIteration, TypeError, AttributeError):
        return None


def _require_is_tie(dataset: Any, name: str) -> None:
    if dataset is None:
        return
    if isinstance(dataset, dict):
        for key, part in dataset.items():
            _require_is_tie(part, f"{name}[{key!r}]")
        return
    columns = _columns(dataset)
    if columns is not None and "is_tie" not in columns:
        raise ValueError(
            f"{name} has no 'is_tie' column (columns: {columns}): TiesDPOTrainer needs a boolean is_tie per pair "
            "(False: chosen preferred, True: tie); for data without ties use TRL's DPOTrainer, or add is_tie=False"
        )


class TiesDPOTrainer(DPOTrainer):
    """``DPOTrainer`` whose loss is the tie-aware likelihood of :class:`TiesDPOConfig` on an ``is_tie`` column."""

    def __init__(self, model: Any, ref_model: Any = None, args: TiesDPOConfig | None = None, **kwargs: Any):
        if args is None:
            name = model if isinstance(model, str) else getattr(model.config, "_name_or_path", "") or "model"
            args = TiesDPOConfig(f"{str(name).split('/')[-1]}-TiesDPO")
        if not isinstance(args, TiesDPOConfig):
            raise TypeError(
                f"args must be a TiesDPOConfig (a DPOConfig with tie_model, nu, tie_weight, tie_guard), got "
                f"{type(args).__name__}; build it as you would a DPOConfig: TiesDPOConfig(output_dir=..., ...)"
            )
        _require_is_tie(kwargs.get("train_dataset"), "train_dataset")
        _require_is_tie(kwargs.get("eval_dataset"), "eval_dataset")
        super().__init__(model, ref_model=ref_model, args=args, **kwargs)
        if self._is_vision_dataset:
            raise ValueError("TiesDPOTrainer supports text preference data only (no images)")
        if type(self.data_collator) is DataCollatorForPreference:  # TRL's default: swap in the tie-keeping one
            c = self.data_collator
            self.data_collator = DataCollatorForTiePreference(
                pad_token_id=c.pad_token_id,
                max_length=c.max_length,
                truncation_mode=c.truncation_mode,
                pad_to_multiple_of=c.pad_to_multiple_of,
            )

    def _set_signature_columns_if_needed(self) -> None:
        super()._set_signature_columns_if_needed()
        if self._signature_columns is not None and "is_tie" not in self._signature_columns:
            self._signature_columns = [*self._signature_columns, "is_tie"]

    def compute_ref_log_probs(self, model: Any, inputs: dict[str, Any]) -> Any:
        return super().compute_ref_log_probs(model, {k: v for k, v in inputs.items() if k != "is_tie"})

    def _reference_logps(self, model_kwargs: dict[str, Any], labels: torch.Tensor, seq_len: int) -> torch.Tensor:
        """Summed reference log-probs (as TRL computes them: a PEFT adapter disabled, or the reference model)."""
        ref_kwargs = {k: v for k, v in model_kwargs.items() if k != "output_router_logits"}
        with torch.no_grad(), disable_gradient_checkpointing(self.model, self.args.gradient_checkpointing_kwargs):
            if is_peft_model(self.model) and self.ref_model is None:
                unwrapped = self.accelerator.unwrap_model(self.model)
                with use_adapter(unwrapped, adapter_name="ref" if "ref" in unwrapped.peft_config else None):
                    out = self.model(**ref_kwargs, labels=labels, fused_lm_head=True)
            else:
                out = self.ref_model(**ref_kwargs, labels=labels, fused_lm_head=True)
        return out.log_probs[:, -seq_len:].sum(dim=1)

    def _compute_loss(self, model: Any, inputs: dict[str, Any], return_outputs: bool) -> Any:
        mode = "train" if self.model.training else "eval"
        if "is_tie" not in inputs:
            raise ValueError(
                "the batch has no 'is_tie': a custom data_collator must keep it (see DataCollatorForTiePreference)"
            )
        outcome = labels_from_is_tie(inputs["is_tie"]).to(inputs["input_ids"].device)
        model_kwargs = {k: v for k, v in inputs.items() if k not in _NON_MODEL_KEYS}
        model_kwargs["use_cache"] = False
        if self.aux_loss_enabled:
            model_kwargs["output_router_logits"] = True
        completion_mask = inputs["completion_mask"]
        seq_len = completion_mask.size(1) - 1
        labels = inputs["input_ids"].masked_fill(completion_mask == 0, -100)
        outputs = model(**model_kwargs, labels=labels, fused_lm_head=True)
        chosen_logps, rejected_logps = outputs.log_probs[:, -seq_len:].sum(dim=1).chunk(2, dim=0)
        if self.precompute_ref_logps:
            ref_chosen_logps, ref_rejected_logps = inputs["ref_chosen_logps"], inputs["ref_rejected_logps"]
        else:
            ref_chosen_logps, ref_rejected_logps = self._reference_logps(model_kwargs, labels, seq_len).chunk(2, dim=0)
        chosen_rewards = self.beta * (chosen_logps - ref_chosen_logps)
        rejected_rewards = self.beta * (rejected_logps - ref_rejected_logps)
        args = self.args
        loss = _loss_from_rewards(
            chosen_rewards,
            rejected_rewards,
            outcome,
            args.nu,
            args.tie_model,  # type: ignore[arg-type]
            args.tie_weight,
            args.tie_guard,
            args.anchor_weight,
            "mean",
        )
        if self.aux_loss_enabled:
            loss = loss + self.router_aux_loss_coef * outputs.aux_loss
        self._log_tie_metrics(mode, outputs, completion_mask, chosen_rewards, rejected_rewards, outcome)
        self._metrics[mode]["logps/chosen"].append(self.accelerator.gather(chosen_logps.detach()).mean().item())
        self._metrics[mode]["logps/rejected"].append(self.accelerator.gather(rejected_logps.detach()).mean().item())
        if return_outputs:
            with torch.no_grad():
                outputs = model(**{k: v for k, v in model_kwargs.items() if k != "output_router_logits"})
            return loss, outputs
        return loss

    def _log_tie_metrics(
        self,
        mode: str,
        outputs: Any,
        completion_mask: torch.Tensor,
        chosen_rewards: torch.Tensor,
        rejected_rewards: torch.Tensor,
        outcome: torch.Tensor,
    ) -> None:
        gather = self.accelerator.gather
        chosen, rejected = gather(chosen_rewards.detach()), gather(rejected_rewards.detach())
        tie = gather(outcome) == 0
        margin = chosen - rejected
        decided = ~tie
        m = self._metrics[mode]
        m["rewards/chosen"].append(chosen.mean().item())
        m["rewards/rejected"].append(rejected.mean().item())
        if bool(decided.any()):
            m["rewards/margins"].append(margin[decided].mean().item())
            m["rewards/accuracies"].append((margin[decided] > 0).float().mean().item())
        m["ties/fraction"].append(tie.float().mean().item())
        if bool(tie.any()):
            m["ties/abs_margin"].append(margin[tie].abs().mean().item())
        mask = completion_mask[..., 1:]
        entropy = (outputs.entropy[:, -mask.size(1) :].detach() * mask).sum()
        tokens = mask.sum()
        entropy, tokens = gather(entropy).sum(), gather(tokens).sum()
        m["entropy"].append((entropy / tokens).item() if tokens > 0 else 0.0)
