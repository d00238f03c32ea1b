"""Stage 5, the classifiers: the notebook's input encoding (``inputs``, no torch needed), its
hyper-parameters (``config``, no torch either), its Transformer as written (``transformer``) and
the intended one (``intended``), its other model, the LSTM
(``lstm``), the exact per-word table (``table``), training (``train``) and
verdicts under both protocols (``predict``).

May import: the facts, ``lib``, ``data`` and ``pipeline``.
"""
