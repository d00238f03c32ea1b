"""Why a claim got its verdict and its passages, exactly, read from a build: the per-word table
and the margin (``verdict``).

May import: everything below it, up to ``workdir``; never re-derives what a stage computed.
"""
