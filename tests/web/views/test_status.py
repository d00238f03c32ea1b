"""What the build holds, as every page reports it (claimtrace.web.views.status): each stage's
status read from its files, a damaged file named under its stage, and no machine path shown."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from claimtrace.constants import SPLITS
from claimtrace.errors import REPAIR_HINT
from claimtrace.web.views.status import build_info, missing, public_paths
from claimtrace.workdir.reader import BuildReader


def _linked_copy(build: BuildReader, root: Path) -> BuildReader:
    """A build whose files are links to the given one's (a file replaced in it is its own)."""
    shutil.copytree(build.root, root, copy_function=os.symlink)
    return BuildReader(root, build.data_dir)


def test_a_whole_build_is_ok_stage_by_stage(demo_build):
    brief = build_info(demo_build, brief=True)
    assert brief["stages"] == {stage: {"status": "ok"} for stage in ("tagging", "retrieval", "classifier")}
    assert brief["workdir"] == "." and brief["corpus"]["kind"] == "demo" and brief["course"]["note"]
    assert brief["files"]["manifest"] == "ok" and brief["files"]["damaged"] == {}
    assert brief["files"]["recorded"] > 0 and brief["files"]["checked"] == "size"
    assert "retrieval_files" not in brief and "checkpoint" not in brief
    whole = build_info(demo_build)
    assert whole["stages"] == brief["stages"]
    assert whole["retrieval_files"] == dict.fromkeys(SPLITS, True)
    assert whole["checkpoint"] and whole["tagging_summary"] == demo_build.tagging_summary()


def test_nothing_built_is_every_stage_missing(tmp_path, data_dir):
    info = build_info(BuildReader(tmp_path, data_dir))
    assert info["corpus"] is None
    assert list(info["stages"]) == ["build", "tagging", "retrieval", "classifier"]
    for stage, status in info["stages"].items():
        assert status["status"] == "missing" and "claimtrace build" in status["reason"], stage
    assert info["files"]["manifest"] == "none" and "claimtrace build" in info["files"]["reason"]
    assert info["checkpoint"] is None and info["tagging_summary"] is None
    assert info["retrieval_files"] == dict.fromkeys(SPLITS, False)


def test_a_damaged_file_is_named_under_its_stage(demo_build, tmp_path):
    """A file whose size is not the manifest's makes its stage "damaged", naming it; the other
    stages stay ok."""
    build = _linked_copy(demo_build, tmp_path / "work")
    summary = build.root / "tagging" / "summary.json"
    content = summary.read_bytes()
    summary.unlink()
    summary.write_bytes(content + b" ")
    info = build_info(build, brief=True)
    assert list(info["files"]["damaged"]) == ["tagging/summary.json"]
    tagging = info["stages"]["tagging"]
    assert tagging["status"] == "damaged" and tagging["stage"] == "tagging"
    assert tagging["reason"].startswith("tagging/summary.json: damaged (") and tagging["reason"].endswith(REPAIR_HINT)
    assert info["stages"]["retrieval"] == info["stages"]["classifier"] == {"status": "ok"}


def test_an_unreadable_split_shows_in_the_whole_report_only(demo_build, tmp_path):
    """The brief report (every page's) reads what every page needs; the whole one (api/build.json)
    reads each split's files too, so that a damaged one shows there."""
    build = _linked_copy(demo_build, tmp_path / "work")
    verdicts = build.root / "classifier" / "test.json"
    size = verdicts.stat().st_size
    verdicts.unlink()
    verdicts.write_bytes(b"{" + b" " * (size - 1))  # the manifest's size, so only reading it tells
    assert build_info(build, brief=True)["stages"]["classifier"] == {"status": "ok"}
    whole = build_info(build)["stages"]["classifier"]
    assert whole["status"] == "damaged" and "classifier/test.json" in whole["reason"]
    assert str(build.root) not in whole["reason"]


def test_missing_names_the_stage_and_the_reason():
    assert missing("retrieval", "run `claimtrace build`") == {
        "status": "missing",
        "stage": "retrieval",
        "reason": "run `claimtrace build`",
    }


def test_public_paths_keeps_what_a_build_holds_not_where():
    root = Path("/srv/work/demo")
    value = {
        "workdir": "/srv/work/demo",
        "files": ["/srv/work/demo/retrieval/index.npz", "/elsewhere/ckpt/classifier.safetensors", 3],
        "reason": "/srv/work/demo/tagging/summary.json: damaged; see /srv/work/demo",
        "prose": "cosine and/or overlap: 1/2",
    }
    assert public_paths(value, root) == {
        "workdir": ".",
        "files": ["retrieval/index.npz", "classifier.safetensors", 3],
        "reason": "tagging/summary.json: damaged; see .",
        "prose": "cosine and/or overlap: 1/2",
    }


def test_public_paths_keeps_names_and_relative_paths():
    root = Path("/srv/work/demo")
    assert public_paths("/srv/work/demo", root) == "."
    assert public_paths("/srv/work/demo/classifier/dev.json: damaged", root) == "classifier/dev.json: damaged"
    assert public_paths({"x": ["/home/me/ckpt/classifier.safetensors"]}, root) == {"x": ["classifier.safetensors"]}
    assert public_paths("and/or 3/4", root) == "and/or 3/4"


def test_the_brief_info_is_made_at_most_once_a_second_per_reader_and_kept_by_it(demo_build, monkeypatch):
    """Every page carries the brief info: a reader makes it again only after BRIEF_EVERY_SECONDS,
    each caller gets its own copy, and another reader (a build read again) makes its own."""
    from claimtrace.web.views import status

    clock, made = [100.0], []
    monkeypatch.setattr(status.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(status, "build_info", lambda build, brief: made.append(build) or {"stages": {}})
    reader = BuildReader(demo_build.root, demo_build.data_dir)
    first = status.brief_build_info(reader)
    first["stages"]["x"] = 1  # a caller's copy: the kept info is not changed
    assert status.brief_build_info(reader) == {"stages": {}} and made == [reader]
    clock[0] += status.BRIEF_EVERY_SECONDS
    status.brief_build_info(reader)
    other = BuildReader(demo_build.root, demo_build.data_dir)
    status.brief_build_info(other)
    assert made == [reader, reader, other]
