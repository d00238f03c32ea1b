"""The page registry (claimtrace.web.pages): every page answers at its file, its JSON twin and its
aliases, and the format is read off the address."""

from __future__ import annotations

import pytest

from claimtrace.web.pages import CLAIM, EXPLORE, PAGES, ROW_PREDICTIONS, WALKTHROUGH, Address, Asked, split_name


@pytest.mark.parametrize(
    "name, asked",
    [("claim-752.json", ("claim-752", "json")), ("claim-752.html", ("claim-752", "html")), ("dev", ("dev", "html"))],
)
def test_the_format_is_read_off_the_name(name, asked):
    assert split_name(name) == Asked(*asked)


def test_a_keyed_route_gives_the_key_and_its_parts():
    assert CLAIM.asked({"name": "claim-752.json"}) == Asked("claim-752", "json")
    assert EXPLORE.asked({"name": "train"}) == Asked("train", "html")
    row = ROW_PREDICTIONS.asked({"key0": "dev", "name": "bm25+notebook+alone.json"})
    assert row == Asked(("dev", "bm25+notebook+alone"), "json")
    assert ROW_PREDICTIONS.path(row.key) == "predictions/dev/bm25+notebook+alone.json"


def test_a_one_page_entry_answers_at_its_files_with_its_own_key():
    assert WALKTHROUGH.routes() == [
        Address("/", WALKTHROUGH.key, "html"),
        Address("/index.html", WALKTHROUGH.key, "html"),
        Address("/index.json", WALKTHROUGH.key, "json"),
    ]
    assert [page.formats for page in PAGES if page.template is None] == [("json",)] * 4


def test_every_exported_page_is_served_at_its_file_and_twin(web_client, demo_site_data):
    chosen = {"dev": ["claim-752"]}
    for page in PAGES:
        for key in page.export_keys(demo_site_data, chosen):
            for path, kind in ((page.path(key), page.formats[0]), (page.twin_path(key), "json")):
                if path is None:
                    continue
                response = web_client.get("/" + path)
                assert response.status_code == 200, path
                assert ("json" if kind == "json" else "html") in response.headers["content-type"], path
