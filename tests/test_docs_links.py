"""The docs as references: every relative link in README.md and docs/*.md resolves to a file of
the repository (a heading's anchor is not checked, only its file), and every doc in docs/ opens
with one sentence saying what it is for."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

#: A markdown link's target, ``[text](target)``, outside code spans.
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)


def relative_links(text: str) -> list[str]:
    """The link targets of a markdown text that point into the repository (no scheme, no
    ``mailto:``, no bare anchor), each without its ``#anchor``."""
    targets = _LINK.findall(_CODE.sub("", text))
    return [t.split("#")[0] for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:|#", t)]


def test_relative_links_reader():
    text = "[a](docs/a.md) [b](https://x.org) [c](#here) `[d](no.md)` [e](b.md#part) [f](mailto:x@y)"
    assert relative_links(text) == ["docs/a.md", "b.md"]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.name)
def test_every_relative_link_resolves(document):
    broken = [
        link for link in relative_links(document.read_text(encoding="utf-8")) if not (document.parent / link).exists()
    ]
    assert not broken, f"{document.name}: links to nothing: {broken}"


@pytest.mark.parametrize("document", DOCUMENTS[1:], ids=lambda path: path.name)
def test_every_doc_opens_with_what_it_is_for_in_one_sentence(document):
    """Under the title, a paragraph of one sentence."""
    lines = document.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("# ") and not lines[1].strip(), document.name
    opening = " ".join(lines[2 : lines.index("", 2)])
    assert opening.endswith(".") and not re.search(r"[.!?]\s+[A-Z]", opening), opening
