"""The procedural world: scenes, renderer, classical judge/detector/matcher and simulated generators.

It validates the benchmark harness where the ground truth is known; it says nothing about real T2I models."""

from icml26.vision.detailmaster.synthetic.judge import ClassicalDetector, ClassicalJudge, ShapeMatcher, segment
from icml26.vision.detailmaster.synthetic.models import (
    BagOfWordsT2I,
    DroppingT2I,
    OracleT2I,
    PositionAgnosticT2I,
    RelationSwapT2I,
    SimulatedT2I,
    TruncatingT2I,
)
from icml26.vision.detailmaster.synthetic.render import Renderer
from icml26.vision.detailmaster.synthetic.symbolic import expected_report
from icml26.vision.detailmaster.synthetic.world import SceneSampler, place

__all__ = [
    "BagOfWordsT2I",
    "ClassicalDetector",
    "ClassicalJudge",
    "DroppingT2I",
    "OracleT2I",
    "PositionAgnosticT2I",
    "RelationSwapT2I",
    "Renderer",
    "SceneSampler",
    "ShapeMatcher",
    "SimulatedT2I",
    "TruncatingT2I",
    "expected_report",
    "place",
    "segment",
]
