"""The walkthrough's sections, one per pipeline stage, as plain functions of a build.

Each function takes the build (:class:`claimtrace.workdir.reader.Build`) and what the section is
about, and returns a JSON-serialisable dict; the HTML pages and the JSON routes render the same
dict. Every section carries ``"status"``: ``"ok"``, or ``"missing"`` with a ``"reason"`` naming
what is not built yet (the page says so instead of failing). Nothing here re-implements a stage:
sections read the build and call the stage functions (preprocess, the tagging vectorizer, the
retrieval model, :mod:`claimtrace.explain.verdict`) for the one claim they show.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from claimtrace import constants as C
from claimtrace import course
from claimtrace.data.files import Claim
from claimtrace.errors import REPAIR_HINT, DataError, Missing
from claimtrace.evaluation.scorer import evidence_f, evidence_scores
from claimtrace.explain.retrieval import RetrievalView
from claimtrace.explain.verdict import explain_claim, explain_input
from claimtrace.models.inputs import join_row
from claimtrace.pipeline.preprocess import Preprocessed, preprocess, stopwords
from claimtrace.pipeline.retrieval import Query, Retriever, Scores, notebook_order, notebook_weights
from claimtrace.pipeline.tagging import restem_tags, restem_token, tag_rows
from claimtrace.workdir.reader import Build, protocol_verdicts

#: Rows of the "passed the filter" table kept in a trace (the count is always exact).
MAX_PASSED_ROWS = 100
#: Passages that came closest without passing, shown beside the filter.
NEAR_MISSES = 5


def missing(stage: str, reason: str) -> dict:
    return {"status": "missing", "stage": stage, "reason": reason}


def _scale(values) -> float:
    """Half the width of a diverging bar: the largest magnitude among ``values``."""
    return float(max((abs(v) for v in values), default=0.0))


# --- one claim, computed once ---------------------------------------------------------------------


@dataclass
class ClaimRetrieval:
    """A claim's retrieval, computed once per trace and handed to every section that shows it.

    ``record``: the build's retrieval record (a typed claim's is computed here, ``source``
    ``"computed"``); ``query``: its tag string as the retrieval model reads it, stemmed again
    once (the quirk "stems of stems", :func:`claimtrace.pipeline.tagging.restem_tags`); ``tag_terms``:
    what each distinct tag became in that pass; ``scores``: every passage it touches, from the
    one kernel pass (:meth:`claimtrace.pipeline.retrieval.Retriever.retrieve_with_scores`)."""

    retriever: Retriever
    record: dict
    source: str
    query: Query
    tag_terms: dict[str, list[str]]
    scores: Scores


def claim_retrieval(build: Build, pre: Preprocessed, claim: Claim | None, split: str | None) -> ClaimRetrieval:
    """The claim's :class:`ClaimRetrieval`: the build's record for a course claim, the build's
    model run once for any other text. Missing before the retrieval stage."""
    retriever = build.retriever()
    tags = build.retrieval(split)[claim.id]["tags"] if claim is not None else pre.tags()
    restemmed, tag_terms = restem_tags(tags)
    query = retriever.query(tags, restemmed)
    if claim is not None:
        record, source, scores = build.retrieval(split)[claim.id], "build", retriever.scores(query)
    else:
        result, scores = retriever.retrieve_with_scores(query)
        record, source = retriever.as_record("typed claim", result, ()), "computed"
    return ClaimRetrieval(retriever, record, source, query, tag_terms, scores)


@dataclass
class PassageStems:
    """Each passage's stems (the final preprocessing), found once per trace: the tagging section
    and the model input both read them. A corpus passage's come from the build
    (:meth:`~claimtrace.workdir.reader.Build.passage_stems`), never recomputed; only a passage the
    build did not preprocess (a gold passage outside the corpus, or a build made before
    ``tagging/stems.npz``) is preprocessed here."""

    build: Build
    stems: dict[str, str] = field(default_factory=dict)

    def of(self, passage_id: str, text: str) -> str:
        if passage_id not in self.stems:
            self.stems[passage_id] = passage_stems(self.build, passage_id, text)
        return self.stems[passage_id]


def passage_stems(build: Build, passage_id: str, text: str) -> str:
    """One passage's stems, joined: the build's, else its text preprocessed (the same stems)."""
    stored = build.passage_stems(passage_id)
    return stored if stored is not None else preprocess(text, data_dir=build.data_dir).text()


# --- a whole trace --------------------------------------------------------------------------------


def assemble(
    build: Build, text: str, claim: Claim | None = None, split: str | None = None, position: int | None = None
) -> dict:
    """One claim (or any text) through every stage: the page's whole data."""
    notes: list[str] = []
    pre = preprocess(text, data_dir=build.data_dir)
    gold = list(claim.evidences) if claim is not None and claim.label is not None else []
    if claim is not None:
        head = {
            "kind": "claim",
            "id": claim.id,
            "split": split,
            "position": position,
            "text": claim.text,
            "label": claim.label,
            "gold": gold,
        }
    else:
        head = {"kind": "text", "id": None, "split": None, "position": None, "text": text, "label": None, "gold": []}
    result: dict[str, Any] = {"claim": head, "build": build_info(build, brief=True)}
    result["preprocess"] = preprocess_section(pre, stopwords(build.data_dir))
    try:
        found: ClaimRetrieval | dict = claim_retrieval(build, pre, claim, split)
    except Missing as err:
        found = missing(err.stage, err.reason)
    stems = PassageStems(build)
    retrieval = retrieval_section(build, found, claim, split, gold, notes)
    result["retrieval"] = retrieval
    retrieved = retrieval.get("evidences") or []
    tagged_id = gold[0] if gold else (retrieved[0]["id"] if retrieved else None)
    result["tagging"] = tagging_section(build, tagged_id, "gold" if gold else "retrieved", notes, stems)
    # The two vectors are shown for the passage that tells most: the first retrieved gold
    # passage, else the first retrieved one, else the first gold one.
    vector_id, vector_role = tagged_id, "gold" if gold else "retrieved"
    for e in retrieved:
        if e["gold"]:
            vector_id, vector_role = e["id"], "retrieved gold"
            break
    else:
        if retrieved:
            vector_id, vector_role = retrieved[0]["id"], "retrieved"
    result["vectorisation"] = vectorisation_section(build, found, vector_id, vector_role)
    result["classifier"] = classifier_section(build, pre, claim, split, retrieval, notes, stems)
    result["fixes"] = fixes_section(build, claim, split)
    if not pre.stems:
        notes.insert(
            0,
            "No word survived the preprocessing (stopwords, digits and punctuation are dropped): "
            "the claim has no tags.",
        )
    result["notes"] = notes
    return result


# --- 1. preprocessing -----------------------------------------------------------------------------


def preprocess_section(pre, drop: frozenset[str] | set[str]) -> dict:
    """Each token's fate (kept, stopword, not alphabetic), the kept words, stems and tags."""
    fates = []
    for token in pre.tokens:
        why = "stopword" if token in drop else ("not alphabetic" if not token.isalpha() else None)
        fates.append({"token": token, "dropped": why})
    return {
        "status": "ok",
        "tokens": pre.tokens,
        "token_fates": fates,
        "kept": pre.kept,
        "stems": pre.stems,
        "tags": sorted(pre.stems),
    }


# --- 2. tagging -----------------------------------------------------------------------------------


def passage_top(build: Build, stems: str) -> dict:
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


def stored_tags(build: Build, passage_id: str) -> list[str] | None:
    """The build's tags of a passage it can retrieve (None for one without usable tags, or
    before the retrieval stage, whose model holds them)."""
    try:
        retriever = build.retriever()
    except Missing:
        return None
    position = retriever.position(passage_id)
    return None if position is None else retriever.tags[position].split()


def tagging_section(
    build: Build, passage_id: str | None, role: str, notes: list[str], stems: PassageStems | None = None
) -> dict:
    try:
        vectorizer = build.tagging_vectorizer()
        summary = build.tagging_summary()
    except Missing as err:
        return missing(err.stage, err.reason)
    last = str(vectorizer.feature_names[-1])
    section: dict[str, Any] = {
        "status": "ok",
        "corpus": build.build_record()["corpus"],
        "features": len(vectorizer.feature_names),
        "fit_documents": int(vectorizer.n_docs_),
        "ngram_range": list(vectorizer.ngram_range),
        "per_passage": C.TAGS_PER_PASSAGE,
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
        "course": {
            "last_feature": course.pair("last_feature", last),
            "passages_with_last_feature": course.pair(
                "passages_with_last_feature", summary.get("passages_with_last_feature")
            ),
            # The course printed 14.1%: one decimal place.
            "share_with_last_feature": course.pair(
                "share_with_last_feature", summary.get("share_with_last_feature"), close=0.0005
            ),
            "passages": course.pair("passages", summary.get("passages")),
        },
    }
    if passage_id is not None:
        text = build.passage_text(passage_id)
        if text is None:
            notes.append(f"Passage {passage_id} is not in this build's corpus.")
        else:
            detail = passage_top(build, (stems or PassageStems(build)).of(passage_id, text))
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
            if stored is not None and stored != detail["tags"]:
                notes.append(
                    f"The tags recomputed here for {passage_id} differ from the build's: "
                    f"{' '.join(detail['tags'])} vs {' '.join(stored)}."
                )
            section["passage"] = detail
    return section


def padding_example(build: Build) -> dict | None:
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


# --- 3. vectorisation -----------------------------------------------------------------------------


def tag_terms(
    vocabulary, tags: list[str], shared: set[str], terms_of: dict[str, list[str]] | None = None
) -> list[dict]:
    """Each distinct tag as the retrieval model reads it, so overlap and cosine can be checked by
    hand: overlap counts the raw tags, cosine only the re-stemmed terms in the vocabulary.

    Parameters
    ----------
    vocabulary : Mapping[str, int]
        The retrieval vectorizer's term -> column.
    tags : list of str
        A tag string split on whitespace (duplicates are dropped: overlap uses sets).
    shared : set of str
        The tags the other side also has.
    terms_of : dict, optional
        tag -> its terms, when the tag string has been stemmed again already
        (:func:`claimtrace.pipeline.tagging.restem_tags`); else each tag is (:func:`restem_token`).

    Returns
    -------
    list of dict
        ``{"tag", "term", "in_vocabulary", "shared"}`` per distinct tag, sorted; ``term`` is the
        tag stemmed again (empty when nothing survives).
    """
    rows = []
    for tag in sorted(set(tags)):
        terms = terms_of[tag] if terms_of is not None else restem_token(tag.lower())
        rows.append(
            {
                "tag": tag,
                "term": " ".join(terms),
                "in_vocabulary": bool(terms) and all(t in vocabulary for t in terms),
                "shared": tag in shared,
            }
        )
    return rows


def vectorisation_section(
    build: Build, found: ClaimRetrieval | dict, passage_id: str | None, role: str = "gold"
) -> dict:
    """The claim's and one passage's tag vectors under the retrieval model, and their cosine,
    overlap and score as the build's model computes them."""
    if not isinstance(found, ClaimRetrieval):
        return found  # the retrieval stage is missing
    retriever, query = found.retriever, found.query
    names = retriever.vectorizer.feature_names
    claim_terms = {str(names[t]): float(v) for t, v in zip(query.terms.tolist(), query.weights.tolist())}
    restemmed = query.restemmed
    tags = query.text.split()
    changes = [f"{a} → {b}" for a, b in zip(tags, restemmed) if a != b] if len(tags) == len(restemmed) else []
    section: dict[str, Any] = {
        "status": "ok",
        "features": len(names),
        "fit_passages": len(retriever),
        "excluded_passages": int(retriever.excluded),
        "claim": {
            "tags": tags,
            "restemmed": restemmed,
            "restem_changes": changes,
            "out_of_vocabulary": [t for t in restemmed if t not in retriever.vocabulary],
            "terms": [{"term": k, "weight": v} for k, v in sorted(claim_terms.items())],
            "tag_terms": tag_terms(retriever.vocabulary, tags, set(), found.tag_terms),
        },
        "passage": None,
    }
    if passage_id is None:
        return section
    if passage_id not in build.passages():
        section["passage"] = {"id": passage_id, "role": role, "in_build": False}
        return section
    position = retriever.position(passage_id)
    passage_tags = [] if position is None else retriever.tags[position].split()
    row = notebook_weights(retriever.vectorizer.counts([" ".join(passage_tags)]), retriever.idf)
    passage_terms = {str(names[i]): float(v) for i, v in zip(row.indices.tolist(), row.data.tolist())}
    products = [
        {"term": t, "claim": claim_terms[t], "passage": passage_terms[t], "product": claim_terms[t] * passage_terms[t]}
        for t in sorted(set(claim_terms) & set(passage_terms))
    ]
    claim_set, passage_set = set(tags), set(passage_tags)
    shared = claim_set & passage_set
    section["claim"]["tag_terms"] = tag_terms(retriever.vocabulary, tags, shared, found.tag_terms)
    cosine = overlap = score = 0.0
    if position is not None:
        cos, ov, sc, _ = retriever.point_columns(query, [position])
        cosine, overlap, score = float(cos[0]), float(ov[0]), float(sc[0])
    section["passage"] = {
        "id": passage_id,
        "role": role,
        "in_build": True,
        "retrievable": position is not None,
        "tags": passage_tags,
        "tag_terms": tag_terms(retriever.vocabulary, passage_tags, shared),
        "terms": [{"term": k, "weight": v} for k, v in sorted(passage_terms.items())],
        "products": products,
        "cosine": cosine,
        "shared_tags": sorted(shared),
        "shared": len(shared),
        "claim_tag_count": len(claim_set),
        "passage_tag_count": len(passage_set),
        "overlap": overlap,
        "score": score,
        "passes": cosine > C.COSINE_THRESHOLD and overlap > C.OVERLAP_THRESHOLD,
    }
    return section


# --- 4. retrieval ---------------------------------------------------------------------------------


def missed_gold(found: ClaimRetrieval, build: Build, gold: list[str]) -> list[dict]:
    """Every gold passage the claim did not get back, with its numbers and the first rule that
    stopped it (:class:`claimtrace.explain.retrieval.RetrievalView`, which also explains a compared run's
    passages), in gold order; from the trace's one query and kernel pass."""
    record = found.record
    view = RetrievalView(build, record, found.scores.score, found.query)
    return view.passages([pid for pid in gold if pid not in record["evidences"]], gold)


def retrieval_section(
    build: Build,
    found: ClaimRetrieval | dict,
    claim: Claim | None,
    split: str | None,
    gold: list[str],
    notes: list[str],
) -> dict:
    """The filter, the sorts, the cut and the fallback for one claim: the build's record, and
    the rows around it (every passage that passed, the nearest misses)."""
    if not isinstance(found, ClaimRetrieval):
        return found  # the retrieval stage is missing
    retriever, record, source = found.retriever, found.record, found.source
    gold_set = set(gold)
    positions, cosine, overlap, score, shared, passing = found.scores
    rows = np.flatnonzero(passing)
    kept_rank: dict[int, int] = {}
    if len(rows):
        order = notebook_order(cosine[rows], overlap[rows], score[rows], shared[rows])
        kept_rank = {int(rows[o]): rank for rank, o in enumerate(order.tolist(), 1)}
    display = rows[np.argsort(-score[rows], kind="stable")] if len(rows) else rows

    def describe(k: int) -> dict:
        pid = retriever.ids[int(positions[k])]
        return {
            "id": pid,
            "text": build.passage_text(pid),
            "tags": retriever.tags[int(positions[k])].split(),
            "cosine": float(cosine[k]),
            "overlap": float(overlap[k]),
            "score": float(score[k]),
            "shared": int(shared[k]),
            "gold": pid in gold_set,
        }

    passed_rows = []
    for k in display[:MAX_PASSED_ROWS].tolist():
        row = describe(k)
        row["kept"] = k in kept_rank
        row["kept_rank"] = kept_rank.get(k)
        row["returned"] = kept_rank.get(k, C.MAX_EVIDENCES + 1) <= C.MAX_EVIDENCES
        passed_rows.append(row)
    failing = np.flatnonzero(~passing)
    near = failing[np.argsort(-score[failing], kind="stable")][:NEAR_MISSES] if len(failing) else failing
    near_misses = []
    for k in near.tolist():
        row = describe(k)
        why = []
        if cosine[k] <= C.COSINE_THRESHOLD:
            why.append(f"cosine {cosine[k]:.3f} is not above {C.COSINE_THRESHOLD}")
        if overlap[k] <= C.OVERLAP_THRESHOLD:
            why.append(f"overlap {overlap[k]:.3f} is not above {C.OVERLAP_THRESHOLD}")
        row["why"] = why
        near_misses.append(row)
    by_id = {k["id"]: k for k in record["kept"]}
    evidences = []
    for rank, pid in enumerate(record["evidences"], 1):
        kept = by_id.get(pid, {})
        evidences.append(
            {
                "rank": rank,
                "id": pid,
                "text": build.passage_text(pid),
                "gold": pid in gold_set,
                "cosine": kept.get("cosine"),
                "overlap": kept.get("overlap"),
                "score": kept.get("score"),
                "shared": kept.get("shared"),
            }
        )
    max_shared = max((r["shared"] for r in record["kept"]), default=0) if not record["fallback"] else None
    passages = build.passages()
    missed = missed_gold(found, build, gold)
    section: dict[str, Any] = {
        "status": "ok",
        "source": source,
        "claim_tags": record["tags"],
        "thresholds": {
            "cosine": C.COSINE_THRESHOLD,
            "overlap": C.OVERLAP_THRESHOLD,
            "score": C.SCORE_THRESHOLD,
            "max_evidences": C.MAX_EVIDENCES,
            "cosine_in_score": C.COSINE_WEIGHT_IN_SCORE,
        },
        "candidates": int(len(positions)),
        "passages": len(retriever),
        "passed": int(record["passed"]),
        "passed_rows": passed_rows,
        "passed_rows_truncated": max(0, int(len(rows)) - MAX_PASSED_ROWS),
        "max_shared": max_shared,
        "kept": len(record["kept"]) if not record["fallback"] else 0,
        "fallback": bool(record["fallback"]),
        "near_misses": near_misses,
        "evidences": evidences,
        "gold": [{"id": g, "retrieved": g in record["evidences"], "in_build": g in passages} for g in gold],
        "missed_gold": missed,
        "scores": None,
        "split": None,
        "course": {},
    }
    _add_figures(section, build, record, claim, split, gold)
    if record["fallback"]:
        notes.append(
            "Nothing passed the filter: the retrieved passages are the notebook's fallback, "
            "the top six by score over every passage."
        )
    return section


def _add_figures(
    section: dict, build: Build, record: dict, claim: Claim | None, split: str | None, gold: list[str]
) -> None:
    """The retrieval section's figures: the claim's evidence F, its split's fallback share, and
    the course's figures beside them."""
    if claim is not None and claim.label is not None:
        precision, recall, f = evidence_scores(record["evidences"], gold)
        section["scores"] = {
            "precision": precision,
            "recall": recall,
            "F": f,
            "gold_retrieved": sum(g in set(record["evidences"]) for g in gold),
            "gold_total": len(gold),
        }
    if split is not None:
        records = build.retrieval(split).values()
        fallbacks = sum(bool(r["fallback"]) for r in records)
        section["split"] = {
            "name": split,
            "claims": len(records),
            "fallbacks": fallbacks,
            "fallback_share": fallbacks / len(records) if records else 0.0,
        }
        if split == "dev":
            # The course printed 47%: a whole percent.
            section["course"]["fallback_share"] = course.pair(
                "dev_fallback_share", section["split"]["fallback_share"], close=0.005
            )
    if claim is not None and claim.id == course.WALKTHROUGH_CLAIM:
        section["course"].update(
            {
                "passed": course.pair("claim752_passed", section["passed"]),
                "kept": course.pair("claim752_kept", section["kept"]),
                "max_shared": course.pair("claim752_max_shared", section["max_shared"]),
                "F": course.pair("claim752_F", section["scores"]["F"] if section["scores"] else None, close=0.005),
            }
        )


# --- 5. the classifier ----------------------------------------------------------------------------


def _table_vs_torch(build: Build) -> dict | None:
    """The whole table against PyTorch (the classifier stage's summary), or None while the stage
    has not finished (a killed build has some splits' verdicts before its summary)."""
    try:
        return build.classifier_summary().get("table_vs_torch")
    except Missing:
        return None


def classifier_section(
    build: Build,
    pre: Preprocessed,
    claim: Claim | None,
    split: str | None,
    retrieval: dict,
    notes: list[str],
    stems: PassageStems | None = None,
) -> dict:
    """The model input, both protocols' verdicts and each token's share (:mod:`claimtrace.explain.verdict`)."""
    if retrieval.get("status") != "ok":
        return missing(
            "retrieval",
            "the model reads the retrieved passages, and retrieval is not built yet: " + retrieval.get("reason", ""),
        )
    try:
        classifier = build.classifier()
        if claim is not None:
            explained = explain_claim(build, claim.id, "retrieved")
        else:
            stems = stems or PassageStems(build)
            passages = [stems.of(e["id"], e["text"]) for e in retrieval["evidences"] if e["text"] is not None]
            model_text = join_row(pre.text(), passages)
            explained = {**explain_input(classifier, classifier.vocab.encode(model_text), model_text), "notebook": None}
    except Missing as err:
        return missing(err.stage, err.reason)
    contributions = explained["contributions"]
    unknown = explained["unknown_tokens"]
    if unknown and unknown == len(contributions["tokens"]) - 2:
        notes.append(
            "None of the model input's words is in the classifier's 5,886-word vocabulary: every one became <unk>."
        )
    section: dict[str, Any] = {
        "status": "ok",
        "checkpoint": Path(str(classifier.checkpoint)).name,
        "evidence_source": "retrieved",
        "vocabulary": len(classifier.vocab),
        **{
            key: explained[key]
            for key in (
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
        },
        "architecture": {**architecture(), "parameters": classifier.parameter_count},
        "contributions": contributions,
        "bar_scales": {
            "summary": max(
                _scale(
                    [
                        contributions["bias"][i],
                        contributions["words_total"][i],
                        contributions["padding"]["contribution"][i],
                        explained["alone"]["logits"][i],
                    ]
                )
                for i in range(len(C.LABELS))
            ),
            "tokens": _scale(v for t in contributions["tokens"] for v in t["contribution"]),
            "margin": _scale(p["push"] for p in contributions["margin"]["for"] + contributions["margin"]["against"]),
        },
        "gold_evidence": None,
        # The whole table against PyTorch, computed once at build time (every row, every label).
        "table_vs_torch": _table_vs_torch(build),
        "course": {"table_vs_torch": course.pair("table_vs_torch", None)},
    }
    whole = section["table_vs_torch"]
    if whole is not None:
        section["course"]["table_vs_torch"] = course.pair("table_vs_torch", whole["max_abs_diff_float32"])
    if claim is not None and claim.id == course.WALKTHROUGH_CLAIM:
        section["course"]["real_tokens"] = course.pair("claim752_real_tokens", explained["real_tokens"])
        section["course"]["pad_tokens"] = course.pair("claim752_pad_tokens", explained["pad_tokens"])
    if claim is not None and claim.label is not None:
        section["gold_evidence"] = build.verdict_table(split, "gold")[claim.id]
    return section


# --- with the fixes ------------------------------------------------------------------------------

#: Why the fixes box has no per-word decomposition for the intended model.
NO_TABLE_FOR_INTENDED = (
    "The exact per-word decomposition above is for the notebook's model only: its bugs make each "
    "word's share a fixed table entry. The intended model has real attention between the words, "
    "so it has no such table; only its verdicts are shown."
)


def fixes_section(build: Build, claim: Claim | None, split: str | None) -> dict:
    """With the fixes: BM25's passages for a course claim (gold marked) and their F beside the
    notebook retrieval's, and the intended model's verdicts on the notebook's evidence, on
    BM25's and (labelled claims) on the gold evidence; the notebook's model on BM25's too.

    Returns ``{"status", "bm25": {"evidences": [{"id", "score", "gold", "text"}], "F"},
    "notebook_F", "verdicts": {model: {source: {protocol: verdict} or None}} or None,
    "verdicts_missing", "note"}``; F is None for an unlabelled claim, a verdict set None where
    the build has none (the intended model on train claims), ``verdicts`` None (and
    ``verdicts_missing`` the reason) before the classifier stage. A typed text has no stored
    BM25 retrieval: ``"status": "none"``.
    """
    if claim is None or split is None:
        return {
            "status": "none",
            "reason": "The build holds BM25's passages and the intended model's verdicts for the course's claims only.",
        }
    labelled = claim.label is not None
    try:
        record = build.bm25_retrieval(split)[claim.id]
        notebook_ids = build.retrieval(split)[claim.id]["evidences"]
    except Missing as err:
        return missing(err.stage, err.reason)
    gold = set(claim.evidences) if labelled else set()
    evidences = [
        {"id": pid, "score": float(score), "gold": pid in gold, "text": build.passage_text(pid)}
        for pid, score in zip(record["evidences"], record["scores"], strict=True)
    ]
    verdicts, verdicts_missing = None, None
    try:  # BM25's passages are worth showing before the classifier stage has run
        verdicts = _fixes_verdicts(build, claim, split)
    except Missing as err:
        verdicts_missing = err.reason
    return {
        "status": "ok",
        "verdicts_missing": verdicts_missing,
        "bm25": {
            "evidences": evidences,
            "F": evidence_f(record["evidences"], claim.evidences) if labelled else None,
            "gold_retrieved": sum(e["gold"] for e in evidences),
            "gold_total": len(claim.evidences) if labelled else None,
        },
        "notebook_F": evidence_f(notebook_ids, claim.evidences) if labelled else None,
        "verdicts": verdicts,
        "note": NO_TABLE_FOR_INTENDED,
    }


def _fixes_verdicts(build: Build, claim: Claim, split: str) -> dict:
    """{model: {source: {protocol: verdict} or None}} of the fixes box (None: not in the build)."""
    sources = (["gold"] if claim.label is not None else []) + ["retrieved", "bm25"]
    more = build.more_verdicts(split)[claim.id]
    stored = {
        "intended": more["intended"],
        "notebook": {**build.verdicts(split)[claim.id], **more["notebook"]},
    }
    # None where the build has no verdict: the intended model is not run on train claims
    return {
        model: {src: protocol_verdicts(by_source[src]) if src in by_source else None for src in sources}
        for model, by_source in stored.items()
    }


def architecture() -> dict:
    """The classifier as the notebook configured it (constants), for the page's summary."""
    return {
        "vocabulary": C.VOCAB_SIZE,
        "embedding": C.EMBED_DIM,
        "layers": C.N_LAYERS,
        "heads": C.N_HEADS,
        "feed_forward": C.FF_DIM,
        "dropout": C.DROPOUT,
        "max_len": C.MAX_LEN,
        "epochs": C.EPOCHS,
        "optimizer": "Adam",
        "learning_rate": C.LEARNING_RATE,
        "batch_size": C.BATCH_SIZE,
        "labels": list(C.LABELS),
        "batch_first_bug": True,
    }


# --- the build and the browser's table ------------------------------------------------------------


def table_payload(build: Build) -> dict:
    """The classifier's exact table for the browser: ``g`` as little-endian float32, base64."""
    classifier = build.classifier()
    g = np.ascontiguousarray(classifier.table.g, dtype="<f4")
    return {
        "labels": list(C.LABELS),
        "formula": "logits = bias + (1/128) * sum_t g[token_t]  (a claim alone, eval mode)",
        "shape": list(g.shape),
        "max_len": C.MAX_LEN,
        "special": {"unk": C.UNK, "cls": C.CLS, "sep": C.SEP, "pad": C.PAD},
        "bias": [float(x) for x in classifier.table.bias],
        "vocab": list(classifier.vocab.tokens),
        "g_encoding": "base64 of little-endian float32, row-major (vocab x labels)",
        "g_float32_bytes": int(g.nbytes),
        "g": base64.b64encode(g.tobytes()).decode("ascii"),
        "checkpoint": Path(str(classifier.checkpoint)).name,
    }


#: The stage whose files a workdir folder holds (anything else belongs to the build as a whole).
_STAGE_OF_FOLDER = {"tagging": "tagging", "retrieval": "retrieval", "bm25": "bm25", "classifier": "classifier"}


def _file_report(build: Build) -> dict:
    """The build's files against its manifest, by size (a stat each: no file is read, so the
    report stays fast on a 1.2M-passage build; ``claimtrace verify`` checks every sha256)."""
    try:
        manifest = build.file_manifest()
    except DataError as err:
        return {"manifest": "damaged", "reason": str(err)}
    if manifest is None:
        return {
            "manifest": "none",
            "reason": "built before claimtrace kept a manifest: run `claimtrace build` to check and record its files",
        }
    return {"manifest": "ok", "recorded": len(manifest.files), "checked": "size", "damaged": build.file_problems()}


def _stage_problem(stage: str, err: DataError) -> dict:
    """A stage's status when reading it failed: not built (Missing), or a file there but
    unreadable ("damaged", the reason naming it); the other stages still report."""
    if isinstance(err, Missing):
        return missing(err.stage, err.reason)
    return {"status": "damaged", "stage": stage, "reason": str(err)}


#: An absolute path inside a message: a slash not preceded by a word (so "and/or" is not one),
#: then path characters; the last part is its name.
_ABSOLUTE_PATH = re.compile(r"(?<![\w.~])/(?:[^\s/:'\"`()]+/)*([^\s/:'\"`()]+)")


def public_paths(value, root: Path):
    """``value`` (JSON data) with the machine's folders taken out of every string: a path in the
    workdir becomes relative to it (the workdir itself ``.``), any other absolute path its file
    name. The site shows what a build holds, not where this machine keeps it."""
    if isinstance(value, dict):
        return {key: public_paths(item, root) for key, item in value.items()}
    if isinstance(value, list):
        return [public_paths(item, root) for item in value]
    if not isinstance(value, str):
        return value
    for prefix in dict.fromkeys((str(root.resolve()), str(root))):
        value = re.sub(re.escape(prefix) + r"(/|(?![^\s:'\"`()]))", lambda found: "" if found.group(1) else ".", value)
    return _ABSOLUTE_PATH.sub(lambda found: found.group(1), value)


def build_info(build: Build, brief: bool = False) -> dict:
    """What the build holds: its corpus and each stage's status."""
    stages: dict[str, Any] = {}
    try:
        corpus = build.build_record().get("corpus")
    except DataError as err:
        corpus = None
        stages["build"] = _stage_problem("build", err)
    probes = {
        "tagging": [build.tagging_summary],
        "retrieval": [build.retriever],
        "classifier": [build.classifier_summary],
    }
    if not brief:  # the whole report also reads each split's files, so that a damaged one shows here
        probes["retrieval"] += [lambda s=s: build.retrieval(s) for s in C.SPLITS]
        probes["classifier"] += [lambda s=s: build.verdicts(s) for s in C.SPLITS]
    for name, checks in probes.items():
        try:
            for probe in checks:
                probe()
            stages[name] = {"status": "ok"}
        except DataError as err:
            stages[name] = _stage_problem(name, err)
    files = _file_report(build)
    for name, problem in files.get("damaged", {}).items():  # a stage with a damaged file is not "ok"
        stage = _STAGE_OF_FOLDER.get(name.split("/")[0], "build")
        if stages.get(stage, {}).get("status", "ok") == "ok":
            stages[stage] = {
                "status": "damaged",
                "stage": stage,
                "reason": f"{name}: damaged ({problem}): {REPAIR_HINT}",
            }
    info = {
        "workdir": str(build.root),
        "corpus": corpus,
        "stages": stages,
        "files": files,
        "course": course.corpus_note(corpus),
    }
    if not brief:
        info["retrieval_files"] = {s: build.work.retrieval(s).is_file() for s in C.SPLITS}
        try:
            info["checkpoint"] = build.classifier_summary()["checkpoint"]
        except DataError:
            info["checkpoint"] = None
        try:
            info["tagging_summary"] = build.tagging_summary()
        except DataError:
            info["tagging_summary"] = None
    return public_paths(info, build.root)  # what the build holds, not where this machine keeps it
