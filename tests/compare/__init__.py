"""Tests of claimtrace.compare, one file per module."""
