"""claimtrace.web.views.attribution: the page "Attribution methods, graded" (served and exported,
its whiskers measured in Chromium, axe clean) with its section on the LSTM, a claim page's box of
each method's top words and the LSTM's top words beside its verdict, from attribution files
written here (the grading itself is tested in tests/evaluation/); without them, the page says
which command makes them."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from claimtrace import constants
from claimtrace.evaluation.attribution import top_words
from claimtrace.models.attribution import METHODS
from claimtrace.web.app import create_app
from claimtrace.web.pages import ATTRIBUTION, CLAIM
from claimtrace.web.render import Renderer
from claimtrace.web.site_data import SiteData
from claimtrace.workdir.reader import BuildReader
from claimtrace.workdir.stages.attribution import LSTM_LEFT_OUT, LSTM_METHODS, _write, grade_records, summarise_lstm
from tests.web.conftest import serving

CLAIMS = 24


def _records(build: BuildReader, claims: int | None = CLAIMS) -> list[dict]:
    """Made-up attributions of the first dev claims' real tokens (``None``: every dev claim):
    occlusion exact, IG a little off, KernelSHAP noisy, LIME all zero."""
    encoded = build.inputs("dev", "retrieved")
    pad = build.classifier().vocab.index[constants.PAD]
    rng = np.random.default_rng(0)
    records = []
    for claim_id, ids in list(zip(encoded.claim_ids, encoded.input_ids))[:claims]:
        positions = np.flatnonzero(np.asarray(ids) != pad)
        exact = rng.normal(0.01, 0.01, len(positions))
        values = {
            "occlusion": exact,
            "integrated_gradients": exact * 1.01,
            "kernel_shap": exact + rng.normal(0, 0.002, len(exact)),
            "lime": np.zeros(len(exact)),
        }
        records.append(
            {
                "claim_id": claim_id,
                "verdict": "SUPPORTS",
                "runner_up": "REFUTES",
                "margin": float(exact.sum()) + 0.1,
                "difference": float(exact.sum()),
                "positions": positions.tolist(),
                "tokens": build.classifier().vocab.decode([int(ids[p]) for p in positions]),
                "exact": exact.tolist(),
                "methods": {m: values[m].tolist() for m in METHODS},
                "seconds": {m: 0.5 for m in METHODS},
                "cpu_seconds": {m: 0.25 for m in METHODS},
            }
        )
    return records


def _lstm_records(records: list[dict], costed: int = 2) -> list[dict]:
    """Made-up LSTM records of the same claims: occlusion the Transformer records' exact values,
    Integrated Gradients them reversed on every other claim (the two disagree there); the first
    ``costed`` claims timed for the methods left out too."""
    out = []
    for index, record in enumerate(records):
        exact = np.asarray(record["exact"])
        values = {"occlusion": exact, "integrated_gradients": exact[::-1] if index % 2 else exact * 2}
        timed = (*LSTM_METHODS, *(LSTM_LEFT_OUT if index < costed else ()))
        out.append(
            {
                **{key: record[key] for key in ("claim_id", "verdict", "runner_up", "margin", "difference")},
                "positions": record["positions"],
                "tokens": record["tokens"],
                "methods": {m: values[m].tolist() for m in LSTM_METHODS},
                "top": {m: top_words(record["tokens"], values[m].tolist()) for m in LSTM_METHODS},
                "seconds": {m: 0.5 for m in timed},
                "cpu_seconds": {m: 0.4 if m in LSTM_METHODS else 1.0 for m in timed},
            }
        )
    return out


def write_attribution(build: BuildReader, records: list[dict], lstm: bool = True) -> None:
    """The command's files from made-up records (``lstm=False``: as written before the LSTM was
    attributed: no lstm.jsonl, no LSTM summary)."""
    grades = {**grade_records(records), "wall_seconds": 12.0, "workers": 2}
    lstm_records = _lstm_records(records)
    if lstm:
        grades["lstm"] = summarise_lstm(lstm_records, grades, {r["claim_id"]: r["verdict"] for r in records})
    _write(build, records, lstm_records, grades, complete=True)
    if not lstm:
        build.work.attribution_lstm.unlink()


@pytest.fixture(scope="module")
def attributed(demo_build, tmp_path_factory, data_dir) -> BuildReader:
    root = tmp_path_factory.mktemp("attributed") / "demo"
    shutil.copytree(demo_build.root, root)
    write_attribution(BuildReader(root, data_dir), _records(BuildReader(root, data_dir)))
    return BuildReader(root, data_dir)


def test_without_the_command_the_page_says_how_to_produce_it(demo_build):
    site_data = SiteData(demo_build)
    data = ATTRIBUTION.data(site_data, None)
    assert data["status"] == "missing" and "claimtrace attribute" in data["reason"]
    html = ATTRIBUTION.render(Renderer(site_data), data)
    assert "claimtrace attribute" in html and 'id="grades"' not in html
    assert site_data.trace(demo_build.inputs("dev", "retrieved").claim_ids[0])["attribution"]["status"] == "missing"


def test_the_page_data_has_every_method_and_check(attributed):
    data = ATTRIBUTION.data(SiteData(attributed), None)
    assert data["status"] == "ok" and data["claims"] == CLAIMS
    assert [r["key"] for r in data["rows"]] == [*METHODS, "shuffled", "random", "exact"]
    by_key = {r["key"]: r for r in data["rows"]}
    assert by_key["occlusion"]["passed"]["successes"] == CLAIMS and by_key["lime"]["passed"]["successes"] == 0
    assert not by_key["shuffled"]["passes"]


def test_a_dev_claim_page_shows_each_methods_top_words(attributed):
    site_data = SiteData(attributed)
    claim_id = attributed.inputs("dev", "retrieved").claim_ids[0]
    box = site_data.trace(claim_id)["attribution"]
    assert box["status"] == "ok" and [r["key"] for r in box["rows"]] == ["exact", *METHODS]
    assert box["rows"][0]["top"] == box["rows"][1]["top"]  # occlusion is exact here
    html = CLAIM.render(Renderer(site_data), site_data.trace(claim_id), claim_id)
    assert 'id="attribution"' in html and "How every method does over the dev claims" in html
    assert site_data.trace("claim-752")["attribution"]["status"] in ("ok", "none")


def test_the_page_has_the_lstm_section_each_method_beside_its_grade(attributed):
    data = ATTRIBUTION.data(SiteData(attributed), None)
    lstm = data["lstm"]
    assert lstm["status"] == "ok" and lstm["claims"] == CLAIMS
    assert [(r["key"], r["applied"]) for r in lstm["rows"]] == [
        ("occlusion", True),
        ("integrated_gradients", True),
        ("kernel_shap", False),
        ("lime", False),
    ]
    by_key = {r["key"]: r for r in lstm["rows"]}
    grades = attributed.attribution_grades()["grades"]
    for key, row in by_key.items():  # the grade beside each is its grade on the Transformer
        assert row["passed"] == grades[key]["passed"] and row["passes"] == grades[key]["passes"]
    assert by_key["lime"]["cost"]["claims"] == 2 and by_key["occlusion"]["cost"]["claims"] == CLAIMS
    assert (
        by_key["kernel_shap"]["extra_cpu"] == pytest.approx(1.0 * CLAIMS) and by_key["kernel_shap"]["extra_wall"] == 12
    )
    assert by_key["occlusion"]["extra_cpu"] is None and by_key["lime"]["lstm_completeness"] is None
    # IG is occlusion reversed on every other claim: half the claims agree exactly
    assert lstm["agreement"]["spearman_at_least"]["successes"] >= CLAIMS // 2
    html = ATTRIBUTION.render(Renderer(SiteData(attributed)), data)
    section = html[html.index('<section id="lstm">') :]
    assert "What a grade on the Transformer promises for the LSTM" in section and "10,000 resamples" in section
    assert "KernelSHAP on every claim would add about 24 CPU s, 12 s on 2 processes (about 24 s in all)" in section


def test_a_dev_claim_page_shows_the_lstms_top_words_with_each_methods_grade(attributed):
    site_data = SiteData(attributed)
    claim_id = attributed.inputs("dev", "retrieved").claim_ids[1]
    words = site_data.trace(claim_id)["lstm"]["words"]
    record = attributed.attribution_claims("lstm")[claim_id]
    assert words["status"] == "ok" and [r["key"] for r in words["rows"]] == ["occlusion", "integrated_gradients"]
    assert [r["top"] for r in words["rows"]] == [record["top"]["occlusion"], record["top"]["integrated_gradients"]]
    assert words["rows"][0]["passed"] == attributed.attribution_grades()["grades"]["occlusion"]["passed"]
    html = CLAIM.render(Renderer(site_data), site_data.trace(claim_id), claim_id)
    box = html[html.index('id="lstm-words"') : html.index("</div>", html.index('id="lstm-words"'))]
    assert 'href="../attribution.html#lstm"' in box and "Occlusion by [PAD]</strong>" in box
    # 24 of 24 passed, but the Wilson interval of 24 claims reaches below 0.9: the method fails here
    assert "(on the Transformer: fails, 24 of 24 dev claims passed" in box
    test_id = next(iter(attributed.claims("test")))
    assert site_data.trace(test_id)["lstm"]["words"] is None  # attributed on dev claims only


def test_without_the_lstms_attribution_one_line_names_the_command(demo_build, attributed, tmp_path, data_dir):
    from claimtrace.web.views.attribution import LSTM_NOT_RUN

    claim_id = demo_build.inputs("dev", "retrieved").claim_ids[0]
    site_data = SiteData(demo_build)  # nothing attributed
    assert site_data.trace(claim_id)["lstm"]["words"] == {"status": "missing", "reason": LSTM_NOT_RUN}
    html = CLAIM.render(Renderer(site_data), site_data.trace(claim_id), claim_id)
    line = html[html.index('id="lstm-words"') : html.index("</p>", html.index('id="lstm-words"'))]
    assert "`claimtrace attribute` computes it" in line and "<li" not in line
    # a build attributed before the LSTM was: the Transformer's part shown, the LSTM's named
    root = tmp_path / "demo"
    shutil.copytree(demo_build.root, root)
    before = BuildReader(root, data_dir)
    write_attribution(before, _records(before, claims=3), lstm=False)
    site_data = SiteData(BuildReader(root, data_dir))
    data = ATTRIBUTION.data(site_data, None)
    assert data["status"] == "ok" and data["lstm"]["status"] == "missing"
    assert "claimtrace attribute" in data["lstm"]["reason"]
    assert "claimtrace attribute --workdir ." in data["lstm"]["reason"] and str(root) not in json.dumps(data)
    assert "Not computed yet for the LSTM" in ATTRIBUTION.render(Renderer(site_data), data)
    assert site_data.trace(claim_id)["lstm"]["words"]["reason"] == LSTM_NOT_RUN


@pytest.fixture(scope="module")
def attributed_server(attributed):
    with serving(create_app(site_data=SiteData(attributed))) as base:
        yield base


@pytest.fixture(scope="module")
def attributed_export(attributed, tmp_path_factory):
    from claimtrace.web.site import write_site

    out = tmp_path_factory.mktemp("attributed-site")
    write_site(None, out, splits=["dev"], site_data=SiteData(attributed), limit=2)
    return out


@pytest.mark.browser
@pytest.mark.parametrize("width", [1280, 390])
def test_the_grade_chart_is_drawn_to_scale_served_and_exported(browser, attributed_server, attributed_export, width):
    from tests.web.conftest import ARTIFACTS
    from tests.web.test_charts import check_whiskers

    page = browser.new_page(viewport={"width": width, "height": 900})
    problems = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    said = {}
    for kind, base in (("served", attributed_server + "/"), ("exported", attributed_export.as_uri() + "/")):
        page.goto(base + "attribution.html", wait_until="load")
        where = f"{kind} attribution page at {width} px"
        assert check_whiskers(page, "#intervals", where) == 7 * 4, where  # 4 methods, 3 checks; 4 panels
        said[kind] = page.locator("main").inner_text()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"attribution-{kind}-{width}.png"), full_page=True)
    assert said["served"] == said["exported"]  # the same words, served and exported
    assert "KernelSHAP" in said["served"] and "10,000 resamples, seed 2024" in said["served"]
    page.close()
    assert not problems, problems


@pytest.mark.browser
@pytest.mark.parametrize("width", [1280, 390])
def test_the_lstms_words_say_the_same_served_and_exported(
    browser, attributed, attributed_server, attributed_export, width
):
    """A dev claim page's LSTM words (and the /attribution page's LSTM section), served and
    exported: the same words, nothing wider than the page; screenshots kept."""
    from tests.web.conftest import ARTIFACTS

    claim_id = attributed.inputs("dev", "retrieved").claim_ids[0]
    page = browser.new_page(viewport={"width": width, "height": 900})
    problems = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    said = {}
    for kind, base in (("served", attributed_server + "/"), ("exported", attributed_export.as_uri() + "/")):
        page.goto(f"{base}claim/{claim_id}.html", wait_until="load")
        if kind == "exported":
            page.wait_for_selector("body[data-charts=ready]", timeout=30_000)
        words = page.locator("#lstm-words")
        said[kind] = page.locator("#lstm-says").inner_text() + "\n" + words.inner_text()
        assert words.bounding_box()["width"] <= width, f"{kind} at {width} px"
        ARTIFACTS.mkdir(exist_ok=True)
        words.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"claim-lstm-words-{kind}-{width}.png"))
        page.goto(base + "attribution.html#lstm", wait_until="load")
        said[kind] += "\n" + page.locator("#lstm").inner_text()
        page.locator("#lstm").screenshot(path=str(ARTIFACTS / f"attribution-lstm-{kind}-{width}.png"))
    assert said["served"] == said["exported"]
    assert "Occlusion by [PAD]:" in said["served"] and "(on the Transformer: " in said["served"]
    page.close()
    assert not problems, problems


@pytest.mark.browser
@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("which", ["attribution", "claim"])
def test_axe_finds_nothing_on_the_exported_attribution_pages(axe, attributed, attributed_export, which, width):
    claim_id = attributed.inputs("dev", "retrieved").claim_ids[0]
    path = attributed_export / ("attribution.html" if which == "attribution" else f"claim/{claim_id}.html")
    found = axe.violations(path.as_uri(), width)
    assert found == [], found
