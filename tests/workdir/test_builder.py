"""The build (claimtrace.workdir.builder): chunked, resumable, atomic, with jobs alongside."""

from __future__ import annotations

import json
import warnings

import pytest

from claimtrace import errors
from claimtrace.data import files as data
from claimtrace.workdir import builder as builder_module
from claimtrace.workdir import layout as workdir
from claimtrace.workdir.builder import build
from claimtrace.workdir.layout import Stage
from claimtrace.workdir.reader import BuildReader
from claimtrace.workdir.stages import bm25 as bm25_stage
from claimtrace.workdir.stages import tagging as tagging_stage


def _files(root):
    return {p.relative_to(root).as_posix(): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def _manifest_entries(root):
    """manifest.json's entries, the summaries' bytes and digests left out (they hold timings)."""
    files = json.loads((root / "manifest.json").read_text(encoding="utf-8"))["files"]
    timed = ("summary.json",)
    return {
        name: {k: v for k, v in entry.items() if not (name.endswith(timed) and k in ("bytes", "sha256"))}
        for name, entry in files.items()
    }


def test_killed_build_resumes_without_redoing_chunks(tmp_path, data_dir, small_evidence, monkeypatch):
    monkeypatch.setattr(workdir, "CHUNK", 100)  # the one chunk size: the build's and the reader's
    whole = tmp_path / "whole"
    with pytest.warns(errors.EvidenceChecksumWarning):
        expected = build(whole, data_dir, small_evidence, processes=1, until="tagging")

    killed = tmp_path / "killed"
    real_write = tagging_stage.write_atomic
    written = []

    def dying_write(path, text):
        if "tags" in str(path):
            if len(written) == 3:
                raise KeyboardInterrupt("killed")
            written.append(path)
        real_write(path, text)

    monkeypatch.setattr(tagging_stage, "write_atomic", dying_write)
    with pytest.warns(errors.EvidenceChecksumWarning), pytest.raises(KeyboardInterrupt):
        build(killed, data_dir, small_evidence, processes=1, until="tagging")
    before = _files(killed)
    assert not [name for name in before if name.endswith(".tmp") or "/." in name]  # no half-written file
    assert sum(name.startswith("tagging/tags/") for name in before) == 3

    monkeypatch.setattr(tagging_stage, "write_atomic", real_write)
    with pytest.warns(errors.EvidenceChecksumWarning):
        resumed = build(killed, data_dir, small_evidence, processes=1, until="tagging")
    after = _files(killed)
    rewritten = ("tagging/summary.json", "manifest.json")  # the manifest records what the resumed run adds
    assert all(after[name] == mtime for name, mtime in before.items() if name not in rewritten)
    expected["tagging"].pop("timings"), resumed["tagging"].pop("timings")
    assert resumed == expected
    assert list(BuildReader(killed).iter_tags()) == list(BuildReader(whole).iter_tags())
    assert _manifest_entries(killed) == _manifest_entries(whole)  # item counts of chunks written before the kill


def test_passage_stems_are_the_builds_and_an_older_build_without_them_still_reads(
    tmp_path, data_dir, small_evidence, preprocessor
):
    """tagging/stems.npz gives each passage the stems its text preprocesses to (a duplicate text
    its first copy's); a build without it answers None (the trace preprocesses), and the next
    build writes it again, the same bytes."""
    preprocess = preprocessor.preprocess
    root = tmp_path / "w"
    with pytest.warns(errors.EvidenceChecksumWarning):
        build(root, data_dir, small_evidence, processes=1, until="tagging")
    corpus = json.loads(small_evidence.read_text(encoding="utf-8"))
    reader = BuildReader(root, data_dir)
    assert all(reader.passage_stems(pid) == preprocess(text).text() for pid, text in corpus.items())
    assert reader.passage_stems("evidence-9999999") == reader.passage_stems("evidence-67732")
    assert reader.passage_stems("no-such-passage") is None
    stored = (root / "tagging" / "stems.npz").read_bytes()
    (root / "tagging" / "stems.npz").unlink()
    assert BuildReader(root, data_dir).passage_stems("evidence-67732") is None
    with pytest.warns(errors.EvidenceChecksumWarning):
        build(root, data_dir, small_evidence, processes=1, until="tagging")
    assert (root / "tagging" / "stems.npz").read_bytes() == stored


def test_a_build_without_its_restemmed_tokens_is_missing_them_until_its_next_run(tmp_path, data_dir, small_evidence):
    """tagging/restemmed.npz is a stage file as any other: recorded in the manifest, checked by
    verify; a build made without it (an older one) has its tagging vectorizer and retrieval
    model missing, saying what to run, and the next build writes it, the same bytes."""
    root = tmp_path / "w"
    with pytest.warns(errors.EvidenceChecksumWarning):
        build(root, data_dir, small_evidence, processes=1, until="retrieval")
    path = root / "tagging" / "restemmed.npz"
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    assert "tagging/restemmed.npz" in manifest["files"]
    stored = path.read_bytes()
    path.unlink()
    del manifest["files"]["tagging/restemmed.npz"]  # as an older build's manifest: never written
    (root / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    older = BuildReader(root, data_dir)
    for read in (older.tagging_vectorizer, older.retriever):
        with pytest.raises(errors.Missing, match="restemmed.npz: not built yet: run `claimtrace build"):
            read()
    with pytest.warns(errors.EvidenceChecksumWarning):
        build(root, data_dir, small_evidence, processes=1, until="retrieval")
    assert path.read_bytes() == stored
    assert BuildReader(root, data_dir).file_problems(full=True) == {}
    table = BuildReader(root, data_dir).retriever().restemmer.table
    assert len(table) and table.get(table.tokens[-1]) is not None


def test_a_summary_from_before_the_corpus_figures_gets_them_and_stays_verified(tmp_path, data_dir, small_evidence):
    """A build whose tagging summary predates the corpus figures (lengths in Table 1's buckets,
    tags per passage): the next build adds them, and the manifest records the new summary."""
    root = tmp_path / "w"
    with pytest.warns(errors.EvidenceChecksumWarning):
        build(root, data_dir, small_evidence, processes=1, until="tagging")
    work = workdir.Workdir(root)
    fresh = json.loads(work.tagging_summary.read_text(encoding="utf-8"))
    older = {k: v for k, v in fresh.items() if k not in ("length_buckets", "tags_per_passage")}
    work.tagging_summary.write_text(json.dumps(older), encoding="utf-8")
    workdir.FileManifest.read(work).record(work.tagging_summary)  # as that older build recorded it
    with pytest.warns(errors.EvidenceChecksumWarning):
        build(root, data_dir, small_evidence, processes=1, until="tagging")
    again = json.loads(work.tagging_summary.read_text(encoding="utf-8"))
    assert again["length_buckets"] == fresh["length_buckets"]
    assert again["tags_per_passage"] == fresh["tags_per_passage"]
    assert BuildReader(root, data_dir).file_problems(full=True) == {}


def test_a_repaired_manifest_is_the_fresh_builds(tmp_path, data_dir, small_evidence):
    """manifest.json deleted, then `build`: the manifest it writes again is a fresh build's."""
    with pytest.warns(errors.EvidenceChecksumWarning):
        build(tmp_path / "w", data_dir, small_evidence, processes=1, until="tagging")
    fresh = _manifest_entries(tmp_path / "w")
    assert fresh["tagging/stems/00000.json"]["items"] == 600
    (tmp_path / "w" / "manifest.json").unlink()
    with pytest.warns(errors.EvidenceChecksumWarning):
        build(tmp_path / "w", data_dir, small_evidence, processes=1, until="tagging")
    assert _manifest_entries(tmp_path / "w") == fresh


def test_duplicate_texts_get_the_same_tags(tmp_path, data_dir, small_evidence):
    with pytest.warns(errors.EvidenceChecksumWarning):
        build(tmp_path / "w", data_dir, small_evidence, processes=1, until="tagging")
    tags = {row["id"]: row["tags"] for row in BuildReader(tmp_path / "w").iter_tags()}
    assert tags["evidence-9999999"] == tags["evidence-67732"]


def test_demo_summary(demo_build):
    summary = demo_build.tagging_summary()
    assert summary["passages"] == 5240 and summary["features"] == 20000
    assert summary["fit_documents"] == 10777
    assert summary["last_feature"] == "μm" and summary["passages_with_last_feature"] == 199
    example = summary["padding_example"]
    assert example is not None and demo_build.passage_text(example) is not None


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
    from claimtrace.pipeline import bm25

    monkeypatch.setattr(bm25_stage, "BM25_CHUNK", 100)
    with pytest.warns(errors.EvidenceChecksumWarning):
        expected = build(tmp_path / "whole", data_dir, small_evidence, processes=1, until="bm25")["bm25"]

    killed = tmp_path / "killed"
    real_chunk, real_write = bm25._write_chunk, bm25_stage.write_atomic
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

    monkeypatch.setattr(bm25_stage, "write_atomic", dying_write)
    with pytest.warns(errors.EvidenceChecksumWarning), pytest.raises(KeyboardInterrupt):
        build(killed, data_dir, small_evidence, processes=1, until="bm25")
    assert (killed / "bm25" / "index").is_dir() and not (killed / "bm25" / "chunks").exists()
    assert (killed / "retrieval" / "bm25-dev.jsonl").is_file() and not (killed / "bm25" / "summary.json").exists()
    kept = _files(killed)

    monkeypatch.setattr(bm25_stage, "write_atomic", real_write)
    with pytest.warns(errors.EvidenceChecksumWarning):
        resumed = build(killed, data_dir, small_evidence, processes=1, until="bm25")["bm25"]
    now = _files(killed)  # nothing finished was redone (the manifest records what the resumed run adds)
    assert all(now[name] == mtime for name, mtime in kept.items() if name != "manifest.json")
    expected.pop("seconds"), resumed.pop("seconds")
    assert resumed == expected
    for split in ("train", "dev", "test"):
        assert BuildReader(killed).bm25_retrieval(split) == BuildReader(tmp_path / "whole").bm25_retrieval(split)
    assert _manifest_entries(killed) == _manifest_entries(tmp_path / "whole")


def test_tags_made_by_two_processes_are_the_same_files(tmp_path, data_dir, small_evidence, monkeypatch):
    """The tag chunks made by forked workers and written in order: the same bytes as one process."""
    monkeypatch.setattr(workdir, "CHUNK", 100)
    for processes in (1, 2):
        with pytest.warns(errors.EvidenceChecksumWarning):
            build(tmp_path / str(processes), data_dir, small_evidence, processes=processes, until="tagging")
    one, two = (sorted((tmp_path / str(p) / "tagging" / "tags").iterdir()) for p in (1, 2))
    assert len(one) == 7 and [p.name for p in one] == [p.name for p in two]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(one, two, strict=True))


@pytest.mark.parametrize("size", [2, 3, 5, 6, 11])
def test_small_corpora_build(tmp_path, data_dir, size):
    """The documented minimum (two passages) and the sizes around the notebook's retrieval settings
    (max_df=0.5 of the tagged passages against min_df=3) build; where scikit-learn 1.2.2 could
    not fit, the summary says so with its message and every claim takes the fallback."""
    corpus = dict(list(data.demo_corpus(data_dir).items())[:size])
    path = tmp_path / "evidence.json"
    path.write_text(json.dumps(corpus), encoding="utf-8")
    with pytest.warns(errors.EvidenceChecksumWarning):
        summary = build(tmp_path / "w", data_dir, path, processes=1, until="bm25")
    reader = BuildReader(tmp_path / "w", data_dir)
    records = reader.retrieval("dev")
    assert len(records) == 154
    assert all(set(r["evidences"]) <= set(corpus) for r in records.values())
    assert summary["bm25"]["passages"] == size
    if size < 6:  # 0.5 x (at most 5) documents < 3
        assert summary["retrieval"]["vectorizer_cannot_fit"] == "max_df corresponds to < documents than min_df"
        assert all(r["fallback"] for r in records.values())


def test_corpus_changed_checks_the_new_corpus_before_removing_the_old_build(tmp_path, data_dir):
    corpus = dict(list(data.demo_corpus(data_dir).items())[:3])
    path = tmp_path / "evidence.json"
    path.write_text(json.dumps(corpus), encoding="utf-8")
    with pytest.warns(errors.EvidenceChecksumWarning):
        build(tmp_path / "w", data_dir, path, processes=1, until="tagging")
    before = _files(tmp_path / "w")
    path.write_text(json.dumps({"evidence-0": "only one passage"}), encoding="utf-8")
    with pytest.warns(errors.EvidenceChecksumWarning), pytest.raises(errors.DataError, match="evidence.json"):
        build(tmp_path / "w", data_dir, path, processes=1, until="tagging", corpus_changed=True)
    assert _files(tmp_path / "w") == before  # nothing removed


def test_two_processes_build_the_same_files_with_bm25_and_the_unpadded_retriever_alongside(
    tmp_path, data_dir, small_evidence, monkeypatch
):
    """With two processes, BM25 runs alongside the tagging and retrieval stages and the
    unpadded-tags retriever alongside the padded one (claimtrace.lib.forked_job): every file is the
    same bytes as one process's build, which runs them in their place. The build's process lets go
    of the corpus after the tagging stage's stems when BM25 has its own (alongside), and keeps it
    for BM25 in its place with one process."""
    monkeypatch.setattr(workdir, "CHUNK", 200)
    monkeypatch.setattr(bm25_stage, "BM25_CHUNK", 200)
    started = []
    real_start = builder_module.ForkedJob.start

    def counted_start(job, *args, **kwargs):
        started.append(job.__name__)
        return real_start(job, *args, **kwargs)

    monkeypatch.setattr(builder_module.ForkedJob, "start", counted_start)
    corpus_held = {}
    for stage in (Stage.RETRIEVAL, Stage.BM25):
        monkeypatch.setitem(builder_module._STAGE_RUNNERS, stage, _noting_corpus(stage, corpus_held))
    summaries = {}
    for processes in (1, 2):
        with pytest.warns(errors.EvidenceChecksumWarning):
            summaries[processes] = build(
                tmp_path / str(processes), data_dir, small_evidence, processes=processes, until="bm25"
            )
        if processes == 1:
            assert started == []
    assert started == ["build_bm25", "_unpadded_variants"]
    assert corpus_held == {(1, "retrieval"): True, (1, "bm25"): True, (2, "retrieval"): False, (2, "bm25"): False}
    assert _manifest_entries(tmp_path / "1") == _manifest_entries(tmp_path / "2")
    for summary in summaries.values():
        summary["bm25"].pop("seconds"), summary["retrieval"].pop("seconds"), summary["tagging"].pop("timings")
    assert summaries[1] == summaries[2]


def _noting_corpus(stage, held: dict):
    """The stage's runner, noting first whether the build's run still holds the corpus."""
    run_stage = builder_module._STAGE_RUNNERS[stage]

    def noting(run):
        held[(run.processes, stage.value)] = run.passages is not None
        return run_stage(run)

    return noting


def test_a_job_alongside_that_fails_fails_the_build_and_a_failing_stage_stops_it(
    tmp_path, data_dir, small_evidence, monkeypatch
):
    """What BM25 raises alongside ends the build in one line, as in its place; a stage of the
    main line that fails stops BM25's process (cancel), and the next build resumes both."""
    from claimtrace.pipeline import bm25

    real_index = bm25.build_bm25_index

    def broken_index(*args, **kwargs):
        raise errors.DataError("bm25/chunks/00000.npz: a made-up failure")

    monkeypatch.setattr(bm25, "build_bm25_index", broken_index)
    with pytest.warns(errors.EvidenceChecksumWarning), pytest.raises(errors.DataError, match="a made-up failure"):
        build(tmp_path / "w", data_dir, small_evidence, processes=2, until="bm25")
    monkeypatch.setattr(bm25, "build_bm25_index", real_index)

    cancelled = []
    real_cancel = builder_module.ForkedJob.cancel

    def seen_cancel(job):
        cancelled.append(job.running())
        real_cancel(job)
        assert not job.running()

    def failing_retrieval(*args, **kwargs):
        raise errors.DataError("retrieval: a made-up failure")

    monkeypatch.setattr(builder_module.ForkedJob, "cancel", seen_cancel)
    monkeypatch.setattr(builder_module, "build_retrieval", failing_retrieval)
    with pytest.warns(errors.EvidenceChecksumWarning), pytest.raises(errors.DataError, match="retrieval: a made-up"):
        build(tmp_path / "w", data_dir, small_evidence, processes=2, until="bm25")
    assert len(cancelled) == 1
    monkeypatch.undo()
    with pytest.warns(errors.EvidenceChecksumWarning):
        summary = build(tmp_path / "w", data_dir, small_evidence, processes=2, until="bm25")
    assert summary["bm25"]["passages"] == 601


def test_each_step_of_the_classifier_stage_is_recorded_as_it_ends(tmp_path, data_dir, small_evidence, monkeypatch):
    """A site serving the build while it runs (`serve --while-building`) sees each step's files
    as the step ends: the checkpoint's verdicts are in the manifest before the extra verdicts
    start, and those before the sweep (the steps stood in by ones writing a file each)."""
    from claimtrace.lib.build_files import write_atomic
    from claimtrace.workdir.layout import FileManifest

    root = tmp_path / "w"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", errors.EvidenceChecksumWarning)
        build(root, data_dir, small_evidence, processes=1, until="bm25")
    work = workdir.Workdir(root)
    recorded_before: dict[str, bool] = {}

    def step(name, wrote, looked_for):
        def run(reader):
            manifest = FileManifest.read(work)
            recorded_before[name] = looked_for is None or manifest.get(looked_for) is not None
            write_atomic(wrote, json.dumps({"step": name}))
            return {}

        return run

    monkeypatch.setattr(builder_module, "build_classifier", step("classifier", work.classifier_summary, None))
    more = work.more_verdicts("dev")
    more.parent.mkdir(parents=True, exist_ok=True)
    monkeypatch.setattr(builder_module, "build_more_verdicts", step("more", more, work.classifier_summary))
    work.sweep.parent.mkdir(parents=True, exist_ok=True)
    monkeypatch.setattr(builder_module, "build_sweep", step("sweep", work.sweep, more))
    monkeypatch.setattr(builder_module, "build_scoreboard", step("scoreboard", work.scoreboard, work.sweep))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", errors.EvidenceChecksumWarning)
        build(root, data_dir, small_evidence, processes=1, until="classifier")
    assert recorded_before == {"classifier": True, "more": True, "sweep": True, "scoreboard": True}
