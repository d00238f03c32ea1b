"""Tests of claimtrace.explain, one file per module."""
