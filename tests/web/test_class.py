"""A class on the site: ``serve --class DIR`` (files set aside listed on the compare index), the
class page (every dev run together) served and exported, and several files uploaded at once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from claimtrace.data import files as data
from claimtrace.web.app import create_app
from claimtrace.web.site_data import SiteData
from tests.web.conftest import serving

#: What the class folder's odd files are set aside for (file -> the start of its line).
SET_ASIDE = {
    "notes.json": "not valid JSON",
    "words.json": "the course's scorer cannot score it",
}


def write_class(folder: Path, data_dir: Path, build) -> Path:
    """A class of five files written from the course's baseline and the build's claims (nothing
    of the course's or students' copied into the repository): a plain run, one with ids repeated
    in its lists, one with null labels, a file of test claims, a file that is not JSON and one
    that is JSON but not an object."""
    folder.mkdir(parents=True, exist_ok=True)
    baseline = json.loads(data.course_file(data_dir, "baseline").read_text(encoding="utf-8"))
    (folder / "alice.json").write_text(json.dumps(baseline), encoding="utf-8")
    repeated = {cid: {**e, "evidences": e["evidences"] + e["evidences"][:1]} for cid, e in baseline.items()}
    for entry in list(repeated.values())[::3]:
        entry["claim_label"] = "REFUTES"
    (folder / "bob.json").write_text(json.dumps(repeated), encoding="utf-8")
    nulls = {cid: {**e, "claim_label": None if i % 2 else "SUPPORTS"} for i, (cid, e) in enumerate(baseline.items())}
    (folder / "carol.json").write_text(json.dumps(nulls), encoding="utf-8")
    (folder / "dave-test.json").write_text(json.dumps(build.course_predictions("test")), encoding="utf-8")
    (folder / "notes.json").write_text("these are my notes, not predictions", encoding="utf-8")
    (folder / "words.json").write_text(json.dumps(["SUPPORTS"]), encoding="utf-8")
    (folder / "readme.txt").write_text("not a *.json: never read", encoding="utf-8")
    return folder


def direct_counts(folder: Path, build) -> dict[str, tuple[int, int]]:
    """Per dev claim, (runs right, runs naming a gold passage), counted straight from the files."""
    claims = build.claims("dev")
    counts = dict.fromkeys(claims, (0, 0))
    for name in ("alice", "bob", "carol"):
        raw = json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))
        for cid, claim in claims.items():
            entry = raw.get(cid)
            if entry is None:
                continue
            right, found = counts[cid]
            counts[cid] = (
                right + (entry["claim_label"] == claim.label),
                found + bool(set(entry["evidences"]) & set(claim.evidences)),
            )
    return counts


@pytest.fixture(scope="module")
def class_folder(tmp_path_factory, data_dir, demo_build) -> Path:
    return write_class(tmp_path_factory.mktemp("class") / "class", data_dir, demo_build)


@pytest.fixture(scope="module")
def class_site_data(demo_build, class_folder):
    site_data = SiteData(demo_build)
    site_data.runs.give_all([(str(class_folder), None)])
    return site_data


@pytest.fixture(scope="module")
def class_client(class_site_data):
    from fastapi.testclient import TestClient

    with TestClient(create_app(site_data=class_site_data)) as client:
        yield client


def test_a_class_folder_gives_every_file_it_can_and_sets_aside_the_rest(class_site_data):
    runs = class_site_data.runs
    assert sorted((run.name, run.split) for run in runs.all()) == [
        ("alice", "dev"),
        ("bob", "dev"),
        ("carol", "dev"),
        ("dave-test", "test"),
    ]
    aside = {line["file"]: line["why"] for line in runs.set_aside}
    assert set(aside) == set(SET_ASIDE)
    for file, start in SET_ASIDE.items():
        assert aside[file].startswith(start) or start in aside[file], aside[file]
        assert "/" not in aside[file]  # no machine path on a page


def test_the_index_lists_the_set_aside_files_and_links_the_class_page(class_client):
    index = class_client.get("/compare/index.json").json()
    assert {line["file"] for line in index["set_aside"]} == set(SET_ASIDE)
    html = class_client.get("/compare/index.html").text
    for file in SET_ASIDE:
        assert f"set aside: <code>{file}</code>: " in html
    assert 'href="../compare/class.html"' in html or 'href="class.html"' in html or "compare/class.html" in html


def test_the_index_says_which_runs_cannot_be_told_apart_from_the_leader_or_always_supports(class_client):
    """Each dev run below the leader: its HM against the leader's (every pair Holm-corrected
    together) and against always SUPPORTS (Holm over the runs), each verdict from the statistics."""
    index = class_client.get("/compare/index.json").json()
    dev = [run for run in index["runs"] if run["split"] == "dev"]
    statistics = index["statistics"]
    pairs = {frozenset((p["a"], p["b"])): p for p in statistics["pairs"]}
    assert dev[0]["told_apart"]["leader"] is None
    for run in dev[1:]:
        pair = pairs[frozenset((run["digest"], dev[0]["digest"]))]
        assert run["told_apart"]["leader"] == pair["HM"]["verdict"]
    for run in dev:
        against = statistics["paired"][run["digest"]]["baseline:always-SUPPORTS"]["HM"]["verdict"]
        assert run["told_apart"]["always_supports"] == against
    page = class_client.get("/compare/index.html").text
    assert "HM told apart from the leader? from always SUPPORTS?" in page and "always SUPPORTS: " in page


def test_the_class_page_counts_equal_a_direct_count_from_the_files(class_client, class_folder, demo_build):
    page = class_client.get("/compare/class.json").json()
    expected = direct_counts(class_folder, demo_build)
    assert [line["claim_id"] for line in page["claims"]] == list(demo_build.claims("dev"))
    for line in page["claims"]:
        assert (line["right"], line["found_gold"]) == expected[line["claim_id"]], line["claim_id"]
        assert line["runs"] == 3
    nobody = [cid for cid, (right, _) in expected.items() if right == 0]
    assert [m["claim_id"] for m in page["nobody_right"]] == nobody
    assert all(m["why"][0].startswith("the notebook’s model said ") for m in page["nobody_right"])
    assert all(len(m["why"]) >= 1 + 1 for m in page["nobody_right"])  # the verdict, then each gold passage
    assert [r["name"] for r in page["runs"]] == [
        r["name"] for r in class_client.get("/compare/index.json").json()["runs"] if r["split"] == "dev"
    ]
    bob = next(r for r in page["runs"] if r["name"] == "bob")
    assert any(f["code"] == "repeated_ids" for f in bob["audit"])
    carol = next(r for r in page["runs"] if r["name"] == "carol")
    assert any(f["code"] == "odd_labels" for f in carol["audit"])
    html = class_client.get("/compare/class.html").text
    assert "The class together" in html and 'id="class-claims"' in html
    for finding in bob["audit"]:
        assert f'data-code="{finding["code"]}"' in html


def test_the_class_page_is_computed_once_per_set_of_runs(class_site_data, data_dir, monkeypatch):
    from claimtrace.web import runs as web_runs

    calls = []
    real = web_runs.class_page
    monkeypatch.setattr(web_runs, "class_page", lambda *a, **k: calls.append(1) or real(*a, **k))
    runs = class_site_data.runs
    runs._class_page = None
    first = runs.class_view()
    assert runs.class_view() is first and len(calls) == 1
    raw = json.loads(data.course_file(data_dir, "baseline").read_text(encoding="utf-8"))
    for entry in raw.values():
        entry["claim_label"] = "NOT_ENOUGH_INFO"
    runs.upload(json.dumps(raw).encode(), "all nei")
    again = runs.class_view()
    assert len(calls) == 2 and again["totals"]["runs"] == 4


def test_no_page_of_the_class_answers_500(class_client, class_site_data):
    paths = ["/compare/", "/compare/index.html", "/compare/index.json", "/compare/class.html", "/compare/class.json"]
    for run in class_site_data.runs.all():
        paths += [f"/compare/{run.digest}.html", f"/compare/{run.digest}.json"]
        paths += [f"/claim/claim-752.html?run={run.digest}"]
    for path in paths:
        answer = class_client.get(path)
        assert answer.status_code == 200, (path, answer.status_code)


def test_a_server_without_runs_has_an_empty_class_page(demo_build):
    from fastapi.testclient import TestClient

    with TestClient(create_app(site_data=SiteData(demo_build))) as client:
        page = client.get("/compare/class.json").json()
        assert page["totals"]["runs"] == 0 and page["claims"] == []
        assert "No dev run yet" in client.get("/compare/class.html").text


def _main_words(html: str) -> str:
    """The words of a page's own part of <main> (an export's banner before it left out), tags
    dropped and spaces collapsed."""
    import re

    main = html[html.index('<section class="compare-head') : html.index("</main>")]
    return " ".join(re.sub(r"<[^>]+>", " ", main).split())


def test_the_export_writes_the_class_page_with_the_same_words(class_site_data, class_client, tmp_path):
    from claimtrace.web.site import write_site

    write_site(None, tmp_path, splits=["dev"], site_data=class_site_data, limit=2)
    exported = (tmp_path / "compare" / "class.html").read_text(encoding="utf-8")
    served = class_client.get("/compare/class.html").text
    assert _main_words(exported) == _main_words(served)
    assert json.loads((tmp_path / "compare" / "class.json").read_text(encoding="utf-8"))["totals"]["runs"] >= 3


def test_an_export_without_dev_runs_writes_no_class_page(demo_build, tmp_path):
    from claimtrace.web.site import write_site

    write_site(None, tmp_path, splits=["test"], site_data=SiteData(demo_build), limit=1)
    assert not (tmp_path / "compare" / "class.html").exists()


# --- in Chromium ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def class_server(class_site_data):
    with serving(create_app(site_data=class_site_data)) as base:
        yield base


@pytest.fixture(scope="module")
def class_export(class_site_data, tmp_path_factory):
    from claimtrace.web.site import write_site

    out = tmp_path_factory.mktemp("class-site")
    write_site(None, out, splits=["dev"], site_data=class_site_data, limit=2)
    return out


@pytest.mark.browser
def test_several_files_uploaded_at_once_are_each_listed_with_their_result(browser, class_server, data_dir, tmp_path):
    baseline = json.loads(data.course_file(data_dir, "baseline").read_text(encoding="utf-8"))
    plain = {cid: {**e, "claim_label": "REFUTES"} for cid, e in baseline.items()}
    odd = {cid: {**e, "evidences": e["evidences"] * 2} for cid, e in list(baseline.items())[:40]}
    files = {
        "erin.json": json.dumps(plain),
        "frank.json": json.dumps(odd),  # repeated ids and most claims missing: scored, and audited
        "gina.json": '{"claim-752": 5}',  # what the course's scorer fails on: refused
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.goto(class_server + "/compare/")
    page.set_input_files("#run-file", [str(tmp_path / name) for name in files])
    page.click("form.run-upload button")
    page.locator(".upload-results li").nth(2).wait_for(timeout=60_000)
    page.locator("form.run-upload button:enabled").wait_for(timeout=60_000)
    items = page.locator(".upload-results li").all_inner_texts()
    assert items[0].startswith("erin.json: compared as erin (dev)")
    assert items[1].startswith("frank.json: compared as frank (dev)")
    assert items[2].startswith("gina.json: refused: the uploaded file: claim 'claim-752' is a number")
    assert "Traceback" not in " ".join(items)
    assert page.locator(".upload-status").inner_text().startswith("2 of 3 files compared")
    assert page.locator(".upload-status").get_attribute("aria-live") == "polite"
    page.screenshot(path=str(_shots() / "compare-index-uploads-1280.png"), full_page=True)
    page.locator(".upload-results li").nth(1).locator("a").click()
    page.wait_for_url("**/compare/*.html")
    codes = page.locator("#audit li[data-code]").evaluate_all("items => items.map(i => i.dataset.code)")
    assert "repeated_ids" in codes and "missing" in codes
    page.goto(class_server + "/compare/class.html")
    assert page.locator(".class-audit h3 a", has_text="frank").count() == 1
    page.close()
    assert not problems, problems


def _shots() -> Path:
    folder = Path("/work/shots/d")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.mark.browser
@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("where", ["served", "exported"])
def test_axe_finds_nothing_on_the_class_page(browser, axe, class_server, class_export, where, width, scheme):
    url = class_server + "/compare/class.html" if where == "served" else (class_export / "compare/class.html").as_uri()
    found = axe.violations(url, width, scheme)
    assert found == [], found
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(url)
    page.screenshot(path=str(_shots() / f"class-{where}-{width}-{scheme}.png"), full_page=False)
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, overflow
    page.close()


@pytest.mark.browser
def test_the_class_table_sorts_by_runs_right(browser, class_server):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(class_server + "/compare/class.html")
    page.locator("#class-claims th", has_text="runs right").click()
    values = page.locator("#class-claims tbody tr").evaluate_all("rows => rows.map(r => +r.dataset.right)")
    assert values == sorted(values)
    page.close()
