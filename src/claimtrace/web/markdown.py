"""The site's own markdown documents (``web/content/*.md``): the model cards, the data statement,
the statements and design decisions (each page's lead its first paragraph) and the notebook's
steps, rendered safely with their figures filled in.

A document never types a figure: it holds a placeholder, ``{{ name }}``, which
:func:`fill` replaces with the build's (or :mod:`claimtrace.course`'s) value, given by the page's
view; a placeholder without a value is an error naming the document. Markdown is rendered by
markdown-it-py (CommonMark and tables) with raw HTML off, so a document's ``<`` is text, never an
element; its headings move down by ``shift`` levels so that the page keeps one ``<h1>``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt
from markupsafe import Markup, escape

CONTENT = Path(__file__).resolve().parent / "content"

#: ``{{ name }}``: a figure's placeholder (names: letters, digits, ``_``, ``.`` and ``-``).
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z0-9_.\-]+)\s*\}\}")

_PARSER = MarkdownIt("commonmark", {"html": False, "typographer": False}).enable("table")


class MissingFigure(KeyError):
    """A document's placeholder has no value."""

    def __str__(self) -> str:
        return self.args[0]


@dataclass(frozen=True)
class Document:
    """A rendered document: its title (its first ``#`` heading), its file's stem and its HTML;
    ``lead`` its opening paragraph (before its first ``##``) when it was asked for apart."""

    name: str
    title: str
    html: Markup
    lead: Markup = Markup("")


def read(relative: str) -> str:
    """A document's markdown source (``relative`` to the content folder)."""
    return (CONTENT / relative).read_text(encoding="utf-8")


def fill(text: str, figures: Mapping[str, str], where: str) -> str:
    """``text`` with every placeholder replaced by its figure; MissingFigure names ``where`` and
    the placeholder when a figure is missing."""

    def value(match: re.Match) -> str:
        name = match.group(1)
        if name not in figures:
            raise MissingFigure(f"{where}: no figure for the placeholder {{{{ {name} }}}}")
        return str(figures[name])

    return PLACEHOLDER.sub(value, text)


def _shifted(html: str, shift: int) -> str:
    """Every heading ``shift`` levels down (``<h1>`` -> ``<h2>`` for 1), at most ``<h6>``."""
    if not shift:
        return html
    return re.sub(r"<(/?)h([1-6])>", lambda m: f"<{m.group(1)}h{min(6, int(m.group(2)) + shift)}>", html)


def _scrolling(html: str, where: str) -> str:
    """Each table in a box that scrolls on its own, reachable from the keyboard, as the site's
    other tables are (a table wider than a phone's screen would widen the page); each box is named
    by its document and its place there, so that no two regions of a page share a name."""
    parts = html.split("<table>")
    out = [parts[0]]
    for number, part in enumerate(parts[1:], start=1):
        label = escape(f"{Path(where).stem.replace('-', ' ')}: table {number}")
        out.append(f'<div class="scroll" tabindex="0" role="region" aria-label="{label}"><table>{part}')
    return "".join(out).replace("</table>", "</table></div>")


def render(text: str, figures: Mapping[str, str], where: str, shift: int = 1) -> Markup:
    """A document's HTML, its placeholders filled (escaped as text, like the rest of it)."""
    return Markup(_scrolling(_shifted(_PARSER.render(fill(text, figures, where)), shift), where))


def title_and_body(text: str) -> tuple[str, str]:
    """A document's first ``# `` heading and the rest (the page prints the title itself)."""
    first, _, rest = text.lstrip().partition("\n")
    if not first.startswith("# "):
        return "", text
    return first[2:].strip(), rest


def lead_and_rest(body: str) -> tuple[str, str]:
    """A body's opening paragraph (what comes before its first heading, up to a blank line) and
    the rest; an empty lead when the body opens with a heading."""
    body = body.lstrip("\n")
    if not body.strip() or body.startswith("#"):
        return "", body
    lead, _, rest = body.partition("\n\n")
    return " ".join(lead.split()), rest


def document(relative: str, figures: Mapping[str, str], shift: int = 2, lead: bool = False) -> Document:
    """A content file rendered: its title filled, and its body's headings ``shift`` levels down;
    with ``lead``, its opening paragraph apart (inline markdown: a page prints it as its lead)."""
    title, body = title_and_body(read(relative))
    opening = ""
    if lead:
        opening, body = lead_and_rest(body)
    return Document(
        Path(relative).stem,
        fill(title, figures, relative),
        render(body, figures, relative, shift),
        Markup(_PARSER.renderInline(fill(opening, figures, relative))),
    )


def sections(relative: str, figures: Mapping[str, str], shift: int = 2) -> list[tuple[str, Markup]]:
    """A file of ``## `` sections (the notebook's steps): each section's heading text and its
    rendered body, in order; what precedes the first heading is dropped (the file's title)."""
    parts = re.split(r"^## +(.+)$", read(relative), flags=re.MULTILINE)
    return [
        (fill(heading.strip(), figures, relative), render(body, figures, relative, shift))
        for heading, body in zip(parts[1::2], parts[2::2], strict=True)
    ]
