"""The pluggable models of the two pipelines, and the official question wording.

Any object with these methods plugs in (structural typing): a diffusers pipeline through
:class:`~.adapters.DiffusersT2I`, a Hugging Face VLM through :class:`~.adapters.TransformersVLMJudge`, or the
procedural world's classical parsers (:mod:`.synthetic`). A box is ``[x0, y0, x1, y1]`` in pixels.

The question templates are the official evaluation code's strings, verbatim (``evaluation_pipeline/
eval_process.py`` of ``modelscope/data-juicer``, branch ``DetailMaster``), and a judge's answer counts as "yes"
when ``'yes'`` occurs in its lower-cased text, as there. :data:`CONTEXT_ATTRIBUTE` is ours (see the evaluator).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from PIL import Image

__all__ = [
    "ATTRIBUTE_QUESTION",
    "CONTEXT_ATTRIBUTE",
    "FILTER_QUESTION",
    "GROUND_QUESTION",
    "LOCATION_QUESTION",
    "SCENE_QUESTION",
    "SPATIAL_QUESTION",
    "ImageTextMatcher",
    "OpenVocabDetector",
    "T2IModel",
    "TextLLM",
    "VLMJudge",
    "is_yes",
]

Box = Sequence[float]

GROUND_QUESTION = (
    'Please only provide the bounding box coordinate (as a list) of the region "{character}" describes. Do not '
    "include any JSON formatting or additional text in the response."
)
ATTRIBUTE_QUESTION = (
    'Please analyze the main character in this image, specifically the "{character}". Please determine whether '
    "\"{attribute}\" is one of its characteristics or is associated with it. Please only respond with 'yes' or 'no'."
)
LOCATION_QUESTION = (
    'Analyze whether the character "{character}" (marked with a red bounding box at coordinates {box}) is located '
    "in {position}. Please only respond with 'yes' or 'no'."
)
SCENE_QUESTION = (
    'Analyze whether the {key} condition in this image match the following description: "{content}". Please only '
    "respond with 'yes' or 'no'."
)
SPATIAL_QUESTION = (
    "The provided image contains only characters: {characters} (highlighted with red bounding boxes). Analyze whether "
    'the spatial condition in this image match the following description: "{content}". Please only respond with '
    "'yes' or 'no'."
)
# ours: an attribute that is relative to the image (size) is asked on the whole image, the character boxed in red
CONTEXT_ATTRIBUTE = (
    'Analyze whether the character "{character}" (marked with a red bounding box at coordinates {box}) has the '
    "characteristic \"{attribute}\" in this image. Please only respond with 'yes' or 'no'."
)
# construction step 9 (``filter_feature.py``): does the polished prompt still carry this feature?
FILTER_QUESTION = (
    "I will provide you with a paragraph of image description and a specific characteristic of a main character. "
    "Your task is to determine whether the given image description includes the description of this particular "
    "characteristic of the main character. Below is the image description text: '{prompt}', and below is the "
    "specific characteristic of the main character: '{feature}'. Please determine whether the provided image "
    "description includes description about this particular characteristic of the designated main character. "
    "Please respond with only 'yes' or 'no'."
)


def is_yes(answer: str | bool) -> bool:
    """The official reading of a judge's answer: ``'yes' in answer.lower()`` (a bool passes through)."""
    return answer if isinstance(answer, bool) else "yes" in str(answer).lower()


@runtime_checkable
class T2IModel(Protocol):
    def generate(self, prompt: str, seed: int) -> Image.Image: ...


@runtime_checkable
class VLMJudge(Protocol):
    def yes_no(self, image: Image.Image, question: str) -> bool | str:
        """The answer to a yes/no question about the image (a bool, or text read with :func:`is_yes`)."""
        ...

    def ground(self, image: Image.Image, phrase: str) -> Box | None:
        """The box of the region the phrase describes, or None when there is none."""
        ...


@runtime_checkable
class OpenVocabDetector(Protocol):
    def detect(self, image: Image.Image, phrase: str) -> Box | None: ...


@runtime_checkable
class ImageTextMatcher(Protocol):
    def score(self, crops: Sequence[Image.Image], text: str) -> Sequence[float]: ...


@runtime_checkable
class TextLLM(Protocol):
    def complete(self, prompt: str) -> str: ...
