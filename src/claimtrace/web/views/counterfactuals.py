"""What would change a verdict, as the pages show it: a course claim's section "What would change
this verdict" (the build's record, ``claimtrace counterfactual --all``), a typed claim's (computed
on a second request, :meth:`claimtrace.web.site_data.SiteData.text_counterfactuals`), and the
dev shares on Explore. The records come from :mod:`claimtrace.explain.counterfactuals`; nothing
here computes an edit."""

from __future__ import annotations

from urllib.parse import quote

from claimtrace.errors import DataError, Missing
from claimtrace.evaluation.sweep import Rule
from claimtrace.explain.counterfactuals.report import SPLITS
from claimtrace.explain.retrieval import NOTEBOOK_RULE
from claimtrace.web.views.status import missing
from claimtrace.workdir.reader import BuildReader

__all__ = ["claim_section", "typed_section", "shown", "dev_shares", "text_link"]


def text_link(text: str, json: bool = False, rule: Rule = NOTEBOOK_RULE) -> str:
    """The address (relative to the site's root) of a typed text's counterfactuals under ``rule``
    (the notebook's is named by no field, as on the live page)."""
    named = "" if rule == NOTEBOOK_RULE else "&rule=" + quote(rule.name, safe="")
    return f"counterfactuals.{'json' if json else 'html'}?text=" + quote(text, safe="") + named


def _bar_scales(result: dict) -> dict:
    """The width the page's logit bars share: the largest logit magnitude before or after an edit."""
    values = list(result["model_input"]["logits"])
    for target in result["model_input"]["targets"]:
        for kind in ("remove", "add"):
            values += target[kind].get("logits_after", [])
    return {"logits": max((abs(v) for v in values), default=0.0)}


def shown(result: dict) -> dict:
    """A counterfactuals record as a section: ``result`` is what the command prints, as it is."""
    return {"status": "ok", "result": result, "bar_scales": _bar_scales(result)}


def claim_section(build: BuildReader, claim_id: str, split: str) -> dict:
    """A course claim's section: the build's record; why not, where the build has none."""
    if split not in SPLITS:
        return {
            "status": "none",
            "reason": f"What would change a verdict is computed for {' and '.join(SPLITS)} claims.",
        }
    try:
        record = build.counterfactuals(split).get(claim_id)
    except Missing as err:
        return missing("counterfactuals", err.reason)
    except DataError as err:
        return {"status": "damaged", "stage": "counterfactuals", "reason": str(err)}
    if record is None:
        return missing(
            "counterfactuals",
            f"not computed for {claim_id} (the command was given --limit): run "
            f"`claimtrace counterfactual --all --workdir {build.root}`",
        )
    return shown(record)


def typed_section(text: str, rule: Rule = NOTEBOOK_RULE) -> dict:
    """A typed claim's section: computed on a second request (its own address, carrying the rule
    its passages were retrieved under), to keep the live page within its time."""
    return {"status": "deferred", "link": text_link(text, rule=rule), "json": text_link(text, json=True, rule=rule)}


def dev_shares(build: BuildReader) -> dict:
    """Explore (dev)'s box: the shares of dev claims one edit of each kind changes, with intervals,
    and the smallest edits' sizes; why not, before the command ran."""
    try:
        summary = build.counterfactuals()
    except Missing as err:
        return missing("counterfactuals", err.reason)
    except DataError as err:
        return {"status": "damaged", "stage": "counterfactuals", "reason": str(err)}
    counts = [row["claims"] for key in ("smallest_words", "smallest_tokens") for row in summary[key]]
    return {"status": "ok", **summary, "scale": max(counts, default=0) or 1}
