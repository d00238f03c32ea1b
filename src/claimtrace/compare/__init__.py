"""Other systems beside the notebook's: a predictions file compared claim by claim with the
build's pipeline (``runs``).

May import: everything below it, up to ``explain``.
"""
