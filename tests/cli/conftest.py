"""What the command-line tests share: a writable copy of the data folder, and running a command."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from claimtrace.cli.main import main
from claimtrace.data import files as data


@pytest.fixture()
def data_copy(tmp_path, data_dir) -> Path:
    """A writable copy of the data folder (the shared one is read-only)."""
    target = tmp_path / "data"
    shutil.copytree(data_dir, target)
    for path in target.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return target


def run_cli(*args: str):
    return CliRunner().invoke(main, list(args))


def garbage_stopwords(data_copy: Path) -> Path:
    path = data_copy / data.STOPWORDS_ZIP
    path.write_bytes(b"PK\x03\x04 this is not really a zip archive")
    return path
