import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from icml26._core.io import atomic_write_text, canonical_json, stable_hash, to_jsonable, write_json

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3),
    max_leaves=10,
)


@given(st.dictionaries(st.text(max_size=4), json_values, max_size=5))
def test_hash_ignores_key_order(d):
    reversed_d = dict(reversed(list(d.items())))
    assert stable_hash(d) == stable_hash(reversed_d)
    assert json.loads(canonical_json(d)) == json.loads(canonical_json(reversed_d))


def test_hash_distinguishes_values():
    assert stable_hash({"seed": 0}) != stable_hash({"seed": 1})
    assert len(stable_hash({})) == 16


def test_to_jsonable_numpy_and_nonfinite():
    out = to_jsonable({"a": np.float32(1.5), "b": np.arange(3), "c": (1, 2), "nan": math.nan, "inf": np.inf})
    assert out == {"a": 1.5, "b": [0, 1, 2], "c": [1, 2], "nan": None, "inf": None}
    with pytest.raises(TypeError, match="cannot convert"):
        to_jsonable(object())


def test_atomic_write_replaces_and_leaves_no_temp(tmp_path):
    path = tmp_path / "sub" / "card.json"
    write_json(path, {"x": 1})
    write_json(path, {"x": 2})
    assert json.loads(path.read_text()) == {"x": 2}
    assert [p.name for p in path.parent.iterdir()] == ["card.json"]


def test_atomic_write_failure_keeps_old_file(tmp_path, monkeypatch):
    path = tmp_path / "a.txt"
    atomic_write_text(path, "old")

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_text(path, "new")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]
