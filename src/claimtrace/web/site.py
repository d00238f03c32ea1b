"""``claimtrace site``: the server's pages written as static files, for any static host.

Layout of the output folder (the server's URLs, one file each; links are relative)::

    index.html, index.json              the landing page: what claimtrace is, the findings, the ways in
    walkthrough.html, walkthrough.json  the walkthrough of claim-752
    preview/index.png, preview/<id>.png the pages' preview pictures (og:image): the findings, each
                                        exported claim's verdict card
    claim/<id>.html, claim/<id>.json    every claim of the chosen splits
    explore/<split>.html, .json         every claim of a split, accuracies, confusions
    predictions/<split>/<row>.json      each scoreboard row's predictions (dev and test, whatever
                                        the splits chosen; the course's shape)
    live.html                           the model-input editor: claim-752, or any exported claim
                                        with ?claim=<id> (from live/<id>.js); typing a new claim
                                        needs the server
    live/<n>.js                         the editor data of claims claim-<100n> … claim-<100n+99>
                                        (a script, so file:// works; few files, not 1,535 tiny ones);
                                        each claim page draws its model input and charts from it
    predictions/<split>.json            the build's predictions in the course's shape (Explore's download)
    methods/<slug>.html, .json          each statement and design decision of the methods page
    static/tour/<picture>.png           the tour's pictures
    api/table.json, api/build.json      the classifier's table; what the build holds
    static/app.<hash>.js, static/style.<hash>.css   the site's script and style, named by content
    static/table.js                     the table once, as a script every page shares
    static/shared-<split>.js            what that split's claim pages repeat word for word (the
                                        build's prose, passages, batch neighbours), once
    404.html

Claim pages' JSON twins are written only with ``json=True`` (``claimtrace site --json``): they
are most of an export's size. A page written from a preview (``limit``) or without its twin keeps
no link to what was not written: such links are disabled and marked, and the page says how to
export everything. Every file is written through a temporary name and renamed.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from claimtrace.constants import SPLITS
from claimtrace.course import WALKTHROUGH_CLAIM
from claimtrace.errors import Missing
from claimtrace.lib.build_files import write_atomic
from claimtrace.web.encoding import json_for_script
from claimtrace.web.fragments import SharedParts, strip_markers
from claimtrace.web.pages import CLAIM, EXPLORE, PAGES, PREDICTIONS, ROW_PREDICTIONS, TABLE, WALKTHROUGH, Page
from claimtrace.web.previews import preview_name, verdict_card
from claimtrace.web.render import (
    ASSETS,
    SHARED_CLOSE,
    SHARED_OPEN,
    STATIC,
    STATIC_FILES,
    Renderer,
    live_bucket,
)
from claimtrace.web.site_data import SiteData
from claimtrace.web.views import tour
from claimtrace.web.views.llm import second_opinion_data
from claimtrace.workdir.reader import BuildReader


def _dump(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _script(name: str, key: str | None, value) -> str:
    """A script file that hands ``value`` to app.js (``window[name]``, or its entry ``key``):
    the static site's way to share data without fetch, which file:// pages cannot use."""
    data = str(json_for_script(value))
    if key is None:
        return f"window.{name} = {data};\n"
    return f"(window.{name} = window.{name} || {{}})[{json.dumps(key)}] = {data};\n"


def live_data(trace: dict) -> dict | None:
    """What the live editor needs of one claim (the reference the page compares edits with), and
    what the claim page's second opinion needs beyond it (its gold ids and the notebook's
    verdicts: the claim's text and label are here already)."""
    c = trace.get("classifier", {})
    if c.get("status") != "ok":
        return None
    head = trace["claim"]
    opinion = second_opinion_data(trace)
    return {
        "claim_id": head["id"],
        "label": head["label"],
        "claim_text": head["text"],
        "text": c["text"],
        # what the editor compares an edit with (not the PyTorch check: the claim's page shows it)
        "alone": {"logits": c["alone"]["logits"], "verdict": c["alone"]["verdict"]},
        # the second opinion's gold ids and the notebook's verdicts on retrieved and gold passages
        "opinion": None
        if opinion is None
        else [opinion["gold"], opinion["notebook"]["retrieved"], opinion["notebook"]["gold"]],
    }


#: Indentation and blank lines (a share of a claim page: docs/benchmarks.md, "The static export's size").
_LEADING_SPACE = re.compile(r"\n\s+")
#: A relative link to a site file: (quote, path).
_LINK = re.compile(r'href="((?:\.\./)*)((?:claim|live|explore|predictions)/[^"#?]+)"')
#: The opening tag of every page's main content (templates/base.html; the skip link's target).
MAIN_TAG = '<main id="main" tabindex="-1">'
#: The claim ids in Explore's data for app.js (web.render.claims_table).
_CLAIM_IDS = re.compile(r'"(claim-\d+)"')
NOT_EXPORTED_NOTE = (
    '<p class="export-note" role="note">This export leaves some pages out (a preview, or no JSON twins): '
    "their links are disabled and marked “not exported”. "
    "<code>claimtrace site --workdir DIR --out DIR --json</code> exports every page.</p>"
)


def disable_unexported(html: str, written: set[str]) -> str:
    """Disable every relative link of a page to a claim, live or explore file not in ``written``
    (paths relative to the site's top folder), and say so once at the top of the page.

    Parameters
    ----------
    html : str
        A rendered page.
    written : set of str
        Every file the export writes, e.g. ``"claim/claim-752.html"``.

    Returns
    -------
    str
        The page, each such ``<a href=...>`` turned into ``<a aria-disabled="true" class=...>``.
    """
    missing = False

    def replace(match: re.Match) -> str:
        nonlocal missing
        if match.group(2) in written:
            return match.group(0)
        missing = True
        return f'data-not-exported="{match.group(2)}" aria-disabled="true" title="not exported"'

    html = _LINK.sub(replace, html)
    # Explore's rows are drawn by app.js from data: it is told which claim pages exist
    if 'id="claims-table"' in html:
        exported = sorted(path[len("claim/") : -len(".html")] for path in written if path.startswith("claim/"))
        if any(f"claim/{claim_id}.html" not in written for claim_id in _CLAIM_IDS.findall(html)):
            missing = True
            html = html.replace('id="claims-table"', f'id="claims-table" data-exported="{" ".join(exported)}"', 1)
    if missing:
        # the same note on every page of such an export: a part the claim pages share
        html = html.replace(MAIN_TAG, MAIN_TAG + "\n" + SHARED_OPEN + NOT_EXPORTED_NOTE + SHARED_CLOSE, 1)
    return html


@dataclass
class _Export:
    """An export under way: where it writes, every claim, live, explore and predictions file it
    will write (a link to any other is disabled), the counts so far, and the live editor's data
    gathered from the claim pages (``live/<n>.js`` -> {claim id: editor data})."""

    out: Path
    site_data: SiteData
    renderer: Renderer
    planned: set[str]
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(("claims", "explore", "files", "bytes"), 0))
    editors: dict[str, dict[str, dict]] = field(default_factory=dict)

    def write(self, relative: str, text: str | bytes) -> None:
        write_atomic(self.out / relative, text)
        self.counts["files"] += 1
        self.counts["bytes"] += len(text if isinstance(text, bytes) else text.encode("utf-8"))

    def page_text(self, text: str, page: Page | None) -> str:
        """A page as the export writes it: its links to files not written disabled; the walkthrough,
        claim and Explore pages without their template indentation (they have no <pre> or
        <textarea>)."""
        text = disable_unexported(text, self.planned)
        return _LEADING_SPACE.sub("\n", text) if page in _COMPACT else text

    def put(self, relative: str, text: str, page: Page | None = None) -> None:
        """Write a file; a page with its every part in place (only claim pages share parts)."""
        self.write(relative, strip_markers(self.page_text(text, page)) if relative.endswith(".html") else text)

    def copy_static(self) -> None:
        """The site's script and style, under their hashed names (the ones the pages link to)."""
        (self.out / "static").mkdir(exist_ok=True)
        for name in STATIC_FILES:
            shutil.copyfile(STATIC / name, self.out / "static" / ASSETS[name])
            self.counts["files"] += 1
        pictures = tour.pictures()
        if pictures:  # the tour page's screenshots, when the site has them
            (self.out / "static" / "tour").mkdir(exist_ok=True)
        for name in pictures:
            shutil.copyfile(tour.TOUR_DIR / name, self.out / "static" / "tour" / name)
            self.counts["files"] += 1

    def put_page(self, page: Page, key) -> None:
        """One page of the registry and its JSON twin; nothing when the build lacks its stage."""
        try:
            data = page.data(self.site_data, key)
        except Missing:
            if page.template is not None:  # a page says what is missing; a download is left out
                raise
            return
        if page.template is None:
            self.put(page.path(key), _dump(data))
            return
        self.put(page.path(key), page.render(self.renderer, data, key), page)
        if page.twin is not None:
            self.put(page.twin_path(key), _dump(data))

    def put_table_script(self) -> None:
        """The table once, as a script every page shares (app.js loads it; no page embeds it)."""
        try:
            self.put("static/table.js", _script("claimtraceTable", None, TABLE.data(self.site_data, None)))
        except Missing:
            return

    def put_not_found(self) -> None:
        self.put("404.html", self.renderer.error_page("", 404, "Not found", "There is no page here.", _NOT_FOUND_HINT))

    def put_editors(self) -> None:
        """The live editor's data, a script per hundred claims."""
        for path, entries in sorted(self.editors.items()):
            self.put(path, "".join(_script("claimtraceLive", claim_id, data) for claim_id, data in entries.items()))


def write_site(
    build: BuildReader | None,
    out,
    splits: Iterable[str] = SPLITS,
    site_data: SiteData | None = None,
    echo: Callable[[str], None] | None = None,
    progress: bool = False,
    limit: int | None = None,
    json_twins: bool = False,
    shared_parts: bool = True,
    only: Iterable[str] | None = None,
    llm_origins: tuple[str, ...] = (),
) -> dict:
    """Write the site for a build (or a site data already made for one) into ``out``; return
    counts, bytes and seconds.

    ``limit``: write only the first ``limit`` claim pages of each split (a preview: links to the
    other claims are disabled). claim-752's page is always written (it is the walkthrough's).
    ``json_twins``: also write each claim page's JSON twin (``claim/<id>.json``).
    ``shared_parts``: what claim pages repeat goes once into ``static/shared-<split>.js``
    (web.fragments); ``False`` writes every page whole (the pages the browser rebuilds).
    ``only``: write only these claims' pages (and claim-752's), a preview like ``limit``.
    ``llm_origins``: provider origins the LLM pages' content security policy lets them call,
    beside the known providers' (``site --llm-origin``).
    """
    started = time.perf_counter()
    site_data = site_data or SiteData(build)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    splits = [s for s in SPLITS if s in set(splits)]
    claim_ids = {split: _chosen(list(site_data.claims(split)), limit, only) for split in splits}
    export = _Export(
        out,
        site_data,
        Renderer(site_data, mode="static", llm_origins=llm_origins),
        _planned(site_data, claim_ids, json_twins),
    )
    export.copy_static()
    for page in PAGES:
        if page is not CLAIM:  # per split, what the pages repeat written once (_write_claims)
            for key in page.export_keys(site_data, claim_ids):
                export.put_page(page, key)
    export.counts["explore"] = len(claim_ids)
    export.put_table_script()
    export.put_not_found()
    export.write(preview_name(None), site_data.preview(None))
    for split in splits:
        _write_claims(export, split, claim_ids[split], json_twins, progress, shared_parts)
        export.counts["claims"] += len(claim_ids[split])
        if echo:
            echo(f"{split}: {len(claim_ids[split])} claim pages")
    export.put_editors()
    return {**export.counts, "seconds": round(time.perf_counter() - started, 1), "out": str(out)}


_NOT_FOUND_HINT = "Claim pages are named claim/claim-N.html."
#: The pages written without their template indentation (docs/benchmarks.md, "The static export's size").
_COMPACT = (WALKTHROUGH, CLAIM, EXPLORE)


def _chosen(ids: list[str], limit: int | None, only: Iterable[str] | None = None) -> list[str]:
    """The claims a (possibly limited) export writes: claim-752 always, for the walkthrough."""
    if only is not None:
        wanted = set(only) | {WALKTHROUGH_CLAIM}
        ids = [claim_id for claim_id in ids if claim_id in wanted]
    if limit is None:
        return ids
    return ids[:limit] + ([WALKTHROUGH_CLAIM] if WALKTHROUGH_CLAIM in ids[limit:] else [])


def _planned(site_data: SiteData, claim_ids: dict[str, list[str]], json_twins: bool) -> set[str]:
    """Every claim, live, explore and predictions file an export will write (for disabling
    other links)."""
    paths = {live_bucket(claim_id) for ids in claim_ids.values() for claim_id in ids}
    for page in (EXPLORE, PREDICTIONS, ROW_PREDICTIONS, CLAIM):
        for key in page.export_keys(site_data, claim_ids):
            paths.add(page.path(key))
            if page.twin is not None and (page is not CLAIM or json_twins):
                paths.add(page.twin_path(key))
    return paths


#: Where a claim page loads its scripts; the split's shared parts go just before app.js.
_APP_SCRIPT = f'<script src="../static/{ASSETS["app.js"]}"></script>'


def _write_claims(export: _Export, split: str, ids: list[str], json_twins: bool, progress: bool, shared: bool) -> None:
    """One split's claim pages and their JSON twins if asked; their editor data go to the
    export's ``editors``.

    Every page of the split is rendered first, so that what several pages repeat is known before
    any is written: those parts go once into ``static/shared-<split>.js`` (web.fragments);
    ``shared`` False writes every page whole."""
    bar = tqdm(total=2 * len(ids), desc=f"site {split}", unit="page", disable=None) if progress else None
    pages: dict[str, str] = {}
    parts = SharedParts()
    for claim_id in ids:
        result = CLAIM.data(export.site_data, claim_id)
        relative = CLAIM.path(claim_id)
        pages[relative] = export.page_text(CLAIM.render(export.renderer, result, claim_id), CLAIM)
        parts.count(pages[relative])
        editor = live_data(result)
        if editor is not None:
            export.editors.setdefault(live_bucket(claim_id), {})[claim_id] = editor
        if json_twins:
            export.write(CLAIM.twin_path(claim_id), _dump(result))
        export.write(preview_name(claim_id), verdict_card(result))
        if bar is not None:
            bar.update(1)
    script = f"static/shared-{split}.js"
    for relative, html in pages.items():
        html, uses_shared = parts.page(html) if shared else (strip_markers(html), False)
        if uses_shared:
            html = html.replace(_APP_SCRIPT, f'<script src="../{script}"></script>\n' + _APP_SCRIPT, 1)
        export.write(relative, html)
        if bar is not None:
            bar.update(1)
    if parts.nodes:
        export.write(script, parts.script())
    if bar is not None:
        bar.close()
