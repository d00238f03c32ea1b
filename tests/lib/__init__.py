"""Tests of claimtrace.lib, one file per module."""
