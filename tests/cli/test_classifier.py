"""``claimtrace train``, ``evaluate-classifier`` and ``explain`` (claimtrace.cli.classifier)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from claimtrace import constants
from claimtrace.assets import ASSETS_DIR
from claimtrace.cli.main import main
from claimtrace.models import train as train_module
from claimtrace.models.train import TrainingData, training_data
from claimtrace.web.site_data import SiteData
from claimtrace.workdir.reader import BuildReader
from tests.support.training_slice import training_slice


@pytest.fixture(scope="module")
def data(data_dir) -> TrainingData:
    return training_data(data_dir)


# --- Training the intended variant ----------------------------------------------------------------


def test_cli_train_variant(data, tmp_path, monkeypatch):
    from claimtrace.cli.main import main

    monkeypatch.setattr(train_module, "training_data", lambda data_dir: training_slice(data))
    for variant, args in (("notebook", []), ("intended", ["--variant", "intended"]), ("lstm", ["--variant", "lstm"])):
        workdir = tmp_path / variant
        result = CliRunner().invoke(
            main, ["train", "--checkpoint", str(workdir), "--epochs", "1", "--no-progress", *args]
        )
        assert result.exit_code == 0, result.output
        assert json.loads((workdir / constants.TRAINING_LOG_FILES[variant]).read_text())["variant"] == variant


# --- Command line ---------------------------------------------------------------------------------


def _cli(data_dir, *args, env=None):
    return CliRunner().invoke(main, ["--data", str(data_dir), *args], env=env)


def test_cli_explain_json(data_dir, demo_build):
    result = _cli(data_dir, "explain", "claim-752", "--workdir", str(demo_build.root), "--evidence", "gold", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["checkpoint"].endswith(constants.CHECKPOINT_FILE) and out["split"] in ("train", "dev")
    assert out["evidence_source"] == "gold"
    for protocol in constants.PROTOCOLS:
        assert len(out[protocol]["logits"]) == 4 and out[protocol]["verdict"] in constants.LABELS
    assert len(out["notebook"]["neighbours"]) == 15
    assert out["input_ids"][0] == 1 and len(out["tokens"]) == 128


def test_cli_explain_works_from_any_directory(data_dir, demo_build, tmp_path, monkeypatch):
    data_dir = data_dir.resolve()
    monkeypatch.chdir(tmp_path)
    result = _cli(data_dir, "explain", "claim-752", "--workdir", str(demo_build.root), "--json")
    assert result.exit_code == 0, result.output
    # --workdir defaults to $CLAIMTRACE_WORKDIR
    by_env = _cli(data_dir, "explain", "claim-752", "--json", env={"CLAIMTRACE_WORKDIR": str(demo_build.root)})
    assert by_env.exit_code == 0 and json.loads(by_env.output) == json.loads(result.output)
    # and then to ./work/demo, whose absence is named
    missing = _cli(data_dir, "explain", "claim-752", "--json", env={"CLAIMTRACE_WORKDIR": ""})
    assert missing.exit_code == 2 and "work/demo" in missing.output


def test_cli_explain_unknown_claim(data_dir, demo_build):
    result = _cli(data_dir, "explain", "claim-no-such", "--workdir", str(demo_build.root))
    assert result.exit_code == 2 and "not a train, dev or test claim" in result.output


def test_cli_explain_model_lstm(data_dir, demo_build):
    """The LSTM's reading of claim-752 is the build's stored one; the text names where it is read."""
    args = ("explain", "claim-752", "--workdir", str(demo_build.root), "--model", "lstm")
    result = _cli(data_dir, *args, "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    stored = demo_build.more_verdicts("dev")["claim-752"]["lstm"]["retrieved"]
    for protocol in constants.PROTOCOLS:
        assert out[protocol]["verdict"] == stored[protocol]["verdict"]
        assert out[protocol]["logits"] == stored[protocol]["logits"]
    assert out["same"] is True and out["model"] == "lstm"
    assert out["last_position"] == {"position": constants.MAX_LEN - 1, "token": constants.PAD}
    assert out["real_tokens"] + out["pad_tokens"] == constants.MAX_LEN
    text = _cli(data_dir, *args, "--evidence", "gold")
    assert text.exit_code == 0 and "verdict read at position 127, a [PAD]" in text.output
    train_id = next(iter(demo_build.claims("train")))
    refused = _cli(data_dir, "explain", train_id, "--workdir", str(demo_build.root), "--model", "lstm")
    assert refused.exit_code == 2 and "dev and test claims only" in refused.output


def test_cli_explain_gold_of_a_test_claim_is_refused(data_dir, demo_build):
    test_id = next(iter(demo_build.claims("test")))
    result = _cli(data_dir, "explain", test_id, "--workdir", str(demo_build.root), "--evidence", "gold")
    assert result.exit_code == 2 and "unlabelled" in result.output


def test_cli_evaluate_classifier_json(data_dir, demo_build):
    result = _cli(
        data_dir,
        "evaluate-classifier",
        "--workdir",
        str(demo_build.root),
        "--split",
        "dev",
        "--evidence",
        "gold",
        "--json",
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert set(out["evidence"]) == {"gold"}
    assert out["evidence"]["gold"] == demo_build.classifier_summary()["dev"]["gold"]
    # another checkpoint (here a copy of the shipped one) is run on the build's inputs
    with_checkpoint = _cli(
        data_dir,
        "evaluate-classifier",
        "--workdir",
        str(demo_build.root),
        "--split",
        "dev",
        "--checkpoint",
        str(ASSETS_DIR),
        "--json",
    )
    assert with_checkpoint.exit_code == 0, with_checkpoint.output
    assert json.loads(with_checkpoint.output)["evidence"] == demo_build.classifier_summary()["dev"]


def test_cli_explain_with_retrieved_evidence(data_dir, demo_build):
    result = _cli(data_dir, "explain", "claim-752", "--workdir", str(demo_build.root), "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    retrieved = demo_build.retrieval("dev")["claim-752"]
    assert out["evidence_source"] == "retrieved" and out["evidence_ids"] == retrieved["evidences"]
    assert out["real_tokens"] + out["pad_tokens"] == 128
    verdicts = demo_build.verdicts("dev")["claim-752"]["retrieved"]
    assert out["notebook"]["verdict"] == verdicts["notebook"]["verdict"]
    assert max(abs(a - b) for a, b in zip(out["alone"]["logits"], verdicts["alone"]["logits"])) < 1e-9


def test_walkthrough_shows_what_explain_and_the_export_print(demo_build, data_dir):
    """The site's claim-752 figures are those of `claimtrace explain claim-752 --json` and of
    `claimtrace export retrieval` for the same build."""
    from click.testing import CliRunner

    from claimtrace.cli.main import main

    page = SiteData(BuildReader(demo_build.root, data_dir)).trace("claim-752")
    runner = CliRunner()
    explained = json.loads(
        runner.invoke(
            main, ["--data", str(data_dir), "explain", "claim-752", "--workdir", str(demo_build.root), "--json"]
        ).output
    )
    exported = [
        json.loads(line)
        for line in runner.invoke(main, ["export", "retrieval", "--workdir", str(demo_build.root)]).output.splitlines()
    ]
    record = next(r for r in exported if r["claim_id"] == "claim-752")
    assert [e["id"] for e in page["retrieval"]["evidences"]] == record["evidences"]
    assert page["classifier"]["real_tokens"] == explained["real_tokens"]
    assert page["classifier"]["pad_tokens"] == explained["pad_tokens"]
    for protocol in ("alone", "notebook"):
        assert page["classifier"][protocol]["verdict"] == explained[protocol]["verdict"]
        assert (
            max(abs(a - b) for a, b in zip(page["classifier"][protocol]["logits"], explained[protocol]["logits"]))
            < 1e-9
        )


def test_cli_attribute_reads_back_a_finished_run_and_names_the_command_when_none(data_dir, demo_build, tmp_path):
    import shutil

    from claimtrace.errors import Missing
    from claimtrace.workdir.reader import BuildReader
    from tests.web.views.test_attribution import _records, write_attribution

    root = tmp_path / "demo"
    shutil.copytree(demo_build.root, root)
    build = BuildReader(root, data_dir)
    write_attribution(build, _records(build, claims=None))  # every dev claim: the run is finished
    result = _cli(data_dir, "attribute", "--workdir", str(root), "--json")
    assert result.exit_code == 0, result.output
    grades = json.loads(result.output)
    assert grades["grades"]["occlusion"]["claims"] == len(build.claims("dev")) and "claims" not in grades
    assert grades["lstm"]["methods"] == ["occlusion", "integrated_gradients"] and "claims" not in grades["lstm"]
    plain = _cli(data_dir, "attribute", "--workdir", str(root))
    assert "Occlusion by [PAD]" in plain.output and "passes" in plain.output and "fails" in plain.output
    assert "the LSTM (154 claims, no exact answer): Occlusion by [PAD] and Integrated Gradients applied" in plain.output
    assert "KernelSHAP               1.00 CPU s/claim over 2 (left out" in plain.output
    with pytest.raises(Missing, match="not computed yet: run `claimtrace attribute"):
        BuildReader(demo_build.root, data_dir).attribution_grades()
