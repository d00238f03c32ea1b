"""Stage 0, the inputs: the course's files found, checked and loaded, the gold passages and the
demo corpus rebuilt from CLIMATE-FEVER (``files``), the data folder downloaded from pinned
addresses and checked against pinned digests (``fetch``), and a user's evidence.json streamed and
checked as a corpus (``evidence``).

May import: the facts and ``lib``.
"""
