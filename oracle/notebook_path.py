"""The notebook's slow path, for the 2024 reference environment (.venv-oracle).

This module makes the same library calls the notebook made (contractions, nltk, pandas 2.0.3,
scikit-learn 1.2.2 with numpy 1.24) so that claimtrace's fast path can be compared with it
result for result. It is written for this project from the notebook's description
(../shared/docs/notebook.md); it imports nothing from claimtrace.

One deliberate difference: nltk.word_tokenize is called with preserve_line=True, since punkt's
trained model is not available offline. tests/pipeline/test_preprocess.py proves that the sentence split
cannot change the tokens once step 3 removed every '.', '?' and '!'.
"""

from __future__ import annotations

import functools
import os
import re
import string
from pathlib import Path

import contractions
import nltk
import numpy as np
import reference_platform
from nltk.corpus import stopwords
from nltk.stem import PorterStemmer
from nltk.tokenize import word_tokenize

reference_platform.require()  # numpy's generic path on every CPU

DATA = Path(os.environ.get("CLAIMTRACE_DATA") or Path(__file__).resolve().parents[1].parent / "shared" / "data")
nltk.data.path.insert(0, str(DATA / "nltk_data"))

STOP = set(stopwords.words("english"))
STEMMER = PorterStemmer()
PUNCT_RE = re.compile("([" + re.escape(string.punctuation) + "])")


def notebook_preprocess(text, keep_stopwords=False):
    """The notebook's final preprocessing function (keep_stopwords=False) or its older variant.

    A fresh list each call from a memo by text (and the stemmer's by word): the function is pure,
    and the tagging oracle preprocesses each passage several times, as the notebook did (the
    fit, its tags' transform, the stems of those stems)."""
    return list(_preprocessed(text, keep_stopwords))


@functools.cache
def _preprocessed(text, keep_stopwords):
    try:
        text = contractions.fix(text)
    except IndexError:
        pass
    text = text.lower()
    # pad every ASCII punctuation mark with spaces, then delete the marks
    text = PUNCT_RE.sub(r" \1 ", text)
    text = text.translate(str.maketrans("", "", string.punctuation))
    tokens = word_tokenize(text, preserve_line=True)
    if keep_stopwords:
        kept = [t for t in tokens if t.isalpha()]
    else:
        kept = [t for t in tokens if t not in STOP and t.isalpha()]
    return tuple(_stem(t) for t in kept)


#: PorterStemmer.stem, a pure function of its word, memoised: most of the oracle's time was the
#: stemmer's rules applied again to words it had seen.
_stem = functools.cache(STEMMER.stem)


def tagging_vectorizer():
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(
        tokenizer=notebook_preprocess,
        max_df=0.5,
        min_df=5,
        max_features=20000,
        ngram_range=(1, 3),
        use_idf=True,
        norm="l2",
    )


def fit_corpus_frame(claim_files, evidence):
    """The tagging vectorizer's fit corpus as the notebook assembled it, with pandas.

    claim_files: [(name, {claim_id: {claim_text, evidences}})] in the notebook's order
    (baseline, dev, train). evidence: {id: text} in evidence.json order.
    """
    import pandas as pd

    passages = pd.DataFrame({"evidence_id": list(evidence), "evidence_text": list(evidence.values())})
    passages = passages.drop_duplicates(subset="evidence_text", keep="first")
    frames = []
    for _, claims in claim_files:
        frame = pd.DataFrame(
            {
                "claim_id": list(claims),
                "claim_text": [c["claim_text"] for c in claims.values()],
                "evidences": [c.get("evidences", []) for c in claims.values()],
            }
        )
        frame = frame.explode("evidences").rename(columns={"evidences": "evidence_id"})
        frame = frame.merge(passages, on="evidence_id", how="left")
        frames.append(frame[["claim_text", "evidence_text"]])
    frames.append(passages.assign(claim_text="")[["claim_text", "evidence_text"]])
    corpus = pd.concat(frames, ignore_index=True).fillna("")
    text = corpus["claim_text"] + " " + corpus["evidence_text"]
    return text.map(lambda doc: " ".join(notebook_preprocess(doc, keep_stopwords=True)))


def passage_tags(vectorizer, texts):
    """Each passage's tags as the notebook made them: dense row, argsort, top ten, alphabetic."""
    names = vectorizer.get_feature_names_out()
    out = []
    for text in texts:
        row = vectorizer.transform([" ".join(notebook_preprocess(text))]).toarray()[0]
        top = np.argsort(row)[-10:][::-1]
        out.append(sorted({names[i] for i in top if names[i].isalpha()}))
    return out
