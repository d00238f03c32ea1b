"""The site's pages as a notebook's output: what ``_repr_html_`` of the Python API's objects
returns (:mod:`claimtrace.api`).

A page is drawn by the site's own renderer and templates in ``"notebook"`` mode (the site's style
inlined, no header, script or form: nothing a notebook could not show without a server), then set
in an ``<iframe srcdoc>``, so that the site's style applies to the page alone and never to the
notebook around it. The frame runs no script (``sandbox``) and scrolls inside a box the reader
can make taller.
"""

from __future__ import annotations

from typing import Any

from markupsafe import escape

from claimtrace.web.pages import Page
from claimtrace.web.render import Renderer
from claimtrace.web.site_data import SiteData

#: The frame's height in CSS pixels before the reader drags it taller (about a screen's worth).
FRAME_HEIGHT = 720

__all__ = ["FRAME_HEIGHT", "framed", "notebook_renderer", "notebook_page", "notebook_template"]


def notebook_renderer(site_data: SiteData | None) -> Renderer:
    """The site's renderer over ``site_data``, drawing pages for a notebook (None: no build, for
    the views that need none, a file's scores or a preprocessed text)."""
    return Renderer(site_data, mode="notebook")


def framed(document: str, title: str, height: int = FRAME_HEIGHT) -> str:
    """A whole HTML document as a notebook output: an isolated, script-less frame holding it."""
    return (
        f'<div class="claimtrace-output" style="resize:vertical;overflow:hidden;height:{height}px;'
        'min-height:120px;border:1px solid #8884">'
        f'<iframe title="{escape(title)}" sandbox srcdoc="{escape(document)}" '
        'style="width:100%;height:100%;border:0;display:block"></iframe></div>'
    )


def notebook_page(renderer: Renderer, page: Page, data: Any, **given) -> str:
    """A page of the registry drawing ``data``, framed for a notebook."""
    document = renderer.page(page, data, "", **given)
    return framed(document, page.title.format(data=data))


def notebook_template(renderer: Renderer, template: str, title: str, **context) -> str:
    """A template of the site's that is no page of its registry (the notebook's own views: a
    score, a preprocessed text), drawn in the site's frame (base.html) and framed."""
    return framed(renderer.view(template, title, **context), title)
