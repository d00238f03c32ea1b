"""What a result is worth: the course's scorer, eval.py exactly (``scorer``), and the scoreboard
of every retrieval x classifier x protocol row (``scoreboard``).

May import: the facts, ``lib``, ``data``, ``pipeline`` and ``models``.
"""
