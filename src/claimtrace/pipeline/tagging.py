"""Stage 2, tagging: every passage keeps its ten highest-weighted TF-IDF features, single words
only (notebook.md sections 2 and 3).

* :func:`fit_corpus` assembles the 20,000-feature vectorizer's fit corpus as the notebook did:
  baseline rows, dev gold rows, train gold rows (each claim exploded over its evidence ids and
  left-merged to the de-duplicated passages), then every de-duplicated passage; each document
  is ``claim_text + ' ' + evidence_text`` passed through the keep-stopwords preprocessing.
* :func:`tagging_vectorizer` is fit on it; its tokenizer preprocesses *again* (quirk "stems of
  stems": ``increased -> increas -> increa``), token by token (:class:`Restemmer`); the build
  keeps what each token of its passages and tags becomes (:class:`RestemTable`), so that a
  reader preprocesses only the text it is given.
* :func:`tag_rows` takes each passage's top ten features with numpy 1.24's introsort (quirk
  "zero-weight padding": short passages are padded with zero-weight features, often the last
  vocabulary entry), keeps the alphabetic names, as a set.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from claimtrace.constants import PASSAGE_SHUFFLE_SEED, TAGGING_VECTORIZER, TAGS_PER_PASSAGE
from claimtrace.data.files import Claim
from claimtrace.lib.build_files import PackedStrings, load_npz, write_npz
from claimtrace.lib.npsort import top_k_rows  # numpy 1.24's introsort, pruned to the top k
from claimtrace.pipeline.preprocess import Preprocessor
from claimtrace.pipeline.tfidf import NotebookTfidf

#: At most how many tokens a :class:`Restemmer` keeps stemmed again before it forgets them: more
#: than a build's corpus uses.
RESTEM_CACHE_WORDS = 1 << 20

#: contractions.fix's only dictionary keys that contain a space, and so the only ones that can
#: match across tokens: "<verb> cause" (which protects "cause" from becoming "because") and
#: "r " (-> "are "), which matches a token ending in "r" when the next character is not an
#: ASCII word character (its bounds check knows only ASCII): "sɪˈljʊər ən" -> "sɪˈljʊəare ən".
#: A text where either could happen is preprocessed whole (a superset of the cases, so exact).
_NEIGHBOURS_MATTER = re.compile(r"cause|r (?:[^0-9A-Za-z_]|$)")


class RestemTable:
    """Tokens and what each becomes when preprocessed again, as the tagging stage writes them
    (``tagging/restemmed.npz``, :meth:`save`): ``tokens`` sorted (Python's string order), and
    ``terms[i]`` token ``i``'s final stems joined with spaces (empty when none survives). Both
    are packed strings, mapped from the file: a look-up is a binary search, nothing is loaded."""

    def __init__(self, tokens: Sequence[str], terms: Sequence[str]):
        self.tokens = tokens
        self.terms = terms

    @classmethod
    def of_tokens(cls, tokens: Iterable[str], restem_token: Callable[[str], list[str]]) -> RestemTable:
        """The table of the distinct ``tokens``, each made by ``restem_token``."""
        ordered = sorted(set(tokens))
        return cls(ordered, [" ".join(restem_token(token)) for token in ordered])

    def __len__(self) -> int:
        return len(self.tokens)

    def get(self, token: str) -> list[str] | None:
        """What ``token`` becomes, or None for a token the table does not hold."""
        at = bisect.bisect_left(self.tokens, token)
        if at < len(self.tokens) and self.tokens[at] == token:
            return self.terms[at].split()
        return None

    def save(self, path) -> None:
        """Write the table atomically (:func:`claimtrace.lib.build_files.write_npz`): ``tokens``
        and ``terms`` packed (uint8 buffers) with their (n + 1,) int64 offsets."""
        tokens, token_offsets = PackedStrings.pack(self.tokens)
        terms, term_offsets = PackedStrings.pack(self.terms)
        write_npz(path, tokens=tokens, token_offsets=token_offsets, terms=terms, term_offsets=term_offsets)

    @classmethod
    def load(cls, path) -> RestemTable:
        """A table written by :meth:`save`, mapped."""
        with load_npz(path) as stored:
            # memoryviews, not the arrays: PackedStrings would copy an ndarray's bytes
            tokens = PackedStrings(memoryview(stored["tokens"]), stored["token_offsets"])
            terms = PackedStrings(memoryview(stored["terms"]), stored["term_offsets"])
        if len(tokens) != len(terms):
            raise ValueError(f"{len(tokens)} tokens but {len(terms)} terms")
        return cls(tokens, terms)


class Restemmer:
    """The quirk "stems of stems": text that is preprocessing output already (stems, tags),
    preprocessed again, as the notebook's vectorizers did, token by token.

    preprocessor: the preprocessing run again. table: what the tokens the build knows become
    (:class:`RestemTable`, the tagging stage's); a token it lacks is preprocessed alone, once.
    Every token is kept once found (the tokens of a build's tags recur everywhere), up to
    ``cache_words`` tokens, then forgotten.
    """

    def __init__(
        self, preprocessor: Preprocessor, table: RestemTable | None = None, cache_words: int = RESTEM_CACHE_WORDS
    ):
        self.preprocessor = preprocessor
        self.table = table
        self.cache_words = cache_words
        self._terms: dict[str, list[str]] = {}

    def terms(self, token: str) -> list[str]:
        """``final_stems`` of one token: the cache's, the table's, else preprocessed."""
        found = self._terms.get(token)
        if found is not None:
            return found
        found = self.table.get(token) if self.table is not None else None
        if found is None:
            found = self.preprocessor.final_stems(token)
        if len(self._terms) >= self.cache_words:
            self._terms.clear()
        self._terms[token] = found
        return found

    def restem(self, text: str) -> list[str]:
        """``final_stems`` for text that is already a preprocessing output (lowercase alphabetic
        tokens separated by single spaces), one token at a time.

        The second pass of the quirk "stems of stems" runs the whole preprocessing again on
        every document; on such text it acts on each token alone, except where contractions'
        multi-word keys could match (then the whole text is preprocessed).
        tests/pipeline/test_tagging.py proves the equality on every document of the demo build
        and on generated token sequences.
        """
        if _NEIGHBOURS_MATTER.search(text):
            return self.preprocessor.final_stems(text)
        known = self._terms.get
        out: list[str] = []
        for token in text.split():
            found = known(token)
            out.extend(found if found is not None else self.terms(token))
        return out

    def restem_tags(self, tags: str) -> tuple[list[str], dict[str, list[str]]]:
        """The quirk "stems of stems" for one claim's tag string, done once: the retrieval
        vectorizer preprocesses the tags, which are stems already, again. Returns the tokens it
        reads, ``final_stems(tags.lower())``, and what each distinct tag became.

        When that one pass leaves the string's tokens as they were (no contraction expanded, no
        token split: a tag string is preprocessing output, so almost always), each tag's terms
        are read off it: its stem if it was kept, else nothing; the filter and the stemmer act on
        each token alone. Otherwise each tag is preprocessed alone (:meth:`terms`).
        """
        lowered = tags.lower()
        whole = self.preprocessor.preprocess(lowered)
        pairs = dict(zip(tags.split(), lowered.split()))
        if whole.tokens == lowered.split():
            kept = set(whole.kept)
            return whole.stems, {
                tag: [self.preprocessor.stem(low)] if low in kept else [] for tag, low in pairs.items()
            }
        return whole.stems, {tag: self.terms(low) for tag, low in pairs.items()}

    def tokenizer(self, name: str) -> Callable[[str], list[str]]:
        """A vectorizer's tokenizer by the name a saved model records: ``"restem"``
        (:meth:`restem`) or ``"final_stems"`` (the whole preprocessing)."""
        if name == "restem":
            return self.restem
        if name == "final_stems":
            return self.preprocessor.final_stems
        raise ValueError(f"unknown tokenizer {name!r}: expected restem or final_stems")


def deduplicated(evidence: Mapping[str, str]) -> dict[str, str]:
    """evidence.json with duplicate texts dropped, keeping the first (the notebook's
    ``drop_duplicates``)."""
    seen: set[str] = set()
    out = {}
    for evidence_id, text in evidence.items():
        if text not in seen:
            seen.add(text)
            out[evidence_id] = text
    return out


def _older_text(preprocessor: Preprocessor, text: str) -> str:
    return preprocessor.preprocess(text, keep_stopwords=True).text()


def _claim_rows_raw(claim_files: Sequence[Mapping[str, Claim]], passages: Mapping[str, str]) -> Iterable[str]:
    for claims in claim_files:
        for claim in claims.values():
            for evidence_id in claim.evidences or [None]:
                yield claim.text + " " + passages.get(evidence_id, "")


def fit_corpus_raw(claim_files: Sequence[Mapping[str, Claim]], evidence: Mapping[str, str]) -> Iterable[str]:
    """The fit corpus before preprocessing: ``claim_text + ' ' + evidence_text`` per row.

    claim_files: the baseline, dev and train claims, in that order. A claim with no evidence
    ids gives one row with an empty evidence side; an id missing from the de-duplicated passages
    (or whose text duplicated an earlier passage's) gives an empty evidence side too. Passage
    rows follow, with an empty claim side.
    """
    passages = deduplicated(evidence)
    yield from _claim_rows_raw(claim_files, passages)
    for text in passages.values():
        yield " " + text


def fit_corpus(
    claim_files: Sequence[Mapping[str, Claim]], evidence: Mapping[str, str], preprocessor: Preprocessor
) -> Iterable[str]:
    """The fit corpus as the vectorizer saw it: each row through the keep-stopwords
    preprocessing, stems joined with spaces."""
    return (_older_text(preprocessor, doc) for doc in fit_corpus_raw(claim_files, evidence))


def fit_corpus_claim_rows(
    claim_files: Sequence[Mapping[str, Claim]], evidence: Mapping[str, str], preprocessor: Preprocessor
) -> Iterable[str]:
    """Just the claim rows of :func:`fit_corpus`. The passage rows equal each distinct passage's
    keep-stopwords stems (the leading space changes nothing: tests prove it)."""
    return (_older_text(preprocessor, doc) for doc in _claim_rows_raw(claim_files, deduplicated(evidence)))


def tagging_vectorizer(tokenizer: Callable[[str], list[str]], **overrides) -> NotebookTfidf:
    """The notebook's 20,000-feature uni- to tri-gram vectorizer, unfitted. ``tokenizer``: the
    notebook's was the final preprocessing (:meth:`Preprocessor.final_stems`); on documents that
    are stems already, :meth:`Restemmer.restem` gives the same tokens."""
    return NotebookTfidf(**{"tokenizer": tokenizer, **TAGGING_VECTORIZER, **overrides})


def passage_documents(texts: Iterable[str], preprocessor: Preprocessor) -> Iterable[str]:
    """What the notebook passed to ``transform`` for each passage: its final stems joined."""
    return (preprocessor.preprocess(text).text() for text in texts)


@dataclass(frozen=True)
class PassageTags:
    """Tags of one passage.

    tags: the sorted set of alphabetic names among its top ten features (the notebook's tags).
    nopad: the same without zero-weight features (the variant without the padding quirk).
    top: (10,) the top ten feature indices, largest weight first; weights: their weights.
    """

    tags: list[str]
    nopad: list[str]
    top: list[int]
    weights: list[float]


def tag_rows(rows: sp.csr_matrix, feature_names: np.ndarray, k: int = TAGS_PER_PASSAGE) -> list[PassageTags]:
    """Tags of each row of a (n_passages, n_features) TF-IDF matrix: numpy 1.24's
    ``np.argsort(dense_row)[-k:][::-1]`` computed without the dense row, alphabetic names only.
    """
    rows = rows.tocsr()
    rows.sort_indices()
    top = top_k_rows(rows, k)
    out = []
    for r in range(rows.shape[0]):
        lo, hi = rows.indptr[r], rows.indptr[r + 1]
        weight_of = dict(zip(rows.indices[lo:hi].tolist(), rows.data[lo:hi].tolist()))
        indices = top[r].tolist()
        weights = [weight_of.get(i, 0.0) for i in indices]
        alphabetic = [(feature_names[i], w) for i, w in zip(indices, weights) if feature_names[i].isalpha()]
        out.append(
            PassageTags(
                sorted({name for name, _ in alphabetic}),
                sorted({name for name, w in alphabetic if w > 0.0}),
                indices,
                weights,
            )
        )
    return out


def canonical_order(n_passages: int, seed: int = PASSAGE_SHUFFLE_SEED) -> np.ndarray:
    """The notebook's passage order: ``DataFrame.sample(frac=1, random_state=42)`` of
    evidence.json order, which pandas draws as ``RandomState(42).permutation(n)``.

    Returns (n_passages,) int64 positions into evidence.json order.
    """
    return np.random.RandomState(seed).permutation(n_passages).astype(np.int64)
