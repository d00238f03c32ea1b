"""What each quirk cost: the BM25 stage's records, the extra verdicts, the scoreboard (each row
scored as `claimtrace evaluate --predictions` scores its exported file), and the fixes box."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from claimtrace import constants as C
from claimtrace.cli.main import main
from claimtrace.course import TABLE2
from claimtrace.evaluation.scoreboard import scoreboard_rows


def test_bm25_records_shape(demo_build):
    passages = demo_build.passages()
    for split in C.SPLITS:
        records = demo_build.bm25_retrieval(split)
        assert list(records) == list(demo_build.claims(split))  # file order, every claim
        for cid, record in records.items():
            assert set(record) == {"claim_id", "evidences", "scores"} and record["claim_id"] == cid
            ids, scores = record["evidences"], record["scores"]
            assert len(ids) == len(scores) <= C.MAX_EVIDENCES and len(set(ids)) == len(ids)
            assert all(pid in passages for pid in ids)
            assert all(s > 0 for s in scores) and scores == sorted(scores, reverse=True)
    row = demo_build.retrieval_variants()[-1]
    assert row["variant"] == "bm25" and row["reference"] is True and row["claims"] == 154
    assert [r["variant"] for r in demo_build.retrieval_variants()[:-1]] == [
        r["variant"] for r in demo_build.retrieval_summary()["variants_dev"]
    ]


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


def test_more_verdicts_cover_every_source(demo_build):
    for split in C.SPLITS:
        more = demo_build.more_verdicts(split)
        entry = more[next(iter(more))]
        if split == "train":  # the claims both models were trained on: not run
            assert entry == {"notebook": {}, "intended": {}}
            continue
        intended = {"retrieved", "bm25"} | ({"gold"} if split != "test" else set())
        variants = {"raw-claim-text", "cosine-once", "unpadded-tags"}
        assert set(entry["intended"]) == intended | variants
        assert set(entry["notebook"]) == {"bm25"} | variants
        assert set(entry["intended"]["bm25"]) == set(C.PROTOCOLS)
        assert (demo_build.root / "classifier" / "inputs" / f"{split}-bm25.npz").is_file()
    # the intended model's two protocols are one computation per input (IntendedClassifier)
    dev = demo_build.more_verdicts("dev")
    assert all(e["intended"]["gold"]["alone"] == e["intended"]["gold"]["notebook"] for e in dev.values())


def test_intended_verdicts_are_those_of_its_own_calls(demo_build):
    """The intended model's stored logits (each distinct input once, in batches of 16) against
    the calls each protocol makes: within float32's agreement of the notebook's batches of 16 on
    every dev claim of two sources and of a call of one claim on every 16th; and on every dev and
    test claim of every source whose top two logits are close enough for float32 noise to
    matter, the same verdict as both calls."""
    import numpy as np
    import torch

    from claimtrace.models.intended import load_intended_model
    from claimtrace.models.transformer import alone_logits, notebook_logits, torch_threads

    model = load_intended_model()
    near_ties = 0
    with torch_threads(1):
        for split in ("dev", "test"):
            more = demo_build.more_verdicts(split)
            for source in next(iter(more.values()))["intended"]:
                encoded = demo_build.inputs(split, source)
                stored = np.array([more[cid]["intended"][source]["notebook"]["logits"] for cid in encoded.claim_ids])
                ids = torch.from_numpy(encoded.input_ids)
                if split == "dev" and source in ("gold", "retrieved"):
                    in_sixteens = notebook_logits(model, ids).double().numpy()
                    assert np.abs(stored - in_sixteens).max() < C.FLOAT32_AGREEMENT
                    one_by_one = alone_logits(model, ids[::16]).double().numpy()
                    assert np.abs(stored[::16] - one_by_one).max() < C.FLOAT32_AGREEMENT
                top_two = np.sort(stored, axis=1)[:, -2:]
                for row in np.flatnonzero(top_two[:, 1] - top_two[:, 0] < 1e-3):
                    near_ties += 1
                    start = row // C.BATCH_SIZE * C.BATCH_SIZE
                    batch = notebook_logits(model, ids[start : start + C.BATCH_SIZE])[row - start]
                    alone = alone_logits(model, ids[row : row + 1])[0]
                    assert int(batch.argmax()) == int(alone.argmax()) == int(stored[row].argmax()), (split, source, row)
    print(f"{near_ties} near ties checked")


def test_every_scoreboard_row_equals_evaluate_on_its_exported_predictions(demo_build, tmp_path, data_dir):
    runner = CliRunner()
    report = json.loads(
        runner.invoke(main, ["--data", str(data_dir), "evaluate", "--workdir", str(demo_build.root), "--json"]).output
    )
    assert report["variants"][-1]["variant"] == "bm25" and report["variants"][-1]["reference"] is True
    board = report["scoreboard"]
    assert board["anchor"] == TABLE2["dev"]
    assert [r["name"] for r in board["rows"]] == [r.name for r in scoreboard_rows()]
    assert len(board["rows"]) == 5 * 2 * 2
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
    assert set(first) == {"claim_text", "claim_label", "evidences"} and first["claim_label"] in C.LABELS
    assert [p["evidences"] for p in predictions.values()] == [
        r["evidences"] for r in demo_build.bm25_retrieval("test").values()
    ]
    bad = CliRunner().invoke(main, [*args, "--row", "bm25+nothing+alone", "--out", str(out)])
    assert bad.exit_code == 2 and "unknown scoreboard row" in bad.output


def test_fixes_box_of_claim_752(web_client, demo_build):
    result = web_client.get("/claim/claim-752.json").json()
    fixes = result["fixes"]
    assert fixes["status"] == "ok"
    claim = demo_build.claims("dev")["claim-752"]
    record = demo_build.bm25_retrieval("dev")["claim-752"]
    assert [e["id"] for e in fixes["bm25"]["evidences"]] == record["evidences"]
    assert [e["gold"] for e in fixes["bm25"]["evidences"]] == [pid in claim.evidences for pid in record["evidences"]]
    assert all(e["text"] for e in fixes["bm25"]["evidences"])
    assert 0.0 <= fixes["bm25"]["F"] <= 1.0 and fixes["notebook_F"] == result["retrieval"]["scores"]["F"]
    more = demo_build.more_verdicts("dev")["claim-752"]
    for source in ("gold", "retrieved", "bm25"):
        for protocol in C.PROTOCOLS:
            assert fixes["verdicts"]["intended"][source][protocol] == more["intended"][source][protocol]["verdict"]
    assert fixes["verdicts"]["notebook"]["retrieved"]["notebook"] == result["classifier"]["notebook"]["verdict"]
    assert "notebook's model only" in fixes["note"]
    page = web_client.get("/claim/claim-752.html").text
    assert 'id="fixes"' in page and "With the fixes" in page


def test_explore_scoreboard_and_its_downloads(web_client, demo_build):
    explore = web_client.get("/explore/dev.json").json()
    board = explore["scoreboard"]
    assert board["status"] == "ok" and board["anchor"] == TABLE2["dev"]
    assert board["rows"] == demo_build.scoreboard()["rows"]
    assert explore["retrieval_variants"][-1]["variant"] == "bm25"
    page = web_client.get("/explore/dev.html").text
    assert "What each quirk cost" in page and "0.0430" in page  # the anchor's F
    test_board = web_client.get("/explore/test.json").json()["scoreboard"]
    assert test_board["rows"] is None and test_board["anchor"] == TABLE2["test"]
    assert board["downloads"] == test_board["downloads"]  # both splits' files from either page
    path = test_board["downloads"]["unpadded-tags+intended+notebook"]["test"]
    assert path == "predictions/test/unpadded-tags+intended+notebook.json"
    served = web_client.get("/" + path)
    assert served.status_code == 200
    assert served.json() == demo_build.predictions("test", "unpadded-tags", "intended", "notebook")
    assert web_client.get("/predictions/test/nothing.json").status_code == 404
    assert web_client.get("/predictions/train/bm25+intended+alone.json").status_code == 404


def test_site_writes_every_rows_predictions(web_tracer, tmp_path):
    from claimtrace.web.site import write_site

    out = tmp_path / "site"
    write_site(None, out, tracer=web_tracer, splits=("test",), limit=0)
    written = sorted(p.name for p in (out / "predictions" / "test").iterdir())
    assert written == sorted(f"{r.name}.json" for r in scoreboard_rows())
    page = (out / "explore" / "test.html").read_text(encoding="utf-8")
    assert 'href="../predictions/test/bm25+intended+notebook.json"' in page


def test_fixes_box_before_the_classifier_stage(demo_build, tmp_path):
    """BM25's passages are shown; the verdicts say what is not built."""
    from fastapi.testclient import TestClient

    from claimtrace.web.app import create_app
    from claimtrace.workdir.reader import Build

    root = tmp_path / "work"
    root.mkdir()
    for entry in demo_build.root.iterdir():
        if entry.name not in ("classifier", "scoreboard.json"):
            (root / entry.name).symlink_to(entry)
    with TestClient(create_app(Build(root, demo_build.data_dir))) as client:
        fixes = client.get("/claim/claim-752.json").json()["fixes"]
        assert fixes["status"] == "ok" and fixes["verdicts"] is None and "claimtrace build" in fixes["verdicts_missing"]
        assert len(fixes["bm25"]["evidences"]) == len(demo_build.bm25_retrieval("dev")["claim-752"]["evidences"])
        assert "not computed yet" in client.get("/claim/claim-752.html").text
        assert client.get("/explore/dev.json").json()["scoreboard"]["status"] == "missing"


def test_explore_reports_the_intended_models_training_measured(web_client):
    """The intended model's dev accuracy and curve come from its provenance; the page says
    whether the fix helped, from the figures (88/154 against 90/154 for the shipped pair)."""
    trained = web_client.get("/explore/dev.json").json()["scoreboard"]["intended_training"]
    assert len(trained["curve"]) == 10 and trained["claims"] == 154
    assert trained["helped"] == (trained["intended"]["dev_correct"] > trained["notebook"]["dev_correct"])
    assert (trained["intended"]["dev_correct"], trained["notebook"]["dev_correct"]) == (88, 90)
    page = web_client.get("/explore/dev.html").text
    assert "The intended model, measured" in page and "did not help here" in page
