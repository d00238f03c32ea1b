"""The static export (claimtrace.web.site): every page with its JSON alongside, claim pages rebuilt
from shared parts equal to whole pages, its size, and every row's predictions."""

from __future__ import annotations

import json
import re

from claimtrace.constants import SPLITS
from claimtrace.course import NOTEBOOK_URL, WALKTHROUGH_CLAIM
from claimtrace.evaluation.scoreboard import scoreboard_rows
from claimtrace.web.render import ASSETS


def test_site_writes_every_rows_predictions(demo_site_data, tmp_path):
    from claimtrace.web.site import write_site

    out = tmp_path / "site"
    write_site(None, out, site_data=demo_site_data, splits=("test",), limit=0)
    written = sorted(p.name for p in (out / "predictions" / "test").iterdir())
    assert written == sorted(f"{r.name}.json" for r in scoreboard_rows() if r.file_row == r)
    page = (out / "explore" / "test.html").read_text(encoding="utf-8")
    assert 'href="../predictions/test/bm25+intended+notebook.json"' in page
    # the alone row of a model that computes both protocols at once links to its notebook row's file
    assert (
        'href="../predictions/test/bm25+lstm+notebook.json" type="application/json" download="test-bm25+lstm+alone.json"'
        in page
    )


# --- the static site ----------------------------------------------------------------------------


def test_static_site_has_every_page_with_json_alongside(tmp_path, demo_site_data):
    from claimtrace.web.site import write_site

    out = tmp_path / "site"
    result = write_site(None, out, site_data=demo_site_data, splits=("dev",), limit=2, json_twins=True)
    assert result["claims"] == 2 and result["explore"] == 1  # claim-752 is the first dev claim
    for name in (
        "index.html",
        "index.json",
        "walkthrough.html",
        "walkthrough.json",
        "preview/index.png",
        f"preview/{WALKTHROUGH_CLAIM}.png",
        "live.html",
        "404.html",
        "api/table.json",
        "api/build.json",
        "explore/dev.html",
        "explore/dev.json",
        f"static/{ASSETS['app.js']}",
        f"static/{ASSETS['style.css']}",
        "static/table.js",
        "live/7.js",
        f"claim/{WALKTHROUGH_CLAIM}.html",
        f"claim/{WALKTHROUGH_CLAIM}.json",
        "claim/claim-375.json",
    ):
        assert (out / name).is_file(), name
    assert json.loads((out / "walkthrough.json").read_text()) == json.loads(
        json.dumps(demo_site_data.trace(WALKTHROUGH_CLAIM))
    )
    assert json.loads((out / "index.json").read_text()) == json.loads(json.dumps(demo_site_data.landing()))
    live = (out / "live.html").read_text()
    # the table is shared (static/table.js), not embedded in a page
    assert 'id="table-data"' not in live and 'data-mode="static"' in live and "needs the server" in live
    # every relative link resolves to a written file, except pages this preview chose not to write
    not_written = re.compile(r"(claim/claim-\d+\.(html|json)|explore/(train|test)\.(html|json))$")
    for page in (
        out / "index.html",
        out / "walkthrough.html",
        out / "live.html",
        out / "explore" / "dev.html",
        out / "claim" / f"{WALKTHROUGH_CLAIM}.html",
    ):
        for link in re.findall(r'(?:href|src)="([^"#?]+)', page.read_text()):
            if link.startswith("data:") or link == NOTEBOOK_URL:  # the original notebook, cited by chips
                continue
            target = (page.parent / link).resolve()
            assert target.is_file(), (page.name, link)  # links to pages not written are disabled
        assert all(not_written.search(p) for p in re.findall(r'data-not-exported="([^"]+)"', page.read_text()))


def _shared_parts(out, split: str) -> dict:
    script = (out / "static" / f"shared-{split}.js").read_text()
    prefix = "window.claimtraceShared = "
    assert script.startswith(prefix) and script.endswith(";\n")
    return json.loads(script[len(prefix) : -2])


def _as_browser_builds_it(nodes: list, parts: dict) -> list:
    """A page's nodes with each ``<template data-shared>`` replaced by its parts, as app.js does;
    neighbouring texts joined (a parser makes one text of them)."""
    out: list = []
    for node in nodes:
        if isinstance(node, list) and node[0] == "template" and "data-shared" in node[1]:
            spliced = [n for key in node[1]["data-shared"].split() for n in _as_browser_builds_it(parts[key], parts)]
        elif isinstance(node, list):
            spliced = [node[:2] + _as_browser_builds_it(node[2:], parts)]
        else:
            spliced = [node]
        for item in spliced:
            if isinstance(item, str) and out and isinstance(out[-1], str):
                out[-1] += item
            else:
                out.append(item)
    return out


def test_static_claim_pages_rebuilt_from_shared_parts_equal_whole_pages(tmp_path, demo_site_data):
    """Every claim page of an export that shares parts, once its parts are put back, is node for
    node the page written whole (the same text, elements and attributes, in the same places)."""
    from claimtrace.web.fragments import html_to_nodes
    from claimtrace.web.site import write_site

    shared, whole = tmp_path / "shared", tmp_path / "whole"
    write_site(None, shared, site_data=demo_site_data, limit=12)
    write_site(None, whole, site_data=demo_site_data, limit=12, shared_parts=False)
    assert not list((whole / "static").glob("shared-*.js"))
    for split in SPLITS:
        parts = _shared_parts(shared, split)
        assert parts, split
        script = f'<script src="../static/shared-{split}.js"></script>\n'
        for claim_id in demo_site_data.claims(split):
            page = shared / "claim" / f"{claim_id}.html"
            if not page.exists():
                continue
            text = page.read_text()
            assert script in text and "<!--shared" not in text
            rebuilt = _as_browser_builds_it(html_to_nodes(text.replace(script, "")), parts)
            assert rebuilt == html_to_nodes((whole / "claim" / f"{claim_id}.html").read_text()), claim_id
    # the pages that do not share parts carry no marks
    for name in ("index.html", "live.html", "explore/dev.html"):
        assert "<!--shared" not in (shared / name).read_text() and "data-shared" not in (shared / name).read_text()


#: The target for the whole static export, `du -sh` of the folder (MiB), and why it is what it is:
#: docs/benchmarks.md, "The static export's size".
EXPORT_TARGET_MIB = 54


#: Claims in the course's three splits, every one a page of the full export.
COURSE_CLAIMS = 1535


def test_full_static_export_stays_within_its_size_target(tmp_path, demo_site_data):
    """A `--limit 100` export (300 claim pages), projected to the full export: what every claim
    adds (its page and its preview picture, each rounded up to 4 KiB disk blocks as `du` counts
    them, and its share of the split's shared parts and of the live/ scripts) times 1,535, plus
    every other file (Explore, predictions, the table, once each). The projection is a little
    above the full export's own size (parts shared by 100 pages of a split save less than by all
    of them, docs/benchmarks.md); it must stay under EXPORT_TARGET_MIB."""
    from claimtrace.web.site import write_site

    out = tmp_path / "site"
    write_site(None, out, site_data=demo_site_data, limit=100)

    def disk(path) -> int:
        return -(-path.stat().st_size // 4096) * 4096

    files = [p for p in out.rglob("*") if p.is_file()]
    pages = [p for p in files if p.parent.name == "claim" and p.suffix == ".html"]
    per_claim_data = [p for p in files if p.parent.name == "live" or p.name.startswith("shared-")]
    previews = [p for p in files if p.parent.name == "preview" and p.name != "index.png"]  # a card per claim
    others = [p for p in files if p not in set(pages) | set(per_claim_data) | set(previews)]
    per_claim = (
        sum(map(disk, pages)) + sum(map(disk, previews)) + sum(p.stat().st_size for p in per_claim_data)
    ) / len(pages)
    projected_mib = (sum(map(disk, others)) + COURSE_CLAIMS * per_claim) / 2**20
    assert len(pages) == len(previews) == 300
    assert projected_mib <= EXPORT_TARGET_MIB, f"the full export would be about {projected_mib:.1f} MiB"
    # a claim page's own bytes (docs/benchmarks.md, "The static export's size")
    assert sum(p.stat().st_size for p in pages) / len(pages) <= 22_000
