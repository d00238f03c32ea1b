"""The walkthrough's fifth stage: the classifier. The claim's model input, both protocols'
verdicts, and each token's exact share of the verdict alone (:mod:`claimtrace.explain.verdict`),
with the widths of the page's bars and the model as the notebook configured it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from claimtrace import course
from claimtrace.constants import BATCH_SIZE, EPOCHS, LABELS, LEARNING_RATE
from claimtrace.data.files import Claim
from claimtrace.errors import Missing
from claimtrace.explain.verdict import explain_claim, explain_input
from claimtrace.models.config import TransformerConfig
from claimtrace.models.inputs import join_row
from claimtrace.pipeline.preprocess import Preprocessed
from claimtrace.web.views.status import missing
from claimtrace.web.views.walkthrough.claim import PassageStems, Section
from claimtrace.workdir.reader import BuildReader

#: The note of a model input whose every word is outside the classifier's vocabulary.
ALL_UNKNOWN = "None of the model input's words is in the classifier's 5,886-word vocabulary: every one became <unk>."

#: What the section passes on from the explanation, as it is.
_EXPLAINED = (
    "text",
    "words",
    "tokens",
    "input_ids",
    "real_tokens",
    "pad_tokens",
    "unknown_tokens",
    "truncated",
    "dropped_words",
    "alone",
    "notebook",
)


def architecture() -> dict:
    """The classifier as the notebook configured it, for the page's summary: the model's own
    config (:class:`claimtrace.models.config.TransformerConfig`) and the training constants."""
    config = TransformerConfig()
    return {
        "vocabulary": config.vocab_size,
        "embedding": config.d_model,
        "layers": config.n_layers,
        "heads": config.n_heads,
        "feed_forward": config.ff_dim,
        "dropout": config.dropout,
        "max_len": config.max_len,
        "epochs": EPOCHS,
        "optimizer": "Adam",
        "learning_rate": LEARNING_RATE,
        "batch_size": BATCH_SIZE,
        "labels": list(LABELS),
        "batch_first_bug": not config.fixed,
    }


def _scale(values) -> float:
    """Half the width of a diverging bar: the largest magnitude among ``values``."""
    return float(max((abs(v) for v in values), default=0.0))


def _bar_scales(explained: dict) -> dict:
    """The widths the page's bars share: the summary's (bias, words, padding, logits), the
    tokens' and the margin's."""
    contributions = explained["contributions"]
    summary_parts = (
        contributions["bias"],
        contributions["words_total"],
        contributions["padding"]["contribution"],
        explained["alone"]["logits"],
    )
    pushes = contributions["margin"]["for"] + contributions["margin"]["against"]
    return {
        "summary": max(_scale([part[i] for part in summary_parts]) for i in range(len(LABELS))),
        "tokens": _scale(v for t in contributions["tokens"] for v in t["contribution"]),
        "margin": _scale(p["push"] for p in pushes),
    }


def _table_vs_torch(build: BuildReader) -> dict | None:
    """The whole table against PyTorch (the classifier stage's summary), or None while the stage
    has not finished (a killed build has some splits' verdicts before its summary)."""
    try:
        return build.classifier_summary().get("table_vs_torch")
    except Missing:
        return None


def _explained(
    build: BuildReader, pre: Preprocessed, claim: Claim | None, evidences: list[dict], stems: PassageStems
) -> dict:
    """The verdict explained: a course claim's from the build (its stored input and verdicts), a
    typed claim's from its model input (the claim's stems joined with its passages')."""
    if claim is not None:
        return explain_claim(build, claim.id, "retrieved")
    classifier = build.classifier()
    passages = [stems.of_passage(e["id"], e["text"]) for e in evidences if e["text"] is not None]
    model_text = join_row(pre.text(), passages)
    return {**explain_input(classifier, classifier.vocab.encode(model_text), model_text), "notebook": None}


def classifier_section(
    build: BuildReader, pre: Preprocessed, claim: Claim | None, split: str | None, retrieval: dict, stems: PassageStems
) -> Section:
    """The model input, both protocols' verdicts and each token's share (:mod:`claimtrace.explain.verdict`)."""
    if retrieval.get("status") != "ok":
        return Section(
            missing(
                "retrieval",
                "the model reads the retrieved passages, and retrieval is not built yet: "
                + retrieval.get("reason", ""),
            )
        )
    try:
        classifier = build.classifier()
        explained = _explained(build, pre, claim, retrieval["evidences"], stems)
    except Missing as err:
        return Section(missing(err.stage, err.reason))
    whole = _table_vs_torch(build)
    data: dict[str, Any] = {
        "status": "ok",
        "checkpoint": Path(str(classifier.checkpoint)).name,
        "evidence_source": "retrieved",
        "vocabulary": len(classifier.vocab),
        **{key: explained[key] for key in _EXPLAINED},
        "architecture": {**architecture(), "parameters": classifier.parameter_count},
        "contributions": explained["contributions"],
        "bar_scales": _bar_scales(explained),
        "gold_evidence": None,
        # The whole table against PyTorch, computed once at build time (every row, every label).
        "table_vs_torch": whole,
        "course": _course_classifier(whole, claim, explained),
    }
    if claim is not None and claim.label is not None:
        data["gold_evidence"] = build.verdict_table(split, "gold")[claim.id]
    unknown = explained["unknown_tokens"]
    every_word_unknown = unknown and unknown == len(explained["contributions"]["tokens"]) - 2
    return Section(data, (ALL_UNKNOWN,) if every_word_unknown else ())


def _course_classifier(whole: dict | None, claim: Claim | None, explained: dict) -> dict:
    """The course's figures beside this build's: the whole table against PyTorch (``whole``, None
    before the stage's summary), and claim-752's model input."""
    figures = {
        "table_vs_torch": course.pair("table_vs_torch", None if whole is None else whole["max_abs_diff_float32"])
    }
    if claim is not None and claim.id == course.WALKTHROUGH_CLAIM:
        figures["real_tokens"] = course.pair("claim752_real_tokens", explained["real_tokens"])
        figures["pad_tokens"] = course.pair("claim752_pad_tokens", explained["pad_tokens"])
    return figures
