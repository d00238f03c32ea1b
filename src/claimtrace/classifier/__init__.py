"""Stage 4, classifier: the notebook's input encoding (``inputs``, no torch needed) and its
Transformer (``model``), trained as the notebook trained it (``train``)."""
