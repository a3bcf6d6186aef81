"""Long prompts from scene graphs (construction step 8, templated) and back (what a simulated generator reads).

:func:`compose_prompt` writes one sentence per fact in the official order of the polished prompts (characters,
each character's attributes, each character's location, background, light, style, relations) and pads it with
filler sentences of neutral detail, at random gaps, up to a target length in tokens (the paper's prompts average
284.89 tokens; ours are drawn in a stated range). :func:`parse_prompt` reads the facts back from whole sentences
only: a prompt cut inside a sentence loses that sentence, as a truncated text encoder does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from icml26.vision.detailmaster.schema import (
    ATTRIBUTES,
    Character,
    Relation,
    Sample,
    Scene,
    _rel_key,
    character_class,
)
from icml26.vision.detailmaster.tokens import ClipPretokenizer, Tokenizer

__all__ = ["FILLERS", "compose_prompt", "fact_sentences", "parse_prompt", "sentence_spans"]

BACKGROUND_TEXT = {
    "meadow": "a green meadow",
    "sky": "a pale blue sky",
    "sand": "a sandy desert",
    "lilac": "a lilac wall",
}
LIGHT_TEXT = {"bright": "bright", "dim": "dim", "warm": "warm", "cool": "cool"}
STYLE_TEXT = {"photo": "a realistic photo", "pixel art": "pixel art", "sketch": "a pencil sketch"}
RELATION_TEXT = {
    "left of": "to the left of",
    "above": "above",
    "next to": "next to",
    "interacting with": "interacting with",
}
OUTLINE_TEXT = {"black": "has a black outline", "none": "has no outline"}
# Neutral detail: no word of the world's vocabulary (names, colours, sizes, places, scene words).
FILLERS: tuple[str, ...] = (
    "Every element is composed with deliberate care and balance.",
    "Fine details reward a close and patient viewer.",
    "The composition feels calm, orderly and carefully considered.",
    "Soft textures give the whole picture a quiet, pleasant quality.",
    "Nothing in the frame appears accidental or out of place.",
    "The edges are crisp and the shapes read clearly at a glance.",
    "A sense of calm runs through the entire picture.",
    "The arrangement leaves generous breathing room between the figures.",
    "Each figure is rendered with a clean, confident contour.",
    "The overall mood is gentle, playful and inviting.",
    "Little touches of craft are visible wherever one looks.",
    "The picture has the clarity of a well designed illustration.",
)


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def _join(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def fact_sentences(scene: Scene) -> list[tuple[str, str]]:
    """(fact key, sentence) in the prompt's order. Keys: ``presence``, ``char:<name>``, ``loc:<name>``,
    ``background`` / ``light`` / ``style``, ``relation:<s>|<p>|<o>``."""
    out = [("presence", "This image shows " + _join([f"{_article(c.name)} {c.name}" for c in scene.characters]) + ".")]
    for c in scene.characters:
        a = c.attributes
        parts = [a[k] for k in ("size", "color", "pattern") if k in a]
        parts += [OUTLINE_TEXT[a["outline"]]] if "outline" in a else []
        if parts:
            out.append((f"char:{c.name}", f"The {c.name} is {_join(parts)}."))
    out += [
        (f"loc:{c.name}", f"The {c.name} is in the {c.position} part of the image.")
        for c in scene.characters
        if c.position is not None
    ]
    s = scene.attributes
    if "background" in s:
        out.append(("background", f"The background is {BACKGROUND_TEXT[s['background']]}."))
    if "light" in s:
        out.append(("light", f"The lighting is {LIGHT_TEXT[s['light']]}."))
    if "style" in s:
        out.append(("style", f"The image is {STYLE_TEXT[s['style']]}."))
    out += [(_rel_key(r), f"The {r.subject} is {RELATION_TEXT[r.predicate]} the {r.object}.") for r in scene.relations]
    return out


def compose_prompt(
    scene: Scene,
    rng: np.random.Generator,
    target_tokens: int = 0,
    tokenizer: Tokenizer | None = None,
    drop: Sequence[str] = (),
    sample_id: str = "",
) -> Sample:
    """The long prompt of ``scene``: its fact sentences, padded with fillers (at random gaps) to about
    ``target_tokens`` tokens. Facts whose key is in ``drop`` are left out (a polisher that loses them)."""
    tok = tokenizer or ClipPretokenizer()
    facts = [(k, s) for k, s in fact_sentences(scene) if k not in set(drop)]
    length = sum(len(tok.pieces(s)) for _, s in facts)
    fillers: list[str] = []
    order = rng.permutation(len(FILLERS))
    k = 0
    while length < target_tokens:
        f = FILLERS[order[k % len(FILLERS)]]
        fillers.append(f)
        length += len(tok.pieces(f))
        k += 1
    # fillers go into random gaps after the opening sentence (the list of characters stays first)
    gaps = np.sort(rng.integers(1, len(facts) + 1, size=len(fillers)))
    sentences: list[str] = []
    g = 0
    for i, (_, s) in enumerate(facts):
        while g < len(gaps) and gaps[g] == i:
            sentences.append(fillers[g])
            g += 1
        sentences.append(s)
    sentences += fillers[g:]
    prompt = " ".join(sentences)
    sent = {k: s for k, s in facts if k in ("background", "light", "style") or k.startswith("relation:")}
    return Sample(prompt, scene, sent, len(tok.pieces(prompt)), tok.name, sample_id)


def sentence_spans(prompt: str) -> list[tuple[str, int]]:
    """Each whole sentence and the character offset where it ends (its full stop)."""
    return [(m.group().strip(), m.end()) for m in re.finditer(r"[^.]*\.", prompt)]


_RE = {
    "presence": re.compile(r"^This image shows (.+)\.$"),
    "char": re.compile(r"^The (\w+) is (.+)\.$"),
    "loc": re.compile(r"^The (\w+) is in the ([a-z ]+) part of the image\.$"),
    "background": re.compile(r"^The background is (.+)\.$"),
    "light": re.compile(r"^The lighting is (\w+)\.$"),
    "style": re.compile(r"^The image is (.+)\.$"),
    "relation": re.compile(r"^The (\w+) is (to the left of|above|next to|interacting with) the (\w+)\.$"),
}
_INV = {
    "background": {v: k for k, v in BACKGROUND_TEXT.items()},
    "light": {v: k for k, v in LIGHT_TEXT.items()},
    "style": {v: k for k, v in STYLE_TEXT.items()},
    "relation": {v: k for k, v in RELATION_TEXT.items()},
}


_WORD_KEY = {v: k for k, values in ATTRIBUTES.items() if k != "outline" for v in values}
_OUTLINE_INV = {v: k for k, v in OUTLINE_TEXT.items()}


def _attribute_words(text: str) -> dict[str, str] | None:
    """``"small, red, striped and has a black outline"`` -> its attributes (None if a part is not one)."""
    out = {}
    for part in re.split(r", | and ", text):
        if part in _OUTLINE_INV:
            out["outline"] = _OUTLINE_INV[part]
        elif part in _WORD_KEY:
            out[_WORD_KEY[part]] = part
        else:
            return None
    return out


def parse_prompt(prompt: str, limit: int | None = None) -> Scene:
    """The facts that whole sentences of ``prompt[:limit]`` state, as a partial scene (unknown names are skipped;
    characters keep only the attributes and location their sentences give)."""
    text = prompt if limit is None else prompt[:limit]
    names: list[str] = []
    attrs: dict[str, dict[str, str]] = {}
    pos: dict[str, str] = {}
    scene: dict[str, str] = {}
    rels: list[Relation] = []

    def known(name: str) -> bool:
        try:
            character_class(name)
        except ValueError:
            return False
        return True

    def mention(name: str) -> None:
        if known(name) and name not in names:
            names.append(name)

    for s, _ in sentence_spans(text):
        if m := _RE["presence"].match(s):
            for item in re.split(r", | and ", m.group(1)):
                mention(item.split(" ", 1)[-1].strip())
        elif m := _RE["loc"].match(s):
            mention(m.group(1))
            pos[m.group(1)] = m.group(2)
        elif m := _RE["relation"].match(s):
            if known(m.group(1)) and known(m.group(3)):
                mention(m.group(1))
                mention(m.group(3))
                rels.append(Relation(m.group(1), _INV["relation"][m.group(2)], m.group(3)))
        elif (m := _RE["char"].match(s)) and known(m.group(1)) and (words := _attribute_words(m.group(2))):
            mention(m.group(1))
            attrs[m.group(1)] = words
        else:
            for key in ("background", "light", "style"):
                if (m := _RE[key].match(s)) and m.group(1) in _INV[key]:
                    scene[key] = _INV[key][m.group(1)]
    chars = tuple(Character(n, character_class(n), attrs.get(n, {}), pos.get(n)) for n in names)
    return Scene(chars, scene, tuple(rels))


def with_positions(scene: Scene, boxes: dict[str, tuple[float, float, float, float]]) -> Scene:
    """The scene with its characters' boxes set (names absent from ``boxes`` keep theirs)."""
    return replace(scene, characters=tuple(replace(c, box=boxes.get(c.name, c.box)) for c in scene.characters))
