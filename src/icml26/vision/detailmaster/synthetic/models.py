"""Simulated text-to-image models with built-in failures (``T2IModel``: ``generate(prompt, seed) -> PIL.Image``).

Each reads only the prompt (``parse_prompt``: whole sentences), lays out what it understood (``place``: its
own random layout, in the stated regions and satisfying the stated relations), and draws it with the renderer.
``plan(prompt, seed)`` returns the scene it meant to draw (with boxes), which the reproduction scores symbolically
against the truth to get the score a perfect judge would give: the analytic reference of the claims.

- :class:`OracleT2I`: draws everything the prompt states.
- :class:`TruncatingT2I`: a text encoder with a ``max_tokens`` context (77 for CLIP, of which 75 are text tokens):
  only whole sentences inside the first tokens are read; unstated facts get the renderer's neutral defaults and
  unplaced characters a random spot. Without ``truncate=True`` a longer prompt raises (as diffusers warns).
- :class:`BagOfWordsT2I`: attribute leakage: for each attribute key, with probability ``rate``, the values are
  shuffled among the characters (a random derangement: each ends up with another character's value).
- :class:`PositionAgnosticT2I`: ignores the stated locations (and so the geometric relations too).
- :class:`DroppingT2I`: omits each character with probability ``rate`` (at least one is kept).
- :class:`RelationSwapT2I`: with probability ``rate`` per relation, binds its roles the wrong way round: a
  spatial relation is laid out reversed (subject and object exchange their relation and their stated locations);
  a tether ties the subject to a different character.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from PIL import Image

from icml26.vision.detailmaster.prompts import parse_prompt
from icml26.vision.detailmaster.schema import Relation, Scene
from icml26.vision.detailmaster.synthetic.render import Renderer
from icml26.vision.detailmaster.synthetic.world import place
from icml26.vision.detailmaster.tokens import ClipPretokenizer, PromptTooLongError, Tokenizer, text_budget

__all__ = [
    "BagOfWordsT2I",
    "DroppingT2I",
    "OracleT2I",
    "PositionAgnosticT2I",
    "RelationSwapT2I",
    "SimulatedT2I",
    "TruncatingT2I",
]


def _check_rate(rate: float) -> float:
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"rate must be a probability in [0, 1], got {rate}")
    return float(rate)


class SimulatedT2I:
    """Base: read the prompt, corrupt the understood scene (:meth:`corrupt`), lay it out, draw it."""

    name = "simulated"

    def __init__(self, size: int = 256) -> None:
        self.renderer = Renderer(size)

    def read(self, prompt: str) -> Scene:
        if not isinstance(prompt, str) or not prompt.strip():
            raise ValueError("the prompt must be a non-empty string")
        return parse_prompt(prompt)

    def corrupt(self, scene: Scene, rng: np.random.Generator) -> Scene:
        return scene

    def layout_relations(self, scene: Scene) -> tuple[Relation, ...]:
        return scene.relations

    def plan(self, prompt: str, seed: int) -> Scene:
        rng = np.random.default_rng([seed, 7])
        scene = self.corrupt(self.read(prompt), rng)
        boxes, _ = place(scene.characters, self.layout_relations(scene), rng, self.renderer.size)
        return replace(scene, characters=tuple(replace(c, box=boxes[c.name]) for c in scene.characters))

    def generate(self, prompt: str, seed: int) -> Image.Image:
        return self.renderer.render(self.plan(prompt, seed), seed)


class OracleT2I(SimulatedT2I):
    name = "oracle"


class TruncatingT2I(SimulatedT2I):
    """Reads only the whole sentences within the first ``max_tokens`` - 2 tokens (see the module docstring)."""

    name = "truncating"

    def __init__(
        self, max_tokens: int = 77, truncate: bool = True, tokenizer: Tokenizer | None = None, size: int = 256
    ) -> None:
        super().__init__(size)
        if max_tokens < 3:
            raise ValueError(f"max_tokens must leave room for text besides the start and end tokens, got {max_tokens}")
        self.max_tokens, self.truncate, self.tokenizer = max_tokens, truncate, tokenizer or ClipPretokenizer()

    def cut(self, prompt: str) -> int:
        """Character offset where the encoder's context ends."""
        pieces = self.tokenizer.pieces(prompt)
        budget = text_budget(self.max_tokens)
        if len(pieces) <= budget:
            return len(prompt)
        if not self.truncate:
            raise PromptTooLongError(
                f"the prompt has {len(pieces)} {self.tokenizer.name} tokens but the encoder holds {budget} "
                f"(max_tokens={self.max_tokens} with start/end); pass truncate=True to cut it"
            )
        return pieces[budget][1]

    def read(self, prompt: str) -> Scene:
        super().read(prompt)
        return parse_prompt(prompt, limit=self.cut(prompt))


class BagOfWordsT2I(SimulatedT2I):
    name = "bag_of_words"

    def __init__(self, rate: float = 0.5, size: int = 256) -> None:
        super().__init__(size)
        self.rate = _check_rate(rate)

    def corrupt(self, scene: Scene, rng: np.random.Generator) -> Scene:
        chars = list(scene.characters)
        n = len(chars)
        if n < 2:
            return scene
        keys = sorted({k for c in chars for k in c.attributes})
        new = [dict(c.attributes) for c in chars]
        for key in keys:
            if rng.random() >= self.rate:
                continue
            perm = rng.permutation(n)
            while np.any(perm == np.arange(n)):  # a derangement: nobody keeps its own value
                perm = rng.permutation(n)
            for i, j in enumerate(perm):
                if key in chars[j].attributes:
                    new[i][key] = chars[j].attributes[key]
        return replace(scene, characters=tuple(replace(c, attributes=a) for c, a in zip(chars, new, strict=True)))


class PositionAgnosticT2I(SimulatedT2I):
    name = "position_agnostic"

    def corrupt(self, scene: Scene, rng: np.random.Generator) -> Scene:
        return replace(scene, characters=tuple(replace(c, position=None) for c in scene.characters))

    def layout_relations(self, scene: Scene) -> tuple[Relation, ...]:
        return tuple(r for r in scene.relations if r.predicate == "interacting with")


class DroppingT2I(SimulatedT2I):
    name = "dropping"

    def __init__(self, rate: float = 0.3, size: int = 256) -> None:
        super().__init__(size)
        self.rate = _check_rate(rate)

    def corrupt(self, scene: Scene, rng: np.random.Generator) -> Scene:
        keep = rng.random(len(scene.characters)) >= self.rate
        if not keep.any():
            keep[rng.integers(len(keep))] = True
        chars = tuple(c for c, k in zip(scene.characters, keep, strict=True) if k)
        names = {c.name for c in chars}
        rels = tuple(r for r in scene.relations if r.subject in names and r.object in names)
        return replace(scene, characters=chars, relations=rels)


class RelationSwapT2I(SimulatedT2I):
    name = "relation_swap"

    def __init__(self, rate: float = 0.7, size: int = 256) -> None:
        super().__init__(size)
        self.rate = _check_rate(rate)

    def corrupt(self, scene: Scene, rng: np.random.Generator) -> Scene:
        rels = []
        swap: dict[str, str] = {}  # whose stated location each character takes
        names = scene.names
        for r in scene.relations:
            if rng.random() >= self.rate:
                rels.append(r)
            elif r.predicate == "interacting with":
                others = [n for n in names if n not in (r.subject, r.object)]
                rels.append(replace(r, object=others[rng.integers(len(others))]) if others else r)
            else:  # the roles are bound the wrong way round: each takes the other's place as well
                rels.append(Relation(r.object, r.predicate, r.subject))
                swap[r.subject], swap[r.object] = swap.get(r.object, r.object), swap.get(r.subject, r.subject)
        pos = {c.name: c.position for c in scene.characters}
        chars = tuple(replace(c, position=pos[swap.get(c.name, c.name)]) for c in scene.characters)
        return replace(scene, characters=chars, relations=tuple(rels))
