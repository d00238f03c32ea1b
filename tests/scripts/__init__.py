"""Tests of the scripts in scripts/, one file per script."""
