"""The LLM harness's protocol (claimtrace.evaluation.llm): the sample both halves share, the
prompt, how an answer is judged, the probe's overlap."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections import Counter

import pytest

from claimtrace.constants import LABELS
from claimtrace.evaluation import llm as P


def _pool(counts: dict[str, int]) -> dict[str, str]:
    labels = [label for label, n in counts.items() for _ in range(n)]
    return {f"claim-{i}": label for i, label in enumerate(labels)}


DEV_COUNTS = {"SUPPORTS": 68, "REFUTES": 27, "NOT_ENOUGH_INFO": 41, "DISPUTED": 18}


def test_the_order_is_the_sha256_of_seed_and_id_ascending():
    ids = [f"claim-{i}" for i in range(30)]
    order = P.hash_order(ids, 7)
    digests = [hashlib.sha256(f"7:{cid}".encode()).hexdigest() for cid in order]
    assert digests == sorted(digests) and sorted(order) == sorted(ids)
    assert P.hash_order(ids, 8) != order


def test_an_unstratified_sample_is_the_first_n_of_the_order():
    pool = _pool(DEV_COUNTS)
    assert P.sample_ids(pool, 20, 3) == P.hash_order(list(pool), 3)[:20]
    assert P.sample_ids(pool, 500, 3) == P.hash_order(list(pool), 3)


@pytest.mark.parametrize(
    ("counts", "n", "expected"),
    [
        (DEV_COUNTS, 20, {"SUPPORTS": 9, "REFUTES": 4, "NOT_ENOUGH_INFO": 5, "DISPUTED": 2}),
        # remainders 0.48 (SUPPORTS), 0.99 (REFUTES), 0.50 (NEI), 0.04 (DISPUTED): then DISPUTED,
        # at none, takes one from the tie SUPPORTS / NEI at 2, SUPPORTS first
        (
            {"SUPPORTS": 68, "REFUTES": 27, "NOT_ENOUGH_INFO": 41, "DISPUTED": 1},
            5,
            {"SUPPORTS": 1, "REFUTES": 1, "NOT_ENOUGH_INFO": 2, "DISPUTED": 1},
        ),
        (
            {"SUPPORTS": 10, "REFUTES": 10, "NOT_ENOUGH_INFO": 10, "DISPUTED": 10},
            2,
            {"SUPPORTS": 1, "REFUTES": 1, "NOT_ENOUGH_INFO": 0, "DISPUTED": 0},
        ),
    ],
)
def test_stratified_counts_follow_the_protocol(counts, n, expected):
    assert P.stratified_counts(counts, n) == expected


def test_a_stratified_sample_holds_every_label_in_the_hash_order():
    pool = _pool(DEV_COUNTS)
    sample = P.sample_ids(pool, 20, 11, stratified=True)
    assert Counter(pool[cid] for cid in sample) == Counter(
        {"SUPPORTS": 9, "REFUTES": 4, "NOT_ENOUGH_INFO": 5, "DISPUTED": 2}
    )
    order = P.hash_order(list(pool), 11)
    assert sample == [cid for cid in order if cid in set(sample)]
    for label in LABELS:  # each label's first claims in the order
        theirs = [cid for cid in order if pool[cid] == label]
        assert [cid for cid in sample if pool[cid] == label] == theirs[: sum(pool[c] == label for c in sample)]


def test_the_prompt_shows_each_passage_with_its_id():
    text = P.user_prompt("The sea rises.", [("evidence-1", "Tides."), ("evidence-9", "Ice melts.")])
    assert text == "Claim: The sea rises.\n\nPassages:\n[evidence-1] Tides.\n[evidence-9] Ice melts."
    for label in LABELS:
        assert label in P.SYSTEM_PROMPT_V1
    constants = json.loads(json.dumps(P.protocol_constants()))
    assert constants["prompt_version"] == "v1" and constants["run_key"] == "claimtrace-llm-run"


@pytest.mark.parametrize(
    ("text", "status", "label", "ids"),
    [
        ('{"label": "REFUTES", "evidence_ids": ["a", "b"], "rationale": "r"}', "ok", "REFUTES", ("a", "b")),
        ('Sure.\n```json\n{"label": "SUPPORTS", "evidence_ids": []}\n```\nDone.', "ok", "SUPPORTS", ()),
        ('Here: {"label": "DISPUTED", "evidence_ids": ["x"]} and {"label": "SUPPORTS"}', "ok", "DISPUTED", ("x",)),
        ("I'm sorry, I can't help with that.", "unusable", None, ()),
        ('{"label": "TRUE", "evidence_ids": []}', "unusable", None, ()),
        ('{"label": "SUPPORTS", "evidence_ids": "a"}', "unusable", None, ()),
        ('{"label": "SUPPORTS", "evidence_ids": [1]}', "unusable", None, ()),
        ('{"label": "SUPPORTS", "evidence_ids": ', "unusable", None, ()),
        ("", "unusable", None, ()),
    ],
)
def test_an_answer_is_judged_by_its_first_json_object(text, status, label, ids):
    answer = P.judge_answer(text)
    assert (answer.status, answer.label, answer.cited_ids) == (status, label, ids)
    assert (answer.error is None) == (status == "ok")


def test_the_probe_measures_the_true_second_half_repeated_in_order():
    given, truth = P.probe_halves("Global warming is driving polar bears toward extinction")
    assert given == "Global warming is driving" and truth == "polar bears toward extinction"
    assert P.probe_overlap(truth, "polar bears toward extinction, scientists say.") == 1.0
    assert P.probe_overlap(truth, "Polar bears, toward... extinction!") == 1.0
    assert P.probe_overlap(truth, "polar bears are fine") == 0.5
    assert P.probe_overlap(truth, "nothing of the kind") == 0.0
    # read only to the true half's length plus five words
    assert P.probe_overlap(truth, "a b c d e f g h i polar bears toward extinction") == 0.0


def test_the_constants_the_browser_reads_hold_the_probe_and_the_prices():
    constants = P.protocol_constants()
    assert constants["probe_system_prompt"] == P.PROBE_SYSTEM_V1 and constants["near_verbatim"] == 0.8
    assert {"prefix": "gpt-4o-mini", "in": 0.15, "out": 0.60} in constants["prices"]
    assert constants["prices_date"] == P.PRICES_DATE and constants["width_at_half"] == 0.98


def test_a_runs_csv_rows_and_their_quoting():
    awkward = 'It says "no", then\r\nyes'
    run = {
        "c1": P.claim_entry(
            "one", P.judge_answer('{"label": "REFUTES", "evidence_ids": ["e1", "e2"]}'), "x", 1, (1, 1)
        ),
        "c2": P.claim_entry("two", P.judge_answer("no object"), "no object", 1, (1, 1)),
        "c3": P.claim_entry(
            "three",
            P.judge_answer(json.dumps({"label": "SUPPORTS", "evidence_ids": [], "rationale": awkward})),
            "",
            1,
            (1, 1),
        ),
        P.RUN_KEY: {
            "condition": "gold",
            "sample": {"claim_ids": ["c1", "c2", "c4", "c3", "c5"]},
            "failed": {"c4": "HTTP 500"},
        },
    }
    gold = {"c1": "REFUTES", "c2": "SUPPORTS", "c3": "SUPPORTS", "c4": "DISPUTED", "c5": "SUPPORTS"}
    notebook = dict.fromkeys(gold, "NOT_ENOUGH_INFO")
    rows = P.csv_rows(run, gold, notebook)
    assert rows == [
        ["c1", "gold", "ok", "REFUTES", "NOT_ENOUGH_INFO", "REFUTES", "true", "e1 e2", ""],
        ["c2", "gold", "unusable", "SUPPORTS", "NOT_ENOUGH_INFO", "", "false", "", ""],
        ["c4", "gold", "failed", "DISPUTED", "NOT_ENOUGH_INFO", "", "", "", ""],  # c5 was not asked: no row
        ["c3", "gold", "ok", "SUPPORTS", "NOT_ENOUGH_INFO", "SUPPORTS", "true", "", awkward],
    ]
    text = P.csv_text(rows)
    assert text.startswith(",".join(P.CSV_COLUMNS) + "\r\n") and text.endswith('"It says ""no"", then\r\nyes"\r\n')
    assert list(csv.reader(io.StringIO(text, newline=""))) == [list(P.CSV_COLUMNS), *rows]
