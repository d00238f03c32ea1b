"""``claimtrace evaluate`` and ``predict`` (claimtrace.cli.evaluate): a predictions file or a build's
row scored as the course scores it."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from claimtrace.cli.main import main
from claimtrace.constants import LABELS
from claimtrace.course import TABLE2
from claimtrace.data import files as data
from claimtrace.evaluation.scoreboard import scoreboard_rows


def test_cli_evaluate_text_and_json(data_dir):
    runner = CliRunner()
    path = str(data.course_file(data_dir, "baseline"))
    done = runner.invoke(main, ["--data", str(data_dir), "evaluate", "--predictions", path, "--split", "dev"])
    assert done.exit_code == 0, done.output
    assert "Evidence Retrieval F-score (F)    = 0.3377705627705628" in done.output
    assert "Claim Classification Accuracy (A) = 0.35064935064935066" in done.output
    assert "Harmonic Mean of F and A          = 0.3440894901357093" in done.output
    done = runner.invoke(main, ["--data", str(data_dir), "evaluate", "--predictions", path, "--json", "--per-claim"])
    assert done.exit_code == 0, done.output
    out = json.loads(done.output)
    assert out["F"] == 0.3377705627705628 and out["claims"] == 154 and len(out["per_claim"]) == 154


def test_cli_evaluate_refuses_only_what_the_course_scorer_cannot_score(data_dir, tmp_path):
    path = tmp_path / "bad.json"
    for content, said in (
        ("{", "not valid JSON"),
        ("[]", "the course's scorer cannot score it: expected a JSON object"),
    ):
        path.write_text(content)
        done = CliRunner().invoke(main, ["--data", str(data_dir), "evaluate", "--predictions", str(path)])
        assert done.exit_code == 2 and f"{path}: " in done.output and said in done.output, done.output
    test_file = str(data.course_file(data_dir, "test"))
    done = CliRunner().invoke(main, ["--data", str(data_dir), "evaluate", "--predictions", test_file])
    assert done.exit_code == 2
    assert "its claims are test claims, which are unlabelled" in done.output


def test_cli_evaluate_scores_repeated_ids_as_the_course_does_and_says_so(data_dir, tmp_path):
    """A file the strict reader used to refuse: repeated ids, a list that is not a list, a claim
    left out. The course's number, the strict one beside it, and an audit line each; exit 0."""
    dev = data.load_claims("dev", data_dir)
    ids = sorted(dev)
    value = {cid: {"claim_label": "SUPPORTS", "evidences": list(dev[cid].evidences) * 2} for cid in ids[1:]}
    value[ids[1]]["evidences"] = 5
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(value))
    done = CliRunner().invoke(main, ["--data", str(data_dir), "evaluate", "--predictions", str(path)])
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    f = float(lines[0].split("= ")[1])
    repeated = [2 / 3 for _ in ids[2:]] + [0.0]  # precision 1/2, recall 1 on every claim but the non-list
    assert f == pytest.approx(sum(repeated) / len(repeated), abs=1e-12)
    assert "scored against dev: 153 of 154 claims, as the course's eval.py does" in done.output
    assert "strict score (every claim counted)" in done.output and "skipping 1 claim raised A by" in done.output
    assert "audit: ids repeated in a list, each counted in the precision; they cost 0.3312" in done.output
    assert "audit: evidences that are not a list: F 0" in done.output
    assert "audit: 1 of the 154 dev claims are missing" in done.output
    out = json.loads(
        CliRunner().invoke(main, ["--data", str(data_dir), "evaluate", "--predictions", str(path), "--json"]).output
    )
    assert out["F"] == f and out["strict"]["claims"] == 154 and out["split"] == "dev"
    assert {finding["code"] for finding in out["audit"]} >= {"repeated_ids", "not_a_list", "missing", "one_label"}


def test_predict_scores_through_evaluate(demo_build, tmp_path, data_dir):
    out = tmp_path / "dev-predictions.json"
    runner = CliRunner()
    result = runner.invoke(
        main,
        ["--data", str(data_dir), "predict", "--workdir", str(demo_build.root), "--split", "dev", "--out", str(out)],
    )
    assert result.exit_code == 0, result.output
    predictions = json.loads(out.read_text(encoding="utf-8"))
    assert len(predictions) == 154 and set(next(iter(predictions.values()))) == {
        "claim_text",
        "claim_label",
        "evidences",
    }
    scored = json.loads(
        runner.invoke(main, ["--data", str(data_dir), "evaluate", "--predictions", str(out), "--json"]).output
    )
    report = json.loads(
        runner.invoke(main, ["--data", str(data_dir), "evaluate", "--workdir", str(demo_build.root), "--json"]).output
    )
    assert report["course"]["F"] == scored["F"] and report["course"]["A"] == scored["A"]
    assert set(report["classifier"]) == {"gold", "retrieved"}
    assert set(report["classifier"]["gold"]) == {"alone", "notebook"}
    assert len(report["classifier"]["gold"]["notebook"]["confusion"]) == 4
    assert {row["variant"] for row in report["variants"]} >= {
        "notebook",
        "raw-claim-text",
        "cosine-once",
        "unpadded-tags",
    }
    assert 0.0 <= report["fallback_share"] <= 1.0


def test_the_variant_table_is_the_course_scorer_on_each_variants_predictions(demo_build, tmp_path, data_dir):
    """Each variant's dev F in the retrieval stage's table is what the course's scorer gives the
    predictions file its records yield (`claimtrace predict --row VARIANT+notebook+notebook`,
    scored by `claimtrace evaluate --predictions`); each variant's records cover test too."""
    runner = CliRunner()
    for row in demo_build.retrieval_summary()["variants_dev"]:
        out = tmp_path / f"{row['variant']}.json"
        args = ["--data", str(data_dir), "predict", "--workdir", str(demo_build.root), "--split", "dev"]
        done = runner.invoke(main, [*args, "--row", f"{row['variant']}+notebook+notebook", "--out", str(out)])
        assert done.exit_code == 0, done.output
        scored = json.loads(
            runner.invoke(main, ["--data", str(data_dir), "evaluate", "--predictions", str(out), "--json"]).output
        )
        assert scored["claims"] == row["claims"] == len(demo_build.claims("dev"))
        assert scored["F"] == pytest.approx(row["F"], abs=1e-12), row["variant"]
        if row["variant"] != "notebook":
            assert len(demo_build.variant_retrieval(row["variant"], "test")) == len(demo_build.claims("test"))


def test_every_scoreboard_row_equals_evaluate_on_its_exported_predictions(demo_build, tmp_path, data_dir):
    runner = CliRunner()
    report = json.loads(
        runner.invoke(main, ["--data", str(data_dir), "evaluate", "--workdir", str(demo_build.root), "--json"]).output
    )
    assert report["variants"][-1]["variant"] == "bm25" and report["variants"][-1]["reference"] is True
    board = report["scoreboard"]
    assert board["anchor"] == TABLE2["dev"]
    assert [r["name"] for r in board["rows"]] == [r.name for r in scoreboard_rows()]
    assert len(board["rows"]) == 5 * 3 * 2
    assert board["rows"][0]["name"] == "notebook+notebook+notebook" and board["rows"][0]["changes"] == []
    assert board["rows"][0]["F"] == report["course"]["F"] and board["rows"][0]["A"] == report["course"]["A"]
    for row in board["rows"]:
        assert row["reference"] == (row["retrieval"] == "bm25") and (
            row["changes"] or row["name"].count("notebook") == 3
        )
        out = tmp_path / f"{row['name']}.json"
        args = ["--data", str(data_dir), "predict", "--workdir", str(demo_build.root), "--split", "dev"]
        done = runner.invoke(main, [*args, "--row", row["name"], "--out", str(out)])
        assert done.exit_code == 0, done.output
        scored = json.loads(
            runner.invoke(main, ["--data", str(data_dir), "evaluate", "--predictions", str(out), "--json"]).output
        )
        assert (scored["F"], scored["A"], scored["HM"]) == (row["F"], row["A"], row["HM"]), row["name"]


def test_predict_test_row_in_the_course_shape(demo_build, tmp_path, data_dir):
    out = tmp_path / "test.json"
    args = ["--data", str(data_dir), "predict", "--workdir", str(demo_build.root), "--split", "test"]
    done = CliRunner().invoke(main, [*args, "--row", "bm25+intended+alone", "--out", str(out)])
    assert done.exit_code == 0, done.output
    predictions = json.loads(out.read_text(encoding="utf-8"))
    assert list(predictions) == list(demo_build.claims("test"))
    first = next(iter(predictions.values()))
    assert set(first) == {"claim_text", "claim_label", "evidences"} and first["claim_label"] in LABELS
    assert [p["evidences"] for p in predictions.values()] == [
        r["evidences"] for r in demo_build.bm25_retrieval("test").values()
    ]
    bad = CliRunner().invoke(main, [*args, "--row", "bm25+nothing+alone", "--out", str(out)])
    assert bad.exit_code == 2 and "unknown scoreboard row" in bad.output


def test_cli_evaluate_has_no_skip_missing_option(data_dir):
    """The course's rule (a claim left out is skipped) is what evaluate does: no option turns it on."""
    path = str(data.course_file(data_dir, "baseline"))
    done = CliRunner().invoke(main, ["--data", str(data_dir), "evaluate", "--predictions", path, "--skip-missing"])
    assert done.exit_code == 2 and "No such option '--skip-missing'" in done.output, done.output
