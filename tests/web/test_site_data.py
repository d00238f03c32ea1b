"""A typed claim is computed once (claimtrace.web.site_data): one preprocessing of its text, one
re-stemming of its tag string, one pass of the retrieval kernel and one forward call per distinct
input, whatever the sections that show them; a bounded stem cache; and no lock serialises traces,
so typed claims on several threads give exactly what each gives alone."""

from __future__ import annotations

import json
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import contractions
import numpy as np
import pytest

from claimtrace.pipeline.retrieval import kernels
from claimtrace.web.site_data import SiteData
from claimtrace.web.typed_claims import SERVER_STEM_CACHE_WORDS
from claimtrace.web.views import walkthrough
from claimtrace.workdir.reader import BuildReader

CLAIM = "Sea levels rising because glaciers and polar ice sheets melt faster each decade."


@pytest.fixture
def counted(monkeypatch):
    """Every text contractions.fix (the first step of each preprocessing) is called on, and the
    number of retrieval kernel passes, while the test runs."""
    calls: Counter[str] = Counter()
    passes = []
    fix, kernel = contractions.fix, kernels.claim_kernel

    def counting_fix(text, *args, **kwargs):
        calls[text] += 1
        return fix(text, *args, **kwargs)

    def counting_kernel(*args):
        passes.append(1)
        return kernel(*args)

    monkeypatch.setattr(contractions, "fix", counting_fix)
    monkeypatch.setattr(kernels, "claim_kernel", counting_kernel)
    return calls, passes


def _typed_trace(web_client, text: str) -> dict:
    response = web_client.post("/api/trace", json={"text": text})
    assert response.status_code == 200, response.text
    return response.json()


def test_a_typed_claim_is_preprocessed_once_and_retrieved_once(web_client, counted, preprocessor):
    calls, passes = counted
    tags = preprocessor.preprocess(CLAIM).tags()
    for _ in range(2):  # the first trace also fills the caches of words and passages
        calls.clear(), passes.clear()
        trace = _typed_trace(web_client, CLAIM)
        assert trace["retrieval"]["status"] == "ok" and trace["retrieval"]["evidences"]
        assert calls[CLAIM] == 1, "the claim's text is preprocessed once"
        assert calls[tags] == 1, "its tag string is stemmed again once (the quirk stems of stems)"
        assert len(passes) == 1, "one retrieval kernel pass"
        passages = {e["text"] for e in trace["retrieval"]["evidences"]}
        assert all(calls[text] <= 1 for text in passages), "each passage at most once"
    # warm: nothing else is preprocessed (no tag word alone, no padding example again)
    assert set(calls) <= {CLAIM, tags, *passages}, set(calls) - {CLAIM, tags, *passages}


def test_the_tag_terms_read_off_one_pass_are_each_tags_own(demo_site_data, preprocessor):
    """restem_tags reads each tag's terms off the one pass over the whole string: they are what
    the tag preprocessed alone gives (the original per-tag computation)."""
    from claimtrace.pipeline.tagging import Restemmer

    restem_tags, final_stems = Restemmer(preprocessor).restem_tags, preprocessor.final_stems

    for split in ("dev", "test"):
        for claim in demo_site_data.claims(split).values():
            tags = preprocessor.preprocess(claim.text).tags()
            whole, per_tag = restem_tags(tags)
            assert whole == final_stems(tags.lower())
            assert per_tag == {tag: final_stems(tag.lower()) for tag in tags.split()}
    # a string the one pass changes (a contraction expanded): each tag alone
    whole, per_tag = restem_tags("im warm")
    assert whole == final_stems("im warm") and per_tag == {"im": final_stems("im"), "warm": final_stems("warm")}


TYPED = [
    "Arctic sea ice is at its lowest extent on record.",
    "Carbon dioxide is plant food, so more of it is good.",
    "The sun is causing global warming, not humans.",
    "Glaciers are growing, not shrinking.",
    "Hurricanes have become more frequent since 1950.",
    "Ocean acidification threatens coral reefs worldwide.",
    "Volcanoes emit more CO2 than all human activity.",
    "Global temperatures have not risen since 1998.",
]


def test_typed_claims_on_eight_threads_give_what_each_gives_alone(demo_build, monkeypatch):
    alone = {text: json.dumps(SiteData(demo_build).typed_claims.trace_text(text), sort_keys=True) for text in TYPED}
    site_data = SiteData(demo_build)
    real = walkthrough.assemble
    together = threading.Barrier(len(TYPED), timeout=60)

    def assemble_together(*args, **kwargs):
        together.wait()  # every trace is under way at once: nothing serialises them
        return real(*args, **kwargs)

    monkeypatch.setattr(walkthrough, "assemble", assemble_together)
    with ThreadPoolExecutor(len(TYPED)) as pool:
        at_once = dict(zip(TYPED, pool.map(site_data.typed_claims.trace_text, TYPED)))
    for text in TYPED:
        assert json.dumps(at_once[text], sort_keys=True) == alone[text], text


def test_a_fresh_readers_first_traces_preprocess_only_their_own_text(demo_build, counted):
    """A fresh reader's first typed claim runs the preprocessing on its text and on its tag
    string, and nothing else: every tag token a section stems again (the passages' tags, the
    passages' stems under the tagging vectorizer) is read from the build's
    tagging/restemmed.npz. So does a course claim's first trace."""
    calls, _ = counted
    site_data = SiteData(BuildReader(demo_build.root, demo_build.data_dir))
    trace = site_data.typed_claims.trace_text(CLAIM)
    assert trace["tagging"]["status"] == "ok" and trace["vectorisation"]["status"] == "ok"
    assert trace["vectorisation"]["passage"]["tag_terms"], "the passage's tags were stemmed again"
    assert 1 <= sum(calls.values()) <= 2, calls
    calls.clear()
    trace = site_data.trace("claim-752")
    assert trace["vectorisation"]["passage"]["tag_terms"] and 1 <= sum(calls.values()) <= 2, calls


def test_a_typed_claims_trace_preprocesses_no_passage_text(web_client, counted, preprocessor):
    """Every passage's stems (the tagging section's, the model input's, the padding example's)
    are read from the build's tagging/stems.npz: only the claim and its tag string are
    preprocessed."""
    calls, _ = counted
    text = "Arctic sea ice keeps shrinking as the oceans warm, scientists say."
    trace = _typed_trace(web_client, text)
    passages = {e["text"] for e in trace["retrieval"]["evidences"]}
    assert passages and trace["tagging"]["passage"]["text"] in passages
    assert not [p for p in passages if calls[p]], "no retrieved passage's text is preprocessed"
    assert set(calls) <= {text, preprocessor.preprocess(text).tags()}, set(calls)


def test_a_typed_claim_leaves_the_stem_cache_bounded(demo_site_data):
    """Made-up words fill the reader's stem cache; a server empties it past SERVER_STEM_CACHE_WORDS."""
    preprocessor = demo_site_data.build.preprocessor
    for word in (f"zq{i}x" for i in range(2000)):
        preprocessor.stem(word)
    size = preprocessor.cached_stems
    preprocessor.bound_stem_cache(size - 1)
    assert preprocessor.cached_stems == 0
    for word in (f"zq{i}y" for i in range(SERVER_STEM_CACHE_WORDS + 10)):
        preprocessor.stem(word)
    demo_site_data.typed_claims.trace_text("sea levels rising " + " ".join(f"qq{i}zz" for i in range(50)))
    assert preprocessor.cached_stems <= SERVER_STEM_CACHE_WORDS


def test_one_forward_call_per_distinct_input(demo_build, monkeypatch):
    """A forward call is a function of its input: the same 128 ids are run once and the
    answer kept (bounded); a different input is run."""
    from claimtrace.models import transformer as model_module

    classifier = demo_build.classifier()
    calls = []
    real = model_module.alone_logits
    monkeypatch.setattr(model_module, "alone_logits", lambda m, ids: calls.append(1) or real(m, ids))
    # two inputs no other test has run: random words, then [PAD]
    rng = np.random.default_rng(752)
    inputs = [np.concatenate([rng.integers(4, len(classifier.vocab), size=n), np.full(128 - n, 3)]) for n in (37, 61)]
    first = classifier.forward_alone(inputs[0])
    again = classifier.forward_alone(inputs[0].tolist())
    other = classifier.forward_alone(inputs[1])
    assert np.array_equal(first, again) and not np.array_equal(first, other)
    assert len(calls) == 2
    again[0] = 99.0  # a caller's copy: the kept answer is not changed
    assert classifier.forward_alone(inputs[0])[0] == first[0]
    assert len(calls) == 2


# -- encode_public: the walk skipped only where it would change nothing ---------------------------

_ROOT = "/srv/claims/work"
_WORDS = ["missing", "damaged", "ok", "status", "reason", "verdicts_missing", '"status":"missing"', _ROOT, "x"]


def _json_values():
    from hypothesis import strategies as st

    leaves = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-5, 5),
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from(_WORDS),
        st.sampled_from(_WORDS).map(lambda word: f"{_ROOT}/retrieval/{word}.npz is not there"),
    )
    keys = st.sampled_from(["status", "reason", "verdicts_missing", "stage", "data", "note"])
    return st.recursive(
        leaves,
        lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)),
        max_leaves=20,
    )


def test_encode_public_is_the_encoded_walk_for_any_value():
    """For any JSON value (sections missing or damaged, reasons with paths, texts holding the
    marks' very words), the bytes are those of the walk's result."""
    from pathlib import Path

    from hypothesis import given, settings

    from claimtrace.web.encoding import encode
    from claimtrace.web.public_reasons import encode_public, public_reasons

    @settings(max_examples=400, derandomize=True, deadline=None)
    @given(_json_values())
    def check(value):
        assert encode_public(value, Path(_ROOT)) == encode(public_reasons(value, Path(_ROOT)))

    check()


def test_encode_public_makes_a_missing_sections_paths_public():
    from pathlib import Path

    from claimtrace.web.public_reasons import encode_public

    value = {"tagging": {"status": "missing", "stage": "tagging", "reason": f"{_ROOT}/tagging/tags.npz: not built"}}
    assert json.loads(encode_public(value, Path(_ROOT)))["tagging"]["reason"] == "tagging/tags.npz: not built"
    assert json.loads(encode_public({"verdicts_missing": f"{_ROOT}/classifier/dev.json"}, Path(_ROOT))) == {
        "verdicts_missing": "classifier/dev.json"
    }
