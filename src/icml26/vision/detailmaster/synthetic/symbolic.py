"""What a perfect judge would report: a planned scene (a simulated model's intent) scored against the sample.

The same rules as the evaluator, read off the scene graphs instead of pixels: presence, each attribute (the
renderer's neutral default when the plan leaves it unset), the official region of the padded box, scene
attributes, relations (the judge's midpoint rules on the planned boxes; a tether for ``interacting with``) and
leakage. This is the analytic reference the claims compare the pixel-based evaluation with; it never enters the
evaluator.
"""

from __future__ import annotations

from typing import Any

from icml26.vision.detailmaster.evaluation import Report
from icml26.vision.detailmaster.regions import bbox_to_region
from icml26.vision.detailmaster.schema import Sample, Scene
from icml26.vision.detailmaster.synthetic.render import DEFAULTS
from icml26.vision.detailmaster.synthetic.world import margin_px, pad, relation_holds

__all__ = ["expected_report"]


def expected_report(sample: Sample, plan: Scene, width: int) -> Report:
    base = {"sample": sample.id, "n_tokens": sample.n_tokens}
    drawn = {c.name: c for c in plan.characters}
    m = margin_px(width)
    recs: list[dict[str, Any]] = []

    def value(name: str, key: str) -> str:
        return {**DEFAULTS, **drawn[name].attributes}[key]

    for c in sample.characters:
        here = c.name in drawn
        recs.append({**base, "dimension": "presence", "character": c.name, "cls": c.cls, "score": int(here)})
        for key, v in c.attributes.items():
            score = int(here and value(c.name, key) == v)
            recs.append(
                {
                    **base,
                    "dimension": "attribute",
                    "character": c.name,
                    "cls": c.cls,
                    "feature": f"{key}:{v}",
                    "score": score,
                }
            )
        if c.position is not None:
            score = int(here and bbox_to_region(pad(drawn[c.name].box, m), (width, width)) == c.position)
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
    for key, v in sample.scene.attributes.items():
        recs.append({**base, "dimension": key, "feature": v, "score": int(plan.attributes.get(key) == v)})
    tethers = {frozenset((r.subject, r.object)) for r in plan.relations if r.predicate == "interacting with"}
    for r in sample.relations:
        score = 0
        if r.subject in drawn and r.object in drawn:
            if r.predicate == "interacting with":
                score = int(frozenset((r.subject, r.object)) in tethers)
            else:
                score = int(relation_holds(r.predicate, drawn[r.subject].box, drawn[r.object].box, width, strict=False))
        recs.append(
            {**base, "dimension": "relation", "feature": f"{r.subject}|{r.predicate}|{r.object}", "score": score}
        )
    report = Report(recs)
    truth = {c.name: c for c in sample.characters}
    present = [n for n in truth if n in drawn]
    if len(present) > 1:
        for r in recs:
            if r["dimension"] != "attribute" or r["character"] not in drawn:
                continue
            key, v = r["feature"].split(":", 1)
            leaked = int(
                not r["score"]
                and any(
                    o != r["character"] and truth[o].attributes.get(key) != v and value(o, key) == v for o in present
                )
            )
            report.leaks.append({**base, "character": r["character"], "feature": r["feature"], "leaked": leaked})
    return report
