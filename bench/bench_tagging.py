"""Per-passage tagging: the notebook-style path against ours, in one run, on the same passages.

Notebook style (notebook.md section 3), per passage: preprocess, scikit-learn's
``TfidfVectorizer.transform`` of that one passage (which preprocesses again), the dense row of
20,000 weights, ``np.argsort(row)[-10:][::-1]``, feature names, alphabetic ones as a set.
Ours: batch transform with the cached second pass, numpy 1.24's introsort simulated on the
sparse row (claimtrace.lib.npsort.top_k_rows), names. Both single-threaded.

    python bench/bench_tagging.py --workdir work/syn/b100k --evidence work/syn/evidence-100k.json [--passages 2000]

The workdir must hold a tagging build of that evidence file (``claimtrace build --evidence``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from sklearn.feature_extraction.text import TfidfVectorizer  # noqa: E402

from claimtrace.data.files import find_data_dir  # noqa: E402
from claimtrace.lib.npsort import top_k_rows  # noqa: E402
from claimtrace.pipeline import tagging, tfidf  # noqa: E402
from claimtrace.pipeline.preprocess import Preprocessor  # noqa: E402
from claimtrace.pipeline.tagging import Restemmer  # noqa: E402
from claimtrace.workdir.builder import Workdir  # noqa: E402


def notebook_vectorizer(ours: tfidf.NotebookTfidf, preprocessor: Preprocessor) -> TfidfVectorizer:
    """scikit-learn's vectorizer carrying our fitted vocabulary and idf (same weights)."""
    sk = TfidfVectorizer(
        tokenizer=preprocessor.final_stems,
        ngram_range=(1, 3),
        token_pattern=None,
        vocabulary={t: i for i, t in enumerate(ours.feature_names.tolist())},
    )
    sk.fit(["x"])
    sk.idf_ = ours.idf_
    return sk


def notebook_style(
    sk: TfidfVectorizer, names: np.ndarray, texts: list[str], preprocessor: Preprocessor
) -> tuple[list, float, float]:
    tags, select_seconds = [], 0.0
    started = time.perf_counter()
    for text in texts:
        row = sk.transform([" ".join(preprocessor.preprocess(text).stems)]).toarray()[0]
        t0 = time.perf_counter()
        top = np.argsort(row)[-10:][::-1]
        select_seconds += time.perf_counter() - t0
        tags.append(sorted({names[i] for i in top if names[i].isalpha()}))
    return tags, time.perf_counter() - started, select_seconds


def ours_path(
    vectorizer: tfidf.NotebookTfidf, texts: list[str], preprocessor: Preprocessor
) -> tuple[list, float, float]:
    started = time.perf_counter()
    rows = vectorizer.transform(tagging.passage_documents(texts, preprocessor))
    t0 = time.perf_counter()
    top_k_rows(rows, 10)
    select_seconds = time.perf_counter() - t0
    tags = [t.tags for t in tagging.tag_rows(rows, vectorizer.feature_names)]
    return tags, time.perf_counter() - started, select_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--evidence", required=True)
    parser.add_argument("--passages", type=int, default=2000)
    args = parser.parse_args()
    work = Workdir(args.workdir)
    preprocessor = Preprocessor.of_data_dir(find_data_dir())
    restemmer = Restemmer(preprocessor)
    vectorizer = tfidf.load(work.vectorizer, restemmer.restem)
    with open(args.evidence, encoding="utf-8") as handle:
        evidence = json.load(handle)
    # passages from the middle of the file: the second-pass cache is warmed elsewhere
    texts = list(itertools.islice(evidence.values(), 50_000, 50_000 + args.passages))
    warm = list(itertools.islice(evidence.values(), 0, 20_000))
    ours_path(vectorizer, warm[:200], preprocessor)  # compile the kernels
    for text in warm:  # a build has seen every token by the time it tags; so does this run
        restemmer.restem(" ".join(preprocessor.preprocess(text).stems))

    sk = notebook_vectorizer(vectorizer, preprocessor)
    theirs, their_total, their_select = notebook_style(sk, vectorizer.feature_names, texts, preprocessor)
    ours, our_total, our_select = ours_path(vectorizer, texts, preprocessor)
    n = len(texts)
    print(
        json.dumps(
            {
                "passages": n,
                # numpy 2's argsort orders ties differently from numpy 1.24: the notebook-style path run
                # today does NOT reproduce the notebook's tags; ours does (tests prove it).
                "passages_whose_tags_differ_under_todays_numpy": sum(a != b for a, b in zip(ours, theirs)),
                "notebook_select_us": their_select / n * 1e6,
                "ours_select_us": our_select / n * 1e6,
                "select_ratio": their_select / our_select,
                "notebook_whole_us": their_total / n * 1e6,
                "ours_whole_us": our_total / n * 1e6,
                "whole_ratio": their_total / our_total,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
