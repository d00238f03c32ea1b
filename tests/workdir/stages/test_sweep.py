"""The sweep step (claimtrace.workdir.stages.sweep): its file is the build's, recorded in the
manifest, read back without recomputing, and written again, the same bytes, when it is lost."""

from __future__ import annotations

import shutil

from claimtrace.workdir.reader import BuildReader
from claimtrace.workdir.stages.sweep import build_sweep


def test_written_once_and_read_back(demo_build):
    path = demo_build.work.sweep
    recorded = demo_build.file_manifest().get(path)
    assert recorded is not None and recorded["bytes"] == path.stat().st_size
    assert build_sweep(demo_build) == demo_build.sweep()  # the file, not a second computation


def test_a_lost_sweep_is_written_again_the_same(demo_build, demo_root, tmp_path):
    copy = tmp_path / "build"
    shutil.copytree(demo_root, copy)
    before = (copy / "sweep" / "dev.json").read_bytes()
    (copy / "sweep" / "dev.json").unlink()
    build_sweep(BuildReader(copy, demo_build.data_dir))
    assert (copy / "sweep" / "dev.json").read_bytes() == before
    assert not list((copy / "sweep").glob("*.tmp*"))  # written aside and renamed: nothing left over
