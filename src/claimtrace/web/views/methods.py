"""Methods: the notebook's pipeline step by step, a model card per model, the data statement and
the design decisions, each a markdown document of ``web/content/`` whose figures are filled from
the build (its scoreboard, verdicts, tagging summary, checkpoints' provenance) and
:mod:`claimtrace.course`: no figure is typed in a document (``tests/web/views/test_methods.py``).

A figure that the build lacks (a stage not built) is filled with "not built", so the page still
reads; its JSON twin holds the figures themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from claimtrace import constants, course
from claimtrace.assets import ASSETS_DIR
from claimtrace.errors import DataError
from claimtrace.evaluation import statistics as S
from claimtrace.evaluation.scoreboard import NOTEBOOK_ROW, ScoreRow
from claimtrace.lib.build_files import read_json
from claimtrace.web import markdown
from claimtrace.web.views.data_overview import MODELS, data_overview
from claimtrace.workdir.reader import BuildReader

NOT_BUILT = "not built"
DATA_STATEMENT = "data-statement.md"
STEPS_FILE = "steps.md"


def _interval(entry: dict | None, digits: int = 3) -> str:
    """``0.253 (95% interval 0.191 to 0.327)``; a Wilson interval also says ``39/154``."""
    if not entry:
        return NOT_BUILT
    counts = f"{entry['successes']}/{entry['n']}, " if entry.get("successes") is not None else ""
    return (
        f"{entry['estimate']:.{digits}f} ({counts}95% {'Wilson' if counts else 'bootstrap'} interval "
        f"{entry['lower']:.{digits}f} to {entry['upper']:.{digits}f})"
    )


def _of_total(entry: dict) -> str:
    """``626 of 5,240 (11.9%, 95% Wilson interval 11.1% to 12.9%)``."""
    return (
        f"{entry['successes']:,} of {entry['n']:,} ({entry['estimate']:.1%}, 95% Wilson interval "
        f"{entry['lower']:.1%} to {entry['upper']:.1%})"
    )


def _labels(labels: list[str]) -> str:
    if not labels:
        return "none: it predicts every label at least once"
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]


def _safely(read: Callable[[], Any]) -> Any:
    try:
        return read()
    except DataError:
        return None


def checkpoint_provenance(build: BuildReader, model: str) -> dict | None:
    """The provenance of the build's checkpoint of a model (the notebook's: the build's own,
    shipped or trained; the others': the shipped one's); None without one."""
    if model == "notebook":
        return course.checkpoint_provenance(build.checkpoint_dir())
    name = constants.PROVENANCE_FILES.get(model)
    path = None if name is None else ASSETS_DIR / name
    return read_json(path) if path is not None and path.is_file() else None


def _row(scoreboard: dict | None, name: str) -> dict | None:
    return next((r for r in (scoreboard or {}).get("rows", []) if r["name"] == name), None)


def _paired_sentence(paired: dict | None, what: str) -> str:
    """A paired accuracy comparison in words: the difference, its interval, McNemar's p (Holm's
    where the scoreboard corrected it) and whether it is more than chance."""
    if not paired:
        return NOT_BUILT
    a, p = paired["A"], paired.get("p_holm", paired["p"])
    return (
        f"{what} by {a['estimate']:+.3f} (paired bootstrap interval {a['lower']:+.3f} to {a['upper']:+.3f}; "
        f"McNemar’s exact p = {p:.2g}{' after Holm’s correction' if 'p_holm' in paired else ''}): "
        f"{paired['verdict']}"
    )


def model_figures(build: BuildReader, scoreboard: dict | None, model: str) -> dict[str, str]:
    """One model's card figures, each named ``<model>.<figure>``."""
    together = _row(scoreboard, ScoreRow("notebook", model, "notebook").name)
    alone = _row(scoreboard, ScoreRow("notebook", model, "alone").name)
    gold = _safely(lambda: build.verdict_of("dev", model, "gold", "notebook"))
    claims = build.claims("dev")
    figures = {
        "A": _interval(together and together["intervals"]["A"]),
        "A_alone": _interval(alone and alone["intervals"]["A"]),
        "F": _interval(together and together["intervals"]["F"], 4),
        "HM": _interval(together and together["intervals"]["HM"], 4),
        "macro_f1": _interval(together and together["intervals"]["macro_f1"]),
        "gold_A": NOT_BUILT,
        "never": NOT_BUILT,
        "vs_notebook": _paired_sentence(together and together.get("paired"), "it differs from the notebook’s model"),
    }
    if gold is not None:
        right = sum(gold[cid] == claim.label for cid, claim in claims.items())
        figures["gold_A"] = _interval(S.wilson(right, len(claims)).to_dict())
    if together is not None:
        recall = together["intervals"]["recall"]
        figures["never"] = _labels([label for label in constants.LABELS if recall[label]["predicted"] == 0])
    provenance = checkpoint_provenance(build, model) or {}
    best = next((h for h in provenance.get("history", []) if h["epoch"] == provenance.get("best_epoch")), {})
    figures["seed"] = str(provenance.get("seed", NOT_BUILT))
    figures["best_epoch"] = str(provenance.get("best_epoch", NOT_BUILT))
    correct = best.get("dev_correct", provenance.get("best_dev_correct_float16"))
    figures["best_dev"] = NOT_BUILT if correct is None else f"{correct}/{len(claims)}"
    return {f"{model}.{key}": value for key, value in figures.items()}


def _counts_of(build: BuildReader) -> dict[str, str]:
    counts = {f"{split}_claims": f"{len(build.claims(split)):,}" for split in constants.SPLITS}
    train = [claim.label for claim in build.claims("train").values()]
    for label in constants.LABELS:
        k = train.count(label)
        counts[f"train_{label}"] = f"{k:,} ({100 * k / len(train):.0f}%)"
    return counts


def _corpus_kind(corpus: dict | None) -> str:
    if not corpus:
        return NOT_BUILT
    if corpus.get("kind") == "demo":
        return "the demo corpus"
    return "the course’s evidence.json" if course.is_course_corpus(corpus) else "an evidence file the user brought"


def figures(build: BuildReader, page: dict) -> dict[str, str]:
    """Every figure the documents may cite, by placeholder name, as printed."""
    scoreboard = _safely(build.scoreboard)
    corpus = page["glance"]["corpus"]
    supports = next((b for b in (scoreboard or {}).get("baselines", []) if b["name"].endswith("SUPPORTS")), None)
    record = _safely(build.build_record) or {}
    out = {
        **_counts_of(build),
        "passages": f"{(record.get('corpus') or {}).get('passages', 0):,}",
        "corpus_kind": _corpus_kind(record.get("corpus")),
        "course_passages": f"{constants.EVIDENCE_PASSAGES:,}",
        "vocab_size": f"{constants.VOCAB_SIZE:,}",
        "tagging_features": f"{constants.TAGGING_VECTORIZER['max_features']:,}",
        "retrieval_features": f"{constants.RETRIEVAL_VECTORIZER['max_features']:,}",
        "tags_per_passage": str(constants.TAGS_PER_PASSAGE),
        "cosine_threshold": str(constants.COSINE_THRESHOLD),
        "overlap_threshold": str(constants.OVERLAP_THRESHOLD),
        "max_evidences": str(constants.MAX_EVIDENCES),
        "max_len": str(constants.MAX_LEN),
        "batch_size": str(constants.BATCH_SIZE),
        "epochs": str(constants.EPOCHS),
        "layers": str(constants.N_LAYERS),
        "heads": str(constants.N_HEADS),
        "embed_dim": str(constants.EMBED_DIM),
        "table_bytes": f"{constants.VOCAB_SIZE * len(constants.LABELS) * 4:,}",
        "labels_count": str(len(constants.LABELS)),
        "supports_A": _interval(supports and supports["intervals"]["A"]),
        "supports_vs_notebook": _paired_sentence(
            supports and supports.get("paired"), "always answering SUPPORTS differs from the notebook’s pipeline"
        ),
        "padded": NOT_BUILT,
        "untagged": NOT_BUILT,
        "last_feature_passages": NOT_BUILT,
        "notebook_row": NOTEBOOK_ROW.name,
        "course_with_last_feature": course.FIGURES["passages_with_last_feature"].shown,
        "table2_dev_HM": f"{course.TABLE2['dev']['HM']:.5f}",
        "notebook_url": course.NOTEBOOK_URL,
    }
    if corpus["status"] == "ok":
        for key in ("padded", "untagged"):
            out[key] = _of_total(corpus[key]["interval"])
        out["last_feature_passages"] = _of_total(corpus["with_last_feature"]["interval"])
    for model in MODELS:
        out.update(model_figures(build, scoreboard, model.name))
    return out


def _document(relative: str, figures_: dict[str, str], shift: int = 1) -> dict:
    """A document rendered under its page heading (its ``##`` parts one level below it)."""
    doc = markdown.document(relative, figures_, shift)
    return {"name": doc.name, "file": relative, "title": doc.title, "html": str(doc.html)}


def steps(figures_: dict[str, str]) -> list[dict]:
    """The notebook's steps, as ``steps.md`` tells them: each with its anchor, its cells and its
    link to the notebook on GitHub."""
    out = []
    for (heading, html), step in zip(markdown.sections(STEPS_FILE, figures_), course.STEPS.values(), strict=True):
        out.append(
            {
                "number": step.number,
                "anchor": step.anchor,
                "title": step.title,
                "heading": heading,
                "cells": list(step.cells),
                "cells_shown": step.cells_shown,
                "url": course.NOTEBOOK_URL,
                "html": str(html),
            }
        )
    return out


def decisions() -> list[str]:
    """The decision records' files, in their numbered order."""
    return sorted(f"decisions/{path.name}" for path in (markdown.CONTENT / "decisions").glob("*.md"))


def methods(build: BuildReader) -> dict:
    """The methods page: the data at a glance, the steps, the model cards, the data statement and
    the decisions, each document rendered with the figures it cites (``figures``, also in the
    twin)."""
    page: dict[str, Any] = {"glance": data_overview(build)}
    figures_ = figures(build, page)
    page["figures"] = figures_
    page["steps"] = steps(figures_)
    page["models"] = [{"name": m.name, **_document(m.card, figures_)} for m in MODELS]
    page["data_statement"] = _document(DATA_STATEMENT, figures_)
    page["decisions"] = [_document(relative, figures_, shift=2) for relative in decisions()]
    page["notebook_url"] = course.NOTEBOOK_URL
    return page
