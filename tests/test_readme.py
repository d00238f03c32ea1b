"""README.md is the front door: short, a picture near the top, the address to open and the
compare page before a visitor has to scroll (issue: a way in)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
LINES = README.splitlines()


def test_the_readme_is_at_most_a_thousand_words():
    assert len(README.split()) <= 1000


def test_a_picture_in_the_first_twenty_lines_that_exists():
    pictures = [m.group(1) for line in LINES[:20] for m in re.finditer(r"!\[[^\]]+\]\(([^)]+)\)", line)]
    assert pictures, "no image in README.md's first 20 lines"
    for picture in pictures:
        assert (ROOT / picture).is_file(), picture


def test_the_address_and_the_compare_page_in_the_first_forty_lines():
    top = "\n".join(LINES[:40])
    assert "http://127.0.0.1:8000/" in top
    assert "/compare" in top and "make demo" in top and "make test" in top


def test_the_readme_names_the_two_commands_the_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in ci and "make test" in README
