import pytest

from icml26._core.stats import Comparison
from icml26._core.verdict import combine, judge


def cmp(effect, lo, hi, n=10):
    return Comparison("b", "m", n, effect, lo, hi, "boot", 0, 0, 0, 1.0, 0.0, 0.0)


@pytest.mark.parametrize(
    ("test", "effect", "lo", "hi", "e", "expected"),
    [
        ("superiority", 0.5, 0.2, 0.8, 0.0, "reproduced"),
        ("superiority", 0.5, 0.2, 0.8, 0.4, "reproduced"),
        ("superiority", 0.3, 0.2, 0.8, 0.4, "inconclusive"),  # significant but below the minimum effect
        ("superiority", 0.1, 0.05, 0.3, 0.4, "not_reproduced"),  # the minimum effect is excluded
        ("superiority", 0.0, -0.2, 0.2, 0.0, "inconclusive"),
        ("superiority", -0.5, -0.8, -0.2, 0.0, "not_reproduced"),
        ("noninferiority", -0.01, -0.03, 0.01, 0.05, "reproduced"),
        ("noninferiority", -0.04, -0.08, 0.00, 0.05, "inconclusive"),
        ("noninferiority", -0.2, -0.3, -0.1, 0.05, "not_reproduced"),
        ("equivalence", 0.0, -0.01, 0.01, 0.05, "reproduced"),
        ("equivalence", 0.04, 0.0, 0.08, 0.05, "inconclusive"),
        ("equivalence", 0.2, 0.1, 0.3, 0.05, "not_reproduced"),
        ("equivalence", -0.2, -0.3, -0.1, 0.05, "not_reproduced"),
    ],
)
def test_rule_table(test, effect, lo, hi, e, expected):
    verdict, reason = judge(cmp(effect, lo, hi), test=test, min_effect=e)
    assert verdict == expected
    assert reason


def test_too_few_pairs_is_inconclusive_unless_deterministic():
    c = cmp(1.0, 1.0, 1.0, n=1)
    assert judge(c, test="superiority", min_effect=0.0)[0] == "inconclusive"
    assert judge(c, test="superiority", min_effect=0.0, deterministic=True)[0] == "reproduced"


def test_no_pairs_is_inconclusive():
    assert judge(cmp(float("nan"), float("nan"), float("nan"), n=0), test="superiority", min_effect=0)[0] == (
        "inconclusive"
    )


def test_unknown_test_raises():
    with pytest.raises(ValueError, match="unknown test"):
        judge(cmp(1, 1, 1), test="bogus", min_effect=0)


def test_combine():
    assert combine(["reproduced", "reproduced"]) == "reproduced"
    assert combine(["reproduced", "inconclusive"]) == "inconclusive"
    assert combine(["inconclusive", "not_reproduced"]) == "not_reproduced"
    assert combine([]) == "inconclusive"
