"""The one chunked, resumable runner: the same files from one process or two, existing chunks
skipped (and checked), what a kill left half-written removed."""

from __future__ import annotations

import pytest

from claimtrace.errors import DataError
from claimtrace.lib import chunks
from claimtrace.lib.build_files import write_atomic


def _make(start: int, stop: int) -> str:
    return "".join(f"{i}\n" for i in range(start, stop))


def test_spans_cover_every_item_once():
    assert chunks.spans(0, 5) == []
    assert chunks.spans(11, 5) == [(0, 5), (5, 10), (10, 11)]
    assert chunks.spans(10, 5) == [(0, 5), (5, 10)]


def test_one_process_and_two_write_the_same_files(tmp_path):
    for processes in (1, 2):
        chunks.run_chunks(
            tmp_path / str(processes), chunks.spans(23, 5), ".txt", _make, write_atomic, processes=processes
        )
    one, two = (sorted((tmp_path / str(p)).iterdir()) for p in (1, 2))
    assert [p.name for p in one] == ["00000.txt", "00001.txt", "00002.txt", "00003.txt", "00004.txt"]
    assert [p.name for p in two] == [p.name for p in one]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(one, two, strict=True))
    assert "".join(p.read_text() for p in one) == _make(0, 23)


def test_a_killed_run_resumes_making_only_the_missing_chunks(tmp_path):
    made: list[int] = []

    def dies_on_third(start: int, stop: int) -> str:
        if len(made) == 2:
            raise KeyboardInterrupt("killed")
        made.append(start)
        return _make(start, stop)

    with pytest.raises(KeyboardInterrupt):
        chunks.run_chunks(tmp_path, chunks.spans(23, 5), ".txt", dies_on_third, write_atomic)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["00000.txt", "00001.txt"]
    (tmp_path / ".00002.txt.abc.tmp").write_text("half")  # what a kill during a write leaves

    made.clear()
    checked: list[tuple[str, int, int]] = []
    chunks.run_chunks(
        tmp_path,
        chunks.spans(23, 5),
        ".txt",
        lambda a, b: made.append(a) or _make(a, b),
        write_atomic,
        check=lambda path, a, b: checked.append((path.name, a, b)),
    )
    assert made == [10, 15, 20]
    assert checked == [("00000.txt", 0, 5), ("00001.txt", 5, 10)]
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{i:05d}.txt" for i in range(5)]


def test_a_check_that_refuses_stops_before_any_chunk_is_made(tmp_path):
    chunks.run_chunks(tmp_path, chunks.spans(5, 5), ".txt", _make, write_atomic)

    def refuse(path, start, stop):
        raise ValueError(f"{path}: other items")

    made: list[int] = []
    with pytest.raises(ValueError, match="other items"):
        chunks.run_chunks(
            tmp_path,
            chunks.spans(12, 5),
            ".txt",
            lambda a, b: made.append(a) or _make(a, b),
            write_atomic,
            check=refuse,
        )
    assert made == []


def test_forked_workers_make_chunks_from_a_closure_and_leave_no_module_state(tmp_path):
    """``make`` reaches the workers as their argument (a fork inherits it): a closure over what
    cannot be pickled works, and the runner keeps nothing of it once done."""
    import threading

    lock = threading.Lock()  # cannot be pickled: only a fork's inheritance brings it to a worker

    def make(start: int, stop: int) -> str:
        with lock:
            return _make(start, stop)

    chunks.run_chunks(tmp_path, chunks.spans(23, 5), ".txt", make, write_atomic, processes=2)
    assert "".join(p.read_text() for p in sorted(tmp_path.iterdir())) == _make(0, 23)
    assert not [name for name, value in vars(chunks).items() if value is make]


def test_an_error_in_a_worker_is_raised_by_the_run_after_the_chunks_before_it(tmp_path):
    from claimtrace.errors import Missing

    def fails_at_ten(start: int, stop: int) -> str:
        if start == 10:
            raise ValueError("item 10 is bad")
        return _make(start, stop)

    with pytest.raises(ValueError, match="item 10 is bad"):
        chunks.run_chunks(tmp_path / "a", chunks.spans(23, 5), ".txt", fails_at_ten, write_atomic, processes=2)
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["00000.txt", "00001.txt"]

    def missing(start: int, stop: int) -> str:  # an error whose pickle cannot be read back as it is
        raise Missing("tagging", tmp_path / "tags.jsonl", "not built")

    with pytest.raises(DataError, match="tags.jsonl"):
        chunks.run_chunks(tmp_path / "b", chunks.spans(23, 5), ".txt", missing, write_atomic, processes=2)


def test_a_worker_killed_ends_the_run_with_a_message_not_a_wait(tmp_path):
    import os
    import signal

    def killed_at_five(start: int, stop: int) -> str:
        if start == 5:
            os.kill(os.getpid(), signal.SIGKILL)
        return _make(start, stop)

    with pytest.raises(RuntimeError, match="items 5-10 ended without them"):
        chunks.run_chunks(tmp_path, chunks.spans(23, 5), ".txt", killed_at_five, write_atomic, processes=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["00000.txt"]
