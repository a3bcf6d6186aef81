"""A strict check of the report's HTML with the standard library's parser (no browser needed).

It fails on what a browser would silently repair or, worse, run: an element outside the small set the report uses
(``<script>``, ``<iframe>``, ``<svg>``...), an event-handler or unknown attribute, a link with a scheme, an image
that is not an embedded PNG, an end tag that does not close the element open at that point, an element left open,
a duplicate attribute or id, and an in-page link to an id that does not exist. It returns the page's text as a
browser would show it, so that a test can check that hostile card text appears literally.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

VOID = {"meta", "img", "br", "hr", "link", "input"}
ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "main", "section", "div", "span", "p", "small",
    "h1", "h2", "h3", "h4", "table", "thead", "tbody", "tr", "th", "td", "ul", "li", "a", "img", "code", "pre",
    "strong", "blockquote", "details", "summary",
}  # fmt: skip
ALLOWED_ATTRS = {"class", "id", "href", "src", "alt", "style", "title", "lang", "charset", "name", "content"}
META_ATTRS = {"http-equiv"}
_RELATIVE = re.compile(r"^(#[A-Za-z0-9_-]+|[A-Za-z0-9_./%-]+)$")


class StrictHTML(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.errors: list[str] = []
        self.stack: list[str] = []
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.text: list[str] = []
        self.saw_doctype = False
        self._in_style = False

    def error_at(self, message: str) -> None:
        line, col = self.getpos()
        self.errors.append(f"{line}:{col}: {message}")

    def handle_decl(self, decl: str) -> None:
        self.saw_doctype = self.saw_doctype or decl.lower() == "doctype html"

    def _check_attrs(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = [n for n, _ in attrs]
        if len(set(names)) != len(names):
            self.error_at(f"<{tag}> repeats an attribute: {names}")
        for name, value in attrs:
            allowed = ALLOWED_ATTRS | (META_ATTRS if tag == "meta" else set())
            if name not in allowed:
                self.error_at(f"<{tag}> has attribute {name!r}")
            value = value or ""
            if name == "id":
                if value in self.ids:
                    self.error_at(f"duplicate id {value!r}")
                self.ids.add(value)
            if name == "href":
                if not _RELATIVE.match(value):
                    self.error_at(f"<a href={value!r}> is not an in-page or relative link")
                if value.startswith("#"):
                    self.links.append(value[1:])
            if name == "src" and not value.startswith("data:image/png;base64,"):
                self.error_at(f"<{tag} src={value[:60]!r}> is not an embedded PNG")
            if name == "style" and not re.fullmatch(r"width: [0-9.]+%", value):
                self.error_at(f"<{tag} style={value!r}> is not a meter width")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in ALLOWED_TAGS:
            self.error_at(f"unexpected element <{tag}>")
        self._check_attrs(tag, attrs)
        if tag not in VOID:
            self.stack.append(tag)
        self._in_style = tag == "style"

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            self.error_at(f"end tag of void element </{tag}>")
            return
        if not self.stack or self.stack[-1] != tag:
            self.error_at(f"</{tag}> closes {self.stack[-1] if self.stack else 'nothing'}")
            if tag in self.stack:
                while self.stack and self.stack.pop() != tag:
                    pass
            return
        self.stack.pop()
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if not self._in_style:
            self.text.append(data)

    def handle_comment(self, data: str) -> None:
        self.error_at("a comment in the report (nothing should be hidden in it)")


def check_html(page: str) -> str:
    """Raise AssertionError listing every problem; return the visible text."""
    parser = StrictHTML()
    parser.feed(page)
    parser.close()
    problems = list(parser.errors)
    if not parser.saw_doctype:
        problems.append("no <!doctype html>")
    if parser.stack:
        problems.append(f"unclosed elements: {parser.stack}")
    problems += [f"in-page link to missing id #{target}" for target in parser.links if target not in parser.ids]
    assert not problems, "\n".join(problems[:20])
    return "".join(parser.text)
