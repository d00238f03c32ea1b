"""Your system beside the notebook's, on the site: the Compare pages, uploads, a claim page's
"your system" box, and the static export's (server, static and Chromium)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from markupsafe import escape

from claimtrace.cli.main import main
from claimtrace.compare.runs import compare
from claimtrace.data import files as data
from claimtrace.evaluation.audit import report_path
from claimtrace.evaluation.scorer import MAX_PREDICTIONS_BYTES
from claimtrace.web.app import create_app
from claimtrace.web.site_data import SiteData
from tests.web.conftest import serving

BASELINE = "course baseline"


@pytest.fixture(scope="module")
def baseline_path(data_dir):
    return data.course_file(data_dir, "baseline")


@pytest.fixture(scope="module")
def compare_site_data(demo_build, baseline_path):
    """A site_data of its own (the shared one has no runs), with the course's baseline given."""
    site_data = SiteData(demo_build)
    site_data.runs.give_all([(str(baseline_path), BASELINE)])
    return site_data


@pytest.fixture(scope="module")
def client(compare_site_data):
    from fastapi.testclient import TestClient

    with TestClient(create_app(site_data=compare_site_data)) as client:
        yield client


@pytest.fixture(scope="module")
def digest(compare_site_data):
    return compare_site_data.runs.get(BASELINE).digest


def test_the_compare_page_scores_the_run_as_evaluate_does(client, baseline_path, data_dir, digest):
    expected = report_path(baseline_path, data_dir).scored.course
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
    assert {**page["run"], "split": "dev"} == {
        k: v for k, v in run.items() if k not in ("intervals", "next", "told_apart")
    }
    assert run["intervals"]["HM"] == page["statistics"]["figures"][BASELINE]["HM"]
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


def test_a_claim_page_gets_the_box_only_when_a_run_is_chosen(client, compare_site_data, demo_build):
    plain = client.get("/claim/claim-1515.html").text
    assert "run-box" not in plain
    chosen = client.get("/claim/claim-1515.html?run=course%20baseline")
    assert chosen.status_code == 200 and 'class="run-box"' in chosen.text and "Your system" in chosen.text
    box = client.get("/claim/claim-1515.json?run=course%20baseline").json()["run_box"]
    report = compare(demo_build, [compare_site_data.runs.get(BASELINE)], "dev")
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
    html = client.get("/" + answer.json()["url"]).text
    codes = [finding["code"] for finding in page["run"]["audit"]]
    assert "What is odd in this file" in html and all(f'data-code="{code}"' in html for code in codes)
    index = client.get("/compare/index.html").text
    assert f"compare/{answer.json()['digest']}.html#audit" in index


def _store_app(demo_build, store):
    from fastapi.testclient import TestClient

    return TestClient(create_app(site_data=SiteData(demo_build, store)))


def test_an_upload_to_one_process_is_served_by_another_and_after_a_restart(demo_build, data_dir, tmp_path):
    from claimtrace.compare.run_store import RunStore

    path = tmp_path / "demo.runs.sqlite"
    raw = data.course_file(data_dir, "baseline").read_bytes()
    with _store_app(demo_build, RunStore(path)) as one, _store_app(demo_build, RunStore(path)) as two:
        answer = one.post("/api/compare?name=shared", content=raw)
        assert answer.status_code == 201, answer.text
        url = "/" + answer.json()["url"]
        assert two.get(url).status_code == 200 and "shared" in two.get("/compare/index.html").text
    with _store_app(demo_build, RunStore(path)) as restarted:  # a new process over the same store
        page = restarted.get(url.replace(".html", ".json")).json()
        assert page["run"]["name"] == "shared" and page["run"]["digest"] == answer.json()["digest"]


def test_an_evicted_run_is_said_to_be_evicted(demo_build, data_dir, tmp_path):
    from claimtrace.compare.run_store import RunStore

    raw = data.course_file(data_dir, "baseline").read_bytes()
    smaller = json.dumps({"claim-752": {"claim_label": "SUPPORTS", "evidences": []}}).encode()
    store = RunStore(tmp_path / "runs.sqlite", cap_bytes=len(raw) + len(smaller) - 1)
    with _store_app(demo_build, store) as client:
        first = client.post("/api/compare?name=first", content=raw).json()
        assert client.post("/api/compare?name=second", content=smaller).status_code == 201
        gone = client.get(f"/compare/{first['digest']}.html")
        assert gone.status_code == 404 and "was evicted from this server’s run store" in gone.text
        index = client.get("/compare/index.json").json()
        assert index["store"]["evicted"][0]["name"] == "first" and index["store"]["kept"] == 1
        assert "Runs evicted to keep the store under its cap (1)" in client.get("/compare/index.html").text


# --- intervals and paired tests ----------------------------------------------------------------


def _cli_compare(data_dir, demo_build, path, name=None) -> dict:
    args = ["--data", str(data_dir), "compare", "--predictions", str(path)] + (["--name", name] if name else [])
    done = CliRunner().invoke(main, args + ["--workdir", str(demo_build.root), "--json"])
    assert done.exit_code == 0, done.output
    return json.loads(done.output)


def test_the_page_s_figures_are_the_command_line_s_statistics(client, demo_build, data_dir, baseline_path, digest):
    expected = _cli_compare(data_dir, demo_build, baseline_path, BASELINE)["statistics"]
    page = client.get(f"/compare/{digest}.json").json()
    assert page["statistics"] == expected
    iv = page["intervals"]
    assert [f["key"] for f in iv["figures"]] == list(expected["figures"])
    for row in iv["figures"]:
        for metric in ("F", "A", "HM", "macro_f1"):
            assert row[metric] == expected["figures"][row["key"]][metric]
    assert [d["key"] for d in iv["against"]] == list(expected["paired"][BASELINE])
    for row in iv["against"]:
        comparison = expected["paired"][BASELINE][row["key"]]
        assert row["HM"] == comparison["HM"]
        assert (row["A"]["estimate"], row["A"]["p_holm"], row["A"]["verdict"]) == (
            comparison["A"]["estimate"],
            comparison["p_holm"],
            comparison["verdict"],
        )
    assert "10,000 resamples, seed 2024" in iv["method"] and "Wilson" in iv["method"] and "Holm" in iv["method"]


def test_the_words_follow_the_verdict(client, digest):
    page = client.get(f"/compare/{digest}.json").json()
    html = client.get(f"/compare/{digest}.html").text
    for row in page["intervals"]["against"]:
        hm, sentence = row["HM"], row["sentence"]
        if hm["verdict"] == "more than chance":
            assert sentence.endswith(": more than chance."), sentence
        else:
            assert sentence.endswith(": the two cannot be told apart."), sentence
        side = "higher than" if hm["estimate"] > 0 else "lower than" if hm["estimate"] < 0 else "the same as"
        assert side in sentence and f"{hm['lower']:+.3f} to {hm['upper']:+.3f}" in sentence
        assert "Holm-corrected" in sentence
        assert escape(sentence) in html
    # the course's baseline file against itself: no difference, and the page says it cannot tell
    itself = next(r for r in page["intervals"]["against"] if r["key"] == "baseline:course-file")
    assert itself["HM"]["estimate"] == 0.0 and itself["sentence"].endswith("cannot be told apart.")
    assert page["intervals"]["same_a"] is None  # 54 right, always SUPPORTS 68
    assert "How sure these scores are" in html and 'class="picture intervals differences"' in html


def test_a_run_as_accurate_as_always_supports_is_said_so(demo_build, data_dir, tmp_path):
    raw = json.loads(data.course_file(data_dir, "baseline").read_text(encoding="utf-8"))
    for claim in raw.values():
        claim["claim_label"] = "SUPPORTS"
    path = tmp_path / "supports.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    runs = SiteData(demo_build).runs
    page = runs.report(runs.give(path, "supports"))
    same = page["intervals"]["same_a"]
    supports = page["statistics"]["figures"]["baseline:always-SUPPORTS"]["A"]["successes"]
    assert same.startswith(f"A equals always answering SUPPORTS: both get {supports} of 154 claims right")
    assert same.endswith("cannot be told apart).")


def test_a_run_s_statistics_are_computed_once(demo_build, baseline_path, monkeypatch):
    from claimtrace.compare import runs as compare_runs

    calls = []
    real = compare_runs.run_statistics
    monkeypatch.setattr(compare_runs, "run_statistics", lambda *a, **k: calls.append(1) or real(*a, **k))
    runs = SiteData(demo_build).runs
    run = runs.give(baseline_path, BASELINE)
    first = runs.report(run)
    assert runs.report(run) is first and runs.box(run, "claim-752") is not None
    runs.explore_rows("dev")
    assert len(calls) == 1 and "statistics" in first


def test_a_test_run_has_no_statistics(demo_build, tmp_path):
    path = tmp_path / "test.json"
    path.write_text(json.dumps(demo_build.course_predictions("test")), encoding="utf-8")
    runs = SiteData(demo_build).runs
    page = runs.report(runs.give(path, "test run"))
    assert "statistics" not in page and "intervals" not in page
    index = runs.index()
    assert "statistics" not in index and "intervals" not in index["runs"][0]


def test_the_index_ranks_dev_runs_with_intervals_and_neighbours_told_apart(
    demo_build, baseline_path, data_dir, tmp_path, monkeypatch
):
    from claimtrace.web import runs as web_runs

    calls = []
    real = web_runs.class_statistics
    monkeypatch.setattr(web_runs, "class_statistics", lambda *a, **k: calls.append(1) or real(*a, **k))
    runs = SiteData(demo_build).runs
    runs.give(baseline_path, BASELINE)
    one = runs.index()
    assert runs.index()["statistics"] is one["statistics"] and len(calls) == 1  # cached
    assert one["told_apart"] == "1 dev run: no pair of runs to compare."
    assert [r["kind"] for r in one["references"]] == ["notebook", "baseline", "baseline", "baseline"]
    raw = json.loads(baseline_path.read_text(encoding="utf-8"))
    for claim in list(raw.values())[::2]:
        claim["claim_label"] = "REFUTES"
    (tmp_path / "refutes.json").write_text(json.dumps(raw), encoding="utf-8")
    (tmp_path / "gold.json").write_text(
        json.dumps(
            {c.id: {"claim_label": c.label, "evidences": list(c.evidences)} for c in runs.build.claims("dev").values()}
        ),
        encoding="utf-8",
    )
    runs.give(tmp_path / "refutes.json", "refutes")
    runs.give(tmp_path / "gold.json", "gold")
    index = runs.index()  # a run was added: computed again
    assert len(calls) == 2 and len(index["statistics"]["pairs"]) == 3
    assert [r["name"] for r in index["runs"]] == ["gold", BASELINE, "refutes"]
    pairs = {(p["a"], p["b"]): p for p in index["statistics"]["pairs"]}
    for upper, lower in zip(index["runs"], index["runs"][1:]):
        assert upper["intervals"]["HM"] == index["statistics"]["figures"][upper["digest"]]["HM"]
        pair = pairs.get((upper["digest"], lower["digest"]))
        if pair is not None:
            assert upper["next"]["HM"] == pair["HM"]
        else:
            flipped = pairs[(lower["digest"], upper["digest"])]["HM"]
            assert upper["next"]["HM"]["estimate"] == -flipped["estimate"]
            assert (upper["next"]["HM"]["lower"], upper["next"]["HM"]["upper"]) == (
                -flipped["upper"],
                -flipped["lower"],
            )
            assert upper["next"]["HM"]["verdict"] == flipped["verdict"]
    assert "next" not in index["runs"][-1]
    differ = sum(p["HM"]["verdict"] == "more than chance" for p in pairs.values())
    assert index["told_apart"].startswith(f"Of the 3 pairs of dev runs, {differ} differ")
    assert "Holm-corrected over all 3 pairs" in index["told_apart"]
    # the class's figures are the run pages' (the same resamples), and the pairs are every_pair's
    for run in runs.all():
        assert index["statistics"]["figures"][run.digest] == runs.report(run)["statistics"]["figures"][run.name]


def test_the_index_json_carries_the_statistics(client):
    index = client.get("/compare/index.json").json()
    assert index["statistics"]["method"]["resamples"] == 10_000
    dev = [r for r in index["runs"] if r["split"] == "dev"]
    assert all(r["intervals"]["HM"] == index["statistics"]["figures"][r["digest"]]["HM"] for r in dev)
    assert index["told_apart"] in client.get("/compare/index.html").text


# --- in Chromium ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compare_server(compare_site_data):
    with serving(create_app(site_data=compare_site_data)) as base:
        yield base


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
def test_a_static_export_shows_the_box_from_file_urls(browser, compare_site_data, digest, tmp_path):
    from claimtrace.web.site import write_site

    write_site(None, tmp_path / "site", splits=["dev"], site_data=compare_site_data, limit=3)
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
@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize(
    "path", ["/compare/", "/compare/index.html", "/compare/{digest}.html", "/claim/claim-1515.html?run={digest}"]
)
def test_axe_finds_nothing_on_compare_pages(axe, compare_server, digest, path, width, scheme):
    url = compare_server + path.format(digest=digest)
    found = axe.violations(url, width, scheme)
    assert found == [], found


def test_the_runs_stay_when_the_server_reloads_a_completed_build(demo_build, baseline_path):
    from claimtrace.web.app import reload_site
    from claimtrace.web.middleware import AnswerCache

    site_data = SiteData(demo_build)
    site_data.runs.give_all([(str(baseline_path), BASELINE)])
    app = create_app(site_data=site_data)
    reload_site(app, AnswerCache())
    assert app.state.site_data is not site_data and app.state.site_data.runs.get(BASELINE) is not None
    assert app.state.site_data.runs.build is app.state.site_data.build


@pytest.fixture(scope="module")
def compare_export(compare_site_data, tmp_path_factory):
    """The static export of the compare site_data's runs (three claim pages: a preview)."""
    from claimtrace.web.site import write_site

    out = tmp_path_factory.mktemp("compare-site")
    write_site(None, out, splits=["dev"], site_data=compare_site_data, limit=3)
    return out


@pytest.mark.browser
@pytest.mark.parametrize("width", [1280, 390])
def test_the_compare_pages_whiskers_are_drawn_to_scale_served_and_exported(
    browser, compare_server, compare_export, digest, width
):
    from tests.web.conftest import ARTIFACTS
    from tests.web.test_charts import check_whiskers

    page = browser.new_page(viewport={"width": width, "height": 900})
    problems = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    said = {}
    for kind, base in (("served", compare_server + "/"), ("exported", compare_export.as_uri() + "/")):
        for name, path, least in (("run", f"compare/{digest}.html", 23), ("index", "compare/index.html", 5)):
            page.goto(base + path, wait_until="load")
            where = f"{kind} {name} page at {width} px"
            assert check_whiskers(page, "#intervals", where) >= least, where
            said[kind, name] = page.locator("#intervals").inner_text()
            ARTIFACTS.mkdir(exist_ok=True)
            page.locator("#intervals").screenshot(path=str(ARTIFACTS / f"compare-{name}-{kind}-{width}.png"))
    for name in ("run", "index"):
        assert said["served", name] == said["exported", name], name  # the same words, served and exported
    assert "more than chance" in said["served", "run"] and "10,000 resamples, seed 2024" in said["served", "run"]
    page.close()
    assert not problems, problems


@pytest.mark.browser
@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("path", ["compare/index.html", "compare/{digest}.html"])
def test_axe_finds_nothing_on_exported_compare_pages(axe, compare_export, digest, path, width, scheme):
    url = (compare_export / path.format(digest=digest)).as_uri()
    found = axe.violations(url, width, scheme)
    assert found == [], found


def test_the_count_of_pairs_told_apart_reads_for_one_pair_and_many():
    from claimtrace.web.views.comparison import told_apart_words

    method = {"resamples": 10_000, "seed": 2024}
    assert told_apart_words(2, 1, 0, method).startswith("The two dev runs cannot be told apart in HM (paired")
    assert told_apart_words(2, 1, 1, method).startswith("The two dev runs differ in HM by more than chance")
    assert told_apart_words(4, 6, 1, method).startswith("Of the 6 pairs of dev runs, 1 differs in HM")
    assert "10,000 resamples, seed 2024" in told_apart_words(4, 6, 2, method)
