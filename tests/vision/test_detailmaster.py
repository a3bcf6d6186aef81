"""DetailMaster: the official box rules against the released dataset's boxes, the evaluator's presence/IoU logic
with mocks, prompts and tokens, the classical judge against rendered ground truth (fixed scenes and hypothesis-drawn
glyphs), each simulated failure moving its own dimension, the construction pipeline's feature filter, the adapters
with mocks, one clear error per bad input, and the benchmark's tiny size."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from icml26.vision.detailmaster import (
    ClipPretokenizer,
    DetailMaster,
    DetailMasterEvaluator,
    MissingImageError,
    PromptTooLongError,
    Relation,
    Scene,
    SceneSpecError,
    bbox_to_region,
    compose_prompt,
    containment,
    iou,
    is_yes,
    parse_prompt,
)
from icml26.vision.detailmaster.construction import DetailMasterBuilder, TemplatePolisher
from icml26.vision.detailmaster.regions import region_from_official
from icml26.vision.detailmaster.schema import ATTRIBUTES, BACKGROUNDS, CLASSES, LIGHTS, STYLES, Character
from icml26.vision.detailmaster.synthetic import (
    BagOfWordsT2I,
    ClassicalDetector,
    ClassicalJudge,
    DroppingT2I,
    OracleT2I,
    PositionAgnosticT2I,
    RelationSwapT2I,
    Renderer,
    SceneSampler,
    ShapeMatcher,
    TruncatingT2I,
    expected_report,
    place,
)
from icml26.vision.detailmaster.synthetic.world import margin_px, pad, relation_holds
from icml26.vision.detailmaster.tokens import ClipBPE, find_clip_vocabulary

NAMES = [n for names in CLASSES.values() for n in names]


@pytest.fixture(scope="module")
def world():
    """12 procedural samples and their ground-truth renders (every style appears)."""
    bench, samples = DetailMaster.procedural(12, seed=0)
    images = [Renderer().render(s.scene, i) for i, s in enumerate(samples)]
    return bench, samples, images


# ------------------------------------------------------------------------------------------- the official rules
@pytest.mark.parametrize("size", [(640, 427), (640, 480)])
def test_region_rule_reproduces_the_released_dataset_labels(size):
    """Boxes and labels of the official mini benchmark (COCO 000000238708), read with the official 0.75 rule."""
    assert bbox_to_region([200, 0, 397, 142], size) == "upper"
    assert bbox_to_region([39, 45, 123, 156], size) == "upper left"
    assert bbox_to_region([408, 61, 640, 201], size) == "upper right"


def test_region_rule_ties_threshold_and_degenerate_boxes():
    # inside both "upper" and "middle": the official stable sort keeps the earlier region in the list
    assert bbox_to_region([0.4, 0.32, 0.6, 0.48], (1, 1)) == "upper"
    assert bbox_to_region([0.35, 0.45, 0.65, 0.55], (1, 1)) == "middle"
    assert bbox_to_region([0.0, 0.0, 1.0, 1.0], (1, 1)) is None  # no region holds > 0.75 of the whole image
    assert bbox_to_region([0.1, 0.1, 0.1, 0.1], (1, 1)) is None
    assert region_from_official("The lower right part of the image") == "lower right"


box = st.tuples(*[st.floats(0, 1, allow_nan=False)] * 4).map(
    lambda b: (min(b[0], b[2]), min(b[1], b[3]), max(b[0], b[2]), max(b[1], b[3]))
)


@settings(max_examples=80, deadline=None)
@given(box, box, st.integers(16, 2048), st.integers(16, 2048))
def test_box_rules_are_scale_free_bounded_and_symmetric(a, b, w, h):
    occ = containment(a)
    assert np.all((occ >= 0) & (occ <= 1 + 1e-12))
    scaled = (a[0] * w, a[1] * h, a[2] * w, a[3] * h)
    assert bbox_to_region(scaled, (w, h)) == bbox_to_region(a, (1, 1))
    assert 0 <= iou(a, b) <= 1 and iou(a, b) == pytest.approx(iou(b, a))
    if (a[2] - a[0]) * (a[3] - a[1]) > 0:
        assert iou(a, a) == pytest.approx(1.0)


def test_iou_by_hand():
    assert iou([0, 0, 2, 2], [1, 1, 3, 3]) == pytest.approx(1 / 7)
    assert iou([0, 0, 1, 1], [1, 0, 2, 1]) == 0.0


def test_answers_are_read_with_the_official_substring_rule():
    assert is_yes("Yes.") and is_yes("yes, it is") and not is_yes("No") and is_yes(True) and not is_yes(False)


# ------------------------------------------------------------------------------------------- evaluator logic (mocks)
class MockJudge:
    def __init__(self, boxes, answer="yes"):
        self.boxes, self.answer, self.questions = boxes, answer, []

    def ground(self, image, phrase):
        return self.boxes.get(phrase)

    def yes_no(self, image, question):
        self.questions.append(question)
        return self.answer


class MockDetector:
    def __init__(self, boxes):
        self.boxes = boxes

    def detect(self, image, phrase):
        return self.boxes.get(phrase)


class MockITM:
    def __init__(self, prefer_first):
        self.prefer_first = prefer_first

    def score(self, crops, text):
        return [1.0, 0.0] if self.prefer_first else [0.0, 1.0]


def _two_character_sample():
    scene = Scene(
        (
            Character("cat", "animal", {"color": "red", "size": "small"}, "upper left"),
            Character("crate", "object", {"color": "blue", "pattern": "striped"}, "lower right"),
        ),
        {"background": "meadow"},
        (Relation("cat", "left of", "crate"),),
    )
    return compose_prompt(scene, np.random.default_rng(0), 0, sample_id="s")


def test_iou_agreement_keeps_the_larger_box_and_the_matcher_breaks_disagreements():
    img = Image.new("RGB", (100, 100))
    judge_box, close, far = [10, 10, 30, 30], [9, 9, 31, 31], [60, 60, 90, 90]
    ev = DetailMasterEvaluator(MockJudge({"cat": judge_box}), MockDetector({"cat": close}))
    assert ev.locate(img, "cat") == close  # IoU 0.83 > 0.7: the larger (the detector's)
    for prefer_first, want in ((True, far), (False, judge_box)):
        ev = DetailMasterEvaluator(MockJudge({"cat": judge_box}), MockDetector({"cat": far}), MockITM(prefer_first))
        assert ev.locate(img, "cat") == want
    ev = DetailMasterEvaluator(MockJudge({"cat": judge_box}), MockDetector({}))
    assert ev.locate(img, "cat") is None  # the detector finds nothing: absent, as in the official code
    assert DetailMasterEvaluator(MockJudge({"cat": "not a box"})).locate(img, "cat") is None


def test_a_missing_character_fails_all_its_attributes_and_its_location():
    sample = _two_character_sample()
    judge = MockJudge({"crate": [50, 50, 90, 90]}, answer="yes")  # the cat is never found
    rep = DetailMasterEvaluator(judge).evaluate([sample], [Image.new("RGB", (100, 100))])
    cat = [r for r in rep.records if r.get("character") == "cat"]
    assert {r["dimension"] for r in cat} == {"presence", "attribute", "location"}
    assert all(r["score"] == 0 for r in cat)
    crate = [r for r in rep.records if r.get("character") == "crate"]
    assert all(r["score"] == 1 for r in crate)
    assert not any('"cat"' in q and "characteristic" in q for q in judge.questions)  # never asked about the cat
    s = rep.scores()
    assert s["presence"] == 0.5 and s["attribute_animal"] == 0 and s["attribute_object"] == 1
    assert s["background"] == 1 and s["relation"] == 1
    assert json.loads(rep.to_json())["scores"]["presence"] == 0.5


def test_report_length_bins_split_the_samples():
    bench, samples = DetailMaster.procedural(4, seed=1)
    rep = bench.run(OracleT2I(), samples)
    edges = [0, 290, 1000]
    bins = rep.by_length_bins(edges)
    assert sum(b["n_samples"] for b in bins.values()) == 4


# ------------------------------------------------------------------------------------------- prompts and tokens
def test_prompts_are_deterministic_long_and_parse_back_to_their_scene():
    sampler = SceneSampler()
    lengths = []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        scene = sampler.sample(rng)
        target = int(rng.integers(200, 381))
        s1 = compose_prompt(scene, np.random.default_rng(seed), target)
        s2 = compose_prompt(scene, np.random.default_rng(seed), target)
        assert s1.prompt == s2.prompt and s1.tokenizer == "clip-pretok"
        assert target <= s1.n_tokens < target + 16  # one filler sentence at most past the target
        back = parse_prompt(s1.prompt)
        assert back.names == scene.names and back.attributes == scene.attributes and back.relations == scene.relations
        for c, b in zip(scene.characters, back.characters, strict=True):
            assert dict(b.attributes) == dict(c.attributes) and b.position == c.position
        lengths.append(s1.n_tokens)
    assert 250 < np.mean(lengths) < 330  # the paper's prompts average 284.89 tokens (tokenizer unnamed)


@pytest.mark.skipif(find_clip_vocabulary() is None, reason="clip-anytorch's BPE vocabulary is not installed")
def test_every_template_word_is_one_clip_token_so_counts_equal_clip_bpe():
    bpe, pre = ClipBPE(), ClipPretokenizer()
    for seed in range(5):
        rng = np.random.default_rng(seed)
        s = compose_prompt(SceneSampler().sample(rng), rng, 300)
        assert bpe.count(s.prompt) == pre.count(s.prompt)


def test_truncation_reads_only_whole_sentences_inside_75_text_tokens():
    rng = np.random.default_rng(3)
    sample = compose_prompt(SceneSampler().sample(rng), rng, 320)
    model = TruncatingT2I(77)
    cut = model.cut(sample.prompt)
    assert len(ClipPretokenizer().pieces(sample.prompt[:cut])) == 75
    read = model.read(sample.prompt)
    assert read == parse_prompt(sample.prompt[:cut])
    stated = sum(len(c.attributes) for c in read.characters)
    assert 0 < stated < sum(len(c.attributes) for c in sample.characters)
    with pytest.raises(PromptTooLongError, match="truncate=True"):
        TruncatingT2I(77, truncate=False).read(sample.prompt)


# ------------------------------------------------------------------------------------------- the judge vs ground truth
def test_judge_recovers_everything_drawn_and_rejects_what_was_not(world):
    from icml26.vision.detailmaster.reproduce import _negate

    bench, samples, images = world
    assert {s.scene.attributes["style"] for s in samples} == set(STYLES)
    pos = bench.evaluator.evaluate(samples, images)
    assert all(v == 1.0 for v in pos.scores().values() if np.isfinite(v)), pos.scores()
    neg = bench.evaluator.evaluate([_negate(s, np.random.default_rng(0)) for s in samples], images)
    no = neg.scores()
    assert all(no[d] == 0.0 for d in ("attribute", "location", "background", "light", "style", "relation")), no


def test_judge_boxes_match_the_drawn_glyphs(world):
    _, samples, images = world
    judge = ClassicalJudge()
    m = margin_px(256)
    for s, im in zip(samples, images, strict=True):
        for c in s.characters:
            got = judge.ground(im, c.name)
            # the 3x3 opening trims thin tips (a small star's points): a little under the drawn box, well over 0.7
            assert got is not None and iou(got, pad(c.box, m)) > 0.75


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(NAMES),
    st.sampled_from(ATTRIBUTES["color"]),
    st.sampled_from(ATTRIBUTES["size"]),
    st.sampled_from(ATTRIBUTES["pattern"]),
    st.sampled_from(ATTRIBUTES["outline"]),
    st.sampled_from(BACKGROUNDS),
    st.sampled_from(LIGHTS),
    st.sampled_from(STYLES),
    st.integers(0, 2**16),
)
def test_judge_reads_any_single_glyph(name, color, size, pattern, outline, background, light, style, seed):
    from icml26.vision.detailmaster.schema import character_class

    attrs = {"color": color, "size": size, "pattern": pattern, "outline": outline}
    c = Character(name, character_class(name), attrs, "middle")
    boxes, bad = place([c], (), np.random.default_rng(seed), 256)
    assert bad == 0
    scene = Scene((replace(c, box=boxes[name]),), {"background": background, "light": light, "style": style})
    sample = compose_prompt(scene, np.random.default_rng(seed), 0)
    judge = ClassicalJudge()
    rep = DetailMasterEvaluator(judge, ClassicalDetector(judge)).evaluate([sample], [Renderer().render(scene, seed)])
    failed = [r for r in rep.records if not r["score"]]
    assert not failed, failed


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**20))
def test_placed_layouts_keep_their_regions_and_relations(seed):
    scene = SceneSampler().sample(np.random.default_rng(seed))
    boxes, bad = place(scene.characters, scene.relations, np.random.default_rng(seed + 1), 256)
    if bad == 0:
        for c in scene.characters:
            assert bbox_to_region(pad(boxes[c.name], margin_px(256)), (256, 256)) == c.position
        for r in scene.relations:
            if r.predicate != "interacting with":
                assert relation_holds(r.predicate, boxes[r.subject], boxes[r.object], 256)


# ------------------------------------------------------------------------------------------- failure modes
def test_each_failure_mode_moves_its_own_dimension():
    bench, samples = DetailMaster.procedural(8, seed=5)
    scores = {}
    for model in (OracleT2I(), BagOfWordsT2I(0.5), PositionAgnosticT2I(), DroppingT2I(0.3), RelationSwapT2I(0.7)):
        rep = bench.run(model, samples, seed=11)
        plans = [model.plan(s.prompt, 11 + i) for i, s in enumerate(samples)]
        exp = [expected_report(s, p, 256).scores() for s, p in zip(samples, plans, strict=True)]
        scores[model.name] = rep.scores()
        # the pixels agree with the plan (a perfect judge) to within a few points overall
        assert abs(rep.scores()["attribute"] - np.nanmean([e["attribute"] for e in exp])) < 0.1
    o = scores["oracle"]
    assert min(o[d] for d in ("presence", "attribute", "location", "relation")) > 0.95

    def drop(model, d):
        return o[d] - scores[model][d]

    assert drop("bag_of_words", "attribute") > 0.15 and abs(drop("bag_of_words", "location")) < 0.05
    assert drop("position_agnostic", "location") > 0.5 and abs(drop("position_agnostic", "attribute")) < 0.05
    assert drop("dropping", "presence") > 0.1 and abs(drop("dropping", "background")) < 0.05
    assert drop("relation_swap", "relation") > 0.2 and abs(drop("relation_swap", "attribute")) < 0.05


# ------------------------------------------------------------------------------------------- construction
def test_feature_filter_removes_exactly_what_the_polisher_dropped(world):
    _, samples, _ = world
    scenes = [s.scene for s in samples]
    polisher = TemplatePolisher(drop=0.3, seed=1)
    built = DetailMasterBuilder(llm=polisher).build(scenes, seed=0)
    again = DetailMasterBuilder(llm=TemplatePolisher(drop=0.3, seed=1)).build(scenes, seed=0)
    assert [b.prompt for b in built] == [b.prompt for b in again]
    dropped_any = False
    for b in built:
        stated = parse_prompt(b.prompt)
        for c in b.scene.characters:
            truth = next(x for x in scenes[int(b.id)].characters if x.name == c.name)
            said = stated.character(c.name) if c.name in stated.names else None
            want = dict(said.attributes) if said is not None else {}
            assert dict(c.attributes) == want  # kept exactly the stated ones
            dropped_any |= len(c.attributes) < len(truth.attributes)
            assert c.position == (said.position if said is not None else None)
    assert dropped_any


def test_builder_reads_locations_back_from_the_images(world):
    _, samples, images = world
    judge = ClassicalJudge()
    builder = DetailMasterBuilder(detector=ClassicalDetector(judge), judge=judge)
    unplaced = [replace(s.scene, characters=tuple(replace(c, position=None) for c in s.characters)) for s in samples]
    for s, built in zip(samples, builder.build(unplaced, images), strict=True):
        assert [c.position for c in built.characters] == [c.position for c in s.characters]


# ------------------------------------------------------------------------------------------- adapters (mocks)
def test_diffusers_adapter_refuses_long_prompts_unless_told_to_truncate():
    from icml26.vision.detailmaster.adapters import DiffusersT2I

    class Tok:
        model_max_length = 77

        def __call__(self, text, truncation=False):
            return {"input_ids": list(range(len(text.split()) + 2))}

    class Pipe:
        tokenizer = Tok()

        def __call__(self, prompt, generator=None, **kw):
            self.kw = kw
            return type("Out", (), {"images": [Image.new("RGB", (8, 8))]})()

    long = "word " * 100
    with pytest.raises(PromptTooLongError, match="truncate=True"):
        DiffusersT2I(Pipe()).generate(long, 0)
    pipe = Pipe()
    assert DiffusersT2I(pipe, truncate=True, num_inference_steps=2).generate(long, 0).size == (8, 8)
    assert pipe.kw == {"num_inference_steps": 2}


def test_transformers_judge_adapter_parses_answers_and_boxes():
    import torch

    from icml26.vision.detailmaster.adapters import TransformersVLMJudge

    class Processor:
        answer = ""

        def apply_chat_template(self, messages, add_generation_prompt=True):
            assert messages[0]["content"][0]["type"] == "image"
            return messages[0]["content"][1]["text"]

        def __call__(self, text, images, return_tensors):
            return {"input_ids": torch.zeros(1, 3, dtype=torch.long)}

        def batch_decode(self, ids, skip_special_tokens=True):
            return [self.answer]

    class Model:
        def generate(self, input_ids, max_new_tokens, do_sample):
            return torch.zeros(1, 5, dtype=torch.long)

    proc = Processor()
    judge = TransformersVLMJudge(Model(), proc)
    proc.answer = "[12, 30.5, 80, 96]"
    assert judge.ground(Image.new("RGB", (8, 8)), "cat") == [12.0, 30.5, 80.0, 96.0]
    proc.answer = "I cannot see it"
    assert judge.ground(Image.new("RGB", (8, 8)), "cat") is None
    proc.answer = "Yes."
    assert is_yes(judge.yes_no(Image.new("RGB", (8, 8)), "Is it?"))


# ------------------------------------------------------------------------------------------- bad inputs
def test_named_bad_inputs_get_one_clear_error_each(world):
    bench, samples, images = world
    cat = Character("cat", "animal", {"color": "red"}, "upper left")
    with pytest.raises(SceneSpecError, match="unique"):
        Scene((cat, cat)).validate()
    with pytest.raises(SceneSpecError, match="unknown character"):
        Scene((Character("dragon", "animal"),)).validate()
    with pytest.raises(SceneSpecError, match="position must be one of"):
        Scene((replace(cat, position="top"),)).validate()
    with pytest.raises(SceneSpecError, match=r"color='green'"):
        Scene((replace(cat, attributes={"color": "green"}),)).validate()
    with pytest.raises(SceneSpecError, match="two different characters"):
        Scene((cat,), relations=(Relation("cat", "left of", "cat"),)).validate()
    with pytest.raises(SceneSpecError, match="place the scene"):
        Renderer().render(Scene((cat,)))
    with pytest.raises(MissingImageError, match="has no image"):
        bench.evaluator.evaluate(samples[:1], [None])
    with pytest.raises(MissingImageError, match="one image per sample"):
        bench.evaluator.evaluate(samples[:2], images[:1])
    with pytest.raises(TypeError, match=r"PIL.Image"):
        bench.evaluator.evaluate(samples[:1], [np.zeros((8, 8, 3))])
    with pytest.raises(TypeError, match="judge must have"):
        DetailMasterEvaluator(object())
    with pytest.raises(ValueError, match="four finite numbers"):
        bbox_to_region([0, 0, 1], (10, 10))
    with pytest.raises(ValueError, match="nine official locations"):
        region_from_official("the top")
    with pytest.raises(ValueError, match="probability"):
        BagOfWordsT2I(rate=1.5)
    with pytest.raises(ValueError, match="non-empty"):
        OracleT2I().generate("  ", 0)
    with pytest.raises(ValueError, match="cannot read this question"):
        ClassicalJudge().yes_no(images[0], "What colour is the sky?")
    with pytest.raises(ValueError, match="positive number of samples"):
        DetailMaster.procedural(0)
    with pytest.raises(ImportError, match="clip-anytorch"):
        ClipBPE(vocabulary="/nonexistent/bpe.txt.gz")
    with pytest.raises(TypeError, match="generate"):
        bench.run(object(), samples[:1])


def test_matcher_prefers_the_named_shape(world):
    _, samples, images = world
    s, im = samples[0], images[0]
    c0, c1 = s.characters[0], s.characters[1]
    m = margin_px(256)
    crops = [im.crop(tuple(int(v) for v in pad(c.box, m))) for c in (c0, c1)]
    scores = ShapeMatcher().score(crops, c0.name)
    assert scores[0] > scores[1]


def test_benchmark_rows_tiny():
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_detailmaster.py"
    spec = importlib.util.spec_from_file_location("bench_detailmaster", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.rows("tiny")
    assert rows and all(r.ours > 0 and r.anchor > 0 for r in rows)
