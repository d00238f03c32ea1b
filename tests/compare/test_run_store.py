"""The run store: bytes kept by digest, shared by processes through one SQLite file, surviving a
reopen, the oldest evicted past the cap (and recorded), concurrent writers losing nothing."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3

import pytest

from claimtrace.compare.run_store import RunStore, run_digest, store_beside
from claimtrace.errors import DataError


def _file(n: int, pad: int = 0) -> bytes:
    return json.dumps({f"claim-{n}": {"claim_label": "SUPPORTS", "evidences": []}, "pad": "x" * pad}).encode()


def test_a_run_is_kept_once_by_its_bytes_under_its_first_name(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    first, evicted = store.put(_file(1), "alice")
    again, _ = store.put(_file(1), "bob")
    assert evicted == [] and first == again and again.name == "alice" and again.digest == run_digest(_file(1))
    assert store.raw(first.digest) == _file(1) and store.raw("0" * 16) is None
    assert [r.digest for r in store.listed("upload")] == [first.digest] and store.listed("given") == []
    assert store.total_bytes() == len(_file(1)) and store.check() == "ok"


def test_runs_survive_a_reopen_and_are_seen_by_another_connection(tmp_path):
    path = tmp_path / "runs.sqlite"
    writer, reader = RunStore(path), RunStore(path)
    stored, _ = writer.put(_file(2), "carol")
    assert reader.raw(stored.digest) == _file(2)  # another open store (another process's) sees it
    del writer, reader
    assert [r.name for r in RunStore(path).listed()] == ["carol"]


def test_past_the_cap_the_oldest_runs_go_first_never_those_kept(tmp_path):
    size = len(_file(0, 1000))
    store = RunStore(tmp_path / "runs.sqlite", cap_bytes=3 * size)
    given, _ = store.put(_file(0, 1000), "given at start", "given")
    digests = [store.put(_file(n, 1000), f"upload {n}", keep=frozenset({given.digest}))[0].digest for n in (1, 2)]
    _, evicted = store.put(_file(3, 1000), "upload 3", keep=frozenset({given.digest}))
    assert [gone.digest for gone in evicted] == [digests[0]]  # the oldest upload, not the older given run
    assert [r.name for r in store.listed()] == ["given at start", "upload 2", "upload 3"]
    assert [gone.name for gone in store.evicted()] == ["upload 1"] and store.total_bytes() <= 3 * size
    store.put(_file(1, 1000), "upload 1 again", keep=frozenset({given.digest}))  # back: no longer evicted
    assert "upload 1" not in [gone.name for gone in store.evicted()]


def test_a_file_given_again_at_a_start_is_evicted_last(tmp_path):
    size = len(_file(0, 1000))
    store = RunStore(tmp_path / "runs.sqlite", cap_bytes=2 * size)
    store.put(_file(0, 1000), "old", "given")
    store.put(_file(1, 1000), "an upload")
    store.put(_file(0, 1000), "old", "given")  # given again: now the most recent
    _, evicted = store.put(_file(2, 1000), "another upload")
    assert [gone.name for gone in evicted] == ["an upload"]


def _writer(path: str, start: int, count: int) -> None:
    store = RunStore(path)
    for n in range(start, start + count):
        store.put(_file(n, 2000), f"run {n}")


def test_several_processes_writing_at_once_lose_nothing(tmp_path):
    path = tmp_path / "runs.sqlite"
    RunStore(path)
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_writer, args=(str(path), 100 * w, 15)) for w in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    store = RunStore(path)
    assert sorted(r.name for r in store.listed()) == sorted(f"run {100 * w + n}" for w in range(4) for n in range(15))
    assert store.check() == "ok"
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_file_that_is_no_run_store_is_named(tmp_path):
    path = tmp_path / "runs.sqlite"
    path.write_bytes(b"not a database at all, but long enough to be read as one" * 100)
    with pytest.raises(DataError, match="runs.sqlite: not a runs database"):
        RunStore(path)
    other = tmp_path / "newer.sqlite"
    sqlite3.connect(other).execute("PRAGMA user_version = 7")
    with pytest.raises(DataError, match="newer.sqlite: a runs database of layout 7"):
        RunStore(other)


def test_in_memory_stores_are_each_their_own():
    one, two = RunStore(None), RunStore(None)
    one.put(_file(1), "only in one")
    assert [r.name for r in one.listed()] == ["only in one"] and two.listed() == []


def test_the_store_sits_beside_the_build_never_inside(tmp_path):
    work = tmp_path / "work" / "demo"
    assert store_beside(work) == tmp_path / "work" / "demo.runs.sqlite"


def test_a_store_that_cannot_be_written_is_named(tmp_path):
    path = tmp_path / "runs.sqlite"
    store = RunStore(path)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another process's writer, holding the lock
    import claimtrace.compare.run_store as module

    store._local.connection = sqlite3.connect(path, timeout=0.1, isolation_level=None)  # not 30 s here
    with pytest.raises(DataError, match="runs.sqlite: could not keep the run"):
        store.put(_file(1), "late")
    blocker.execute("ROLLBACK")
    assert module.run_digest(_file(1)) not in [r.digest for r in store.listed()]
