"""A typed text's retrieval with its scores under the submission's rule, paired: the walkthrough's
former three kernel passes (the retrieval, the rule's columns, the notebook's pass for its mask)
against the one rule path's two (:func:`claimtrace.explain.retrieval.retrieval_and_scores_under`:
the retrieval, then the rule's columns masked by the rule's own tests).

    .venv/bin/python bench/bench_rule_retrieval.py --workdir BUILD [--data DIR] [--rounds 30]

Every dev claim's tag string, both ways in turn each round (interleaved, so that the shared
machine's load falls on both); prints each way's median ms per claim and the median of the
rounds' new/old ratios with its seeded bootstrap 95% interval. The masks are checked equal first.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from claimtrace.data.files import find_data_dir
from claimtrace.explain.retrieval import retrieval_and_scores_under, retrieval_under, rule_named
from claimtrace.workdir.reader import BuildReader


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", required=True, type=Path)
    parser.add_argument("--data", default=None, type=Path)
    parser.add_argument("--rounds", default=30, type=int)
    args = parser.parse_args()
    build = BuildReader(args.workdir, find_data_dir(args.data))
    rule, retriever = rule_named("submission"), build.retriever()
    queries = []
    for claim in build.claims("dev").values():
        tags = build.preprocessor.preprocess(claim.text).tags()
        queries.append(retriever.query(tags, retriever.restemmer.restem_tags(tags)[0]))

    def three_passes(query):
        columns = retriever.scores(query, rule.cosine_in_score)
        return retrieval_under(retriever, query, rule), columns._replace(passing=retriever.scores(query).passing)

    def rule_path(query):
        return retrieval_and_scores_under(retriever, query, rule)

    for query in queries:
        assert np.array_equal(three_passes(query)[1].passing, rule_path(query)[1].passing)
    old, new = [], []
    for _ in range(args.rounds):
        for way, times in ((three_passes, old), (rule_path, new)):
            start = time.perf_counter()
            for query in queries:
                way(query)
            times.append((time.perf_counter() - start) / len(queries) * 1000)
    ratios = np.array(new) / np.array(old)
    rng = np.random.default_rng(0)
    boots = [np.median(rng.choice(ratios, len(ratios))) for _ in range(5000)]
    print(
        f"{len(queries)} dev claims x {args.rounds} rounds: three passes {np.median(old):.3f} ms, "
        f"the rule path {np.median(new):.3f} ms per claim; new/old {np.median(ratios):.3f} "
        f"[{np.percentile(boots, 2.5):.3f}, {np.percentile(boots, 97.5):.3f}]; load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
