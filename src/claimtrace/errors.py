"""The errors claimtrace raises about its inputs and its build, and the one way a damaged file is
reported: its path, what is wrong with it, and what to run. A :class:`DataError` ends a command
with exit status 2 and one line, never a traceback."""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class DataError(Exception):
    """An input file is missing, unreadable or not what the course handed out."""


class EvidenceChecksumWarning(UserWarning):
    """A user's evidence.json is not the course's: results will not match the course's."""


class Missing(DataError):
    """A piece of the build is not there (not built yet, or made by an older claimtrace)."""

    def __init__(self, stage: str, path: Path, reason: str):
        super().__init__(f"{path}: {reason}")
        self.stage = stage
        self.path = path
        self.reason = f"{path}: {reason}"  # what a page shows: the file, and what to run


#: What reading a damaged file raises: a truncated or garbage npz (BadZipFile, EOFError,
#: ValueError), JSON (JSONDecodeError is a ValueError), safetensors (SafetensorError), a file
#: with a field missing or of the wrong type (KeyError, IndexError, TypeError), or torch refusing
#: the weights (RuntimeError); OSError for a file that cannot be read at all.
_LOAD_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    ValueError,
    KeyError,
    IndexError,
    TypeError,
    EOFError,
    RuntimeError,
    zipfile.BadZipFile,
)


#: What to run when a build file is damaged.
REPAIR_HINT = "run `claimtrace build` to repair"


def _safetensors_error() -> tuple[type[BaseException], ...]:
    try:
        from safetensors import SafetensorError
    except ImportError:  # pragma: no cover - safetensors is a dependency
        return ()
    return (SafetensorError,)


@contextmanager
def damaged(path: Path, hint: str = REPAIR_HINT) -> Iterator[None]:
    """Turn any failure to read ``path`` inside the block into a DataError naming the file,
    what was wrong and ``hint``: one message instead of a numpy, JSON or safetensors traceback.
    A DataError raised inside (already naming its file) passes unchanged."""
    try:
        yield
    except DataError:
        raise
    except (*_LOAD_ERRORS, *_safetensors_error()) as err:
        what = str(err) or type(err).__name__
        raise DataError(f"{path}: damaged ({what}): {hint}") from None


def damaged_file(path: Path, problem: str) -> DataError:
    """The error a damaged or missing build file gives: the file, what is wrong, what to run."""
    return DataError(f"{path}: damaged ({problem}): {REPAIR_HINT}")
