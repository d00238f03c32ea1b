"""The data layer: finding, checking and loading course files; gold passages; demo corpus."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

from claimtrace import constants as C
from claimtrace import data
from claimtrace.cli import main


@pytest.fixture()
def data_copy(tmp_path, data_dir) -> Path:
    """A writable copy of the data folder (the shared one is read-only)."""
    target = tmp_path / "data"
    shutil.copytree(data_dir, target)
    for path in target.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return target


def run_cli(*args: str):
    return CliRunner().invoke(main, list(args))


def test_course_files_load_with_expected_counts(data_dir):
    counts = {split: len(data.load_claims(split, data_dir)) for split in C.SPLIT_FILES}
    assert counts == {"train": 1228, "dev": 154, "test": 153, "baseline": 154}


def test_test_claims_have_no_label(data_dir):
    claims = data.load_claims("test", data_dir)
    assert all(c.label is None and c.evidences == () for c in claims.values())


def test_gold_passages_rebuilt(data_dir):
    gold = data.gold_passages(data_dir)
    assert len(gold) == 3443
    assert gold["evidence-67732"].startswith("[citation needed] South Australia has the highest retail price")
    assert gold["evidence-572512"] == '"South Australia has the highest power prices in the world".'


def test_demo_corpus_shape_and_order(data_dir):
    corpus = data.demo_corpus(data_dir)
    ids = list(corpus)
    assert len(corpus) == 5240
    assert len(set(corpus.values())) == 5240
    gold_ids = [i for i in ids if i.startswith("evidence-")]
    assert len(gold_ids) == 3443
    assert ids[:3443] == gold_ids
    assert gold_ids == sorted(gold_ids, key=lambda i: int(i.split("-")[1]))
    assert all(i.startswith(data.DEMO_ID_PREFIX) for i in ids[3443:])
    # The first non-gold sentence is the first CLIMATE-FEVER sentence not used as gold.
    assert ids[3443] == "cf:Extinction risk from global warming:170"


def test_data_dir_precedence(tmp_path, monkeypatch, data_dir):
    monkeypatch.setenv("CLAIMTRACE_DATA", str(data_dir))
    assert data.find_data_dir() == data_dir
    assert data.find_data_dir(data_dir) == data_dir
    with pytest.raises(data.DataError, match="does not exist"):
        data.find_data_dir(tmp_path / "nowhere")
    monkeypatch.setenv("CLAIMTRACE_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(data.DataError, match="CLAIMTRACE_DATA"):
        data.find_data_dir()


def test_data_check_passes(data_dir):
    result = run_cli("--data", str(data_dir), "data", "check")
    assert result.exit_code == 0, result.output
    assert "gold passages (train+dev) rebuilt from CLIMATE-FEVER: 3443" in result.output


def _corrupt(path: Path, edit) -> None:
    raw = json.loads(path.read_text(encoding="utf-8"))
    edit(raw)
    path.write_text(json.dumps(raw), encoding="utf-8")


@pytest.mark.parametrize(
    "name, edit, message",
    [
        ("dev-claims.json", lambda raw: raw["claim-752"].pop("claim_text"), "claim 'claim-752' has no claim_text"),
        ("train-claims.json", lambda raw: raw["claim-126"]["evidences"].append(7), "evidences[2] is 7, not a string"),
        ("dev-claims.json", lambda raw: raw["claim-752"].update(claim_label="TRUE"), "claim_label 'TRUE'"),
        ("test-claims-unlabelled.json", lambda raw: raw["claim-2967"].update(claim_text="x"), "md5 is"),
    ],
)
def test_corrupted_claim_file_named_exit_2(data_copy, name, edit, message):
    path = data_copy / C.COURSE_DIR / name
    _corrupt(path, edit)
    before = sorted(p.name for p in data_copy.rglob("*"))
    result = run_cli("--data", str(data_copy), "data", "check")
    assert result.exit_code == 2
    assert str(path) in result.output and message in result.output
    assert sorted(p.name for p in data_copy.rglob("*")) == before  # nothing left behind


def test_not_json_and_missing(data_copy):
    path = data_copy / C.COURSE_DIR / "dev-claims.json"
    path.write_text("{ not json", encoding="utf-8")
    result = run_cli("--data", str(data_copy), "data", "check")
    assert result.exit_code == 2 and f"{path}: not valid JSON" in result.output
    path.unlink()
    result = run_cli("--data", str(data_copy), "data", "check")
    assert result.exit_code == 2 and f"{path}: file is missing" in result.output


def test_wrong_top_level_shape(data_copy):
    path = data_copy / C.COURSE_DIR / "train-claims.json"
    path.write_text("[1, 2]", encoding="utf-8")
    result = run_cli("--data", str(data_copy), "data", "check")
    assert result.exit_code == 2 and "expected a JSON object" in result.output


def test_demo_corpus_command_writes_atomically(tmp_path, data_dir):
    out = tmp_path / "evidence.json"
    result = run_cli("--data", str(data_dir), "data", "demo-corpus", "--out", str(out))
    assert result.exit_code == 0, result.output
    corpus = json.loads(out.read_text(encoding="utf-8"))
    assert len(corpus) == 5240
    assert [p.name for p in tmp_path.iterdir()] == ["evidence.json"]  # no temporary left


def test_write_atomic_leaves_old_file_on_failure(tmp_path):
    target = tmp_path / "a.json"
    data.write_atomic(target, "old")

    with pytest.raises(TypeError):
        data.write_atomic(target, 123)  # type: ignore[arg-type]
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_iter_evidence_streams_and_warns(tmp_path):
    path = tmp_path / "evidence.json"
    corpus = {f"evidence-{i}": f"text {i} “quoted” {{brace}}" * (i % 7) for i in range(5000)}
    path.write_text(json.dumps(corpus, ensure_ascii=False, indent=1), encoding="utf-8")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pairs = list(data._stream_json_object(path, chunk_size=4096))
        list(data.iter_evidence(path))
    assert dict(pairs) == corpus and [k for k, _ in pairs] == list(corpus)
    assert any(issubclass(w.category, data.EvidenceChecksumWarning) for w in caught)
    assert any("results will not match the course's" in str(w.message) for w in caught)


@pytest.mark.parametrize("text, message", [
    ("[]", "expected a JSON object"),
    ('{"evidence-1": 5}', "has a int value"),
    ('{"evidence-1": "a"', "ends before the closing brace"),
])
def test_iter_evidence_rejects_bad_files(tmp_path, text, message):
    path = tmp_path / "evidence.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(data.DataError, match=message):
        list(data.iter_evidence(path, check_md5=False))
