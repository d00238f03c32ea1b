"""The classifier's input: evidence texts, text rows, the vocabulary, and 128-id encodings
(notebook.md section 5).

A row's text is the claim's stems joined, a space, then each evidence passage's stems joined,
in order. In training (and dev evaluation with gold evidence) the passages are the gold ones;
at prediction time, the retrieved ones. The vocabulary is ``<unk> [CLS] [SEP] [PAD]`` followed
by every token of the training rows in order of first appearance: 5,886 entries.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from claimtrace import constants
from claimtrace.data.files import Claim
from claimtrace.lib.build_files import write_atomic, write_npz
from claimtrace.pipeline.preprocess import Preprocessor

#: Evidence as the classifier sees it: claim id -> passage texts, in order.
EvidenceTexts = Mapping[str, Sequence[str]]
#: Where passage texts come from: a mapping id -> text, or a function id -> text (None if unknown).
PassageLookup = Mapping[str, str] | Callable[[str], str | None]


def evidence_texts(ids_by_claim: Mapping[str, Sequence[str]], passages: PassageLookup) -> dict[str, list[str]]:
    """Evidence ids -> texts, claim by claim, in order: the one resolver of evidence ids.

    Ids the lookup does not know contribute nothing, as the notebook's left merge with no match.
    """
    lookup = passages.get if isinstance(passages, Mapping) else passages
    out = {}
    for claim_id, ids in ids_by_claim.items():
        texts = (lookup(i) for i in ids)
        out[claim_id] = [t for t in texts if t is not None]
    return out


def gold_evidence(claims: Mapping[str, Claim], passages: PassageLookup) -> dict[str, list[str]]:
    """Each claim's gold passages as texts, in its file's order."""
    return evidence_texts({cid: claim.evidences for cid, claim in claims.items()}, passages)


def row_text(claim_text: str, passage_texts: Iterable[str], preprocessor: Preprocessor) -> str:
    """Claim stems joined, then each passage's stems joined, separated by spaces."""
    stems_of = preprocessor.preprocess
    return join_row(stems_of(claim_text).text(), (stems_of(text).text() for text in passage_texts))


def join_row(claim_stems: str, passage_stems: Iterable[str]) -> str:
    """:func:`row_text` of texts already preprocessed (each one's stems joined)."""
    return " ".join([claim_stems, *passage_stems])


@dataclass(frozen=True)
class Row:
    """One classifier example: the claim id, its input text and its label (None for test)."""

    claim_id: str
    text: str
    label: str | None


def make_rows(claims: Mapping[str, Claim], evidence: EvidenceTexts, preprocessor: Preprocessor) -> list[Row]:
    """Classifier rows in file order, from any evidence source (gold or retrieved), each text
    preprocessed by ``preprocessor``."""
    return [
        Row(cid, row_text(claim.text, evidence.get(cid, ()), preprocessor), claim.label)
        for cid, claim in claims.items()
    ]


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
    def fit(cls, texts: Iterable[str]) -> Vocabulary:
        seen = dict.fromkeys(constants.SPECIAL_TOKENS)
        for text in texts:
            seen.update(dict.fromkeys(text.split()))
        return cls(list(seen))

    def __len__(self) -> int:
        return len(self.tokens)

    def encode(self, text: str, max_len: int = constants.MAX_LEN) -> list[int]:
        """``[CLS]`` + tokens + ``[SEP]`` as ids (unknown -> ``<unk>``); longer than
        ``max_len`` -> first ``max_len - 1`` ids + ``[SEP]``; then ``[PAD]`` up to ``max_len``."""
        unk = self.index[constants.UNK]
        ids = [self.index[constants.CLS]] + [self.index.get(t, unk) for t in text.split()] + [self.index[constants.SEP]]
        if len(ids) > max_len:
            ids = ids[: max_len - 1] + [self.index[constants.SEP]]
        return ids + [self.index[constants.PAD]] * (max_len - len(ids))

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.tokens[i] for i in ids]


def training_vocabulary(
    train_claims: Mapping[str, Claim], gold: PassageLookup, preprocessor: Preprocessor
) -> Vocabulary:
    """The notebook's vocabulary: built from the training rows with gold evidence."""
    return Vocabulary.fit(row.text for row in make_rows(train_claims, gold_evidence(train_claims, gold), preprocessor))


def save_vocab(vocab: Vocabulary, path: Path) -> None:
    write_atomic(path, json.dumps(vocab.tokens, ensure_ascii=False, indent=0) + "\n")


def load_vocab(path: Path) -> Vocabulary:
    with open(path, encoding="utf-8") as handle:
        return Vocabulary(json.load(handle))


# --- Encoded inputs -------------------------------------------------------------------------------


@dataclass
class Encoded:
    """A split encoded for the model: ``input_ids`` (n, 128) and ``labels`` (n,), both int64
    (-1 for an unlabelled claim); claim ids and row texts in file order."""

    claim_ids: list[str]
    texts: list[str]
    input_ids: np.ndarray
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.claim_ids)

    def save(self, path: Path) -> None:
        """The npz the build writes, so that readers never preprocess a split again."""
        write_npz(
            path,
            input_ids=self.input_ids.astype(np.int32),
            labels=self.labels.astype(np.int8),
            claim_ids=np.array(json.dumps(self.claim_ids, ensure_ascii=False)),
            texts=np.array(json.dumps(self.texts, ensure_ascii=False)),
        )

    @classmethod
    def load(cls, path: Path) -> Encoded:
        with np.load(path) as stored:
            return cls(
                json.loads(str(stored["claim_ids"])),
                json.loads(str(stored["texts"])),
                stored["input_ids"].astype(np.int64),
                stored["labels"].astype(np.int64),
            )


def encode(rows: Sequence[Row], vocab: Vocabulary) -> Encoded:
    """Rows -> 128 ids each (:meth:`Vocabulary.encode`) and label ids."""
    ids = np.array([vocab.encode(row.text) for row in rows], dtype=np.int64).reshape(len(rows), constants.MAX_LEN)
    labels = np.array([constants.LABEL_IDS[row.label] if row.label is not None else -1 for row in rows], dtype=np.int64)
    return Encoded([row.claim_id for row in rows], [row.text for row in rows], ids, labels)
