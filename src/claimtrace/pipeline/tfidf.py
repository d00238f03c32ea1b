"""The notebook's TfidfVectorizer, re-implemented to give scikit-learn 1.2.2's numbers exactly.

Both vectorizers of the notebook (tagging: 20,000 uni- to tri-grams; retrieval: 1,000 words)
were ``TfidfVectorizer(tokenizer=f, max_df, min_df, max_features, ngram_range, use_idf=True,
norm='l2')`` with every other argument at its default. What scikit-learn 1.2.2 does with that,
and what this module reproduces:

* analyze a document: ``doc.lower()`` (the default ``lowercase=True`` runs *before* the
  tokenizer), then ``f``, then word n-grams: all unigrams, then all bigrams, then trigrams;
* count, per term, its document frequency (df) and its total count over the corpus (tf);
* keep terms with ``min_df <= df <= max_df * n_docs`` (a float ``max_df`` is a share);
* when more than ``max_features`` remain, sort the remaining terms by name and keep the
  ``max_features`` first of ``argsort(-tf)``: numpy's default, unstable quicksort decides the
  ties at the cut (quirk "max_features ties"), so the argsort here is claimtrace.lib.npsort's
  re-implementation of numpy 1.24's introsort;
* the vocabulary is the kept terms by name; ``idf = ln((n_docs + 1) / (df + 1)) + 1``;
* transform: counts x idf, then each row divided by its l2 norm.

Terms are handled as integer keys, not strings, so that a 1.2M-document corpus fits in memory:
a unigram is its token id + 1; a bigram ``(a+1)*B + (b+1)``; a trigram
``((a+1)*B + (b+1))*B + (c+1)``, with ``B`` one more than the number of distinct tokens, so keys
of different lengths never collide. Strings are made only for terms that survive the df filter.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numba
import numpy as np
import scipy.sparse as sp

from claimtrace.lib.build_files import write_npz
from claimtrace.lib.npsort import argsort as introsort

Tokenizer = Callable[[str], Sequence[str]]


class CannotFit(ValueError):
    """The settings cannot fit this corpus: what scikit-learn 1.2.2's ``fit`` raises, with its
    message, in its order: an empty vocabulary (no document has a token), then ``max_df`` below
    ``min_df`` once both are counts of documents, then no term left between them."""


def analyze(doc: str, tokenizer: Tokenizer) -> list[str]:
    """Tokens of one document as scikit-learn's analyzer produces them (before n-grams)."""
    return list(tokenizer(doc.lower()))


class _TokenIds:
    """Grows a token -> id mapping; ids are assigned in order of first appearance."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.tokens: list[str] = []

    def encode(self, tokens: Sequence[str], grow: bool = True) -> np.ndarray:
        """Token ids of one document, int64. Unknown tokens get -1 when ``grow`` is off."""
        ids = self.ids
        if grow:
            out = []
            for token in tokens:
                index = ids.get(token)
                if index is None:
                    index = ids[token] = len(self.tokens)
                    self.tokens.append(token)
                out.append(index)
            return np.asarray(out, dtype=np.int64)
        return np.asarray([ids.get(token, -1) for token in tokens], dtype=np.int64)


def ngram_keys(token_ids: np.ndarray, doc_of_token: np.ndarray, base: int, max_n: int) -> tuple[np.ndarray, np.ndarray]:
    """All n-gram keys (1 <= n <= max_n) of a batch of documents.

    token_ids: (n_tokens,) int64, the documents' tokens laid end to end; -1 marks an unknown
    token (every n-gram containing it is dropped). doc_of_token: (n_tokens,) the document of
    each token. Returns (keys, docs), both (n_grams,) int64.
    """
    keys = [token_ids + 1]
    docs = [doc_of_token]
    valid = [token_ids >= 0]
    gram = token_ids + 1
    gram_ok = token_ids >= 0
    for n in range(2, max_n + 1):
        span = len(token_ids) - n + 1
        if span <= 0:
            break
        gram = gram[:span] * base + (token_ids[n - 1 :] + 1)
        gram_ok = gram_ok[:span] & (token_ids[n - 1 :] >= 0)
        same_doc = doc_of_token[:span] == doc_of_token[n - 1 :]
        keys.append(gram)
        docs.append(doc_of_token[:span])
        valid.append(gram_ok & same_doc)
    keys_all = np.concatenate(keys)
    docs_all = np.concatenate(docs)
    ok = np.concatenate(valid)
    return keys_all[ok], docs_all[ok]


def _unique_doc_key_pairs(keys: np.ndarray, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted unique (doc, key) pairs with their counts."""
    order = np.lexsort((keys, docs))
    k, d = keys[order], docs[order]
    starts = np.ones(len(k), dtype=bool)
    starts[1:] = (k[1:] != k[:-1]) | (d[1:] != d[:-1])
    first = np.flatnonzero(starts)
    counts = np.diff(np.append(first, len(k)))
    return d[first], k[first], counts


def _sorted_rows(docs: np.ndarray, cols: np.ndarray, values: np.ndarray, shape: tuple[int, int]) -> sp.csr_matrix:
    """A CSR matrix of (doc, column) pairs sorted by doc then column, none repeated (as
    :func:`_unique_doc_key_pairs` gives them), made from its arrays directly: the matrix
    ``csr_matrix((values, (docs, cols)))`` then ``sort_indices()`` gives, without scipy's
    conversion from COO, which was most of a one-passage transform (90 of 150 microseconds)."""
    indptr = np.zeros(shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(docs, minlength=shape[0]), out=indptr[1:])
    matrix = sp.csr_matrix((values, cols, indptr), shape=shape)  # scipy picks the index dtype, as from COO
    matrix.has_sorted_indices = True
    return matrix


def _merge_tables(tables: list[list[np.ndarray]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merge [keys, tf, df] count tables into one with sorted unique keys, adding counts.

    The merge owns ``tables``: each input column is let go once it is copied, and each result
    column is made while the others wait unsorted, so that at most about five columns of the
    merged length are held at once rather than ten (the tagging vectorizer's last merge over a
    course-scale corpus, docs/benchmarks.md). The list is empty afterwards."""
    merged = []
    for column in range(3):
        merged.append(np.concatenate([table[column] for table in tables]))
        for table in tables:
            table[column] = None
    tables.clear()
    keys, tf, df = merged
    del merged
    if len(keys) == 0:
        return keys, np.empty(0, np.int64), np.empty(0, np.int64)
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    keys = keys[starts]
    tf = np.add.reduceat(tf[order], starts)
    df = np.add.reduceat(df[order], starts)
    return keys, tf, df


@dataclass
class _Batch:
    token_ids: np.ndarray
    doc_of_token: np.ndarray
    n_docs: int


class NotebookTfidf:
    """``TfidfVectorizer(tokenizer=..., max_df, min_df, max_features, ngram_range, use_idf=True,
    norm='l2')`` as scikit-learn 1.2.2 with numpy 1.24 fits and applies it.

    Parameters mirror scikit-learn's. ``tokenizer`` receives the lowercased document.
    ``argsort`` decides the max_features cut (default: numpy 1.24's introsort).

    Attributes after ``fit``: ``vocabulary_`` (term -> column), ``feature_names`` (n_features,)
    object array of terms by name, ``idf_`` (n_features,) float64, ``df_`` (n_features,) int64,
    ``n_docs_``, and ``cut_`` (what the max_features cut did).
    """

    def __init__(
        self,
        tokenizer: Tokenizer,
        max_df: float | int = 1.0,
        min_df: float | int = 1,
        max_features: int | None = None,
        ngram_range: tuple[int, int] = (1, 1),
        use_idf: bool = True,
        norm: str | None = "l2",
        argsort: Callable[[np.ndarray], np.ndarray] | None = None,
        batch_size: int = 20_000,
        empty_when_unfittable: bool = False,
    ):
        if ngram_range[0] != 1 or not use_idf or norm != "l2":
            raise ValueError("only ngram_range=(1, n), use_idf=True and norm='l2' are implemented")
        self.tokenizer = tokenizer
        self.max_df = max_df
        self.min_df = min_df
        self.max_features = max_features
        self.ngram_range = ngram_range
        self.argsort = introsort if argsort is None else argsort  # numpy 1.24's introsort, re-implemented
        self.batch_size = batch_size
        #: Instead of raising CannotFit, fit an empty vocabulary and keep scikit-learn's message
        #: in ``cannot_fit_`` (every document then transforms to an all-zero row).
        self.empty_when_unfittable = empty_when_unfittable
        self.cannot_fit_: str | None = None

    # --- fitting ------------------------------------------------------------------------------

    def _batches(self, docs: Iterable[str], tokens: _TokenIds, grow: bool) -> Iterable[_Batch]:
        ids: list[np.ndarray] = []
        for doc in docs:
            ids.append(tokens.encode(analyze(doc, self.tokenizer), grow=grow))
            if len(ids) == self.batch_size:
                yield self._pack(ids)
                ids = []
        if ids:
            yield self._pack(ids)

    @staticmethod
    def _pack(ids: list[np.ndarray]) -> _Batch:
        lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
        flat = np.concatenate(ids) if ids else np.empty(0, np.int64)
        return _Batch(flat.astype(np.int64), np.repeat(np.arange(len(ids), dtype=np.int64), lengths), len(ids))

    def fit(self, docs: Iterable[str]) -> NotebookTfidf:
        """Learn vocabulary and idf from ``docs`` (any iterable of strings, read once)."""
        tokens = _TokenIds()
        return self._fit(self._batches(docs, tokens, grow=True), tokens)

    def fit_counts(self, docs: Sequence[str]) -> sp.csr_matrix:
        """``fit(docs)``, then ``counts(docs)``, each document tokenised once: the token ids read
        while fitting are counted against the vocabulary (the same ids ``counts`` would find, every
        token being known once fitted)."""
        tokens = _TokenIds()
        batches: list[_Batch] = []

        def kept() -> Iterable[_Batch]:
            for batch in self._batches(docs, tokens, grow=True):
                batches.append(batch)
                yield batch

        self._fit(kept(), tokens)
        return self._stack([self._count_batch(batch) for batch in batches])

    def _fit(self, batches: Iterable[_Batch], tokens: _TokenIds) -> NotebookTfidf:
        max_n = self.ngram_range[1]
        # Per-batch count tables wait in `pending` and are merged when they grow large, so the
        # big table is re-sorted a few times, not once per batch.
        merged = [np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64)]
        pending: list[list[np.ndarray]] = []
        pending_size = 0
        n_docs = 0
        # Token ids grow while reading, so the key base is fixed ahead: 2**21, room for
        # 2,097,150 distinct tokens, with trigram keys still inside int64.
        base = 1 << 21
        for batch in batches:
            if len(tokens.tokens) + 1 >= base:
                raise ValueError(f"more than {base - 2} distinct tokens: n-gram keys would overflow")
            keys, doc_ids = ngram_keys(batch.token_ids, batch.doc_of_token, base, max_n)
            _, pair_keys, pair_counts = _unique_doc_key_pairs(keys, doc_ids)
            order = np.argsort(pair_keys, kind="stable")
            pk, pc = pair_keys[order], pair_counts[order]
            starts = np.flatnonzero(np.r_[True, pk[1:] != pk[:-1]]) if len(pk) else np.empty(0, np.int64)
            chunk_tf = np.add.reduceat(pc, starts) if len(pk) else np.empty(0, np.int64)
            pending.append([pk[starts], chunk_tf, np.diff(np.append(starts, len(pk)))])
            pending_size += len(starts)
            n_docs += batch.n_docs
            if pending_size > max(20_000_000, len(merged[0])):
                tables = [merged, *pending]
                pending, pending_size = [], 0
                merged = list(_merge_tables(tables))  # it lets go of the tables it merged
        tables = [merged, *pending]
        del merged, pending
        all_keys, all_tf, all_df = _merge_tables(tables)
        self._select(all_keys, all_tf, all_df, n_docs, tokens, base)
        return self

    def _select(self, keys, tf, df, n_docs, tokens: _TokenIds, base: int) -> None:
        """The df filter, the max_features cut and the idf, as scikit-learn 1.2.2 orders them."""
        # scikit-learn: an int (numbers.Integral, bool included) is a count of documents, a
        # float a share of them; its three refusals, in its order.
        max_count = self.max_df if isinstance(self.max_df, (int, np.integer)) else self.max_df * n_docs
        min_count = self.min_df if isinstance(self.min_df, (int, np.integer)) else self.min_df * n_docs
        keep = (df <= max_count) & (df >= min_count)
        if len(keys) == 0:
            self._cannot_fit("empty vocabulary; perhaps the documents only contain stop words")
            keep = np.zeros(0, dtype=bool)
        elif max_count < min_count:
            self._cannot_fit("max_df corresponds to < documents than min_df")
            keep = np.zeros(len(keys), dtype=bool)
        keys, tf, df = keys[keep], tf[keep], df[keep]
        terms = np.array([_key_to_term(k, base, tokens.tokens) for k in keys.tolist()], dtype=object)
        by_name = np.array(sorted(range(len(terms)), key=terms.__getitem__), dtype=np.int64)
        keys, tf, df, terms = keys[by_name], tf[by_name], df[by_name], terms[by_name]
        self.cut_ = None
        if self.max_features is not None and len(keys) > self.max_features:
            # scikit-learn: mask_inds = (-tfs[mask]).argsort()[:limit], tfs a float64 sum.
            order = self.argsort(-tf.astype(np.float64))
            chosen = np.sort(order[: self.max_features])
            last_tf = tf[order[self.max_features - 1]]
            self.cut_ = {
                "candidates": int(len(keys)),
                "kept": int(self.max_features),
                "tf_at_cut": int(last_tf),
                "tied_at_cut": int(np.sum(tf == last_tf)),
                "tied_kept": int(np.sum(tf[chosen] == last_tf)),
            }
            keys, tf, df, terms = keys[chosen], tf[chosen], df[chosen], terms[chosen]
        if len(keys) == 0 and self.cannot_fit_ is None:
            self._cannot_fit("After pruning, no terms remain. Try a lower min_df or a higher max_df.")
        self._keys = keys  # sorted by term name, not by key
        self._key_order = np.argsort(keys, kind="stable")
        self._sorted_keys = keys[self._key_order]
        self._tokens = tokens
        self._base = base
        self.n_docs_ = int(n_docs)
        self.feature_names = terms
        self.vocabulary_ = {term: i for i, term in enumerate(terms.tolist())}
        self.df_ = df
        self.tf_ = tf
        self.idf_ = smooth_idf(df, n_docs)

    def _cannot_fit(self, message: str) -> None:
        if not self.empty_when_unfittable:
            raise CannotFit(message)
        self.cannot_fit_ = message

    # --- applying -----------------------------------------------------------------------------

    def transform(self, docs: Iterable[str]) -> sp.csr_matrix:
        """TF-IDF rows of ``docs``: (n_docs, n_features) CSR, float64, sorted indices."""
        return self._stack([self._transform_batch(batch) for batch in self._batches(docs, self._tokens, grow=False)])

    def counts(self, docs: Iterable[str]) -> sp.csr_matrix:
        """Raw term counts of ``docs``: (n_docs, n_features) CSR, float64."""
        return self._stack([self._count_batch(batch) for batch in self._batches(docs, self._tokens, grow=False)])

    def _stack(self, blocks: list[sp.csr_matrix]) -> sp.csr_matrix:
        if not blocks:
            return sp.csr_matrix((0, len(self.feature_names)), dtype=np.float64)
        if len(blocks) == 1:  # one batch (a typed claim's one passage): stacking would only copy it
            return blocks[0]
        return sp.vstack(blocks, format="csr")

    def _count_batch(self, batch: _Batch) -> sp.csr_matrix:
        if len(self._sorted_keys) == 0:  # an empty vocabulary (cannot_fit_): every row is zero
            return sp.csr_matrix((batch.n_docs, 0), dtype=np.float64)
        keys, doc_ids = ngram_keys(batch.token_ids, batch.doc_of_token, self._base, self.ngram_range[1])
        position = np.searchsorted(self._sorted_keys, keys)
        position[position == len(self._sorted_keys)] = 0
        found = self._sorted_keys[position] == keys
        columns = self._key_order[position[found]]
        docs, cols, counts = _unique_doc_key_pairs(columns, doc_ids[found])
        return _sorted_rows(docs, cols, counts.astype(np.float64), (batch.n_docs, len(self.feature_names)))

    def _transform_batch(self, batch: _Batch) -> sp.csr_matrix:
        matrix = self._count_batch(batch)
        matrix.sort_indices()
        matrix.data *= self.idf_[matrix.indices]
        l2_normalize_rows(matrix)
        return matrix


def l2_normalize_rows(matrix: sp.csr_matrix) -> None:
    """Divide each row by its l2 norm in place; all-zero rows stay zero.

    The squares are summed in *descending* column order: scikit-learn's transform multiplies
    the counts by a diagonal idf matrix, and scipy emits that product's columns reversed, so
    its row normalisation meets them in that order. Same order, same bits.
    """
    _l2_normalize_kernel(matrix.data, matrix.indptr.astype(np.int64))


@numba.njit(cache=True)
def _l2_normalize_kernel(data, indptr):
    for row in range(len(indptr) - 1):
        total = 0.0
        for j in range(indptr[row + 1] - 1, indptr[row] - 1, -1):
            total += data[j] * data[j]
        if total == 0.0:
            continue
        norm = np.sqrt(total)
        for j in range(indptr[row], indptr[row + 1]):
            data[j] /= norm


def smooth_idf(df: np.ndarray, n_docs: int) -> np.ndarray:
    """scikit-learn's ``idf = ln((n_docs + 1) / (df + 1)) + 1`` (``smooth_idf=True``).

    The division and the addition are IEEE operations, the same bits on every CPU; the log is
    the C library's (:func:`libm_log`), as on numpy's generic path.

    Parameters
    ----------
    df : ndarray of shape (n_features,), int
        Document frequency of each feature.
    n_docs : int
        Documents the vectorizer was fitted on.

    Returns
    -------
    ndarray of shape (n_features,), float64
    """
    return libm_log((n_docs + 1) / (np.asarray(df).astype(np.float64) + 1)) + 1.0


def libm_log(values: np.ndarray) -> np.ndarray:
    """Natural log of each value through the C library's ``log``, never numpy's SIMD dispatch.

    The reference is numpy's generic code path, where float64 ``np.log`` calls the C library's
    ``log``. On a CPU with AVX-512, numpy (1.24 and 2.x alike) dispatches float64 ``np.log`` to
    a vectorised routine instead, which differs in the last bit on a share of inputs (numpy 1.24:
    19% of ``arange(1, 200000) / 7``; numpy 2.3: 8 of those 199,999), enough to move a tie in
    the tags or the 0.55 cosine threshold. ``math.log`` is the C library's ``log`` on every CPU.
    See docs/architecture.md, "Reference platform".

    Parameters
    ----------
    values : ndarray of shape (n,), float64, positive

    Returns
    -------
    ndarray of shape (n,), float64
    """
    flat = np.asarray(values, dtype=np.float64)
    return np.fromiter(map(math.log, flat.tolist()), dtype=np.float64, count=flat.size)


def _key_to_term(key: int, base: int, tokens: list[str]) -> str:
    parts = []
    while key:
        key, digit = divmod(key, base)
        parts.append(tokens[digit - 1])
    return " ".join(reversed(parts))


# --- persistence ------------------------------------------------------------------------------


def save(vectorizer: NotebookTfidf, path) -> None:
    """Write a fitted vectorizer to ``path`` (.npz) through a temporary file, then rename.
    The tokenizer is not saved: :func:`load` takes it again."""
    write_npz(
        path,
        keys=vectorizer._keys,
        df=vectorizer.df_,
        tf=vectorizer.tf_,
        idf=vectorizer.idf_,
        feature_names=np.array(json.dumps(vectorizer.feature_names.tolist(), ensure_ascii=False)),
        tokens=np.array(json.dumps(vectorizer._tokens.tokens, ensure_ascii=False)),
        meta=np.array(
            json.dumps(
                {
                    "base": vectorizer._base,
                    "n_docs": vectorizer.n_docs_,
                    "max_df": vectorizer.max_df,
                    "min_df": vectorizer.min_df,
                    "max_features": vectorizer.max_features,
                    "ngram_range": list(vectorizer.ngram_range),
                    "cut": vectorizer.cut_,
                    **({"cannot_fit": vectorizer.cannot_fit_} if vectorizer.cannot_fit_ else {}),
                }
            )
        ),
    )


def load(path, tokenizer: Tokenizer) -> NotebookTfidf:
    """Read a vectorizer written by :func:`save`."""
    with np.load(path) as stored:
        meta = json.loads(str(stored["meta"]))
        vectorizer = NotebookTfidf(
            tokenizer,
            max_df=meta["max_df"],
            min_df=meta["min_df"],
            max_features=meta["max_features"],
            ngram_range=tuple(meta["ngram_range"]),
            argsort=lambda a: a,  # unused once fitted
        )
        tokens = _TokenIds()
        tokens.tokens = json.loads(str(stored["tokens"]))
        tokens.ids = {token: i for i, token in enumerate(tokens.tokens)}
        vectorizer._keys = stored["keys"]
        vectorizer._key_order = np.argsort(vectorizer._keys, kind="stable")
        vectorizer._sorted_keys = vectorizer._keys[vectorizer._key_order]
        vectorizer._tokens = tokens
        vectorizer._base = meta["base"]
        vectorizer.n_docs_ = meta["n_docs"]
        vectorizer.cut_ = meta["cut"]
        vectorizer.cannot_fit_ = meta.get("cannot_fit")
        vectorizer.feature_names = np.array(json.loads(str(stored["feature_names"])), dtype=object)
        vectorizer.vocabulary_ = {term: i for i, term in enumerate(vectorizer.feature_names.tolist())}
        vectorizer.df_ = stored["df"]
        vectorizer.tf_ = stored["tf"]
        vectorizer.idf_ = stored["idf"]
    return vectorizer
