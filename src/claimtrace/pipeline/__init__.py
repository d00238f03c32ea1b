"""Stages 1 to 4 of the notebook, what each computes: the preprocessing (``preprocess``),
scikit-learn 1.2.2's TfidfVectorizer re-implemented (``tfidf``), the passages' tags
(``tagging``), the tag retrieval (``retrieval``), and BM25, the standard retriever each quirk is
measured against (``bm25``; its tokens, ``bm25_tokens``).

May import: the facts, ``lib`` and ``data``. Never a score: scoring a stage's output is
``evaluation``'s job.
"""
