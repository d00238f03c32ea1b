"""The classifier's input: text rows, the vocabulary, and 128-id encodings (notebook.md section 5).

A row's text is the claim's stems joined, a space, then each evidence passage's stems joined,
in order. In training (and dev evaluation with gold evidence) the passages are the gold ones;
at prediction time, the retrieved ones. The vocabulary is ``<unk> [CLS] [SEP] [PAD]`` followed
by every token of the training rows in order of first appearance: 5,886 entries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from .. import constants as C
from ..data import Claim
from ..preprocess import preprocess


def row_text(claim_text: str, passage_texts: Iterable[str]) -> str:
    """Claim stems joined, then each passage's stems joined, separated by spaces."""
    parts = [preprocess(claim_text).text()]
    parts.extend(preprocess(text).text() for text in passage_texts)
    return " ".join(parts)


@dataclass(frozen=True)
class Row:
    """One classifier example: the claim id, its input text and its label (None for test)."""

    claim_id: str
    text: str
    label: str | None


def rows(claims: Mapping[str, Claim], passages: Mapping[str, str], evidence_ids: Mapping[str, Sequence[str]] | None = None) -> list[Row]:
    """Rows in file order. ``evidence_ids`` overrides each claim's evidence list (retrieved
    evidence); by default the claim's own (gold) ids are used. Ids missing from ``passages``
    contribute nothing, as a left merge with no match would."""
    out = []
    for claim_id, claim in claims.items():
        ids = claim.evidences if evidence_ids is None else evidence_ids[claim_id]
        texts = [passages[i] for i in ids if i in passages]
        out.append(Row(claim_id, row_text(claim.text, texts), claim.label))
    return out


class Vocabulary:
    """Token <-> id, specials first, then tokens in order of first appearance.

    >>> vocab = Vocabulary.fit(["a b", "b c"])
    >>> vocab.tokens
    ['<unk>', '[CLS]', '[SEP]', '[PAD]', 'a', 'b', 'c']
    """

    def __init__(self, tokens: Sequence[str]):
        self.tokens = list(tokens)
        self.index = {token: i for i, token in enumerate(self.tokens)}

    @classmethod
    def fit(cls, texts: Iterable[str]) -> "Vocabulary":
        seen = dict.fromkeys(C.SPECIAL_TOKENS)
        for text in texts:
            seen.update(dict.fromkeys(text.split()))
        return cls(list(seen))

    def __len__(self) -> int:
        return len(self.tokens)

    def encode(self, text: str, max_len: int = C.MAX_LEN) -> list[int]:
        """``[CLS]`` + tokens + ``[SEP]`` as ids (unknown -> ``<unk>``); longer than
        ``max_len`` -> first ``max_len - 1`` ids + ``[SEP]``; then ``[PAD]`` up to ``max_len``."""
        unk = self.index[C.UNK]
        ids = [self.index[C.CLS]] + [self.index.get(t, unk) for t in text.split()] + [self.index[C.SEP]]
        if len(ids) > max_len:
            ids = ids[: max_len - 1] + [self.index[C.SEP]]
        return ids + [self.index[C.PAD]] * (max_len - len(ids))

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.tokens[i] for i in ids]


def training_vocabulary(train_claims: Mapping[str, Claim], gold: Mapping[str, str]) -> Vocabulary:
    """The notebook's vocabulary: built from the training rows with gold evidence."""
    return Vocabulary.fit(row.text for row in rows(train_claims, gold))
