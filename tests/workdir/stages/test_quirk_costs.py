"""What each quirk cost (claimtrace.workdir.stages.quirk_costs): the BM25 stage's records and the
extra verdicts, each from its own calls."""

from __future__ import annotations

from claimtrace.constants import BATCH_SIZE, FLOAT32_AGREEMENT, MAX_EVIDENCES, PROTOCOLS, SPLITS


def test_bm25_records_shape(demo_build):
    passages = demo_build.passages()
    for split in SPLITS:
        records = demo_build.bm25_retrieval(split)
        assert list(records) == list(demo_build.claims(split))  # file order, every claim
        for cid, record in records.items():
            assert set(record) == {"claim_id", "evidences", "scores"} and record["claim_id"] == cid
            ids, scores = record["evidences"], record["scores"]
            assert len(ids) == len(scores) <= MAX_EVIDENCES and len(set(ids)) == len(ids)
            assert all(pid in passages for pid in ids)
            assert all(s > 0 for s in scores) and scores == sorted(scores, reverse=True)
    row = demo_build.retrieval_variants()[-1]
    assert row["variant"] == "bm25" and row["reference"] is True and row["claims"] == 154
    assert [r["variant"] for r in demo_build.retrieval_variants()[:-1]] == [
        r["variant"] for r in demo_build.retrieval_summary()["variants_dev"]
    ]


def test_more_verdicts_cover_every_source(demo_build):
    for split in SPLITS:
        more = demo_build.more_verdicts(split)
        entry = more[next(iter(more))]
        if split == "train":  # the claims every model was trained on: not run
            assert entry == {"notebook": {}, "intended": {}, "lstm": {}}
            continue
        intended = {"retrieved", "bm25"} | ({"gold"} if split != "test" else set())
        variants = {"raw-claim-text", "cosine-once", "unpadded-tags"}
        assert set(entry["intended"]) == set(entry["lstm"]) == intended | variants
        assert set(entry["notebook"]) == {"bm25"} | variants
        assert set(entry["intended"]["bm25"]) == set(PROTOCOLS)
        assert (demo_build.root / "classifier" / "inputs" / f"{split}-bm25.npz").is_file()
    # the intended model's and the LSTM's two protocols are one computation per input
    dev = demo_build.more_verdicts("dev")
    for model in ("intended", "lstm"):
        assert all(e[model]["gold"]["alone"] == e[model]["gold"]["notebook"] for e in dev.values())


def test_lstm_verdicts_are_those_of_its_own_calls(demo_build):
    """The LSTM's stored logits (each distinct input once, in batches of 16) against both
    protocols' calls on every dev claim, retrieved and gold evidence: within float32's agreement,
    and the same verdict (batch_first=True: a claim never meets its batch-mates)."""
    import numpy as np
    import torch

    from claimtrace.models.lstm import load_lstm_model
    from claimtrace.models.transformer import alone_logits, notebook_logits, torch_threads

    model = load_lstm_model()
    more = demo_build.more_verdicts("dev")
    with torch_threads(1):
        for source in ("gold", "retrieved"):
            encoded = demo_build.inputs("dev", source)
            stored = np.array([more[cid]["lstm"][source]["notebook"]["logits"] for cid in encoded.claim_ids])
            ids = torch.from_numpy(encoded.input_ids)
            for run in (notebook_logits, alone_logits):
                called = run(model, ids).double().numpy()
                assert np.abs(stored - called).max() < FLOAT32_AGREEMENT
                assert (stored.argmax(1) == called.argmax(1)).all(), (source, run.__name__)


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
                    assert np.abs(stored - in_sixteens).max() < FLOAT32_AGREEMENT
                    one_by_one = alone_logits(model, ids[::16]).double().numpy()
                    assert np.abs(stored[::16] - one_by_one).max() < FLOAT32_AGREEMENT
                top_two = np.sort(stored, axis=1)[:, -2:]
                for row in np.flatnonzero(top_two[:, 1] - top_two[:, 0] < 1e-3):
                    near_ties += 1
                    start = row // BATCH_SIZE * BATCH_SIZE
                    batch = notebook_logits(model, ids[start : start + BATCH_SIZE])[row - start]
                    alone = alone_logits(model, ids[row : row + 1])[0]
                    assert int(batch.argmax()) == int(alone.argmax()) == int(stored[row].argmax()), (split, source, row)
    print(f"{near_ties} near ties checked")


def test_explore_reports_the_intended_models_training_measured(web_client, demo_build):
    """The intended model's dev accuracy and curve come from its provenance; the page says
    whether the fix's difference is more than chance, paired on the same claims (88/154 against
    90/154 for the shipped pair: it is not)."""
    trained = web_client.get("/explore/dev.json").json()["scoreboard"]["intended_training"]
    assert len(trained["curve"]) == 10 and trained["claims"] == 154
    assert trained["helped"] == (trained["intended"]["dev_correct"] > trained["notebook"]["dev_correct"])
    assert (trained["intended"]["dev_correct"], trained["notebook"]["dev_correct"]) == (88, 90)
    page = web_client.get("/explore/dev.html").text
    assert "The intended model, measured" in page and "cannot be told apart" in page
    paired = web_client.get("/explore/dev.json").json()["scoreboard"]["intended_on_gold"]
    assert paired == demo_build.scoreboard()["intended_minus_notebook_on_gold"]
    assert paired["verdict"] == "cannot be told apart" and f"McNemar’s exact p = {paired['p']:.2f}" in page


def test_explore_sets_the_lstms_log_beside_the_notebooks(web_client, demo_build):
    """The LSTM's trained log beside the one the notebook printed, and its best epoch against the
    Transformer on the same claims, paired and tested."""
    from claimtrace.course import ORIGINAL_LSTM_LOG

    section = web_client.get("/explore/dev.json").json()["scoreboard"]
    trained = section["lstm_training"]
    assert [r["notebook"]["dev_accuracy"] for r in trained["curve"]] == [ORIGINAL_LSTM_LOG[e][3] for e in range(1, 11)]
    assert trained["interval"]["successes"] == trained["dev_correct"] and trained["claims"] == 154
    paired = section["lstm_on_gold"]
    assert paired == demo_build.scoreboard()["lstm_minus_notebook_on_gold"]
    page = web_client.get("/explore/dev.html").text
    assert "The notebook’s LSTM, measured" in page and 'id="lstm-log"' in page
    assert ("differ by more than chance" if paired["verdict"] == "more than chance" else "cannot be told apart") in page
