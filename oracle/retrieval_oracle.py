"""Oracle for the retrieval stage: the notebook's calls with pandas 2.0.3, scikit-learn 1.2.2 and
numpy 1.24 (notebook cells v0lvNHEgdhvq, PzNT41HfjApo, 6a3krRq1PlTG, aH73ZZERIdNa).

Usage: retrieval_oracle.py INPUT.json OUTPUT.json
INPUT: {"cases": [{"passages": [[evidence_id, tag_string], ...] (canonical order),
                   "claims": [[claim_id, claim_string], ...] (tags, or raw text),
                   "cosine_twice": true, "columns_for": [claim_id, ...] (optional)}]}
OUTPUT: {"cases": [{"error": null | "ExceptionType: message", "passages": n kept by read_csv/dropna,
                    "features": [...], "idf": [...],
                    "claims": {claim_id: {"evidences": [...], "fallback": bool, "passed": n,
                                          "kept": [[id, cosine, overlap, score, max_match], ...],
                                          "columns": {column: [every passage's value]} (columns_for)}}}]}
Floats travel as JSON numbers (repr round-trips float64 exactly).

The one departure from the notebook, shared with claimtrace: a claim with no tags would divide by
zero in the overlap; here its overlap is 0 for every passage.
"""

import io
import json
import sys
import warnings
from functools import cache

import pandas as pd
from notebook_path import notebook_preprocess
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import cosine_similarity

# TfidfVectorizer(tokenizer=...) warns that token_pattern is unused, once per fit.
warnings.filterwarnings("ignore", message="The parameter 'token_pattern' will not be used")


def passages_frame(passages):
    """The tagged passages as the retrieval cells saw them: written to CSV by the tagging run,
    read back with read_csv, rows without tags dropped (``dropna(subset=['evidence_tags'])``)."""
    frame = pd.DataFrame({"evidence_id": [p[0] for p in passages], "evidence_tags": [p[1] for p in passages]})
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False)
    buffer.seek(0)
    return pd.read_csv(buffer).dropna(subset=["evidence_tags"])


@cache
def preprocess_once(text):
    """notebook_preprocess, remembered per text (a pure function: the fit, the transform and the
    claims of several cases see the same texts again)."""
    return tuple(notebook_preprocess(text))


def tag_vectorizer():
    return TfidfVectorizer(
        tokenizer=preprocess_once,
        max_df=0.5,
        min_df=3,
        max_features=1000,
        ngram_range=(1, 1),
        use_idf=True,
        norm="l2",
    )


def overlap_rate(claim_words, evidence_words):
    """compute_overlap_rate on the two tag sets."""
    if not claim_words:  # the notebook raised ZeroDivisionError here; claimtrace's choice
        return 0.0
    return len(claim_words.intersection(evidence_words)) / min(len(claim_words), len(evidence_words))


def shared_count(claim_words, evidence_words):
    """find_max_overlap_word_count on the two tag sets."""
    return len(claim_words.intersection(evidence_words))


def top_evidence(claim_tags, evidence_tfidf, vectorizer, evidence_df, evidence_sets=None, cosine_twice=True, top_n=6):
    """The notebook's find_top_evidence; returns (ids, fallback, passed, kept frame).

    With ``evidence_sets=None`` the two columns are computed literally as the notebook did,
    ``evidence_df['evidence_tags'].apply(lambda evidence_tags: ...)`` splitting both tag strings
    per row (bench/bench_retrieval.py times this). Otherwise ``evidence_sets`` is the list of
    ``set(tags.split())`` of the frame's rows, made once: the sets, the Python int divisions and
    the float64/int64 Series aligned on the frame's index are the same, built with list
    comprehensions only to save the oracle's time.
    """
    claim_tfidf = vectorizer.transform([claim_tags])
    similarities = cosine_similarity(claim_tfidf, evidence_tfidf).flatten()
    if evidence_sets is None:
        overlaps = evidence_df["evidence_tags"].apply(
            lambda evidence_tags: overlap_rate(set(claim_tags.split()), set(evidence_tags.split()))
        )
    else:
        claim_words = set(claim_tags.split())
        shared = [len(claim_words.intersection(words)) for words in evidence_sets]
        if claim_words:
            rates = [m / min(len(claim_words), len(words)) for m, words in zip(shared, evidence_sets)]
        else:  # the notebook raised ZeroDivisionError here; claimtrace's choice
            rates = [0.0] * len(shared)
        overlaps = pd.Series(rates, index=evidence_df.index, dtype="float64")
    similarities_again = cosine_similarity(claim_tfidf, evidence_tfidf).flatten()
    if cosine_twice:
        combined = similarities + overlaps + similarities_again
    else:
        combined = similarities + overlaps
    evidence_df["similaritie"] = similarities
    evidence_df["overlap_rate"] = overlaps
    evidence_df["combined_score"] = combined
    if evidence_sets is None:
        evidence_df["max_match"] = evidence_df["evidence_tags"].apply(
            lambda evidence_tags: shared_count(set(claim_tags.split()), set(evidence_tags.split()))
        )
    else:
        evidence_df["max_match"] = pd.Series(shared, index=evidence_df.index, dtype="int64")

    passing = evidence_df.query("similaritie > 0.55 and overlap_rate > 0.5 and combined_score > 1.5")
    if passing.empty:
        kept = evidence_df.sort_values(by="combined_score", ascending=False).head(top_n)
        return list(kept["evidence_id"]), True, 0, kept
    ranked = passing.sort_values(by=["overlap_rate", "similaritie"], ascending=[False, False])
    ranked = ranked.sort_values(by="combined_score", ascending=False)
    best = max(ranked["max_match"])
    kept = ranked[ranked.max_match == best]
    return list(kept.head(top_n)["evidence_id"]), False, len(passing), kept


def run_case(case):
    out = {"error": None}
    try:
        evidence_df = passages_frame(case["passages"])
        out["passages"] = int(len(evidence_df))
        vectorizer = tag_vectorizer()
        vectorizer.fit(evidence_df["evidence_tags"])
        evidence_tfidf = vectorizer.transform(evidence_df["evidence_tags"])
    except Exception as error:  # the notebook would have stopped here too
        out["error"] = f"{type(error).__name__}: {error}"
        return out
    out["features"] = vectorizer.get_feature_names_out().tolist()
    out["idf"] = vectorizer.idf_.tolist()
    evidence_sets = [set(tags.split()) for tags in evidence_df["evidence_tags"]]
    claims = {}
    columns_for = set(case.get("columns_for", ()))
    for claim_id, claim_string in case["claims"]:
        ids, fallback, passed, kept = top_evidence(
            claim_string, evidence_tfidf, vectorizer, evidence_df, evidence_sets, case.get("cosine_twice", True)
        )
        claims[claim_id] = {
            "evidences": ids,
            "fallback": fallback,
            "passed": passed,
            "kept": [
                [
                    row.evidence_id,
                    float(row.similaritie),
                    float(row.overlap_rate),
                    float(row.combined_score),
                    int(row.max_match),
                ]
                for row in kept.itertuples()
            ],
        }
        if claim_id in columns_for:
            claims[claim_id]["columns"] = {
                name: evidence_df[name].tolist()
                for name in ("evidence_id", "similaritie", "overlap_rate", "combined_score", "max_match")
            }
    out["claims"] = claims
    return out


def main(source, target):
    with open(source, encoding="utf-8") as handle:
        spec = json.load(handle)
    result = {"cases": [run_case(case) for case in spec["cases"]]}
    with open(target, "w", encoding="utf-8") as handle:
        json.dump(result, handle, ensure_ascii=False)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
