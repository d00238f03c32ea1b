"""HTML for every page, from the same dicts the JSON routes return (shared by the server and the
static site writer).

Links are relative and end in ``.html`` so that the same pages work from ``claimtrace serve`` and
from any static host: ``root`` is the way back to the site's top folder from the page's own
folder (``""`` or ``"../"``).
"""

from __future__ import annotations

import json
import math
import threading
import unicodedata
from collections import OrderedDict
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, pass_context
from markupsafe import Markup, escape

from .. import constants as C
from ..course import WALKTHROUGH_CLAIM
from .tracer import MAX_TEXT_CHARS, Tracer

TEMPLATES = Path(__file__).resolve().parent / "templates"
STATIC = Path(__file__).resolve().parent / "static"


def json_for_script(value: Any) -> Markup:
    """JSON safe to place inside ``<script type="application/json">``: no ``<``, ``>``, ``&``
    or line separators survive literally, so no text can close the script element."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for raw, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return Markup(text)


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
    is itself a quotation): never “"…"”."""
    stripped = text.strip()
    if len(stripped) > 1 and stripped[0] in _OPENING and any(ch in _CLOSING for ch in stripped[-2:]):
        return stripped
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
    """A diverging CSS bar: zero in the middle, ``scale`` = half the width; clipped beyond."""
    if value is None or not scale:
        return Markup('<span class="bar"></span>')
    share = abs(value) / scale
    clipped = share > 1.0
    width = min(share, 1.0) * 50
    side = "pos" if value >= 0 else "neg"
    extra = " clipped" if clipped else ""
    return Markup(f'<span class="bar"><span class="fill {side}{extra}" style="width:{width:.2f}%"></span></span>')


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


def make_env() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
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
    )
    env.globals.update(
        live_bucket=live_bucket,
        bar=_bar,
        C=C,
        LABELS=C.LABELS,
        SPLITS=C.SPLITS,
        WALKTHROUGH_CLAIM=WALKTHROUGH_CLAIM,
        MAX_TEXT_CHARS=MAX_TEXT_CHARS,
    )
    return env


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


class Renderer:
    """Renders the site's pages from a :class:`Tracer`. ``mode``: ``"server"`` or ``"static"``."""

    #: Rendered claim and Explore pages kept (a trace never changes once computed).
    PAGE_CACHE = 64  # the server keeps whole answers (web.app.Guard); this serves the static export

    def __init__(self, tracer: Tracer, mode: str = "server"):
        self.tracer = tracer
        self.mode = mode
        self.env = make_env()
        self._pages: OrderedDict[tuple, str] = OrderedDict()
        self._pages_lock = threading.Lock()

    def _cached(self, key: tuple, make) -> str:
        with self._pages_lock:
            page = self._pages.get(key)
            if page is not None:
                self._pages.move_to_end(key)
                return page
        page = make()
        with self._pages_lock:
            self._pages[key] = page
            while len(self._pages) > self.PAGE_CACHE:
                self._pages.popitem(last=False)
        return page

    def _render(self, template: str, root: str, **context) -> str:
        return self.env.get_template(template).render(root=root, mode=self.mode, **context)

    def _neighbours_in_file(self, claim_id: str, split: str) -> dict:
        ids = list(self.tracer.claims(split))
        i = ids.index(claim_id)
        return {
            "prev": ids[i - 1] if i > 0 else None,
            "next": ids[i + 1] if i + 1 < len(ids) else None,
            "count": len(ids),
        }

    def claim_page(self, trace: dict, root: str, run=None) -> str:
        """A claim's walkthrough. With ``run`` (a server's ``?run=``), that run's "your system" box;
        a static page holds the box of every run the export was given, hidden until its address
        names the run (``?run=<digest>``), so that both pages read the same without one."""
        head = trace["claim"]
        runs = self.tracer.runs
        chosen = [run] if run is not None else (runs.given() if self.mode == "static" else [])
        boxes = [box for box in (runs.box(r, head["id"]) for r in chosen) if box is not None]

        def make():
            nav = self._neighbours_in_file(head["id"], head["split"])
            return self._render(
                "claim.html",
                root,
                t=trace,
                nav=nav,
                run_boxes=boxes,
                page="claim",
                title=f"{head['id']}: one claim through every stage",
            )

        key = ("claim", head["id"], root, id(trace), tuple(b["digest"] for b in boxes))
        return self._cached(key, make)

    def compare_index(self, data: dict, root: str) -> str:
        return self._render(
            "compare_index.html", root, c=data, page="compare", title="Your system beside the notebook’s"
        )

    def compare_page(self, data: dict, root: str) -> str:
        return self._render(
            "compare.html", root, c=data, page="compare", title=f"{data['run']['name']} beside the notebook’s pipeline"
        )

    def explore_page(self, explore: dict, root: str) -> str:
        return self._cached(
            ("explore", explore["split"], root, id(explore)),
            lambda: self._render(
                "explore.html", root, x=explore, page="explore", title=f"Explore: every {explore['split']} claim"
            ),
        )

    def live_page(
        self, root: str, trace: dict | None, text: str = "", error: str | None = None, table: dict | None = None
    ) -> str:
        return self._render(
            "live.html",
            root,
            t=trace,
            text=text,
            error=error,
            page="live",
            table=table,
            title="Live: trace your own claim",
        )

    def computing_page(self, root: str, split: str, progress: dict) -> str:
        return self._render(
            "computing.html",
            root,
            split=split,
            progress=progress,
            page="explore",
            title=f"Explore {split}: being computed",
        )

    def error_page(self, root: str, status: int, heading: str, message: str, hint: str | None = None) -> str:
        return self._render(
            "error.html", root, status=status, heading=heading, message=message, hint=hint, page="error", title=heading
        )
