"""claimtrace.data.fetch and ``claimtrace data fetch``: the data folder filled from a mirror on
127.0.0.1 (tests/support/data_mirror.py) serving the files of the data folder the tests use;
each file checked against its pinned digest, a wrong one refused and nothing of it kept, an
interrupted download resumed with a Range request. No test leaves the machine."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from claimtrace.cli.main import main
from claimtrace.data import fetch
from claimtrace.errors import DataError
from tests.support.data_mirror import DataMirror

CLIMATE_FEVER = "climate-fever/climate-fever.jsonl"
DEV = "comp90042-2024/dev-claims.json"


@pytest.fixture(scope="module")
def served(data_dir) -> dict[str, bytes]:
    """Every file fetch writes, by its place in the data folder, read from the tests' data folder."""
    return {source.path: (Path(data_dir) / source.path).read_bytes() for source in fetch.sources()}


def _fetch(*args: str, env: dict | None = None):
    return CliRunner().invoke(main, ["data", "fetch", *args], env=env)


def test_every_source_is_pinned_to_a_commit_and_a_digest():
    for source in fetch.sources():
        assert re.search(r"/[0-9a-f]{40}/", source.url), source.url  # a commit, never a branch
        assert len(source.digest) == {"md5": 32, "sha256": 64}[source.algorithm]


def test_fetch_through_a_mirror_writes_a_folder_data_check_accepts(tmp_path, served):
    folder = tmp_path / "data"
    with DataMirror(served) as mirror:
        result = _fetch("--data", str(folder), "--mirror", mirror.url)
    assert result.exit_code == 0, result.output
    assert "%|" not in result.output  # no progress bar where stderr is not a terminal
    assert sorted(path for path, _ in mirror.requests) == sorted(served)
    check = CliRunner().invoke(main, ["--data", str(folder), "data", "check"])
    assert check.exit_code == 0 and "ok  gold passages (train+dev) rebuilt from CLIMATE-FEVER: 3443" in check.stdout
    assert not list(folder.rglob("*.part"))
    # Fetched again, nothing is asked of the mirror: every file is there with its digest.
    with DataMirror(served) as mirror:
        again = _fetch("--data", str(folder), env={fetch.MIRROR_ENV: mirror.url})
    assert again.exit_code == 0 and mirror.requests == []
    assert again.stdout.count("already there") == len(served)


def test_a_changed_byte_is_refused_and_nothing_of_it_kept(tmp_path, served):
    changed = bytearray(served[DEV])
    changed[1000] ^= 0x01
    folder = tmp_path / "data"
    with DataMirror({**served, DEV: bytes(changed)}) as mirror:
        result = _fetch("--data", str(folder), "--mirror", mirror.url)
    assert result.exit_code == 2
    dev = folder / DEV
    message = result.output
    assert f"{dev}: {mirror.url}/{DEV} served a file with md5 " in message
    assert "not the pinned 0076e390272dacfb27341f9190985c5c" in message
    assert not dev.exists() and not fetch.partial_path(dev).exists()


def test_an_interrupted_download_resumes_where_it_stopped(tmp_path, served):
    folder = tmp_path / "data"
    size = len(served[CLIMATE_FEVER])
    with DataMirror(served, cut={CLIMATE_FEVER: size // 3}) as mirror:
        first = _fetch("--data", str(folder), "--mirror", mirror.url)
        assert first.exit_code == 2
        assert "cannot be fetched" in first.output and str(folder / CLIMATE_FEVER) in first.output
        part = fetch.partial_path(folder / CLIMATE_FEVER)
        assert part.stat().st_size == size // 3 and not (folder / CLIMATE_FEVER).exists()
        second = _fetch("--data", str(folder), "--mirror", mirror.url)
    assert second.exit_code == 0, second.output
    assert (CLIMATE_FEVER, f"bytes={size // 3}-") in mirror.requests
    assert (folder / CLIMATE_FEVER).read_bytes() == served[CLIMATE_FEVER] and not part.exists()


def test_a_server_without_ranges_starts_the_file_again(tmp_path, served):
    target = tmp_path / CLIMATE_FEVER
    target.parent.mkdir(parents=True)
    fetch.partial_path(target).write_bytes(b"not the start of the file")
    source = next(s for s in fetch.sources() if s.path == CLIMATE_FEVER)
    with DataMirror(served, ignore_range=True) as mirror:
        fetch.fetch_one(source, target, mirror.url)
    assert target.read_bytes() == served[CLIMATE_FEVER]


def test_a_file_already_there_with_another_digest_is_left_alone(tmp_path, served):
    dev = tmp_path / DEV
    dev.parent.mkdir(parents=True)
    dev.write_text("{}")
    with DataMirror(served) as mirror, pytest.raises(DataError, match=f"{re.escape(str(dev))}: already there with md5"):
        fetch.fetch_all(tmp_path, mirror.url)
    assert dev.read_text() == "{}"


def test_without_a_network_it_says_what_to_download_and_where(tmp_path):
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}"
    result = _fetch("--data", str(tmp_path), "--mirror", url)
    assert result.exit_code == 2
    assert "Download these by hand and put them here:" in result.output
    for source in fetch.sources():
        assert f"{url}/{source.path}\n    -> {tmp_path / source.path}" in result.output


def test_a_missing_file_on_the_mirror_is_named(tmp_path, served):
    with DataMirror({k: v for k, v in served.items() if k != DEV}) as mirror:
        result = _fetch("--data", str(tmp_path), "--mirror", mirror.url)
    assert result.exit_code == 2
    assert f"{tmp_path / DEV}: {mirror.url}/{DEV} answered 404" in result.output


def test_a_whole_partial_file_is_checked_and_renamed(tmp_path, served):
    """Killed between the last byte and the rename: the mirror answers 416, nothing is sent."""
    target = tmp_path / CLIMATE_FEVER
    target.parent.mkdir(parents=True)
    fetch.partial_path(target).write_bytes(served[CLIMATE_FEVER])
    source = next(s for s in fetch.sources() if s.path == CLIMATE_FEVER)
    with DataMirror(served) as mirror:
        fetch.fetch_one(source, target, mirror.url)
    assert mirror.requests == [(CLIMATE_FEVER, f"bytes={len(served[CLIMATE_FEVER])}-")]
    assert target.read_bytes() == served[CLIMATE_FEVER] and not fetch.partial_path(target).exists()


def test_where_it_writes(tmp_path, monkeypatch, data_dir):
    monkeypatch.setenv("CLAIMTRACE_DATA", str(tmp_path / "env"))
    assert fetch.default_target(tmp_path / "given") == tmp_path / "given"
    assert fetch.default_target(None) == tmp_path / "env"
    monkeypatch.delenv("CLAIMTRACE_DATA")
    (tmp_path / "shared" / "data" / "comp90042-2024").mkdir(parents=True)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    assert fetch.default_target(None) == Path("../shared/data")  # the folder found fills in

    def nothing_found():
        raise DataError("no data folder found")

    monkeypatch.setattr(fetch, "find_data_dir", nothing_found)
    assert fetch.default_target(None) == Path("data")  # none found: ./data
