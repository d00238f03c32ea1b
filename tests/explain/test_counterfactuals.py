"""explain.counterfactuals on the demo build: every shown edit, re-traced by the walkthrough's own
typed-claim trace, gives the verdict shown; the model-input edits on a short input are the
smallest (every subset tried); the notebook batch re-run gives the build's verdict; and
``claimtrace counterfactual --all`` writes, resumes and reads back (a few claims, on a copy)."""

from __future__ import annotations

import itertools
import json
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from claimtrace import constants
from claimtrace.cli.counterfactual import write_all
from claimtrace.cli.main import main
from claimtrace.explain.counterfactuals.report import SPLITS, counterfactuals
from claimtrace.explain.counterfactuals.tokens import model_input_edits
from claimtrace.explain.counterfactuals.trace import Tracer
from claimtrace.web.views import walkthrough
from claimtrace.workdir.reader import BuildReader
from tests.conftest import COUNTERFACTUAL_CLAIMS, COUNTERFACTUAL_WORDS


def _verdict_of_text(build, text: str) -> str:
    """The verdict alone the live page shows for a typed text (the walkthrough's trace)."""
    return walkthrough.assemble(build, text)["classifier"]["alone"]["verdict"]


@pytest.fixture(scope="module")
def computed(demo_counterfactuals) -> list[dict]:
    """The session's dev records, as ``claimtrace counterfactual --all`` wrote them."""
    return list(demo_counterfactuals.counterfactuals("dev").values())


def test_the_tracer_gives_the_live_pages_verdict(demo_build):
    tracer = Tracer(demo_build)
    for text in ("Arctic sea ice is melting.", "Greenland is gaining ice", "CO2 is plant food"):
        assert tracer.trace(text).verdict == _verdict_of_text(demo_build, text)


def test_every_word_edit_retraced_gives_the_shown_verdict(demo_build, computed):
    for result in computed:
        words = result["words"]
        for edit in words["edits"]:
            retraced = _verdict_of_text(demo_build, edit["text"])
            assert edit["verified_verdict"] == edit["verdict_after"] == retraced
            assert retraced != words["verdict"] and len(edit["removed"]) == words["smallest"]
        if words["smallest"] is not None and words["smallest"] > 1:  # no single word changes it
            for k in range(len(words["words"])):
                text = " ".join(w for j, w in enumerate(words["words"]) if j != k)
                assert _verdict_of_text(demo_build, text) == words["verdict"]


def test_every_model_input_edit_rerun_gives_its_label(computed):
    for result in computed:
        assert result["model_input"]["verdict"] == result["verdict"]
        for target in result["model_input"]["targets"]:
            for kind in ("remove", "add"):
                edit = target[kind]
                if edit["possible"]:
                    assert edit["verdict_after"] == target["label"], (result["claim_id"], kind)
                    assert edit["lower_bound"] <= edit["count"]


def test_every_passage_left_out_rerun_gives_the_shown_verdict(demo_build, computed):
    for result in computed:
        passages = result["passages"]
        assert passages["verdict"] == result["verdict"]  # the stored input, made again
        for row in passages["passages"]:
            assert row["verified_verdict"] == row["verdict_after"]
            assert row["changes"] == (row["verdict_after"] != result["verdict"])


def test_the_batch_rerun_gives_the_builds_notebook_verdict(computed):
    for result in computed:
        batch = result["batch"]
        assert batch["verdict"] == batch["stored_verdict"]
        assert len(batch["neighbours"]) == batch["batch_size"] - 1
        assert batch["changing"] == [n["id"] for n in batch["neighbours"] if n["verdict_after"] != batch["verdict"]]


def _brute_removals(table, ids: np.ndarray, pad: int, label: int) -> int | None:
    real = np.flatnonzero(ids != pad)
    for size in range(len(real) + 1):
        for chosen in itertools.combinations(real, size):
            edited = ids.copy()
            edited[list(chosen)] = pad
            if int(np.argmax(table.logits(edited))) == label:
                return size
    return None


def test_on_short_inputs_no_smaller_removal_exists(demo_build):
    """A claim's stems alone (no passage): at most a dozen real tokens, every subset tried."""
    classifier = demo_build.classifier()
    pad = classifier.vocab.index[constants.PAD]
    checked = 0
    for claim in list(demo_build.claims("dev").values())[:12]:
        ids = np.asarray(classifier.vocab.encode(demo_build.preprocessor.preprocess(claim.text).text()))
        if np.count_nonzero(ids != pad) > 12:
            continue
        edits = model_input_edits(classifier, ids)
        for target in edits["targets"]:
            expected = _brute_removals(classifier.table, ids, pad, constants.LABELS.index(target["label"]))
            removal = target["remove"]
            assert (removal["count"] if removal["possible"] else None) == expected, (claim.id, target["label"])
            checked += 1
    assert checked >= 6


def test_all_resumes_from_a_killed_runs_scratch_file(demo_counterfactuals, tmp_path, data_dir, monkeypatch):
    root = tmp_path / "demo"
    shutil.copytree(demo_counterfactuals.root, root)
    build = BuildReader(root, data_dir)
    for split in SPLITS:  # as a kill leaves it: the claims finished in the scratch file, a line cut short
        whole = build.work.counterfactuals(split)
        build.work.counterfactuals_part(split).write_text(whole.read_text() + '{"claim_id": "cut', encoding="utf-8")
        whole.unlink()
    monkeypatch.setattr("claimtrace.explain.counterfactuals.report.compute_claim", _not_again)
    summary = write_all(build, max_words=COUNTERFACTUAL_WORDS, limit=COUNTERFACTUAL_CLAIMS)
    reader = BuildReader(root, data_dir)
    assert reader.counterfactuals("dev") == demo_counterfactuals.counterfactuals("dev")
    assert summary["shares"] == demo_counterfactuals.counterfactuals()["shares"]
    assert not reader.file_problems(full=True)  # written whole and recorded in the manifest


def _not_again(*args, **kwargs):
    raise AssertionError("a claim finished before was computed again")


def test_the_files_hold_the_dev_shares_and_the_command_prints_the_record(demo_counterfactuals, data_dir):
    build = demo_counterfactuals
    records = build.counterfactuals("dev")
    assert list(records) == list(build.inputs("dev", "retrieved").claim_ids[:COUNTERFACTUAL_CLAIMS])
    summary = build.counterfactuals()
    assert set(summary["shares"]) == {"one_word", "one_token", "one_passage", "one_neighbour"}
    for key, share in summary["shares"].items():
        assert share["n"] == COUNTERFACTUAL_CLAIMS and share["successes"] == sum(
            r["summary"][key] for r in records.values()
        )
        assert share["lower"] <= share["estimate"] <= share["upper"]
    claim_id = list(records)[1]
    args = ["--data", str(data_dir), "counterfactual", claim_id, "--max-words", "2", "--workdir", str(build.root)]
    printed = CliRunner().invoke(main, [*args, "--json"])
    assert printed.exit_code == 0, printed.output
    assert json.loads(printed.output) == records[claim_id]
    assert counterfactuals(build, claim_id=claim_id, max_words=2) == records[claim_id]
    words = CliRunner().invoke(main, args)
    assert words.exit_code == 0 and "model input" in words.output


def test_the_command_refuses_what_it_cannot_do(demo_build, data_dir):
    runner = CliRunner()
    root = str(demo_build.root)
    both = runner.invoke(
        main, ["--data", str(data_dir), "counterfactual", "claim-752", "--text", "x", "--workdir", root]
    )
    assert both.exit_code == 2 and "one of CLAIM_ID" in both.output
    zero = runner.invoke(
        main, ["--data", str(data_dir), "counterfactual", "--text", "x", "--max-words", "0", "--workdir", root]
    )
    assert zero.exit_code == 2 and "--max-words" in zero.output
