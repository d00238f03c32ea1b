"""The build: chunked, resumable, atomic; exports."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from claimtrace import build as build_module
from claimtrace import data, errors, workdir
from claimtrace.artifacts import Build
from claimtrace.build import build
from claimtrace.cli import main


@pytest.fixture()
def small_evidence(tmp_path, data_dir):
    """The first 600 demo passages plus a duplicate text, as a user's evidence.json."""
    corpus = dict(list(data.demo_corpus(data_dir).items())[:600])
    corpus["evidence-9999999"] = corpus["evidence-67732"]
    path = tmp_path / "evidence.json"
    path.write_text(json.dumps(corpus, ensure_ascii=False), encoding="utf-8")
    return path


def _files(root):
    return {p.relative_to(root).as_posix(): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def test_killed_build_resumes_without_redoing_chunks(tmp_path, data_dir, small_evidence, monkeypatch):
    monkeypatch.setattr(workdir, "CHUNK", 100)  # the one chunk size: the build's and the reader's
    whole = tmp_path / "whole"
    with pytest.warns(errors.EvidenceChecksumWarning):
        expected = build(whole, data_dir, small_evidence, processes=1, until="tagging")

    killed = tmp_path / "killed"
    real_write = build_module.write_atomic
    written = []

    def dying_write(path, text):
        if "tags" in str(path):
            if len(written) == 3:
                raise KeyboardInterrupt("killed")
            written.append(path)
        real_write(path, text)

    monkeypatch.setattr(build_module, "write_atomic", dying_write)
    with pytest.warns(errors.EvidenceChecksumWarning), pytest.raises(KeyboardInterrupt):
        build(killed, data_dir, small_evidence, processes=1, until="tagging")
    before = _files(killed)
    assert not [name for name in before if name.endswith(".tmp") or "/." in name]  # no half-written file
    assert sum(name.startswith("tagging/tags/") for name in before) == 3

    monkeypatch.setattr(build_module, "write_atomic", real_write)
    with pytest.warns(errors.EvidenceChecksumWarning):
        resumed = build(killed, data_dir, small_evidence, processes=1, until="tagging")
    after = _files(killed)
    rewritten = ("tagging/summary.json", "manifest.json")  # the manifest records what the resumed run adds
    assert all(after[name] == mtime for name, mtime in before.items() if name not in rewritten)
    expected["tagging"].pop("timings"), resumed["tagging"].pop("timings")
    assert resumed == expected
    assert list(Build(killed).iter_tags()) == list(Build(whole).iter_tags())


def test_duplicate_texts_get_the_same_tags(tmp_path, data_dir, small_evidence):
    with pytest.warns(errors.EvidenceChecksumWarning):
        build(tmp_path / "w", data_dir, small_evidence, processes=1, until="tagging")
    tags = {row["id"]: row["tags"] for row in Build(tmp_path / "w").iter_tags()}
    assert tags["evidence-9999999"] == tags["evidence-67732"]


def test_build_refuses_another_corpus_in_the_same_workdir(tmp_path, data_dir, small_evidence):
    with pytest.warns(errors.EvidenceChecksumWarning):
        build(tmp_path / "w", data_dir, small_evidence, processes=1, until="tagging")
    other = tmp_path / "other.json"
    other.write_text('{"evidence-1": "Some text.", "evidence-2": "More text."}', encoding="utf-8")
    result = CliRunner().invoke(
        main, ["--data", str(data_dir), "build", "--evidence", str(other), "--workdir", str(tmp_path / "w")]
    )
    assert result.exit_code == 2 and "use another --workdir" in result.output


@pytest.mark.parametrize(
    "text, message", [("[1]", "expected a JSON object"), ('{"e": 1}', "is a number, not a string")]
)
def test_bad_evidence_file_is_named(tmp_path, data_dir, text, message):
    bad = tmp_path / "evidence.json"
    bad.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(
        main, ["--data", str(data_dir), "build", "--evidence", str(bad), "--workdir", str(tmp_path / "w")]
    )
    assert result.exit_code == 2
    assert str(bad) in result.output and message in result.output


def test_build_needs_one_corpus(tmp_path, data_dir):
    result = CliRunner().invoke(main, ["--data", str(data_dir), "build", "--workdir", str(tmp_path)])
    assert result.exit_code == 2 and "exactly one of --demo and --evidence" in result.output


def test_export_tags(demo_build):
    result = CliRunner().invoke(main, ["export", "tags", "--workdir", str(demo_build.root)])
    assert result.exit_code == 0
    lines = [json.loads(line) for line in result.output.splitlines()]
    assert len(lines) == 5240 and set(lines[0]) == {"id", "tags"}
    assert all(line["tags"] == sorted(line["tags"]) for line in lines)


def test_demo_summary(demo_build):
    summary = demo_build.tagging_summary()
    assert summary["passages"] == 5240 and summary["features"] == 20000
    assert summary["fit_documents"] == 10777
    assert summary["last_feature"] == "μm" and summary["passages_with_last_feature"] == 199
    example = summary["padding_example"]
    assert example is not None and demo_build.passage_text(example) is not None


def test_export_retrieval(demo_build):
    result = CliRunner().invoke(main, ["export", "retrieval", "--workdir", str(demo_build.root), "--split", "dev"])
    assert result.exit_code == 0
    records = [json.loads(line) for line in result.output.splitlines()]
    assert len(records) == 154
    assert set(records[0]) == {"claim_id", "tags", "evidences", "fallback", "passed", "kept"}
    assert all(len(r["evidences"]) <= 6 for r in records)


def test_predict_scores_through_evaluate(demo_build, tmp_path, data_dir):
    out = tmp_path / "dev-predictions.json"
    runner = CliRunner()
    result = runner.invoke(
        main,
        ["--data", str(data_dir), "predict", "--workdir", str(demo_build.root), "--split", "dev", "--out", str(out)],
    )
    assert result.exit_code == 0, result.output
    predictions = json.loads(out.read_text(encoding="utf-8"))
    assert len(predictions) == 154 and set(next(iter(predictions.values()))) == {
        "claim_text",
        "claim_label",
        "evidences",
    }
    scored = json.loads(
        runner.invoke(main, ["--data", str(data_dir), "evaluate", "--predictions", str(out), "--json"]).output
    )
    report = json.loads(
        runner.invoke(main, ["--data", str(data_dir), "evaluate", "--workdir", str(demo_build.root), "--json"]).output
    )
    assert report["course"]["F"] == scored["F"] and report["course"]["A"] == scored["A"]
    assert set(report["classifier"]) == {"gold", "retrieved"}
    assert set(report["classifier"]["gold"]) == {"alone", "notebook"}
    assert len(report["classifier"]["gold"]["notebook"]["confusion"]) == 4
    assert {row["variant"] for row in report["variants"]} >= {
        "notebook",
        "raw-claim-text",
        "cosine-once",
        "unpadded-tags",
    }
    assert 0.0 <= report["fallback_share"] <= 1.0


def test_whole_small_build_and_its_resume(tmp_path, data_dir, small_evidence):
    """All three stages on a user's evidence file; a second run redoes nothing."""
    with pytest.warns(errors.EvidenceChecksumWarning):
        first = build(tmp_path / "w", data_dir, small_evidence, processes=1, until="retrieval")
    files = _files(tmp_path / "w")
    with pytest.warns(errors.EvidenceChecksumWarning):
        again = build(tmp_path / "w", data_dir, small_evidence, processes=1, until="retrieval")
    assert again["retrieval"] == first["retrieval"]
    assert {k: v for k, v in _files(tmp_path / "w").items() if k != "tagging/summary.json"} == {
        k: v for k, v in files.items() if k != "tagging/summary.json"
    }
    records = [json.loads(line) for line in (tmp_path / "w" / "retrieval" / "dev.jsonl").read_text().splitlines()]
    assert len(records) == 154


def test_killed_bm25_stage_resumes(tmp_path, data_dir, small_evidence, monkeypatch):
    """The BM25 stage killed mid-index, then mid-records, ends as a one-shot build does."""
    from claimtrace import bm25

    monkeypatch.setattr(build_module, "BM25_CHUNK", 100)
    with pytest.warns(errors.EvidenceChecksumWarning):
        expected = build(tmp_path / "whole", data_dir, small_evidence, processes=1, until="bm25")["bm25"]

    killed = tmp_path / "killed"
    real_chunk, real_write = bm25._write_chunk, build_module.write_atomic
    chunks = []

    def dying_chunk(job):
        if len(chunks) == 3:
            raise KeyboardInterrupt("killed")
        chunks.append(job[0])
        real_chunk(job)

    monkeypatch.setattr(bm25, "_write_chunk", dying_chunk)
    with pytest.warns(errors.EvidenceChecksumWarning), pytest.raises(KeyboardInterrupt):
        build(killed, data_dir, small_evidence, processes=1, until="bm25")
    assert sorted(p.name for p in (killed / "bm25" / "chunks").iterdir()) == ["00000.npz", "00001.npz", "00002.npz"]
    monkeypatch.setattr(bm25, "_write_chunk", real_chunk)

    def dying_write(path, text):
        if "bm25-test" in str(path):
            raise KeyboardInterrupt("killed")
        real_write(path, text)

    monkeypatch.setattr(build_module, "write_atomic", dying_write)
    with pytest.warns(errors.EvidenceChecksumWarning), pytest.raises(KeyboardInterrupt):
        build(killed, data_dir, small_evidence, processes=1, until="bm25")
    assert (killed / "bm25" / "index").is_dir() and not (killed / "bm25" / "chunks").exists()
    assert (killed / "retrieval" / "bm25-dev.jsonl").is_file() and not (killed / "bm25" / "summary.json").exists()
    kept = _files(killed)

    monkeypatch.setattr(build_module, "write_atomic", real_write)
    with pytest.warns(errors.EvidenceChecksumWarning):
        resumed = build(killed, data_dir, small_evidence, processes=1, until="bm25")["bm25"]
    now = _files(killed)  # nothing finished was redone (the manifest records what the resumed run adds)
    assert all(now[name] == mtime for name, mtime in kept.items() if name != "manifest.json")
    expected.pop("seconds"), resumed.pop("seconds")
    assert resumed == expected
    for split in ("train", "dev", "test"):
        assert Build(killed).bm25_retrieval(split) == Build(tmp_path / "whole").bm25_retrieval(split)
