"""Why a claim got its verdict and its passages, exactly, read from a build: the per-word table
and the margin (``verdict``), a verdict's softmax (``confidence``), and the retrieval views (``retrieval``: the filter rule, once, with
the scoring rules a typed text may be retrieved under, and :class:`~claimtrace.explain.retrieval.RetrievalView`, the view of any passage for a
claim that the walkthrough and a compared run both show).

May import: everything below it, up to ``workdir``; never re-derives what a stage computed.
"""
