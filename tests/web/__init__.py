"""Tests of claimtrace.web, one file per module."""
