"""claimtrace.workdir.stages.attribution (``claimtrace attribute``): the first dev claims of a copy
of the demo build attributed and graded, the Transformer's verdict and the LSTM's, recorded in its
manifest, read back through the reader, and killed runs resumed without redoing a finished claim
(a build attributed before the LSTM was gets the LSTM's part only)."""

from __future__ import annotations

import json
import shutil

import pytest

from claimtrace.errors import Missing
from claimtrace.evaluation.attribution import top_words
from claimtrace.models.attribution import METHODS
from claimtrace.workdir.layout import FileManifest
from claimtrace.workdir.reader import BuildReader
from claimtrace.workdir.stages import attribution as stage
from claimtrace.workdir.stages.attribution import BASELINES, LSTM_LEFT_OUT, LSTM_METHODS, attribute_build


@pytest.fixture()
def build_copy(demo_build, tmp_path, data_dir) -> BuildReader:
    root = tmp_path / "demo"
    shutil.copytree(demo_build.root, root)
    return BuildReader(root, data_dir)


def _said(transformer: int, lstm: int, todo: int) -> str:
    return (
        f"attributing {todo} of 2 dev claims on 1 processes"
        f" (the Transformer's verdict on {transformer}, the LSTM's on {lstm})"
    )


def test_two_claims_attributed_graded_recorded_and_resumed(build_copy, data_dir, monkeypatch):
    monkeypatch.setattr(stage, "COSTED_CLAIMS", 1)  # the methods left out timed on one claim
    with pytest.raises(Missing, match="claimtrace attribute"):
        build_copy.attribution_grades()
    said = []
    grades = attribute_build(build_copy, workers=1, limit=2, progress=said.append)
    first_two = list(build_copy.inputs("dev", "retrieved").claim_ids)[:2]
    assert list(grades["claims"]) == first_two and said == [_said(2, 2, 2)]
    assert set(grades["grades"]) == {*METHODS, *BASELINES}
    assert grades["grades"]["exact"]["passed"]["successes"] == 2
    assert grades["grades"]["occlusion"]["passed"]["successes"] == 2  # exact on an additive model
    work = build_copy.work
    files = FileManifest.read(work)
    for path in (work.attribution_grades, work.attribution_claims, work.attribution_lstm):
        assert files.get(path) is not None, path
    assert work.attribution_parts() and work.attribution_parts("lstm")  # kept after a --limit run
    reader = BuildReader(build_copy.root, data_dir)
    records = reader.attribution_claims()
    assert list(records) == first_two
    for record in records.values():
        assert set(record["methods"]) == set(METHODS)
        assert all(len(v) == len(record["positions"]) == len(record["exact"]) for v in record["methods"].values())

    lstm = _check_lstm(reader, grades, first_two)
    summary = grades["lstm"]

    # killed runs: the Transformer's first claim in a file written whole (a build attributed with
    # --limit 1 before the LSTM was), its second cut short mid-line in a worker's scratch; the
    # LSTM's first claim finished in its scratch, its second cut short
    transformer, cut = json.dumps(records[first_two[0]]), json.dumps(records[first_two[1]])[:50]
    finished_lstm, cut_lstm = json.dumps(lstm[first_two[0]]), json.dumps(lstm[first_two[1]])[:40]
    work.attribution_grades.unlink()
    work.attribution_lstm.unlink()
    work.attribution_claims.write_text(transformer + "\n", encoding="utf-8")
    work.attribution_part(0).write_text(cut, encoding="utf-8")
    work.attribution_part(0, "lstm").write_text(finished_lstm + "\n" + cut_lstm, encoding="utf-8")
    said.clear()
    again = attribute_build(BuildReader(build_copy.root, data_dir), workers=1, limit=2, progress=said.append)
    assert said == [_said(1, 1, 1)]
    assert again["claims"] == grades["claims"] and again["lstm"]["claims"] == summary["claims"]
    # a finished run is read back, not computed again
    said.clear()
    assert attribute_build(BuildReader(build_copy.root, data_dir), workers=1, limit=2, progress=said.append) == again
    assert said == []


def _check_lstm(reader: BuildReader, grades: dict, claim_ids: list[str]) -> dict:
    """The LSTM's records: the methods applied, each one's top words, its verdict the build's; the
    first claim also timed for the methods left out; the summary over both claims."""
    lstm = reader.attribution_claims("lstm")
    assert list(lstm) == claim_ids
    built = reader.more_verdicts("dev")
    for index, (claim_id, record) in enumerate(lstm.items()):
        assert list(record["methods"]) == list(LSTM_METHODS)
        for method, values in record["methods"].items():
            assert len(values) == len(record["tokens"]) and record["top"][method] == top_words(record["tokens"], values)
        assert record["verdict"] == built[claim_id]["lstm"]["retrieved"]["alone"]["verdict"]
        assert set(record["cpu_seconds"]) == set(LSTM_METHODS) | (set(LSTM_LEFT_OUT) if index == 0 else set())
    summary = grades["lstm"]
    assert summary["methods"] == list(LSTM_METHODS) and summary["verdict_as_built"] == {"same": 2, "of": 2}
    assert summary["cost"]["kernel_shap"]["claims"] == 1 and summary["cost"]["occlusion"]["claims"] == 2
    assert summary["agreement"]["claims"] == 2 and set(summary["claims"]) == set(claim_ids)
    assert summary["settings"] == grades["settings"]  # the graded settings, so the grade is the method's
    return lstm


def test_a_build_without_lstm_verdicts_stops_before_any_claim_is_attributed(build_copy, monkeypatch):
    """A build made before claimtrace ran the LSTM: the command stops at once naming the file and
    `claimtrace build`, not after minutes of attributing with a KeyError."""
    from claimtrace.errors import DataError

    work = build_copy.work
    path = work.more_verdicts("dev")
    verdicts = json.loads(path.read_text(encoding="utf-8"))
    for entry in verdicts.values():
        entry.pop("lstm")
    path.write_text(json.dumps(verdicts), encoding="utf-8")
    files = FileManifest.read(work)
    files.record(path)  # as that older build wrote it
    monkeypatch.setattr(stage, "_run_workers", lambda *a, **k: pytest.fail("attributed before the check"))
    with pytest.raises(DataError, match=r"classifier/more/dev.json: holds no LSTM verdicts.*claimtrace build"):
        attribute_build(BuildReader(build_copy.root, build_copy.data_dir), workers=1, limit=2)
