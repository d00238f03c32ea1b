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
import pickle
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tqdm import tqdm

from claimtrace.errors import DataError

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


def _made_chunks(make: Callable[[int, int], Any], todo: list[tuple[int, int]], processes: int) -> Iterator[Any]:
    """``make(start, stop)`` of each span, in order: here, or in forked workers.

    Worker ``w`` of ``n`` makes spans ``w, w + n, ...`` and sends each chunk back on a pipe of its
    own, in order, so this process reads them in span order from the workers in turn. ``make`` is
    given to each worker as its process's target argument, which a fork inherits (a closure, and
    what it reads, are not pickled); only the chunks come back pickled. A worker's send waits while
    its pipe is full (a chunk is larger than the pipe's buffer), so a worker runs at most about a
    chunk ahead of this process's writing.
    """
    if processes <= 1 or len(todo) < 2:
        yield from (make(start, stop) for start, stop in todo)
        return
    context = multiprocessing.get_context("fork")
    n = min(processes, len(todo))
    workers, pipes = [], []
    try:
        for w in range(n):
            receiver, sender = context.Pipe(duplex=False)
            worker = context.Process(target=_chunk_worker, args=(make, todo[w::n], sender), daemon=True)
            worker.start()
            sender.close()  # the worker holds the sending end: its exit ends the pipe
            workers.append(worker)
            pipes.append(receiver)
        for i, (start, stop) in enumerate(todo):
            yield _received(pipes[i % n], start, stop)
    finally:
        for worker in workers:  # made every chunk, or this process stopped reading (an error, a kill)
            worker.terminate()
        for worker in workers:
            worker.join()
        for receiver in pipes:
            receiver.close()


def _chunk_worker(make: Callable[[int, int], Any], worker_spans: list[tuple[int, int]], sender) -> None:
    """A forked worker: each span's chunk sent back in order, or the error that stopped it."""
    try:
        for start, stop in worker_spans:
            sender.send(("chunk", make(start, stop)))
    except Exception as error:  # noqa: BLE001 - every failure goes back to the process reading the chunks
        sender.send(("error", _sendable(error)))
    finally:
        sender.close()


def _sendable(error: Exception) -> Exception:
    """``error`` if the reading process can rebuild it from its pickle; else a DataError with its
    message (a bad input still ends the command in one line naming the file), or any other's text."""
    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:  # noqa: BLE001 - whatever pickling an arbitrary exception raises
        return (
            DataError(str(error)) if isinstance(error, DataError) else RuntimeError(f"{type(error).__name__}: {error}")
        )


def _received(receiver, start: int, stop: int) -> Any:
    """The next chunk a worker sent, or what it raised raised here."""
    try:
        kind, value = receiver.recv()
    except EOFError:
        raise RuntimeError(
            f"the worker process making items {start}-{stop} ended without them (killed: often the system out of "
            "memory): run the same command again to resume"
        ) from None
    if kind == "error":
        raise value
    return value
