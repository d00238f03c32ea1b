"""The Python API against the command line and the site: the same scores, the same comparison,
each trace equal to its page's JSON twin, the command line's errors, and ``import claimtrace``
kept cheap."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

import claimtrace
from claimtrace.api.build import Build
from claimtrace.cli.main import main
from claimtrace.data import files as data_layer
from claimtrace.errors import DataError

TYPED = "Arctic sea ice has been shrinking for decades."


@pytest.fixture(scope="module")
def build(demo_build):
    """The demo build opened by the API, with a site data of its own (its traces computed anew)."""
    return Build(demo_build)


@pytest.fixture(scope="module")
def typed(build):
    """A typed claim's trace, made once (a typed claim is traced anew on every call)."""
    return build.trace(TYPED)


@pytest.fixture(scope="module")
def baseline_path(data_dir) -> str:
    return str(data_layer.course_file(data_dir, "baseline"))


def _cli_json(data_dir, *args: str) -> dict:
    done = CliRunner().invoke(main, ["--data", str(data_dir), *args, "--json"])
    assert done.exit_code == 0, done.output
    return json.loads(done.output)


def test_import_claimtrace_loads_nothing_else_and_names_the_api():
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, claimtrace; print(sorted(m for m in sys.modules if 'claimtrace' in m or m == 'numpy'))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip() == "['claimtrace']"
    assert set(claimtrace.__all__) <= set(dir(claimtrace))
    for name in claimtrace.__all__:
        # compare is the API's function wrapped, so that it also lends the subpackage's names
        exported = getattr(claimtrace, name)
        assert getattr(exported, "__wrapped__", exported) is getattr(claimtrace.api, name)


def test_compare_is_the_function_though_the_subpackage_is_imported():
    import claimtrace.compare.runs  # noqa: F401 - the import system sets claimtrace.compare to the subpackage
    from claimtrace.compare import runs

    assert callable(claimtrace.compare) and claimtrace.compare.__module__ == "claimtrace.api.comparison"
    assert (
        runs.__name__ == "claimtrace.compare.runs"
        and sys.modules["claimtrace.compare"].__name__ == "claimtrace.compare"
    )
    import claimtrace.compare.run_store as by_name  # the function lends the subpackage's names

    assert by_name is claimtrace.compare.run_store is sys.modules["claimtrace.compare.run_store"]


def test_a_claims_trace_is_its_pages_json_twin(build, web_client):
    trace = build.claim("claim-752")
    assert trace.to_dict() == web_client.get("/claim/claim-752.json").json()
    assert trace.verdicts == {
        "retrieved": {
            "alone": trace.to_dict()["classifier"]["alone"]["verdict"],
            "notebook": trace.verdicts["retrieved"]["notebook"],
        },
        "gold": trace.to_dict()["classifier"]["gold_evidence"],
    }
    assert trace.passages == trace.to_dict()["retrieval"]["evidences"]
    assert trace.kept and all("kept" in row and "returned" in row for row in trace.kept)
    labels = ("SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO", "DISPUTED")
    assert trace.shares[0]["token"] == "[CLS]" and all(label in trace.shares[0] for label in labels)
    assert trace.claim_id == "claim-752" and trace.label == "SUPPORTS"


def test_a_typed_trace_is_the_live_pages_json(typed, web_client):
    trace = typed
    assert trace.to_dict() == web_client.get("/live.json", params={"text": TYPED}).json()
    assert set(trace.verdicts) == {"retrieved"} and set(trace.verdicts["retrieved"]) == {"alone"}
    assert trace.claim_id is None and trace.label is None


def test_a_typed_trace_under_a_rule_is_api_traces_json(build, typed, web_client):
    from tests.web.test_live_rule import DIFFERING

    trace = build.trace(DIFFERING, rule="submission")
    asked = web_client.get("/api/trace", params={"text": DIFFERING, "rule": "submission"}).json()
    assert trace.to_dict() == asked and trace.rule == "submission"
    assert trace.to_dict()["retrieval"]["rule"]["name"] == "submission"
    assert trace.passages != build.trace(DIFFERING).passages
    assert "(rule submission)" in repr(trace) and typed.rule == "notebook"
    assert "the team’s submission’s" in trace._repr_html_()  # the filter stage says the rule
    assert build.claim("claim-752").rule == "notebook"


@pytest.mark.parametrize("rule", ["bm25", 2, None])
def test_a_rule_that_is_none_is_refused_naming_the_field(build, rule):
    with pytest.raises(DataError, match=r"^rule: .* is no scoring rule; give 'notebook' or 'submission'"):
        build.trace(TYPED, rule=rule)


def test_a_traces_counterfactuals_keep_its_rule(build):
    from claimtrace.explain.counterfactuals.report import counterfactuals
    from tests.web.test_live_rule import DIFFERING

    found = build.trace(DIFFERING, rule="submission").counterfactuals(max_words=2)
    assert found["rule"] == "submission"
    assert found == counterfactuals(build.reader, text=DIFFERING, rule="submission", max_words=2)


def test_a_trace_draws_the_sites_page_in_a_frame(build, typed):
    html = build.claim("claim-752")._repr_html_()
    assert html.startswith('<div class="claimtrace-output"') and "<iframe" in html and "sandbox" in html
    document = html.split('srcdoc="', 1)[1]
    assert "&lt;style&gt;" in document and "&lt;script" not in document  # style inlined, no script
    assert "South Australia" in document and "In short" in document
    assert "Trace it through the build" not in typed._repr_html_()  # the live page's form left out


def test_counterfactuals_are_the_builds_record(demo_counterfactuals):
    """A trace's counterfactuals are what `claimtrace counterfactual --all` wrote for the claim (the
    command's --json equals the record: tests/explain/test_counterfactuals.py)."""
    from tests.conftest import COUNTERFACTUAL_WORDS

    records = demo_counterfactuals.counterfactuals("dev")
    claim_id = next(iter(records))
    found = Build(demo_counterfactuals).claim(claim_id).counterfactuals(max_words=COUNTERFACTUAL_WORDS)
    assert found == records[claim_id] and found["summary"]


def test_evaluate_equals_the_command_line(data_dir, baseline_path):
    scores = claimtrace.evaluate(baseline_path, data=data_dir)
    assert scores.to_dict() == _cli_json(data_dir, "evaluate", "--predictions", baseline_path, "--split", "dev")
    assert (
        round(scores.HM, 4) == 0.3441 and scores.intervals["HM"]["lower"] < scores.HM < scores.intervals["HM"]["upper"]
    )
    as_dict = claimtrace.evaluate(json.loads(open(baseline_path, encoding="utf-8").read()), data=data_dir)
    assert {**as_dict.to_dict(), "predictions": baseline_path} == scores.to_dict()
    assert "&lt;h1&gt;The course’s scores" in scores._repr_html_()


def test_compare_equals_the_command_line_and_gives_its_table(build, data_dir, baseline_path):
    comparison = claimtrace.compare(baseline_path, build=build, names=["baseline"])
    cli = _cli_json(
        data_dir, "compare", "--workdir", str(build.root), "--predictions", baseline_path, "--name", "baseline"
    )
    assert json.loads(json.dumps(comparison.to_dict())) == cli
    frame = comparison.to_frame()
    assert list(frame.index) == list(build.reader.claims("dev"))
    assert {"label", "notebook", "baseline label", "baseline right", "baseline F"} <= set(frame.columns)
    differing = comparison.differing()
    assert differing == list(frame.index[frame["baseline label"] != frame["notebook"]])
    assert "Your system beside the notebook" in comparison._repr_html_()


def test_without_pandas_the_table_is_records(build, baseline_path, monkeypatch):
    comparison = claimtrace.compare(json.loads(open(baseline_path, encoding="utf-8").read()), build=build)
    monkeypatch.setitem(sys.modules, "pandas", None)
    rows = comparison.to_frame()
    assert isinstance(rows, list) and rows[0]["claim_id"] == "claim-752" and "predictions label" in rows[0]


def test_preprocess_is_the_claim_pages_first_section(typed, data_dir):
    words = claimtrace.preprocess(TYPED, data=data_dir)
    assert words.to_dict() == typed.to_dict()["preprocess"]
    assert words.dropped == {"has": "stopword", "been": "stopword", "for": "stopword"}
    assert words.text == "arctic sea ice shrink decad"


def test_open_build_follows_the_command_lines_rule(demo_build, data_dir, monkeypatch, tmp_path):
    monkeypatch.setenv("CLAIMTRACE_WORKDIR", str(demo_build.root))
    assert claimtrace.open_build(data=data_dir).root == demo_build.root
    data = data_dir.resolve()
    monkeypatch.setenv("CLAIMTRACE_WORKDIR", "")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DataError, match="work/demo"):
        claimtrace.open_build(data=data)


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda b, d: claimtrace.evaluate("no-such-file.json", data=d), "no-such-file.json: file is missing"),
        (lambda b, d: claimtrace.evaluate(42, data=d), "predictions: a predictions file's path or a dict"),
        (lambda b, d: claimtrace.evaluate([], data=d), "predictions: a predictions file's path or a dict"),
        (lambda b, d: claimtrace.evaluate({}, split="val", data=d), "split: 'val'"),
        (lambda b, d: claimtrace.compare(build=b), "predictions: give at least one"),
        (lambda b, d: claimtrace.compare({}, build=b, names=["a", "b"]), "names: 2 names given for 1"),
        (lambda b, d: b.claim("claim-none"), "claim-none: no such claim"),
        (lambda b, d: b.trace(""), "text: Type a claim"),
        (lambda b, d: claimtrace.open_build("no-such-build", data=d), "no-such-build"),
        (lambda b, d: claimtrace.preprocess("x", data="no-such-data"), "no-such-data: the data folder"),
    ],
)
def test_bad_input_is_a_data_error_naming_the_file_or_field(build, data_dir, call, named):
    with pytest.raises(DataError) as raised:
        call(build, data_dir)
    assert named in str(raised.value)


def test_a_file_that_is_not_json_is_named(data_dir, tmp_path):
    path = tmp_path / "mine.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(DataError, match="mine.json"):
        claimtrace.evaluate(path, data=data_dir)
