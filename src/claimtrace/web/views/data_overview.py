"""The data at a glance: each split's labels against each model's verdicts, and the build's corpus
(passage lengths in words beside the report's Table 1, tags per passage, the padding tag), every
share with its 95% Wilson interval.

The corpus figures are the tagging stage's (``tagging/summary.json``, read through the build);
the verdicts are the classifier stage's. Nothing is computed here but counts of what they hold.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from claimtrace import course
from claimtrace.constants import LABELS, SPLITS
from claimtrace.errors import DataError, Missing
from claimtrace.evaluation import statistics as S
from claimtrace.web.views.status import missing
from claimtrace.workdir.reader import BuildReader


@dataclass(frozen=True)
class Model:
    """One classifier the build ran: its name in the build (the scoreboard's), its title, and its
    model card (a file of ``web/content/models/``). A new model is one entry of :data:`MODELS`."""

    name: str
    title: str
    card: str


MODELS = (
    Model("notebook", "The notebook’s Transformer", "models/notebook.md"),
    Model("intended", "The intended Transformer", "models/intended.md"),
)

#: The verdicts the label balance counts: the pipeline as the notebook ran it.
SOURCE, PROTOCOL = "retrieved", "notebook"


def share(count: int, total: int) -> dict:
    """``count`` of ``total`` with its Wilson interval (``{"count", "total", "interval"}``)."""
    return {"count": count, "total": total, "interval": S.wilson(count, total).to_dict()}


def _counts(values, total: int) -> dict:
    counted = Counter(values)
    return {label: share(counted.get(label, 0), total) for label in LABELS}


def _verdicts(build: BuildReader, split: str, model: str) -> tuple[dict | None, str | None]:
    """A model's verdicts on a split, or None and why (the intended model runs on dev and test)."""
    try:
        return build.verdict_of(split, model, SOURCE, PROTOCOL), None
    except Missing as err:
        return None, err.reason
    except KeyError:
        return None, f"the build runs this model on dev and test only, not on {split}"


def label_balance(build: BuildReader) -> list[dict]:
    """Per split: its claims' gold labels and each model's verdicts (retrieved evidence, batches
    of 16), each label's count with its share's Wilson interval.

    Returns
    -------
    list of dict
        ``[{"split", "claims", "gold": {label: share} | None, "models": [{"name", "title",
        "labels": {label: share} | None, "reason"}]}]``.
    """
    out = []
    for split in SPLITS:
        claims = build.claims(split)
        labelled = all(claim.label is not None for claim in claims.values())
        models = []
        for model in MODELS:
            verdicts, reason = _verdicts(build, split, model.name)
            labels = None if verdicts is None else _counts(verdicts.values(), len(verdicts))
            models.append({"name": model.name, "title": model.title, "labels": labels, "reason": reason})
        gold = _counts((c.label for c in claims.values()), len(claims)) if labelled else None
        out.append({"split": split, "claims": len(claims), "gold": gold, "models": models})
    return out


def corpus(build: BuildReader) -> dict:
    """The build's corpus at a glance, from the tagging stage's summary.

    Returns
    -------
    dict
        ``{"status": "ok", "passages", "lengths": [{"bucket", "build": share, "course": share}],
        "tags_per_passage": [{"tags", "passages": share}], "padded": share, "untagged": share}``,
        or a missing section (``"status": "missing"``) when the tagging stage (or, in a build made
        before these figures, its corpus figures) is not there.
    """
    try:
        summary = build.tagging_summary()
    except Missing as err:
        return missing(err.stage, err.reason)
    except DataError as err:
        return missing("tagging", str(err))
    if "length_buckets" not in summary:
        return missing("tagging", "this build’s tagging summary predates the corpus figures: run `claimtrace build`")
    n = summary["passages"]
    course_total = sum(course.TABLE1.values())
    return {
        "status": "ok",
        "passages": n,
        "course_passages": course_total,
        "lengths": [
            {
                "bucket": bucket,
                "build": share(summary["length_buckets"][bucket], n),
                "course": share(course.TABLE1[bucket], course_total),
            }
            for bucket in course.TABLE1
        ],
        "tags_per_passage": [
            {"tags": int(tags), "passages": share(count, n)} for tags, count in summary["tags_per_passage"].items()
        ],
        "padded": share(summary["passages_whose_tags_include_padding"], n),
        "untagged": share(summary["untagged_passages"], n),
        "last_feature": summary["last_feature"],
        "with_last_feature": share(summary["passages_with_last_feature"], n),
        "source": course.REPORT_TABLE1,
    }


def data_overview(build: BuildReader) -> dict:
    """The data at a glance: ``{"labels": label_balance, "corpus": corpus, "source", "protocol"}``."""
    return {"labels": label_balance(build), "corpus": corpus(build), "source": SOURCE, "protocol": PROTOCOL}
