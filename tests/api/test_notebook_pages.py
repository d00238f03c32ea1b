"""What the Python API's objects show in a notebook, in Chromium: the documents their frames
hold, axe-clean in the light and the dark theme, and a bar still drawn to its value."""

from __future__ import annotations

import html
import re

import pytest

import claimtrace
from claimtrace.api.build import Build
from claimtrace.data import files as data_layer

pytestmark = pytest.mark.browser


def _document(framed: str) -> str:
    """The HTML document a notebook output's frame holds."""
    return html.unescape(re.search(r'srcdoc="([^"]*)"', framed).group(1))


@pytest.fixture(scope="module")
def documents(demo_build, data_dir, tmp_path_factory) -> dict:
    build = Build(demo_build)
    outputs = {
        "claim": build.claim("claim-871")._repr_html_(),
        "typed": build.trace("Greenland is gaining ice")._repr_html_(),
        "scores": claimtrace.evaluate(data_layer.course_file(data_dir, "baseline"), data=data_dir)._repr_html_(),
        "build": build._repr_html_(),
    }
    folder = tmp_path_factory.mktemp("notebook-outputs")
    paths = {}
    for name, framed in outputs.items():
        paths[name] = folder / f"{name}.html"
        paths[name].write_text(_document(framed), encoding="utf-8")
    return paths


#: Each output in the light theme, the claim page (the longest) in the dark one too.
CHECKED = [("claim", "light"), ("claim", "dark"), ("typed", "light"), ("scores", "light"), ("build", "light")]


@pytest.mark.parametrize(("name", "scheme"), CHECKED)
def test_axe_finds_nothing_in_a_notebook_output(axe, documents, name, scheme):
    found = axe.violations(documents[name].as_uri(), 1280, scheme)
    assert found == [], found


def test_a_notebook_outputs_bars_are_drawn_to_scale_without_a_script(browser, documents):  # noqa: F811
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.goto(documents["claim"].as_uri())
        bars = page.eval_on_selector_all(
            ".bar[data-value]",
            """els => els.slice(0, 40).map(el => ({value: +el.dataset.value, scale: +el.dataset.scale,
                 box: el.getBoundingClientRect().width, fill: el.firstElementChild.getBoundingClientRect().width}))""",
        )
    finally:
        page.close()
    assert len(bars) >= 10
    for bar in bars:
        expected = min(abs(bar["value"]) / bar["scale"], 1.0) * bar["box"] / 2
        assert abs(bar["fill"] - expected) <= 1.0, bar
