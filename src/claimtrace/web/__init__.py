"""The explainer web site: one claim through every stage, Explore, and live editing.

``create_app(build)`` is the FastAPI app (``claimtrace serve``); ``write_site(build, out)`` writes
the same pages as static files (``claimtrace site``). The pages' data comes from ``views.walkthrough``
(one function per stage) and ``views.explore`` (a whole split), read from the build through
:class:`claimtrace.workdir.reader.BuildReader`; ``site_data.SiteData`` caches and schedules them. See docs/web.md.

May import: everything below it, up to ``compare``; it only reads a build, never writes one.
"""

from __future__ import annotations

__all__ = ["create_app", "write_site", "SiteData"]


def __getattr__(name):
    if name == "create_app":
        from claimtrace.web.app import create_app

        return create_app
    if name == "write_site":
        from claimtrace.web.site import write_site

        return write_site
    if name == "SiteData":
        from claimtrace.web.site_data import SiteData

        return SiteData
    raise AttributeError(name)
