"""The site's content security policy, once: the header the server sends with every answer
(:mod:`claimtrace.web.middleware`) and the ``<meta>`` an exported page carries
(:mod:`claimtrace.web.render`).

Every page may reach only its own origin. The pages that call a visitor's LLM from the browser
(:data:`LLM_PAGES`: the evaluation page, and the second opinion of a claim page and of the
live page's typed claim) may also connect to
the providers' own origins and to the base URLs the server or the export was told of
(``--llm-origin URL``): the key goes from the browser to those, never to this site.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from claimtrace.errors import DataError

#: Origins every LLM page may connect to: the known providers' APIs.
PROVIDER_ORIGINS = ("https://api.anthropic.com", "https://api.openai.com")

#: The server's paths of the pages that call a provider (their files, the walkthrough's, the claim
#: pages' and the live page's, a typed claim's).
LLM_PAGES = re.compile(r"/evaluation(\.html)?|/walkthrough(\.html)?|/claim/[^/]+(?<!\.json)|/live(\.html)?")

_BASE = (
    "default-src 'self'; script-src 'self'; style-src 'self'; style-src-attr 'unsafe-inline'; "
    "img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'"
)


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of an http(s) URL (a provider's base URL); DataError otherwise.

    >>> origin_of("http://127.0.0.1:8080/v1")
    'http://127.0.0.1:8080'
    """
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise DataError(f"--llm-origin {url!r}: not an http(s) URL (for example http://127.0.0.1:8080/v1)")
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}".lower()


#: What default-src 'self' already says: a <meta> leaves it out (every claim page of an export
#: carries one: 1,535 copies).
_IMPLIED = " script-src 'self'; style-src 'self';"


def policy(llm_origins: Iterable[str] | None = None, meta: bool = False) -> str:
    """The policy's text. ``llm_origins`` None: a page that reaches only its own origin; else
    (an LLM page) the providers' origins and these too. ``meta``: the same policy for a
    ``<meta>`` element, which cannot carry ``frame-ancestors`` (a browser ignores it there, with
    a warning), written without the directives ``default-src 'self'`` implies."""
    text = _BASE.replace(_IMPLIED, "") if meta else _BASE
    if llm_origins is not None:
        extra = [origin for origin in (*PROVIDER_ORIGINS, *llm_origins) if origin]
        text += "; connect-src 'self' " + " ".join(dict.fromkeys(extra))
    return text if meta else text + "; frame-ancestors 'none'"
