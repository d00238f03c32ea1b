"""The content security policy per page: only the pages that call a visitor's LLM (the
evaluation page, the second opinion of a claim page and of the served live page's typed claim)
may connect beyond the site, to the known providers and the origins the server or the export
was told of; every other page keeps the site's own policy. Served as a header, exported as a ``<meta>``."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from claimtrace.errors import DataError
from claimtrace.web.app import create_app
from claimtrace.web.middleware import SECURITY_HEADERS
from claimtrace.web.policy import PROVIDER_ORIGINS, origin_of, policy
from claimtrace.web.site import write_site

LOCAL = "http://127.0.0.1:8080"
SITE_POLICY = SECURITY_HEADERS[0][1].decode()
LLM_PATHS = [
    "/evaluation",
    "/evaluation.html",
    "/walkthrough",
    "/walkthrough.html",
    "/claim/claim-752.html",
    "/claim/claim-871",
    "/live.html",
    "/live",
]
OTHER_PATHS = [
    "/",
    "/index.html",
    "/evaluation.json",
    "/ai-log.html",
    "/explore/dev.html",
    "/live.json",
    "/parity.html",
    "/compare/index.html",
    "/claim/claim-752.json",
    "/api/build.json",
    "/static/style.css",
    "/no/such/page",
]


@pytest.fixture(scope="module")
def told(demo_site_data):
    return TestClient(create_app(site_data=demo_site_data, llm_origins=(origin_of(LOCAL + "/v1"),)))


def _connect(csp: str) -> list[str]:
    found = re.search(r"connect-src ([^;]+)", csp)
    return found.group(1).split() if found else []


@pytest.mark.parametrize("path", LLM_PATHS)
def test_an_llm_page_may_reach_the_providers_and_the_origins_told(told, web_client, path):
    csp = told.get(path).headers["content-security-policy"]
    assert _connect(csp) == ["'self'", *PROVIDER_ORIGINS, LOCAL]
    assert csp.startswith(SITE_POLICY.removesuffix("; frame-ancestors 'none'")) and "frame-ancestors 'none'" in csp
    assert _connect(web_client.get(path).headers["content-security-policy"]) == ["'self'", *PROVIDER_ORIGINS]


@pytest.mark.parametrize("path", OTHER_PATHS)
def test_every_other_page_keeps_the_sites_policy(told, path):
    assert told.get(path).headers["content-security-policy"] == SITE_POLICY
    assert "connect-src" not in SITE_POLICY  # default-src 'self': this site only


def test_an_origin_is_an_http_urls_scheme_host_and_port():
    assert origin_of("http://127.0.0.1:8080/v1") == LOCAL
    assert origin_of("HTTPS://Example.org/x?y") == "https://example.org"
    for bad in ("ftp://example.org", "not a url", "http://"):
        with pytest.raises(DataError, match="--llm-origin"):
            origin_of(bad)


def test_the_export_carries_the_same_policy_as_a_meta(demo_site_data, tmp_path):
    write_site(None, tmp_path, site_data=demo_site_data, splits=["dev"], only=["claim-752"], llm_origins=(LOCAL,))
    meta = re.compile(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">')
    evaluation = meta.search((tmp_path / "evaluation.html").read_text()).group(1)
    assert evaluation == policy((LOCAL,), meta=True) and "frame-ancestors" not in evaluation
    claim = meta.search((tmp_path / "claim" / "claim-752.html").read_text()).group(1)
    assert claim == evaluation
    for name in ("parity.html", "ai-log.html", "explore/dev.html", "live.html"):
        other = meta.search((tmp_path / name).read_text()).group(1)
        assert other == policy(meta=True), name
    # the meta says what the header says, less what a meta cannot set and what default-src implies
    implied = ("script-src 'self'", "style-src 'self'", "frame-ancestors 'none'")
    header = [part for part in SITE_POLICY.split("; ") if part not in implied]
    assert policy(meta=True).split("; ") == header
