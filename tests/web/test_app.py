"""The explainer site through FastAPI's TestClient: every route, the JSON shapes, the numbers
against the stage functions, escaping, clear answers to bad input, and degrading when a stage
is not built.

Everything runs over the session's demo build (conftest ``demo_build``) and one shared SiteData.
"""

from __future__ import annotations

import base64
import json
import os
import re
import threading
import time

import numpy as np
import pytest
from fastapi.testclient import TestClient

from claimtrace import constants
from claimtrace.course import NOTEBOOK_URL, WALKTHROUGH_CLAIM
from claimtrace.data.files import course_file
from claimtrace.evaluation.scoreboard import scoreboard_rows
from claimtrace.evaluation.scorer import evidence_f
from claimtrace.web.app import create_app
from claimtrace.web.render import ASSETS, LLM_SCRIPTS, STATIC
from claimtrace.web.site_data import SiteData
from claimtrace.web.typed_claims import MAX_TEXT_CHARS
from claimtrace.workdir.reader import BuildReader

STAGES = ("preprocess", "tags", "vectors", "filter", "retrieved", "input", "model", "quirk", "verdict")


def _first(demo_site_data, split, predicate):
    records = demo_site_data.build.retrieval(split)
    return next(cid for cid, record in records.items() if predicate(record))


def _partial_copy(build: BuildReader, root, leave_out: tuple[str, ...]) -> BuildReader:
    """A build whose files are the given one's (linked), less the top-level entries named."""
    root.mkdir()
    for entry in build.root.iterdir():
        if entry.name not in leave_out:
            (root / entry.name).symlink_to(entry)
    return BuildReader(root, build.data_dir)


# --- routes ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path, kind",
    [
        ("/", "html"),
        ("/index.html", "html"),
        ("/index.json", "json"),
        ("/walkthrough", "html"),
        ("/walkthrough.html", "html"),
        ("/walkthrough.json", "json"),
        (f"/claim/{WALKTHROUGH_CLAIM}", "html"),
        (f"/claim/{WALKTHROUGH_CLAIM}.html", "html"),
        (f"/claim/{WALKTHROUGH_CLAIM}.json", "json"),
        ("/explore", "html"),
        ("/explore.json", "json"),
        ("/explore/dev.html", "html"),
        ("/explore/dev.json", "json"),
        ("/live", "html"),
        ("/live.html", "html"),
        ("/live.json", "json"),
        ("/live?claim=claim-375", "html"),
        ("/live?text=Sea+levels+are+rising", "html"),
        ("/live.json?text=Sea+levels+are+rising", "json"),
        ("/api/trace?text=CO2+is+plant+food", "json"),
        (f"/api/trace?claim={WALKTHROUGH_CLAIM}", "json"),
        ("/api/table.json", "json"),
        ("/api/build.json", "json"),
        ("/static/app.js", "js"),
        ("/static/style.css", "css"),
    ],
)
def test_every_route_answers(web_client, path, kind):
    response = web_client.get(path)
    assert response.status_code == 200, response.text[:500]
    content_type = response.headers["content-type"]
    expected = {"html": "text/html", "json": "application/json", "js": "javascript", "css": "text/css"}[kind]
    assert expected in content_type
    if kind == "html":
        assert "<!doctype html>" in response.text and "not built yet" not in response.text
    if kind == "json":
        assert isinstance(response.json(), dict)


def test_walkthrough_tells_every_stage_of_claim_752(web_client, demo_site_data):
    page = web_client.get("/walkthrough").text
    claim = demo_site_data.claims("dev")[WALKTHROUGH_CLAIM]
    assert "South Australia] has the most expensive electricity in the world" in page
    for stage in STAGES:
        assert f'id="{stage}"' in page
    for phrase in (
        "256-d",
        "6 layers × 8 heads",
        "512",
        "10 epochs, Adam lr 0.0001",
        "batch_first=True",
        "cosine + overlap + cosine",
        "[PAD] ×",
        "neighbours",
    ):
        assert phrase in page
    assert claim.label in page


def test_pages_link_relatively_and_to_html_files(web_client):
    page = web_client.get(f"/claim/{WALKTHROUGH_CLAIM}.html").text
    links = re.findall(r'(?:href|src)="([^"]+)"', page)
    # the one address off the site: the original notebook, which the course figures' chips cite
    assert not [link for link in links if link.startswith(("http:", "https:", "//")) and link != NOTEBOOK_URL]
    links = [link for link in links if link != NOTEBOOK_URL]
    assert f"../static/{ASSETS['app.js']}" in links and "../explore/dev.html" in links
    assert all(not link.startswith("/") for link in links)


# --- the claim trace against the stage functions ----------------------------------------------------


def test_claim_json_has_every_stage_with_the_builds_numbers(web_client, demo_site_data, demo_build):
    t = web_client.get(f"/claim/{WALKTHROUGH_CLAIM}.json").json()
    claim = demo_site_data.claims("dev")[WALKTHROUGH_CLAIM]
    assert set(t) >= {"claim", "build", "preprocess", "tagging", "vectorisation", "retrieval", "classifier", "notes"}
    assert t["claim"] == {
        "kind": "claim",
        "id": WALKTHROUGH_CLAIM,
        "split": "dev",
        "position": 0,
        "text": claim.text,
        "label": claim.label,
        "gold": list(claim.evidences),
    }
    pre = demo_build.preprocessor.preprocess(claim.text)
    assert (t["preprocess"]["tokens"], t["preprocess"]["kept"], t["preprocess"]["stems"]) == (
        pre.tokens,
        pre.kept,
        pre.stems,
    )
    assert t["preprocess"]["tags"] == pre.tags().split()
    for section in ("tagging", "vectorisation", "retrieval", "classifier"):
        assert t[section]["status"] == "ok", t[section]

    # tagging: the first gold passage's top ten, recomputed, equal the build's stored tags
    tagging = t["tagging"]
    summary = demo_build.tagging_summary()
    assert tagging["passage"]["id"] == claim.evidences[0] and tagging["passage"]["matches_build"]
    assert len(tagging["passage"]["top"]) == constants.TAGS_PER_PASSAGE
    assert [r["feature"] for r in tagging["passage"]["top"] if r["tag"]] and tagging["passage"]["tags"] == sorted(
        {r["feature"] for r in tagging["passage"]["top"] if r["tag"]}
    )
    assert all(r["padding"] == (r["weight"] == 0.0) for r in tagging["passage"]["top"])
    assert tagging["passages_with_last_feature"] == summary["passages_with_last_feature"]
    assert tagging["last_feature"] == summary["last_feature"]
    example = tagging["padding_example"]
    assert example is not None and summary["last_feature"] in example["tags"]
    assert any(r["padding"] and r["feature"] == summary["last_feature"] for r in example["top"])

    # retrieval: the same evidences as the retrieval stage; passed rows obey the filter
    record = demo_build.retrieval("dev")[WALKTHROUGH_CLAIM]
    retrieval = t["retrieval"]
    assert [e["id"] for e in retrieval["evidences"]] == record["evidences"]
    assert retrieval["passed"] == record["passed"] == len(retrieval["passed_rows"])
    assert retrieval["fallback"] is False
    for row in retrieval["passed_rows"]:
        assert row["cosine"] > constants.COSINE_THRESHOLD and row["overlap"] > constants.OVERLAP_THRESHOLD
        assert row["score"] == pytest.approx(2 * row["cosine"] + row["overlap"], abs=1e-12)
    returned = sorted((r for r in retrieval["passed_rows"] if r["returned"]), key=lambda r: r["kept_rank"])
    assert [r["id"] for r in returned] == record["evidences"]
    assert retrieval["scores"]["F"] == pytest.approx(evidence_f(record["evidences"], claim.evidences))
    split = retrieval["split"]
    records = demo_build.retrieval("dev").values()
    assert split["fallbacks"] == sum(r["fallback"] for r in records) and split["claims"] == 154

    # the vectors: cosine = sum of the shown products
    vectors = t["vectorisation"]["passage"]
    assert vectors["cosine"] == pytest.approx(sum(p["product"] for p in vectors["products"]), abs=1e-9)
    assert vectors["overlap"] == pytest.approx(
        vectors["shared"] / min(vectors["claim_tag_count"], vectors["passage_tag_count"])
    )

    # classifier: 128 ids, the decomposition sums to the logits
    c = t["classifier"]
    assert c["real_tokens"] + c["pad_tokens"] == constants.MAX_LEN == len(c["input_ids"])
    parts = np.array(c["contributions"]["bias"]) + np.array(c["contributions"]["padding"]["contribution"])
    parts = parts + np.sum([tok["contribution"] for tok in c["contributions"]["tokens"]], axis=0)
    assert np.allclose(parts, c["alone"]["logits"], atol=1e-12)
    assert c["alone"]["max_abs_diff_table_vs_torch"] < 1e-5
    assert c["alone"]["verdict"] == constants.LABELS[int(np.argmax(c["alone"]["logits"]))]
    assert len(c["notebook"]["neighbours"]) == constants.BATCH_SIZE - 1
    assert c["architecture"]["embedding"] == 256 and c["architecture"]["layers"] == 6


def test_classifier_section_shows_the_builds_model_input_and_verdicts(demo_site_data, demo_build):
    """The walkthrough's classifier section against what the build stored, read from its files:
    the model input (classifier/inputs/dev-retrieved.npz), the vocabulary's tokens of those ids,
    the exact table's logits of them, and the stored verdicts and notebook logits."""
    encoded = demo_build.inputs("dev", "retrieved")
    classifier = demo_build.classifier()
    stored = json.loads(demo_build.work.verdicts("dev").read_text(encoding="utf-8"))
    for claim_id in (WALKTHROUGH_CLAIM, list(demo_build.claims("dev"))[20]):
        got = demo_site_data.trace(claim_id)["classifier"]
        ids = encoded.input_ids[encoded.claim_ids.index(claim_id)]
        assert got["input_ids"] == ids.tolist()
        assert got["text"] == encoded.texts[encoded.claim_ids.index(claim_id)]
        assert got["tokens"] == [classifier.vocab.tokens[i] for i in ids.tolist()]
        assert got["real_tokens"] == int((ids != classifier.vocab.tokens.index(constants.PAD)).sum())
        assert np.allclose(got["alone"]["logits"], classifier.table.logits(ids[None, :])[0], rtol=0, atol=1e-12)
        retrieved = stored[claim_id]["retrieved"]
        assert got["notebook"]["logits"] == retrieved["notebook"]["logits"]
        assert got["alone"]["verdict"] == retrieved["alone"]["verdict"]
        assert got["notebook"]["verdict"] == retrieved["notebook"]["verdict"]


def test_a_fallback_claim_says_so(web_client, demo_site_data):
    claim_id = _first(demo_site_data, "dev", lambda r: r["fallback"])
    t = web_client.get(f"/claim/{claim_id}.json").json()
    assert t["retrieval"]["fallback"] and t["retrieval"]["passed"] == 0 and t["retrieval"]["passed_rows"] == []
    assert len(t["retrieval"]["evidences"]) == constants.MAX_EVIDENCES
    page = web_client.get(f"/claim/{claim_id}.html").text
    assert "nothing passed" in page and "the fallback applied" in page


def test_train_and_test_claims_have_pages(web_client, demo_site_data):
    test_id = list(demo_site_data.claims("test"))[3]
    t = web_client.get(f"/claim/{test_id}.json").json()
    assert t["claim"]["split"] == "test" and t["claim"]["label"] is None and t["retrieval"]["scores"] is None
    assert t["classifier"]["gold_evidence"] is None and t["classifier"]["notebook"]["verdict"] in constants.LABELS
    page = web_client.get(f"/claim/{test_id}.html").text
    assert "unlabelled (test)" in page and "Test claims have no gold list" in page
    train_id = list(demo_site_data.claims("train"))[17]
    t = web_client.get(f"/claim/{train_id}.json").json()
    assert t["claim"]["split"] == "train" and t["classifier"]["notebook"]["batch"] == 1


def test_a_build_missing_its_retrieval_names_the_file(tmp_path, demo_build):
    """The site never re-derives a stage: a build without retrieval/ says what is missing and
    what to run, section by section."""
    partial = _partial_copy(demo_build, tmp_path / "work", ("retrieval", "classifier"))
    with TestClient(create_app(partial)) as client:
        t = client.get(f"/claim/{WALKTHROUGH_CLAIM}.json").json()
        assert t["tagging"]["status"] == "ok"
        for section in ("vectorisation", "retrieval", "classifier"):
            assert t[section]["status"] == "missing", section
        assert "retrieval" in t["retrieval"]["reason"] and "claimtrace build" in t["retrieval"]["reason"]


# --- explore ------------------------------------------------------------------------------------


def test_explore_dev_shape_and_accuracy_tables(web_client, demo_site_data):
    x = web_client.get("/explore/dev.json").json()
    claims = demo_site_data.claims("dev")
    assert x["split"] == "dev" and x["labelled"] and len(x["claims"]) == len(claims) == 154
    assert [row["id"] for row in x["claims"]] == list(claims)
    for source in ("gold", "retrieved"):
        for protocol in constants.PROTOCOLS:
            cell = x["accuracy"][source][protocol]
            matrix = np.array(cell["confusion"])
            assert matrix.shape == (4, 4) and matrix.sum() == 154 and np.trace(matrix) == cell["correct"]
            assert cell["accuracy"] == pytest.approx(cell["correct"] / 154)
            assert cell["correct"] == sum(row[source][protocol] == row["label"] for row in x["claims"])
    row = x["claims"][0]
    assert set(row) >= {"id", "position", "text", "label", "fallback", "passed", "F", "gold", "retrieved"}
    page = demo_site_data.trace(WALKTHROUGH_CLAIM)["classifier"]
    assert row["retrieved"] == {"alone": page["alone"]["verdict"], "notebook": page["notebook"]["verdict"]}
    assert x["fallbacks"] == sum(r["fallback"] for r in x["claims"])
    assert set(x["course_scores"]) == set(constants.PROTOCOLS)
    assert x["course_scores"]["alone"]["F"] == pytest.approx(np.mean([r["F"] for r in x["claims"]]))
    html = web_client.get("/explore/dev.html").text
    # the claims go to app.js as compact rows (it draws the table a page at a time)
    data = json.loads(re.search(r'<script type="application/json" id="claims-data">(.*?)</script>', html).group(1))
    assert [row[1] for row in data["rows"]] == list(claims) and len(data["rows"]) == 154
    first = dict(zip(data["fields"], data["rows"][0]))
    assert first["id"] == x["claims"][0]["id"] and data["labels"][first["label"]] == x["claims"][0]["label"]
    assert data["labels"][first["retrieved-notebook"]] == x["claims"][0]["retrieved"]["notebook"]
    assert first["f"] == pytest.approx(x["claims"][0]["F"], abs=1e-6)


def test_explore_test_split_is_unlabelled(web_client):
    x = web_client.get("/explore/test.json").json()
    assert x["labelled"] is False and len(x["claims"]) == 153
    assert x["accuracy"] == {"gold": None, "retrieved": None} and x["course_scores"] is None
    assert sum(x["verdict_counts"]["retrieved"]["notebook"].values()) == 153
    assert "unlabelled" in web_client.get("/explore/test.html").text


def test_a_split_still_computing_answers_202_not_a_wait(demo_site_data):
    """Explore of a split whose notebook protocol is not computed yet answers at once."""
    release = threading.Event()
    site_data = SiteData(demo_site_data.build)

    def slow_explore(split):
        release.wait(10)
        return {"split": split}

    site_data.explore = slow_explore
    app = create_app(site_data=site_data)
    app.state.explore_wait = 0.2
    with TestClient(app) as client:
        page = client.get("/explore/train.html")
        assert page.status_code == 202 and "being computed" in page.text and page.headers["retry-after"] == "10"
        data = client.get("/explore/train.json")
        assert data.status_code == 202 and data.json()["status"] == "computing"
    release.set()


# --- live -----------------------------------------------------------------------------------------


def test_live_trace_of_any_text(web_client, preprocessor):
    t = web_client.post("/api/trace", json={"text": "Arctic sea ice is not melting."}).json()
    assert t["claim"]["kind"] == "text" and t["claim"]["id"] is None
    assert t["preprocess"]["stems"] == preprocessor.preprocess("Arctic sea ice is not melting.").stems
    assert t["retrieval"]["status"] == "ok" and 1 <= len(t["retrieval"]["evidences"]) <= constants.MAX_EVIDENCES
    assert t["retrieval"]["scores"] is None
    assert t["classifier"]["notebook"] is None and t["classifier"]["alone"]["verdict"] in constants.LABELS
    same = web_client.get("/api/trace", params={"text": "Arctic sea ice is not melting."}).json()
    assert same["classifier"]["alone"] == t["classifier"]["alone"]
    form = web_client.post("/live", data={"text": "Arctic sea ice is not melting."})
    assert form.status_code == 200 and "Arctic sea ice is not melting." in form.text and 'id="model-input"' in form.text


SCRIPT = '<script>alert("pwned")</script> Glaciers are <b>growing</b> & "retreating"'


def test_user_text_is_shown_not_run(web_client):
    for response in (web_client.get("/live", params={"text": SCRIPT}), web_client.post("/live", data={"text": SCRIPT})):
        assert response.status_code == 200
        page = response.text
        assert "<script>alert" not in page and "<b>growing" not in page
        assert "&lt;script&gt;alert(" in page
        # the JSON embedded for the editor cannot close its script element
        embedded = re.search(r'<script type="application/json" id="trace-data">(.*?)</script>', page, re.S).group(1)
        assert "<" not in embedded and json.loads(embedded)["text"]
    data = web_client.get("/api/trace", params={"text": SCRIPT}).json()
    assert data["claim"]["text"] == SCRIPT


@pytest.mark.parametrize(
    "path",
    [
        "/claim/claim-999999",
        "/claim/claim-999999.html",
        "/claim/%3Cscript%3E",
        "/explore/nosuchsplit.html",
        "/no/such/page",
        "/live?claim=claim-999998",
    ],
)
def test_unknown_pages_give_a_clear_404_page(web_client, path):
    response = web_client.get(path)
    assert response.status_code == 404 and "text/html" in response.headers["content-type"]
    assert "Not found" in response.text and "<script>" not in response.text.split("<main")[1].split("</main>")[0]
    assert 'href="' in response.text  # a way back


@pytest.mark.parametrize("path", ["/claim/claim-999999.json", "/explore/nosuchsplit.json", "/api/nothing"])
def test_unknown_json_gives_a_json_404(web_client, path):
    response = web_client.get(path)
    assert response.status_code == 404 and response.json()["status"] == 404 and response.json()["error"]


@pytest.mark.parametrize(
    "request_kwargs",
    [
        {"method": "GET", "url": "/api/trace", "params": {"text": ""}},
        {"method": "GET", "url": "/api/trace", "params": {"text": "   \n\t "}},
        {"method": "GET", "url": "/api/trace"},
        {"method": "POST", "url": "/api/trace", "json": {}},
        {"method": "POST", "url": "/api/trace", "json": {"text": ""}},
    ],
)
def test_empty_text_gets_a_clear_400(web_client, request_kwargs):
    response = web_client.request(**request_kwargs)
    assert response.status_code == 400 and "empty" in response.json()["error"]


def test_empty_text_on_the_live_page(web_client):
    response = web_client.post("/live", data={"text": "  "})
    assert response.status_code == 400 and "the text is empty" in response.text and 'role="alert"' in response.text


@pytest.mark.parametrize("body, status", [("not json", 400), ('{"text": 5}', 400), ("[1, 2]", 400)])
def test_malformed_json_bodies_get_a_clear_400(web_client, body, status):
    response = web_client.post("/api/trace", content=body, headers={"content-type": "application/json"})
    assert response.status_code == status and response.json()["error"]


def test_huge_text_gets_a_clear_413(web_client):
    huge = "The climate is changing. " * 4100  # about 100 KB
    assert len(huge) > 100_000
    for response in (
        web_client.post("/api/trace", json={"text": huge}),
        web_client.get("/api/trace", params={"text": huge[: MAX_TEXT_CHARS + 10]}),
        web_client.get("/live.json", params={"text": huge[: MAX_TEXT_CHARS + 10]}),
    ):
        assert response.status_code == 413 and f"{MAX_TEXT_CHARS:,}" in response.json()["error"]
    page = web_client.post("/live", data={"text": huge})
    assert page.status_code == 413 and "at most" in page.text
    page = web_client.get("/live", params={"text": huge[: MAX_TEXT_CHARS + 1]})
    assert page.status_code == 413 and "characters" in page.text
    # the longest accepted text is traced, and the model input is cut at 128 tokens
    longest = web_client.post("/api/trace", json={"text": huge[:MAX_TEXT_CHARS]})
    assert longest.status_code == 200
    c = longest.json()["classifier"]
    assert c["truncated"] and c["real_tokens"] == constants.MAX_LEN and c["pad_tokens"] == 0


@pytest.mark.parametrize(
    "text",
    [
        "气候变化是一个骗局",
        "الاحتباس الحراري كذبة",
        "Le réchauffement climatique est un mythe",
        "🌍🔥🌊",
        "!!! ??? ...",
        "1855 2024 42",
        "a\x00b\u202ec",
    ],
)
def test_non_english_and_odd_input_get_an_answer(web_client, text):
    response = web_client.post("/api/trace", json={"text": text})
    assert response.status_code == 200
    t = response.json()
    assert t["classifier"]["alone"]["verdict"] in constants.LABELS
    assert 1 <= len(t["retrieval"]["evidences"]) <= constants.MAX_EVIDENCES
    if not t["preprocess"]["stems"]:
        assert t["retrieval"]["fallback"] and any("No word survived" in n for n in t["notes"])
    page = web_client.get("/live", params={"text": text})
    assert page.status_code == 200


def test_foreign_words_become_unk_and_the_page_says_so(web_client):
    t = web_client.post("/api/trace", json={"text": "气候变化是一个骗局"}).json()
    assert any("<unk>" in note for note in t["notes"]) or t["classifier"]["unknown_tokens"] >= 1


def test_concurrent_requests_do_not_interfere(web_client):
    texts = [f"Sea level rise number {i} threatens coral reefs and islands" for i in range(6)] + [
        "Solar power is cheaper than coal",
        "CO2 is plant food",
        "Glaciers are retreating worldwide",
    ]
    expected = {
        text: web_client.post("/api/trace", json={"text": text}).json()["retrieval"]["evidences"] for text in texts
    }
    results, errors = {}, []

    def worker(text):
        try:
            results[text] = web_client.post("/api/trace", json={"text": text}).json()["retrieval"]["evidences"]
        except Exception as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(text,)) for text in texts * 2]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and results == expected


# --- the table ------------------------------------------------------------------------------------


def test_table_json_is_the_exact_table_in_float32(web_client, demo_site_data):
    table = web_client.get("/api/table.json").json()
    classifier = demo_site_data.build.classifier()
    g = np.frombuffer(base64.b64decode(table["g"]), dtype="<f4").reshape(table["shape"])
    assert g.shape == (constants.VOCAB_SIZE, 4) and g.nbytes == table["g_float32_bytes"] == 94_176
    assert np.array_equal(g, classifier.table.g.astype(np.float32))
    assert table["bias"] == classifier.table.bias.tolist() and table["vocab"] == classifier.vocab.tokens
    assert table["labels"] == list(constants.LABELS) and table["max_len"] == constants.MAX_LEN


# --- degrading -------------------------------------------------------------------------------------


def test_an_empty_workdir_degrades_stage_by_stage(tmp_path, data_dir):
    (tmp_path / "nothing-built").mkdir()
    site_data = SiteData(BuildReader(tmp_path / "nothing-built", data_dir))
    with TestClient(create_app(site_data=site_data)) as client:
        t = client.get(f"/claim/{WALKTHROUGH_CLAIM}.json").json()
        assert t["preprocess"]["status"] == "ok"
        for section in ("tagging", "vectorisation", "retrieval", "classifier"):
            assert t[section]["status"] == "missing" and t[section]["reason"]
        assert "claimtrace build" in t["retrieval"]["reason"]
        page = client.get("/walkthrough")
        assert page.status_code == 200 and page.text.count("This stage is not built yet") >= 4
        landing = client.get("/")  # the landing page says what its findings need
        assert (
            landing.status_code == 200
            and "The findings need the" in landing.text
            and "claimtrace build" in landing.text
        )
        explore = client.get("/explore/dev.html")
        assert explore.status_code == 200 and "not built yet" in explore.text
        table = client.get("/api/table.json")
        assert table.status_code == 503 and "claimtrace build" in table.json()["error"]
        live = client.post("/api/trace", json={"text": "Sea levels are rising"})
        assert live.status_code == 200 and live.json()["retrieval"]["status"] == "missing"
        build = client.get("/api/build.json").json()
        assert build["stages"]["tagging"]["status"] == "missing"


def test_a_build_still_running_says_its_pages_are_being_built_and_they_reload(demo_build, tmp_path):
    """`serve --while-building` (make demo): while a build holds the workdir, a page that needs a
    step not written yet answers 503 "Being built" and asks again (Retry-After; its script asks
    the address every 5 s and reloads once the answer is another, no timed refresh: axe's
    meta-refresh rule), its JSON twin saying so; inline notes say the build is making it. Once
    the build lets go, the same page names the command instead, and asks no more."""
    from claimtrace.web.app import BEING_BUILT_REFRESH
    from claimtrace.workdir.builder import workdir_lock
    from claimtrace.workdir.layout import BEING_BUILT

    partial = _partial_copy(demo_build, tmp_path / "work", ("sweep", "scoreboard.json", "manifest.json"))
    refresh = f'data-reload-while="503" data-every="{BEING_BUILT_REFRESH}"'
    with TestClient(create_app(partial)) as client:
        with workdir_lock(partial.work):
            page = client.get("/results")
            assert page.status_code == 503 and page.headers["retry-after"] == str(BEING_BUILT_REFRESH)
            assert refresh in page.text and "Being built" in page.text and BEING_BUILT in page.text
            assert f"asks again every {BEING_BUILT_REFRESH} seconds" in page.text and "http-equiv" not in page.text
            twin = client.get("/results.json")
            assert twin.status_code == 503 and twin.json()["building"] is True and BEING_BUILT in twin.json()["error"]
            assert BEING_BUILT in client.get("/explore/dev.html").text  # a section of a page that is there
        after = client.get("/results")
        assert after.status_code == 503 and "Not built yet" in after.text and "claimtrace build" in after.text
        assert refresh not in after.text and "retry-after" not in after.headers


def test_a_build_without_its_classifier_stage_keeps_retrieval(demo_build, tmp_path):
    partial = _partial_copy(demo_build, tmp_path / "work", ("classifier",))
    with TestClient(create_app(partial)) as client:
        t = client.get(f"/claim/{WALKTHROUGH_CLAIM}.json").json()
        assert t["retrieval"]["status"] == "ok" and t["classifier"]["status"] == "missing"
        assert "classifier" in t["classifier"]["reason"] and "claimtrace build" in t["classifier"]["reason"]
        page = client.get("/walkthrough").text
        assert page.count("This stage is not built yet") == 2  # the model input and the verdict
        explore = client.get("/explore/dev.json").json()
        assert explore["classifier"]["status"] == "missing" and explore["retrieval"]["status"] == "ok"


# --- the course's figures beside the build's (claimtrace.course) ----------------------------------


def test_claim_752_shows_the_course_figures_beside_the_builds(web_client, demo_site_data):
    from claimtrace import course

    t = web_client.get(f"/claim/{WALKTHROUGH_CLAIM}.json").json()
    r, c, tg = t["retrieval"], t["classifier"], t["tagging"]
    assert (r["course"]["passed"]["course"], r["course"]["passed"]["build"]) == (8, r["passed"])
    assert (r["course"]["kept"]["course"], r["course"]["kept"]["build"]) == (4, r["kept"])
    assert (r["course"]["F"]["course"], r["course"]["F"]["build"]) == (0.67, r["scores"]["F"])
    assert r["course"]["fallback_share"]["course"] == 0.47
    assert r["course"]["fallback_share"]["build"] == r["split"]["fallback_share"]
    assert (c["course"]["real_tokens"]["course"], c["course"]["real_tokens"]["build"]) == (37, c["real_tokens"])
    assert (c["course"]["pad_tokens"]["course"], c["course"]["pad_tokens"]["build"]) == (91, c["pad_tokens"])
    assert tg["course"]["passages_with_last_feature"]["course"] == 167_592
    assert tg["course"]["last_feature"]["course"] == "محمد"
    assert all(p["source"].startswith("notebook.md §") for p in r["course"].values())
    # the demo corpus is not the course's evidence.json: the page says the figures need not match
    assert t["build"]["course"]["course_corpus"] is False
    page = re.sub(r"<[^>]+>", "", web_client.get(f"/claim/{WALKTHROUGH_CLAIM}.html").text)  # the text, chips' links out
    assert "course run 8" in page and "course run 37" in page and "course run 167,592" in page
    assert "notebook.md §4 (Retrieval)" in page and "not of the course’s evidence.json" in page
    # another claim has no claim-752 pairs
    other = web_client.get("/claim/claim-375.json").json()
    assert "passed" not in other["retrieval"]["course"] and "real_tokens" not in other["classifier"]["course"]
    assert course.is_course_corpus({"kind": "evidence", "md5": constants.EVIDENCE_MD5, "passages": 1})
    assert course.is_course_corpus({"kind": "evidence", "source": "x", "passages": constants.EVIDENCE_PASSAGES})
    assert not course.is_course_corpus({"kind": "demo", "source": "x", "passages": constants.EVIDENCE_PASSAGES})
    assert "should coincide" in course.corpus_note({"kind": "evidence", "md5": constants.EVIDENCE_MD5})["note"]


def test_every_missed_gold_passage_is_listed_with_the_rule_that_stopped_it(web_client, demo_site_data):
    build = demo_site_data.build
    retriever = build.retriever()
    seen_rules = set()
    for claim_id in ("claim-375", WALKTHROUGH_CLAIM, *list(build.claims("dev"))[:40]):
        t = web_client.get(f"/claim/{claim_id}.json").json()
        r = t["retrieval"]
        missed = [g["id"] for g in r["gold"] if not g["retrieved"]]
        assert [row["id"] for row in r["missed_gold"]] == missed
        for row in r["missed_gold"]:
            seen_rules.add(row["stopped_by"])
            position = retriever.position(row["id"])
            if position is None:
                assert row["stopped_by"] in ("no tags", "not in the build")
                continue
            cosine, overlap, score, shared = (x[0] for x in retriever.point_columns(r["claim_tags"], [position]))
            assert (row["cosine"], row["overlap"], row["score"], row["shared"]) == (cosine, overlap, score, shared)
            assert row["tags"] == retriever.tags[position].split()
            assert row["shared_tags"] == sorted(set(r["claim_tags"].split()) & set(row["tags"]))
            if r["fallback"]:
                assert row["stopped_by"] == "fallback" and "below the sixth" in row["why"]
            elif shared == 0:
                assert row["stopped_by"] == "no shared tag"
            elif cosine <= constants.COSINE_THRESHOLD:
                assert row["stopped_by"] == "cosine"
            elif overlap <= constants.OVERLAP_THRESHOLD:
                assert row["stopped_by"] == "overlap"
            else:
                assert row["stopped_by"] in ("max shared", "past the sixth")
    assert seen_rules  # the demo build misses gold passages
    page = web_client.get("/claim/claim-375.html").text
    t = web_client.get("/claim/claim-375.json").json()
    for row in t["retrieval"]["missed_gold"]:
        assert f'data-id="{row["id"]}" data-stopped-by="{row["stopped_by"]}"' in page


def test_vectorisation_lists_every_tag_and_marks_those_outside_the_vocabulary(web_client, demo_site_data):
    retriever = demo_site_data.build.retriever()
    t = web_client.get("/claim/claim-375.json").json()
    p = t["vectorisation"]["passage"]
    assert len(p["tag_terms"]) == p["passage_tag_count"] == len(set(p["tags"]))
    assert len(t["vectorisation"]["claim"]["tag_terms"]) == p["claim_tag_count"]
    for row in p["tag_terms"]:
        assert row["in_vocabulary"] == (row["term"] in retriever.vocabulary)
        assert row["shared"] == (row["tag"] in p["shared_tags"])
    page = web_client.get("/claim/claim-375.html").text
    section = page[page.index('id="vectors"') : page.index('id="filter"')]
    for row in p["tag_terms"]:
        assert row["tag"] in section
    assert section.count("(not a term)") == sum(not r["in_vocabulary"] for r in p["tag_terms"]) + sum(
        not r["in_vocabulary"] for r in t["vectorisation"]["claim"]["tag_terms"]
    )
    assert f"{p['shared']} ÷ min({p['claim_tag_count']}, {p['passage_tag_count']})" in section


def test_the_whole_table_agreement_is_shown_beside_the_claims(web_client, demo_site_data):
    whole = demo_site_data.build.classifier_summary()["table_vs_torch"]
    t = web_client.get(f"/claim/{WALKTHROUGH_CLAIM}.json").json()
    assert t["classifier"]["table_vs_torch"] == whole
    assert t["classifier"]["course"]["table_vs_torch"]["course"] == 7.7e-7
    page = web_client.get(f"/claim/{WALKTHROUGH_CLAIM}.html").text
    assert f"{whole['max_abs_diff_float32']:.1e} over all 5,886 rows × 4 labels" in page


def test_explore_puts_table_2_and_the_course_accuracies_beside_the_builds(web_client, demo_site_data):
    from claimtrace import course

    x = web_client.get("/explore/dev.json").json()
    k = x["course"]
    assert {m: v["course"] for m, v in k["table2"].items()} == course.TABLE2["dev"]
    assert {m: v["build"] for m, v in k["table2"].items()} == x["course_scores"]["notebook"]
    gold, retrieved = k["accuracy"]["gold"], k["accuracy"]["retrieved"]
    assert (gold["course"], gold["build"]) == (89, x["accuracy"]["gold"]["notebook"]["correct"])
    assert (retrieved["course"], retrieved["build"]) == (59, x["accuracy"]["retrieved"]["notebook"]["correct"])
    assert [row["course_dev"] for row in k["training"]] == [v[1] for v in course.ORIGINAL_LOG.values()]
    assert "89/154" in k["accuracy_note"] and "seed" in k["accuracy_note"]
    page = web_client.get("/explore/dev.html").text
    text = re.sub(r"<[^>]+>", "", page)
    # the 89/154 is the 2026 explainer's (its retrained weights), named so and defined in the glossary
    assert 'id="table2"' in page and "0.04299" in page and "the 2026 explainer 89/154" in text
    assert 'id="g-explainer"' in page and "86/154" in text and 'id="look-alikes"' in page
    test = web_client.get("/explore/test.json").json()["course"]
    assert test["table2"]["F"]["course"] == 0.03310 and test["table2"]["F"]["build"] is None
    assert "0.03310" in web_client.get("/explore/test.html").text


# --- shareable state, downloads and small wording -----------------------------------------------


def test_explore_offers_the_builds_predictions_in_the_course_shape(web_client, demo_site_data, data_dir):
    """Each split's download, against independent facts: the course file's claims (in file
    order), the build's retrieval records and its stored verdicts (read from their files)."""
    work = demo_site_data.build.work
    for split in constants.SPLITS:
        answer = web_client.get(f"/predictions/{split}.json")
        assert answer.status_code == 200
        claims = json.loads(course_file(data_dir, split).read_text(encoding="utf-8"))
        records = [json.loads(line) for line in work.retrieval(split).read_text(encoding="utf-8").splitlines()]
        verdicts = json.loads(work.verdicts(split).read_text(encoding="utf-8"))
        expected = {
            record["claim_id"]: {
                "claim_text": claims[record["claim_id"]]["claim_text"],
                "claim_label": verdicts[record["claim_id"]]["retrieved"]["notebook"]["verdict"],
                "evidences": record["evidences"],
            }
            for record in records
        }
        assert list(answer.json()) == list(claims) and answer.json() == expected
        assert f'href="../predictions/{split}.json" download=' in web_client.get(f"/explore/{split}.html").text
    assert web_client.get("/predictions/nope.json").status_code == 404


def test_a_typed_trace_has_a_link_that_reproduces_it(web_client):
    text = "Sea levels are rising & “fast”"
    page = web_client.get("/live", params={"text": text}).text
    link = re.search(r'id="share-link" href="([^"]+)"', page).group(1)
    again = web_client.get("/" + link.replace("&amp;", "&")).text
    assert re.search(r'id="share-link" href="([^"]+)"', again).group(1) == link
    assert web_client.get("/live.json", params={"text": text}).json()["claim"]["text"] == text


def test_a_soft_hyphen_is_shown_where_the_token_is_struck_through(web_client):
    page = web_client.get("/live", params={"text": "Elec\u00adtricity prices in Australia"}).text
    section = page[page.index('id="preprocess"') : page.index('id="tags"')]
    assert "not alphabetic: " in section and "U+00AD" in section


def test_downloads_are_saved_under_their_split_and_row(web_client):
    """A prediction download is an attachment named <split>-<row>.json (dev and test differ),
    and Explore's links carry the same name for the static export; the demo corpus's cf: ids
    are flagged beside them."""
    page = web_client.get("/explore/dev.html").text
    names = re.findall(r'href="\.\./predictions/(dev|test)/([^"]+)\.json"[^>]* download="([^"]+)"', page)
    # a row whose predictions are another row's links to that row's file, saved under its own name
    files = {f"{split}-{row.name}.json": row.file_row.name for split in ("dev", "test") for row in scoreboard_rows()}
    assert names and all(name.startswith(f"{split}-") and files[name] == row for split, row, name in names)
    assert len({name for _, _, name in names}) == len(names)
    assert "<code>cf:</code>" in page
    ids = web_client.get("/explore/dev.json").json()["evidence_ids"]
    download = web_client.get("/predictions/dev.json").json()
    returned = [e for row in download.values() for e in row["evidences"]]
    assert ids == {"returned": len(returned), "outside_course": sum(e.startswith("cf:") for e in returned)}
    assert f"{ids['outside_course']} of its {ids['returned']} evidence ids start with" in re.sub(r"<[^>]+>", "", page)
    split, row, name = names[0]
    response = web_client.get(f"/predictions/{split}/{row}.json")
    assert response.headers["content-disposition"] == f'attachment; filename="{name}"'
    assert web_client.get("/predictions/dev.json").headers["content-disposition"].endswith('"dev-predictions.json"')


def test_answers_over_1_kb_are_gzipped_and_static_files_cached_by_their_hashed_names(web_client):
    page = web_client.get("/explore/dev.html", headers={"Accept-Encoding": "gzip"})
    assert page.headers["content-encoding"] == "gzip" and len(page.content) > 1000
    small = web_client.get("/claim/claim-424242.json", headers={"Accept-Encoding": "gzip"})
    assert "content-encoding" not in small.headers  # under 1 KB: sent as it is
    evaluation = web_client.get("/evaluation.html").text  # the LLM scripts: linked by the LLM pages
    tour = web_client.get("/tour.html").text  # the tour's dialog: linked by the tour alone
    linked_by = {**dict.fromkeys(LLM_SCRIPTS, evaluation), "app-tour.js": tour}
    for name, hashed in ASSETS.items():
        assert f"static/{hashed}" in linked_by.get(name, page.text)
        answer = web_client.get(f"/static/{hashed}")
        assert answer.status_code == 200 and answer.headers["cache-control"] == "public, max-age=31536000, immutable"
        assert answer.content == (STATIC / name).read_bytes()
        assert web_client.get(f"/static/{name}").headers["cache-control"] == "no-cache"
    assert web_client.get("/static/app.000000000000.js").status_code == 404


def test_stems_of_stems_are_shown_where_they_decide_a_shared_tag(web_client):
    """claim-871's missed gold passage evidence-286834 has the tag "disea" where the claim has
    "diseas" (the passages' tags are stemmed twice): the table says so."""
    from claimtrace.web.render import stems_of_stems

    assert stems_of_stems(["diseas", "zika"], ["disea", "zika", "mosquito"]) == {"disea": "diseas"}
    page = web_client.get("/claim/claim-871.html").text
    row = page[page.index('data-id="evidence-286834"') :]
    row = row[: row.index("</tr>")]
    assert "≠ the claim’s diseas" in row and "stems of stems" in row


def test_prerender_keeps_every_claim_page_whole(demo_build, monkeypatch):
    """``--prerender``: once warm, every claim page is rendered and kept; a request for one is
    then answered from the copy (the site data is not asked again), byte for byte the page a
    request would have made."""
    site_data = SiteData(demo_build)
    few = {split: dict(list(site_data.claims(split).items())[:3]) for split in ("dev", "train", "test")}
    monkeypatch.setattr(site_data, "claims", lambda split: few[split])
    monkeypatch.setattr(site_data, "warm", lambda: None)
    app = create_app(site_data=site_data, warm=True, prerender=True)
    deadline = time.monotonic() + 120
    while not app.state.warmth["warm"]:
        assert time.monotonic() < deadline, app.state.warmth
        time.sleep(0.1)
    assert app.state.warmth == {"claim_pages_prerendered": 9, "claim_pages": 9, "warm": True, "typed_ready": True}
    kept = dict(app.state.warmth)
    asked = []
    original = site_data._traces.get  # where SiteData.trace, the claim pages' data, looks first
    monkeypatch.setattr(site_data._traces, "get", lambda cid: asked.append(cid) or original(cid))
    with TestClient(app) as client:
        claim_id = next(iter(few["dev"]))
        page = client.get(f"/claim/{claim_id}.html")
        assert page.status_code == 200 and asked == []
        assert client.get("/api/build.json").json()["server"] == {**kept, "process": os.getpid()}
    fresh = TestClient(create_app(site_data=site_data)).get(f"/claim/{claim_id}.html")  # rendered on request
    assert fresh.content == page.content and claim_id in asked
