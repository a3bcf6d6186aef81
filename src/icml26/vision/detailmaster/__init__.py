"""DetailMaster: a benchmark for text-to-image generation from long, detailed prompts, and its two pipelines.

The paper builds long prompts (284.89 tokens on average; the tokenizer is not named) that state four dimensions
of an image: character attributes, structured character locations, scene attributes (background, light, style)
and spatial/interactive relations; then scores a generator's images along them with an automatic judge.

Construction (:class:`~.construction.DetailMasterBuilder`; steps of the official ``data_construction_pipeline``):

1. dense image-caption pairs; an MLLM lists the main characters (2. ) and 3. keeps images with 2-5 of them;
4. each character is boxed by a detector and by the MLLM; 5. the box B (normalised by the image size) gets the
   region R* = argmax_R c(B, R), c(B, R) = |B n R| / |B|, over the nine official regions (upper, lower, left,
   right, middle, the four 0.4 x 0.4 corners; ties keep the list order), if c(B, R*) > 0.75, else no location
   (:func:`bbox_to_region`);
6.-7. the MLLM extracts per-character attributes, scene attributes and relations;
8. an LLM polishes every fact into one long prompt; 9. the LLM answers, for each feature, whether the prompt
   still states it (the official filter question); features that did not survive are dropped; 10. keep the rest.

Evaluation (:class:`DetailMasterEvaluator`; the official ``eval_process.py``), for each image:

1. presence: judge box J and detector box D; if IoU(J, D) > 0.7 keep the larger, else an image-text matcher picks;
   no box = absent;
2. attributes: one yes/no question per attribute on the crop; an absent character fails all of its attributes;
3. location: a yes/no question on the image with the character's box drawn in red (width 5);
4. scene: background, light and style, one question each on the whole image;
5. relations: one question each, every present character boxed in red;
6. scores: accuracy per dimension, attributes split by class (person, animal, object). An answer is "yes" when
   ``'yes'`` occurs in it (lower-cased), as in the official code; the official question strings are kept verbatim
   (:mod:`.protocols`).

Our readings (the abstract leaves them open; ours, not the authors'): size is asked on the whole image with the
character boxed (a crop cannot show size); presence is scored as a dimension; attribute leakage is measured by
asking each failed attribute of the other present characters (leaked = another character that was not asked to
carry the value carries it); without a matcher, the judge's box is kept when judge and detector disagree.

What runs offline (no T2I, VLM or detector weights, the dataset is hub-only): the whole harness, on a procedural
world (:mod:`.synthetic`) where the truth is known: PIL-drawn glyph scenes (7 characters in 3 classes; colour,
size, pattern, outline; 9 regions; 4 backgrounds, 4 lights, 3 styles; left-of / above / next-to and tethers for
"interacting with"), templated long prompts padded with neutral filler to a target length in CLIP tokens, a
deterministic classical judge that reads pixels only (colour segmentation, connected components, shape codes,
shading statistics, the red box), and simulated generators with built-in failures (77-token truncation, attribute
leakage, ignored locations, dropped characters, swapped relations). This validates the harness; it says nothing
about real T2I models. Real models plug in through the protocols (:class:`T2IModel`, :class:`VLMJudge`,
:class:`OpenVocabDetector`, :class:`ImageTextMatcher`, :class:`TextLLM`) and the adapters
(:class:`~.adapters.DiffusersT2I`, :class:`~.adapters.TransformersVLMJudge`). Self-enhancement bias: in the paper
the same MLLM family builds and judges the benchmark; results depend on the judge and on the question wording.

Token counts name their tokenizer: ``clip-pretok`` (CLIP's pre-tokenisation pieces; equal to CLIP BPE counts on our
prompts, checked on 300 prompts against the vocabulary of ``clip-anytorch``) or ``clip-bpe`` (:class:`ClipBPE`).

Example::

    from icml26.vision.detailmaster import DetailMaster
    from icml26.vision.detailmaster.synthetic import TruncatingT2I

    bench, samples = DetailMaster.procedural(20, seed=0)
    report = bench.run(TruncatingT2I(max_tokens=77), samples)
    report.scores()          # accuracy per dimension
    report.by_length_bins([200, 290, 380])

References
----------
- The paper: DetailMaster, ICML 2026 (only its abstract is used here); official
  code: ``modelscope/data-juicer``, branch ``DetailMaster`` (``evaluation_pipeline/``,
  ``data_construction_pipeline/``), read to check the rules and the question strings (nothing copied).
- A. Radford et al., "Learning Transferable Visual Models From Natural Language Supervision" (CLIP), ICML 2021.
- K. Huang et al., "T2I-CompBench", NeurIPS 2023; X. Hu et al., "ELLA" (DPG-Bench), 2024; D. Ghosh et al.,
  "GenEval", NeurIPS 2023; J. Cho et al., "Davidsonian Scene Graph", ICLR 2024.
"""

from typing import TYPE_CHECKING

from icml26._core.lazy import lazy_exports

_MODULE_OF = {
    "DetailMaster": "benchmark",
    **dict.fromkeys(("DetailMasterBuilder", "TemplatePolisher"), "construction"),
    **dict.fromkeys(("DiffusersT2I", "TransformersVLMJudge"), "adapters"),
    **dict.fromkeys(("DIMENSIONS", "DetailMasterEvaluator", "MissingImageError", "Report"), "evaluation"),
    **dict.fromkeys(("REGIONS", "bbox_to_region", "containment", "iou"), "regions"),
    **dict.fromkeys(("Character", "Relation", "Sample", "Scene", "SceneSpecError"), "schema"),
    **dict.fromkeys(("compose_prompt", "parse_prompt"), "prompts"),
    **dict.fromkeys(("ClipBPE", "ClipPretokenizer", "PromptTooLongError"), "tokens"),
    **dict.fromkeys(
        ("ImageTextMatcher", "OpenVocabDetector", "T2IModel", "TextLLM", "VLMJudge", "is_yes"), "protocols"
    ),
}
_NEEDS = dict.fromkeys(("benchmark", "construction", "evaluation", "protocols", "adapters"), "pillow")
__all__ = [
    "DIMENSIONS",
    "REGIONS",
    "Character",
    "ClipBPE",
    "ClipPretokenizer",
    "DetailMaster",
    "DetailMasterBuilder",
    "DetailMasterEvaluator",
    "DiffusersT2I",
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
    "TemplatePolisher",
    "TextLLM",
    "TransformersVLMJudge",
    "VLMJudge",
    "bbox_to_region",
    "compose_prompt",
    "containment",
    "iou",
    "is_yes",
    "parse_prompt",
]

if TYPE_CHECKING:
    from icml26.vision.detailmaster.adapters import DiffusersT2I, TransformersVLMJudge
    from icml26.vision.detailmaster.benchmark import DetailMaster
    from icml26.vision.detailmaster.construction import DetailMasterBuilder, TemplatePolisher
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
