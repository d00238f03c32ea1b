"""Every page says its point first: right under its h1, a ``<p class="lead">`` of at most 60
words, no sentence in it over 40, the same words served and exported. Measured on the demo build
for every page of the registry (claimtrace.web.pages.PAGES) that has a template, at every key the
export writes (a claim of each split, Explore per split, a run's compare page)."""

from __future__ import annotations

import html
import re

import pytest

from claimtrace.web.pages import PAGES
from claimtrace.web.site_data import SiteData

LEAD_WORDS = 60
SENTENCE_WORDS = 40

#: The lead: the first element after the h1 (Jinja's blank lines between them allowed).
_LEAD = re.compile(r"</h1>\s*<p class=\"lead\">(.*?)</p>", re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9“‘(])")

TEMPLATED = [page for page in PAGES if page.template is not None]


def lead_of(page_html: str) -> str | None:
    """A page's lead as text (tags dropped, entities read, spaces collapsed), or None."""
    found = _LEAD.search(page_html)
    if found is None:
        return None
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", found.group(1))).split()).replace(" ,", ",")


def words(text: str) -> int:
    return len(text.split())


def sentences(text: str) -> list[str]:
    return _SENTENCE_END.split(text)


def test_the_lead_reader():
    page = '<h1>T</h1>\n  \n  <p class="lead">One <strong>two</strong>, three. Four &amp; 5.</p><p>no</p>'
    assert lead_of(page) == "One two, three. Four & 5."
    assert sentences(lead_of(page)) == ["One two, three.", "Four & 5."]
    assert lead_of('<h1>T</h1><p class="meta">x</p><p class="lead">late</p>') is None


@pytest.fixture(scope="module")
def lead_site_data(demo_build, data_dir):
    """A site of its own with the course's baseline given: a dev run, so that the compare and
    class pages are written too."""
    from claimtrace.data import files as data

    site_data = SiteData(demo_build)
    site_data.runs.give_all([(str(data.course_file(data_dir, "baseline")), "course baseline")])
    return site_data


@pytest.fixture(scope="module")
def chosen(lead_site_data) -> dict[str, list[str]]:
    """The claims the export writes with ``limit=1``: each split's first."""
    return {split: list(lead_site_data.claims(split))[:1] for split in ("train", "dev", "test")}


@pytest.fixture(scope="module")
def exported(lead_site_data, tmp_path_factory):
    from claimtrace.web.site import write_site

    out = tmp_path_factory.mktemp("leads") / "site"
    write_site(None, out, site_data=lead_site_data, limit=1)
    return out


@pytest.fixture(scope="module")
def lead_client(lead_site_data):
    from fastapi.testclient import TestClient

    from claimtrace.web.app import create_app

    with TestClient(create_app(site_data=lead_site_data)) as client:
        yield client


@pytest.mark.parametrize("page", TEMPLATED, ids=lambda page: page.name)
def test_every_page_opens_with_a_short_plain_lead_the_same_served_and_exported(
    page, lead_site_data, chosen, lead_client, exported
):
    keys = page.export_keys(lead_site_data, chosen)
    assert keys, f"{page.name}: the export writes no such page"
    for key in keys:
        path = page.path(key)
        served = lead_client.get("/" + path)
        assert served.status_code == 200, path
        lead = lead_of(served.text)
        assert lead, f'{path}: no <p class="lead"> right under the h1'
        assert words(lead) <= LEAD_WORDS, f"{path}: a lead of {words(lead)} words: {lead}"
        long = [s for s in sentences(lead) if words(s) > SENTENCE_WORDS]
        assert not long, f"{path}: a sentence over {SENTENCE_WORDS} words: {long}"
        assert lead_of((exported / path).read_text(encoding="utf-8")) == lead, path
