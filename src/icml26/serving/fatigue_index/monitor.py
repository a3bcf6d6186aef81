"""Online monitoring: the FatigueMonitor state machine, forward hooks that read the signals during
``model.generate``, a ``StoppingCriteria`` that feeds the monitor every k tokens, and ``generate_with_fatigue``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from icml26.serving.fatigue_index.config import FatigueConfig
from icml26.serving.fatigue_index.signals import (
    embedding_drift,
    fatigue_index,
    predictive_entropy,
    prompt_attention,
    smooth,
)

__all__ = ["FatigueMonitor", "FatigueProbe", "FatigueStoppingCriteria", "FatigueTrace", "generate_with_fatigue"]


class FatigueMonitor:
    """Online FI over a batch of sequences: ``update(a, e, d) -> (smoothed FI, alert)`` once per probe.

    Each update computes FI from the three signals (scalars or arrays of shape (batch,)), appends it to the
    history, smooths it over the last ``smooth_window`` probes and moves the hysteresis alert. The arithmetic is
    the offline :func:`~icml26.serving.fatigue_index.fatigue_trajectory`'s, so both give the same numbers.
    """

    def __init__(self, config: FatigueConfig | None = None) -> None:
        self.config = config or FatigueConfig()
        self.reset()

    def reset(self) -> None:
        self._fi: list[np.ndarray] = []
        self._smoothed: list[np.ndarray] = []
        self._alert: list[np.ndarray] = []
        self._state: np.ndarray | None = None

    def update(self, a: Any, e: Any, d: Any) -> tuple[Any, Any]:
        fi = np.atleast_1d(fatigue_index(a, e, d, self.config))
        if self._fi and fi.shape != self._fi[-1].shape:
            raise ValueError(f"batch size changed from {self._fi[-1].shape} to {fi.shape}; call reset() first")
        self._fi.append(fi)
        history = np.stack(self._fi[-self.config.smooth_window :], axis=-1)
        s = smooth(history, self.config.smooth_window)[..., -1]
        on, off = self.config.hysteresis
        state = np.zeros(fi.shape, dtype=bool) if self._state is None else self._state
        self._state = np.where(s >= on, True, np.where(s <= off, False, state))
        self._smoothed.append(s)
        self._alert.append(self._state.copy())
        scalar = np.ndim(a) == 0 and np.ndim(e) == 0 and np.ndim(d) == 0
        return (float(s[0]), bool(self._state[0])) if scalar else (s, self._state.copy())

    @property
    def alert(self) -> np.ndarray | None:
        """The current alert state per sequence (None before the first update)."""
        return None if self._state is None else self._state.copy()

    @property
    def history(self) -> dict[str, np.ndarray]:
        """fi, smoothed and alert so far, each (batch, probes)."""
        if not self._fi:
            return {k: np.zeros((0, 0)) for k in ("fi", "smoothed", "alert")}
        return {
            "fi": np.stack(self._fi, axis=-1),
            "smoothed": np.stack(self._smoothed, axis=-1),
            "alert": np.stack(self._alert, axis=-1),
        }


@dataclass
class FatigueTrace:
    """One generated sequence and its probes. ``steps[i]`` is the generation step of probe i (step s reads the
    forward on generated token s: its attention, its top hidden state, and the distribution of token s + 1);
    signals are per probe; ``logprob`` is per generated token (raw log-probability of the chosen token)."""

    prompt: str
    text: str
    token_ids: np.ndarray
    steps: np.ndarray
    attention: np.ndarray
    entropy: np.ndarray
    drift: np.ndarray
    fi: np.ndarray
    smoothed: np.ndarray
    alert: np.ndarray
    logprob: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def onset(self) -> int | None:
        """The generation step at which the alert first turns on (None: never)."""
        hits = np.flatnonzero(self.alert)
        return int(self.steps[hits[0]]) if hits.size else None


def _decoder_parts(model: Any) -> tuple[Any, Any, Any]:
    """(last self-attention module, final norm, output embeddings) of a HF decoder-only model."""
    decoder = model.get_decoder() if hasattr(model, "get_decoder") else getattr(model, "model", None)
    layers = getattr(decoder, "layers", None)
    norm = getattr(decoder, "norm", None)
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if not layers or norm is None or head is None or not hasattr(layers[-1], "self_attn"):
        raise ValueError(
            "the Fatigue Index hooks a decoder-only HF model with model.layers[-1].self_attn, a final norm and "
            f"output embeddings (Llama/Mistral/Qwen style); got {type(model).__name__}"
        )
    return layers[-1].self_attn, norm, head


def _check_eager(model: Any) -> None:
    impl = getattr(getattr(model, "config", None), "_attn_implementation", None)
    if impl != "eager":
        raise ValueError(
            f"the attention signal needs attention weights, which only eager attention returns (this model uses "
            f"{impl!r}); load it with attn_implementation='eager' (e.g. load_smollm2(attn_implementation='eager'))"
        )


class FatigueProbe:
    """Forward hooks on the last self-attention, the final norm and the output embeddings of a causal LM.

    After every forward (the prefill, then one per new token) it holds the step's signals for the newest position:
    A_t (attention to the first K prompt positions), D_t (drift of the top hidden state from the last prompt
    token's) and E_t (entropy of the raw logits), plus the raw log-softmax for the chosen token's log-probability.
    Use as a context manager after :meth:`begin` with the prompts' attention mask (left padding).
    """

    def __init__(self, model: Any, config: FatigueConfig | None = None) -> None:
        _check_eager(model)
        self.config = config or FatigueConfig()
        self.model = model
        self._modules = _decoder_parts(model)
        self._handles: list[Any] = []
        self.step = -1
        self.latest: dict[str, Any] | None = None

    def begin(self, attention_mask: Any) -> None:
        import torch

        mask = torch.as_tensor(attention_mask).long()
        if mask.dim() != 2 or mask.shape[1] == 0:
            raise ValueError(f"attention_mask must be (batch, prompt length) and non-empty, got {tuple(mask.shape)}")
        length = mask.sum(dim=1)
        if (length == 0).any():
            raise ValueError("an empty prompt (no token in its attention mask): the monitor needs a prompt")
        start = mask.shape[1] - length
        if not bool((mask.cumsum(dim=1) == (torch.arange(mask.shape[1]) - start[:, None] + 1).clamp(min=0)).all()):
            raise ValueError("prompts must be left-padded (tokenizer.padding_side = 'left') for generation")
        self.prompt_start, self.prompt_length = start, length
        self.step, self.latest, self._h0 = -1, None, None
        self._attn = self._hidden = None

    def __enter__(self) -> FatigueProbe:
        attn, norm, head = self._modules
        self._handles = [
            attn.register_forward_hook(self._on_attention),
            norm.register_forward_hook(self._on_norm),
            head.register_forward_hook(self._on_logits),
        ]
        return self

    def __exit__(self, *exc: Any) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []

    def _on_attention(self, module: Any, args: Any, output: Any) -> None:
        weights = output[1] if isinstance(output, tuple) and len(output) > 1 else None
        if weights is None:
            raise ValueError(
                "the last attention layer returned no weights: load the model with attn_implementation='eager'"
            )
        self._attn = weights[:, :, -1].detach()

    def _on_norm(self, module: Any, args: Any, output: Any) -> None:
        self._hidden = output[:, -1].detach()

    def is_probe(self, step: int) -> bool:
        """Steps k, 2k, ... are probes; step 0 (the prompt) only fixes the reference h_0."""
        return step > 0 and step % self.config.probe_every == 0

    def _on_logits(self, module: Any, args: Any, output: Any) -> None:
        import torch

        if self._attn is None or self._hidden is None:
            raise RuntimeError("the output embeddings ran before the last attention layer and the final norm")
        self.step += 1
        if self._h0 is None:
            self._h0 = self._hidden
        logits = output[:, -1].detach().float()
        lse = torch.logsumexp(logits, dim=-1)  # one pass per token: enough for the chosen token's log-probability
        if not torch.isfinite(lse).all():
            predictive_entropy(logits)  # raises the one clear error about non-finite logits
        latest: dict[str, Any] = {"step": self.step, "logits": logits, "logsumexp": lse}
        if self.is_probe(self.step):  # the signals, only every k tokens
            p = torch.exp(logits - lse[:, None])
            latest["entropy"] = lse - (p * logits).sum(dim=-1)  # H = log Z - E_p[z]
            latest["attention"] = prompt_attention(
                self._attn,
                self.prompt_start,
                self.prompt_length,
                self.config.prompt_slice_k,
                self.config.attention_reduce,
            )
            latest["drift"] = embedding_drift(self._hidden, self._h0)
        self.latest = latest
        self._attn = self._hidden = None


def _stopping_base() -> type:
    try:
        from transformers import StoppingCriteria
    except ImportError as exc:  # pragma: no cover - transformers is part of the serving extra
        raise ImportError(f"FatigueStoppingCriteria needs transformers: pip install 'icml26[serving]' ({exc})") from exc
    return StoppingCriteria


class FatigueStoppingCriteria(_stopping_base()):  # type: ignore[misc]
    """A ``transformers.StoppingCriteria`` that feeds a :class:`FatigueMonitor` from a :class:`FatigueProbe`.

    generate calls it once per new token, right after the forward that produced that token's distribution. Step s
    is the forward whose input is generated token s (step 0: the prompt, which only fixes the reference h_0 and is
    not probed, as in the official code); at steps s = k, 2k, ... it updates the monitor with the probe's signals;
    every call it records the chosen token's raw log-probability. With ``stop_on_alert=True`` a sequence stops
    when its alert turns on.
    """

    def __init__(self, probe: FatigueProbe, monitor: FatigueMonitor | None = None, stop_on_alert: bool = False):
        self.probe = probe
        self.monitor = monitor or FatigueMonitor(probe.config)
        self.stop_on_alert = stop_on_alert
        self.steps: list[int] = []
        self.signals: dict[str, list[np.ndarray]] = {"attention": [], "entropy": [], "drift": []}
        self.logprob: list[np.ndarray] = []

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        latest = self.probe.latest
        if latest is None:
            raise RuntimeError(
                "generation produced no logits through the model's output embeddings, so the monitor has nothing "
                "to read (is the probe attached, and is this the model that generates?)"
            )
        chosen = input_ids[:, -1:].to(latest["logits"].device)
        logprob = latest["logits"].gather(1, chosen)[:, 0] - latest["logsumexp"]
        self.logprob.append(logprob.double().cpu().numpy())
        alert = np.zeros(input_ids.shape[0], dtype=bool)
        if self.probe.is_probe(latest["step"]):
            sig = {k: latest[k].double().cpu().numpy() for k in self.signals}
            for k, v in sig.items():
                self.signals[k].append(v)
            self.steps.append(latest["step"])
            _, alert = self.monitor.update(sig["attention"], sig["entropy"], sig["drift"])
            alert = np.asarray(alert)
        elif self.monitor.alert is not None:
            alert = self.monitor.alert
        return torch.as_tensor(alert & self.stop_on_alert, device=input_ids.device)


def _encode(tokenizer: Any, prompts: Sequence[Any], chat_template: bool) -> tuple[list[str], Any]:
    """Texts and a left-padded batch; with ``tokenizer=None`` the prompts are lists of token ids."""
    import torch

    if isinstance(prompts, str):
        prompts = [prompts]
    if len(prompts) == 0:
        raise ValueError("prompts is empty: give at least one prompt")
    if tokenizer is None:
        ids = [torch.as_tensor(p, dtype=torch.long).reshape(-1) for p in prompts]
        if any(x.numel() == 0 for x in ids):
            raise ValueError("an empty prompt: the Fatigue Index measures attention to the prompt, give one")
        width = max(x.numel() for x in ids)
        input_ids = torch.zeros(len(ids), width, dtype=torch.long)
        mask = torch.zeros(len(ids), width, dtype=torch.long)
        for i, x in enumerate(ids):
            input_ids[i, width - x.numel() :], mask[i, width - x.numel() :] = x, 1
        return [" ".join(f"t{int(t)}" for t in x) for x in ids], {"input_ids": input_ids, "attention_mask": mask}
    texts = []
    for p in prompts:
        if isinstance(p, str):
            if not p.strip():
                raise ValueError("an empty prompt: the Fatigue Index measures attention to the prompt, give one")
            messages = [{"role": "user", "content": p}]
        else:
            messages = list(p)
            if not messages or not any(str(m.get("content", "")).strip() for m in messages):
                raise ValueError("an empty chat prompt: give at least one message with content")
        if chat_template and getattr(tokenizer, "chat_template", None):
            texts.append(tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))
        else:
            texts.append(p if isinstance(p, str) else "\n".join(str(m["content"]) for m in messages))
    side = tokenizer.padding_side
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    try:
        enc = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    finally:
        tokenizer.padding_side = side
    return texts, dict(enc)


def _eos_ids(model: Any, tokenizer: Any) -> set[int]:
    ids = set()
    for source in (getattr(tokenizer, "eos_token_id", None), getattr(model.generation_config, "eos_token_id", None)):
        if source is not None:
            ids.update(int(t) for t in np.atleast_1d(source))
    return ids


def generate_with_fatigue(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[Any],
    config: FatigueConfig | None = None,
    *,
    chat_template: bool = True,
    stop_on_alert: bool = False,
    **generate_kwargs: Any,
) -> list[FatigueTrace]:
    """Generate from a batch of prompts (strings or chat message lists, left-padded together) while monitoring.

    ``generate_kwargs`` go to ``model.generate`` (``max_new_tokens``, ``do_sample``, ``temperature``, ``top_p``,
    ...). Returns one :class:`FatigueTrace` per prompt: its probes (every ``config.probe_every`` tokens), the online
    FI, smoothed FI and alert, and the text up to the end-of-sequence token (or up to the alert with
    ``stop_on_alert``). With ``tokenizer=None`` the prompts are token-id sequences (no chat template) and the text
    spells the generated ids as ``t<id>`` words.
    """
    import torch
    from transformers import StoppingCriteriaList

    cfg = config or FatigueConfig()
    texts, enc = _encode(tokenizer, prompts, chat_template)
    probe = FatigueProbe(model, cfg)
    probe.begin(enc["attention_mask"])
    criteria = FatigueStoppingCriteria(probe, FatigueMonitor(cfg), stop_on_alert=stop_on_alert)
    extra = list(generate_kwargs.pop("stopping_criteria", None) or [])
    pad = getattr(tokenizer, "pad_token_id", None) if tokenizer is not None else None
    with probe, torch.no_grad():
        out = model.generate(
            **enc,
            stopping_criteria=StoppingCriteriaList([criteria, *extra]),
            pad_token_id=pad if pad is not None else model.generation_config.pad_token_id or 0,
            **generate_kwargs,
        )
    sequences = out.sequences if hasattr(out, "sequences") else out
    if not criteria.steps:
        raise RuntimeError("generation returned no new token, so there is nothing to monitor (max_new_tokens >= 1)")
    new = sequences[:, enc["input_ids"].shape[1] :].cpu().numpy()
    hist = criteria.monitor.history
    steps = np.asarray(criteria.steps)
    sig = {k: np.stack(v, axis=-1) for k, v in criteria.signals.items()}
    logprob = np.stack(criteria.logprob, axis=-1)
    eos = _eos_ids(model, tokenizer) if tokenizer is not None else set()
    traces = []
    for i, prompt in enumerate(prompts):
        ids = new[i, : logprob.shape[1]]
        stop = next((j + 1 for j, t in enumerate(ids) if int(t) in eos), len(ids))  # up to and with the EOS
        if stop_on_alert:
            fired = np.flatnonzero(hist["alert"][i])
            if fired.size:
                stop = min(stop, int(steps[fired[0]]) + 1)
        keep = steps < stop
        body = ids[: stop - 1] if stop and int(ids[stop - 1]) in eos else ids[:stop]
        text = (
            tokenizer.decode(body, skip_special_tokens=True)
            if tokenizer is not None
            else " ".join(f"t{int(t)}" for t in body)
        )
        traces.append(
            FatigueTrace(
                prompt=prompt if isinstance(prompt, str) else texts[i],
                text=text,
                token_ids=ids[:stop],
                steps=steps[keep],
                attention=sig["attention"][i, keep],
                entropy=sig["entropy"][i, keep],
                drift=sig["drift"][i, keep],
                fi=hist["fi"][i, keep],
                smoothed=hist["smoothed"][i, keep],
                alert=hist["alert"][i, keep],
                logprob=logprob[i, :stop],
                meta={"input": texts[i]},
            )
        )
    return traces
