"""``claimtrace data``, ``preprocess`` and ``vocab`` (claimtrace.cli.data): the course files checked
through the command line, each fault named in one line with exit status 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from claimtrace.cli.main import main
from claimtrace.constants import CLIMATE_FEVER_FILE, COURSE_DIR, STOPWORDS_SHA256
from claimtrace.data import files as data
from tests.cli.conftest import garbage_stopwords, run_cli


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
    path = data_copy / COURSE_DIR / name
    _corrupt(path, edit)
    before = sorted(p.name for p in data_copy.rglob("*"))
    result = run_cli("--data", str(data_copy), "data", "check")
    assert result.exit_code == 2
    assert str(path) in result.output and message in result.output
    assert sorted(p.name for p in data_copy.rglob("*")) == before  # nothing left behind


def test_not_json_and_missing(data_copy):
    path = data_copy / COURSE_DIR / "dev-claims.json"
    path.write_text("{ not json", encoding="utf-8")
    result = run_cli("--data", str(data_copy), "data", "check")
    assert result.exit_code == 2 and f"{path}: not valid JSON" in result.output
    path.unlink()
    result = run_cli("--data", str(data_copy), "data", "check")
    assert result.exit_code == 2 and f"{path}: file is missing" in result.output


def test_wrong_top_level_shape(data_copy):
    path = data_copy / COURSE_DIR / "train-claims.json"
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


# --- CLIMATE-FEVER: every field used, checked -----------------------------------------------


def _edit_climate_fever(path: Path, line: int, edit) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    row = json.loads(lines[line - 1])
    edit(row)
    lines[line - 1] = json.dumps(row) + "\n"
    path.write_text("".join(lines), encoding="utf-8")


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda row: row.update(claim=5), "line 3: field claim is a number, expected a string"),
        (lambda row: row.update(claim_id=752), "line 3: field claim_id is a number, expected a string"),
        (lambda row: row.pop("claim"), "line 3: field claim is missing"),
        (lambda row: row.update(claim_label="TRUE"), "line 3: field claim_label is 'TRUE', expected one of SUPPORTS"),
        (lambda row: row.update(evidences=None), "line 3: field evidences is null, expected an array"),
        (lambda row: row["evidences"].__setitem__(1, "text"), "line 3: evidences[1] is a string, expected an object"),
        (
            lambda row: row["evidences"][2].update(evidence=["a"]),
            "line 3: evidences[2]: field evidence is an array, expected a string",
        ),
        (lambda row: row["evidences"][4].update(evidence=None), "line 3: evidences[4]: field evidence is null"),
        (lambda row: row["evidences"][0].pop("evidence_id"), "line 3: evidences[0]: field evidence_id is missing"),
        (
            lambda row: row["evidences"][0].update(evidence_label="DISPUTED"),
            "line 3: evidences[0]: field evidence_label is 'DISPUTED', expected one of SUPPORTS, REFUTES, NOT_ENOUGH_INFO",
        ),
        (lambda row: row.update(claim_id="0"), "line 3: claim_id '0' appears a second time"),
    ],
)
def test_climate_fever_fields_are_checked(data_copy, edit, message):
    path = data_copy / CLIMATE_FEVER_FILE
    _edit_climate_fever(path, 3, edit)
    result = run_cli("--data", str(data_copy), "data", "check")
    assert result.exit_code == 2, result.output
    assert f"claimtrace: error: {path}: {message}" in result.output


@pytest.mark.parametrize(
    "line, message",
    [
        (
            b'{"claim_id": "0", "claim": "caf\xe9"}',
            "line 2 is not UTF-8 text (invalid continuation byte at byte 31 of the line)",
        ),
        (b'{"claim_id": ', "line 2 is not valid JSON"),
        (b'["claim"]', "line 2 is an array, expected an object (one claim)"),
    ],
)
def test_climate_fever_bad_line(data_copy, line, message):
    path = data_copy / CLIMATE_FEVER_FILE
    lines = path.read_bytes().splitlines(keepends=True)
    lines.insert(1, line + b"\n")
    path.write_bytes(b"".join(lines))
    result = run_cli("--data", str(data_copy), "data", "check")
    assert result.exit_code == 2, result.output
    assert f"claimtrace: error: {path}: {message}" in result.output


# --- the stopword list, and --data for everything --------------------------------------------


def test_data_check_checks_the_stopwords(data_dir):
    result = run_cli("--data", str(data_dir), "data", "check")
    assert result.exit_code == 0, result.output
    assert f"ok  nltk_data/corpora/stopwords.zip: 179 English stopwords, sha256 {STOPWORDS_SHA256}" in result.output


@pytest.mark.parametrize(
    "command",
    [
        ["data", "check"],
        ["preprocess", "Glaciers are melting"],
        ["serve", "--workdir", "nowhere"],
    ],
)
def test_garbage_stopwords_zip_exits_2(data_copy, monkeypatch, command):
    path = garbage_stopwords(data_copy)
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: pytest.fail("serve started despite a bad stopword list"))
    result = run_cli("--data", str(data_copy), *command)
    assert result.exit_code == 2, result.output
    assert f"claimtrace: error: {path}: not a readable zip archive" in result.output
    assert "Traceback" not in result.output


def test_missing_stopwords_exits_2(data_copy):
    path = data_copy / data.STOPWORDS_ZIP
    path.unlink()
    result = run_cli("--data", str(data_copy), "preprocess", "Glaciers are melting")
    assert result.exit_code == 2
    assert f"claimtrace: error: {path}: file is missing" in result.output


DEEP = "[" * 100_000 + "]" * 100_000


HUGE = "9" * 10_000


@pytest.mark.parametrize(
    "value, message",
    [(DEEP, "nested too deeply to read"), (HUGE, "not JSON this reader accepts (Exceeds the limit (4300 digits)")],
)
def test_deep_nesting_and_huge_integers_are_refused_in_one_line(data_copy, data_dir, tmp_path, value, message):
    """Every JSON reader: a claim file, a CLIMATE-FEVER line, a predictions file."""
    claims = data_copy / COURSE_DIR / "dev-claims.json"
    claims.write_text('{"claim-1": ' + value + "}", encoding="utf-8")
    result = run_cli("--data", str(data_copy), "data", "check")
    assert result.exit_code == 2, result.output
    assert f"claimtrace: error: {claims}: {message}" in result.output
    assert result.output.count("claimtrace:") == 1 and "internal error" not in result.output

    shutil.copyfile(data_dir / COURSE_DIR / "dev-claims.json", claims)  # whole again
    fever = data_copy / CLIMATE_FEVER_FILE
    lines = fever.read_bytes().splitlines(keepends=True)
    lines.insert(1, ('{"claim_id": ' + value + "}\n").encode())
    fever.write_bytes(b"".join(lines))
    result = run_cli("--data", str(data_copy), "data", "check")
    assert result.exit_code == 2, result.output
    assert f"{fever}: line 2 is {message}" in result.output

    predictions = tmp_path / "predictions.json"
    predictions.write_text('{"claim-1": ' + value + "}", encoding="utf-8")
    result = run_cli("--data", str(data_copy), "evaluate", "--predictions", str(predictions))
    assert result.exit_code == 2, result.output
    assert result.output.strip().startswith(f"claimtrace: error: {predictions}: {message}")
    assert len(result.output.strip().splitlines()) == 1


def test_an_empty_climate_fever_file_is_named_itself(data_copy):
    path = data_copy / CLIMATE_FEVER_FILE
    path.write_bytes(b"\n\n")
    result = run_cli("--data", str(data_copy), "data", "check")
    assert result.exit_code == 2, result.output
    assert f"claimtrace: error: {path}: holds no claim" in result.output


def test_preprocess_command_json(data_dir):
    from click.testing import CliRunner

    from claimtrace.cli.main import main

    result = CliRunner().invoke(
        main,
        [
            "--data",
            str(data_dir),
            "preprocess",
            "[South Australia] has the most expensive electricity in the world.",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {
        "tokens": "south australia has the most expensive electricity in the world".split(),
        "kept": "south australia expensive electricity world".split(),
        "stems": "south australia expens electr world".split(),
    }
    kept = json.loads(CliRunner().invoke(main, ["preprocess", "It has 2 cats.", "--keep-stopwords", "--json"]).output)
    assert kept["stems"] == ["it", "ha", "cat"]


def test_vocab_command_json(data_dir):
    result = CliRunner().invoke(main, ["--data", str(data_dir), "vocab", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload["size"] == 5886 and len(payload["head"]) == 20
