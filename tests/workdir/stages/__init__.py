"""Tests of claimtrace.workdir.stages, one file per module."""
