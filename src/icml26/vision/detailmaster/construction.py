"""The data-construction pipeline (the official ``data_construction_pipeline/``), step by step, with pluggable models.

Steps 1-2 and 6-7 (source dense captions; an MLLM lists the characters, their attributes, the scene attributes
and relations) produce a structured annotation: here a :class:`~.schema.Scene` per image, from any annotator (in
the procedural world, the ground truth). The builder then runs:

3. keep images with ``min_characters`` to ``max_characters`` characters;
4. localise each character: detector and judge boxes, the larger when their IoU exceeds 0.7, else the judge's;
5. map each box to one of the nine regions (containment > 0.75, :func:`~.regions.bbox_to_region`); characters
   without a region keep no location;
8. polish every fact into one long prompt: an LLM given :data:`POLISH_PROMPT` (or, without one, our templates,
   :func:`~.prompts.compose_prompt`, padded to a drawn target length);
9. ask the LLM, with the official filter question, whether each feature survived in the polished prompt; drop
   those that did not;
10. keep the samples that still state at least one character attribute.

:class:`TemplatePolisher` is a stand-in LLM for the procedural world: it writes our templated prompt, drops each
fact sentence with probability ``drop`` (recording which), and answers the filter question by reading the prompt
back (:func:`~.prompts.parse_prompt`). It validates steps 8-10, not any real LLM.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from PIL import Image

from icml26.vision.detailmaster.prompts import compose_prompt, fact_sentences, parse_prompt
from icml26.vision.detailmaster.protocols import FILTER_QUESTION, OpenVocabDetector, TextLLM, VLMJudge, is_yes
from icml26.vision.detailmaster.regions import bbox_to_region, iou
from icml26.vision.detailmaster.schema import Sample, Scene, SceneSpecError
from icml26.vision.detailmaster.tokens import ClipPretokenizer, Tokenizer

__all__ = ["POLISH_PROMPT", "DetailMasterBuilder", "TemplatePolisher"]

POLISH_PROMPT = (
    "Rewrite the following facts about an image into one fluent, detailed description of about {tokens} tokens. "
    "Keep every fact.\nFacts:\n{facts}"
)


class DetailMasterBuilder:
    """Structured annotations (and images) in, benchmark samples out (see the module docstring)."""

    def __init__(
        self,
        llm: TextLLM | None = None,
        detector: OpenVocabDetector | None = None,
        judge: VLMJudge | None = None,
        tokenizer: Tokenizer | None = None,
        characters: tuple[int, int] = (2, 5),
        containment: float = 0.75,
        iou_agree: float = 0.7,
    ) -> None:
        if not 1 <= characters[0] <= characters[1]:
            raise ValueError(f"characters must be (min, max) with 1 <= min <= max, got {characters}")
        self.llm, self.detector, self.judge = llm, detector, judge
        self.tokenizer = tokenizer or ClipPretokenizer()
        self.characters, self.containment, self.iou_agree = characters, containment, iou_agree

    # step 3
    def keep(self, scene: Scene) -> bool:
        return self.characters[0] <= len(scene.characters) <= self.characters[1]

    # step 4
    def localise(self, image: Image.Image, name: str) -> list[float] | None:
        boxes = []
        if self.detector is not None:
            boxes.append(self.detector.detect(image, name))
        if self.judge is not None:
            boxes.append(self.judge.ground(image, name))
        found = [list(map(float, b)) for b in boxes if b is not None]
        if len(found) < 2:
            return found[0] if found else None
        a, b = found
        if iou(a, b) > self.iou_agree:
            return max(found, key=lambda x: (x[2] - x[0]) * (x[3] - x[1]))
        return b  # the judge's box when the two disagree (the official code asks an ITM model; ours is simpler)

    # steps 4-5
    def locate(self, scene: Scene, image: Image.Image) -> Scene:
        """The scene with each character's region read from the image (None where it has no region)."""
        chars = []
        for c in scene.characters:
            box = self.localise(image, c.name)
            region = None if box is None else bbox_to_region(box, image.size, self.containment)
            chars.append(replace(c, position=region))
        return replace(scene, characters=tuple(chars))

    # step 8
    def polish(self, scene: Scene, rng: np.random.Generator, target_tokens: int, sample_id: str = "") -> Sample:
        if self.llm is None:
            return compose_prompt(scene, rng, target_tokens, self.tokenizer, sample_id=sample_id)
        facts = "\n".join(f"- {s}" for _, s in fact_sentences(scene))
        text = self.llm.complete(POLISH_PROMPT.format(tokens=target_tokens, facts=facts)).strip()
        sentences = {k: s for k, s in fact_sentences(scene) if k in ("background", "light", "style")}
        sentences.update({k: s for k, s in fact_sentences(scene) if k.startswith("relation:")})
        return Sample(text, scene, sentences, len(self.tokenizer.pieces(text)), self.tokenizer.name, sample_id)

    # step 9
    def survives(self, prompt: str, character: str, feature: str) -> bool:
        if self.llm is None:
            return True
        question = FILTER_QUESTION.format(
            prompt=prompt, feature=str({"main_character": character, "characteristic": feature})
        )
        return is_yes(self.llm.complete(question))

    def filter_features(self, sample: Sample) -> Sample:
        """The sample without the character attributes and locations its prompt lost (step 9)."""
        chars = []
        for c in sample.scene.characters:
            attrs = {k: v for k, v in c.attributes.items() if self.survives(sample.prompt, c.name, f"{k}:{v}")}
            position = c.position
            if position is not None and not self.survives(sample.prompt, c.name, f"position:{position}"):
                position = None
            chars.append(replace(c, attributes=attrs, position=position))
        return replace(sample, scene=replace(sample.scene, characters=tuple(chars)))

    def build(
        self,
        scenes: Sequence[Scene],
        images: Sequence[Image.Image] | None = None,
        seed: int = 0,
        tokens: tuple[int, int] = (200, 380),
    ) -> list[Sample]:
        """Steps 3-10 over the annotations (and their images, for steps 4-5); deterministic given ``seed``."""
        if images is not None and len(images) != len(scenes):
            raise ValueError(f"{len(scenes)} annotations but {len(images)} images: one image per annotation")
        rng = np.random.default_rng(seed)
        out = []
        for i, scene in enumerate(scenes):
            if not isinstance(scene, Scene):
                raise SceneSpecError(f"annotation {i} must be a Scene, got {type(scene).__name__}")
            scene.validate()
            if not self.keep(scene):
                continue
            if images is not None:
                scene = self.locate(scene, images[i])
            sample = self.filter_features(self.polish(scene, rng, int(rng.integers(tokens[0], tokens[1] + 1)), str(i)))
            if any(c.attributes for c in sample.scene.characters):
                out.append(sample)
        return out


class TemplatePolisher:
    """A stand-in LLM for steps 8-9 in the procedural world (see the module docstring)."""

    def __init__(self, drop: float = 0.0, seed: int = 0, tokenizer: Tokenizer | None = None) -> None:
        if not 0 <= drop <= 1:
            raise ValueError(f"drop must be a probability, got {drop}")
        self.drop, self.rng, self.tokenizer = drop, np.random.default_rng(seed), tokenizer or ClipPretokenizer()
        self.dropped: list[list[str]] = []  # per polish call, the fact sentences left out

    def complete(self, prompt: str) -> str:
        if prompt.startswith(POLISH_PROMPT.split("{", 1)[0]):
            facts = re.findall(r"^- (.+)$", prompt, flags=re.M)
            keep = self.rng.random(len(facts)) >= self.drop
            keep[0] = True  # the list of characters
            self.dropped.append([f for f, k in zip(facts, keep, strict=True) if not k])
            return " ".join(f for f, k in zip(facts, keep, strict=True) if k)
        m = re.search(
            r"image description text: '(.*)', and below is the specific characteristic.*?: '(\{.*?\})'", prompt, re.S
        )
        if m is None:
            raise ValueError("TemplatePolisher answers only the polish request and the official filter question")
        scene, feature = parse_prompt(m.group(1)), ast.literal_eval(m.group(2))
        key, _, value = feature["characteristic"].partition(":")
        try:
            c = scene.character(feature["main_character"])
        except KeyError:
            return "no"
        stated = c.position if key == "position" else c.attributes.get(key)
        return "yes" if stated == value else "no"
