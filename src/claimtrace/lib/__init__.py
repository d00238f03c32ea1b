"""Small tools with no knowledge of the pipeline: numpy 1.24's introsort (``npsort``), a bounded
cache (``lru``), chunked resumable runs (``chunks``), a job in a forked process (``alongside``)
and files written whole (``store``).

May import: the facts (``constants``, ``errors``, ``course``, ``assets``).
"""
