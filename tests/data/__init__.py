"""Tests of claimtrace.data, one file per module."""
