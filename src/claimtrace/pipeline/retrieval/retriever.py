"""The retrieval model (:class:`Retriever`): fitted on passage tags or loaded, then queried one
claim at a time (:class:`Query`, :class:`Retrieval`, :class:`Scores`), and run over a whole
split of claims (:func:`retrieve_all`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from claimtrace import constants
from claimtrace.constants import COSINE_WEIGHT_IN_SCORE, MAX_EVIDENCES
from claimtrace.data.files import Claim
from claimtrace.lib.build_files import PackedStrings, StringIndex, load_npz, write_npz
from claimtrace.pipeline.retrieval import kernels
from claimtrace.pipeline.retrieval.kernels import BLOCK, Block, Columns, Found, Postings, QueryArrays, Rules
from claimtrace.pipeline.retrieval.order import fallback_six, notebook_order
from claimtrace.pipeline.retrieval.variants import Variant, as_variant, claim_input
from claimtrace.pipeline.tagging import Restemmer
from claimtrace.pipeline.tfidf import NotebookTfidf
from claimtrace.pipeline.tfidf import load as load_vectorizer
from claimtrace.pipeline.tfidf import save as save_vectorizer

__all__ = ["Retriever", "Query", "Retrieval", "Scores", "Thresholds", "NOTEBOOK_THRESHOLDS", "retrieve_all"]


def _tag_string(tags: str | Sequence[str]) -> str:
    return tags if isinstance(tags, str) else " ".join(tags)


class Thresholds(NamedTuple):
    """The filter's three bounds: ``cosine > cosine and overlap > overlap and score > score``."""

    cosine: float
    overlap: float
    score: float


#: The notebook's query: ``similaritie > 0.55 and overlap_rate > 0.5 and combined_score > 1.5``.
NOTEBOOK_THRESHOLDS = Thresholds(constants.COSINE_THRESHOLD, constants.OVERLAP_THRESHOLD, constants.SCORE_THRESHOLD)


class Scores(NamedTuple):
    """One claim's non-zero rows (:meth:`Retriever.scores`), positions ascending (frame order);
    ``passing`` the query's mask."""

    positions: np.ndarray
    cosine: np.ndarray
    overlap: np.ndarray
    score: np.ndarray
    shared: np.ndarray
    passing: np.ndarray


@dataclass
class Retrieval:
    """One claim's retrieval. Positions index :attr:`Retriever.ids`."""

    claim: str
    evidences: list[int]
    fallback: bool
    passed: int
    kept: list[int]
    cosine: np.ndarray
    overlap: np.ndarray
    score: np.ndarray
    shared: np.ndarray
    touched: int = 0


@dataclass
class _Scratch:
    """Work arrays of one claim's kernel pass: a block's (:class:`Block`, all zero between
    blocks), and room for the claim's touched rows' positions and scores (one slot per passage).
    Made per call (``np.empty`` touches no memory until written), so that claims retrieved on
    several threads at once share nothing; a caller retrieving many claims in a row passes one
    to :meth:`Retriever.retrieve` to reuse it."""

    block: Block
    position: np.ndarray
    score: np.ndarray

    @classmethod
    def of_size(cls, n: int, max_tags: int) -> _Scratch:
        size = min(BLOCK, n)
        touch = np.zeros(size, np.uint8 if max_tags < 127 else np.int64)
        block = Block(np.zeros(size, np.float64), touch, np.empty(size, np.int64))
        return cls(block, np.empty(n, np.int64), np.empty(n, np.float64))


@dataclass(frozen=True)
class Query:
    """One claim string as the retrieval model reads it, computed once and handed to every use
    (:meth:`Retriever.query`).

    ``text`` is the string retrieved with (the claim's tags, or raw text); ``restemmed`` its
    tokens stemmed again (the quirk "stems of stems": the tags are stems already, and the
    retrieval vectorizer preprocesses them once more); ``terms`` and ``weights`` the vector of
    those (scikit-learn's column order, descending; twice l2-normalised); ``tag_ids`` the raw tags
    the index knows (sorted); ``n_tags`` the number of distinct raw tags."""

    text: str
    restemmed: list[str]
    terms: np.ndarray
    weights: np.ndarray
    tag_ids: np.ndarray
    n_tags: int

    def arrays(self) -> QueryArrays:
        return QueryArrays(self.terms, self.weights, self.tag_ids, self.n_tags)


class _Rows(NamedTuple):
    """One claim's non-zero rows (:class:`Found`, cut to what the kernel wrote): every touched
    passage's position and score (views into the scratch, valid until the next claim), and with
    ``full`` its other columns; and the rows that pass the filter."""

    touched: Columns
    passing: Columns


def _raw_tag_index(tags: Sequence[str]) -> tuple[dict[str, int], np.ndarray, sp.csc_matrix]:
    """Raw tags, as sets, for the shared counts: tag -> id, each passage's set size, and the
    passage x tag matrix (CSC: each tag's passages, sorted)."""
    tag_ids: dict[str, int] = {}
    number = tag_ids.setdefault
    sizes_list: list[int] = []
    flat: list[int] = []
    for s in tags:
        # in order of first appearance, not set order: a set of strings iterates in an order
        # that changes with every process's hash seed, and the saved index must not
        unique = dict.fromkeys(s.split())
        sizes_list.append(len(unique))
        flat.extend([number(tag, len(tag_ids)) for tag in unique])
    sizes = np.array(sizes_list, np.int64)
    rows = np.repeat(np.arange(len(tags), dtype=np.int64), sizes)
    tag_matrix = sp.csr_matrix(
        (np.ones(len(flat), np.int8), (rows, np.asarray(flat, np.int64))), shape=(len(tags), max(len(tag_ids), 1))
    ).tocsc()
    tag_matrix.sort_indices()
    return tag_ids, sizes, tag_matrix


class Retriever:
    """The retrieval model over one set of passage tags, as an estimator: fit it
    (:meth:`fit`) or load a fitted one (:meth:`load`), then query it one claim at a time
    (:meth:`query`, :meth:`retrieve`, :meth:`scores`, :meth:`point_columns`).

    What it holds: the fitted retrieval vectorizer; the retrievable passages' ids and tag
    strings (frame order); :attr:`excluded`, how many passages had no usable tag; the
    :data:`Postings` the kernels read (terms' and raw tags' posting lists, tag set sizes); and
    :attr:`restemmer`, what its vectorizer reads tags and claims with (quirk "stems of stems").
    """

    def __init__(
        self,
        vectorizer: NotebookTfidf,
        restemmer: Restemmer,
        ids: Sequence[str],
        tags: Sequence[str],
        excluded: int,
        tag_ids: dict[str, int],
        index: Postings,
        positions: StringIndex | None = None,
    ):
        self.vectorizer = vectorizer
        self.restemmer = restemmer
        self.vocabulary = vectorizer.vocabulary_
        self.idf = vectorizer.idf_
        self.ids = ids
        self.tags = tags
        self.excluded = excluded
        self._tag_ids = tag_ids
        self._index = index
        self._positions = positions

    @classmethod
    def fit(
        cls,
        passage_ids: Sequence[str],
        passage_tags: Sequence[str | Sequence[str]],
        restemmer: Restemmer,
        *,
        vectorizer_params: Mapping | None = None,
    ) -> Retriever:
        """Fit the model on passage tags: ``passage_ids``, ``passage_tags`` aligned, in the
        canonical passage order; a tag entry is a space-separated string or a list of tags.
        Passages whose tag string is empty or a pandas NA string are left out. ``restemmer``:
        the tags preprocessed again (:class:`~claimtrace.pipeline.tagging.Restemmer`)."""
        ids = list(passage_ids)
        strings = [_tag_string(t) for t in passage_tags]
        if len(ids) != len(strings):
            raise ValueError(f"{len(ids)} passage ids but {len(strings)} tag entries")
        keep = [i for i, s in enumerate(strings) if s not in constants.CSV_NA_TAGS and s.split()]
        kept_ids, kept_tags = [ids[i] for i in keep], [strings[i] for i in keep]
        if not kept_ids:
            raise ValueError("no passage has tags: nothing to retrieve from")
        # Tag strings are preprocessing output (alphabetic tokens), which restem tokenizes as
        # final_stems does, token by token (tests/pipeline/test_tagging.py proves it); any other text
        # goes through final_stems whole (every token alphabetic: each string without its
        # whitespace is; no string is blank). Claims always use final_stems.
        clean = all("".join(s.lower().split()).isalpha() for s in kept_tags)
        passage_tokenizer = restemmer.tokenizer("restem" if clean else "final_stems")
        params = {**constants.RETRIEVAL_VECTORIZER, **(vectorizer_params or {})}
        # A corpus too small for the notebook's settings (max_df=0.5 of the tagged passages below
        # min_df=3: fewer than six; or no term between them) made scikit-learn raise; here the
        # vocabulary is empty instead (``cannot_fit``): no claim term has a weight, so every
        # claim scores 0 against every passage and takes the fallback, as a claim without tags.
        vectorizer = NotebookTfidf(tokenizer=passage_tokenizer, empty_when_unfittable=True, **params)
        counts = vectorizer.fit_counts(kept_tags)  # fit and count, tokenising once
        weights = kernels.notebook_weights(counts, vectorizer.idf_).tocsc()
        del counts
        weights.sort_indices()
        tag_ids, sizes, tag_matrix = _raw_tag_index(kept_tags)
        index = kernels.postings_of(
            weights.indptr, weights.indices, weights.data, tag_matrix.indptr, tag_matrix.indices, sizes
        )
        return cls(vectorizer, restemmer, kept_ids, kept_tags, len(ids) - len(kept_ids), tag_ids, index)

    # -- persistence (the build saves the fitted model; readers load it instead of refitting) ---

    def save(self, vectorizer_path, index_path) -> None:
        """Write the fitted model: the vectorizer (:func:`claimtrace.pipeline.tfidf.save`) and the index
        (passage ids and tag strings, posting lists, tag ids), each atomically."""
        save_vectorizer(self.vectorizer, vectorizer_path)
        tokenizer = "restem" if self.vectorizer.tokenizer == self.restemmer.restem else "final_stems"
        tags_by_id = sorted(self._tag_ids, key=self._tag_ids.__getitem__)
        # ids and tag strings packed (a reader maps two arrays instead of parsing 1.2M strings)
        ids_buffer, ids_offsets = PackedStrings.pack(self.ids)
        tags_buffer, tags_offsets = PackedStrings.pack(self.tags)
        index = StringIndex.from_strings(self.ids)
        write_npz(  # aligned: the reader maps the posting lists instead of reading them
            index_path,
            t_ptr=self._index.t_ptr,
            t_doc=self._index.t_doc,
            t_weight=self._index.t_weight,
            sizes=self._index.sizes,
            g_ptr=self._index.g_ptr,
            g_doc=self._index.g_doc,
            ids_buffer=ids_buffer,
            ids_offsets=ids_offsets,
            ids_sorted=index.sorted_keys,
            ids_rank=index.rank,
            tags_buffer=tags_buffer,
            tags_offsets=tags_offsets,
            tag_ids=np.array(json.dumps(tags_by_id, ensure_ascii=False)),
            meta=np.array(json.dumps({"excluded": self.excluded, "tokenizer": tokenizer})),
        )

    @classmethod
    def load(cls, vectorizer_path, index_path, restemmer: Restemmer) -> Retriever:
        """A model written by :meth:`save`, ready to query (nothing is refitted)."""
        with load_npz(index_path) as stored:  # the large arrays memory-mapped, not read
            meta = json.loads(str(stored["meta"]))
            tokenizer = restemmer.tokenizer("restem" if meta["tokenizer"] == "restem" else "final_stems")
            index = kernels.postings_of(
                *(stored[name] for name in ("t_ptr", "t_doc", "t_weight", "g_ptr", "g_doc", "sizes"))
            )
            return cls(
                load_vectorizer(vectorizer_path, tokenizer),
                restemmer,
                PackedStrings(stored["ids_buffer"], stored["ids_offsets"]),
                PackedStrings(stored["tags_buffer"], stored["tags_offsets"]),
                int(meta["excluded"]),
                {tag: i for i, tag in enumerate(json.loads(str(stored["tag_ids"])))},
                index,
                StringIndex(stored["ids_sorted"], stored["ids_rank"]),
            )

    def position(self, passage_id: str) -> int | None:
        """Frame position of a retrievable passage (None for one without tags)."""
        if self._positions is None:
            self._positions = StringIndex.from_strings(self.ids)
        return self._positions.position(passage_id)

    def __len__(self) -> int:
        return len(self.ids)

    # -- one claim -----------------------------------------------------------------------------

    def query(self, claim: str | Query, restemmed: list[str] | None = None) -> Query:
        """A claim string as this model reads it (:class:`Query`), once. ``restemmed``: its tokens
        stemmed again, when the caller has them (:meth:`claimtrace.pipeline.tagging.Restemmer.restem_tags`)."""
        if isinstance(claim, Query):
            return claim
        if not isinstance(claim, str):
            raise TypeError(f"a claim is a string of tags (or text), got {type(claim).__name__}")
        if restemmed is None:
            # The quirk "stems of stems": the tag string is preprocessed again, whole, by the
            # retrieval vectorizer's tokenizer (the claim's tags are stems already).
            restemmed = self.restemmer.preprocessor.final_stems(claim.lower())
        terms, weights = self._vector(restemmed)
        claim_tags = set(claim.split())
        tag_ids = np.array(sorted(self._tag_ids[t] for t in claim_tags if t in self._tag_ids), dtype=np.int64)
        return Query(claim, restemmed, terms, weights, tag_ids, len(claim_tags))

    def _vector(self, tokens: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The terms in the order scikit-learn stores them (descending) and their twice-normalised
        weights: ``normalize(vectorizer.transform([claim]))`` of a claim of these tokens."""
        counts: dict[int, int] = {}
        for token in tokens:
            column = self.vocabulary.get(token)
            if column is not None:
                counts[column] = counts.get(column, 0) + 1
        columns = np.array(sorted(counts), dtype=np.int64)
        values = np.array([counts[c] for c in columns.tolist()], np.float64)
        out = np.empty_like(values)
        kernels.weights_kernel(np.array([0, len(columns)], np.int64), columns, values, self.idf, out)
        return columns[::-1].copy(), out[::-1].copy()

    def passage_tags(self, position: int | None) -> list[str]:
        """The tags of the passage at ``position`` of the fitted model (none for ``None``: a
        passage the model left out, having no tags)."""
        return [] if position is None else self.tags[position].split()

    def passage_vector(self, position: int | None) -> tuple[np.ndarray, np.ndarray]:
        """The terms (ascending columns) and twice-normalised weights of the passage at
        ``position``: its row of the weights the model was fitted with (:meth:`fit`), made by
        the same vectorizer and :func:`kernels.notebook_weights`.

        Returns
        -------
        columns : ndarray of int, shape (terms,)
        weights : ndarray of float64, shape (terms,)
        """
        row = kernels.notebook_weights(self.vectorizer.counts([" ".join(self.passage_tags(position))]), self.idf)
        return row.indices, row.data

    def scratch(self) -> _Scratch:
        """Work arrays for one claim at a time (see :class:`_Scratch`)."""
        return _Scratch.of_size(len(self.ids), int(self._index.sizes.max()))

    def _rules(self, cosine_in_score: int, thresholds: Thresholds | None = None) -> Rules:
        if cosine_in_score not in (1, 2):
            raise ValueError(f"cosine_in_score must be 1 or 2, got {cosine_in_score}")
        t = NOTEBOOK_THRESHOLDS if thresholds is None else thresholds
        return Rules(cosine_in_score, constants.NO_TAGS_OVERLAP, t.cosine, t.overlap, t.score)

    def _passing_room(self, query: Query) -> int:
        """At most how many rows can pass the filter: the claim's postings, one passage each."""
        postings = sum(int(self._index.t_ptr[t + 1] - self._index.t_ptr[t]) for t in query.terms.tolist())
        postings += sum(int(self._index.g_ptr[t + 1] - self._index.g_ptr[t]) for t in query.tag_ids.tolist())
        return min(postings, len(self.ids))

    def _rows(
        self,
        query: Query,
        cosine_in_score: int,
        full: bool = False,
        scratch: _Scratch | None = None,
        thresholds: Thresholds | None = None,
    ) -> _Rows:
        rules = self._rules(cosine_in_score, thresholds)
        s = scratch if scratch is not None else self.scratch()
        n = len(self.ids)
        m = n if full else 0
        touched = Columns(s.position, np.empty(m), np.empty(m), s.score, np.empty(m, np.int64))
        found = Found(touched, Columns.empty(self._passing_room(query)), full, np.zeros(2, np.int64))
        # A claim without tags: the notebook's ZeroDivisionError, here overlap NO_TAGS_OVERLAP.
        kernels.claim_kernel(query.arrays(), self._index, n, rules, s.block, found)
        rows, passed = found.counts.tolist()
        return _Rows(found.touched.head(rows), found.passing.head(passed))

    @staticmethod
    def _columns(rows: _Rows) -> Scores:
        touched = rows.touched
        passing = np.isin(touched.position, rows.passing.position)
        return Scores(
            touched.position.copy(), touched.cosine, touched.overlap, touched.score.copy(), touched.shared, passing
        )

    def scores(self, claim: str | Query, cosine_in_score: int = COSINE_WEIGHT_IN_SCORE) -> Scores:
        """The non-zero rows of the notebook's columns for one claim string (:class:`Scores`):
        positions ascending (frame order); every other passage has cosine 0, overlap 0, score 0,
        shared 0 (and does not pass)."""
        return self._columns(self._rows(self.query(claim), cosine_in_score, full=True))

    def _point_rows(self, query: Query, positions: np.ndarray, cosine_in_score: int) -> Columns:
        """The columns of the passages at ``positions`` (int64) for one claim."""
        out = Columns.empty(len(positions))._replace(position=positions)
        kernels.point_kernel(query.arrays(), self._index, self._rules(cosine_in_score), out)
        return out

    def point_columns(self, claim: str | Query, positions, cosine_in_score: int = COSINE_WEIGHT_IN_SCORE):
        """(cosine, overlap, score, shared) of the passages at ``positions`` for one claim."""
        out = self._point_rows(self.query(claim), np.asarray(positions, np.int64), cosine_in_score)
        return out.cosine, out.overlap, out.score, out.shared

    def retrieve(
        self,
        claim: str | Query,
        cosine_in_score: int = COSINE_WEIGHT_IN_SCORE,
        k: int = MAX_EVIDENCES,
        scratch: _Scratch | None = None,
        thresholds: Thresholds | None = None,
    ) -> Retrieval:
        """``find_top_evidence(claim, ...)`` for one claim string (its tags, or raw text).
        ``thresholds``: the query's three bounds (None: the notebook's, :data:`NOTEBOOK_THRESHOLDS`)."""
        query = self.query(claim)
        rows = self._rows(query, cosine_in_score, scratch=scratch, thresholds=thresholds)
        return self._retrieval(query, rows, cosine_in_score, k)

    def retrieve_with_scores(
        self, claim: str | Query, cosine_in_score: int = COSINE_WEIGHT_IN_SCORE, k: int = MAX_EVIDENCES
    ) -> tuple[Retrieval, Scores]:
        """:meth:`retrieve` and :meth:`scores` of one claim from one kernel pass."""
        query = self.query(claim)
        rows = self._rows(query, cosine_in_score, full=True)
        return self._retrieval(query, rows, cosine_in_score, k), self._columns(rows)

    def _retrieval(self, query: Query, rows: _Rows, cosine_in_score: int, k: int) -> Retrieval:
        passing = rows.passing
        passed = len(passing.position)
        if passed:
            kept = passing.take(notebook_order(passing.cosine, passing.overlap, passing.score, passing.shared))
            evidences = kept.position[:k]
        else:
            evidences = fallback_six(rows.touched.position, rows.touched.score, len(self.ids), k)
            kept = self._point_rows(query, evidences, cosine_in_score)
        return Retrieval(
            claim=query.text,
            evidences=[int(p) for p in evidences],
            fallback=passed == 0,
            passed=passed,
            kept=[int(p) for p in kept.position],
            cosine=kept.cosine,
            overlap=kept.overlap,
            score=kept.score,
            shared=kept.shared,
            touched=len(rows.touched.position),
        )

    def as_record(self, claim_id: str, result: Retrieval, gold: Iterable[str] = ()) -> dict:
        """The JSON-serialisable record of :func:`retrieve_all`."""
        gold_set = set(gold)
        kept = []
        for i, p in enumerate(result.kept):
            kept.append(
                {
                    "id": self.ids[p],
                    "cosine": float(result.cosine[i]),
                    "overlap": float(result.overlap[i]),
                    "score": float(result.score[i]),
                    "shared": int(result.shared[i]),
                    "gold": self.ids[p] in gold_set,
                }
            )
        return {
            "claim_id": claim_id,
            "tags": result.claim,
            "evidences": [self.ids[p] for p in result.evidences],
            "fallback": result.fallback,
            "passed": result.passed,
            "kept": kept,
        }


# --- whole splits ---------------------------------------------------------------------------------


def retrieve_all(retriever: Retriever, claims: Mapping[str, Claim], variant: str | Variant = "notebook") -> list[dict]:
    """Retrieve evidence for every claim, in the claims' order, with a fitted retriever.

    retriever: fit on the passage tags the variant reads (the padded tags, or for
    ``unpadded-tags`` the tagging stage's ``nopad``).
    variant: a name of :data:`VARIANTS` or a :class:`Variant`.

    Returns per claim ``{"claim_id", "tags", "evidences", "fallback", "passed", "kept"}``, where
    ``tags`` is the string the claim was retrieved with, ``evidences`` at most six passage ids in
    order, ``passed`` how many passages passed the filter, and ``kept`` the rows that survived the
    filter and the shared-tags cut before ``head(6)`` (or the fallback six), each
    ``{"id", "cosine", "overlap", "score", "shared", "gold"}``.
    """
    v = as_variant(variant)
    out = []
    scratch = retriever.scratch()  # one claim after another: the work arrays are reused
    for claim_id, claim in claims.items():
        text = claim_input(claim.text, retriever.restemmer.preprocessor, v)
        result = retriever.retrieve(text, cosine_in_score=v.cosine_in_score, scratch=scratch)
        out.append(retriever.as_record(claim_id, result, claim.evidences))
    return out
