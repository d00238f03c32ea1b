"""The typed claim's counterfactuals at an address of their own: computed on a second request
(the live page keeps its time), answered "being computed" (202, the page asks again) until they
are; under the scoring rule ``rule`` names, as the live page's (checked by
:func:`claimtrace.web.live_page.asked_rule`). A route of
:func:`claimtrace.web.routes.site_routers`, kept apart from the page routes."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from claimtrace.web.live_page import RULE_FIELD, BadRule, asked_rule
from claimtrace.web.render import root_for
from claimtrace.web.responses import html_response, json_response
from claimtrace.web.typed_claims import MAX_TEXT_CHARS

counterfactual_actions = APIRouter()


@counterfactual_actions.get("/counterfactuals.html")
@counterfactual_actions.get("/counterfactuals.json")
@counterfactual_actions.get("/counterfactuals")
def counterfactuals_page(request: Request, text: str | None = None, rule: str | None = None):
    """What would change a typed claim's verdict under the rule named (the notebook's without
    one): "being computed" (202, the page asks again) until it is, then its section (as JSON at
    ``.json``); a 400 naming the field for a text or a rule it cannot take."""
    site, as_json = request.app.state.site, request.url.path.endswith(".json")
    root = root_for(request.url.path)
    if text is None or not text.strip() or len(text) > MAX_TEXT_CHARS:
        message = f"Give a claim of 1 to {MAX_TEXT_CHARS:,} characters as ?text=."
        if as_json:
            return json_response({"error": message, "status": 400}, 400)
        return html_response(site.renderer.error_page(root, 400, "No claim to change", message), 400)
    try:
        chosen = asked_rule(rule)
    except BadRule as err:
        if as_json:
            return json_response({"error": str(err), "status": 400, "field": RULE_FIELD}, 400)
        return html_response(site.renderer.error_page(root, 400, "No such scoring rule", str(err)), 400)
    found = site.site_data.text_counterfactuals(text, chosen)
    if found is None:
        if as_json:
            return json_response(
                {"status": "computing", "text": text, "rule": chosen.name, "retry_after_seconds": 2}, 202
            )
        html = site.renderer.counterfactuals_page(root, text, None, chosen.name)
        return HTMLResponse(html, status_code=202, headers={"Retry-After": "2"})
    if as_json:
        return json_response(found)
    return html_response(site.renderer.counterfactuals_page(root, text, found, chosen.name))
