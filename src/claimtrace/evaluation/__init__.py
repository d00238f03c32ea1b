"""What a result is worth: the course's scorer, eval.py exactly (``scorer``), each retrieval
variant's evidence F over a split (``retrieval``), and the scoreboard of every retrieval x
classifier x protocol row (``scoreboard``).

May import: the facts, ``lib``, ``data``, ``pipeline`` and ``models``.
"""
