"""``claimtrace counterfactual --rule``: a typed text's counterfactuals under a scoring rule, the
same as the Python API's trace under that rule gives; a rule that is none, or another than the
notebook's for a course claim, refused with exit status 2 naming the option."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from claimtrace.api.build import Build
from claimtrace.cli.main import main
from tests.web.test_live_rule import DIFFERING


def _run(data_dir, build, *args: str):
    return CliRunner().invoke(main, ["--data", str(data_dir), "counterfactual", *args, "--workdir", str(build.root)])


def test_the_rule_prints_what_the_apis_counterfactuals_give(demo_build, data_dir):
    printed = _run(data_dir, demo_build, "--text", DIFFERING, "--rule", "submission", "--max-words", "2", "--json")
    assert printed.exit_code == 0, printed.output
    api = Build(demo_build).trace(DIFFERING, rule="submission").counterfactuals(max_words=2)
    assert json.loads(printed.output) == api and api["rule"] == "submission"
    plain = _run(data_dir, demo_build, "--text", DIFFERING, "--max-words", "2", "--json")
    assert json.loads(plain.output)["rule"] == "notebook" and json.loads(plain.output) != api
    words = _run(data_dir, demo_build, "--text", DIFFERING, "--rule", "submission", "--max-words", "2")
    assert words.exit_code == 0 and "passages retrieved under the submission rule" in words.output


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--text", DIFFERING, "--rule", "bm25"), "--rule: unknown rule 'bm25': expected one of notebook, submission"),
        (("claim-752", "--rule", "submission"), "--rule: a course claim's counterfactuals follow the build's"),
        (("--all", "--rule", "submission"), "--rule submission is for --text"),
    ],
)
def test_a_rule_it_cannot_take_is_refused(demo_build, data_dir, args, said):
    refused = _run(data_dir, demo_build, *args)
    assert refused.exit_code == 2 and said in " ".join(refused.output.split())
