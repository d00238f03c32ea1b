"""The walkthrough's first two stages, on words: the claim's preprocessing (each token's fate,
the stems, the tags) and the tagging vectorizer's top ten of one passage (the stage's figures
beside the course's, and the padding quirk's example)."""

from __future__ import annotations

from typing import Any

from claimtrace import course
from claimtrace.constants import TAGS_PER_PASSAGE
from claimtrace.errors import Missing
from claimtrace.pipeline.preprocess import Preprocessed
from claimtrace.pipeline.tagging import tag_rows
from claimtrace.web.views.status import missing
from claimtrace.web.views.walkthrough.claim import PassageStems, Section, passage_stems
from claimtrace.workdir.reader import BuildReader

#: The note of a claim whose every word the preprocessing dropped.
NO_TAGS = "No word survived the preprocessing (stopwords, digits and punctuation are dropped): the claim has no tags."


# --- 1. preprocessing -----------------------------------------------------------------------------


def preprocess_section(pre: Preprocessed, drop: frozenset[str] | set[str]) -> Section:
    """Each token's fate (kept, stopword, not alphabetic), the kept words, stems and tags."""
    fates = []
    for token in pre.tokens:
        why = "stopword" if token in drop else ("not alphabetic" if not token.isalpha() else None)
        fates.append({"token": token, "dropped": why})
    data = {
        "status": "ok",
        "tokens": pre.tokens,
        "token_fates": fates,
        "kept": pre.kept,
        "stems": pre.stems,
        "tags": sorted(pre.stems),
    }
    return Section(data, () if pre.stems else (NO_TAGS,))


# --- 2. tagging -----------------------------------------------------------------------------------


def passage_top(build: BuildReader, stems: str) -> dict:
    """One passage's top ten under the tagging vectorizer, recomputed with weights from its
    stems."""
    vectorizer = build.tagging_vectorizer()
    names = vectorizer.feature_names
    tagged = tag_rows(vectorizer.transform([stems]), names)[0]
    top = []
    for rank, (index, weight) in enumerate(zip(tagged.top, tagged.weights), 1):
        name = str(names[index])
        top.append(
            {
                "rank": rank,
                "feature": name,
                "index": int(index),
                "weight": float(weight),
                "padding": weight == 0.0,
                "alphabetic": name.isalpha(),
                "tag": name.isalpha(),
            }
        )
    return {
        "stems": stems,
        "top": top,
        "tags": tagged.tags,
        "nopad": tagged.nopad,
        "nonzero": int(sum(w > 0.0 for w in tagged.weights)),
        "zero_weight_tags": [row["feature"] for row in top if row["padding"] and row["tag"]],
    }


def stored_tags(build: BuildReader, passage_id: str) -> list[str] | None:
    """The build's tags of a passage it can retrieve (None for one without usable tags, or
    before the retrieval stage, whose model holds them)."""
    try:
        retriever = build.retriever()
    except Missing:
        return None
    position = retriever.position(passage_id)
    return None if position is None else retriever.tags[position].split()


def tagging_section(build: BuildReader, passage_id: str | None, role: str, stems: PassageStems) -> Section:
    """The tagging stage's figures beside the course's, and one passage's top ten (``role``:
    why it is the one shown) against the tags the build gave it."""
    try:
        vectorizer = build.tagging_vectorizer()
        summary = build.tagging_summary()
    except Missing as err:
        return Section(missing(err.stage, err.reason))
    last = str(vectorizer.feature_names[-1])
    data: dict[str, Any] = {
        "status": "ok",
        "corpus": build.build_record()["corpus"],
        "features": len(vectorizer.feature_names),
        "fit_documents": int(vectorizer.n_docs_),
        "ngram_range": list(vectorizer.ngram_range),
        "per_passage": TAGS_PER_PASSAGE,
        "last_feature": last,
        "last_feature_alphabetic": last.isalpha(),
        "passages": summary.get("passages"),
        "passages_with_last_feature": summary.get("passages_with_last_feature"),
        "share_with_last_feature": summary.get("share_with_last_feature"),
        "untagged_passages": summary.get("untagged_passages"),
        "padded_passages": summary.get("passages_whose_tags_include_padding"),
        "max_features_cut": summary.get("max_features_cut"),
        "passage": None,
        "padding_example": padding_example(build),
        "course": _course_tagging(last, summary),
    }
    if passage_id is None:
        return Section(data)
    text = build.passage_text(passage_id)
    if text is None:
        return Section(data, (f"Passage {passage_id} is not in this build's corpus.",))
    data["passage"] = _tagged_passage(build, passage_id, text, role, stems)
    stored = data["passage"]["build_tags"]
    if stored is not None and stored != data["passage"]["tags"]:
        return Section(
            data,
            (
                f"The tags recomputed here for {passage_id} differ from the build's: "
                f"{' '.join(data['passage']['tags'])} vs {' '.join(stored)}.",
            ),
        )
    return Section(data)


def _course_tagging(last: str, summary: dict) -> dict:
    """The tagging stage's figures the course printed, beside this build's."""
    return {
        "last_feature": course.pair("last_feature", last),
        "passages_with_last_feature": course.pair(
            "passages_with_last_feature", summary.get("passages_with_last_feature")
        ),
        # The course printed 14.1%: one decimal place.
        "share_with_last_feature": course.pair(
            "share_with_last_feature", summary.get("share_with_last_feature"), close=0.0005
        ),
        "passages": course.pair("passages", summary.get("passages")),
    }


def _tagged_passage(build: BuildReader, passage_id: str, text: str, role: str, stems: PassageStems) -> dict:
    """One passage's top ten recomputed from its stems, beside the tags the build stored."""
    detail = passage_top(build, stems.of_passage(passage_id, text))
    stored = stored_tags(build, passage_id) if passage_id in build.passages() else None
    detail.update(
        {
            "id": passage_id,
            "text": text,
            "role": role,
            "build_tags": stored,
            "matches_build": stored is None or stored == detail["tags"],
        }
    )
    return detail


def padding_example(build: BuildReader) -> dict | None:
    """The short passage the tagging stage chose whose tags include the last vocabulary entry
    only as zero-weight padding, with its top ten recomputed."""
    passage_id = build.tagging_summary().get("padding_example")
    text = None if passage_id is None else build.passage_text(passage_id)
    if text is None:
        return None

    def make() -> dict:
        detail = passage_top(build, passage_stems(build, passage_id, text))
        detail.update({"id": passage_id, "text": text, "build_tags": stored_tags(build, passage_id)})
        return detail

    return build.once(("padding_example", passage_id), make)  # the same passage on every page
