"""What a result is worth: the course's scorer, eval.py exactly (``scorer``); a predictions file
read as eval.py reads it, placed in its split and scored, with the strict score beside it
(``submission``) and an audit of what is odd in it (``audit``); each retrieval variant's evidence
F over a split (``retrieval``); the baselines (``baselines``); the scoreboard of every retrieval x
classifier x protocol row (``scoreboard``); every figure's interval and every comparison's test
(``statistics``, ``significance``); the shipped seed-spread file, the notebook's two models
retrained under several seeds, and the two compared over their seeds (``seed_spread``).

May import: the facts, ``lib``, ``data``, ``pipeline`` and ``models``.
"""
