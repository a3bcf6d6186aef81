"""The benchmark's closed language: object classes, colours, viewpoints, relation words, and the tokenizer.

Utterances follow six Sr3D-style templates (one per relation family):

- ``view``     "facing north the chair left of the table"   (left, right, front, behind; the viewer faces a
  stated compass direction, so the frame of left/right is defined by the text, never guessed);
- ``distance`` "the chair closest to the table" / "the chair farthest from the table";
- ``between``  "the chair between the table and the sofa";
- ``vertical`` "the box on the table" / "the box under the table";
- ``size``     "the biggest chair" / "the smallest chair";
- ``colour``   "the red chair".

:func:`parse` reads an utterance back into its parts (the rule-based solver uses it); :class:`Vocabulary` turns
utterances into padded token ids. An unknown word raises one :class:`ValueError` that names it and the known words.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

CLASSES: tuple[str, ...] = ("table", "chair", "cabinet", "sofa", "lamp", "box", "bin", "shelf")
COLOURS: dict[str, tuple[float, float, float]] = {
    "red": (0.85, 0.15, 0.15),
    "green": (0.20, 0.70, 0.25),
    "blue": (0.20, 0.30, 0.85),
    "yellow": (0.90, 0.85, 0.20),
    "white": (0.92, 0.92, 0.92),
    "black": (0.12, 0.12, 0.12),
    "brown": (0.55, 0.35, 0.15),
    "grey": (0.55, 0.55, 0.55),
}
# The viewer faces this compass direction (x = east, y = north, z = up).
VIEWPOINTS: dict[str, tuple[float, float]] = {
    "north": (0.0, 1.0),
    "east": (1.0, 0.0),
    "south": (0.0, -1.0),
    "west": (-1.0, 0.0),
}
# What a view word means: the centre of its 90-degree sector, as the angle atan2(forward, right) of the offset
# from the anchor in the viewer's frame (right 0, behind = away from the viewer 90, left 180, front -90).
SECTOR_ANGLE: dict[str, float] = {"right": 0.0, "behind": 90.0, "left": 180.0, "front": -90.0}
FAMILY_WORDS: dict[str, tuple[str, ...]] = {
    "view": ("left", "right", "front", "behind"),
    "distance": ("closest", "farthest"),
    "between": ("between",),
    "vertical": ("on", "under"),
    "size": ("biggest", "smallest"),
    "colour": tuple(COLOURS),
}
FAMILIES: tuple[str, ...] = tuple(FAMILY_WORDS)
# Families whose answer flips when the offset to the anchor flips sign: what a symmetric pair code cannot tell apart.
DIRECTION_AWARE: tuple[str, ...] = ("view", "vertical")
# Minimal pairs: the same scene with the other word of the pair has a different, equally unique answer.
PARTNER: dict[str, str] = {
    "left": "right",
    "right": "left",
    "front": "behind",
    "behind": "front",
    "on": "under",
    "under": "on",
}
RELATION_WORDS: tuple[str, ...] = tuple(w for f in FAMILIES for w in FAMILY_WORDS[f])
FUNCTION_WORDS: tuple[str, ...] = ("the", "facing", "of", "to", "from", "and")
PAD = "<pad>"
WORDS: tuple[str, ...] = (PAD, *FUNCTION_WORDS, *VIEWPOINTS, *CLASSES, *RELATION_WORDS)
MAX_TOKENS = 10


@dataclass(frozen=True)
class Parsed:
    """An utterance's parts: the family, its relation word, the target class, the anchors and the viewpoint."""

    family: str
    word: str
    target_class: str
    anchors: tuple[str, ...] = ()
    viewpoint: str | None = None


def utterance(p: Parsed) -> str:
    """The text of a parsed utterance (the inverse of :func:`parse`)."""
    c = p.target_class
    if p.family == "view":
        return f"facing {p.viewpoint} the {c} {p.word} of the {p.anchors[0]}"
    if p.family == "distance":
        return f"the {c} {p.word} {'to' if p.word == 'closest' else 'from'} the {p.anchors[0]}"
    if p.family == "between":
        return f"the {c} between the {p.anchors[0]} and the {p.anchors[1]}"
    if p.family == "vertical":
        return f"the {c} {p.word} the {p.anchors[0]}"
    if p.family in ("size", "colour"):
        return f"the {p.word} {c}"
    raise ValueError(f"unknown relation family {p.family!r}; families are {FAMILIES}")


def _unknown(words: Sequence[str], known: Sequence[str], what: str) -> None:
    bad = [w for w in words if w not in known]
    if bad:
        raise ValueError(f"unknown {what} {bad} in the utterance; known: {sorted(set(known))}")


def parse(text: str) -> Parsed:
    """Read an utterance of one of the six templates; any other word or shape raises a ValueError naming it."""
    words = text.lower().split()
    if not words:
        raise ValueError("empty utterance: expected e.g. 'the chair closest to the table'")
    _unknown(words, WORDS[1:], "word(s)")
    if words[0] == "facing":  # facing V the C REL of the A
        if len(words) != 8 or words[2] != "the" or words[5] != "of" or words[6] != "the":
            raise ValueError(f"malformed view utterance {text!r}: expected 'facing north the chair left of the table'")
        _unknown([words[1]], tuple(VIEWPOINTS), "viewpoint")
        _unknown([words[4]], FAMILY_WORDS["view"], "view relation")
        _check_classes(words[3], words[7])
        return Parsed("view", words[4], words[3], (words[7],), words[1])
    if words[0] != "the" or len(words) < 3:
        raise ValueError(f"malformed utterance {text!r}: it must start with 'the' or 'facing'")
    if len(words) == 3:  # the ATTR C
        family = "size" if words[1] in FAMILY_WORDS["size"] else "colour" if words[1] in COLOURS else None
        if family is None:
            raise ValueError(f"unknown attribute {words[1]!r}; known: {FAMILY_WORDS['size'] + FAMILY_WORDS['colour']}")
        _check_classes(words[2])
        return Parsed(family, words[1], words[2])
    target, word = words[1], words[2]
    _check_classes(target)
    if word == "between" and len(words) == 8 and words[3] == "the" and words[5] == "and" and words[6] == "the":
        _check_classes(words[4], words[7])
        return Parsed("between", word, target, (words[4], words[7]))
    if word in ("closest", "farthest") and len(words) == 6 and words[4] == "the":
        if words[3] != ("to" if word == "closest" else "from"):
            raise ValueError(f"malformed utterance {text!r}: 'closest to' / 'farthest from'")
        _check_classes(words[5])
        return Parsed("distance", word, target, (words[5],))
    if word in FAMILY_WORDS["vertical"] and len(words) == 5 and words[3] == "the":
        _check_classes(words[4])
        return Parsed("vertical", word, target, (words[4],))
    raise ValueError(f"malformed utterance {text!r}: no template matches (see icml26.vision.grounding_3d.vocab)")


def _check_classes(*names: str) -> None:
    _unknown(names, CLASSES, "object class(es)")


class Vocabulary:
    """Word <-> id over the closed vocabulary; ``encode`` pads to ``MAX_TOKENS`` with id 0 (``<pad>``)."""

    def __init__(self, words: Sequence[str] = WORDS) -> None:
        self.words = tuple(words)
        self.index = {w: i for i, w in enumerate(self.words)}

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, texts: str | Sequence[str], max_tokens: int = MAX_TOKENS) -> np.ndarray:
        """Token ids [B, max_tokens] (int64); an unknown word or a too-long utterance raises a ValueError."""
        batch = [texts] if isinstance(texts, str) else list(texts)
        out = np.zeros((len(batch), max_tokens), dtype=np.int64)
        for b, text in enumerate(batch):
            words = text.lower().split()
            _unknown(words, self.words[1:], "word(s)")
            if not words or len(words) > max_tokens:
                raise ValueError(f"utterance {text!r} has {len(words)} words; expected 1 to {max_tokens}")
            out[b, : len(words)] = [self.index[w] for w in words]
        return out

    def decode(self, ids: np.ndarray) -> list[str]:
        return [" ".join(self.words[i] for i in row if i != 0) for row in np.atleast_2d(ids)]
