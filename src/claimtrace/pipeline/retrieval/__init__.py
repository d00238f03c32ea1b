"""Stage 3, retrieval: the second TF-IDF model over passage tags, and the notebook's scoring,
filter, sorts and cut, exactly (notebook.md section 4).

What the notebook did (cells ``v0lvNHEgdhvq``, ``6a3krRq1PlTG`` and ``aH73ZZERIdNa`` of
COMP90042_Wed5PM_Group1.ipynb), and how this package reproduces it:

* ``processed_evidence_df = pd.read_csv(...).dropna(subset=['evidence_tags'])``: passages whose
  tag string is empty, or one of pandas' NA strings ("nan", "null", ...), are dropped (quirk
  "CSV NA tags", :data:`constants.CSV_NA_TAGS`). The rest keep the canonical passage order.
* ``TfidfVectorizer(tokenizer=preprocess_and_tokenize, max_df=0.5, min_df=3, max_features=1000)``
  fit on those tag strings (so tags are stemmed once more on the way in), re-implemented by
  :class:`claimtrace.pipeline.tfidf.NotebookTfidf` (max_features ties cut by numpy 1.24's introsort).
* ``find_top_evidence(claim_tags, ...)``, per claim and over every passage:

  - ``cosine_similarity(vectorizer.transform([claim_tags]), evidence_tfidf)``: both sides are
    l2-normalised a second time and multiplied with scipy's sparse product. The values are
    reproduced bit for bit (quirk "cosine re-normalised", :func:`kernels.notebook_weights`): the
    normalisations sum squares in the column order scikit-learn stores (descending), and the
    product adds the claim's terms in that order, one posting list at a time
    (:func:`kernels.claim_kernel`), as scipy's ``csr_matmat`` does.
  - ``overlap = |C & P| / min(|C|, |P|)`` on ``set(tags.split())`` of both raw strings (not
    re-stemmed); ``shared = |C & P|``; counted through an inverted index of raw tags.
  - ``score = (cosine + overlap) + cosine`` (quirk "cosine added twice").
  - ``query("similaritie > 0.55 and overlap_rate > 0.5 and combined_score > 1.5")``.
  - if something passed: ``sort_values(["overlap_rate", "similaritie"], ascending=[False,
    False])`` (a stable lexsort), then ``sort_values("combined_score", ascending=False)``
    (pandas' ``nargsort``: numpy's quicksort on the *reversed* column, then reversed back), keep
    the rows whose ``max_match`` equals the maximum, ``head(6)`` (:func:`order.notebook_order`);
  - else: ``evidence_df.sort_values("combined_score", ascending=False).head(6)`` over *all*
    passages, ties (mostly zeros) ordered by numpy 1.24's introsort (:func:`order.fallback_six`).

Only the passages that share a term or a tag with the claim are ever touched: cosine and shared
counts come from posting lists streamed block by block (:func:`kernels.claim_kernel`, numba), the
filter's survivors go through the exact pandas-order emulation, and the fallback's full-column
quicksort is numpy 1.24's introsort (:mod:`claimtrace.lib.npsort`) pruned to the top six, run on
the sparse score row or on the dense column, whichever is cheaper.

A claim with no tags made the notebook divide by zero; here it gets overlap 0 everywhere and
hence the fallback over all-zero scores (:data:`constants.NO_TAGS_OVERLAP`).

Variants, to measure each quirk (:data:`variants.VARIANTS`): ``raw-claim-text`` (what the
notebook's final dev and test runs passed), ``cosine-once``, ``unpadded-tags``.

The modules, one job each: ``variants`` (the quirk variants and the string a claim is retrieved
with), ``kernels`` (the numba kernels and the records they fill), ``order`` (the copy of pandas'
sort orders), ``retriever`` (:class:`Retriever`, one claim's :class:`Query` and
:class:`Retrieval`, and a whole split's records, :func:`retrieve_all`). Scoring those records is
``claimtrace.evaluation.retrieval``'s job.

May import: the facts, ``lib``, ``data`` and the pipeline's own modules.
"""

from claimtrace.pipeline.retrieval.kernels import notebook_weights
from claimtrace.pipeline.retrieval.order import fallback_six, notebook_order
from claimtrace.pipeline.retrieval.retriever import (
    NOTEBOOK_THRESHOLDS,
    Query,
    Retrieval,
    Retriever,
    Scores,
    Thresholds,
    retrieve_all,
)
from claimtrace.pipeline.retrieval.variants import VARIANTS, Variant, claim_input

__all__ = [
    "Variant",
    "VARIANTS",
    "claim_input",
    "Retriever",
    "Query",
    "Retrieval",
    "Scores",
    "Thresholds",
    "NOTEBOOK_THRESHOLDS",
    "retrieve_all",
    "notebook_weights",
    "notebook_order",
    "fallback_six",
]
