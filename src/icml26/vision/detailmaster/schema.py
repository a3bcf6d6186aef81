"""The benchmark's data: characters, scene attributes, relations and samples, in the official JSON's vocabulary.

A :class:`Sample` is one benchmark item: the long prompt and what it asks for, split into the paper's four
dimensions (character attributes, structured character locations, scene attributes, spatial/interactive
relations). :meth:`Sample.to_official` writes the record shape of the official ``DetailMaster_Dataset.json``
(``character_attributes`` / ``character_locations`` / ``scene_attributes``), so the evaluator runs on the released
dataset as well as on our procedural one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "BACKGROUNDS",
    "CLASSES",
    "LIGHTS",
    "PREDICATES",
    "STYLES",
    "Character",
    "Relation",
    "Sample",
    "Scene",
    "SceneSpecError",
    "character_class",
]

# The procedural world's vocabulary. Each name is one glyph (see ``synthetic.render``); the class is the official
# split of attribute scores (person / animal / object).
CLASSES: Mapping[str, tuple[str, ...]] = {
    "person": ("wizard", "dancer"),
    "animal": ("cat", "fish", "bird"),
    "object": ("crate", "lamp"),
}
ATTRIBUTES: Mapping[str, tuple[str, ...]] = {
    "color": ("red", "blue", "yellow", "purple", "orange", "pink"),
    "size": ("small", "medium", "large"),
    "pattern": ("solid", "striped", "dotted"),
    "outline": ("none", "black"),
}
BACKGROUNDS: tuple[str, ...] = ("meadow", "sky", "sand", "lilac")
LIGHTS: tuple[str, ...] = ("bright", "dim", "warm", "cool")
STYLES: tuple[str, ...] = ("photo", "pixel art", "sketch")
SCENE_KEYS: tuple[str, ...] = ("background", "light", "style")
PREDICATES: tuple[str, ...] = ("left of", "above", "next to", "interacting with")


class SceneSpecError(ValueError):
    """A malformed scene or sample: an unknown name, class, attribute, region or relation, or a duplicate."""


def character_class(name: str) -> str:
    for cls, names in CLASSES.items():
        if name in names:
            return cls
    raise SceneSpecError(f"unknown character {name!r}; the world's characters are {_all_names()}")


def _all_names() -> list[str]:
    return [n for names in CLASSES.values() for n in names]


@dataclass(frozen=True)
class Character:
    """One main character: its name (the phrase the judge grounds), class, attributes and location.

    ``attributes`` maps an attribute key to its value (``{"color": "red", "size": "large", ...}``); ``position``
    is one of the nine official regions (``"upper left"``...), or None when the prompt gives none. ``box`` is the
    drawn glyph's [x0, y0, x1, y1] in pixels when the character comes from a rendered scene (ground truth only:
    the evaluator never reads it).
    """

    name: str
    cls: str
    attributes: Mapping[str, str] = field(default_factory=dict)
    position: str | None = None
    box: tuple[float, float, float, float] | None = None

    def attribute_strings(self) -> list[str]:
        """The official ``characteristics_list``: ``"key:value"`` strings (``"color:red"``)."""
        return [f"{k}:{v}" for k, v in self.attributes.items()]


@dataclass(frozen=True)
class Relation:
    """``subject`` <predicate> ``object``: ``("cat", "left of", "crate")``: "the cat is to the left of the crate"."""

    subject: str
    predicate: str
    object: str


@dataclass(frozen=True)
class Scene:
    """A scene graph: characters, scene attributes (background, light, style) and relations."""

    characters: tuple[Character, ...]
    attributes: Mapping[str, str] = field(default_factory=dict)
    relations: tuple[Relation, ...] = ()

    def character(self, name: str) -> Character:
        for c in self.characters:
            if c.name == name:
                return c
        raise KeyError(f"no character {name!r} in the scene; it has {[c.name for c in self.characters]}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.characters)

    def validate(self, regions: Sequence[str] | None = None, strict_vocabulary: bool = True) -> Scene:
        """Raise :class:`SceneSpecError` for a malformed scene; return it unchanged otherwise.

        ``strict_vocabulary`` also checks every name and value against the procedural world's vocabulary
        (off for scenes from the released dataset, whose vocabulary is open)."""
        from icml26.vision.detailmaster.regions import REGION_NAMES

        regions = REGION_NAMES if regions is None else regions
        if not isinstance(self.characters, tuple) or not all(isinstance(c, Character) for c in self.characters):
            raise SceneSpecError("characters must be a tuple of Character")
        if not self.characters:
            raise SceneSpecError("a scene needs at least one character")
        names = [c.name for c in self.characters]
        if len(set(names)) != len(names):
            raise SceneSpecError(f"character names must be unique (the judge grounds them by name), got {names}")
        for c in self.characters:
            if c.cls not in CLASSES:
                raise SceneSpecError(f"character {c.name!r}: class must be one of {tuple(CLASSES)}, got {c.cls!r}")
            if c.position is not None and c.position not in regions:
                raise SceneSpecError(
                    f"character {c.name!r}: position must be one of {tuple(regions)}, got {c.position!r}"
                )
            if strict_vocabulary:
                if character_class(c.name) != c.cls:
                    raise SceneSpecError(f"character {c.name!r} is a {character_class(c.name)}, not a {c.cls}")
                for k, v in c.attributes.items():
                    if k not in ATTRIBUTES or v not in ATTRIBUTES[k]:
                        allowed = ATTRIBUTES.get(k, tuple(ATTRIBUTES))
                        raise SceneSpecError(f"character {c.name!r}: attribute {k}={v!r} is not one of {allowed}")
        vocab = {"background": BACKGROUNDS, "light": LIGHTS, "style": STYLES}
        for k, v in self.attributes.items():
            if k not in SCENE_KEYS:
                raise SceneSpecError(f"scene attribute {k!r} is not one of {SCENE_KEYS}")
            if strict_vocabulary and v not in vocab[k]:
                raise SceneSpecError(f"scene attribute {k}={v!r} is not one of {vocab[k]}")
        for r in self.relations:
            if r.predicate not in PREDICATES:
                raise SceneSpecError(f"relation predicate must be one of {PREDICATES}, got {r.predicate!r}")
            if r.subject not in names or r.object not in names or r.subject == r.object:
                raise SceneSpecError(f"relation {r} must join two different characters of the scene {names}")
        return self


@dataclass(frozen=True)
class Sample:
    """One benchmark item: the long prompt and the scene it describes (what the evaluator asks about).

    ``sentences`` keeps the prompt's sentence for each scene attribute and relation (the official ``content``
    strings the judge is asked to match); ``n_tokens`` is the prompt's length under ``tokenizer``.
    """

    prompt: str
    scene: Scene
    sentences: Mapping[str, str] = field(default_factory=dict)
    n_tokens: int = 0
    tokenizer: str = ""
    id: str = ""

    @property
    def characters(self) -> tuple[Character, ...]:
        return self.scene.characters

    @property
    def relations(self) -> tuple[Relation, ...]:
        return self.scene.relations

    def to_official(self) -> dict[str, Any]:
        """The record in the official dataset's JSON shape."""
        from icml26.vision.detailmaster.regions import official_position

        chars = self.scene.characters
        scene_attrs: list[dict[str, Any]] = [
            {"scene_attribute": k, "content": self.sentences.get(k, v)} for k, v in self.scene.attributes.items()
        ]
        if self.scene.relations:
            scene_attrs.append(
                {"scene_attribute": "spatial", "content": [self.sentences.get(_rel_key(r), "") for r in self.relations]}
            )
        return {
            "image_id": self.id,
            "polished_prompt": self.prompt,
            "character_attributes": [
                {"main_character": c.name, "characteristics_list": c.attribute_strings(), "cls": c.cls} for c in chars
            ],
            "character_locations": [
                {"main_character": c.name, "position": official_position(c.position)}
                for c in chars
                if c.position is not None
            ],
            "scene_attributes": scene_attrs,
        }


def _rel_key(r: Relation) -> str:
    return f"relation:{r.subject}|{r.predicate}|{r.object}"
