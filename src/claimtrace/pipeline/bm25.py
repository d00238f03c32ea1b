"""A standard retriever as the reference row: BM25 over the raw passage text, top six per claim.

Not a quirk and not the notebook's: the notebook retrieved with TF-IDF over passage tags
(:mod:`claimtrace.pipeline.retrieval`). This module answers "what would a standard retriever have found
on the same corpus?" with textbook choices and a maintained library, so each quirk's cost can be
read against it.

Tokens (:func:`~claimtrace.pipeline.bm25_tokens.tokenize`, the same for passages and claims):
lowercase ``\\w\\w+`` words, the 2024 NLTK English stopwords dropped, nltk's Porter stems
(:mod:`claimtrace.pipeline.bm25_tokens`).

Weights: `bm25s <https://github.com/xhluca/bm25s>`_ builds the index, an eager term x passage
matrix of BM25 weights (:data:`PARAMS`: Lucene's variant and defaults)::

    idf(t)    = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    w(t, d)   = idf(t) * (tf(t, d) / (tf(t, d) + k1 * (1 - b + b * len(d) / avglen)))
    score(q, d) = sum of w(t, d) over the claim's tokens t (a repeated token counts again),
                  added in the claim's token order

where ``len(d)`` counts the passage's tokens after stopwords are dropped and ``avglen`` is its
mean over every passage (empty ones included). Every weight is positive, so a passage scores
above zero exactly when it shares a stem with the claim.

Tie order (:meth:`BM25Index.search`): score descending, then corpus position ascending (the
order the passages were given to the build); only passages that score above zero are returned,
so a claim gets at most ``k`` ids, fewer when fewer passages share a stem with it, and none when
it has no token the corpus knows (an empty claim included).

Builds (:func:`build_bm25_index`) tokenise the corpus in chunks, each written atomically to
``chunks/NNNNN.npz`` and skipped when it exists (:func:`claimtrace.lib.chunks.run_chunks`, the runner
the build's stems and tags chunks share), then merge the chunks into the index
(``index/``, bm25s's own files plus ``passages.json``), renamed into place whole. The vocabulary
is numbered in order of first appearance in the corpus, so a chunked, resumed or parallel build
gives the same arrays as a one-shot one.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

import bm25s
import numba
import numpy as np

from claimtrace.errors import DataError
from claimtrace.lib import chunks
from claimtrace.lib.build_files import atomic_folder, write_npz
from claimtrace.pipeline.bm25_tokens import TOKENIZER, WordTable, merge_chunks, tokenize, tokenize_chunk

__all__ = ["PARAMS", "TOKENIZER", "tokenize", "tokenize_chunk", "merge_chunks", "BM25Index", "build_bm25_index"]

#: The BM25 parameters, all here. Lucene's variant (bm25s's default ``method``: the idf above,
#: which is never negative, and no ``(k1 + 1)`` factor, which changes no ranking) with Lucene's
#: defaults k1 = 1.2 (term-frequency saturation) and b = 0.75 (length normalisation), the
#: textbook values (Robertson and Zaragoza 2009). Not tuned on dev: this is a reference, and a
#: row tuned on the claims it is scored on would flatter itself. float64 weights make the scores
#: exactly reproducible by a plain-Python BM25 (tests/pipeline/test_bm25.py).
PARAMS = {"k1": 1.2, "b": 0.75, "method": "lucene", "dtype": "float64", "int_dtype": "int32"}

#: Passages per chunk file of a build (as the build stage's other chunks).
CHUNK = 50_000

# --- the index ------------------------------------------------------------------------------------


#: Passages per block of the search kernel: the block's score sums (8 bytes a passage) stay in
#: the CPU's L2 cache while the claim's posting lists stream through.
BLOCK = 1 << 15


@numba.njit(cache=True)
def _top_k(query_terms, indptr, indices, weights, n_docs, acc, k, out_position, out_score):
    """One claim's top ``k`` by (score desc, position asc), scores above zero only.

    Passages are visited in blocks of ``len(acc)``. In each block the claim's posting lists
    (sorted by passage) are added into ``acc`` term by term, in claim order, so each passage's
    score is the same sum, in the same order, as a plain loop over the claim's tokens; then the
    block is scanned in position order and each non-zero sum offered to the kept list (and
    reset). Branch-free adds and a dense scan measured three times faster than tracking which
    passages were touched. Returns how many were kept.
    """
    if k == 0:
        return 0
    n_terms = query_terms.shape[0]
    cursor = np.empty(n_terms, np.int64)
    for a in range(n_terms):
        cursor[a] = indptr[query_terms[a]]
    block = acc.shape[0]
    kept = 0
    for start in range(0, n_docs, block):
        stop = start + block
        added = False
        for a in range(n_terms):
            first = cursor[a]
            end = indptr[query_terms[a] + 1]
            if first == end or indices[first] >= stop:
                continue
            last = first + np.searchsorted(indices[first:end], stop)
            for p in range(first, last):
                acc[indices[p] - start] += weights[p]
            cursor[a] = last
            added = True
        if not added:
            continue
        for i in range(min(block, n_docs - start)):
            s = acc[i]
            if s > 0.0:
                acc[i] = 0.0
                if kept < k or s >= out_score[k - 1]:
                    kept = _offer(start + i, s, k, kept, out_position, out_score)
    return kept


@numba.njit(cache=True, inline="always")
def _offer(d, s, k, kept, out_position, out_score):
    """Insert passage ``d`` with score ``s`` into the kept list, sorted by (score desc, position
    asc) and at most ``k`` long (k is small: an insertion beats a heap). Returns its new length."""
    j = kept if kept < k else k
    while j > 0 and (out_score[j - 1] < s or (out_score[j - 1] == s and out_position[j - 1] > d)):
        if j < k:
            out_score[j] = out_score[j - 1]
            out_position[j] = out_position[j - 1]
        j -= 1
    if j < k:
        out_score[j] = s
        out_position[j] = d
        if kept < k:
            kept += 1
    return kept


def lucene_idf(df: int, n_docs: int) -> float:
    """Lucene's idf, ``ln(1 + (N - df + 0.5) / (df + 0.5))``, in Python floats (as bm25s)."""
    return math.log(1 + (n_docs - df + 0.5) / (df + 0.5))


def lucene_tfc(tf: np.ndarray, doc_len: np.ndarray, avg_len: float, k1: float, b: float) -> np.ndarray:
    """Lucene's term-frequency component, ``tf / (k1 * ((1 - b) + b * len(d) / avglen) + tf)``,
    elementwise, in bm25s's order of operations (so the same bits)."""
    return tf / (k1 * ((1 - b) + b * doc_len / avg_len) + tf)


class _CountsBM25(bm25s.BM25):
    """bm25s's BM25, indexed from the term counts the chunks already hold.

    ``bm25s.BM25.index`` counts each passage's tokens again in a Python loop (about 35 us a
    passage, 42 s for 1.2M); this does the same steps with array operations and the two Lucene
    formulas written out (:func:`lucene_idf`, :func:`lucene_tfc`, in bm25s's order of operations:
    bm25s's public API has no way in from counts, and its scorer selection is private), so its
    weight matrix is ``index``'s to the bit (tests/pipeline/test_bm25.py compares the two, so a bm25s
    release that changes a formula fails there). Everything else (save, load, ``get_scores``) is
    bm25s's.
    """

    def index_counts(self, ptr: np.ndarray, terms: np.ndarray, counts: np.ndarray, vocab: dict[str, int]) -> None:
        """Index passages given as count arrays (:func:`tokenize_chunk`'s ``ptr``, ``terms``,
        ``counts``; ``vocab`` term -> index), as ``index((token_ids, vocab), create_empty_token=False)``."""
        if self.method != "lucene" or self.idf_method != "lucene":
            raise NotImplementedError(f"method {self.method!r}: only Lucene's formulas are written out here")
        n_docs, n_vocab = len(ptr) - 1, len(vocab)
        doc = np.repeat(np.arange(n_docs, dtype=self.int_dtype), np.diff(ptr))
        cumulative = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
        lengths = cumulative[ptr[1:]] - cumulative[ptr[:-1]]  # tokens per passage, repeats counted
        avg_doc_len = lengths.mean()
        # The idf of each term from its document frequency, one call per term as bm25s does.
        doc_frequencies = np.bincount(terms, minlength=n_vocab).tolist()
        idf = np.zeros(n_vocab, dtype=self.dtype)
        for term, df in enumerate(doc_frequencies):
            if df:
                idf[term] = lucene_idf(df, n_docs)
        tfc = lucene_tfc(counts.astype(self.dtype), lengths[doc], avg_doc_len, self.k1, self.b)
        data, indices, indptr = self._np_csc(
            data=idf[terms] * tfc, rows=doc, cols=terms.astype(self.int_dtype), shape=(n_docs, n_vocab)
        )
        self.scores = {"data": data.astype(self.dtype), "indices": indices, "indptr": indptr, "num_docs": n_docs}
        self.vocab_dict = vocab
        self.nonoccurrence_array = None
        self.unique_token_ids_set = set(vocab.values())


class BM25Index:
    """BM25 over one corpus: bm25s's weight matrix, the passage ids, a search with a fixed tie order.

    Build with :meth:`from_passages` (in memory) or :func:`build_bm25_index` (chunked, resumable),
    or :meth:`load` a saved one. ``ids[p]`` is the id of the passage at corpus position ``p``.
    :meth:`search` reuses work arrays: one index serves one thread at a time.
    """

    def __init__(self, model: bm25s.BM25, ids: list[str]):
        self.model = model
        self.ids = ids
        n = len(ids)
        if model.scores["num_docs"] != n:
            raise ValueError(f"the index holds {model.scores['num_docs']} passages but {n} ids were given")
        # Plain ndarray views (of memory maps, after a load), as the numba kernel takes them.
        self._indptr = np.asarray(model.scores["indptr"], np.int64)
        self._indices = np.asarray(model.scores["indices"])
        self._weights = np.asarray(model.scores["data"])
        self._acc: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.ids)

    # -- making one ------------------------------------------------------------------------------

    @classmethod
    def from_chunk(cls, chunk: dict[str, np.ndarray]) -> BM25Index:
        """The index of a merged chunk (:func:`merge_chunks`): bm25s computes the weights."""
        if len(chunk["ids"]) == 0:
            raise ValueError("no passages: nothing to index")
        model = _CountsBM25(**PARAMS)
        model.index_counts(
            chunk["ptr"], chunk["terms"], chunk["counts"], {term: i for i, term in enumerate(chunk["vocab"].tolist())}
        )
        return cls(model, chunk["ids"].tolist())

    @classmethod
    def from_passages(cls, passages: Iterable[tuple[str, str]]) -> BM25Index:
        """The index of ``(id, text)`` pairs, in memory, in one go (as a chunked build's)."""
        return cls.from_chunk(tokenize_chunk(list(passages)))

    # -- files -----------------------------------------------------------------------------------

    def save(self, folder: str | os.PathLike) -> None:
        """Write the index to ``folder`` (bm25s's files and ``passages.json``), whole: it is
        written beside and renamed into place, so ``folder`` holds a complete index or none."""
        with atomic_folder(folder) as partial:
            self.model.save(partial, show_progress=False)
            meta = {"tokenizer": TOKENIZER, "params": PARAMS, "bm25s": bm25s.__version__, "ids": self.ids}
            (partial / "passages.json").write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8")

    @classmethod
    def load(cls, folder: str | os.PathLike, mmap: bool = True) -> BM25Index:
        """An index written by :meth:`save`. ``mmap``: the weight arrays are memory-mapped
        (opening costs about nothing; pages are read as searches touch them).

        Raises DataError when the folder is no index, or one made with other parameters or
        another tokenizer (it would silently give other results: rebuild it)."""
        folder = Path(folder)
        meta_path = folder / "passages.json"
        if not meta_path.is_file():
            raise DataError(f"{folder}: not a BM25 index (no passages.json)")
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if meta.get("tokenizer") != TOKENIZER or meta.get("params") != PARAMS:
            raise DataError(
                f"{folder}: this BM25 index was made with other parameters or another tokenizer "
                f"({meta.get('params')}, {meta.get('tokenizer')!r}): delete it and rebuild"
            )
        model = bm25s.BM25.load(folder, mmap=mmap, show_progress=False)
        return cls(model, meta["ids"])

    # -- search ----------------------------------------------------------------------------------

    def _query_terms(self, claim: str) -> np.ndarray:
        vocab = self.model.vocab_dict
        return np.array([vocab[t] for t in tokenize(claim) if t in vocab], dtype=np.int64)

    def search_positions(self, claim: str, k: int = 6) -> tuple[np.ndarray, np.ndarray]:
        """One claim's top ``k``: corpus positions (m,) int64 and scores (m,) float64, m <= k,
        by score descending, then position ascending; only scores above zero."""
        if k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        if self._acc is None:
            self._acc = np.zeros(min(BLOCK, len(self.ids)), np.float64)
        positions = np.empty(k, np.int64)
        scores = np.empty(k, np.float64)
        kept = _top_k(
            self._query_terms(claim),
            self._indptr,
            self._indices,
            self._weights,
            len(self.ids),
            self._acc,
            k,
            positions,
            scores,
        )
        return positions[:kept], scores[:kept]

    def search(self, claim_texts: Iterable[str], k: int = 6) -> tuple[list[list[str]], list[np.ndarray]]:
        """The top ``k`` passages of each claim text.

        Parameters
        ----------
        claim_texts : iterable of str
            ``n`` raw claim texts (tokenised by :func:`tokenize`).
        k : int
            How many passages per claim, at most.

        Returns
        -------
        ids : list of n lists of str
            Each claim's passage ids, m_i <= k of them: by score descending, then corpus
            position ascending; only passages scoring above zero (those sharing a stem with the
            claim), so an empty claim, or one whose words are all stopwords or unknown, gets [].
        scores : list of n ndarrays, shape (m_i,), float64
            Their BM25 scores, aligned with ``ids``.
        """
        if isinstance(claim_texts, str):
            raise TypeError("search takes a list of claim texts, not one string")
        out_ids, out_scores = [], []
        for claim in claim_texts:
            positions, scores = self.search_positions(claim, k)
            out_ids.append([self.ids[p] for p in positions.tolist()])
            out_scores.append(scores)
        return out_ids, out_scores


# --- the chunked, resumable build -----------------------------------------------------------------


def _load_chunk(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as npz:
        return {key: npz[key] for key in npz.files}


def build_bm25_index(
    folder: str | os.PathLike, passages: Iterable[tuple[str, str]], *, chunk_size: int = CHUNK, processes: int = 1
) -> BM25Index:
    """Build (or finish, or load) the BM25 index of a corpus in ``folder``, resumably::

        folder/chunks/NNNNN.npz   tokenize_chunk of passages [N * chunk_size, (N + 1) * chunk_size)
        folder/index/             the index (BM25Index.save), written last; then chunks/ goes

    Every file appears whole (written aside, then renamed). A run finds ``index/`` and loads it
    without reading ``passages``; else it reads ``passages`` once, tokenising only the chunks
    whose file is missing, then merges every chunk into the index. A killed build thus resumes
    where it stopped, and any build gives the same index as a one-shot :meth:`BM25Index.from_passages`.

    Parameters
    ----------
    folder : path
        The build's folder (created).
    passages : iterable of (str, str)
        ``(id, text)`` in corpus order; the same corpus on every run of one folder.
    chunk_size : int
        Passages per chunk file; the same on every run of one folder.
    processes : int
        Worker processes for tokenising (1: none).

    Raises
    ------
    ValueError
        When an existing chunk holds other passage ids than ``passages`` gives at its place
        (another corpus, or another ``chunk_size``): use another folder.
    """
    folder = Path(folder)
    index_dir = folder / "index"
    chunk_dir = folder / "chunks"
    if index_dir.is_dir():
        shutil.rmtree(chunk_dir, ignore_errors=True)  # left if a build was killed right after its index
        return BM25Index.load(index_dir)
    chunks.remove_partial_files(folder)  # a half-saved index folder
    items = passages if isinstance(passages, Sequence) else list(passages)
    chunk_spans = chunks.spans(len(items), chunk_size)
    words = WordTable()  # the build's words, each stemmed once (a forked worker fills its own copy)
    chunks.run_chunks(
        chunk_dir,
        chunk_spans,
        ".npz",
        lambda start, stop: tokenize_chunk(items[start:stop], words),
        lambda path, arrays: _write_chunk((path, arrays)),
        processes=processes,
        check=lambda path, start, stop: _check_chunk_ids(path, items[start:stop]),
    )
    merged = merge_chunks(_load_chunk(chunks.chunk_path(chunk_dir, i, ".npz")) for i in range(len(chunk_spans)))
    index = BM25Index.from_chunk(merged)
    index.save(index_dir)
    shutil.rmtree(chunk_dir, ignore_errors=True)  # the index supersedes them
    return index


def _write_chunk(job: tuple[Path, dict[str, np.ndarray]]) -> None:
    """Write one chunk's arrays (:func:`tokenize_chunk`'s) whole."""
    path, arrays = job
    write_npz(path, **arrays)


def _check_chunk_ids(path: Path, batch: list[tuple[str, str]]) -> None:
    """A chunk found on disk must be of these passages (a resumed build of the same corpus)."""
    with np.load(path, allow_pickle=False) as npz:
        stored = npz["ids"].tolist()
    if stored != [pid for pid, _ in batch]:
        raise ValueError(f"{path}: this chunk is of other passages (another corpus or chunk size): use another folder")
