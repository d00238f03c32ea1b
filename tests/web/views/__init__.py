"""Tests of claimtrace.web.views, one file per module."""
