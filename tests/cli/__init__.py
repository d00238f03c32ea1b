"""Tests of claimtrace.cli, one file per module."""
