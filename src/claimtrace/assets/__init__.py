"""The shipped checkpoints, their vocabulary, exact table and provenance, in this folder."""

from pathlib import Path

#: The shipped checkpoint, its vocabulary, its exact table and its provenance.
ASSETS_DIR = Path(__file__).resolve().parent
