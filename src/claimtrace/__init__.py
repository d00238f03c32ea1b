"""claimtrace: the 2024 COMP90042 fact-checking notebook, ported exactly and explained.

Stages, in the one direction data flows:
data -> preprocess -> tagging -> retrieval -> classifier -> explain -> web.
"""

__version__ = "0.1.0"
