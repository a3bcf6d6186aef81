"""The evaluation workflow (the official ``eval_process.py``, step by step, with pluggable models).

For each sample and its generated image:

1. presence: the judge and the detector each ground every character; if both boxes exist and their IoU exceeds
   ``iou_agree`` (0.7) the larger is kept, otherwise the image-text matcher picks between the two crops; no box
   means the character is absent (without a detector, the judge's box is used: our option);
2. attributes: one yes/no question per attribute on the character's crop; an absent character fails them all;
3. location: one yes/no question on the image with the character's box drawn in red (width 5); absent: fails;
4. scene: background, light and style, one question each on the whole image;
5. relations: one question per relation on the image with every present character boxed in red; "no" when no
   character is present;
6. scores: accuracy per dimension; attributes also split by class (person, animal, object).

Ours, named as such: attributes relative to the image (``context_attributes``, default size) are asked on the
whole image with the character boxed, since a crop cannot show them; ``leakage`` adds, for each failed attribute
of a present character, the same question about every other present character that was not asked to carry that
value, and counts an attribute as leaked when one of them carries it (attribute leakage, the paper's diffusion
failure); presence is also scored as a dimension.
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from icml26.vision.detailmaster.protocols import (
    ATTRIBUTE_QUESTION,
    CONTEXT_ATTRIBUTE,
    LOCATION_QUESTION,
    SCENE_QUESTION,
    SPATIAL_QUESTION,
    ImageTextMatcher,
    OpenVocabDetector,
    VLMJudge,
    is_yes,
)
from icml26.vision.detailmaster.regions import iou, official_position
from icml26.vision.detailmaster.schema import Sample, _rel_key

__all__ = ["DIMENSIONS", "DetailMasterEvaluator", "MissingImageError", "Report"]

DIMENSIONS: tuple[str, ...] = (
    "presence",
    "attribute",
    "attribute_person",
    "attribute_animal",
    "attribute_object",
    "location",
    "background",
    "light",
    "style",
    "relation",
)
RED_WIDTH = 5  # the official red box


class MissingImageError(ValueError):
    """A sample without an image (None, or fewer images than samples)."""


@dataclass
class Report:
    """Every question's outcome (``records``) and the scores derived from them."""

    records: list[dict[str, Any]] = field(default_factory=list)
    leaks: list[dict[str, Any]] = field(default_factory=list)

    def scores(self, records: Sequence[dict[str, Any]] | None = None) -> dict[str, float]:
        """Accuracy per dimension (NaN where a dimension was never asked)."""
        recs = self.records if records is None else records
        hits: dict[str, list[int]] = defaultdict(list)
        for r in recs:
            hits[r["dimension"]].append(r["score"])
            if r["dimension"] == "attribute":
                hits[f"attribute_{r['cls']}"].append(r["score"])
        return {d: float(np.mean(hits[d])) if hits[d] else float("nan") for d in DIMENSIONS}

    def leakage_rate(self) -> float:
        """Share of the attribute questions of present characters whose value appears on another character."""
        if not self.leaks:
            return float("nan")
        return float(np.mean([x["leaked"] for x in self.leaks]))

    def by_length_bins(self, edges: Sequence[float]) -> dict[str, dict[str, float]]:
        """Scores of the samples whose prompt length (tokens) falls in each bin [edges[i], edges[i+1])."""
        out = {}
        for lo, hi in itertools.pairwise(edges):
            recs = [r for r in self.records if lo <= r["n_tokens"] < hi]
            out[f"[{lo:g}, {hi:g})"] = {**self.scores(recs), "n_samples": len({r["sample"] for r in recs})}
        return out

    def to_json(self) -> str:
        return json.dumps({"scores": self.scores(), "leakage": self.leakage_rate(), "records": self.records})


def _draw_boxes(image: Image.Image, boxes: Sequence[Sequence[float]]) -> Image.Image:
    out = image.copy()
    draw = ImageDraw.Draw(out)
    for b in boxes:
        draw.rectangle([float(v) for v in b], outline="red", width=RED_WIDTH)
    return out


def _norm_box(box: Sequence[float], image: Image.Image) -> list[float]:
    w, h = image.size
    return [round(box[0] / w, 2), round(box[1] / h, 2), round(box[2] / w, 2), round(box[3] / h, 2)]


def _valid_box(box: Any, image: Image.Image) -> list[float] | None:
    """A usable box, clipped to the image; None for a missing or malformed one (the official code's ``except``)."""
    try:
        b = [float(v) for v in box]
    except (TypeError, ValueError):
        return None
    w, h = image.size
    if len(b) != 4 or not all(np.isfinite(b)):
        return None
    b = [max(0.0, b[0]), max(0.0, b[1]), min(float(w), b[2]), min(float(h), b[3])]
    return b if b[2] > b[0] and b[3] > b[1] else None


class DetailMasterEvaluator:
    """Scores generated images against their samples along the paper's four dimensions (see the module docstring)."""

    def __init__(
        self,
        judge: VLMJudge,
        detector: OpenVocabDetector | None = None,
        itm: ImageTextMatcher | None = None,
        iou_agree: float = 0.7,
        context_attributes: Sequence[str] = ("size",),
        leakage: bool = True,
    ) -> None:
        if not hasattr(judge, "yes_no") or not hasattr(judge, "ground"):
            raise TypeError(f"judge must have yes_no(image, question) and ground(image, phrase); got {type(judge)}")
        if detector is not None and not hasattr(detector, "detect"):
            raise TypeError(f"detector must have detect(image, phrase); got {type(detector)}")
        if not 0 <= iou_agree <= 1:
            raise ValueError(f"iou_agree must be in [0, 1], got {iou_agree}")
        self.judge, self.detector, self.itm = judge, detector, itm
        self.iou_agree, self.context_attributes, self.leakage = iou_agree, tuple(context_attributes), leakage

    # step 1 -------------------------------------------------------------------------------------------------
    def locate(self, image: Image.Image, name: str) -> list[float] | None:
        """The character's box by the official agreement rule, or None when it is absent."""
        jb = _valid_box(self.judge.ground(image, name), image)
        if self.detector is None:
            return jb
        db = _valid_box(self.detector.detect(image, name), image)
        if db is None or jb is None:
            return None
        if iou(db, jb) > self.iou_agree:
            area = [(b[2] - b[0]) * (b[3] - b[1]) for b in (db, jb)]
            return db if area[0] > area[1] else jb
        if self.itm is None:
            return jb
        s = self.itm.score([image.crop(tuple(db)), image.crop(tuple(jb))], name)
        return db if s[0] > s[1] else jb

    def _ask(self, image: Image.Image, question: str) -> int:
        return int(is_yes(self.judge.yes_no(image, question)))

    # steps 2-5 ----------------------------------------------------------------------------------------------
    def evaluate_one(self, sample: Sample, image: Image.Image, index: int = 0) -> Report:
        if image is None:
            raise MissingImageError(f"sample {index} ({sample.id or 'no id'}) has no image")
        if not isinstance(image, Image.Image):
            raise TypeError(f"sample {index}: the image must be a PIL.Image, got {type(image).__name__}")
        image = image.convert("RGB")
        base = {"sample": sample.id or str(index), "n_tokens": sample.n_tokens}
        boxes = {c.name: self.locate(image, c.name) for c in sample.characters}
        recs: list[dict[str, Any]] = []
        crops: dict[str, Image.Image] = {}
        for c in sample.characters:
            box = boxes[c.name]
            recs.append(
                {**base, "dimension": "presence", "character": c.name, "cls": c.cls, "score": int(box is not None)}
            )
            for key, value in c.attributes.items():
                feature = f"{key}:{value}"
                if box is None:
                    score = 0
                elif key in self.context_attributes:
                    q = CONTEXT_ATTRIBUTE.format(character=c.name, box=_norm_box(box, image), attribute=feature)
                    score = self._ask(_draw_boxes(image, [box]), q)
                else:
                    crop = crops.setdefault(c.name, image.crop(tuple(box)))
                    score = self._ask(crop, ATTRIBUTE_QUESTION.format(character=c.name, attribute=feature))
                recs.append(
                    {
                        **base,
                        "dimension": "attribute",
                        "character": c.name,
                        "cls": c.cls,
                        "feature": feature,
                        "score": score,
                    }
                )
            if c.position is not None:
                score = 0
                if box is not None:
                    q = LOCATION_QUESTION.format(
                        character=c.name, box=_norm_box(box, image), position=official_position(c.position).lower()
                    )
                    score = self._ask(_draw_boxes(image, [box]), q)
                recs.append(
                    {
                        **base,
                        "dimension": "location",
                        "character": c.name,
                        "cls": c.cls,
                        "feature": c.position,
                        "score": score,
                    }
                )
        for key, value in sample.scene.attributes.items():
            q = SCENE_QUESTION.format(key=key, content=sample.sentences.get(key, value))
            recs.append({**base, "dimension": key, "feature": value, "score": self._ask(image, q)})
        present = [n for n, b in boxes.items() if b is not None]
        boxed = _draw_boxes(image, [boxes[n] for n in present]) if sample.relations and present else None
        for r in sample.relations:
            content = sample.sentences.get(_rel_key(r), f"The {r.subject} is {r.predicate} the {r.object}.")
            score = 0
            if boxed is not None:
                names = ", ".join(f'"{n}"' for n in present)
                score = self._ask(boxed, SPATIAL_QUESTION.format(characters=names, content=content))
            recs.append(
                {**base, "dimension": "relation", "feature": f"{r.subject}|{r.predicate}|{r.object}", "score": score}
            )
        report = Report(recs)
        if self.leakage and len(present) > 1:
            report.leaks = self._leaks(sample, image, boxes, recs, crops, base)
        return report

    def _leaks(self, sample, image, boxes, recs, crops, base) -> list[dict[str, Any]]:
        chars = {c.name: c for c in sample.characters}
        out = []
        for r in recs:
            if r["dimension"] != "attribute" or boxes[r["character"]] is None:
                continue
            leaked = 0
            if not r["score"]:
                key, value = r["feature"].split(":", 1)
                for other, box in boxes.items():
                    if other == r["character"] or box is None or chars[other].attributes.get(key) == value:
                        continue
                    if key in self.context_attributes:
                        q = CONTEXT_ATTRIBUTE.format(character=other, box=_norm_box(box, image), attribute=r["feature"])
                        leaked = self._ask(_draw_boxes(image, [box]), q)
                    else:
                        crop = crops.setdefault(other, image.crop(tuple(box)))
                        leaked = self._ask(crop, ATTRIBUTE_QUESTION.format(character=other, attribute=r["feature"]))
                    if leaked:
                        break
            out.append({**base, "character": r["character"], "feature": r["feature"], "leaked": leaked})
        return out

    def evaluate(self, samples: Sequence[Sample], images: Sequence[Image.Image | None]) -> Report:
        """Every sample against its image (one image per sample, in order)."""
        if len(images) != len(samples):
            raise MissingImageError(f"{len(samples)} samples but {len(images)} images: one image per sample")
        report = Report()
        for i, (s, im) in enumerate(zip(samples, images, strict=True)):
            one = self.evaluate_one(s, im, i)
            report.records += one.records
            report.leaks += one.leaks
        return report
