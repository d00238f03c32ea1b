"""The live page's choices beside its text: the scoring rule a typed claim is retrieved under
(``rule``: the address's, the form's or the JSON body's field), checked here once for every route
that takes it, and the page's context (the text box, a refusal, the rules to choose from)."""

from __future__ import annotations

from claimtrace.evaluation.sweep import RULES, Rule
from claimtrace.explain.retrieval import NOTEBOOK_RULE, rule_named
from claimtrace.web.views.landing import SPLIT as EXAMPLE_SPLIT
from claimtrace.web.views.walkthrough.retrieval import rule_facts

#: The field that names the rule, in an address, a form or a JSON body.
RULE_FIELD = "rule"

__all__ = ["RULE_FIELD", "BadRule", "asked_rule", "live_context"]


class BadRule(ValueError):
    """A ``rule`` field naming no rule; the message names the field and the choices."""


def asked_rule(name: str | None) -> Rule:
    """The rule a request names (None, the field absent: the notebook's), or :class:`BadRule`."""
    if name is None:
        return NOTEBOOK_RULE
    try:
        return rule_named(name)
    except ValueError:
        choices = " or ".join(f"“{rule.name}”" for rule in RULES)
        raise BadRule(f"The field “{RULE_FIELD}” must be {choices}; {name[:40]!r} is neither.") from None


def live_context(
    renderer, trace: dict | None, text: str | None = None, error: str | None = None, rule: Rule = NOTEBOOK_RULE
) -> dict:
    """The editor's text box (``text``: the traced claim's own text unless a route gives the typed
    one), why a typed text was refused (``error``), and the rule toggle (every rule, ``rule`` the
    one chosen)."""
    return {
        "text": trace["claim"]["text"] if text is None else text,
        "error": error,
        "table": None,
        "examples": renderer.site_data.example_claims(),
        "examples_split": EXAMPLE_SPLIT,
        "rules": [rule_facts(r) for r in RULES],
        "rule": rule.name,
    }
