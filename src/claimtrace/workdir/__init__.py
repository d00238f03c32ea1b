"""The build and its one reader: a workdir's layout and manifest (``layout``), its integrity
(``integrity``), the stages run into it (``build``) and the reader every command and page reads
it through (``reader``).

May import: everything below it (the facts, ``lib``, ``data``, ``pipeline``, ``models``,
``evaluation``).
"""
