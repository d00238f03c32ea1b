"""The walkthrough's sections (claimtrace.web.views.walkthrough): each returns its data and its
own notes, the page's notes are theirs in the page's order, the passages shown beside the claim
are chosen by the rule the page states, and every filter verdict the page prints is the kernel's."""

from __future__ import annotations

import pytest

from claimtrace.constants import COSINE_THRESHOLD, OVERLAP_THRESHOLD, PROTOCOLS
from claimtrace.explain.retrieval import filter_failures, passes_filter
from claimtrace.web.views import walkthrough
from claimtrace.web.views.walkthrough.claim import PassageStems, Section
from claimtrace.web.views.walkthrough.classifier import ALL_UNKNOWN, classifier_section
from claimtrace.web.views.walkthrough.fixes import COURSE_CLAIMS_ONLY, fixes_section
from claimtrace.web.views.walkthrough.record import ALONE_ROW, MAJORITY_PREFIX, record_section
from claimtrace.web.views.walkthrough.retrieval import FALLBACK
from claimtrace.web.views.walkthrough.words import NO_TAGS, preprocess_section


@pytest.fixture(scope="module")
def dev_traces(demo_site_data) -> dict[str, dict]:
    """Every dev claim's trace, as the site serves it."""
    return {claim_id: demo_site_data.trace(claim_id) for claim_id in demo_site_data.claims("dev")}


def test_a_text_without_tags_gets_both_notes_in_the_pages_order(demo_build):
    trace = walkthrough.assemble(demo_build, "the and of")
    assert trace["preprocess"]["tags"] == [] and trace["retrieval"]["fallback"]
    assert trace["notes"] == [NO_TAGS, FALLBACK]  # the preprocessing's note first, then retrieval's


def test_each_section_returns_its_own_notes(demo_build):
    pre = demo_build.preprocessor.preprocess("the and of")
    section = preprocess_section(pre, set())
    assert isinstance(section, Section) and section.notes == (NO_TAGS,)
    assert preprocess_section(demo_build.preprocessor.preprocess("Glaciers melt."), set()).notes == ()
    # a typed claim has no fixes box, and says why
    assert fixes_section(demo_build, None, None) == Section({"status": "none", "reason": COURSE_CLAIMS_ONLY})


def test_a_model_input_of_unknown_words_says_so(demo_build):
    """Words outside the classifier's vocabulary become <unk>; when every one does, the note says so."""
    trace = walkthrough.assemble(demo_build, "Zxqv blorf")
    words = trace["classifier"]["contributions"]["tokens"][1:-1]  # between [CLS] and [SEP]
    every_word_unknown = bool(words) and all(token["unknown"] for token in words)
    assert (ALL_UNKNOWN in trace["notes"]) == every_word_unknown


def test_the_classifier_section_waits_for_retrieval(demo_build):
    pre = demo_build.preprocessor.preprocess("Glaciers melt.")
    retrieval = {"status": "missing", "stage": "retrieval", "reason": "retrieval/index.npz is missing"}
    section = classifier_section(demo_build, pre, None, None, retrieval, PassageStems(demo_build))
    assert section.data["status"] == "missing" and section.data["stage"] == "retrieval"
    assert section.data["reason"].endswith("retrieval/index.npz is missing") and section.notes == ()


def test_a_claims_notes_are_its_sections_notes(dev_traces):
    """A fallback claim's page says so (retrieval's note); a passage whose recomputed tags differ
    from the build's is named (tagging's); nothing else is noted for a course claim."""
    for claim_id, trace in dev_traces.items():
        differ = [note for note in trace["notes"] if note.startswith("The tags recomputed here")]
        assert bool(differ) == (not trace["tagging"]["passage"]["matches_build"]), claim_id
        others = [note for note in trace["notes"] if note not in differ]
        assert others == ([FALLBACK] if trace["retrieval"]["fallback"] else []), claim_id


def test_the_passages_beside_the_claim_are_chosen_by_the_stated_rule(dev_traces):
    """Tags: the first gold passage. Vectors: the first retrieved gold passage, else the first
    retrieved one, else the first gold one."""
    for claim_id, trace in dev_traces.items():
        gold, retrieved = trace["claim"]["gold"], trace["retrieval"]["evidences"]
        assert trace["tagging"]["passage"]["id"] == gold[0] and trace["tagging"]["passage"]["role"] == "gold"
        retrieved_gold = [e["id"] for e in retrieved if e["id"] in gold]
        shown = trace["vectorisation"]["passage"]
        if retrieved_gold:
            assert (shown["id"], shown["role"]) == (retrieved_gold[0], "retrieved gold"), claim_id
        elif retrieved:
            assert (shown["id"], shown["role"]) == (retrieved[0]["id"], "retrieved"), claim_id
        else:
            assert (shown["id"], shown["role"]) == (gold[0], "gold"), claim_id


def test_every_filter_verdict_on_the_page_is_the_kernels(dev_traces):
    """The kernel's filter (numba) and the rule the page explains with (explain.retrieval) agree
    on every passage a page shows: the ones that passed, the near misses and the vector pair."""
    checked = 0
    for claim_id, trace in dev_traces.items():
        retrieval = trace["retrieval"]
        for row in retrieval["passed_rows"]:
            assert passes_filter(row["cosine"], row["overlap"]), (claim_id, row["id"])
        for row in retrieval["near_misses"]:
            assert not passes_filter(row["cosine"], row["overlap"]), (claim_id, row["id"])
            assert [why.split()[0] for why in row["why"]] == [
                t.name for t in filter_failures(row["cosine"], row["overlap"])
            ]
            for why in row["why"]:
                name, value, *_ = why.split()
                threshold = {"cosine": COSINE_THRESHOLD, "overlap": OVERLAP_THRESHOLD}[name]
                assert why == f"{name} {float(value):.3f} is not above {threshold}" and float(value) <= threshold + 5e-4
        passage = trace["vectorisation"]["passage"]
        passed = {row["id"] for row in retrieval["passed_rows"]}
        if passage["in_build"] and passage["id"] in passed:
            assert passage["passes"], claim_id
        if passage["in_build"]:
            assert passage["passes"] == (
                passage["cosine"] > COSINE_THRESHOLD and passage["overlap"] > OVERLAP_THRESHOLD
            )
        checked += len(retrieval["passed_rows"]) + len(retrieval["near_misses"])
    assert checked > 500


def test_the_passed_rows_are_the_builds_passed_count_and_order(dev_traces, demo_site_data):
    records = demo_site_data.build.retrieval("dev")
    for claim_id, trace in dev_traces.items():
        retrieval, record = trace["retrieval"], records[claim_id]
        assert len(retrieval["passed_rows"]) + retrieval["passed_rows_truncated"] == record["passed"]
        scores = [row["score"] for row in retrieval["passed_rows"]]
        assert scores == sorted(scores, reverse=True)
        returned = sorted(
            (row for row in retrieval["passed_rows"] if row["returned"]), key=lambda row: row["kept_rank"]
        )
        if not record["fallback"] and not retrieval["passed_rows_truncated"]:
            assert [row["id"] for row in returned] == record["evidences"], claim_id


def test_a_typed_claim_is_retrieved_here_and_a_course_claim_read_from_the_build(demo_build, dev_traces):
    typed = walkthrough.assemble(demo_build, "Glaciers are melting faster than ever.")
    assert typed["retrieval"]["source"] == "computed" and typed["claim"]["kind"] == "text"
    assert typed["fixes"]["status"] == "none" and typed["classifier"]["notebook"] is None
    assert all(trace["retrieval"]["source"] == "build" for trace in dev_traces.values())


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
        for protocol in PROTOCOLS:
            assert fixes["verdicts"]["intended"][source][protocol] == more["intended"][source][protocol]["verdict"]
    assert fixes["verdicts"]["notebook"]["retrieved"]["notebook"] == result["classifier"]["notebook"]["verdict"]
    assert "notebook's model only" in fixes["note"]
    page = web_client.get("/claim/claim-752.html").text
    assert 'id="fixes"' in page and "With the fixes" in page


def test_claim_page_says_what_the_lstm_says(web_client, demo_build):
    """The sentence on the LSTM reads the build's stored verdicts; a training claim says why it
    has none."""
    result = web_client.get("/claim/claim-752.json").json()
    lstm = result["lstm"]
    more = demo_build.more_verdicts("dev")["claim-752"]["lstm"]
    assert lstm["status"] == "ok" and list(lstm["verdicts"]) == ["retrieved", "gold"]
    for source in ("retrieved", "gold"):
        assert lstm["verdicts"][source] == {p: more[source][p]["verdict"] for p in PROTOCOLS}
    page = web_client.get("/claim/claim-752.html").text
    sentence = page[page.index('id="lstm-says"') : page.index("</p>", page.index('id="lstm-says"'))]
    assert "The notebook’s other model, the LSTM, says" in sentence
    assert f"verdict v-{lstm['verdicts']['retrieved']['alone']}" in sentence and "retrieved evidence" in sentence
    # its top tokens need `claimtrace attribute` (not run on the demo build): one line names it
    assert lstm["words"]["status"] == "missing" and "`claimtrace attribute` computes it" in page
    train_id = next(iter(demo_build.claims("train")))
    assert web_client.get(f"/claim/{train_id}.json").json()["lstm"]["status"] == "none"
    assert "not run on the training claims" in web_client.get(f"/claim/{train_id}.html").text


def test_fixes_box_before_the_classifier_stage(demo_build, tmp_path):
    """BM25's passages are shown; the verdicts say what is not built."""
    from fastapi.testclient import TestClient

    from claimtrace.web.app import create_app
    from claimtrace.workdir.reader import BuildReader

    root = tmp_path / "work"
    root.mkdir()
    for entry in demo_build.root.iterdir():
        if entry.name not in ("classifier", "scoreboard.json"):
            (root / entry.name).symlink_to(entry)
    with TestClient(create_app(BuildReader(root, demo_build.data_dir))) as client:
        fixes = client.get("/claim/claim-752.json").json()["fixes"]
        assert fixes["status"] == "ok" and fixes["verdicts"] is None and "claimtrace build" in fixes["verdicts_missing"]
        assert len(fixes["bm25"]["evidences"]) == len(demo_build.bm25_retrieval("dev")["claim-752"]["evidences"])
        assert "not computed yet" in client.get("/claim/claim-752.html").text
        assert client.get("/explore/dev.json").json()["scoreboard"]["status"] == "missing"


def test_the_summary_quotes_the_verdicts_dev_record_from_the_scoreboard(web_client, demo_build):
    """A claim page's "In short" quotes the notebook row's dev accuracy and its Wilson interval,
    and always SUPPORTS beside it with the build's paired test (the baseline minus the
    notebook's row), all read from scoreboard.json."""
    board = demo_build.scoreboard()
    row = next(r for r in board["rows"] if r["name"] == "notebook+notebook+notebook")
    majority = next(b for b in board["baselines"] if b["name"].startswith(MAJORITY_PREFIX))
    record = web_client.get("/claim/claim-752.json").json()["record"]
    assert record["status"] == "ok" and record["row"] == row["name"] and record["A"] == row["intervals"]["A"]
    test = record["baseline"]["test"]
    assert record["baseline"]["A"] == majority["intervals"]["A"] and test["tested"]
    assert (test["p"], test["p_holm"], test["verdict"]) == (
        majority["paired"]["p"],
        majority["paired"]["p_holm"],
        majority["paired"]["verdict"],
    )
    assert test["difference"] == majority["paired"]["A"]["estimate"]  # baseline minus the notebook's row
    assert test["comparisons"] == len(board["rows"]) - 1 + len(board["baselines"])
    gold = demo_build.classifier_summary()["dev"]["gold"]["notebook"]
    assert (record["gold"]["successes"], record["gold"]["n"]) == (gold["correct"], gold["claims"])
    a = row["intervals"]["A"]
    page = web_client.get("/claim/claim-752.html").text
    sentence = page[page.index('class="summary-record"') : page.index("</p>", page.index('class="summary-record"'))]
    assert f"right on {a['successes']} of {a['n']} dev claims: {100 * a['estimate']:.1f}%" in sentence
    assert f"95% Wilson interval {100 * a['lower']:.1f}% to {100 * a['upper']:.1f}%" in sentence
    words = "by more than chance" if test["verdict"] == "more than chance" else "cannot be told apart"
    assert words in sentence and "McNemar’s exact p" in sentence and "Holm-corrected" in sentence
    more = "more" if test["difference"] > 0 else "less"
    assert test["verdict"] != "more than chance" or f"right {more} often than the pipeline" in sentence


def test_a_typed_claims_summary_quotes_the_claim_alone_row(web_client, demo_build):
    """A typed claim has only a claim-alone verdict: its summary quotes that row, and says the
    build's paired test of always SUPPORTS is against the batches, not these verdicts."""
    row = next(r for r in demo_build.scoreboard()["rows"] if r["name"] == ALONE_ROW)
    record = record_section(demo_build, typed=True).data
    assert record["row"] == ALONE_ROW and record["A"] == row["intervals"]["A"] and record["gold"] is None
    assert record["baseline"]["test"] == {"tested": False, "against": "notebook+notebook+notebook"}
    page = web_client.get("/live.html", params={"text": "Glaciers are melting faster than ever."}).text
    assert 'class="summary-card"' in page and "the claim alone" in page and "not against these verdicts" in page
    assert "a typed claim has no label" in page


def test_the_summary_waits_for_the_scoreboard(demo_build, tmp_path):
    """Before the classifier stage the record is missing, naming what is not built, and the
    card says nothing of it."""
    from claimtrace.workdir.reader import BuildReader

    root = tmp_path / "work"
    root.mkdir()
    for entry in demo_build.root.iterdir():
        if entry.name not in ("classifier", "scoreboard.json"):
            (root / entry.name).symlink_to(entry)
    record = record_section(BuildReader(root, demo_build.data_dir), typed=False).data
    assert record["status"] == "missing" and record["stage"] == "classifier" and "claimtrace build" in record["reason"]


def test_a_dev_claims_json_holds_every_retrievals_precision_recall_and_f(web_client, demo_build):
    """claim-752's page: P, R and F of what each retrieval the build ran returned for it (the
    notebook's, each quirk variant, BM25), as the course's scorer counts them; its table on the page."""
    from claimtrace.evaluation.scorer import evidence_scores

    result = web_client.get("/claim/claim-752.json").json()["retrieval_variants"]
    claim = demo_build.claims("dev")["claim-752"]
    names = [v["variant"] for v in demo_build.retrieval_variants()]
    assert result["status"] == "ok" and [r["variant"] for r in result["rows"]] == names
    assert {"notebook", "bm25"} <= set(names) and result["gold_total"] == len(claim.evidences)
    for row in result["rows"]:
        returned = demo_build.retrieval_records("dev", row["variant"])["claim-752"]["evidences"]
        expected = evidence_scores(returned, claim.evidences)
        assert (row["precision"], row["recall"], row["F"]) == pytest.approx(expected, abs=0), row["variant"]
        assert row["returned"] == len(returned)
    notebook = result["rows"][names.index("notebook")]
    assert notebook["F"] == web_client.get("/claim/claim-752.json").json()["retrieval"]["scores"]["F"]
    page = web_client.get("/claim/claim-752.html").text
    assert 'id="claim-variants"' in page and all(f'data-variant="{n}"' in page for n in names)
    # a test claim has no gold passages, a typed text no claim: no table
    test_id = next(iter(demo_build.claims("test")))
    assert web_client.get(f"/claim/{test_id}.json").json()["retrieval_variants"] == {"status": "none"}
