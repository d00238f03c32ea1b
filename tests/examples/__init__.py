"""Tests of the examples: each notebook run as a reader would run it."""
