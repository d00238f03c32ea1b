"""claimtrace.pipeline.tfidf: the notebook's TfidfVectorizer, fitted and refusing as scikit-learn
1.2.2 does."""

from __future__ import annotations

import numpy as np
import pytest

from claimtrace.constants import RETRIEVAL_VECTORIZER


@pytest.fixture(scope="module")
def demo_tags(demo_tagged):
    """Passage ids, padded and unpadded tag strings of the demo build, in the canonical order."""
    rows = list(demo_tagged.iter_tags())
    return ([r["id"] for r in rows], [" ".join(r["tags"]) for r in rows], [" ".join(r["nopad"]) for r in rows])


def test_fit_counts_is_fit_then_counts(demo_tags, demo_tagged):
    """The retriever fits and counts its tags in one tokenising pass: the same vocabulary, idf
    and counts as fitting, then counting (small batches, so that several are kept)."""
    from claimtrace.pipeline.tfidf import NotebookTfidf

    restem = demo_tagged.restemmer.restem

    _, padded, _ = demo_tags
    kept = [s for s in padded if s.split()]
    once = NotebookTfidf(tokenizer=restem, batch_size=700, **RETRIEVAL_VECTORIZER)
    counts = once.fit_counts(kept)
    twice = NotebookTfidf(tokenizer=restem, batch_size=700, **RETRIEVAL_VECTORIZER).fit(kept)
    assert once.vocabulary_ == twice.vocabulary_ and np.array_equal(once.idf_, twice.idf_)
    expected = twice.counts(kept)
    assert (counts != expected).nnz == 0 and np.array_equal(counts.indptr, expected.indptr)


def test_tfidf_refuses_as_scikit_learn_does_in_its_order():
    from claimtrace.pipeline.tfidf import CannotFit, NotebookTfidf

    def fit(docs, **params):
        return NotebookTfidf(tokenizer=str.split, **params).fit(docs)

    with pytest.raises(CannotFit, match="^empty vocabulary"):
        fit(["", " "], max_df=0.5, min_df=3)  # before the df check, as scikit-learn
    with pytest.raises(CannotFit, match="^max_df corresponds to < documents than min_df$"):
        fit(["a b", "a c", "b c", "a"], max_df=0.5, min_df=3)
    with pytest.raises(CannotFit, match="^After pruning, no terms remain"):
        fit(["a", "a", "a", "a", "b", "c"], max_df=0.5, min_df=3)  # df(a) = 4 > 3, b and c < 3
    assert len(fit(["a", "a", "a", "b", "c", "d"], max_df=0.5, min_df=3).vocabulary_) == 1  # 3 <= 3.0
    empty = NotebookTfidf(tokenizer=str.split, max_df=0.5, min_df=3, empty_when_unfittable=True).fit(["a b", "a"])
    assert empty.cannot_fit_ == "max_df corresponds to < documents than min_df" and empty.vocabulary_ == {}
    assert empty.transform(["a b"]).shape == (1, 0)


def test_merging_count_tables_lets_go_of_them_and_adds_their_counts():
    """The fit's merge owns the tables it is given: it empties the list and each table's columns
    as it copies them (so that the inputs are freed while it works: the tagging fit's peak over a
    course-scale corpus), and gives sorted unique keys with their counts added."""
    from claimtrace.pipeline.tfidf import _merge_tables

    generator = np.random.default_rng(7)
    tables = []
    for _ in range(4):
        keys = np.unique(generator.integers(0, 50, size=30))
        tables.append([keys, generator.integers(1, 9, size=len(keys)), generator.integers(1, 4, size=len(keys))])
    held = list(tables)
    expected: dict[int, list[int]] = {}
    for keys, tf, df in tables:
        for key, t, d in zip(keys.tolist(), tf.tolist(), df.tolist(), strict=True):
            expected.setdefault(key, [0, 0])
            expected[key][0] += t
            expected[key][1] += d
    keys, tf, df = _merge_tables(tables)
    assert tables == [] and all(column is None for table in held for column in table)
    assert keys.tolist() == sorted(expected)
    assert tf.tolist() == [expected[k][0] for k in sorted(expected)]
    assert df.tolist() == [expected[k][1] for k in sorted(expected)]
    assert keys.dtype == tf.dtype == df.dtype == np.int64
