"""Lazy public names for a paper's package: ``import icml26.llm.trm`` stays cheap (no torch), and a name is imported
from its submodule on first use (PEP 562), with one clear error naming the extra when a dependency is missing."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    namespace: dict[str, Any], module_of: Mapping[str, str], needs: Mapping[str, str], extra: str
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of a package whose public names live in submodules.

    ``namespace`` is the package's ``globals()``; ``module_of`` maps each public name to its submodule; ``needs`` maps
    a submodule to what it needs (e.g. ``"torch"``), so that a failed import says ``pip install 'icml26[<extra>]'``;
    an import error of a submodule not in ``needs`` is raised as it is. A loaded name is cached in the namespace."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        try:
            value = getattr(importlib.import_module(f"{package}.{module}"), name)
        except ImportError as exc:
            if module not in needs:
                raise
            raise ImportError(f"{package}.{name} needs {needs[module]}: pip install 'icml26[{extra}]' ({exc})") from exc
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(namespace["__all__"]))

    return __getattr__, __dir__
