"""Words that follow the numbers: every sentence of README.md and docs/*.md that compares two
figures of systems scored on claims (accuracy, F, HM, a count of dev claims) says whether the
difference is more than chance, citing the test, or that the two cannot be told apart, or that
they cannot be paired (a course figure on another corpus beside this build's).

A sentence compares two such figures when it holds a comparing word (:data:`COMPARING`) and
names a score (:data:`SCORES`). Timings and sizes (docs/benchmarks.md's "faster", "costs") are
measurements of a machine, not samples of claims, and name no score: they are not held to it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

#: Words that set one figure against another.
COMPARING = re.compile(
    r"\b(better|worse|help|helps|helped|hurt|hurts|beat|beats|higher|lower|more than|less than|fewer"
    r"|gain|gains|gained|cost|costs|outperforms?|outperformed|improves?|improved|raises?|drops?|falls"
    r"|below|above)\b(?!\)|:)",  # "(below)", "(below: ...)" point to a section
    re.IGNORECASE,
)
#: What names a score of a system on claims.
SCORES = re.compile(
    r"accura|\bF =|\bA =|\bHM\b|\bF1\b|macro-F1|recall|\d+/154\b|\bof 154\b|1,228 (training )?claims"
    r"|dev claims|scoreboard"
)
#: What says how the difference stands against chance (or that there is no test to make).
CHANCE = ("chance", "told apart", "p =", "p <", "not a paired", "interval")

#: Names, not words: code spans (`--help`) and quoted titles ("What each quirk cost").
_NAMES = re.compile(r"`[^`]*`|\"[^\"]*\"")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(`*\"])")


def sentences(text: str) -> list[str]:
    """A markdown text's prose sentences and table rows; code blocks and headings left out."""
    blocks, paragraph, in_code = [], [], False
    for line in [*text.splitlines(), ""]:
        if line.startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        if not line.strip() or line.startswith(("#", "|")):
            if paragraph:
                blocks.append(" ".join(paragraph))
                paragraph = []
            if line.startswith("|"):
                blocks.append(line)
            continue
        paragraph.append(line.strip())
    return [sentence for block in blocks for sentence in _SENTENCE_END.split(block)]


def compares_scores(sentence: str) -> bool:
    """Whether a sentence sets one score against another (:data:`_NAMES` are not its words)."""
    return bool(COMPARING.search(_NAMES.sub("", sentence)) and SCORES.search(sentence))


def says_chance(sentence: str) -> bool:
    return any(word in sentence for word in CHANCE)


def test_the_detector_finds_a_bare_comparison_and_passes_a_tested_one():
    bare = "BM25's rows have a higher HM than the notebook's."
    assert compares_scores(bare) and not says_chance(bare)
    tested = "Its accuracy is higher, 46/154 against 39/154, but the two cannot be told apart (p = 0.09)."
    assert compares_scores(tested) and says_chance(tested)
    assert not compares_scores("The build takes 26 s, faster than before.")  # a timing, not a score
    assert not compares_scores("A usage error's line names the command's `--help`; dev claims are 154.")
    assert not compares_scores('The scoreboard (below) is in Explore\'s "What each quirk cost" section.')
    assert compares_scores("Its checkpoint (88/154) is two claims below the notebook's (90/154).")
    assert sentences("One. Two 0.5 of it.\n\n```\nF = 1 higher\n```\n| a | b |") == [
        "One.",
        "Two 0.5 of it.",
        "| a | b |",
    ]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.name)
def test_every_sentence_comparing_scores_says_how_it_stands_against_chance(document):
    bare = [s for s in sentences(document.read_text(encoding="utf-8")) if compares_scores(s) and not says_chance(s)]
    assert not bare, f"{document.name}: comparing sentences with no word of chance:\n" + "\n".join(bare)
