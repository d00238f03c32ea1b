"""claimtrace.web.views.attribution: the page "Attribution methods, graded" (served and exported,
its whiskers measured in Chromium, axe clean) and a claim page's box of each method's top words,
from attribution files written here (the grading itself is tested in tests/evaluation/); without
them, the page says which command makes them."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from claimtrace import constants as C
from claimtrace.models.attribution import METHODS
from claimtrace.web.app import create_app
from claimtrace.web.pages import ATTRIBUTION
from claimtrace.web.render import Renderer
from claimtrace.web.tracer import Tracer
from claimtrace.workdir.reader import Build
from claimtrace.workdir.stages.attribution import _write, grade_records
from tests.web.conftest import serving

CLAIMS = 24


def _records(build: Build, claims: int | None = CLAIMS) -> list[dict]:
    """Made-up attributions of the first dev claims' real tokens (``None``: every dev claim):
    occlusion exact, IG a little off, KernelSHAP noisy, LIME all zero."""
    encoded = build.inputs("dev", "retrieved")
    pad = build.classifier().vocab.index[C.PAD]
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


@pytest.fixture(scope="module")
def attributed(demo_build, tmp_path_factory, data_dir) -> Build:
    root = tmp_path_factory.mktemp("attributed") / "demo"
    shutil.copytree(demo_build.root, root)
    build = Build(root, data_dir)
    records = _records(build)
    grades = {**grade_records(records), "wall_seconds": 12.0, "workers": 2}
    _write(build, records, grades, 2, complete=True)
    return Build(root, data_dir)


def test_without_the_command_the_page_says_how_to_produce_it(demo_build):
    tracer = Tracer(demo_build)
    data = ATTRIBUTION.data(tracer, None)
    assert data["status"] == "missing" and "claimtrace attribute" in data["reason"]
    html = ATTRIBUTION.render(Renderer(tracer), data)
    assert "claimtrace attribute" in html and 'id="grades"' not in html
    assert tracer.trace(demo_build.inputs("dev", "retrieved").claim_ids[0])["attribution"]["status"] == "missing"


def test_the_page_data_has_every_method_and_check(attributed):
    data = ATTRIBUTION.data(Tracer(attributed), None)
    assert data["status"] == "ok" and data["claims"] == CLAIMS
    assert [r["key"] for r in data["rows"]] == [*METHODS, "shuffled", "random", "exact"]
    by_key = {r["key"]: r for r in data["rows"]}
    assert by_key["occlusion"]["passed"]["successes"] == CLAIMS and by_key["lime"]["passed"]["successes"] == 0
    assert not by_key["shuffled"]["passes"]


def test_a_dev_claim_page_shows_each_methods_top_words(attributed):
    tracer = Tracer(attributed)
    claim_id = attributed.inputs("dev", "retrieved").claim_ids[0]
    box = tracer.trace(claim_id)["attribution"]
    assert box["status"] == "ok" and [r["key"] for r in box["rows"]] == ["exact", *METHODS]
    assert box["rows"][0]["top"] == box["rows"][1]["top"]  # occlusion is exact here
    html = Renderer(tracer).claim_page(tracer.trace(claim_id), "../")
    assert 'id="attribution"' in html and "How every method does over the dev claims" in html
    assert tracer.trace("claim-752")["attribution"]["status"] in ("ok", "none")


@pytest.fixture(scope="module")
def attributed_server(attributed):
    with serving(create_app(tracer=Tracer(attributed))) as base:
        yield base


@pytest.fixture(scope="module")
def attributed_export(attributed, tmp_path_factory):
    from claimtrace.web.site import write_site

    out = tmp_path_factory.mktemp("attributed-site")
    write_site(None, out, splits=["dev"], tracer=Tracer(attributed), limit=2)
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
def test_axe_finds_nothing_on_the_exported_attribution_page(browser, attributed_export, width):
    from tests.web.conftest import AXE, violations

    found = violations(browser, (attributed_export / "attribution.html").as_uri(), AXE.read_text("utf-8"), width)
    assert found == [], found
