"""BM25, the reference retriever: its top six equal a plain-Python BM25's (same ids, same order,
same scores to the bit), over small random corpora full of ties; a chunked, parallel or
killed-and-resumed build equals a one-shot one; save and load round-trip; edge cases are defined."""

from __future__ import annotations

import math
import re
from collections import Counter
from unittest import mock

import bm25s
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from claimtrace.errors import DataError
from claimtrace.pipeline import bm25
from claimtrace.pipeline.preprocess import stem, stopwords

# --- the slow reference ---------------------------------------------------------------------------


def reference_search(passages: list[tuple[str, str]], claim: str, k: int) -> tuple[list[str], list[float]]:
    """BM25 (Lucene's variant) with plain loops: every passage scored against the claim's tokens
    in order, sorted by (score desc, corpus position asc), positive scores only, top k."""
    assert bm25.PARAMS["method"] == "lucene"
    k1, b = bm25.PARAMS["k1"], bm25.PARAMS["b"]
    docs = [bm25.tokenize(text) for _, text in passages]
    n = len(docs)
    avg_len = sum(len(d) for d in docs) / n
    df = Counter(term for d in docs for term in set(d))
    ranked = []
    for position, d in enumerate(docs):
        tf = Counter(d)
        score, hit = 0.0, False
        for term in bm25.tokenize(claim):
            if tf[term]:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                score += idf * (tf[term] / (tf[term] + k1 * (1 - b + b * len(d) / avg_len)))
                hit = True
        if hit:
            ranked.append((-score, position))
    ranked.sort()
    top = ranked[:k]
    return [passages[p][0] for _, p in top], [-s for s, _ in top]


def _arrays(index: bm25.BM25Index) -> tuple:
    s = index.model.scores
    return (
        np.asarray(s["data"]),
        np.asarray(s["indices"]),
        np.asarray(s["indptr"]),
        s["num_docs"],
        index.model.vocab_dict,
        index.ids,
    )


def assert_same_index(a: bm25.BM25Index, b: bm25.BM25Index) -> None:
    data_a, indices_a, indptr_a, n_a, vocab_a, ids_a = _arrays(a)
    data_b, indices_b, indptr_b, n_b, vocab_b, ids_b = _arrays(b)
    assert (n_a, ids_a) == (n_b, ids_b)
    assert list(vocab_a.items()) == list(vocab_b.items())
    for x, y in ((data_a, data_b), (indices_a, indices_b), (indptr_a, indptr_b)):
        assert x.dtype == y.dtype and np.array_equal(x, y)


# --- generated corpora: few words, so stems collide and scores tie ---------------------------------

# Stopwords, stems shared by several words, a number, a one-letter word, case and punctuation.
WORDS = [
    "the",
    "of",
    "is",
    "Ocean",
    "oceans",
    "ocean's",
    "warming",
    "warm",
    "warmed",
    "ice",
    "ICE",
    "sheet",
    "sheets",
    "CO2",
    "2019",
    "a",
    "sea-level",
    "rise",
    "rising",
    "melt",
    "Melting",
    "été",
]

texts = st.lists(st.sampled_from(WORDS), max_size=9).map(" ".join)


@st.composite
def corpora(draw):
    """(passages, claims, k): passages drawn from a few distinct texts, so many are equal."""
    distinct = draw(st.lists(texts, min_size=1, max_size=6))
    chosen = draw(st.lists(st.sampled_from(distinct), min_size=1, max_size=25))
    passages = [(f"p{i}", text) for i, text in enumerate(chosen)]
    claims = draw(st.lists(texts, min_size=1, max_size=4))
    return passages, claims, draw(st.integers(0, 8)), draw(st.sampled_from([1, 2, 3, 7, bm25.BLOCK]))


# --- tokens -----------------------------------------------------------------------------------------


def test_tokenize_examples():
    assert bm25.tokenize("The oceans are WARMING, aren't they? CO2 in 2019: a b") == ["ocean", "warm", "co2", "2019"]
    assert bm25.tokenize("") == [] and bm25.tokenize("the of and") == []


def test_the_word_table_is_kept_by_what_tokenises_not_by_the_module():
    """A word table given is read and filled (a build's, across its passages); without one,
    nothing is kept from one text to the next (a server's typed claims grow no table)."""
    from claimtrace.pipeline import bm25_tokens

    words = bm25_tokens.WordTable()
    assert (
        bm25.tokenize("The oceans are warming", words) == bm25.tokenize("The oceans are warming") == ["ocean", "warm"]
    )
    assert words == {"the": "", "oceans": "ocean", "are": "", "warming": "warm"}
    assert bm25.tokenize_chunk([("a", "oceans warming")], words)["vocab"].tolist() == ["ocean", "warm"]
    assert not [value for value in vars(bm25_tokens).values() if isinstance(value, dict) and "oceans" in value]


@given(st.text(max_size=60) | texts)
@settings(max_examples=300, deadline=None)
def test_tokenize_is_lowercase_words_minus_stopwords_stemmed(text):
    """The word table changes nothing: the same tokens as the plain steps, with preprocess's
    stopword list and stemmer."""
    drop = stopwords()
    assert bm25.tokenize(text) == [stem(w) for w in re.findall(r"\w\w+", text.lower()) if w not in drop]


# --- search against the reference -----------------------------------------------------------------


@given(corpora())
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_search_equals_plain_python_bm25(case):
    passages, claims, k, block = case
    with mock.patch.object(bm25, "BLOCK", block):  # the search kernel's blocks: one passage to all
        index = bm25.BM25Index.from_passages(passages)
        ids, scores = index.search(claims, k=k)
    for claim, got_ids, got_scores in zip(claims, ids, scores):
        want_ids, want_scores = reference_search(passages, claim, k)
        assert got_ids == want_ids, claim
        assert got_scores.dtype == np.float64
        assert got_scores.tolist() == want_scores, claim  # exact: same formula, same additions


def test_ties_go_to_the_earlier_passage():
    passages = [("a", "sea ice melt"), ("b", "ocean"), ("c", "sea ice melt"), ("d", "sea ice melt"), ("e", "ice")]
    ids, scores = bm25.BM25Index.from_passages(passages).search(["melting sea ice"], k=2)
    assert ids == [["a", "c"]] and scores[0][0] == scores[0][1]


def test_bigger_corpus_equals_reference():
    """A few hundred passages with a wider vocabulary, every claim checked, k = 6."""
    rng = np.random.default_rng(7)
    vocabulary = [f"w{i}" for i in range(60)] + ["the", "warming", "warms", "oceans"]
    weights = 1.0 / np.arange(1, len(vocabulary) + 1)
    weights /= weights.sum()
    passages = [
        (f"evidence-{i}", " ".join(rng.choice(vocabulary, size=rng.integers(0, 25), p=weights))) for i in range(300)
    ]
    claims = [" ".join(rng.choice(vocabulary, size=rng.integers(1, 8))) for _ in range(40)]
    for block in (16, 100, bm25.BLOCK):
        with mock.patch.object(bm25, "BLOCK", block):
            ids, scores = bm25.BM25Index.from_passages(passages).search(claims)
        for claim, got_ids, got_scores in zip(claims, ids, scores):
            assert (got_ids, got_scores.tolist()) == reference_search(passages, claim, 6)


@given(corpora())
@settings(max_examples=100, deadline=None)
def test_counts_index_is_bm25s_index(case):
    """Our array-based indexing gives bm25s's own ``index`` matrix, bit for bit."""
    passages = case[0]
    chunk = bm25.tokenize_chunk(passages)
    ours = bm25.BM25Index.from_chunk(chunk)
    vocab = {term: i for i, term in enumerate(chunk["vocab"].tolist())}
    tokens = [[vocab[t] for t in bm25.tokenize(text)] for _, text in passages]
    stock = bm25s.BM25(**bm25.PARAMS)
    with np.errstate(invalid="ignore", divide="ignore"):  # bm25s on all-empty passages divides 0 by 0
        stock.index((tokens, dict(vocab)), create_empty_token=False, show_progress=False)
    for key in ("data", "indices", "indptr"):
        assert np.array_equal(ours.model.scores[key], stock.scores[key]), key
        assert ours.model.scores[key].dtype == stock.scores[key].dtype
    assert ours.model.scores["num_docs"] == stock.scores["num_docs"]


# --- edge cases -------------------------------------------------------------------------------------


def test_empty_and_unknown_claims_get_nothing():
    index = bm25.BM25Index.from_passages([("a", "ocean warming"), ("b", "ice")])
    ids, scores = index.search(["", "the of and", "zebra", "   "])
    assert ids == [[], [], [], []]
    assert all(s.shape == (0,) and s.dtype == np.float64 for s in scores)
    assert index.search([]) == ([], [])
    ids, _ = index.search(["ocean"], k=0)
    assert ids == [[]]
    with pytest.raises(ValueError):
        index.search(["ocean"], k=-1)


def test_corpus_edge_cases():
    with pytest.raises(ValueError, match="no passages"):
        bm25.BM25Index.from_passages([])
    only_stopwords = bm25.BM25Index.from_passages([("a", "the"), ("b", "")])
    ids, scores = only_stopwords.search(["the ocean"])
    assert ids == [[]] and scores[0].shape == (0,)
    with pytest.raises(TypeError):
        only_stopwords.search("the ocean")


# --- chunked, resumable builds ------------------------------------------------------------------------


def _passages(n: int = 37) -> list[tuple[str, str]]:
    rng = np.random.default_rng(3)
    return [(f"evidence-{i}", " ".join(rng.choice(WORDS, size=rng.integers(0, 10)))) for i in range(n)]


def test_chunked_build_equals_one_shot(tmp_path):
    passages = _passages()
    one_shot = bm25.BM25Index.from_passages(passages)
    chunked = bm25.build_bm25_index(tmp_path / "a", iter(passages), chunk_size=5)
    assert_same_index(chunked, one_shot)
    assert (tmp_path / "a" / "index").is_dir() and not (tmp_path / "a" / "chunks").exists()
    assert_same_index(bm25.build_bm25_index(tmp_path / "a", passages, chunk_size=5), one_shot)  # loads it
    parallel = bm25.build_bm25_index(tmp_path / "b", passages, chunk_size=5, processes=2)
    assert_same_index(parallel, one_shot)


def test_merge_does_not_depend_on_chunk_ends():
    passages = _passages()
    whole = bm25.tokenize_chunk(passages)
    for size in (1, 4, 36):
        merged = bm25.merge_chunks(bm25.tokenize_chunk(passages[i : i + size]) for i in range(0, len(passages), size))
        assert all(np.array_equal(whole[key], merged[key]) for key in whole)


def test_killed_build_resumes(tmp_path, monkeypatch):
    passages = _passages()
    folder = tmp_path / "bm25"
    real = bm25.tokenize_chunk
    calls: list[str] = []

    def dies_on_third_chunk(batch, words):
        if len(calls) == 2:
            raise KeyboardInterrupt("killed")
        calls.append(batch[0][0])
        return real(batch, words)

    monkeypatch.setattr(bm25, "tokenize_chunk", dies_on_third_chunk)
    with pytest.raises(KeyboardInterrupt):
        bm25.build_bm25_index(folder, passages, chunk_size=5)
    assert sorted(p.name for p in (folder / "chunks").iterdir()) == ["00000.npz", "00001.npz"]
    assert not (folder / "index").exists()
    # What a kill during a write leaves: a temporary chunk file and a half-saved index folder.
    (folder / "chunks" / ".00002.npz.abc.tmp").write_bytes(b"half")
    (folder / ".index.xyz.tmp").mkdir()

    calls.clear()
    monkeypatch.setattr(bm25, "tokenize_chunk", lambda batch, words: calls.append(batch[0][0]) or real(batch, words))
    resumed = bm25.build_bm25_index(folder, passages, chunk_size=5)
    assert calls == [f"evidence-{i}" for i in range(10, 37, 5)]  # the two finished chunks were skipped
    assert_same_index(resumed, bm25.build_bm25_index(tmp_path / "whole", passages, chunk_size=5))
    assert sorted(p.name for p in folder.iterdir()) == ["index"]


def test_resume_refuses_another_corpus(tmp_path, monkeypatch):
    passages = _passages()
    folder = tmp_path / "bm25"
    real = bm25.tokenize_chunk
    monkeypatch.setattr(
        bm25,
        "tokenize_chunk",
        lambda batch, words: (_ for _ in ()).throw(KeyboardInterrupt()) if batch[0][0] == "evidence-5" else real(batch),
    )
    with pytest.raises(KeyboardInterrupt):
        bm25.build_bm25_index(folder, passages, chunk_size=5)
    monkeypatch.setattr(bm25, "tokenize_chunk", real)
    with pytest.raises(ValueError, match="other passages"):
        bm25.build_bm25_index(folder, [("x", "ocean")] + passages, chunk_size=5)
    with pytest.raises(ValueError, match="other passages"):
        bm25.build_bm25_index(folder, passages, chunk_size=6)


# --- files --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mmap", [True, False])
def test_save_load_round_trip(tmp_path, mmap):
    passages = _passages()
    index = bm25.BM25Index.from_passages(passages)
    index.save(tmp_path / "index")
    loaded = bm25.BM25Index.load(tmp_path / "index", mmap=mmap)
    assert_same_index(loaded, index)
    claims = ["ocean warming", "melting ice sheets 2019", "", "été"]
    got, want = loaded.search(claims), index.search(claims)
    assert got[0] == want[0] and [s.tolist() for s in got[1]] == [s.tolist() for s in want[1]]
    with pytest.raises(FileExistsError):
        index.save(tmp_path / "index")


def test_load_refuses_what_is_not_this_index(tmp_path):
    with pytest.raises(DataError, match="not a BM25 index"):
        bm25.BM25Index.load(tmp_path)
    bm25.BM25Index.from_passages(_passages()).save(tmp_path / "index")
    meta = tmp_path / "index" / "passages.json"
    meta.write_text(meta.read_text(encoding="utf-8").replace('"k1": 1.2', '"k1": 0.9'), encoding="utf-8")
    with pytest.raises(DataError, match="other parameters"):
        bm25.BM25Index.load(tmp_path / "index")
