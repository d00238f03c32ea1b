"""Parts that many static claim pages repeat word for word, kept once per split.

A template marks a part as shareable (``{% filter shared %}`` in static mode wraps it in
``<!--shared-->`` … ``<!--/shared-->``). Once a split's claim pages are rendered,
:class:`SharedParts` counts each marked part; a part that occurs at least twice (in one page
or several), and whose one copy plus its placeholders is smaller than its copies, goes as a tree
of elements and texts into one script per split (``static/shared-<split>.js``,
``window.claimtraceShared``), and each page keeps ``<template data-shared="KEY"></template>`` in
its place (``<template>``, because the HTML parser keeps it where it stands, in a table or a list
too). app.js puts the parts back before anything else runs, building the elements with
``createElement`` and text nodes (no HTML parsing in the browser), so the page's document is node
for node the page written whole. A part that is not shared stays in the page, its marks removed.

What gets shared: prose and figures of the whole build (the same on every claim page), a passage
with its id (a passage is shown on many claims' pages), a batch neighbour (15 pages list it),
verdict badges, table heads.
"""

from __future__ import annotations

import re
from collections import Counter
from html.parser import HTMLParser

from claimtrace.web.encoding import json_for_script
from claimtrace.web.render import SHARED_CLOSE, SHARED_OPEN

#: A marked part (parts never nest: the ``shared`` filter drops the marks inside a marked part).
SHARED_PART = re.compile(re.escape(SHARED_OPEN) + "(.*?)" + re.escape(SHARED_CLOSE), re.S)
#: Elements with no end tag.
VOID_ELEMENTS = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"})


def placeholder(keys: str) -> str:
    """Where shared parts go back: one key, or several (space-separated) for parts that follow
    one another with nothing between them (a batch's neighbours)."""
    return f'<template data-shared="{keys}"></template>'


#: Bytes a placeholder costs (a short key)
PLACEHOLDER_BYTES = len(placeholder("aa"))
#: Two placeholders that follow one another: merged into one.
_ADJACENT = re.compile(r'<template data-shared="([^"]+)"></template><template data-shared="')


class _TreeBuilder(HTMLParser):
    """One part's HTML as JSON-able nodes: a text is a string, an element ``[tag, {attributes},
    *children]``. Refuses HTML whose end tags do not match (a part must be well formed, so that
    the browser's elements are exactly those the server's page gives)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.top: list = []
        self.open: list[list] = []

    def _append(self, node) -> None:
        (self.open[-1] if self.open else self.top).append(node)

    def handle_starttag(self, tag, attrs):
        element = [tag, {name: value if value is not None else "" for name, value in attrs}]
        self._append(element)
        if tag not in VOID_ELEMENTS:
            self.open.append(element)

    def handle_startendtag(self, tag, attrs):
        self._append([tag, {name: value if value is not None else "" for name, value in attrs}])

    def handle_endtag(self, tag):
        if tag in VOID_ELEMENTS:
            return
        if not self.open or self.open[-1][0] != tag:
            raise ValueError(f"a shared part closes <{tag}> where it did not open it")
        self.open.pop()

    def handle_data(self, data):
        siblings = self.open[-1] if self.open else self.top
        if siblings and isinstance(siblings[-1], str):
            siblings[-1] += data
        else:
            self._append(data)

    def handle_comment(self, data):
        raise ValueError("a shared part holds a comment (nested shared parts?)")


def html_to_nodes(html: str) -> list:
    """The nodes of an HTML part, as :class:`_TreeBuilder` makes them."""
    builder = _TreeBuilder()
    builder.feed(html)
    builder.close()
    if builder.open:
        raise ValueError(f"a shared part leaves <{builder.open[-1][0]}> open")
    return builder.top


def strip_markers(html: str) -> str:
    """A page with every part left in place (the pages that do not use shared parts)."""
    return html.replace(SHARED_OPEN, "").replace(SHARED_CLOSE, "")


class SharedParts:
    """The shareable parts of one split's claim pages: count them all, then write each page."""

    def __init__(self):
        self.counts: Counter[str] = Counter()
        self.keys: dict[str, str] = {}
        self.nodes: dict[str, list] = {}  # key -> the part's nodes

    def count(self, html: str) -> None:
        self.counts.update(SHARED_PART.findall(html))

    def _key(self, part: str) -> str | None:
        key = self.keys.get(part)
        count, size = self.counts[part], len(part.encode("utf-8"))
        # shared only if that makes the export smaller: one copy, and a placeholder on each page
        if key is None and count >= 2 and size + count * PLACEHOLDER_BYTES < count * size:
            key = self.keys[part] = _base36(len(self.keys))
            self.nodes[key] = html_to_nodes(part)  # checked here, before any page is written
        return key

    def page(self, html: str) -> tuple[str, bool]:
        """The page with each shared part replaced by its placeholder; whether it uses any."""
        used = False

        def replace(match: re.Match) -> str:
            nonlocal used
            key = self._key(match.group(1))
            if key is None:
                return match.group(1)
            used = True
            return placeholder(key)

        html = SHARED_PART.sub(replace, html)
        while _ADJACENT.search(html):
            html = _ADJACENT.sub(r'<template data-shared="\1 ', html)
        return strip_markers(html), used

    def script(self) -> str:
        """The script every page of the split loads: ``window.claimtraceShared = {key: nodes}``."""
        return f"window.claimtraceShared = {json_for_script(self.nodes)};\n"


def _base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        number, rest = divmod(number, 36)
        out = digits[rest] + out
        if not number:
            return out
