"""Tests of claimtrace.workdir, one file per module (its stages in stages/)."""
