"""A workdir's layout and manifest (workdir/layout.py): the stages in build order, the chunk
size read at call time, the paths a build writes and which of them are artifacts, and the
manifest that records each file and finds it missing, cut or changed."""

from __future__ import annotations

import hashlib
import json

import pytest

from claimtrace.errors import REPAIR_HINT, DataError, Missing
from claimtrace.workdir import layout
from claimtrace.workdir.builder import build
from claimtrace.workdir.layout import STAGES, FileManifest, Stage, Workdir, chunk_spans, sha256_of


def test_the_stages_in_build_order():
    assert STAGES == ("tagging", "retrieval", "bm25", "classifier")
    assert [Stage(name) for name in STAGES] == list(Stage) == sorted(reversed(list(Stage)))
    assert Stage.TAGGING < Stage.RETRIEVAL < Stage.BM25 < Stage.CLASSIFIER
    assert Stage.BM25 <= Stage.BM25 and Stage.CLASSIFIER > Stage.BM25 and not Stage.RETRIEVAL >= Stage.BM25


def test_a_build_until_an_unknown_stage_is_refused_before_anything_is_written(tmp_path, data_dir):
    with pytest.raises(
        ValueError, match=r"^until must be one of tagging, retrieval, bm25, classifier, got 'verdicts'$"
    ):
        build(tmp_path / "w", data_dir, until="verdicts")
    assert not (tmp_path / "w").exists()


def test_chunks_are_spans_of_the_chunk_size_read_at_call_time(monkeypatch):
    assert chunk_spans(0) == []
    assert chunk_spans(layout.CHUNK + 1) == [(0, layout.CHUNK), (layout.CHUNK, layout.CHUNK + 1)]
    monkeypatch.setattr(layout, "CHUNK", 100)
    assert chunk_spans(250) == [(0, 100), (100, 200), (200, 250)]


def test_paths_of_a_workdir(tmp_path):
    work = Workdir(tmp_path)
    assert work.relative(work.retrieval("dev")) == "retrieval/dev.jsonl"
    assert work.at("retrieval/variants/cosine-once-test.jsonl") == work.variant_retrieval("cosine-once", "test")
    assert work.inputs("dev", "bm25") == tmp_path / "classifier" / "inputs" / "dev-bm25.npz"
    assert Workdir.chunk(work.tags_dir, 3, ".jsonl") == tmp_path / "tagging" / "tags" / "00003.jsonl"
    assert work.corpus_path("../evidence.json") == tmp_path / ".." / "evidence.json"  # relative to the workdir
    assert work.corpus_path("/data/evidence.json") == layout.Path("/data/evidence.json")  # an older build.json's


def test_attribution_scratch_files_per_worker_and_model(tmp_path):
    work = Workdir(tmp_path)
    # the Transformer's keep the name they had before the LSTM was attributed: a run killed then resumes
    assert (
        work.attribution_part(1).name == ".part-1.jsonl"
        and work.attribution_part(0, "lstm").name == ".lstm-part-0.jsonl"
    )
    parts = [_write(work.attribution_part(k, model)) for model in ("lstm", "transformer") for k in (1, 0)]
    assert work.attribution_parts() == [parts[3], parts[2]] and work.attribution_parts("lstm") == [parts[1], parts[0]]
    assert work.attribution_lstm == tmp_path / "attribution" / "lstm.jsonl"


def _write(path, text="x\n"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_artifacts_are_the_files_kept_whole(tmp_path):
    work = Workdir(tmp_path)
    kept = [_write(work.build_record, "{}"), _write(work.retrieval("dev")), _write(work.bm25_index / "params.json")]
    for scratch in (
        work.file_manifest,  # the manifest lists the artifacts: it is not one
        work.root / ".build.lock",
        work.root / "retrieval" / ".dev.jsonl.tmp",  # a temporary of atomic_output's
        work.bm25_dir / "chunks" / "00000.npz",  # removed once merged
        work.classifier_part("dev", "gold"),
    ):
        _write(scratch)
    assert work.artifact_files() == sorted(kept, key=lambda path: (path.parent != tmp_path, str(path)))


def test_a_stage_is_done_when_the_file_it_writes_last_is_there(tmp_path):
    work = Workdir(tmp_path)
    assert work.stages_not_built() == list(STAGES)
    _write(work.tagging_summary, "{}")
    _write(work.bm25_summary, "{}")
    assert work.stage_done(Stage.TAGGING) and not work.stage_done(Stage.RETRIEVAL)
    assert work.stages_not_built() == ["retrieval", "classifier"]
    _write(work.scoreboard, "{}")  # the classifier stage's last step
    assert work.stages_not_built() == ["retrieval"]


def test_a_missing_build_record_says_what_to_run(tmp_path):
    work = Workdir(tmp_path)
    with pytest.raises(Missing, match=r"not a claimtrace build \(no build.json\): run `claimtrace build` first"):
        work.read_build_record()
    _write(work.file_manifest, "{}")  # a build whose build.json was lost: the manifest keeps a copy
    with pytest.raises(Missing, match=rf"build.json: missing: run `claimtrace build --workdir {tmp_path}` to repair"):
        work.read_build_record()
    _write(work.build_record, '{"corpus": {"kind": "demo"}}')
    assert work.read_build_record() == {"corpus": {"kind": "demo"}}


def test_sha256_size_and_lines_of_a_file_in_one_read(tmp_path):
    body = b"".join(f'{{"n": {i}}}\n'.encode() for i in range(100_000))  # several 1 MiB blocks
    path = tmp_path / "records.jsonl"
    path.write_bytes(body)
    assert sha256_of(path) == (hashlib.sha256(body).hexdigest(), len(body), 100_000)
    assert sha256_of(path, block=7) == sha256_of(path)


def test_the_manifest_records_each_file_with_its_size_hash_and_items(tmp_path):
    work = Workdir(tmp_path)
    records = _write(work.retrieval("dev"), '{"claim_id": "a"}\n{"claim_id": "b"}\n')
    stems = _write(Workdir.chunk(work.stems_dir, 0, ".json"), '[["a", "b"], ["c", "d"], ["e", "f"]]')
    files = FileManifest(work, build={"corpus": {"kind": "demo"}})
    files.record(records, save=False)
    files.record(stems, items=3)  # a JSON list: its items are not lines
    on_disk = json.loads(work.file_manifest.read_text(encoding="utf-8"))
    assert on_disk["format"] == layout.MANIFEST_FORMAT and on_disk["build"] == {"corpus": {"kind": "demo"}}
    assert on_disk["files"] == {
        "retrieval/dev.jsonl": {"bytes": 36, "sha256": hashlib.sha256(records.read_bytes()).hexdigest(), "items": 2},
        "tagging/stems/00000.json": {"bytes": 36, "sha256": hashlib.sha256(stems.read_bytes()).hexdigest(), "items": 3},
    }
    assert list(on_disk["files"]) == sorted(on_disk["files"])
    read = FileManifest.read(work)
    assert read.files == files.files and read.get(records) == files.get(records)
    assert read.get(tmp_path.parent / "elsewhere.json") is None  # outside the workdir: the shipped checkpoint


def test_saving_keeps_what_another_process_recorded_and_drops_what_is_gone(tmp_path):
    work = Workdir(tmp_path)
    first, second = _write(work.retrieval("dev")), _write(work.retrieval("test"))
    mine, theirs = FileManifest(work), FileManifest(work)
    mine.record(first)
    theirs.record(second)  # written meanwhile by another build of the same workdir
    assert set(FileManifest.read(work).files) == {"retrieval/dev.jsonl", "retrieval/test.jsonl"}
    stamp = work.file_manifest.stat().st_mtime_ns
    FileManifest.read(work).save()
    assert work.file_manifest.stat().st_mtime_ns == stamp  # unchanged: not written again
    first.unlink()
    FileManifest.read(work).save()
    assert set(FileManifest.read(work).files) == {"retrieval/test.jsonl"}


def test_a_manifest_not_of_its_format_is_damaged(tmp_path):
    work = Workdir(tmp_path)
    assert FileManifest.read(work) is None  # a build made before manifests
    _write(work.file_manifest, '{"format": 99, "files": {}}')
    with pytest.raises(DataError, match=rf"manifest.json: damaged \(not a format 1 manifest\): {REPAIR_HINT}"):
        FileManifest.read(work)


def test_the_manifest_finds_a_file_missing_cut_or_changed(tmp_path):
    work = Workdir(tmp_path)
    path = _write(work.retrieval("dev"), '{"claim_id": "a"}\n{"claim_id": "b"}\n')
    files = FileManifest(work)
    files.record(path, save=False)
    assert files.problems(full=True) == {}
    path.write_text('{"claim_id": "a"}\n{"claim_id": "c"}\n', encoding="utf-8")  # the same size
    assert files.cheap_problem(path) is None
    assert files.full_problem(path).startswith("content changed (sha256 ")
    path.write_text('{"claim_id": "a"}\n', encoding="utf-8")  # cut at a line's end
    assert files.cheap_problem(path) == "18 bytes, but the build wrote 36"
    files.record(path, items=2, save=False)  # as if the build had counted two
    assert files.full_problem(path) == "1 items, but the build wrote 2"
    path.unlink()
    assert files.problems(full=False) == {"retrieval/dev.jsonl": "missing"}


def test_a_running_build_is_seen_by_its_lock(tmp_path):
    """`serve --while-building` and the pages know a build is writing the workdir by the lock it
    holds: a file not there yet is then "being made", else the command that makes it."""
    from claimtrace.workdir.builder import workdir_lock
    from claimtrace.workdir.layout import BEING_BUILT, Workdir

    work = Workdir(tmp_path)
    assert not work.build_running() and "run `claimtrace build --workdir" in work.not_built_hint()
    with workdir_lock(work):
        assert work.build_running() and work.not_built_hint() == BEING_BUILT
    assert not work.build_running() and not work.build_lock.exists()
    assert not work.verdicts_written()
    work.classifier_summary.parent.mkdir(parents=True)
    work.classifier_summary.write_text("{}")
    assert work.verdicts_written()
