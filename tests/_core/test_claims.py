import pickle

import pytest

from icml26._core import Cell, Claim, ClaimError, PaperCard, Profile
from tests._core.tiny_paper import run_mean, tiny_card

PROFILES = {p: Profile(seeds=2) for p in ("smoke", "quick", "full")}


def claim(**kw):
    base = dict(
        id="C1",
        statement="s",
        metric="m",
        direction="lower",
        method="a",
        baselines=("b",),
        run=run_mean,
        profiles=PROFILES,
    )
    return Claim(**{**base, **kw})


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"id": "1x"}, "identifier"),
        ({"direction": "up"}, "direction"),
        ({"test": "t"}, "test must be"),
        ({"baselines": ()}, "exactly one"),
        ({"reference": 0.05}, "exactly one"),
        ({"baselines": ("a",)}, "its own baseline"),
        ({"min_effect": -1.0}, "min_effect"),
        ({"test": "equivalence"}, "positive margin"),
        ({"test": "noninferiority"}, "positive margin"),
        ({"baselines": (), "reference": 0.0, "relative": True}, "reference of 0"),
        ({"profiles": {"smoke": Profile()}}, "missing"),
        ({"run": "not callable"}, "cell function"),
    ],
)
def test_bad_claims_fail_at_definition(kw, match):
    with pytest.raises(ClaimError, match=match):
        claim(**kw)


def test_bad_profiles_and_papers():
    with pytest.raises(ClaimError, match="at least one setting"):
        Profile(settings=())
    with pytest.raises(ClaimError, match="seeds"):
        Profile(seeds=0)
    with pytest.raises(TypeError):
        Profile(settings=({"f": object()},))
    with pytest.raises(ClaimError, match="unknown group"):
        PaperCard("x", "X", "physics", "api", "e", (claim(),))
    with pytest.raises(ClaimError, match="at least one claim"):
        PaperCard("x", "X", "stats", "api", "e", ())
    with pytest.raises(ClaimError, match="duplicate"):
        PaperCard("x", "X", "stats", "api", "e", (claim(), claim()))


def test_cells_expand_settings_by_seeds_with_stable_keys():
    card = tiny_card(seeds=3)
    ((_, cells),) = card.plan("smoke")
    assert [(cell["n"], cell.seed) for cell in cells] == [(5, 0), (5, 1), (5, 2), (20, 0), (20, 1), (20, 2)]
    assert len({cell.key for cell in cells}) == 6
    again = tiny_card(seeds=3).plan("smoke")[0][1]
    assert [cell.key for cell in cells] == [cell.key for cell in again]
    assert [cell.seed for cell in card.plan("smoke", seeds=1)[0][1]] == [0, 0]
    assert pickle.loads(pickle.dumps(cells[0])) == cells[0]


def test_revision_changes_the_key():
    a = Cell("p", "C1", "smoke", {"n": 1}, 0, revision=1)
    b = Cell("p", "C1", "smoke", {"n": 1}, 0, revision=2)
    assert a.key != b.key


def test_cell_reads_settings_with_clear_errors():
    cell = Cell("p", "C1", "smoke", {"n": 1}, 0)
    assert cell["n"] == 1 and cell.get("m", 7) == 7
    with pytest.raises(KeyError, match="has no 'm'"):
        cell["m"]
    assert cell.rng().integers(1 << 30) == Cell("q", "C2", "full", {}, 0).rng().integers(1 << 30)


def test_profiles_carry_expected_seconds_per_cell() -> None:
    from icml26._core import profiles as make_profiles

    p = make_profiles({}, {}, {}, seeds=(1, 2, 3), cell_seconds=(0.5, 2.0, 30.0))
    assert [p[k].cell_seconds for k in ("smoke", "quick", "full")] == [0.5, 2.0, 30.0]
    assert make_profiles({}, {}, {}, seeds=(1, 1, 1))["quick"].cell_seconds is None
    with pytest.raises(ClaimError, match="cell_seconds"):
        Profile(cell_seconds=-1.0)
