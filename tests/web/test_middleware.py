"""What stands in front of every route (claimtrace.web.middleware; docs/web.md, "Security and
limits"): HEAD, security headers, the Host check, no absolute path shown, a damaged build answered
503, answers kept in a bounded cache."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from claimtrace.web.app import create_app
from claimtrace.web.site_data import SiteData
from claimtrace.workdir.reader import BuildReader

PAGES = ["/", "/index.html", "/claim/claim-752.html", "/explore/dev.html", "/live.html", "/live", "/explore"]


# --- input -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("route", ["/api/trace", "/live", "/live.html"])
def test_a_lone_surrogate_is_a_400_not_a_500(web_client, route):
    response = web_client.post(route, content=b'{"text": "\\ud800 sea"}', headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert "surrogate" in response.text


def test_a_number_of_5000_digits_is_a_400(web_client):
    body = b'{"text": 1' + b"0" * 5000 + b"}"
    response = web_client.post("/api/trace", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 400 and response.json()["status"] == 400


def test_json_nested_too_deep_is_a_400(web_client):
    response = web_client.post("/api/trace", content=b"[" * 50_000, headers={"content-type": "application/json"})
    assert response.status_code == 400


def test_an_encoded_surrogate_in_a_path_or_query_is_answered(web_client):
    assert web_client.get("/claim/%ED%A0%80.json").status_code == 404
    assert web_client.get("/api/trace?claim=%ED%A0%80").status_code == 404
    assert web_client.get("/live.json?text=%ED%A0%80%00").status_code == 200


# --- HTTP hygiene ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [*PAGES, "/index.json", "/api/build.json", "/static/app.js"])
def test_head_answers_wherever_get_does(web_client, path):
    head, get = web_client.head(path), web_client.get(path)
    assert head.status_code == get.status_code == 200, path
    assert head.content == b"" and head.headers["content-type"] == get.headers["content-type"]


@pytest.mark.parametrize("path", [*PAGES, "/api/build.json", "/static/style.css", "/no/such/page", "/claim/x.json"])
def test_every_response_has_the_security_headers(web_client, path):
    headers = web_client.get(path).headers
    csp = headers["content-security-policy"]
    assert "script-src 'self'" in csp and "'unsafe-inline'" not in csp.split("script-src")[1].split(";")[0]
    assert "frame-ancestors 'none'" in csp
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["x-frame-options"] == "DENY"
    assert headers["referrer-policy"] == "no-referrer"


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "127.0.0.1.evil.example", "10.0.0.1", ""])
def test_a_foreign_host_gets_400(web_client, host):
    for path in ("/", "/api/build.json"):
        response = web_client.get(path, headers={"host": host})
        assert response.status_code == 400, (host, path)
        assert "127.0.0.1" in response.text


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.1:8000", "localhost:1", "[::1]:8000", "LOCALHOST"])
def test_the_loopback_hosts_are_answered(web_client, host):
    assert web_client.get("/api/build.json", headers={"host": host}).status_code == 200


def test_build_json_shows_no_absolute_path(web_client, demo_site_data):
    text = web_client.get("/api/build.json").text
    root = str(demo_site_data.build.root.resolve())
    assert root not in text and str(demo_site_data.build.root) not in text
    assert '"workdir":"."' in text


# --- a damaged build -------------------------------------------------------------------------------


def test_a_damaged_build_file_is_a_503_naming_it(demo_build, tmp_path):
    work = tmp_path / "work"
    shutil.copytree(demo_build.root, work, copy_function=os.symlink)
    verdicts = work / "classifier" / "dev.json"
    content = verdicts.read_bytes()
    verdicts.unlink()
    verdicts.write_bytes(content[: len(content) // 2])
    with TestClient(create_app(site_data=SiteData(BuildReader(work, demo_build.data_dir)))) as client:
        page = client.get("/claim/claim-752.html")
        assert page.status_code == 503 and "classifier/dev.json" in page.text and "claimtrace build" in page.text
        data = client.get("/claim/claim-752.json")
        assert data.status_code == 503 and "classifier/dev.json" in data.json()["error"]
        info = client.get("/api/build.json").json()
        assert info["stages"]["classifier"]["status"] == "damaged"
        assert "classifier/dev.json" in info["stages"]["classifier"]["reason"]
        assert info["stages"]["retrieval"]["status"] == "ok"


# --- answers kept ----------------------------------------------------------------------------------


def test_a_page_already_served_is_answered_without_the_site_data(demo_site_data):
    """A walkthrough page, once served, is answered from its copy (under load it stays instant
    while new traces wait); an answer that is not a 200 is never kept."""
    app = create_app(site_data=SiteData(demo_site_data.build))
    with TestClient(app) as client:
        first = client.get("/claim/claim-752.json")
        assert client.get("/claim/claim-9999.json").status_code == 404
        app.state.site_data.trace = None  # any call to it would now fail
        again = client.get("/claim/claim-752.json")
        assert again.status_code == 200 and again.content == first.content
        assert again.headers["x-frame-options"] == "DENY"
        assert client.head("/claim/claim-752.json").content == b""


def test_the_answer_cache_is_bounded_in_entries_and_bytes():
    from claimtrace.web.middleware import AnswerCache

    cache = AnswerCache(entries=3, size=1600)
    for i in range(10):
        cache.put(f"/p{i}", [], b"x" * 90)
    assert len(cache) == 3 and cache.get("/p9") is not None and cache.get("/p0") is None
    cache.put("/big", [], b"x" * 1000)  # more than a sixteenth of the bytes: not kept
    assert cache.get("/big") is None and cache.total == 270


# --- every byte served is checked; every answer has the headers --------------------------------------


def _flip(path: Path, offset: int) -> None:
    """One byte of ``path`` changed in place (its size stays: only its content check sees it)."""
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.unlink()  # a copy of its own (the workdir's files may be links to the shared build)
    path.write_bytes(bytes(data))


def test_a_flipped_byte_in_the_passage_store_is_a_503_not_a_500(demo_build, tmp_path):
    work = tmp_path / "work"
    shutil.copytree(demo_build.root, work, copy_function=os.symlink)
    texts = work / "corpus" / "texts.bin"
    _flip(texts, texts.stat().st_size // 2)
    with TestClient(
        create_app(site_data=SiteData(BuildReader(work, demo_build.data_dir))), raise_server_exceptions=False
    ) as client:
        for path in ("/claim/claim-2214.html", "/claim/claim-752.json", "/live.json?text=glaciers"):
            answer = client.get(path)
            assert answer.status_code == 503, (path, answer.status_code, answer.text[:300])
            assert "corpus/texts.bin" in answer.text and "claimtrace build" in answer.text
            assert str(tmp_path) not in answer.text
            assert answer.headers["x-content-type-options"] == "nosniff"


def test_a_bug_in_a_route_is_a_500_page_with_the_headers(demo_site_data, monkeypatch):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug")

    app = create_app(site_data=demo_site_data)
    monkeypatch.setattr(app.state.site.renderer, "page", broken)
    with TestClient(app, raise_server_exceptions=False) as client:
        answer = client.get("/live?text=x")
        assert answer.status_code == 500 and answer.headers["content-type"].startswith("text/html")
        assert "Internal Server Error" not in answer.text and "ZeroDivisionError" in answer.text
        assert answer.headers["content-security-policy"].startswith("default-src 'self'")


@pytest.mark.parametrize("damage", ["truncate", "manifest"])
def test_row_predictions_over_a_damaged_file_are_a_503_without_machine_paths(demo_build, tmp_path, damage):
    work = tmp_path / "work"
    shutil.copytree(demo_build.root, work)
    if damage == "truncate":
        more = work / "classifier" / "more" / "test.json"
        more.write_bytes(more.read_bytes()[:1000])
    else:
        (work / "manifest.json").write_text("{garbled", encoding="utf-8")
    with TestClient(
        create_app(site_data=SiteData(BuildReader(work, demo_build.data_dir))), raise_server_exceptions=False
    ) as client:
        answer = client.get("/predictions/test/bm25+intended+notebook.json")
        assert answer.status_code == 503, (answer.status_code, answer.text[:300])
        assert str(tmp_path) not in answer.text and "claimtrace build" in answer.json()["error"]
        assert client.get("/predictions/test/no+such+row.json").status_code == 404


def test_typed_text_is_shown_isolated(web_client):
    """A right-to-left override in a typed claim cannot reorder the page around it."""
    page = web_client.get("/live", params={"text": "sea \u202etxet level"}).text
    assert "<bdi>“sea \u202etxet level”</bdi>" in page
