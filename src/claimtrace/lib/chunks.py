"""The one chunked, resumable runner every build step that writes one file per chunk goes through
(the tagging stage's stems and tags, the BM25 index's token counts).

A step's items are cut into spans; span ``i`` is written to ``folder/NNNNN<suffix>`` (``i`` in
five digits) by ``write(path, make(start, stop))``. A file already there is skipped (after
``check``, when given), so a killed step resumes where it stopped; what a kill left half-written
(the temporary files :func:`claimtrace.lib.build_files.atomic_output` writes beside, dot names ending in
``.tmp``) is removed first. With ``processes`` > 1, forked workers make the chunks (``make`` and
what it reads are inherited, not pickled) and this process writes them, in chunk order, so a
killed step leaves the same whole files as one process would.
"""

from __future__ import annotations

import multiprocessing
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tqdm import tqdm

__all__ = ["chunk_path", "spans", "run_chunks", "remove_partial_files"]


def chunk_path(folder: Path, index: int, suffix: str) -> Path:
    """Where chunk ``index`` of a step is written: ``folder/NNNNN<suffix>``."""
    return folder / f"{index:05d}{suffix}"


def spans(n_items: int, size: int) -> list[tuple[int, int]]:
    """``(start, stop)`` of each chunk of ``size`` items, in order (the last may be shorter)."""
    return [(start, min(n_items, start + size)) for start in range(0, n_items, size)]


def remove_partial_files(folder: Path) -> None:
    """What a killed writer left in ``folder``: temporary files and folders (``.*.tmp``)."""
    for partial in folder.glob(".*.tmp"):
        if partial.is_dir():
            shutil.rmtree(partial, ignore_errors=True)
        else:
            partial.unlink(missing_ok=True)


def run_chunks(
    folder: Path,
    chunk_spans: list[tuple[int, int]],
    suffix: str,
    make: Callable[[int, int], Any],
    write: Callable[[Path, Any], None],
    *,
    processes: int = 1,
    check: Callable[[Path, int, int], None] | None = None,
    label: str | None = None,
) -> None:
    """Write each chunk whose file is missing; skip (and ``check``) those that exist.

    Parameters
    ----------
    folder : Path
        The chunk files' folder (created when a chunk is written).
    chunk_spans : list of (int, int)
        ``(start, stop)`` of each chunk, in order (:func:`spans`).
    suffix : str
        The chunk files' suffix (``".json"``, ``".npz"``).
    make : callable (start, stop) -> content
        A chunk's content; runs in a forked worker when ``processes`` > 1.
    write : callable (path, content) -> None
        Writes one chunk whole (a temporary name, then a rename); runs in this process.
    processes : int
        Worker processes making chunks (1: none).
    check : callable (path, start, stop) -> None, optional
        Called for each chunk file found, before any chunk is made; raises when the file is not
        of these items (another corpus: the step refuses to mix them).
    label : str, optional
        The progress bar's description (None: no bar).
    """
    remove_partial_files(folder)
    todo = []
    for index, (start, stop) in enumerate(chunk_spans):
        path = chunk_path(folder, index, suffix)
        if not path.is_file():
            todo.append(index)
        elif check is not None:
            check(path, start, stop)
    if not todo:
        return
    n_items = chunk_spans[-1][1] if chunk_spans else 0
    done = n_items - sum(chunk_spans[i][1] - chunk_spans[i][0] for i in todo)
    with tqdm(total=n_items, desc=label, unit="passage", initial=done, disable=None if label else True) as bar:
        made = _made_chunks(make, [chunk_spans[i] for i in todo], processes)
        for index, content in zip(todo, made, strict=True):
            write(chunk_path(folder, index, suffix), content)
            bar.update(chunk_spans[index][1] - chunk_spans[index][0])


#: The chunk maker forked workers call (set just before the pool starts: a closure is not pickled).
_CHUNK_MAKER: Callable[[int, int], Any] | None = None


def _make_chunk(span: tuple[int, int]) -> Any:
    return _CHUNK_MAKER(*span)


def _made_chunks(make: Callable[[int, int], Any], todo: list[tuple[int, int]], processes: int) -> Iterator[Any]:
    """``make(start, stop)`` of each span, in order: here, or in forked workers."""
    global _CHUNK_MAKER
    if processes <= 1 or len(todo) < 2:
        yield from (make(start, stop) for start, stop in todo)
        return
    _CHUNK_MAKER = make
    try:
        with multiprocessing.get_context("fork").Pool(min(processes, len(todo))) as pool:
            yield from pool.imap(_make_chunk, todo)
    finally:
        _CHUNK_MAKER = None
