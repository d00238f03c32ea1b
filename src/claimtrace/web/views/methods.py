"""Methods: the notebook's pipeline step by step, a model card per model, the data statement,
and a series of documents each at its own address (``methods/<slug>.html``): the statements (what
the port assumes, its limitations, where a language model enters) and the design decisions. Each
is a markdown document of ``web/content/`` whose figures are filled from the build (its
scoreboard, verdicts, tagging summary, checkpoints' provenance), :mod:`claimtrace.course` and the
package's constants: no figure is typed in a document (``tests/web/views/test_methods.py``).

A figure that the build lacks (a stage not built) is filled with "not built", so the page still
reads; its JSON twin holds the figures themselves.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from html import unescape
from pathlib import Path
from typing import Any

from claimtrace import constants, course
from claimtrace.assets import ASSETS_DIR
from claimtrace.errors import DataError
from claimtrace.evaluation import statistics as S
from claimtrace.evaluation.llm import PROMPT_VERSION
from claimtrace.evaluation.scoreboard import NOTEBOOK_ROW, ScoreRow
from claimtrace.lib.build_files import read_json
from claimtrace.web import markdown
from claimtrace.web.views.data_overview import MODELS, data_overview
from claimtrace.web.views.llm import AI_LOG_DATA, DEFAULT_N, half_width
from claimtrace.workdir.reader import BuildReader

NOT_BUILT = "not built"
DATA_STATEMENT = "data-statement.md"
STEPS_FILE = "steps.md"
#: The series of documents each at its own address, in its order: (kind, its folder in
#: ``web/content``, what one is called), each folder's files in their numbered order.
SERIES = (("statement", "statements", "Statement"), ("decision", "decisions", "Decision"))
#: Where the series' pages live, from the site's top folder (served and exported alike).
SERIES_FOLDER = "methods/"
#: Where the methods page lists the series.
SERIES_INDEX = "methods.html#series"
#: A file's number, left out of its page's address: ``01-exact-tfidf-tags.md`` -> ``exact-tfidf-tags``.
_NUMBER = re.compile(r"^\d+-")


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
    for split in ("train", "dev"):
        labels = [claim.label for claim in build.claims(split).values()]
        for label in constants.LABELS:
            k = labels.count(label)
            counts[f"{split}_{label}"] = f"{k:,} ({100 * k / len(labels):.0f}%)"
    return counts


def statement_figures(dev_claims: int) -> dict[str, str]:
    """What the statements cite beyond the build's counts: the seeds, the checks and the LLM
    harness's settings, from the package's constants (``dev_claims``: how many the build's dev
    split holds, for the width of an interval on it)."""
    dev_interval = S.wilson(dev_claims // 2, dev_claims)
    return {
        "stopwords_count": str(constants.STOPWORDS_COUNT),
        "shuffle_seed": str(constants.PASSAGE_SHUFFLE_SEED),
        "bootstrap_seed": str(S.SEED),
        "resamples": f"{S.RESAMPLES:,}",
        "interval_level": f"{S.LEVEL:.0%}",
        "float32_agreement": f"{constants.FLOAT32_AGREEMENT:.0e}".replace("e-0", "e-"),
        "dev_half_width": f"{(dev_interval.upper - dev_interval.lower) / 2:.2f}",
        "prompt_version": PROMPT_VERSION,
        "ai_log_kept": str(AI_LOG_DATA["kept"]),
        "llm_default_n": str(DEFAULT_N),
        "llm_half_width": f"{half_width(DEFAULT_N):.2f}",
    }


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
        **statement_figures(len(build.claims("dev"))),
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


def _files(folder: str) -> list[str]:
    return sorted(f"{folder}/{path.name}" for path in (markdown.CONTENT / folder).glob("*.md"))


def decisions() -> list[str]:
    """The decision records' files, in their numbered order."""
    return _files("decisions")


def statements() -> list[str]:
    """The statements' files (assumptions, limitations, where a language model enters), in order."""
    return _files("statements")


def slug_of(relative: str) -> str:
    """A series document's address in the series' folder: its file's name without its number."""
    return _NUMBER.sub("", Path(relative).stem)


def series_slugs() -> list[str]:
    """Every document of the series, statements first, in the order its pages chain."""
    return [slug_of(relative) for _, folder, _ in SERIES for relative in _files(folder)]


def _series_document(kind: str, relative: str, figures_: dict[str, str]) -> dict:
    """A document of the series as its page shows it: the title, the lead (its opening
    paragraph, also as plain text: ``summary``) and the rest, its ``##`` parts the page's ``<h2>``."""
    doc = markdown.document(relative, figures_, shift=0, lead=True)
    slug = slug_of(relative)
    return {
        "kind": kind,
        "slug": slug,
        "name": doc.name,
        "file": relative,
        "title": doc.title,
        "lead": str(doc.lead),
        "summary": " ".join(unescape(re.sub(r"<[^>]+>", "", doc.lead)).split()),
        "html": str(doc.html),
        "url": f"{SERIES_FOLDER}{slug}.html",
    }


class UnknownDocument(LookupError):
    """No statement or decision of the series has this address."""


def series_document(page: dict, slug: str) -> dict:
    """One page of the series (``methods/<slug>.html``): its document, where it stands among its
    kind (``number`` of ``of``), and its neighbours in the series (``previous``, ``next``: the
    last statement leads to the first decision), each ``{"kind", "slug", "title", "url"}`` or
    None; ``index``, the methods page's list. UnknownDocument when no document has the slug."""
    series = [*page["statements"], *page["decisions"]]
    at = next((i for i, doc in enumerate(series) if doc["slug"] == slug), None)
    if at is None:
        raise UnknownDocument(slug)
    doc = series[at]
    kind = [other for other in series if other["kind"] == doc["kind"]]

    def link(other: dict | None) -> dict | None:
        return None if other is None else {key: other[key] for key in ("kind", "slug", "title", "url")}

    return {
        **doc,
        "kind_title": next(title for kind_, _, title in SERIES if kind_ == doc["kind"]),
        "number": kind.index(doc) + 1,
        "of": len(kind),
        "previous": link(series[at - 1] if at > 0 else None),
        "next": link(series[at + 1] if at + 1 < len(series) else None),
        "index": SERIES_INDEX,
    }


def methods(build: BuildReader) -> dict:
    """The methods page: the data at a glance, the steps, the model cards, the data statement,
    and the series' statements and decisions, each document rendered with the figures it cites
    (``figures``, also in the twin); a document of the series is shown whole on its own page
    (:func:`series_document`)."""
    page: dict[str, Any] = {"glance": data_overview(build)}
    figures_ = figures(build, page)
    page["figures"] = figures_
    page["steps"] = steps(figures_)
    page["models"] = [{"name": m.name, **_document(m.card, figures_)} for m in MODELS]
    page["data_statement"] = _document(DATA_STATEMENT, figures_)
    for kind, folder, _ in SERIES:
        page[folder] = [_series_document(kind, relative, figures_) for relative in _files(folder)]
    page["notebook_url"] = course.NOTEBOOK_URL
    return page
