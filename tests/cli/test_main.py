"""No traceback from any command-line input: a damaged build file, a damaged checkpoint, an
output folder that is not there, a full disk. Each ends the command with one line naming the
file and exit status 2; only a bug in claimtrace exits 1 (also in one line)."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from claimtrace.assets import ASSETS_DIR
from claimtrace.cli.main import main
from claimtrace.errors import DataError
from claimtrace.workdir.reader import BuildReader

#: BuildReader files, and the commands that read each (args after the workdir's).
READERS = {
    "build.json": ["predict", "evaluate", "explain", "export"],
    "classifier/dev.json": ["predict", "evaluate", "explain"],
    "classifier/summary.json": ["evaluate"],
    "retrieval/dev.jsonl": ["predict", "evaluate", "explain", "export"],
    "retrieval/summary.json": ["evaluate"],
    "classifier/inputs/dev-retrieved.npz": ["explain"],
}


def _command(name: str, workdir: Path, out: Path) -> list[str]:
    return {
        "predict": ["predict", "--workdir", str(workdir), "--split", "dev", "--out", str(out)],
        "evaluate": ["evaluate", "--workdir", str(workdir), "--split", "dev"],
        "explain": ["explain", "claim-752", "--workdir", str(workdir)],
        "export": ["export", "retrieval", "--workdir", str(workdir), "--split", "dev"],
    }[name]


def _run(data_dir: Path, args: list[str]):
    return CliRunner().invoke(main, ["--data", str(data_dir), *args])


def _one_error_line(result, status: int, *words: str) -> str:
    """The command's single stderr line, after checking its exit status and that it names ``words``."""
    assert result.exit_code == status, (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def _linked_copy(build_root: Path, root: Path) -> Path:
    """A workdir whose files are links to the demo build's: a test replaces only what it damages."""
    shutil.copytree(build_root, root, copy_function=os.symlink)
    return root


def _truncate(root: Path, name: str, keep: float = 0.5) -> None:
    path = root / name
    content = path.read_bytes()
    path.unlink()  # the link: the demo build itself stays whole
    path.write_bytes(content[: int(len(content) * keep)])


@pytest.mark.parametrize(
    ("name", "command"), [(name, command) for name, commands in READERS.items() for command in commands]
)
def test_a_truncated_build_file_is_named_not_a_traceback(demo_build, data_dir, tmp_path, name, command):
    work = _linked_copy(demo_build.root, tmp_path / "work")
    _truncate(work, name)
    result = _run(data_dir, _command(command, work, tmp_path / "out.json"))
    _one_error_line(result, 2, name, "damaged", "claimtrace build")
    assert not (tmp_path / "out.json").exists()


def test_a_retrieval_file_cut_at_a_line_end_is_damaged_too(demo_build, data_dir, tmp_path):
    """Whole lines but too few: every line parses, the count gives it away."""
    work = _linked_copy(demo_build.root, tmp_path / "work")
    path = work / "retrieval" / "dev.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.unlink()
    path.write_text("".join(lines[: len(lines) // 2]), encoding="utf-8")
    result = _run(data_dir, _command("export", work, tmp_path / "out.json"))
    _one_error_line(result, 2, "retrieval/dev.jsonl", "damaged", "claimtrace build")


def test_garbage_npz_files_are_named(demo_build, data_dir, tmp_path):
    work = _linked_copy(demo_build.root, tmp_path / "work")
    for name in ("retrieval/index.npz", "retrieval/vectorizer.npz", "tagging/vectorizer.npz", "corpus/index.npz"):
        (work / name).unlink()
        (work / name).write_bytes(b"PK\x03\x04 not really a zip file")
    build = BuildReader(work, data_dir)
    for read, name in (
        (build.retriever, "retrieval/"),  # both are damaged: the first opened is named (the vectorizer)
        (build.tagging_vectorizer, "tagging/vectorizer.npz"),
        (build.passages, "corpus/index.npz"),
    ):
        with pytest.raises(DataError, match="damaged.*claimtrace build") as caught:
            read()
        assert name in str(caught.value)


# --- a checkpoint given with --checkpoint DIR ---------------------------------------------------


def _checkpoint(tmp_path: Path, damage: str) -> Path:
    folder = tmp_path / "checkpoint"
    folder.mkdir()
    for name in ("classifier.safetensors", "classifier_vocab.json"):
        shutil.copy(ASSETS_DIR / name, folder / name)
    if damage == "garbage checkpoint":
        (folder / "classifier.safetensors").write_bytes(b"\x00garbage" * 10)
    elif damage == "truncated checkpoint":
        _truncate(folder, "classifier.safetensors")
    elif damage == "truncated vocabulary":
        _truncate(folder, "classifier_vocab.json")
    elif damage == "vocabulary not a list":
        (folder / "classifier_vocab.json").write_text("7", encoding="utf-8")
    return folder


_DAMAGED_FILE = {
    "garbage checkpoint": "classifier.safetensors",
    "truncated checkpoint": "classifier.safetensors",
    "truncated vocabulary": "classifier_vocab.json",
    "vocabulary not a list": "classifier_vocab.json",
}


@pytest.mark.parametrize("damage", list(_DAMAGED_FILE))
def test_a_damaged_checkpoint_is_named_by_evaluate_classifier(demo_build, data_dir, tmp_path, damage):
    folder = _checkpoint(tmp_path, damage)
    result = _run(data_dir, ["evaluate-classifier", "--workdir", str(demo_build.root), "--checkpoint", str(folder)])
    _one_error_line(result, 2, _DAMAGED_FILE[damage], "claimtrace train")


@pytest.mark.parametrize("damage", ["garbage checkpoint", "truncated vocabulary"])
def test_a_damaged_checkpoint_stops_build_before_its_first_stage(data_dir, tmp_path, damage):
    folder = _checkpoint(tmp_path, damage)
    work = tmp_path / "work"
    result = _run(data_dir, ["build", "--demo", "--workdir", str(work), "--checkpoint", str(folder)])
    _one_error_line(result, 2, _DAMAGED_FILE[damage], "damaged")
    assert not (work / "tagging").exists()


# --- writing the output ---------------------------------------------------------------------------


def test_predict_creates_a_missing_output_folder(demo_build, data_dir, tmp_path):
    out = tmp_path / "not" / "there" / "dev.json"
    result = _run(data_dir, _command("predict", demo_build.root, out))
    assert result.exit_code == 0, result.output
    assert out.is_file()


def test_predict_into_a_file_as_folder_names_it(demo_build, data_dir, tmp_path):
    (tmp_path / "plain").write_text("a file, not a folder")
    result = _run(data_dir, _command("predict", demo_build.root, tmp_path / "plain" / "dev.json"))
    _one_error_line(result, 2, "plain")


def test_a_full_disk_is_one_message_and_leaves_no_partial_file(demo_build, data_dir, tmp_path, monkeypatch):
    real_write = Path.write_text

    def full_disk(self, text, *args, **kwargs):
        real_write(self, text[: len(text) // 2], *args, **kwargs)  # half written, then the disk is full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Path, "write_text", full_disk)
    out = tmp_path / "out" / "dev.json"
    result = _run(data_dir, _command("predict", demo_build.root, out))
    _one_error_line(result, 2, str(out), "No space left on device")
    assert list((tmp_path / "out").iterdir()) == []  # neither the file nor its temporary


def test_a_bug_is_one_line_and_exit_1(demo_build, data_dir, tmp_path, monkeypatch):
    def broken(self, split, protocol="notebook"):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(BuildReader, "course_predictions", broken)
    result = _run(data_dir, _command("predict", demo_build.root, tmp_path / "out.json"))
    _one_error_line(result, 1, "internal error", "ZeroDivisionError", "CLAIMTRACE_DEBUG")


# --- every exit is 0, 1 or 2 with one line -------------------------------------------------------


@pytest.mark.parametrize(
    "args, words",
    [
        (["serve", "--port", "99999"], ["--port", "99999", "`claimtrace serve --help`"]),
        (["serve", "--port", "-5"], ["--port", "-5"]),
        (["site", "--out", "x", "--limit", "-1"], ["--limit", "-1", "`claimtrace site --help`"]),
        (["site", "--out", "x", "--limit", "0"], ["--limit"]),
        (["build", "--demo", "--processes", "0"], ["--processes", "`claimtrace build --help`"]),
        (["build", "--demo", "--processes", "-1"], ["--processes"]),
        (["build", "--until", "nowhere"], ["--until", "nowhere"]),
        (["evaluate", "--nope"], ["--nope", "`claimtrace evaluate --help`"]),
        (["nope"], ["nope", "`claimtrace --help`"]),
        (["export", "tags", "--split", "dev"], ["--split", "`claimtrace export tags --help`"]),
    ],
)
def test_usage_errors_and_bad_counts_are_one_line_and_exit_2(data_dir, tmp_path, args, words):
    result = _run(data_dir, args)
    line = _one_error_line(result, 2, *words)
    assert line.startswith("claimtrace: error: ")


def test_a_busy_port_is_one_line_and_exit_2(demo_build, data_dir):
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        result = _run(data_dir, ["serve", "--workdir", str(demo_build.root), "--port", str(port)])
    _one_error_line(result, 2, f"port {port} is in use: pass --port")


@pytest.mark.parametrize("row", ["bm25+notebook+notebook", "notebook+intended+notebook", "cosine-once+notebook+alone"])
def test_predict_on_train_names_the_rows_it_has(demo_build, data_dir, tmp_path, row):
    args = ["predict", "--workdir", str(demo_build.root), "--split", "train", "--out", str(tmp_path / "p.json")]
    _one_error_line(_run(data_dir, [*args, "--row", row]), 2, "train has only the notebook's own rows")
    assert _run(data_dir, [*args, "--row", "notebook+notebook+alone"]).exit_code == 0


def test_a_missing_build_json_is_named_and_rebuilt_from_the_manifest(demo_build, data_dir, tmp_path):
    work = tmp_path / "w"
    shutil.copytree(demo_build.root, work)
    recorded = (work / "build.json").read_bytes()
    (work / "build.json").unlink()
    result = _run(data_dir, ["verify", "--workdir", str(work)])
    assert result.exit_code == 2 and f"{work / 'build.json'}: missing" in result.stderr.splitlines()
    result = _run(data_dir, ["explain", "claim-752", "--workdir", str(work)])
    _one_error_line(result, 2, str(work / "build.json"), f"claimtrace build --workdir {work}")
    result = _run(data_dir, ["build", "--workdir", str(work)])
    assert result.exit_code == 0, result.output
    assert (work / "build.json").read_bytes() == recorded
    assert _run(data_dir, ["verify", "--workdir", str(work)]).exit_code == 0


def test_json_is_written_in_pieces_with_the_same_bytes():
    """print_json's pieces join to json.dumps's text, whatever the nesting, keys or emptiness."""
    import json

    from claimtrace.cli.options import json_pieces

    values = [
        {"runs": [{"name": "a", "audit": []}, {"name": "b ≤ ’"}], "claims": [[1, 2], [], {}], "x": None},
        {1: "int key", "a": {"b": {"c": [1.5, float("nan")]}}},
        [],
        {},
        "text",
        [{"a": [1, {"b": 2}]}, 3],
    ]
    for value in values:
        for depth in (0, 1, 2, 3):
            assert "".join(json_pieces(value, depth)) == json.dumps(value, ensure_ascii=False)


def test_every_command_sets_the_openmp_wait_policy_at_its_entry_keeping_a_value_given(monkeypatch):
    """The one environment variable the command line sets (before any command may import torch);
    a value already in the environment is the user's and stays."""
    from claimtrace import constants

    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    assert CliRunner().invoke(main, ["serve", "--help"]).exit_code == 0
    assert os.environ["OMP_WAIT_POLICY"] == constants.OMP_WAIT_POLICY
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert CliRunner().invoke(main, ["serve", "--help"]).exit_code == 0
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"
