import json
import math

import pytest

from icml26._core.cards import CardError, validate_card
from icml26._core.runner import run
from tests._core.tiny_paper import tiny_card


@pytest.fixture(scope="module")
def card(tmp_path_factory):
    out = tmp_path_factory.mktemp("cards")
    (card,) = run([tiny_card()], profile="smoke", out=out, report=False).cards
    return json.loads(json.dumps(card))


def test_a_built_card_validates(card):
    validate_card(card)


@pytest.mark.parametrize(
    ("path", "value", "where"),
    [
        (("comparisons", 0, "effect"), math.nan, "comparisons/0/effect"),
        (("metrics", "large", "sq_error", "mean"), math.inf, "metrics/large/sq_error/mean"),
        (("runtime_s",), math.nan, "runtime_s"),
        (("config", "deep"), [1.0, -math.inf], "config/deep/1"),
    ],
)
def test_non_finite_numbers_are_rejected_wherever_they_are(card, path, value, where):
    bad = json.loads(json.dumps(card))
    target = bad
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(CardError, match=f"at {where}: not a finite number"):
        validate_card(bad)


@pytest.mark.parametrize("key", ["effect", "ci_low", "ci_high", "sign_p", "method_mean", "baseline_mean"])
def test_statistics_are_numbers_when_there_are_pairs(card, key):
    bad = json.loads(json.dumps(card))
    bad["comparisons"][0][key] = None
    with pytest.raises(CardError, match=key):
        validate_card(bad)
    bad["comparisons"][0]["n"] = 0  # null means "no pair to compute it from"
    validate_card(bad)


def test_a_claim_whose_cells_all_failed_has_null_statistics_not_nan(tmp_path):
    card = tiny_card()
    claim = card.claims[0]
    boom = type(claim)(**{**claim.__dict__, "run": _fail, "id": "C9"})
    (built,) = run([type(card)(**{**card.__dict__, "claims": (boom,)})], profile="smoke", out=tmp_path).cards
    (comp,) = built["comparisons"]
    assert comp["n"] == 0 and comp["effect"] is None and comp["ci_low"] is None
    assert built["verdict"] == "inconclusive" and built["summary"] == "no successful cells"
    validate_card(built)
    assert "invalid" not in (tmp_path / "REPORT.md").read_text()


def _fail(cell):
    raise RuntimeError("every cell fails")
