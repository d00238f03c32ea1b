"""The tagging stage: the 20,000-feature vectorizer and passage tags, equal to the notebook's
calls (scikit-learn 1.2.2 + numpy 1.24) on the demo corpus."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from claimtrace.data import files as data
from claimtrace.pipeline import tagging


@pytest.fixture(scope="module")
def corpus(data_dir):
    return data.demo_corpus(data_dir)


@pytest.fixture(scope="module")
def claim_files(data_dir):
    return [data.load_claims(s, data_dir) for s in ("baseline", "dev", "train")]


@pytest.fixture(scope="module")
def oracle_tagging(tmp_path_factory, data_dir, corpus, oracle):
    """The notebook's calls on the demo corpus, run once in the 2024 environment."""
    folder = tmp_path_factory.mktemp("tagging-oracle")
    raw = {
        s: json.loads(data.course_file(data_dir, s).read_text(encoding="utf-8")) for s in ("baseline", "dev", "train")
    }
    ids = list(corpus)
    spec = {"claim_files": [[s, raw[s]] for s in raw], "evidence": corpus, "tag_ids": ids, "weights_for": ids}
    (folder / "spec.json").write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    oracle("tagging_oracle.py", str(folder / "spec.json"), str(folder / "out.npz"))
    with np.load(folder / "out.npz") as out:
        return {key: out[key] for key in out.files}


@pytest.mark.oracle
def test_fit_corpus_equals_the_notebooks(oracle_tagging, claim_files, corpus, preprocessor):
    assert list(tagging.fit_corpus(claim_files, corpus, preprocessor)) == oracle_tagging["fit_docs"].tolist()


@pytest.mark.oracle
def test_vectorizer_equals_scikit_learn_1_2_2(oracle_tagging, demo_tagged):
    vectorizer = demo_tagged.tagging_vectorizer()
    assert vectorizer.n_docs_ == int(oracle_tagging["n_docs"])
    assert vectorizer.feature_names.tolist() == oracle_tagging["feature_names"].tolist()
    np.testing.assert_allclose(vectorizer.idf_, oracle_tagging["idf"], rtol=0, atol=1e-12)
    # The max_features cut fell inside a tie (thousands of terms seen 5 times): the introsort
    # decided which of them were kept, exactly as numpy 1.24 did.
    assert vectorizer.cut_["tied_at_cut"] > vectorizer.cut_["tied_kept"] > 0


@pytest.mark.oracle
def test_weights_equal_term_for_term(oracle_tagging, demo_tagged, corpus, preprocessor):
    vectorizer = demo_tagged.tagging_vectorizer()
    ours = vectorizer.transform(tagging.passage_documents(corpus.values(), preprocessor))
    theirs = sp.csr_matrix(
        (oracle_tagging["rows_data"], oracle_tagging["rows_indices"], oracle_tagging["rows_indptr"]), shape=ours.shape
    )
    assert (ours != 0).nnz == (theirs != 0).nnz
    assert abs(ours - theirs).max() == 0.0  # bit for bit: same products, same summation order


@pytest.mark.oracle
def test_every_passage_tag_equals_the_notebooks(oracle_tagging, demo_tagged, corpus):
    expected = dict(zip(corpus, json.loads(str(oracle_tagging["tags"]))))
    ours = {row["id"]: row["tags"] for row in demo_tagged.iter_tags()}
    assert ours.keys() == expected.keys()
    mismatched = [i for i in ours if ours[i] != expected[i]]
    assert not mismatched, mismatched[:5]


def test_padding_is_visible(demo_tagged):
    rows = list(demo_tagged.iter_tags())
    padded = [r for r in rows if r["tags"] != r["nopad"]]
    assert padded and all(set(r["nopad"]) < set(r["tags"]) for r in padded)


def test_restem_equals_preprocessing_on_every_build_document(claim_files, corpus, preprocessor):
    docs = list(tagging.fit_corpus(claim_files, corpus, preprocessor))
    docs += tagging.passage_documents(corpus.values(), preprocessor)
    restem = tagging.Restemmer(preprocessor).restem
    assert [restem(d) for d in docs] == [preprocessor.final_stems(d) for d in docs]


def test_the_builds_table_holds_every_passage_and_tag_token(demo_tagged, corpus, preprocessor):
    """tagging/restemmed.npz holds each token of the passages' stems and of the tags, each as
    the token preprocessed alone: a reader's restemmer finds them all without preprocessing."""
    table = tagging.RestemTable.load(demo_tagged.work.restemmed)
    tokens = {t for text in tagging.passage_documents(corpus.values(), preprocessor) for t in text.split()}
    tokens |= {t for row in demo_tagged.iter_tags() for t in row["tags"]}
    assert tokens <= set(table.tokens) and list(table.tokens) == sorted(table.tokens)
    assert all(table.get(t) == preprocessor.final_stems(t) for t in table.tokens)
    assert table.get("no such token") is None and table.get("") is None


def test_a_restemmer_with_a_table_preprocesses_only_what_the_table_lacks(tmp_path, preprocessor, monkeypatch):
    table = tagging.RestemTable.of_tokens(["increas", "warm", "zz"], preprocessor.final_stems)
    table.save(tmp_path / "restemmed.npz")
    loaded = tagging.RestemTable.load(tmp_path / "restemmed.npz")
    assert list(loaded.tokens) == ["increas", "warm", "zz"] and loaded.get("increas") == ["increa"]
    restemmer = tagging.Restemmer(preprocessor, loaded)
    seen = []
    monkeypatch.setattr(preprocessor, "final_stems", lambda text: seen.append(text) or ["x"])
    assert restemmer.restem("warm increas zz warm") == ["warm", "increa", "zz", "warm"] and seen == []
    assert restemmer.restem("warm glacier glacier") == ["warm", "x", "x"] and seen == ["glacier"]


def test_a_restemmer_forgets_past_its_bound(preprocessor):
    restemmer = tagging.Restemmer(preprocessor, cache_words=2)
    text = "increas warm glacier melt increas"
    assert restemmer.restem(text) == preprocessor.final_stems(text)
    assert len(restemmer._terms) <= 2


_word = st.one_of(
    st.sampled_from(
        [
            "r",
            "cause",
            "causes",
            "will",
            "to",
            "gonna",
            "ain",
            "ima",
            "sɪˈljʊər",
            "ən",
            "é",
            "zürich",
            "محمد",
            "wont",
            "im",
            "ya",
            "u",
        ]
    ),
    st.text(alphabet="abcdrstuéəʊ", min_size=1, max_size=6),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_word, max_size=12))
def test_restem_equals_preprocessing_on_token_sequences(preprocessor, words):
    text = " ".join(preprocessor.preprocess(" ".join(words), keep_stopwords=True).stems)
    assert tagging.Restemmer(preprocessor).restem(text) == preprocessor.final_stems(text)


def test_leading_space_changes_nothing(corpus, preprocessor):
    preprocess = preprocessor.preprocess
    for text in list(corpus.values())[:2000]:
        assert preprocess(" " + text, keep_stopwords=True).stems == preprocess(text, keep_stopwords=True).stems


@pytest.mark.oracle
def test_canonical_order_is_pandas_sample(oracle):
    sizes = (0, 1, 7, 5240)
    expected = json.loads(oracle("order_oracle.py", *map(str, sizes)))  # one run for all
    assert len(expected) == len(sizes)
    for n, order in zip(sizes, expected):
        assert tagging.canonical_order(n).tolist() == order, n


def test_zero_weight_padding_example():
    names = np.array(["aa", "bb cc", "dd", "zz"], dtype=object)
    rows = sp.csr_matrix(np.array([[0.0, 0.6, 0.8, 0.0]]))
    tagged = tagging.tag_rows(rows, names, k=3)[0]
    assert tagged.top[:2] == [2, 1] and tagged.weights[2] == 0.0
    assert tagged.nopad == ["dd"] and set(tagged.tags) >= {"dd"}
