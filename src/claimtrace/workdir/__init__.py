"""The build and its one reader: a workdir's layout, stages and manifest (``layout``), its
passage store (``passages``), its integrity (``integrity``), what each stage computes
(``stages``), the runner that runs the stages into it (``build``) and the reader every command
and page reads it through (``reader``); where a build lives when nobody says (``location``).

May import: everything below it (the facts, ``lib``, ``data``, ``pipeline``, ``models``,
``evaluation``).
"""
