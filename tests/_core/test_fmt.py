import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icml26._core import fmt, markdown

CLAIM = {
    "metric": "wrong_marks",
    "direction": "lower",
    "method": "ifci",
    "baselines": [],
    "reference": 0.0,
    "unit": "marks",
    "test": "noninferiority",
    "min_effect": 0.5,
    "relative": False,
    "deterministic": True,
    "min_pairs": 3,
}
EXACT = {
    "baseline": "reference 0",
    "n": 1,
    "effect": -0.0,
    "ci_low": -0.0,
    "ci_high": -0.0,
    "sign_p": 1.0,
    "wins": 0,
    "losses": 0,
    "ties": 1,
    "method_mean": 0.0,
    "baseline_mean": 0.0,
    "verdict": "reproduced",
}


@pytest.mark.parametrize(
    ("x", "text"),
    [
        (-0.0, "0"),
        (0, "0"),
        (0.436, "0.436"),
        (-0.07077, "-0.07077"),
        (382_812.4, "382,812"),
        (21_755.0, "21,755"),
        (6.661e-16, "6.661e-16"),
        (3.2e9, "3.2e+09"),
        (None, "n/a"),
        (math.nan, "n/a"),
        (math.inf, "n/a"),
        (True, "n/a"),
    ],
)
def test_num(x, text):
    assert fmt.num(x) == text


def test_units_counts_and_signs():
    assert fmt.quantity(0, "marks") == "0 marks" and fmt.quantity(3.5, "") == "3.5"
    assert fmt.quantity(None, "marks") == "n/a"
    assert fmt.count(1, "cell") == "1 cell" and fmt.count(0, "cell") == "0 cells" and fmt.count(2, "cell") == "2 cells"
    assert fmt.signed(-0.0) == "0" and fmt.signed(0.1) == "+0.1" and fmt.signed(-0.1) == "-0.1"
    assert fmt.percent(0.127) == "+12.7%" and fmt.percent(-0.0) == "0%" and fmt.percent(0.25, signed_=False) == "25%"


def test_a_deterministic_claim_has_no_interval_and_no_sign_test():
    assert fmt.ci_text(CLAIM, EXACT) == fmt.DETERMINISTIC == fmt.sign_p_text(CLAIM, EXACT)
    summary = fmt.summary(CLAIM, [EXACT])
    assert summary == (
        "wrong_marks (lower is better): ifci 0 marks vs reference 0 marks; "
        "effect 0 marks (deterministic: one exact run)"
    )
    assert "-0" not in summary and "[" not in summary
    several = {**EXACT, "n": 5, "ci_low": -0.02, "ci_high": 0.02, "sign_p": 0.5}
    assert fmt.ci_text(CLAIM, several) == "[-0.02, +0.02]"  # over several settings the interval means something
    assert fmt.ci_text({**CLAIM, "deterministic": False}, EXACT) == "[0, 0]"


def test_relative_effects_are_labelled_relative():
    claim = {**CLAIM, "relative": True, "baselines": ["h200"], "reference": None, "test": "superiority"}
    comp = {**EXACT, "baseline": "h200", "effect": 0.436, "ci_low": 0.4, "ci_high": 0.47, "n": 4, "wins": 4}
    assert fmt.effect_text(claim, comp) == "+43.6% relative to h200"
    assert fmt.ci_text({**claim, "deterministic": False}, comp) == "[+40%, +47%]"
    assert fmt.margin_text({**claim, "min_effect": 0.25}) == "better by at least 25% (relative)"


def test_judgement_follows_the_rule_in_words():
    assert fmt.judgement(CLAIM, EXACT).endswith("not worse than reference 0 marks by more than 0.5 marks")
    few = {**EXACT, "n": 2, "verdict": "inconclusive"}
    assert fmt.judgement({**CLAIM, "deterministic": False}, few) == "only 2 paired runs; at least 3 are needed"
    assert fmt.judgement(CLAIM, {**EXACT, "n": 0}) == "no successful paired runs"


@given(st.text())
def test_markdown_text_is_one_inert_line(s):
    out = markdown.text(s)
    assert "\n" not in out and "\r" not in out and "<" not in out and ">" not in out
    for ch in "[]`|*_":
        assert out.count(ch) == out.count("\\" + ch) or ch == "\\"
    assert not re.match(r"\s*(#{1,6}|[-+*]|\d{1,9}[.)])(\s|$)", out)  # no heading, bullet or numbered item


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
        ("[x](javascript:alert(1))", "\\[x\\](javascript:alert(1))"),
        ("# title", "\\# title"),
        ("- item", "\\- item"),
        ("1. first", "1\\. first"),
        ("0.1.0", "0.1.0"),
        ("---", "\\---"),
        ("a | b\nc", "a \\| b c"),
        ("E[err^2] = 1/(4n)", "E\\[err^2\\] = 1/(4n)"),
        ("AT&T &amp;", "AT&amp;T &amp;amp;"),
    ],
)
def test_markdown_escapes(raw, escaped):
    assert markdown.text(raw) == escaped


def test_markdown_code_links_and_anchors():
    assert markdown.code("icml26.stats.nammd.NAMMDClosenessTest") == "`icml26.stats.nammd.NAMMDClosenessTest`"
    assert markdown.code("a`b|c") == "a\\`b\\|c"
    assert markdown.link("C1 <b>", "results/x y/README.md#c1") == "[C1 &lt;b&gt;](results/x%20y/README.md#c1)"
    assert markdown.anchor("nammd-C1") == '<a id="nammd-C1"></a>' and markdown.anchor('x"><script>') == ""
    assert markdown.finalize(None) == "" and markdown.finalize(markdown.Md("**b**")) == "**b**"
