"""Retrieval, per claim: the notebook-style pandas path against claimtrace's, in one run.

    .venv/bin/python bench/bench_retrieval.py [--passages 1200000] [--claims 200] [--pandas-claims 5]

A deterministic synthetic corpus stands in for evidence.json's tags: ``--passages`` tag strings
of 1 to 10 distinct stems (about 6 on average) drawn Zipf-like from ``--stems`` made-up stems,
with 14% of passages also carrying one fixed stem (as the notebook's passages carry the padding
tag محمد). Claims are tag strings too: half built around a random passage's tags (these tend to
pass the filter), half drawn at random (these mostly fall back).

* ours: :class:`claimtrace.pipeline.retrieval.Retriever`, fit once (timed apart), then one ``retrieve``
  per claim string, everything included (claim tokenizing, cosine, overlap, filter, sorts,
  fallback).
* notebook: ``find_top_evidence`` as the notebook wrote it (``oracle/retrieval_oracle.py``'s
  ``top_evidence`` in literal mode: cosine_similarity twice over the whole matrix, two
  ``Series.apply`` over every passage, query, sort_values), under ``.venv-oracle`` (pandas
  2.0.3, scikit-learn 1.2.2, numpy 1.24) in a subprocess, on the first ``--pandas-claims`` claims.
  Its vectorizer is fit with a per-token memoised preprocessing (the fit is not timed; the
  synthetic tags are clean tokens, so it equals the notebook's tokenizer on them).

Both paths' evidence ids are compared on the claims the pandas path ran. The ratio printed is
mean notebook ms per claim / mean ours ms per claim (wall clock; ours is also given in CPU time,
which a busy machine inflates less).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ORACLE_PYTHON = REPO / ".venv-oracle" / "bin" / "python"

_CONSONANTS = "bcdfghjklmnprstvwz"
_VOWELS = "aeiou"


def make_stems(n: int, seed: int) -> list[str]:
    """``n`` distinct made-up lowercase stems of 2 to 4 consonant-vowel syllables plus a final
    consonant (so Porter stemming leaves most of them alone)."""
    import numpy as np

    rng = np.random.RandomState(seed)
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        syllables = rng.randint(2, 5)
        word = (
            "".join(
                _CONSONANTS[rng.randint(len(_CONSONANTS))] + _VOWELS[rng.randint(len(_VOWELS))]
                for _ in range(syllables)
            )
            + _CONSONANTS[rng.randint(len(_CONSONANTS))]
        )
        if word not in seen:
            seen.add(word)
            out.append(word)
    return out


def make_corpus(n_passages: int, n_stems: int = 30_000, seed: int = 2024, padding_share: float = 0.14):
    """(ids, tag strings, stems, Zipf probabilities): deterministic for given arguments."""
    import numpy as np

    stems = make_stems(n_stems, seed)
    rng = np.random.RandomState(seed + 1)
    ranks = np.arange(1, n_stems + 1, dtype=np.float64)
    probabilities = 1.0 / (ranks + 2.7) ** 1.07
    probabilities /= probabilities.sum()
    sizes = np.clip(rng.binomial(10, 0.55, size=n_passages), 1, 10)
    draws = rng.choice(n_stems, size=int(sizes.sum() * 1.3) + 64, p=probabilities)
    padded = rng.random_sample(n_passages) < padding_share
    pad_stem = "zyzzogmahad"
    tags: list[str] = []
    cursor = 0
    for i in range(n_passages):
        chosen: list[str] = []
        seen: set[int] = set()
        while len(chosen) < sizes[i]:
            if cursor >= len(draws):
                draws = rng.choice(n_stems, size=1024, p=probabilities)
                cursor = 0
            s = int(draws[cursor])
            cursor += 1
            if s not in seen:
                seen.add(s)
                chosen.append(stems[s])
        if padded[i]:
            chosen.append(pad_stem)
        tags.append(" ".join(chosen))
    ids = [f"evidence-{i}" for i in range(n_passages)]
    return ids, tags, stems, probabilities


def make_claims(n_claims: int, tags: list[str], stems: list[str], probabilities, seed: int = 7) -> list[str]:
    """Claim tag strings (sorted stems, duplicates allowed), half around a passage's tags."""
    import numpy as np

    rng = np.random.RandomState(seed)
    claims = []
    for c in range(n_claims):
        if c % 2 == 0:
            base = tags[rng.randint(len(tags))].split()
            keep = [t for t in base if rng.random_sample() < 0.8] or base[:1]
            extra = [stems[i] for i in rng.choice(len(stems), size=rng.randint(0, 3), p=probabilities)]
            words = keep + extra
        else:
            words = [stems[i] for i in rng.choice(len(stems), size=rng.randint(3, 9), p=probabilities)]
        claims.append(" ".join(sorted(words)))
    return claims


# --- the pandas path (runs under .venv-oracle) ----------------------------------------------------


def pandas_worker(spec_path: str, out_path: str) -> None:
    """Fit the notebook's vectorizer on the corpus and time find_top_evidence per claim."""

    sys.path.insert(0, str(REPO / "oracle"))
    import pandas as pd
    import retrieval_oracle as oracle
    from notebook_path import notebook_preprocess
    from sklearn.feature_extraction.text import TfidfVectorizer

    with open(spec_path, encoding="utf-8") as handle:
        spec = json.load(handle)

    @functools.cache
    def stems_of(token):
        return tuple(notebook_preprocess(token))

    def memoised_preprocess(text):  # clean tag tokens: the same stems, token by token
        out = []
        for token in text.split():
            out.extend(stems_of(token))
        return out

    started = time.perf_counter()
    evidence_df = pd.DataFrame({"evidence_id": spec["ids"], "evidence_tags": spec["tags"]})
    vectorizer = TfidfVectorizer(
        tokenizer=memoised_preprocess,
        max_df=0.5,
        min_df=3,
        max_features=1000,
        ngram_range=(1, 1),
        use_idf=True,
        norm="l2",
    )
    vectorizer.fit(evidence_df["evidence_tags"])
    evidence_tfidf = vectorizer.transform(evidence_df["evidence_tags"])
    fit_seconds = time.perf_counter() - started
    results = []
    for claim in spec["claims"]:
        started = time.perf_counter()
        ids, fallback, passed, _ = oracle.top_evidence(claim, evidence_tfidf, vectorizer, evidence_df)
        results.append(
            {"ms": (time.perf_counter() - started) * 1e3, "evidences": ids, "fallback": fallback, "passed": passed}
        )
    with open(out_path, "w", encoding="utf-8") as handle:
        json.dump({"fit_s": fit_seconds, "results": results}, handle)


def run_pandas(ids, tags, claims) -> dict:
    if not ORACLE_PYTHON.exists():
        raise SystemExit(f"{ORACLE_PYTHON} is missing: run `make oracle-env`")
    with tempfile.TemporaryDirectory() as folder:
        spec = Path(folder) / "spec.json"
        out = Path(folder) / "out.json"
        spec.write_text(json.dumps({"ids": ids, "tags": tags, "claims": claims}), encoding="utf-8")
        subprocess.run([str(ORACLE_PYTHON), __file__, "--pandas-worker", str(spec), str(out)], check=True)
        return json.loads(out.read_text(encoding="utf-8"))


# --- main -----------------------------------------------------------------------------------------


def _summary(values: list[float]) -> str:
    import numpy as np

    a = np.asarray(values)
    return f"mean {a.mean():.3f}  median {np.median(a):.3f}  p95 {np.percentile(a, 95):.3f}  max {a.max():.3f}"


def time_ours(retriever, claims: list[str]) -> tuple[list[float], list[float], object, list[int]]:
    """Wall and CPU ms per claim of our path, which claims fell back, passages touched."""
    import numpy as np

    ours_ms, ours_cpu_ms, fallbacks, touched = [], [], [], []
    for claim in claims:
        t0, c0 = time.perf_counter(), time.process_time()
        result = retriever.retrieve(claim)
        ours_ms.append((time.perf_counter() - t0) * 1e3)
        ours_cpu_ms.append((time.process_time() - c0) * 1e3)
        fallbacks.append(result.fallback)
        touched.append(result.touched)
    return ours_ms, ours_cpu_ms, np.array(fallbacks), touched


def _restemmer():
    """The quirk "stems of stems" with the default data folder's preprocessing."""
    from claimtrace.data.files import find_data_dir
    from claimtrace.pipeline.preprocess import Preprocessor
    from claimtrace.pipeline.tagging import Restemmer

    return Restemmer(Preprocessor.of_data_dir(find_data_dir()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passages", type=int, default=1_200_000)
    parser.add_argument("--stems", type=int, default=30_000)
    parser.add_argument("--claims", type=int, default=200, help="claims timed on our path")
    parser.add_argument("--pandas-claims", type=int, default=5, help="claims timed on the pandas path (0: skip)")
    parser.add_argument("--json", dest="as_json", action="store_true", help="also print the figures as JSON")
    parser.add_argument("--pandas-worker", nargs=2, metavar=("SPEC", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.pandas_worker:
        pandas_worker(*args.pandas_worker)
        return

    import numpy as np

    from claimtrace.pipeline.retrieval import Retriever

    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)

    started = time.perf_counter()
    ids, tags, stems, probabilities = make_corpus(args.passages, args.stems)
    claims = make_claims(max(args.claims, args.pandas_claims), tags, stems, probabilities)
    print(
        f"corpus: {len(ids):,} passages, {np.mean([len(t.split()) for t in tags]):.2f} tags each, "
        f"{args.stems:,} stems; {len(claims)} claims; made in {time.perf_counter() - started:.1f}s",
        flush=True,
    )

    started = time.perf_counter()
    retriever = Retriever.fit(ids, tags, _restemmer())
    fit_s = time.perf_counter() - started
    print(f"ours: fit {fit_s:.1f}s ({len(retriever.vectorizer.feature_names)} features)", flush=True)
    # Compile / warm every kernel: both branches, both fallback sorts.
    from claimtrace.pipeline.retrieval import fallback_six

    retriever.retrieve(claims[0])
    retriever.retrieve("")
    fallback_six(np.arange(0, 64, 2), np.ones(32), 64)
    ours_ms, ours_cpu_ms, fb, touched = time_ours(retriever, claims[: args.claims])
    print(f"ours: ms per claim over {len(ours_ms)} claims, wall: {_summary(ours_ms)}")
    print(f"      cpu: {_summary(ours_cpu_ms)}")
    print(
        f"      fallback {int(fb.sum())}/{len(ours_ms)} (wall mean "
        f"{np.mean(np.array(ours_ms)[fb]) if fb.any() else float('nan'):.3f} ms; the others "
        f"{np.mean(np.array(ours_ms)[~fb]) if (~fb).any() else float('nan'):.3f} ms); passages touched per "
        f"claim: median {int(np.median(touched)):,}, max {max(touched):,}"
    )
    report = {
        "passages": len(ids),
        "claims": len(ours_ms),
        "ours_fit_s": fit_s,
        "ours_ms_mean": float(np.mean(ours_ms)),
        "ours_ms_median": float(np.median(ours_ms)),
        "ours_ms_p95": float(np.percentile(ours_ms, 95)),
        "ours_ms_max": float(np.max(ours_ms)),
        "ours_cpu_ms_mean": float(np.mean(ours_cpu_ms)),
        "fallback_share": float(fb.mean()),
        "touched_median": float(np.median(touched)),
    }

    if args.pandas_claims > 0:
        subset = claims[: args.pandas_claims]
        print(f"notebook path: fitting under .venv-oracle, then {len(subset)} claims ...", flush=True)
        pandas = run_pandas(ids, tags, subset)
        pandas_ms = [r["ms"] for r in pandas["results"]]
        # our time on the same claims (re-timed, warm), and the same ids?
        same_ms = []
        agree = 0
        for claim, theirs in zip(subset, pandas["results"]):
            t0 = time.perf_counter()
            result = retriever.retrieve(claim)
            same_ms.append((time.perf_counter() - t0) * 1e3)
            agree += [retriever.ids[p] for p in result.evidences] == theirs["evidences"]
        ratio = float(np.mean(pandas_ms) / np.mean(ours_ms))
        print(f"notebook: fit {pandas['fit_s']:.1f}s; ms per claim over {len(pandas_ms)} claims: {_summary(pandas_ms)}")
        print(f"ours on those claims: {_summary(same_ms)}")
        print(f"same evidence ids, in order: {agree}/{len(subset)}")
        print(f"ratio (notebook mean / ours mean): {ratio:,.0f}x")
        report.update(
            {
                "notebook_fit_s": pandas["fit_s"],
                "notebook_claims": len(pandas_ms),
                "notebook_ms_mean": float(np.mean(pandas_ms)),
                "ours_same_claims_ms_mean": float(np.mean(same_ms)),
                "agree": agree,
                "ratio": ratio,
            }
        )
    if args.as_json:
        print(json.dumps(report))


if __name__ == "__main__":
    main()
