"""BM25's tokens (:func:`tokenize`, the same for passages and claims), and a chunk of passages
as count arrays (:func:`tokenize_chunk`, a chunk file's content; :func:`merge_chunks`).

Tokens: lowercase; words of two or more Unicode word characters (scikit-learn's and bm25s's
default token pattern); the 2024 NLTK English stopword list that
:mod:`claimtrace.pipeline.preprocess` loads, dropped before stemming; nltk's Porter stemmer, as
preprocess stems (one implementation of each, and one stem cache).

The vocabulary of a chunk is numbered in order of first appearance, and merging renumbers it by
first appearance over the whole sequence, so a chunked, resumed or parallel build gives the same
arrays as a one-shot one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import numpy as np

from claimtrace.pipeline.preprocess import stem, stopwords

__all__ = ["TOKENIZER", "WordTable", "tokenize", "tokenize_chunk", "merge_chunks"]

#: What :func:`tokenize` does, stored with an index so that a later change is not silently mixed
#: with an old index (:meth:`claimtrace.pipeline.bm25.BM25Index.load` refuses it).
TOKENIZER = "lowercase; \\w\\w+ words; nltk 2024 English stopwords; nltk Porter stems"

_WORD = re.compile(r"\w\w+")


class WordTable(dict):
    """word -> its stem, or "" for a stopword; filled on first sight. One dict lookup per word
    instead of a stopword test and a stem-cache call (tokenising is most of a build's time).
    Kept by what tokenises many texts, for as long as it does (a BM25 build: at most its
    corpus's words); :func:`tokenize` alone makes one per text."""

    def __missing__(self, word: str) -> str:
        value = "" if word in stopwords() else stem(word)
        self[word] = value
        return value


def tokenize(text: str, words: WordTable | None = None) -> list[str]:
    """The BM25 tokens of a passage or a claim: lowercase ``\\w\\w+`` words, stopwords dropped,
    Porter stems (see the module docstring).

    Parameters
    ----------
    text : str
    words : WordTable, optional
        The word table to read and fill (None: a new one, kept by nothing).

    Returns
    -------
    list of str
        The stems, in text order, repeats kept.
    """
    table = WordTable() if words is None else words
    return [token for token in map(table.__getitem__, _WORD.findall(text.lower())) if token]


def _encode(token_lists: Iterable[list[str]]) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Each passage's distinct terms and their counts, terms numbered by first appearance."""
    vocab: dict[str, int] = {}
    ptr = [0]
    terms: list[int] = []
    counts: list[int] = []
    for tokens in token_lists:
        seen: dict[int, int] = {}
        for token in tokens:
            term = vocab.setdefault(token, len(vocab))
            seen[term] = seen.get(term, 0) + 1
        terms.extend(seen)  # dicts keep insertion order: first appearance in the passage
        counts.extend(seen.values())
        ptr.append(len(terms))
    return list(vocab), np.asarray(ptr, np.int64), np.asarray(terms, np.int32), np.asarray(counts, np.int32)


def tokenize_chunk(passages: Sequence[tuple[str, str]], words: WordTable | None = None) -> dict[str, np.ndarray]:
    """Tokenise one chunk of ``(id, text)`` pairs into count arrays (a chunk file's content).

    Parameters
    ----------
    passages : sequence of (str, str)
        ``n`` passages, in corpus order.
    words : WordTable, optional
        The word table of the build (None: one for this chunk).

    Returns
    -------
    dict of str to ndarray
        ``ids`` (n,) str; ``vocab`` (v,) str, the chunk's terms in order of first appearance;
        ``ptr`` (n + 1,) int64, passage ``i``'s distinct terms are ``terms[ptr[i]:ptr[i + 1]]``
        (in order of first appearance); ``terms`` (m,) int32, indices into ``vocab``;
        ``counts`` (m,) int32, each term's count in its passage.
    """
    words = WordTable() if words is None else words
    vocab, ptr, terms, counts = _encode(tokenize(text, words) for _, text in passages)
    return {
        "ids": np.array([pid for pid, _ in passages], dtype=str),
        "vocab": np.array(vocab, dtype=str),
        "ptr": ptr,
        "terms": terms,
        "counts": counts,
    }


def merge_chunks(chunks: Iterable[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Chunks in corpus order -> one chunk over all their passages, the terms renumbered by first
    appearance over the whole sequence (so the result does not depend on where chunks end).

    Parameters
    ----------
    chunks : iterable of dict
        Outputs of :func:`tokenize_chunk` (or of this function), in corpus order.

    Returns
    -------
    dict of str to ndarray
        The same keys as :func:`tokenize_chunk`.
    """
    vocab: dict[str, int] = {}
    ids, ptrs, terms, counts = [], [np.zeros(1, np.int64)], [], []
    offset = 0
    for chunk in chunks:
        local = chunk["vocab"].tolist()
        mapping = np.fromiter((vocab.setdefault(t, len(vocab)) for t in local), np.int32, len(local))
        ids.append(chunk["ids"])
        ptrs.append(chunk["ptr"][1:] + offset)
        terms.append(mapping[chunk["terms"]])
        counts.append(chunk["counts"])
        offset += int(chunk["ptr"][-1])
    return {
        "ids": np.concatenate(ids) if ids else np.array([], dtype=str),
        "vocab": np.array(list(vocab), dtype=str),
        "ptr": np.concatenate(ptrs),
        "terms": np.concatenate(terms) if terms else np.zeros(0, np.int32),
        "counts": np.concatenate(counts) if counts else np.zeros(0, np.int32),
    }
