"""claimtrace.workdir.stages.attribution (``claimtrace attribute``): the first dev claims of a copy
of the demo build attributed and graded, recorded in its manifest, read back through the reader,
and a killed run resumed without redoing a finished claim."""

from __future__ import annotations

import json
import shutil

import pytest

from claimtrace.errors import Missing
from claimtrace.models.attribution import METHODS
from claimtrace.workdir.layout import FileManifest
from claimtrace.workdir.reader import Build
from claimtrace.workdir.stages.attribution import BASELINES, attribute_build


@pytest.fixture()
def build_copy(demo_build, tmp_path, data_dir) -> Build:
    root = tmp_path / "demo"
    shutil.copytree(demo_build.root, root)
    return Build(root, data_dir)


def test_two_claims_attributed_graded_recorded_and_resumed(build_copy, data_dir):
    with pytest.raises(Missing, match="claimtrace attribute"):
        build_copy.attribution_grades()
    said = []
    grades = attribute_build(build_copy, workers=1, limit=2, progress=said.append)
    first_two = list(build_copy.inputs("dev", "retrieved").claim_ids)[:2]
    assert list(grades["claims"]) == first_two and said == ["attributing 2 of 2 dev claims on 1 processes"]
    assert set(grades["grades"]) == {*METHODS, *BASELINES}
    assert grades["grades"]["exact"]["passed"]["successes"] == 2
    assert grades["grades"]["occlusion"]["passed"]["successes"] == 2  # exact on an additive model
    work = build_copy.work
    files = FileManifest.read(work)
    assert files.get(work.attribution_grades) is not None and files.get(work.attribution_claims) is not None
    assert list(work.attribution_dir.glob(".part-*"))  # kept after a --limit run: a full run reuses them
    reader = Build(build_copy.root, data_dir)
    records = reader.attribution_claims()
    assert list(records) == first_two
    for record in records.values():
        assert set(record["methods"]) == set(METHODS)
        assert all(len(v) == len(record["positions"]) == len(record["exact"]) for v in record["methods"].values())

    # a killed run: the first claim finished, the second cut short mid-line; nothing written whole
    finished = json.dumps(records[first_two[0]])
    work.attribution_grades.unlink()
    work.attribution_claims.unlink()
    work.attribution_part(0).write_text(finished + "\n" + finished[:50], encoding="utf-8")
    said.clear()
    again = attribute_build(Build(build_copy.root, data_dir), workers=1, limit=2, progress=said.append)
    assert said == ["attributing 1 of 2 dev claims on 1 processes"]
    assert again["claims"] == grades["claims"]
    # a finished run is read back, not computed again
    said.clear()
    assert attribute_build(Build(build_copy.root, data_dir), workers=1, limit=2, progress=said.append) == again
    assert said == []
