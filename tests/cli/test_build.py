"""``claimtrace build``, ``verify`` and ``export`` (claimtrace.cli.build): the build run through the
command line, its one-line refusals and its report."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from claimtrace import errors
from claimtrace.cli.build import build_report
from claimtrace.cli.main import main
from claimtrace.workdir.builder import build
from tests.cli.conftest import garbage_stopwords, run_cli
from tests.conftest import REPO, demo_build_lock


def _write(tmp_path: Path, raw: bytes) -> Path:
    path = tmp_path / "evidence.json"
    path.write_bytes(raw)
    return path


@pytest.mark.parametrize(
    "text",
    ["{}", '{"evidence-1": "a"}', '{"evidence-1": "", "evidence-2": ""}', '{"evidence-1": "a", "evidence-2": 2}'],
)
def test_build_refuses_an_unusable_corpus_before_writing(tmp_path, data_dir, text):
    evidence = _write(tmp_path, text.encode("utf-8"))
    workdir = tmp_path / "work"
    result = run_cli("--data", str(data_dir), "build", "--evidence", str(evidence), "--workdir", str(workdir))
    assert result.exit_code == 2, result.output
    assert f"claimtrace: error: {evidence}: " in result.output
    assert not workdir.exists() or not any(workdir.iterdir())


@pytest.mark.parametrize("tail", [b"x", b"}"])
def test_bad_evidence_via_the_cli_exits_2(tmp_path, data_dir, tail):
    evidence = _write(tmp_path, b'{"evidence-1": "a", "evidence-2": "b"}' + tail)
    result = run_cli("--data", str(data_dir), "build", "--evidence", str(evidence), "--workdir", str(tmp_path / "w"))
    assert result.exit_code == 2 and "after the object's closing brace" in result.output


def test_build_reads_stopwords_from_data_option(tmp_path, data_copy):
    """build --data D preprocesses with D's stopword list (it used to find another folder's)."""
    path = garbage_stopwords(data_copy)
    evidence = _write(tmp_path, json.dumps({"evidence-1": "Glaciers are melting", "evidence-2": "Seas rise"}).encode())
    result = run_cli(
        "--data",
        str(data_copy),
        "build",
        "--evidence",
        str(evidence),
        "--workdir",
        str(tmp_path / "w"),
        "--until",
        "tagging",
    )
    assert result.exit_code == 2, result.output
    assert f"claimtrace: error: {path}: not a readable zip archive" in result.output


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


def test_export_retrieval(demo_build):
    result = CliRunner().invoke(main, ["export", "retrieval", "--workdir", str(demo_build.root), "--split", "dev"])
    assert result.exit_code == 0
    records = [json.loads(line) for line in result.output.splitlines()]
    assert len(records) == 154
    assert set(records[0]) == {"claim_id", "tags", "evidences", "fallback", "passed", "kept"}
    assert all(len(r["evidences"]) <= 6 for r in records)


def test_build_prints_a_short_report_and_its_whole_summary_behind_json(demo_build, data_dir):
    """A build's stdout: passages, time per stage, the dev scores beside the course's and where
    the site is, in a few lines; --json prints every stage's summary and the stage times."""
    args = ["--data", str(data_dir), "build", "--demo", "--workdir", str(demo_build.root)]
    with demo_build_lock(demo_build.root):  # the kept demo build: one build of it at a time
        result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) <= 12, lines
    assert lines[0].startswith(f"built {demo_build.root}: 5,240 passages in ")
    stages = ("tagging", "retrieval", "variants", "bm25", "classifier", "more verdicts", "sweep", "scoreboard")
    assert [line.split("  ")[1].strip() for line in lines[1:9]] == list(stages)
    own = demo_build.scoreboard()["rows"][0]  # the notebook's own pipeline
    assert demo_build.scoreboard()["anchor"] == {"F": 0.04299, "A": 0.55844, "HM": 0.07984}
    assert lines[9] == (
        f"dev: F {own['F']:.4f}, A {own['A']:.4f}, HM {own['HM']:.4f} (the course's Table 2: F 0.0430, A 0.5584, HM 0.0798)"
    )
    assert lines[10].startswith(f"site: claimtrace serve --workdir {demo_build.root}")
    assert lines[10] == f"site: claimtrace serve --workdir {demo_build.root}  (then http://127.0.0.1:8000/)"
    with demo_build_lock(demo_build.root):
        whole = json.loads(CliRunner().invoke(main, [*args, "--json"]).stdout)
    assert set(whole) == {"tagging", "retrieval", "bm25", "classifier", "scoreboard", "seconds"}
    assert set(whole["seconds"]) == set(stages)
    assert all(set(t) in ({"wall", "cpu"}, {"wall", "cpu", "alongside"}) for t in whole["seconds"].values())
    # served on another port (make demo PORT=8123): the report's last line names it
    report = build_report(whole, whole["seconds"], str(demo_build.root), 1.0, port=8123).splitlines()
    assert report[0] == f"built {demo_build.root}: 5,240 passages in 1.0 s" and report[-2] == lines[9]
    assert (
        report[-1] == f"site: claimtrace serve --workdir {demo_build.root} --port 8123  (then http://127.0.0.1:8123/)"
    )


def test_make_demo_builds_and_serves_on_one_port():
    """`make demo PORT=N` serves on N and passes N to the build, whose report names it."""
    done = subprocess.run(
        ["make", "-n", "demo", "PORT=8123", "WORKDIR=work/elsewhere"], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    commands = [line.split() for line in done.stdout.splitlines()]
    build_line = next(c for c in commands if c[0].endswith("/claimtrace") and c[1] == "build")
    serve_line = next(c for c in commands if c[0].endswith("/claimtrace") and c[1] == "serve")
    for command in (build_line, serve_line):
        assert command[command.index("--port") + 1] == "8123", command


def test_a_second_build_on_one_workdir_is_refused_in_one_line(tmp_path, data_dir, small_evidence):
    import fcntl

    work = tmp_path / "w"
    work.mkdir()
    with open(work / ".build.lock", "w") as held:  # what a running build holds
        held.write("pid 4242")
        held.flush()
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        result = CliRunner().invoke(
            main, ["--data", str(data_dir), "build", "--evidence", str(small_evidence), "--workdir", str(work)]
        )
        assert result.exit_code == 2, result.output
        assert result.stderr.strip().splitlines()[-1] == (
            f"claimtrace: error: {work}: another `claimtrace build` (pid 4242) is writing this workdir: "
            "wait for it to end, or use another --workdir"
        )
        assert sorted(p.name for p in work.iterdir()) == [".build.lock"]  # nothing written
    with pytest.warns(errors.EvidenceChecksumWarning):  # released (as when its process ends): builds
        build(work, data_dir, small_evidence, processes=1, until="tagging")


def test_verify_names_unbuilt_stages_and_a_changed_corpus(tmp_path, data_dir, small_evidence):
    with pytest.warns(errors.EvidenceChecksumWarning):
        build(tmp_path / "w", data_dir, small_evidence, processes=1, until="retrieval")
    work = tmp_path / "w"
    result = CliRunner().invoke(main, ["--data", str(data_dir), "verify", "--workdir", str(work)])
    assert result.exit_code == 0, result.output
    assert f"{work}: incomplete: stages bm25, classifier not built" in result.stderr
    text = small_evidence.read_text(encoding="utf-8")
    small_evidence.write_text(text.replace("e", "E", 1), encoding="utf-8")  # edited in place
    result = CliRunner().invoke(main, ["--data", str(data_dir), "verify", "--workdir", str(work)])
    assert result.exit_code == 2, result.output
    assert f"claimtrace: error: {small_evidence}: corpus changed since this workdir was built" in result.stderr
    assert "--corpus-changed" in result.stderr


def test_a_job_alongside_killed_from_outside_ends_the_build_in_one_line(
    tmp_path, data_dir, small_evidence, monkeypatch
):
    """BM25's process ended without a result (here it exits; the system's out-of-memory killer
    would send a signal 9): the command says which job, how it ended and how to go on, exit 1,
    no "internal error"; the next build resumes."""
    import os

    from claimtrace.pipeline import bm25

    real_index = bm25.build_bm25_index
    monkeypatch.setattr(bm25, "build_bm25_index", lambda *args, **kwargs: os._exit(3))
    args = ["--data", str(data_dir), "build", "--evidence", str(small_evidence), "--workdir", str(tmp_path / "w")]
    result = CliRunner().invoke(main, [*args, "--until", "bm25"])
    assert result.exit_code == 1, result.output
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("claimtrace: error: build_bm25: its process alongside the build ended without a result")
    assert "exit code 3" in last and "--processes 1" in last and "internal error" not in result.stderr
    monkeypatch.setattr(bm25, "build_bm25_index", real_index)
    assert CliRunner().invoke(main, [*args, "--until", "bm25"]).exit_code == 0
