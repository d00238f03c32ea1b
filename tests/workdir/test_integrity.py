"""Integrity a build can prove: every file in a manifest (size, sha256, item count), damaged or
missing files named by the reader, the server and `claimtrace verify`, repaired by
`claimtrace build` (exactly those, byte for byte); a workdir that can be moved; a corpus edited in
place noticed; the classifier stage resumed per split and evidence source; no machine path on the
site."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from claimtrace import errors
from claimtrace.cli.main import main
from claimtrace.data import files as data
from claimtrace.workdir import layout as workdir
from claimtrace.workdir.builder import build
from claimtrace.workdir.layout import FileManifest, Workdir
from claimtrace.workdir.reader import BuildReader
from claimtrace.workdir.stages import classifier as classifier_stage

HINT = "run `claimtrace build` to repair"


def _copy(demo_build: BuildReader, root: Path) -> Path:
    """A real copy of the demo build (the tests damage and rebuild it)."""
    shutil.copytree(demo_build.root, root)
    return root


def _run(data_dir: Path, *args: str):
    return CliRunner().invoke(main, ["--data", str(data_dir), *args])


def _bytes(root: Path) -> dict[str, bytes]:
    return {path.relative_to(root).as_posix(): path.read_bytes() for path in Workdir(root).artifact_files()}


def _mtimes(root: Path) -> dict[str, int]:
    return {path.relative_to(root).as_posix(): path.stat().st_mtime_ns for path in Workdir(root).artifact_files()}


def _drop_last_lines(path: Path, count: int) -> None:
    """`head -n -COUNT`: whole lines gone, every remaining line whole."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:-count]), encoding="utf-8")


# --- the manifest ---------------------------------------------------------------------------------


def test_every_file_is_in_the_manifest_with_size_hash_and_count(demo_build):
    work = demo_build.work
    files = FileManifest.read(work)
    listed = set(files.files)
    assert listed == {work.relative(path) for path in work.artifact_files()}
    for name, entry in files.files.items():
        path = work.at(name)
        assert entry["bytes"] == path.stat().st_size
        assert entry["sha256"] == workdir.sha256_of(path)[0]
        if name.endswith(".jsonl"):
            assert entry["items"] == len(path.read_text(encoding="utf-8").splitlines())
    assert files.files["tagging/tags/00000.jsonl"]["items"] == demo_build.build_record()["corpus"]["passages"]
    stems = json.loads(work.at("tagging/stems/00000.json").read_text(encoding="utf-8"))
    assert files.files["tagging/stems/00000.json"]["items"] == len(stems)
    recorded = demo_build.build_record()
    assert recorded["corpus"]["source"] == "evidence.json"  # relative to the workdir
    assert recorded["corpus"]["sha256"] == workdir.sha256_of(work.demo_evidence)[0]
    assert files.build == recorded


# --- damaged files: named by the reader and by verify -------------------------------------------


def test_a_tags_chunk_missing_whole_lines_is_named(demo_build, data_dir, tmp_path):
    work = _copy(demo_build, tmp_path / "work")
    _drop_last_lines(work / "tagging" / "tags" / "00000.jsonl", 30)
    result = _run(data_dir, "export", "tags", "--workdir", str(work))
    assert result.exit_code == 2, result.output
    assert "tagging/tags/00000.jsonl: damaged" in result.stderr and HINT in result.stderr
    verified = _run(data_dir, "verify", "--workdir", str(work))
    assert verified.exit_code == 2 and "tagging/tags/00000.jsonl" in verified.stderr
    assert "items" in verified.stderr or "bytes" in verified.stderr


def test_retrieval_cut_by_head_then_predict_refuses(demo_build, data_dir, tmp_path):
    work = _copy(demo_build, tmp_path / "work")
    _drop_last_lines(work / "retrieval" / "dev.jsonl", 20)
    out = tmp_path / "predictions.json"
    result = _run(data_dir, "predict", "--workdir", str(work), "--split", "dev", "--out", str(out))
    assert result.exit_code == 2 and "retrieval/dev.jsonl: damaged" in result.stderr and HINT in result.stderr
    assert not out.exists()
    verified = _run(data_dir, "verify", "--workdir", str(work), "--json")
    assert verified.exit_code == 2
    assert list(json.loads(verified.stdout)["damaged"]) == ["retrieval/dev.jsonl"]


def test_verify_passes_a_whole_build_and_names_a_same_size_change(demo_build, data_dir, tmp_path):
    work = _copy(demo_build, tmp_path / "work")
    assert _run(data_dir, "verify", "--workdir", str(work)).exit_code == 0
    path = work / "classifier" / "dev.json"
    text = path.read_text(encoding="utf-8")
    flipped = text.replace('"verdict": "SUPPORTS"', '"verdict": "REFUTES!"', 1)  # same length, still JSON
    assert flipped != text and len(flipped) == len(text)
    path.write_text(flipped, encoding="utf-8")
    result = _run(data_dir, "verify", "--workdir", str(work))
    assert result.exit_code == 2 and "classifier/dev.json: content changed" in result.stderr


def test_verify_names_a_missing_file_and_a_build_without_manifest(demo_build, data_dir, tmp_path):
    work = _copy(demo_build, tmp_path / "work")
    (work / "retrieval" / "index.npz").unlink()
    result = _run(data_dir, "verify", "--workdir", str(work))
    assert result.exit_code == 2 and "retrieval/index.npz: missing" in result.stderr
    (work / "manifest.json").unlink()
    result = _run(data_dir, "verify", "--workdir", str(work))
    assert result.exit_code == 2 and "before claimtrace kept a manifest" in result.stderr


# --- the server -----------------------------------------------------------------------------------


def test_the_site_answers_503_naming_a_damaged_file_and_reports_it(demo_build, data_dir, tmp_path):
    from fastapi.testclient import TestClient

    from claimtrace.web.app import create_app

    work = _copy(demo_build, tmp_path / "work")
    with open(work / "classifier" / "dev.json", "a", encoding="utf-8") as handle:
        handle.write("\n")  # still valid JSON: only the manifest's size shows it
    with TestClient(create_app(build=BuildReader(work, data_dir))) as client:
        for page in ("/", "/claim/claim-752.json", "/explore/dev.json"):
            answer = client.get(page)
            assert answer.status_code == 503, (page, answer.status_code)
            assert "classifier/dev.json" in answer.text and "claimtrace build" in answer.text
            assert str(tmp_path) not in answer.text
        report = client.get("/api/build.json").json()
    assert report["files"]["manifest"] == "ok"
    assert list(report["files"]["damaged"]) == ["classifier/dev.json"]
    assert report["stages"]["classifier"]["status"] == "damaged"
    assert str(tmp_path) not in json.dumps(report)


def test_no_machine_path_in_traces_build_report_or_static_export(demo_build, data_dir, tmp_path):
    from fastapi.testclient import TestClient

    from claimtrace.web.app import create_app

    root = str(demo_build.root.resolve())
    with TestClient(create_app(build=demo_build)) as client:
        for page in (
            "/api/trace?claim=claim-752",
            "/claim/claim-752.json",
            "/api/build.json",
            "/index.json",
            "/walkthrough.json",
        ):
            answer = client.get(page)
            assert answer.status_code == 200, page
            assert root not in answer.text and str(demo_build.root) not in answer.text, page
            assert '"/tmp' not in answer.text and '"/work' not in answer.text, page
    out = tmp_path / "site"
    result = _run(data_dir, "site", "--workdir", str(demo_build.root), "--out", str(out), "--limit", "2", "--json")
    assert result.exit_code == 0, result.output
    report = (out / "api" / "build.json").read_text(encoding="utf-8")
    assert root not in report and '"/tmp' not in report and '"/work' not in report


# --- repair -----------------------------------------------------------------------------------


def test_build_repairs_exactly_the_damaged_files_byte_for_byte(demo_build, data_dir, tmp_path):
    work = _copy(demo_build, tmp_path / "work")
    whole = _bytes(work)
    damaged = [
        "tagging/tags/00000.jsonl",
        "tagging/vectorizer.npz",
        "retrieval/dev.jsonl",
        "classifier/dev.json",
        "build.json",
        "evidence.json",
    ]
    for name in damaged:
        path = work / name
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    before = _mtimes(work)
    result = _run(data_dir, "build", "--workdir", str(work))  # the workdir's own corpus and checkpoint
    assert result.exit_code == 0, (result.output, result.exception)
    assert _bytes(work) == whole  # every file as a fresh build wrote it
    after = _mtimes(work)
    assert sorted(name for name in after if after[name] != before[name]) == sorted(damaged)
    assert "identical to what the build first wrote" in result.stderr
    assert _run(data_dir, "verify", "--workdir", str(work)).exit_code == 0


def test_a_build_made_before_the_manifest_is_upgraded_in_place(demo_build, data_dir, tmp_path):
    work = _copy(demo_build, tmp_path / "work")
    (work / "manifest.json").unlink()
    old = json.loads((work / "build.json").read_text(encoding="utf-8"))  # an older claimtrace's build.json
    old["corpus"] = {"kind": "demo", "source": str((work / "evidence.json").resolve()), "passages": 5240}
    (work / "build.json").write_text(json.dumps(old, indent=1), encoding="utf-8")
    assert BuildReader(work, data_dir).file_manifest() is None  # read, unchecked, until it is upgraded
    _drop_last_lines(work / "retrieval" / "test.jsonl", 1)
    with (work / "retrieval" / "test.jsonl").open("a", encoding="utf-8") as handle:
        handle.write('{"claim_id": "cut')  # a last line cut: not whole, rebuilt
    result = _run(data_dir, "build", "--demo", "--workdir", str(work))
    assert result.exit_code == 0, (result.output, result.exception)
    assert "before claimtrace kept a manifest" in result.stderr
    recorded = json.loads((work / "build.json").read_text(encoding="utf-8"))["corpus"]
    assert recorded["source"] == "evidence.json" and "sha256" in recorded
    assert (work / "retrieval" / "test.jsonl").read_bytes() == (
        demo_build.root / "retrieval" / "test.jsonl"
    ).read_bytes()
    assert _run(data_dir, "verify", "--workdir", str(work)).exit_code == 0


# --- a workdir moved or copied; a corpus edited in place ------------------------------------------


@pytest.fixture()
def small_evidence(tmp_path, data_dir):
    corpus = dict(list(data.demo_corpus(data_dir).items())[:600])
    folder = tmp_path / "project"
    folder.mkdir()
    path = folder / "evidence.json"
    path.write_text(json.dumps(corpus, ensure_ascii=False), encoding="utf-8")
    return path


def test_a_copied_demo_workdir_rebuilds_and_serves_in_its_new_place(demo_build, data_dir, tmp_path):
    work = _copy(demo_build, tmp_path / "elsewhere" / "copy")
    before = _mtimes(work)
    result = _run(data_dir, "build", "--demo", "--workdir", str(work))
    assert result.exit_code == 0, (result.output, result.exception)
    assert _mtimes(work) == before  # nothing to redo
    explained = _run(data_dir, "explain", "claim-752", "--workdir", str(work), "--json")
    assert explained.exit_code == 0, explained.output


def test_a_moved_workdir_finds_its_corpus_by_relative_path(small_evidence, data_dir, tmp_path):
    with pytest.warns(errors.EvidenceChecksumWarning):
        build(small_evidence.parent / "work", data_dir, small_evidence, processes=1, until="tagging")
    recorded = json.loads((small_evidence.parent / "work" / "build.json").read_text(encoding="utf-8"))
    assert recorded["corpus"]["source"] == "../evidence.json"
    moved = tmp_path / "moved"
    shutil.move(small_evidence.parent, moved)
    before = _mtimes(moved / "work")
    result = _run(data_dir, "build", "--workdir", str(moved / "work"), "--until", "tagging")
    assert result.exit_code == 0, (result.output, result.exception)
    assert _mtimes(moved / "work") == before


def test_a_corpus_edited_in_place_is_noticed(small_evidence, data_dir, tmp_path):
    work = small_evidence.parent / "work"
    with pytest.warns(errors.EvidenceChecksumWarning):
        build(work, data_dir, small_evidence, processes=1, until="tagging")
    corpus = json.loads(small_evidence.read_text(encoding="utf-8"))
    first = next(iter(corpus))
    corpus[first] = "Sea levels are rising faster along the coasts of warming oceans."
    small_evidence.write_text(json.dumps(corpus, ensure_ascii=False), encoding="utf-8")  # same path, same count
    args = ("build", "--evidence", str(small_evidence), "--workdir", str(work), "--until", "tagging")
    refused = _run(data_dir, *args)
    assert refused.exit_code == 2 and "changed since this workdir was built" in refused.stderr
    assert "--corpus-changed" in refused.stderr
    rebuilt = _run(data_dir, *args, "--corpus-changed")
    assert rebuilt.exit_code == 0, (rebuilt.output, rebuilt.exception)
    with pytest.warns(errors.EvidenceChecksumWarning):
        build(tmp_path / "fresh", data_dir, small_evidence, processes=1, until="tagging")
    assert list(BuildReader(work).iter_tags()) == list(BuildReader(tmp_path / "fresh").iter_tags())
    assert (work / "tagging" / "vectorizer.npz").read_bytes() == (
        tmp_path / "fresh" / "tagging" / "vectorizer.npz"
    ).read_bytes()


# --- the classifier stage resumes per split and evidence source ----------------------------------


def test_a_killed_classifier_stage_redoes_only_unfinished_pieces(demo_build, data_dir, tmp_path, monkeypatch):
    work = _copy(demo_build, tmp_path / "work")
    whole = _bytes(work)
    # train's verdicts stay (a split finished before the kill); dev and test are to be redone
    for name in ("dev", "test"):
        (work / "classifier" / f"{name}.json").unlink()
    (work / "classifier" / "summary.json").unlink()
    train_written = (work / "classifier" / "train.json").stat().st_mtime_ns
    real_piece, done = classifier_stage.classify_piece, []

    def dying_piece(reader, classifier, split, source):
        if len(done) == 1:
            raise KeyboardInterrupt("killed between two pieces")
        done.append((split, source))
        return real_piece(reader, classifier, split, source)

    monkeypatch.setattr(classifier_stage, "classify_piece", dying_piece)
    with pytest.raises(KeyboardInterrupt):
        build(work, data_dir, None, processes=1)
    assert done == [("dev", "retrieved")]
    assert not (work / "classifier" / "dev.json").exists()  # its split not finished: kept as a piece
    assert sorted(p.name for p in (work / "classifier" / "parts").iterdir()) == ["dev-retrieved.json"]

    real_predict, predicted = classifier_stage.predict, []

    def counted_predict(classifier, encoded):
        predicted.append(len(encoded))
        return real_predict(classifier, encoded)

    monkeypatch.setattr(classifier_stage, "classify_piece", real_piece)
    monkeypatch.setattr(classifier_stage, "predict", counted_predict)
    build(work, data_dir, None, processes=1)
    dev, test = len(demo_build.claims("dev")), len(demo_build.claims("test"))
    assert predicted == [dev, test]  # dev's gold and test's retrieved: nothing finished was redone
    assert (work / "classifier" / "train.json").stat().st_mtime_ns == train_written
    assert not (work / "classifier" / "parts").exists()
    assert _bytes(work) == whole
