"""Procedural, programmatically checked tasks (enumeration, counting, IFEval-style constraints, needle recall)
and the sequence labels (trigram repetition, distinct-2, task failure)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["FAMILIES", "Task", "distinct_n", "make_suite", "needle_task", "repetition_ratio"]

FAMILIES: tuple[str, ...] = ("enumeration", "counting", "constraint", "needle")

_CATEGORIES = (
    "animals", "fruits", "countries", "colors", "musical instruments", "sports", "vegetables", "cities",
    "jobs", "flowers", "birds", "tools", "fish", "trees", "insects", "board games",
)  # fmt: skip
_TOPICS = (
    "the ocean", "a rainy day", "your favourite city", "a old library", "the moon", "a summer garden",
    "a long train journey", "the history of bread", "a quiet forest", "a busy market", "winter mornings",
    "a lighthouse keeper",
)  # fmt: skip


def _words(text: str) -> list[str]:
    """Alphabetic words, lowercased: numbers are left out so that a numbered list of one repeated item counts as
    repetitive (a count, which never repeats a trigram of words, scores 0)."""
    return re.findall(r"[a-z']+", text.lower())


def repetition_ratio(text: str, n: int = 3) -> float:
    """Share of repeated word n-grams: 1 - distinct / total (0 with fewer than n words). Trigrams by default."""
    w = _words(text)
    grams = [tuple(w[i : i + n]) for i in range(len(w) - n + 1)]
    return 0.0 if not grams else 1.0 - len(set(grams)) / len(grams)


def distinct_n(text: str, n: int = 2) -> float:
    """distinct-n: distinct word n-grams / total (1 with fewer than n words)."""
    w = _words(text)
    grams = [tuple(w[i : i + n]) for i in range(len(w) - n + 1)]
    return 1.0 if not grams else len(set(grams)) / len(grams)


@dataclass(frozen=True)
class Task:
    """A prompt and the check its answer must pass (``check(text) -> True`` when the task is done right).

    The checks read a *truncated* answer (generation stops at a token budget): a final partial line or number
    is ignored, so a long answer cut short is not a failure."""

    family: str
    prompt: str
    check: Callable[[str], bool] = field(compare=False)
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    def fails(self, text: str) -> bool:
        return not self.check(text)


def _complete_lines(text: str) -> list[str]:
    lines = text.split("\n")
    if not text.endswith("\n"):
        lines = lines[:-1]  # the last line may be cut by the token budget
    return [ln.strip() for ln in lines if ln.strip()]


def _enumeration(rng: np.random.Generator) -> Task:
    cat = str(rng.choice(_CATEGORIES))
    n = int(rng.integers(20, 41))

    def check(text: str) -> bool:
        items = [re.sub(r"^(\d+[.)]|[-*•])\s*", "", ln).strip(" .").lower() for ln in _complete_lines(text)]
        items = [i for i in items if i]
        return len(items) >= 2 and len(set(items)) == len(items) and all(len(i.split()) <= 6 for i in items)

    return Task("enumeration", f"List {n} different {cat}, one per line, without repeating any.", check, {"n": n})


def _counting(rng: np.random.Generator) -> Task:
    a = int(rng.integers(1, 60))

    def check(text: str) -> bool:
        nums = [int(x) for x in re.findall(r"\d+", text)]
        if text and text[-1].isdigit():
            nums = nums[:-1]  # a number cut by the token budget
        return len(nums) >= 3 and nums == list(range(nums[0], nums[0] + len(nums))) and nums[0] in (a, a + 1)

    return Task("counting", f"Count from {a} to {a + 200}, separated by commas.", check, {"start": a})


def _constraint(rng: np.random.Generator) -> Task:
    topic = str(rng.choice(_TOPICS))
    if rng.random() < 0.5:
        return Task(
            "constraint",
            f"Write a long paragraph about {topic} using only lowercase letters (no capital letters at all).",
            lambda text: len(_words(text)) >= 5 and not any(c.isupper() for c in text),
            {"rule": "lowercase"},
        )
    return Task(
        "constraint",
        f"Write a long story about {topic} without using any commas.",
        lambda text: len(_words(text)) >= 5 and "," not in text,
        {"rule": "no_comma"},
    )


def _filler(rng: np.random.Generator, words: int) -> list[str]:
    from icml26.models import shakespeare

    pool = _shakespeare_words(shakespeare)
    if words > 20_000:
        raise ValueError(f"at most 20000 filler words, got {words}")
    start = int(rng.integers(0, len(pool) - 20_001))  # independent of `words`: arms of a sweep share their filler
    return pool[start : start + words]


_POOL: list[str] = []


def _shakespeare_words(loader: Callable[..., str]) -> list[str]:
    if not _POOL:
        _POOL.extend(loader("tragedies").split())
    return _POOL


def needle_task(rng: np.random.Generator, words: int = 40, position: str | None = None) -> Task:
    """Needle recall: a planted fact at the front, middle or end of ``words`` words of Shakespeare (tragedies)."""
    pos = position or str(rng.choice(("front", "middle", "end")))
    if pos not in ("front", "middle", "end"):
        raise ValueError(f"position must be front, middle or end, got {pos!r}")
    code = int(rng.integers(1000, 10000))
    filler = _filler(rng, words)
    at = {"front": 0, "middle": len(filler) // 2, "end": len(filler)}[pos]
    needle = f"(The secret number is {code}.)"
    text = " ".join([*filler[:at], needle, *filler[at:]])
    prompt = f"{text}\n\nWhat is the secret number in the text above? Answer with the number, then explain."
    return Task("needle", prompt, lambda out: str(code) in out, {"position": pos, "words": words, "code": code})


def make_suite(
    seed: int, per_family: int = 3, families: tuple[str, ...] = FAMILIES, needle_words: int = 40
) -> list[Task]:
    """``per_family`` tasks of every family, drawn from ``seed`` (family-major order)."""
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown task families {unknown}; known: {FAMILIES}")
    if per_family < 1:
        raise ValueError(f"per_family must be >= 1, got {per_family}")
    rng = np.random.default_rng([seed, 33])
    makers = {
        "enumeration": _enumeration,
        "counting": _counting,
        "constraint": _constraint,
        "needle": lambda r: needle_task(r, needle_words),
    }
    return [makers[f](rng) for f in families for _ in range(per_family)]
