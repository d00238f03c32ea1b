"""``claimtrace compare`` (claimtrace.cli.compare): a predictions file beside the build's pipeline,
bad input in one line with exit status 2."""

from __future__ import annotations

import json
import re

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
        "not the shape": ("[1, 2]", "expected a JSON object mapping claim ids to predictions, got list"),
        "unknown claim": (
            edit(lambda r: r.update({"claim-0": r[first]})),
            r"claim 'claim-0' is not one of the 154 claims",
        ),
        "label": (
            edit(lambda r: r[first].update({"claim_label": "TRUE"})),
            rf"claim '{first}' has claim_label \"TRUE\", expected one of SUPPORTS",
        ),
        "evidences not a list": (
            edit(lambda r: r[first].update({"evidences": "evidence-1"})),
            rf"claim '{first}': evidences is str, expected a list of evidence ids",
        ),
        "evidence not a string": (
            edit(lambda r: r[first].update({"evidences": ["evidence-1", 7]})),
            rf"claim '{first}': evidences\[1\] is 7, not an evidence id",
        ),
        "duplicate id": (
            edit(lambda r: r[first].update({"evidences": ["evidence-1", "evidence-2", "evidence-1"]})),
            rf"claim '{first}': evidences\[2\] 'evidence-1' repeats evidences\[0\]",
        ),
        "missing claim": (
            edit(lambda r: r.pop(first)),
            rf"no prediction for 1 of the 154 dev claims \({first}\); --skip-missing",
        ),
    }


@pytest.mark.parametrize(
    "case",
    [
        "not JSON",
        "not the shape",
        "unknown claim",
        "label",
        "evidences not a list",
        "evidence not a string",
        "duplicate id",
        "missing claim",
    ],
)
def test_bad_input_is_one_message_and_exit_2(demo_build, data_dir, tmp_path, case):
    content, message = _cases(data_dir)[case]
    path = tmp_path / "run.json"
    path.write_text(content, encoding="utf-8")
    result = _cli(data_dir, "compare", "--predictions", str(path), "--workdir", str(demo_build.root))
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"claimtrace: error: {path}")
    assert re.search(message, line), line


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
