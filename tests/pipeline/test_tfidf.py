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
