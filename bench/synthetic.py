"""A deterministic, course-scale synthetic evidence.json for benchmarks.

1,208,827 passages (by default) whose lengths in words follow the course corpus's histogram
(notebook.md section 9), with words drawn from a Zipfian distribution over the vocabulary of the
real CLIMATE-FEVER sentences (ranked by their frequency there). Same arguments, same file.

    python bench/synthetic.py --out work/synthetic/evidence.json [--passages N] [--seed S]
"""

from __future__ import annotations

import argparse
import collections
import json
import re
from pathlib import Path

import numpy as np

from claimtrace.constants import EVIDENCE_PASSAGES
from claimtrace.data.files import find_data_dir, load_climate_fever
from claimtrace.lib.build_files import write_atomic

#: Passage lengths in words over the course's 1,208,827 passages: (low, high, count).
LENGTH_BUCKETS = [
    (1, 5, 13_578),
    (6, 10, 180_771),
    (11, 20, 547_481),
    (21, 50, 451_498),
    (51, 100, 15_217),
    (101, 200, 270),
    (201, 400, 12),
]
ZIPF_EXPONENT = 1.07


def real_vocabulary(data_dir: Path) -> list[str]:
    """Words of the CLIMATE-FEVER sentences, most frequent first (ties by first appearance)."""
    counts: collections.Counter[str] = collections.Counter()
    for claim in load_climate_fever(data_dir).values():
        for _, text, _ in claim["evidences"]:
            counts.update(re.findall(r"[^\W_]+(?:'[^\W_]+)?", text))
    return [word for word, _ in counts.most_common()]


def passage_lengths(n: int, rng: np.random.Generator) -> np.ndarray:
    counts = np.array([c for _, _, c in LENGTH_BUCKETS], dtype=np.float64)
    bucket = rng.choice(len(LENGTH_BUCKETS), size=n, p=counts / counts.sum())
    low = np.array([lo for lo, _, _ in LENGTH_BUCKETS])[bucket]
    high = np.array([hi for _, hi, _ in LENGTH_BUCKETS])[bucket]
    return rng.integers(low, high + 1)


def generate(n: int, seed: int, data_dir: Path) -> dict[str, str]:
    rng = np.random.default_rng(seed)
    words = np.array(real_vocabulary(data_dir), dtype=object)
    ranks = np.arange(1, len(words) + 1, dtype=np.float64)
    weights = ranks**-ZIPF_EXPONENT
    cumulative = np.cumsum(weights / weights.sum())
    lengths = passage_lengths(n, rng)
    picks = np.searchsorted(cumulative, rng.random(int(lengths.sum())), side="right")
    picks = np.minimum(picks, len(words) - 1)
    corpus = {}
    start = 0
    for i, length in enumerate(lengths.tolist()):
        sentence = " ".join(words[picks[start : start + length]].tolist())
        corpus[f"evidence-{i}"] = sentence[:1].upper() + sentence[1:] + "."
        start += length
    return corpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--passages", type=int, default=EVIDENCE_PASSAGES)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--data", default=None)
    args = parser.parse_args()
    corpus = generate(args.passages, args.seed, find_data_dir(args.data))
    write_atomic(args.out, json.dumps(corpus, ensure_ascii=False))
    print(f"wrote {len(corpus)} passages to {args.out}")


if __name__ == "__main__":
    main()
