"""The classifier's vocabulary and training rows (notebook.md section 5)."""

from __future__ import annotations

from claimtrace.constants import MAX_LEN
from claimtrace.data import files as data
from claimtrace.models.inputs import (
    Encoded,
    Vocabulary,
    encode,
    evidence_texts,
    gold_evidence,
    make_rows,
    row_text,
    training_vocabulary,
)


def test_vocabulary_has_5886_entries(data_dir, preprocessor):
    vocab = training_vocabulary(data.load_claims("train", data_dir), data.gold_passages(data_dir), preprocessor)
    assert len(vocab) == 5886
    assert vocab.tokens[:8] == ["<unk>", "[CLS]", "[SEP]", "[PAD]", "scientif", "evid", "pollut", "higher"]


def test_row_text_is_claim_then_passages(preprocessor):
    # Digits go (isalpha), so "CO2" and a passage of "1855" leave nothing but a space.
    assert row_text("Increased warming.", ["The oceans warmed.", "1855"], preprocessor) == "increas warm ocean warm "


def test_encoding_truncates_and_pads():
    vocab = Vocabulary.fit(["a b c"])
    ids = vocab.encode("a b zzz", max_len=8)
    assert ids == [1, 4, 5, 0, 2, 3, 3, 3]
    long = vocab.encode(" ".join(["a"] * 200))
    assert len(long) == 128 and long[0] == 1 and long[-1] == 2 and long[1:127] == [4] * 126


def test_rows_use_gold_passages_in_order(data_dir, preprocessor):
    claims = data.load_claims("dev", data_dir)
    gold = data.gold_passages(data_dir)
    row = {r.claim_id: r for r in make_rows(claims, gold_evidence(claims, gold), preprocessor)}["claim-752"]
    assert row.text.startswith(
        "south australia expens electr world citat need south australia highest retail price electr countri"
    )
    assert row.label == "SUPPORTS"


def test_evidence_texts_keep_order_and_drop_unknown_ids():
    passages = {"a": "first", "b": "second"}
    ids = {"c1": ["b", "zzz", "a"], "c2": []}
    assert evidence_texts(ids, passages) == {"c1": ["second", "first"], "c2": []}
    assert evidence_texts(ids, passages.get) == evidence_texts(ids, passages)  # a function works too


def test_encoded_inputs_round_trip(tmp_path, data_dir, preprocessor):
    claims = dict(list(data.load_claims("dev", data_dir).items())[:20])
    vocab = Vocabulary.fit(["south australia"])
    encoded = encode(make_rows(claims, gold_evidence(claims, data.gold_passages(data_dir)), preprocessor), vocab)
    assert encoded.input_ids.shape == (20, 128) and encoded.labels.shape == (20,)
    encoded.save(tmp_path / "inputs.npz")
    loaded = Encoded.load(tmp_path / "inputs.npz")
    assert loaded.claim_ids == encoded.claim_ids and loaded.texts == encoded.texts
    assert (loaded.input_ids == encoded.input_ids).all() and (loaded.labels == encoded.labels).all()


# --- Encoding -------------------------------------------------------------------------------------


def test_encoding_cls_sep_pad():
    vocab = Vocabulary.fit(["a b c"])
    ids = vocab.encode("a c zzz")
    assert len(ids) == MAX_LEN
    assert vocab.decode(ids[:5]) == ["[CLS]", "a", "c", "<unk>", "[SEP]"]
    assert ids[5:] == [vocab.index["[PAD]"]] * (MAX_LEN - 5)


def test_encoding_truncates_to_127_then_sep():
    vocab = Vocabulary.fit(["a b"])
    words = ["a", "b"] * 200
    cls, sep, pad = (vocab.index[t] for t in ("[CLS]", "[SEP]", "[PAD]"))
    for n in (125, 126, 127, 200):  # 126 words + [CLS] + [SEP] fit exactly; more are cut
        ids = vocab.encode(" ".join(words[:n]))
        assert len(ids) == MAX_LEN and ids[0] == cls
        kept = min(n, 126)
        assert ids[1 : 1 + kept] == [vocab.index[w] for w in words[:kept]]
        assert ids[1 + kept] == sep  # the [SEP] survives truncation
        assert ids[2 + kept :] == [pad] * (MAX_LEN - 2 - kept)
