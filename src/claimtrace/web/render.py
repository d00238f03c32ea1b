"""HTML for every page, from the same dicts the JSON routes return (shared by the server and the
static site writer).

Links are relative and end in ``.html`` so that the same pages work from ``claimtrace serve`` and
from any static host: ``root`` is the way back to the site's top folder from the page's own
folder (``""`` or ``"../"``).
"""

from __future__ import annotations

import hashlib
import math
import unicodedata
from pathlib import Path
from typing import Any

from jinja2 import BytecodeCache, Environment, FileSystemLoader, StrictUndefined, pass_context
from markupsafe import Markup, escape

from claimtrace import constants, course
from claimtrace.course import WALKTHROUGH_CLAIM
from claimtrace.lib.lru import LRU
from claimtrace.pipeline.preprocess import stem
from claimtrace.web import pictures
from claimtrace.web.encoding import json_for_script
from claimtrace.web.policy import policy
from claimtrace.web.previews import preview_name
from claimtrace.web.seed_chart import seed_chart
from claimtrace.web.site_data import SiteData
from claimtrace.web.training_chart import training_chart
from claimtrace.web.typed_claims import MAX_TEXT_CHARS
from claimtrace.web.views.llm import page_protocol, passage_texts, second_opinion_data

TEMPLATES = Path(__file__).resolve().parent / "templates"
STATIC = Path(__file__).resolve().parent / "static"

#: The LLM pages' scripts: linked by the evaluation and audit log pages, loaded by a claim page
#: or the live page only when its second opinion is there (the claim pages are most of a static
#: export). The first, the provider settings' dialog, is all the header's "LLM settings" button
#: loads on another page, and only once it is used.
LLM_SCRIPTS = (
    "app-llm-settings.js",
    "app-llm.js",
    "app-llm-score.js",
    "app-llm-page.js",
    "app-llm-log.js",
    "app-llm-run.js",
)


#: The site's own static files, each also under a name carrying its content's hash
#: (``app.<hash>.js``): pages link to those, which a browser may keep for a year; a new version
#: has a new name.
STATIC_FILES = (
    "theme.js",
    "app-core.js",
    "app-table.js",
    "app-charts.js",
    "app-editor.js",
    "app-explore.js",
    "app-forms.js",
    "app-sweep.js",
    "app-tour.js",
    *LLM_SCRIPTS,
    "app.js",
    "style.css",
    "favicon.svg",
)


def _hashed(name: str) -> str:
    digest = hashlib.sha256((STATIC / name).read_bytes()).hexdigest()[:12]
    stem, ext = name.rsplit(".", 1)
    return f"{stem}.{digest}.{ext}"


#: ``{"app.js": "app.<hash>.js", ...}``
ASSETS = {name: _hashed(name) for name in STATIC_FILES}


def inline_static(name: str) -> Markup:
    """One of the site's static files as text, for a page that carries its style inside it (a
    notebook's output, ``Renderer(mode="notebook")``): the site's own file, never a copy."""
    if name not in STATIC_FILES:
        raise KeyError(name)
    return Markup((STATIC / name).read_text(encoding="utf-8"))


def _num(value, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return f"{value:.{digits}f}"


def _signed(value, digits: int = 4) -> str:
    return "—" if value is None else f"{value:+.{digits}f}"


def _pct(value, digits: int = 1) -> str:
    return "—" if value is None else f"{100 * value:.{digits}f}%"


def _commas(value) -> str:
    return "—" if value is None else f"{value:,}"


def _sci(value) -> str:
    return "—" if value is None else f"{value:.1e}"


#: Quotation marks that may already open or close a text.
_OPENING, _CLOSING = "\"“‘'«„", "\"”’'»“"


def _quoted(text: str) -> str:
    """A text in “curly quotes”, unless it is already quoted from end to end (a passage that
    is itself a quotation): never “"…"”; a text that opens a quotation and never closes it gets
    only the closing mark, never a doubled opening one."""
    stripped = text.strip()
    if len(stripped) > 1 and stripped[0] in _OPENING and any(ch in _CLOSING for ch in stripped[-2:]):
        return stripped
    if len(stripped) > 1 and stripped[0] in _OPENING and not any(ch in _CLOSING for ch in stripped[1:]):
        return f"{stripped}”"  # a quotation opened and never closed (claim-871): not ““…”
    return f"“{stripped}”"


def _visible(text: str) -> Markup:
    """A token with its invisible characters (soft hyphen, zero-width space, joiners, BOM,
    bidi marks: Unicode categories Cf, Cc, Co, Cn) shown as marked code points, so that a token
    struck through as "not alphabetic" shows why."""
    out = []
    for ch in text:
        if unicodedata.category(ch) in ("Cf", "Cc", "Co", "Cn"):
            name = unicodedata.name(ch, "unnamed character").lower()
            out.append(Markup('<span class="invisible" title="{}">U+{:04X}</span>').format(name, ord(ch)))
        else:
            out.append(escape(ch))
    return Markup("").join(out)


def _bar(value: float, scale: float) -> Markup:
    """A diverging bar drawn to scale: zero in the middle, ``scale`` = half the bar's width, so
    the fill is ``|value| / scale`` of a half, on the value's side of zero. A value beyond the
    scale is drawn full and marked clipped (the page prints every value beside its bar); a tiny
    value is drawn as tiny as it is. ``data-value`` and ``data-scale`` let a test measure it."""
    if value is None or not scale:
        return Markup('<span class="bar"></span>')
    share = abs(value) / scale
    clipped = share > 1.0
    width = min(share, 1.0) * 50
    side = "pos" if value >= 0 else "neg"
    extra = " clipped" if clipped else ""
    return Markup(
        f'<span class="bar" data-value="{value!r}" data-scale="{scale!r}">'
        f'<span class="fill {side}{extra}" style="width:{width:.4f}%"></span></span>'
        + ('<small class="off">off scale</small>' if clipped else "")
    )


@pass_context
def _cite(context, source: str) -> Markup:
    """A course figure's source as links a reader can open: a step of the notebook (``notebook.md
    §N``) to that step on the methods page and to the notebook's cells on GitHub, named in the
    link's text; any other source as plain text."""
    step = course.cited_step(source)
    if step is None:
        return escape(source)
    root = context.get("root", "")
    return Markup(
        '<a class="cite" href="{}methods.html#{}">{}</a> <a class="cite-cell" href="{}" rel="external">'
        "(notebook {})</a>"
    ).format(root, step.anchor, source, course.NOTEBOOK_URL, step.cells_shown)


def stems_of_stems(claim_tags, passage_tags) -> dict[str, str]:
    """The passage tags that are a claim tag stemmed once more (the "stems of stems" quirk:
    the tagging vectorizer preprocesses what was already preprocessed, ``diseas -> disea``), so
    the two never count as shared: ``{passage tag: claim tag}``."""
    again = {stem(tag): tag for tag in claim_tags}
    return {tag: again[tag] for tag in passage_tags if tag in again and again[tag] != tag and tag not in claim_tags}


#: The columns of Explore's claims table as app.js receives them (one array per claim).
CLAIM_FIELDS = (
    "position",
    "id",
    "text",
    "label",
    "gold-alone",
    "gold-notebook",
    "retrieved-alone",
    "retrieved-notebook",
    "passed",
    "fallback",
    "f",
    "found",
)


#: Claims drawn at a time in Explore's table (app.js reads the page size from the page).
CLAIMS_PAGE = 100


def claims_table(explore: dict) -> dict:
    """Explore's claims as compact rows for app.js, which draws the table a page of rows at a
    time (train's 1,228 rows written as HTML made a heavy page: docs/benchmarks.md, "The site"): labels
    and verdicts as indices into ``labels``, F to 6 decimals."""
    index = {label: i for i, label in enumerate(constants.LABELS)}
    rows = []
    for row in explore["claims"]:
        verdicts = []
        for source in ("gold", "retrieved"):
            for protocol in constants.PROTOCOLS:
                got = row.get(source)  # before the classifier stage, "retrieved" is the passages' count
                verdicts.append(index[got[protocol]] if isinstance(got, dict) else None)
        rows.append(
            [
                row["position"],
                row["id"],
                row["text"],
                index.get(row["label"]) if row["label"] else None,
                *verdicts,
                row.get("passed"),
                None if row.get("fallback") is None else int(row["fallback"]),
                None if row.get("F") is None else round(row["F"], 6),
                None if row.get("found") is None else int(row["found"]),
            ]
        )
    runs = [{"name": r["name"], "digest": r["digest"], "right": r["right"]} for r in explore.get("runs", [])]
    return {"fields": CLAIM_FIELDS, "labels": list(constants.LABELS), "page": CLAIMS_PAGE, "rows": rows, "runs": runs}


#: Around a part of a static page that many pages repeat word for word (``{% filter shared %}``):
#: the site writer keeps one copy in a shared script and leaves a placeholder (web.fragments).
SHARED_OPEN, SHARED_CLOSE = "<!--shared-->", "<!--/shared-->"


@pass_context
def _shared(context, html: Markup) -> Markup:
    """Mark a rendered part as shareable between static pages; the server's pages are unchanged.
    A part inside a shared part is shared with it (its own marks are dropped: parts never nest)."""
    if context.get("mode") != "static":
        return html
    inner = str(html).replace(SHARED_OPEN, "").replace(SHARED_CLOSE, "")
    return Markup(SHARED_OPEN + inner + SHARED_CLOSE)


class CompiledTemplates(BytecodeCache):
    """The templates' compiled code, shared by every renderer of the process. Each renderer keeps
    an environment of its own (its loader can be changed without touching the others'), and
    each would otherwise compile again every template it draws: a server, a static export and a
    notebook's renderer are made per use. Jinja keys the code on the template's name and a
    checksum of its source, so an edited template is compiled anew."""

    def __init__(self, entries: int):
        self.code: LRU[str, bytes] = LRU(entries)

    @property
    def entries(self) -> int:
        return self.code.entries

    def load_bytecode(self, bucket) -> None:
        code = self.code.get(bucket.key)
        if code is not None:
            bucket.bytecode_from_string(code)

    def dump_bytecode(self, bucket) -> None:
        self.code.put(bucket.key, bucket.bytecode_to_string())


#: The process's compiled templates, bounded well above the templates folder's files.
COMPILED_TEMPLATES = CompiledTemplates(entries=256)


def make_env() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        bytecode_cache=COMPILED_TEMPLATES,
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=False,
        lstrip_blocks=True,
    )
    env.filters.update(
        num=_num,
        signed=_signed,
        pct=_pct,
        commas=_commas,
        sci=_sci,
        script_json=json_for_script,
        quoted=_quoted,
        visible=_visible,
        shared=_shared,
        cite=_cite,
    )
    env.globals.update(
        live_bucket=live_bucket,
        bar=_bar,
        asset=ASSETS.__getitem__,
        inline_static=inline_static,
        claims_table=claims_table,
        stems_of_stems=stems_of_stems,
        second_opinion=second_opinion_data,
        LLM_SCRIPTS=LLM_SCRIPTS,
        llm_protocol=page_protocol,
        pictures=pictures,
        seed_chart=seed_chart,
        training_chart=training_chart,
        CLAIMS_PAGE=CLAIMS_PAGE,
        C=constants,
        COURSE=course,
        LABELS=constants.LABELS,
        SPLITS=constants.SPLITS,
        WALKTHROUGH_CLAIM=WALKTHROUGH_CLAIM,
        MAX_TEXT_CHARS=MAX_TEXT_CHARS,
    )
    return env


#: What a page is, for a search engine's or a shared link's preview (its meta description): the
#: site's, or a page's own by its name in web.pages.PAGES, formatted with its data as its title is.
SITE_DESCRIPTION = (
    "claimtrace re-runs the 2024 COMP90042 climate fact-checking notebook exactly, quirks included, "
    "and shows why each claim got its passages and its verdict."
)
_CLAIM_DESCRIPTION = (
    "{data[claim][id]} through every stage of the notebook, and why it got its verdict: {data[claim][text]}"
)
DESCRIPTIONS = {
    "walkthrough": _CLAIM_DESCRIPTION,
    "claim": _CLAIM_DESCRIPTION,
    "explore": "Every {data[split]} claim of the course through the notebook’s pipeline: its passages, its verdicts "
    "under both protocols, what each quirk costs.",
    "methods-document": "{data[summary]}",
    "live": "Type a climate claim and trace it through the notebook’s pipeline, or edit the model’s input and see "
    "the verdict recomputed in your browser.",
}


def preview_of(data: Any) -> tuple[str, str]:
    """A page's preview picture (``og:image``) and its alt text: a course claim's verdict card for
    a page drawing one claim's trace, else the site's card of the landing page's findings."""
    claim = data.get("claim") if isinstance(data, dict) else None
    if isinstance(claim, dict) and claim.get("kind") == "claim" and claim.get("id"):
        return preview_name(claim["id"]), f"{claim['id']}’s verdict card"
    return preview_name(None), "The notebook’s findings over dev, each beside its pipeline’s, with 95% intervals"


#: Claims per live/<n>.js file of the static site (by the number in the claim id); app.js uses
#: the same number.
LIVE_BUCKET = 100


def live_bucket(claim_id: str) -> str:
    """The static site's script holding a claim's editor data (what its live page and its claim
    page's charts start from): ``live/<n // 100>.js`` for ``claim-<n>``."""
    return f"live/{int(claim_id.rsplit('-', 1)[1]) // LIVE_BUCKET}.js"


def root_for(path: str) -> str:
    """``"../" * depth`` for a URL path (``/`` and ``/live`` -> ``""``, ``/claim/x`` -> ``"../"``)."""
    depth = max(0, path.count("/") - 1)
    return "../" * depth


# -- what a page's template reads beside its data (web.pages.Page.context) ---------------------------


def claim_context(renderer: Renderer, trace: dict, run=None) -> dict:
    """A claim page's neighbours in its file (``nav``) and its "your system" boxes
    (``run_boxes``). With ``run`` (a server's ``?run=``), that run's box; a static page holds the
    box of every run the export was given, hidden until its address names the run
    (``?run=<digest>``), so that both pages read the same without one."""
    head = trace["claim"]
    runs = renderer.site_data.runs
    chosen = [run] if run is not None else (runs.given() if renderer.mode == "static" else [])
    boxes = [box for box in (runs.box(r, head["id"]) for r in chosen) if box is not None]
    ids = list(renderer.site_data.claims(head["split"]))
    i = ids.index(head["id"])
    nav = {"prev": ids[i - 1] if i > 0 else None, "next": ids[i + 1] if i + 1 < len(ids) else None, "count": len(ids)}
    return {"nav": nav, "run_boxes": boxes}


def evaluation_context(renderer: Renderer, data: dict) -> dict:
    """The texts of the passages the evaluation's claims send a visitor's LLM, read once per split."""
    build = renderer.site_data.build
    return {"passages": build.once(("evaluation-passages", data["split"]), lambda: passage_texts(build, data))}


class Renderer:
    """Renders the site's pages from a :class:`SiteData`. ``mode``: ``"server"``, ``"static"`` or
    ``"notebook"`` (a page as a notebook's output: style inlined, no site header, script or form;
    :mod:`claimtrace.web.notebook`)."""

    #: Rendered claim and Explore pages kept (a trace never changes once computed: Page.kept).
    PAGE_CACHE = 64  # the server keeps whole answers (web.app.Guard); this serves the static export

    #: The pages that call a visitor's LLM from the browser (their policy may connect to it).
    LLM_PAGES = frozenset({"evaluation", "claim"})

    def __init__(self, site_data: SiteData, mode: str = "server", llm_origins: tuple[str, ...] = ()):
        self.site_data = site_data
        self.mode = mode
        self.llm_origins = tuple(llm_origins)
        self.env = make_env()
        self._pages: LRU[tuple, str] = LRU(self.PAGE_CACHE)

    def _cached(self, key: tuple, make) -> str:
        return self._pages.get_or_make(key, make)

    def _render(self, template: str, root: str, **context) -> str:
        # An exported page carries its content security policy as a <meta>: no header there.
        page = context.get("page")
        # Markup: the policy is the site's own text (no quote to escape inside content="...").
        csp = Markup(policy(self.llm_origins if page in self.LLM_PAGES else None, meta=True))
        preview, alt = preview_of(None)
        context = {"description": SITE_DESCRIPTION, "preview": preview, "preview_alt": alt, **context}
        return self.env.get_template(template).render(root=root, mode=self.mode, csp=csp, **context)

    def page(self, page, data: Any, root: str, **given) -> str:
        """Any page of the registry (:class:`~claimtrace.web.pages.Page`) drawing ``data``: its
        template reads the data under the page's ``data_name``, beside its title, its section and
        what its ``context`` makes from the data and what the route ``given`` (a claim page's
        ``run``, a live page's ``text`` and ``error``). A ``kept`` page is rendered once per data,
        address depth and run boxes shown (a trace or an Explore never changes once computed)."""
        context = page.context(self, data, **given) if page.context is not None else given
        title = page.title.format(data=data)
        preview, alt = preview_of(data)
        own = DESCRIPTIONS.get(page.name)
        described = own.format(data=data) if own and data is not None else SITE_DESCRIPTION
        context = {**context, "description": described, "preview": preview, "preview_alt": alt}

        def make() -> str:
            return self._render(
                page.template, root, page=page.section or page.name, title=title, **{page.data_name: data}, **context
            )

        if not page.kept:
            return make()
        boxes = tuple(box["digest"] for box in context.get("run_boxes", ()))
        return self._cached((page.template, title, root, id(data), boxes), make)

    def view(self, template: str, title: str, **context) -> str:
        """A template that is no page of the registry, in the site's frame (a notebook's own
        views: a file's scores, a preprocessed text)."""
        return self._render(template, "", page="notebook", title=title, **context)

    def computing_page(self, root: str, split: str, progress: dict) -> str:
        return self._render(
            "computing.html",
            root,
            split=split,
            progress=progress,
            page="explore",
            title=f"Explore {split}: being computed",
        )

    def counterfactuals_page(self, root: str, text: str, section: dict | None, rule: str = "notebook") -> str:
        """A typed claim's "What would change this verdict" under the rule named ``rule`` (``section``
        None: being computed); its links carry the rule, as the live page's do."""
        return self._render(
            "counterfactuals.html",
            root,
            text=text,
            rule=rule,
            cf_section=section,
            page="counterfactuals",
            title="What would change this verdict",
        )

    def error_page(
        self, root: str, status: int, heading: str, message: str, hint: str | None = None, refresh: int | None = None
    ) -> str:
        return self._render(
            "error.html",
            root,
            status=status,
            heading=heading,
            message=message,
            hint=hint,
            refresh=refresh,
            page="error",
            title=heading,
        )
