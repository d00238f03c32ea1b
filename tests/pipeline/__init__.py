"""Tests of claimtrace.pipeline, one file per module."""
