"""claimtrace.evaluation.audit: every oddity of a predictions file named, with its count, first
claim ids and cost, on files in every shape the tests write."""

from __future__ import annotations

import pytest

from claimtrace.data.files import load_claims, load_stopwords
from claimtrace.evaluation.audit import report_file
from tests.evaluation.test_submission import as_file, course_rules, odd_shapes


@pytest.fixture(scope="module")
def splits(data_dir):
    return {split: load_claims(split, data_dir) for split in ("dev", "test", "train")}


def codes(value, splits, source="run.json", **given) -> dict[str, dict]:
    report = report_file(value, source, splits, **given)
    return {f.code: f.to_dict() for f in report.findings}


@pytest.mark.parametrize(
    ("shape", "code", "said"),
    [
        ("gold", "gold_labels", "the labels are the gold labels: not a prediction"),
        ("gold", "gold_evidences", "the evidences are the gold lists: not a prediction"),
        ("repeated", "repeated_ids", "of the file's F (the same lists without repeats)"),
        ("null_labels", "odd_labels", "labels outside the four: null (154)"),
        ("odd_labels", "odd_labels", "'SUPPORT' (154)"),
        ("odd_labels", "one_label", "one label for every claim"),
        ("missing_half", "missing", "77 of the 154 dev claims are missing"),
        ("evidence_key", "skipped", "154 entries skipped by the course's scorer: lacking evidences (154)"),
        ("evidence_key", "other_key", "key 'evidence' where the course's shape has"),
        ("not_lists", "not_a_list", "evidences that are not a list: F 0"),
        ("with_train", "other_split", "121 claims of train: ignored by the course's scorer"),
        ("sixteen", "over_six", "more than 6 evidences (up to"),
        ("numbers_as_ids", "not_course_ids", "308 evidence ids are not course passage ids"),
        ("strings_skipped", "skipped", "a string, not an object"),
    ],
)
def test_each_oddity_is_named(splits, shape, code, said):
    value = odd_shapes(splits["dev"], splits["train"])[shape]
    found = codes(value, splits)
    assert code in found, (shape, list(found))
    assert said in found[code]["text"], found[code]["text"]
    assert found[code]["claims"] == found[code]["claims"][:5]


def test_a_clean_prediction_has_no_finding(splits):
    dev = splits["dev"]
    value = {
        cid: {"claim_text": c.text, "claim_label": "REFUTES" if k % 2 else "SUPPORTS", "evidences": ["evidence-1"]}
        for k, (cid, c) in enumerate(dev.items())
    }
    assert codes(value, splits) == {}


def test_the_always_supports_baseline_is_called_by_its_name(splits):
    dev = splits["dev"]
    value = {cid: {"claim_label": "SUPPORTS", "evidences": []} for cid in dev}
    text = codes(value, splits)["one_label"]["text"]
    assert text == "one label for every claim: this is the always-SUPPORTS baseline: A = 0.4416"


def test_more_than_six_costs_what_cutting_to_six_gives(splits):
    dev = splits["dev"]
    value = odd_shapes(dev, splits["train"])["sixteen"]
    cut = {cid: {**e, "evidences": e["evidences"][:6]} for cid, e in value.items()}
    cost = course_rules(cut, dev)[0] - course_rules(value, dev)[0]
    assert f"the file's F would change by {cost:+.4f}" in codes(value, splits)["over_six"]["text"]


def test_a_file_named_dev_holding_test_claims_is_scored_as_test_and_says_so(splits):
    value = {cid: {"claim_label": "SUPPORTS", "evidences": []} for cid in splits["test"]}
    report = report_file(value, "out/dev-predictions.json", splits)
    assert report.found.split == "test" and report.scored is None
    said = {f.code: f.text for f in report.findings}
    assert said["named_otherwise"] == "the file is named 'dev' but holds test claims: scored against test"


def test_claim_texts_say_how_they_differ(splits, data_dir):
    dev = splits["dev"]
    stopwords = load_stopwords(data_dir)
    ids = sorted(dev)
    value = as_file(dev)
    value[ids[0]]["claim_text"] = dev[ids[0]].text.lower()
    value[ids[1]]["claim_text"] = [dev[ids[1]].text]
    value[ids[2]]["claim_text"] = " ".join(w for w in dev[ids[2]].text.lower().split() if w not in stopwords)
    found = [f for f in report_file(value, "run.json", splits, stopwords=stopwords).findings if f.code == "claim_text"]
    said = {f.text.split(" (")[0]: f.claims for f in found}
    assert said["claim_text differs from the claim's by case only"] == (ids[0],)
    assert said["claim_text stored as a list"] == (ids[1],)
    assert ids[2] in said.get("claim_text is the claim without its stopwords", ()) + said.get(
        "claim_text differs from the claim's", ()
    )


def test_evidences_copied_from_the_course_baseline_are_counted(splits):
    dev = splits["dev"]
    baseline = {cid: ("evidence-9",) for cid in dev}
    value = {
        cid: {"claim_label": "SUPPORTS" if k % 2 else "REFUTES", "evidences": ["evidence-9"] if k < 77 else []}
        for k, cid in enumerate(sorted(dev))
    }
    found = codes(value, splits, baseline=baseline)["baseline_evidences"]
    assert found["count"] == 77 and "on 50% of claims" in found["text"]


def test_renumbered_claims_say_they_were_matched_by_text(splits):
    test = splits["test"]
    value = {
        f"claim-{k}": {"claim_text": c.text, "claim_label": "SUPPORTS", "evidences": []}
        for k, c in enumerate(test.values())
    }
    report = report_file(value, "run.json", splits)
    assert report.found.split == "test" and "matched_by_text" in report.to_dict()
    assert [f.code for f in report.findings][0] == "matched_by_text"
