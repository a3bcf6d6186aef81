"""A byte-level tokenizer for smoke runs and tests with a tiny random Llama (no download, no chat template)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["ByteTokenizer"]


class ByteTokenizer:
    """ASCII bytes as token ids 1..127 (0 is end of text and padding); the ``transformers`` calls the decoder uses."""

    chat_template = None
    eos_token_id = 0
    pad_token_id = 0
    vocab_size = 128

    def __call__(self, text: str, add_special_tokens: bool = False) -> dict[str, list[int]]:
        return {"input_ids": [min(b, 127) or 32 for b in text.encode("ascii", "replace")]}

    def decode(self, ids: Sequence[int] | Any, skip_special_tokens: bool = False) -> str:
        return bytes(int(i) for i in ids if int(i) != 0).decode("ascii", "replace")
