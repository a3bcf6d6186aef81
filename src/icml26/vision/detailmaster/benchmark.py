"""The benchmark as one object: samples in, a generator's images scored along the four dimensions out."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from icml26.vision.detailmaster.evaluation import DetailMasterEvaluator, Report
from icml26.vision.detailmaster.protocols import ImageTextMatcher, OpenVocabDetector, T2IModel, VLMJudge
from icml26.vision.detailmaster.schema import Sample

__all__ = ["DetailMaster"]


class DetailMaster:
    """``DetailMaster(judge, detector, itm).run(model, samples)``: generate one image per prompt and evaluate it.

    :meth:`procedural` builds the procedural benchmark (samples, and the classical judge, detector and matcher
    that read its images) for harness checks.
    """

    def __init__(
        self,
        judge: VLMJudge,
        detector: OpenVocabDetector | None = None,
        itm: ImageTextMatcher | None = None,
        iou_agree: float = 0.7,
    ) -> None:
        self.evaluator = DetailMasterEvaluator(judge, detector, itm, iou_agree=iou_agree)

    @classmethod
    def procedural(
        cls, n: int, seed: int = 0, size: int = 256, tokens: tuple[int, int] = (200, 380)
    ) -> tuple[DetailMaster, list[Sample]]:
        from icml26.vision.detailmaster.prompts import compose_prompt
        from icml26.vision.detailmaster.synthetic import ClassicalDetector, ClassicalJudge, SceneSampler, ShapeMatcher

        if n < 1:
            raise ValueError(f"n must be a positive number of samples, got {n}")
        rng = np.random.default_rng(seed)
        sampler = SceneSampler(size)
        samples = [
            compose_prompt(sampler.sample(rng), rng, int(rng.integers(tokens[0], tokens[1] + 1)), sample_id=str(i))
            for i in range(n)
        ]
        judge = ClassicalJudge()
        return cls(judge, ClassicalDetector(judge), ShapeMatcher()), samples

    def run(self, model: T2IModel, samples: Sequence[Sample], seed: int = 0) -> Report:
        if not hasattr(model, "generate"):
            raise TypeError(f"model must have generate(prompt, seed) -> PIL.Image; got {type(model).__name__}")
        images = [model.generate(s.prompt, seed + i) for i, s in enumerate(samples)]
        return self.evaluator.evaluate(samples, images)
