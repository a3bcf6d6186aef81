"""lazy_exports: names load from their submodule on first use; a missing dependency names the extra to install."""

from __future__ import annotations

import pytest

import icml26._core.fmt  # noqa: F401  (the name the fake package exports: a submodule is an attribute once imported)
from icml26._core.lazy import lazy_exports


def _package(needs):
    namespace = {"__name__": "icml26", "__all__": ["fmt", "gone"]}
    getattr_, dir_ = lazy_exports(namespace, {"fmt": "_core", "gone": "no_such_module"}, needs, "stats")
    return namespace, getattr_, dir_


def test_a_name_loads_once_and_is_cached():
    namespace, getattr_, dir_ = _package({})
    module = getattr_("fmt")
    assert module.__name__ == "icml26._core.fmt" and namespace["fmt"] is module
    assert {"fmt", "gone"} <= set(dir_())
    with pytest.raises(AttributeError, match="has no attribute 'other'"):
        getattr_("other")


def test_a_missing_dependency_names_the_extra_and_other_import_errors_pass_through():
    _, getattr_, _ = _package({"no_such_module": "torch"})
    with pytest.raises(ImportError, match=r"icml26\.gone needs torch: pip install 'icml26\[stats\]'"):
        getattr_("gone")
    _, getattr_, _ = _package({})
    with pytest.raises(ModuleNotFoundError, match="no_such_module"):
        getattr_("gone")
