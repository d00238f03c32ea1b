"""Tests of claimtrace.evaluation, one file per module."""
