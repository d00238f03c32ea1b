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
from claimtrace.explain.counterfactuals.report import compute_claim, counterfactuals
from claimtrace.explain.counterfactuals.tokens import model_input_edits
from claimtrace.explain.counterfactuals.trace import Tracer
from claimtrace.web.views import walkthrough
from claimtrace.workdir.reader import BuildReader

#: Dev claims whose counterfactuals are computed here (the build's first, and the walkthrough's).
CLAIMS = 2


def _verdict_of_text(build, text: str) -> str:
    """The verdict alone the live page shows for a typed text (the walkthrough's trace)."""
    return walkthrough.assemble(build, text)["classifier"]["alone"]["verdict"]


@pytest.fixture(scope="module")
def computed(demo_build) -> list[dict]:
    ids = demo_build.inputs("dev", "retrieved").claim_ids[:CLAIMS]
    return [compute_claim(demo_build, claim_id, max_words=2) for claim_id in ids]


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


@pytest.fixture(scope="module")
def copied(demo_build, tmp_path_factory, data_dir) -> BuildReader:
    root = tmp_path_factory.mktemp("counterfactuals") / "demo"
    shutil.copytree(demo_build.root, root)
    return BuildReader(root, data_dir)


def test_all_writes_resumes_and_the_command_prints_the_record(copied, data_dir, computed):
    first = computed[0]
    # a killed run's scratch line (and a line cut short) is taken up, not computed again
    part = copied.work.counterfactuals_part("dev")
    part.parent.mkdir(parents=True, exist_ok=True)
    marked = {**first, "text": first["text"] + " (from the scratch file)"}
    part.write_text(json.dumps(marked) + "\n" + '{"claim_id": "cut', encoding="utf-8")
    summary = write_all(copied, max_words=2, limit=CLAIMS)
    reader = BuildReader(copied.root, data_dir)
    records = reader.counterfactuals("dev")
    assert list(records) == list(copied.inputs("dev", "retrieved").claim_ids[:CLAIMS])
    assert records[first["claim_id"]]["text"].endswith("(from the scratch file)")
    assert summary["claims"] == CLAIMS and set(summary["shares"]) == {
        "one_word",
        "one_token",
        "one_passage",
        "one_neighbour",
    }
    assert reader.counterfactuals()["shares"]["one_word"]["n"] == CLAIMS
    assert not reader.file_problems(full=True)  # written whole and recorded in the manifest
    second = list(records)[1]
    args = ["--data", str(data_dir), "counterfactual", second, "--max-words", "2", "--workdir", str(copied.root)]
    printed = CliRunner().invoke(main, [*args, "--json"])
    assert printed.exit_code == 0, printed.output
    assert json.loads(printed.output) == records[second] == counterfactuals(reader, claim_id=second, max_words=2)
    words = CliRunner().invoke(main, args)
    assert "model input" in words.output and words.exit_code == 0


def test_the_command_refuses_what_it_cannot_do(copied, data_dir):
    runner = CliRunner()
    both = runner.invoke(
        main, ["--data", str(data_dir), "counterfactual", "claim-752", "--text", "x", "--workdir", str(copied.root)]
    )
    assert both.exit_code == 2 and "one of CLAIM_ID" in both.output
    zero = runner.invoke(
        main,
        ["--data", str(data_dir), "counterfactual", "--text", "x", "--max-words", "0", "--workdir", str(copied.root)],
    )
    assert zero.exit_code == 2 and "--max-words" in zero.output
