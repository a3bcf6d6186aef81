"""DetailMaster: a benchmark for text-to-image generation from long, detailed prompts (docstring: see below)."""

from typing import TYPE_CHECKING

from icml26._core.lazy import lazy_exports

_MODULE_OF = {
    "DetailMaster": "benchmark",
    **dict.fromkeys(("DIMENSIONS", "DetailMasterEvaluator", "MissingImageError", "Report"), "evaluation"),
    **dict.fromkeys(("REGIONS", "bbox_to_region", "containment", "iou"), "regions"),
    **dict.fromkeys(("Character", "Relation", "Sample", "Scene", "SceneSpecError"), "schema"),
    **dict.fromkeys(("compose_prompt", "parse_prompt"), "prompts"),
    **dict.fromkeys(("ClipBPE", "ClipPretokenizer", "PromptTooLongError"), "tokens"),
    **dict.fromkeys(
        ("ImageTextMatcher", "OpenVocabDetector", "T2IModel", "TextLLM", "VLMJudge", "is_yes"), "protocols"
    ),
}
_NEEDS = dict.fromkeys(("benchmark", "evaluation", "protocols"), "pillow")
__all__ = [
    "DIMENSIONS",
    "REGIONS",
    "Character",
    "ClipBPE",
    "ClipPretokenizer",
    "DetailMaster",
    "DetailMasterEvaluator",
    "ImageTextMatcher",
    "MissingImageError",
    "OpenVocabDetector",
    "PromptTooLongError",
    "Relation",
    "Report",
    "Sample",
    "Scene",
    "SceneSpecError",
    "T2IModel",
    "TextLLM",
    "VLMJudge",
    "bbox_to_region",
    "compose_prompt",
    "containment",
    "iou",
    "is_yes",
    "parse_prompt",
]

if TYPE_CHECKING:
    from icml26.vision.detailmaster.benchmark import DetailMaster
    from icml26.vision.detailmaster.evaluation import DIMENSIONS, DetailMasterEvaluator, MissingImageError, Report
    from icml26.vision.detailmaster.prompts import compose_prompt, parse_prompt
    from icml26.vision.detailmaster.protocols import (
        ImageTextMatcher,
        OpenVocabDetector,
        T2IModel,
        TextLLM,
        VLMJudge,
        is_yes,
    )
    from icml26.vision.detailmaster.regions import REGIONS, bbox_to_region, containment, iou
    from icml26.vision.detailmaster.schema import Character, Relation, Sample, Scene, SceneSpecError
    from icml26.vision.detailmaster.tokens import ClipBPE, ClipPretokenizer, PromptTooLongError

__getattr__, __dir__ = lazy_exports(globals(), _MODULE_OF, _NEEDS, "vision")
