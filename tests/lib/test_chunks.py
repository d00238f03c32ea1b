"""The one chunked, resumable runner: the same files from one process or two, existing chunks
skipped (and checked), what a kill left half-written removed."""

from __future__ import annotations

import pytest

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
