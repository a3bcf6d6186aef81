"""Adapters that plug real models into the protocols, when their weights exist (nothing here downloads anything).

- :class:`DiffusersT2I` wraps a loaded ``diffusers`` pipeline (``pipe(prompt, generator=...).images[0]``). Its
  text encoder's limit is read from ``pipe.tokenizer.model_max_length``; a longer prompt raises
  :class:`~.tokens.PromptTooLongError` unless ``truncate=True`` (then the pipeline truncates, as diffusers does).
- :class:`TransformersVLMJudge` wraps a loaded ``transformers`` vision-language model and its processor (the
  official judge is Qwen2.5-VL-7B): chat template with one image and the question, greedy decoding of a few
  tokens; ``ground`` parses the first four numbers of the answer as a box, as the official code's ``eval`` does
  (None when there are none).

Both are tested with mocks only: no T2I or VLM weights are available offline.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from PIL import Image

from icml26.vision.detailmaster.protocols import GROUND_QUESTION
from icml26.vision.detailmaster.tokens import PromptTooLongError

__all__ = ["DiffusersT2I", "TransformersVLMJudge"]


class DiffusersT2I:
    """``T2IModel`` over a diffusers pipeline (see the module docstring)."""

    def __init__(self, pipe: Any, truncate: bool = False, **call_kwargs: Any) -> None:
        if not callable(pipe):
            raise TypeError(f"pipe must be a callable diffusers pipeline, got {type(pipe).__name__}")
        self.pipe, self.truncate, self.call_kwargs = pipe, truncate, call_kwargs

    def _check_length(self, prompt: str) -> None:
        tok = getattr(self.pipe, "tokenizer", None)
        limit = getattr(tok, "model_max_length", None)
        if tok is None or limit is None or self.truncate:
            return
        n = len(tok(prompt, truncation=False)["input_ids"])
        if n > limit:
            raise PromptTooLongError(
                f"the prompt has {n} tokens but the pipeline's text encoder holds {limit}; pass truncate=True to let "
                "the pipeline cut it (what a weak encoder does), or use a long-prompt model"
            )

    def generate(self, prompt: str, seed: int) -> Image.Image:
        import torch

        self._check_length(prompt)
        out = self.pipe(prompt, generator=torch.Generator("cpu").manual_seed(int(seed)), **self.call_kwargs)
        return out.images[0]


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


class TransformersVLMJudge:
    """``VLMJudge`` over a transformers vision-language model and its processor (see the module docstring)."""

    def __init__(self, model: Any, processor: Any, max_new_tokens: int = 32) -> None:
        self.model, self.processor, self.max_new_tokens = model, processor, max_new_tokens

    @classmethod
    def from_pretrained(cls, model_id: str, **kwargs: Any) -> TransformersVLMJudge:
        """Load from a local path or the local Hugging Face cache only (``local_files_only=True``)."""
        from transformers import AutoModelForImageTextToText, AutoProcessor

        model = AutoModelForImageTextToText.from_pretrained(model_id, local_files_only=True, **kwargs)
        return cls(model, AutoProcessor.from_pretrained(model_id, local_files_only=True))

    def ask(self, image: Image.Image, text: str) -> str:
        messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]}]
        chat = self.processor.apply_chat_template(messages, add_generation_prompt=True)
        inputs = self.processor(text=[chat], images=[image], return_tensors="pt")
        out = self.model.generate(**inputs, max_new_tokens=self.max_new_tokens, do_sample=False)
        new = out[:, inputs["input_ids"].shape[1] :]
        return str(self.processor.batch_decode(new, skip_special_tokens=True)[0])

    def yes_no(self, image: Image.Image, question: str) -> str:
        return self.ask(image, question)  # the evaluator reads it with the official rule ('yes' in the answer)

    def ground(self, image: Image.Image, phrase: str) -> Sequence[float] | None:
        answer = self.ask(image, GROUND_QUESTION.format(character=phrase))
        numbers = [float(x) for x in _NUMBER.findall(answer)]
        return numbers[:4] if len(numbers) >= 4 else None
