"""Your system beside the notebook's, on the site: the Compare pages, uploads, a claim page's
"your system" box, and the static export's (server, static and Chromium)."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest
from click.testing import CliRunner

from claimtrace.cli.main import main
from claimtrace.compare.runs import compare
from claimtrace.data import files as data
from claimtrace.evaluation.scorer import MAX_PREDICTIONS_BYTES, evaluate_file
from claimtrace.web.app import create_app
from claimtrace.web.tracer import Tracer

BASELINE = "course baseline"


@pytest.fixture(scope="module")
def baseline_path(data_dir):
    return data.course_file(data_dir, "baseline")


@pytest.fixture(scope="module")
def compare_tracer(demo_build, baseline_path):
    """A tracer of its own (the shared one has no runs), with the course's baseline given."""
    tracer = Tracer(demo_build)
    tracer.runs.give_all([(str(baseline_path), BASELINE)])
    return tracer


@pytest.fixture(scope="module")
def client(compare_tracer):
    from fastapi.testclient import TestClient

    with TestClient(create_app(tracer=compare_tracer)) as client:
        yield client


@pytest.fixture(scope="module")
def digest(compare_tracer):
    return compare_tracer.runs.get(BASELINE).digest


def test_the_compare_page_scores_the_run_as_evaluate_does(client, baseline_path, data_dir, digest):
    expected = evaluate_file(baseline_path, "dev", data_dir)
    index = client.get("/compare/index.json").json()
    (run,) = index["runs"]
    assert (run["name"], run["digest"], run["F"], run["A"], run["HM"]) == (
        BASELINE,
        digest,
        expected.F,
        expected.A,
        expected.HM,
    )
    assert [r["name"] for r in index["scoreboard"]][0] == "notebook+notebook+notebook"
    page = client.get(f"/compare/{digest}.json").json()
    assert {**page["run"], "split": "dev"} == run
    assert len(page["claims"]) == 154
    html = client.get(f"/compare/{digest}.html")
    assert html.status_code == 200 and "0.3441" in html.text
    assert client.get("/compare/course%20baseline.html").text == html.text  # by name too


def test_the_page_matches_the_command_line(client, demo_build, data_dir, baseline_path, digest):
    done = CliRunner().invoke(
        main,
        ["--data", str(data_dir), "compare", "--predictions", str(baseline_path), "--name", BASELINE]
        + ["--workdir", str(demo_build.root), "--json"],
    )
    report = json.loads(done.output)
    page = client.get(f"/compare/{digest}.json").json()
    assert {k: page["run"][k] for k in ("F", "A", "HM", "found_gold", "right")} == {
        k: report["runs"][0][k] for k in ("F", "A", "HM", "found_gold", "right")
    }
    by_id = {row["claim_id"]: row for row in report["claims"]}
    for line in page["claims"]:
        entry = by_id[line["claim_id"]]["runs"][BASELINE]
        assert (line["run_label"], line["run_F"], line["why"]) == (entry["label"], entry["F"], entry["why"])


def test_a_claim_page_gets_the_box_only_when_a_run_is_chosen(client, compare_tracer, demo_build):
    plain = client.get("/claim/claim-1515.html").text
    assert "run-box" not in plain
    chosen = client.get("/claim/claim-1515.html?run=course%20baseline")
    assert chosen.status_code == 200 and 'class="run-box"' in chosen.text and "Your system" in chosen.text
    box = client.get("/claim/claim-1515.json?run=course%20baseline").json()["run_box"]
    report = compare(demo_build, [compare_tracer.runs.get(BASELINE)], "dev")
    expected = next(row for row in report["claims"] if row["claim_id"] == "claim-1515")
    assert box["entry"] == json.loads(json.dumps(expected["runs"][BASELINE]))
    missing = client.get("/claim/claim-1515.html?run=nobody")
    assert missing.status_code == 404 and "No run here is called" in missing.text


def test_an_upload_is_kept_under_its_digest(client, data_dir):
    raw = json.loads(data.course_file(data_dir, "baseline").read_text(encoding="utf-8"))
    for claim in raw.values():
        claim["claim_label"] = "SUPPORTS"
    body = json.dumps(raw).encode()
    answer = client.post("/api/compare?name=all%20supports", content=body)
    assert answer.status_code == 201, answer.text
    made = answer.json()
    assert made["name"] == "all supports" and made["url"] == f"compare/{made['digest']}.html"
    page = client.get("/" + made["url"].replace(".html", ".json")).json()
    assert page["run"]["right"] == sum(c.label == "SUPPORTS" for c in data.load_claims("dev", data_dir).values())
    assert client.post("/api/compare", content=body).json()["digest"] == made["digest"]  # the same run, once


@pytest.mark.parametrize(
    "body, status, message",
    [
        (b"{not json", 400, "the uploaded file: not valid JSON"),
        (b"[1]", 400, "the course's scorer cannot score it: expected a JSON object mapping claim ids to predictions"),
        (b'{"claim-x": {"claim_label": "SUPPORTS", "evidences": []}}', 400, "claim 'claim-x' is not a claim of"),
        (b'{"claim-752": 5}', 400, "claim 'claim-752' is a number: the course's scorer fails on it"),
        (b" " * (MAX_PREDICTIONS_BYTES + 1), 413, "at most 8,388,608"),
    ],
)
def test_a_bad_upload_is_a_400_naming_claim_and_field(client, body, status, message):
    answer = client.post("/api/compare", content=body)
    assert answer.status_code == status
    assert message in answer.json()["error"]


@pytest.mark.parametrize(
    "entry, said",
    [
        ({"claim_label": "TRUE", "evidences": []}, "labels outside the four: 'TRUE' (1)"),
        ({"claim_label": "SUPPORTS", "evidences": "e"}, "evidences that are not a list: F 0"),
        ({"claim_label": "SUPPORTS", "evidences": ["e", "e"]}, "ids repeated in a list"),
        ({"claim_label": "SUPPORTS", "evidences": []}, "153 of the 154 dev claims are missing"),
    ],
)
def test_an_odd_upload_the_course_scorer_scores_is_compared_and_audited(client, entry, said):
    answer = client.post("/api/compare", content=json.dumps({"claim-752": entry}).encode())
    assert answer.status_code == 201, answer.text
    page = client.get("/" + answer.json()["url"].replace(".html", ".json")).json()
    assert any(said in finding["text"] for finding in page["run"]["audit"]), page["run"]["audit"]


def test_uploads_are_off_in_a_several_process_server(demo_build, data_dir):
    tracer = Tracer(demo_build)
    tracer.runs.uploads = False
    from fastapi.testclient import TestClient

    with TestClient(create_app(tracer=tracer)) as client:
        answer = client.post("/api/compare", content=data.course_file(data_dir, "baseline").read_bytes())
    assert answer.status_code == 400 and "several processes" in answer.json()["error"]


# --- in Chromium ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compare_server(compare_tracer):
    import uvicorn

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(create_app(tracer=compare_tracer), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=15)


@pytest.mark.browser
def test_a_file_chosen_on_the_page_gives_the_command_line_s_report(
    browser,
    compare_server,
    demo_build,
    data_dir,
    tmp_path,
):
    raw = json.loads(data.course_file(data_dir, "baseline").read_text(encoding="utf-8"))
    for claim in list(raw.values())[::2]:
        claim["claim_label"] = "REFUTES"
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    done = CliRunner().invoke(
        main,
        ["--data", str(data_dir), "compare", "--predictions", str(path), "--workdir", str(demo_build.root), "--json"],
    )
    expected = json.loads(done.output)["runs"][0]
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(compare_server + "/compare/")
    page.set_input_files("#run-file", str(path))
    page.fill("#run-name", "mine")
    page.click("form.run-upload button")
    page.wait_for_url("**/compare/*.html")
    scores = page.locator("table.run-scores tbody tr").first.locator("td").all_inner_texts()
    assert scores[:3] == [f"{expected['F']:.4f}", f"{expected['A']:.4f}", f"{expected['HM']:.4f}"]
    page.select_option("#run-filter", "run-right-notebook-wrong")
    shown = page.locator("table.run-claims tbody tr:visible").count()
    report = json.loads(done.output)
    assert shown == sum(
        r["runs"]["mine"]["correct"] and r["notebook"]["verdicts"]["notebook"] != r["label"] for r in report["claims"]
    )
    page.close()


@pytest.mark.browser
def test_a_static_export_shows_the_box_from_file_urls(browser, compare_tracer, digest, tmp_path):
    from claimtrace.web.site import write_site

    write_site(None, tmp_path / "site", splits=["dev"], tracer=compare_tracer, limit=3)
    claim_page = (tmp_path / "site" / "claim" / "claim-752.html").as_uri()
    page = browser.new_page(viewport={"width": 390, "height": 900})
    page.goto(claim_page)
    assert page.locator(".run-box").count() == 1 and not page.locator(".run-box").is_visible()
    page.goto(f"{claim_page}?run={digest}")
    assert page.locator(".run-box").is_visible()
    assert "Your system: course baseline" in page.locator(".run-box h2").inner_text()
    page.goto((tmp_path / "site" / "compare" / f"{digest}.html").as_uri())
    assert "course baseline beside the notebook’s pipeline" in page.locator("h1").inner_text()
    page.close()


@pytest.mark.browser
def test_explore_has_a_row_and_a_filter_per_run(browser, compare_server, client, digest):
    explore = client.get("/explore/dev.json").json()
    row = next(r for r in explore["runs"] if r["digest"] == digest)  # uploads above add theirs
    assert row["name"] == BASELINE and len(row["right"]) == 154
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(compare_server + "/explore/dev.html")
    assert page.locator(f'#scoreboard-table tr[data-run="{digest}"] a').inner_text() == BASELINE
    page.select_option("#f-run", f"{digest}:run")
    expected = [
        line["claim_id"]
        for line in client.get(f"/compare/{digest}.json").json()["claims"]
        if line["run_right"] and not line["notebook_right"]
    ]
    assert page.locator("#f-count").inner_text().startswith(f"{len(expected)} of 154 claims shown")
    page.close()


@pytest.mark.browser
@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("path", ["/compare/", "/compare/{digest}.html", "/claim/claim-1515.html?run={digest}"])
def test_axe_finds_nothing_on_compare_pages(browser, compare_server, digest, path, width):
    from tests.web.conftest import AXE, violations

    found = violations(browser, compare_server + path.format(digest=digest), AXE.read_text(encoding="utf-8"), width)
    assert found == [], found


def test_the_runs_stay_when_the_server_reloads_a_completed_build(demo_build, baseline_path):
    from claimtrace.web.app import reload_site
    from claimtrace.web.middleware import AnswerCache

    tracer = Tracer(demo_build)
    tracer.runs.give_all([(str(baseline_path), BASELINE)])
    app = create_app(tracer=tracer)
    reload_site(app, AnswerCache())
    assert app.state.tracer is not tracer and app.state.tracer.runs.get(BASELINE) is not None
    assert app.state.tracer.runs.build is app.state.tracer.build
