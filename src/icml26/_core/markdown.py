"""Markdown that cannot be hijacked by the text it quotes.

Everything a card says (statements, notes, names, reasons) is data, not markup. :func:`text` makes a string
render literally in CommonMark/GitHub Markdown: HTML (``<script>``, comments that would end the README's generated
block) becomes entities, inline markup characters are backslash-escaped, a leading block marker (``#``, ``-``,
``1.``) loses its meaning, and line breaks become spaces so that quoted text can never leave its table cell, list
item or blockquote. :class:`Md` marks strings built here (links, code spans) as already safe; a Jinja environment
whose ``finalize`` is :func:`finalize` escapes everything else, the Markdown counterpart of HTML autoescaping.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

__all__ = ["Md", "anchor", "code", "finalize", "image", "link", "text"]


class Md(str):
    """A string that is already Markdown (built by this module): templates insert it as is."""

    __slots__ = ()


_BREAKS = re.compile(r"[\r\n\x0b\x0c\x85\u2028\u2029]+")
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_INLINE = re.compile(r"([\\`*_\[\]|~$])")
_LEADING_MARK = re.compile(r"^(\s*)(#{1,6}|[-+*])(?=\s|$)")  # a heading or a bullet at the start of a line
_LEADING_NUMBER = re.compile(r"^(\s*\d{1,9})([.)])(?=\s|$)")  # an ordered list item
_RULE = re.compile(r"^\s*([-=_*])[\s\-=_*]*$")  # a thematic break or a setext underline
_UNSAFE_IN_CODE = re.compile(r"[`|]")  # a backtick would end the span, a pipe would split a table cell


def text(value: Any) -> Md:
    """``value`` as literal Markdown text on one line (see the module docstring)."""
    s = _CONTROL.sub("", _BREAKS.sub(" ", str(value)))
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = _INLINE.sub(r"\\\1", s)
    s = _LEADING_MARK.sub(lambda m: m.group(1) + "\\" + m.group(2), s)
    s = _LEADING_NUMBER.sub(lambda m: m.group(1) + "\\" + m.group(2), s)
    if _RULE.match(s):
        s = s.replace(s.lstrip()[0], "\\" + s.lstrip()[0], 1)
    return Md(s)


def code(value: Any) -> Md:
    """``value`` as a code span on one line (its content is literal); text that a span cannot hold safely
    (backticks, pipes) falls back to :func:`text`."""
    s = _CONTROL.sub("", _BREAKS.sub(" ", str(value))).strip()
    return Md(f"`{s}`") if s and not _UNSAFE_IN_CODE.search(s) else text(s)


def _target(path: str) -> str:
    return quote(path, safe="/#._-~")


def link(label: Any, target: str) -> Md:
    """``[label](target)`` with the label escaped and the target percent-encoded (a relative path we built)."""
    label_md = label if isinstance(label, Md) else text(label)
    return Md(f"[{label_md}]({_target(target)})")


def image(alt: Any, target: str) -> Md:
    return Md(f"![{text(alt)}]({_target(target)})")


_ANCHOR = re.compile(r"^[A-Za-z0-9_-]+$")


def anchor(name: str) -> Md:
    """An HTML anchor to link to (``#name``); only identifier-like names, which need no escaping."""
    return Md(f'<a id="{name}"></a>') if _ANCHOR.match(name) else Md("")


def finalize(value: Any) -> Any:
    """Jinja ``finalize`` for Markdown templates: escape every value that is not :class:`Md` (numbers as text)."""
    if value is None:
        return ""
    return value if isinstance(value, Md) else text(value)
