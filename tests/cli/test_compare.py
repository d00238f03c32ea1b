"""``claimtrace compare`` (claimtrace.cli.compare): a predictions file beside the build's pipeline,
bad input in one line with exit status 2."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from claimtrace.cli.main import main
from claimtrace.data import files as data


@pytest.fixture(scope="module")
def baseline_path(data_dir):
    return data.course_file(data_dir, "baseline")


def _cli(data_dir, *args):
    return CliRunner().invoke(main, ["--data", str(data_dir), *args])


# --- bad input: one message naming the file, the claim and the field --------------------------


def _baseline(data_dir) -> dict:
    return json.loads(data.course_file(data_dir, "baseline").read_text(encoding="utf-8"))


def _cases(data_dir):
    first = sorted(_baseline(data_dir))[0]

    def edit(change):
        raw = _baseline(data_dir)
        change(raw)
        return json.dumps(raw)

    return {
        "not JSON": ("{not json", r"not valid JSON \(.* at line 1"),
        "not the shape": ("[1, 2]", "the course's scorer cannot score it: expected a JSON object .*, got a list"),
        "no course claims": (
            json.dumps({"claim-x": {"claim_label": "SUPPORTS", "evidences": []}}),
            r"claim 'claim-x' is not a claim of dev",
        ),
        "an entry the scorer fails on": (
            edit(lambda r: r.update({first: 5})),
            rf"claim '{first}' is a number: the course's scorer fails on it",
        ),
    }


@pytest.mark.parametrize("case", ["not JSON", "not the shape", "no course claims", "an entry the scorer fails on"])
def test_bad_input_is_one_message_and_exit_2(demo_build, data_dir, tmp_path, case):
    content, message = _cases(data_dir)[case]
    path = tmp_path / "run.json"
    path.write_text(content, encoding="utf-8")
    result = _cli(data_dir, "compare", "--predictions", str(path), "--workdir", str(demo_build.root))
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"claimtrace: error: {path}")
    assert re.search(message, line), line


def _odd(data_dir) -> dict[str, str]:
    """Files the strict reader used to refuse and the course's scorer scores, each with the audit
    line it gets."""
    first = sorted(_baseline(data_dir))[0]

    def edit(change):
        raw = _baseline(data_dir)
        change(raw)
        return raw

    return {
        "label": (edit(lambda r: r[first].update({"claim_label": "TRUE"})), "labels outside the four: 'TRUE' (1)"),
        "not a list": (edit(lambda r: r[first].update({"evidences": "evidence-1"})), "evidences that are not a list"),
        "not a string": (
            edit(lambda r: r[first].update({"evidences": ["evidence-1", 7]})),
            "evidence ids are not course passage ids",
        ),
        "repeated": (
            edit(lambda r: r[first].update({"evidences": ["evidence-1", "evidence-2", "evidence-1"]})),
            "ids repeated in a list, each counted in the precision",
        ),
        "missing": (
            edit(lambda r: r.pop(first)),
            f"1 of the 154 dev claims are missing: the course's scorer skips them ({first})",
        ),
    }


def test_what_the_course_scorer_scores_is_compared_and_audited(demo_build, data_dir, tmp_path):
    from claimtrace.evaluation.audit import report_path

    args = ["compare", "--workdir", str(demo_build.root)]
    for name, (value, said) in _odd(data_dir).items():
        path = tmp_path / f"{name.replace(' ', '-')}.json"
        path.write_text(json.dumps(value), encoding="utf-8")
        args += ["--predictions", str(path)]
        scored = report_path(path, data_dir).scored.course
        result = _cli(data_dir, "compare", "--predictions", str(path), "--workdir", str(demo_build.root), "--json")
        assert result.exit_code == 0, result.output
        (run,) = json.loads(result.output)["runs"]
        assert (run["F"], run["A"], run["HM"]) == (scored.F, scored.A, scored.HM), name
        assert any(said in finding["text"] for finding in run["audit"]), (name, run["audit"])
    result = _cli(data_dir, *args)
    assert result.exit_code == 0, result.output
    assert result.output.count("audit of ") >= 5


def test_a_class_folder_sets_aside_what_cannot_be_compared(demo_build, data_dir, tmp_path, baseline_path):
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "alice.json").write_bytes(baseline_path.read_bytes())
    always = {cid: {"claim_label": "SUPPORTS", "evidences": ["evidence-1"]} for cid in _baseline(data_dir)}
    (folder / "bob.json").write_text(json.dumps(always), encoding="utf-8")
    (folder / "carol.json").write_text("[1]", encoding="utf-8")
    test_ids = data.load_claims("test", data_dir)
    (folder / "dave.json").write_text(
        json.dumps({cid: always[next(iter(always))] for cid in test_ids}), encoding="utf-8"
    )
    result = _cli(data_dir, "compare", "--class", str(folder), "--workdir", str(demo_build.root), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert [run["name"] for run in report["runs"]] == ["alice", "bob"] and report["split"] == "dev"
    aside = {Path(line["file"]).name: line["why"] for line in report["set_aside"]}
    assert "the course's scorer cannot score it" in aside["carol.json"]
    assert aside["dave"] == "holds test claims (compare them with --split test)"
    bob = report["runs"][1]
    assert any(
        f["text"].startswith("one label for every claim: this is the always-SUPPORTS baseline") for f in bob["audit"]
    )


def test_cli_prints_the_baseline_beside_the_build(demo_build, data_dir, baseline_path):
    result = _cli(
        data_dir,
        "compare",
        "--predictions",
        str(baseline_path),
        "--name",
        "course baseline",
        "--workdir",
        str(demo_build.root),
        "--claim",
        "claim-1515",
    )
    assert result.exit_code == 0, result.output
    assert "course baseline" in result.output and "F = 0.3378  A = 0.3506  HM = 0.3441" in result.output
    assert "the course run (Table 2)" in result.output
    assert "claim-1515: " in result.output
    as_json = _cli(
        data_dir, "compare", "--predictions", str(baseline_path), "--workdir", str(demo_build.root), "--json"
    )
    assert as_json.exit_code == 0
    report = json.loads(as_json.output)
    assert report["runs"][0]["name"] == "dev-claims-baseline"


def test_compare_has_no_skip_missing_option(data_dir, baseline_path):
    """The course's rule (a claim left out is skipped) is what compare does: no option turns it on."""
    result = _cli(data_dir, "compare", "--predictions", str(baseline_path), "--skip-missing")
    assert result.exit_code == 2 and "No such option '--skip-missing'" in result.output, result.output
