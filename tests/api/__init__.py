"""Tests of claimtrace.api, the Python API."""
