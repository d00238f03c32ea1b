"""Tests of claimtrace.models, one file per module."""
