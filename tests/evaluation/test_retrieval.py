"""claimtrace.evaluation.retrieval: each retrieval variant's evidence F over a split of labelled
claims, from the records the retrieval makes."""

from __future__ import annotations

import pytest

from claimtrace.data import files as data
from claimtrace.data.files import Claim
from claimtrace.evaluation.retrieval import variant_f_row
from claimtrace.pipeline.retrieval import VARIANTS, Retriever, retrieve_all


def _claim(claim_id: str, gold: tuple[str, ...]) -> Claim:
    return Claim(claim_id, "a claim", "SUPPORTS", gold)


def test_a_row_is_the_mean_f_and_the_fallback_share():
    claims = {"c1": _claim("c1", ("a", "b")), "c2": _claim("c2", ("b",)), "c3": _claim("c3", ("d",))}
    records = [
        {"claim_id": "c1", "evidences": ["a", "c"], "fallback": False},  # P = R = 1/2: F = 1/2
        {"claim_id": "c2", "evidences": ["b"], "fallback": False},  # F = 1
        {"claim_id": "c3", "evidences": ["e", "f"], "fallback": True},  # nothing right: F = 0
    ]
    row = variant_f_row("cosine-once", records, claims, passages=40)
    assert row == {
        "variant": "cosine-once",
        "description": VARIANTS["cosine-once"].description,
        "F": 0.5,
        "fallback_share": 1 / 3,
        "claims": 3,
        "passages": 40,
    }
    assert variant_f_row(VARIANTS["notebook"], [], claims, 40)["F"] == 0.0
    with pytest.raises(ValueError, match="unknown retrieval variant"):
        variant_f_row("no-such-variant", records, claims, 40)


@pytest.fixture(scope="module")
def dev_claims(data_dir):
    return data.load_claims("dev", data_dir)


@pytest.fixture(scope="module")
def retrievers(demo_tagged):
    rows = list(demo_tagged.iter_tags())
    ids = [r["id"] for r in rows]
    return {
        "padded": Retriever.fit(ids, [" ".join(r["tags"]) for r in rows], demo_tagged.restemmer),
        "unpadded": Retriever.fit(ids, [" ".join(r["nopad"]) for r in rows], demo_tagged.restemmer),
    }


def _f_rows(retrievers: dict, claims: dict, variants=None) -> list[dict]:
    """Each variant's row from retrieving ``claims`` again with the retriever fitted on its
    passage tags (a variant whose tags have no retriever is left out)."""
    rows = []
    for name in list(variants) if variants is not None else list(VARIANTS):
        variant = VARIANTS[name]
        if variant.passage_tags in retrievers:
            retriever = retrievers[variant.passage_tags]
            rows.append(variant_f_row(variant, retrieve_all(retriever, claims, variant), claims, len(retriever)))
    return rows


def test_every_variant_is_scored_and_the_raw_text_finds_less(dev_claims, retrievers):
    rows = _f_rows(retrievers, dev_claims)
    assert [r["variant"] for r in rows] == list(VARIANTS)
    by_name = {r["variant"]: r for r in rows}
    assert all(0.0 <= r["F"] <= 1.0 and r["claims"] == len(dev_claims) for r in rows)
    # The raw claim text hardly ever shares a tag string with a passage (capitals, punctuation).
    assert by_name["raw-claim-text"]["F"] < by_name["notebook"]["F"]
    assert _f_rows({"padded": retrievers["padded"]}, dev_claims, variants=["notebook"])[0] == by_name["notebook"]
    assert [r["variant"] for r in _f_rows({"padded": retrievers["padded"]}, dev_claims)] == [
        name for name, v in VARIANTS.items() if v.passage_tags == "padded"
    ]


def test_the_builds_table_scores_the_records_it_keeps_as_retrieving_again_would(demo_retrieved, retrievers):
    """The retrieval stage's dev table (summary.json's ``variants_dev``) is each variant's kept
    records scored, and the same rows as retrieving dev again."""
    claims = demo_retrieved.claims("dev")
    table = demo_retrieved.retrieval_summary()["variants_dev"]
    assert [row["variant"] for row in table] == list(VARIANTS)
    for row in table:
        kept = list(demo_retrieved.retrieval_records("dev", row["variant"]).values())
        assert row == variant_f_row(row["variant"], kept, claims, row["passages"])
    assert table == _f_rows(retrievers, claims)
