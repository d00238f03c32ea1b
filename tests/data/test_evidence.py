"""claimtrace.data.evidence: the streaming evidence.json reader accepts exactly what json.loads
accepts, at any buffer size, and names what it refuses by byte offset."""

from __future__ import annotations

import codecs
import json
import re
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from claimtrace import errors
from claimtrace.data import evidence


def test_iter_evidence_streams_and_warns(tmp_path):
    path = tmp_path / "evidence.json"
    corpus = {f"evidence-{i}": f"text {i} “quoted” {{brace}}" * (i % 7) for i in range(5000)}
    path.write_text(json.dumps(corpus, ensure_ascii=False, indent=1), encoding="utf-8")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pairs = list(evidence.stream_json_object(path, chunk_size=4096))
        list(evidence.iter_evidence(path))
    assert dict(pairs) == corpus and [k for k, _ in pairs] == list(corpus)
    assert any(issubclass(w.category, errors.EvidenceChecksumWarning) for w in caught)
    assert any("results will not match the course's" in str(w.message) for w in caught)


# --- the streaming evidence.json reader ------------------------------------------------------
#
# stream_json_object must accept exactly what json.loads accepts from the file's bytes (for an
# object of strings), at any buffer size: tiny buffers (1, 2, 3, 7, 64 bytes) put a buffer
# boundary inside every token, escape, surrogate pair and multi-byte UTF-8 character.

_CHUNK_SIZES = st.sampled_from([1, 2, 3, 7, 64, 4096, 1 << 20])


_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


_text = st.text(
    alphabet=st.one_of(
        st.sampled_from(list('ab "\\/\n\t\r\b\f\x00\x1f\x7f') + ["é", "中", "😀", "\u2028", "\ufeff"]),
        st.characters(blacklist_categories=("Cs",)),  # anything but lone surrogates
    ),
    max_size=40,
)


#: Strings up to thousands of characters: a short text repeated.
_long_text = st.builds(lambda text, times: text * times, _text, st.integers(1, 50))


def _encode_string(text: str, rng) -> str:
    """A JSON string literal for ``text``, each character written one of the ways JSON allows
    (literal, short escape, \\uXXXX escape, astral characters as an escaped surrogate pair),
    chosen at random: more variety than json.dumps writes."""
    out = ['"']
    for char in text:
        code = ord(char)
        ways = []
        if char not in '"\\' and code >= 0x20:
            ways.append(char)
        if char in _SHORT_ESCAPES:
            ways.append(_SHORT_ESCAPES[char])
        if code > 0xFFFF:
            high, low = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
            ways.append(f"\\u{high:04x}\\u{low:04X}")
        else:
            ways.append(f"\\u{code:04x}" if rng.random() < 0.5 else f"\\u{code:04X}")
        out.append(rng.choice(ways))
    out.append('"')
    return "".join(out)


def _encode_object(members: dict[str, str], rng) -> str:
    """A JSON object text for ``members`` with random JSON whitespace around every token."""

    def space() -> str:
        return "".join(rng.choice(" \t\n\r") for _ in range(rng.choice([0, 0, 0, 1, 2])))

    parts = [space(), "{", space()]
    for index, (key, value) in enumerate(members.items()):
        if index:
            parts += [",", space()]
        parts += [_encode_string(key, rng), space(), ":", space(), _encode_string(value, rng), space()]
    parts += ["}", space()]
    return "".join(parts)


def _write(tmp_path: Path, raw: bytes) -> Path:
    path = tmp_path / "evidence.json"
    path.write_bytes(raw)
    return path


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    members=st.dictionaries(_text, _long_text, max_size=6), chunk_size=_CHUNK_SIZES, rng=st.randoms(), bom=st.booleans()
)
def test_stream_agrees_with_json_loads(tmp_path, members, chunk_size, rng, bom):
    raw = (codecs.BOM_UTF8 if bom else b"") + _encode_object(members, rng).encode("utf-8")
    assert json.loads(raw) == members  # the encoder is right
    path = _write(tmp_path, raw)
    assert list(evidence.stream_json_object(path, chunk_size)) == list(members.items())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    members=st.dictionaries(_text, _long_text, min_size=1, max_size=4),
    rng=st.randoms(),
    chunk_size=st.sampled_from([1, 3, 7, 64]),
)
def test_every_truncation_is_refused(tmp_path, members, rng, chunk_size):
    """Cut anywhere before the closing brace, a file is refused with a DataError, never read
    as something else and never a traceback."""
    raw = _encode_object(members, rng).rstrip(" \t\n\r").encode("utf-8")
    path = tmp_path / "cut.json"
    for cut in sorted({rng.randrange(len(raw)) for _ in range(25)} | {0, len(raw) - 1}):
        path.write_bytes(raw[:cut])
        with pytest.raises(errors.DataError, match="evidence.json|cut.json"):
            list(evidence.stream_json_object(path, chunk_size))


@pytest.mark.parametrize("length", [600_000, 1_300_000, 2_600_000])
def test_passages_longer_than_the_buffer(tmp_path, length):
    """The old reader broke on a passage over half its 1 MiB buffer that crossed the buffer's end."""
    corpus = {
        "evidence-0": "short",
        "evidence-1": ('long "quoted" \\ é 😀 ' * (length // 20 + 1))[:length],
        "evidence-2": "x" * (1 << 20),
        "evidence-3": "after",
    }
    for ensure_ascii in (True, False):
        path = _write(tmp_path, json.dumps(corpus, ensure_ascii=ensure_ascii).encode("utf-8"))
        assert list(evidence.iter_evidence(path, check_md5=False)) == list(corpus.items())
        assert dict(evidence.stream_json_object(path, chunk_size=64 << 10)) == corpus


def test_escapes_across_every_boundary(tmp_path):
    """An escaped surrogate pair, escaped quotes and backslashes, and multi-byte characters,
    with a buffer boundary at every possible place in them."""
    raw = '{"ev\\"id\\\\": "a\\ud83d\\ude00b\\\\\\"c é中😀 \\u00e9\\/", "e2": "\\\\"}'.encode()
    expected = list(json.loads(raw).items())
    assert expected == [('ev"id\\', 'a😀b\\"c é中😀 é/'), ("e2", "\\")]
    path = _write(tmp_path, raw)
    for chunk_size in range(1, len(raw) + 1):
        assert list(evidence.iter_evidence(path, check_md5=False, chunk_size=chunk_size)) == expected


def test_window_stays_bounded(tmp_path, monkeypatch):
    """Streaming keeps a window of about one buffer plus the member being read, not the file."""
    corpus = {f"evidence-{i}": "word " * (i % 50) for i in range(40_000)}  # ~5 MB
    path = _write(tmp_path, json.dumps(corpus).encode("utf-8"))
    widest = []
    read_on = evidence._ObjectStream._read_on

    def recording(self, pos):
        new_pos = read_on(self, pos)
        widest.append(len(self.window))
        return new_pos

    monkeypatch.setattr(evidence._ObjectStream, "_read_on", recording)
    assert dict(evidence.stream_json_object(path, chunk_size=4096)) == corpus
    assert len(widest) > 1000 and max(widest) <= 2 * 4096 + 300


def test_bom_is_skipped(tmp_path):
    raw = codecs.BOM_UTF8 + b'{"evidence-1": "a", "evidence-2": "b"}'
    path = _write(tmp_path, raw)
    for chunk_size in (1, 2, 3, 4, 1 << 20):
        assert list(evidence.iter_evidence(path, check_md5=False, chunk_size=chunk_size)) == [
            ("evidence-1", "a"),
            ("evidence-2", "b"),
        ]
    # Only at the very start: a BOM anywhere else is not JSON (json.loads agrees).
    path = _write(tmp_path, b" " + raw)
    with pytest.raises(errors.DataError, match="at byte offset 1: expected a JSON object"):
        list(evidence.stream_json_object(path))


@pytest.mark.parametrize("tail", [b"x", b"}", b',"evidence-3": "c"}', b"\n\n{}", b" \x00"])
def test_trailing_junk_is_refused(tmp_path, tail):
    body = b'{"evidence-1": "a", "evidence-2": "b"}\n'
    path = _write(tmp_path, body + tail)
    offset = len(body) + len(tail) - len(tail.lstrip(b" \n"))
    for chunk_size in (1, 7, 1 << 20):
        with pytest.raises(errors.DataError) as caught:
            list(evidence.iter_evidence(path, check_md5=False, chunk_size=chunk_size))
        assert str(caught.value).startswith(f"{path}: not valid JSON at byte offset {offset}: unexpected ")
        assert "after the object's closing brace" in str(caught.value)


def test_not_an_object_is_refused(tmp_path):
    for text, found in (("[]", "'['"), ('"evidence"', "'\"'"), ("\ufeff{}", "'\\ufeff'")):
        path = _write(tmp_path, b" " + text.encode("utf-8"))
        with pytest.raises(errors.DataError) as caught:
            list(evidence.stream_json_object(path))
        assert (
            str(caught.value)
            == f"{path}: not valid JSON at byte offset 1: expected a JSON object ('{{'), found {found}"
        )


def test_trailing_whitespace_is_fine(tmp_path):
    path = _write(tmp_path, b'\n {"evidence-1": "a", "evidence-2": "b"} \r\n\t\n')
    assert len(list(evidence.iter_evidence(path, check_md5=False, chunk_size=3))) == 2


@pytest.mark.parametrize(
    "text, offset, message",
    [
        (
            '{"evidence-1": "a", "evidence-2": "b"',
            37,
            "the file ends where ',' or '}' after a member should be (truncated?)",
        ),
        (
            '{"evidence-1": "a", "evidence-2": "b',
            34,
            "a string opens here and is never closed (is the file cut short?)",
        ),
        (
            '{"evidence-1": "a", "evidence-2": ',
            34,
            "the file ends where the value of 'evidence-2' should be (truncated?)",
        ),
        ('{"evidence-1": "a", "evidence-2"', 32, "the file ends where ':' after the key should be (truncated?)"),
        ('{"evidence-1": "a",', 19, "the file ends where a string key (an evidence id) should be (truncated?)"),
        ('{"evidence-1": "a\\u00', 18, "Invalid \\uXXXX escape"),  # json's scanner points at the u
        ("{", 1, "the file ends where a string key (an evidence id) should be (truncated?)"),
        ("", 0, "expected a JSON object ('{'), found nothing"),
        ('{"evidence-1": "a",}', 19, "expected a string key (an evidence id), found '}'"),
        ('{"evidence-1" "a"}', 14, "expected ':' after the key, found '\"'"),
        ('{"evidence-1": "a" "evidence-2": "b"}', 19, "expected ',' or '}' after a member, found '\"'"),
        (
            '{"evidence-1": "a\tb"}',
            17,
            "a raw control character (a tab or line break?) inside a string; JSON needs it escaped",
        ),
        ('{"evidence-1": "a\\qb"}', 17, "Invalid \\escape"),
        ('{evidence-1: "a"}', 1, "expected a string key (an evidence id), found 'e'"),
        ('{"evidence-1": tru}', 15, "expected the value of 'evidence-1', found 't'"),
    ],
)
def test_invalid_or_truncated_json_names_the_byte_offset(tmp_path, text, offset, message):
    path = _write(tmp_path, text.encode("utf-8"))
    for chunk_size in (1, 7, 1 << 20):
        with pytest.raises(errors.DataError) as caught:
            list(evidence.iter_evidence(path, check_md5=False, chunk_size=chunk_size))
        assert str(caught.value) == f"{path}: not valid JSON at byte offset {offset}: {message}"
    with pytest.raises(json.JSONDecodeError):  # json.loads agrees the file is not valid
        json.loads(text.encode("utf-8"))


def test_error_offsets_are_file_offsets(tmp_path):
    """Far past the first buffer, after multi-byte characters, the offset is the file's byte
    offset (the old reader gave a character index into its buffer)."""
    corpus = {f"evidence-{i}": "é😀 climate " * (i % 30) for i in range(20_000)}
    good = json.dumps(corpus, ensure_ascii=False).encode("utf-8")[:-1]  # without the closing brace
    for bad, message in (
        (b', "evidence-x": "raw\ttab"}', "a raw control character"),
        (b', "evidence-x": "a" "b"}', "expected ',' or '}' after a member"),
    ):
        raw = good + bad
        offset = len(good) + bad.index(b"\t" if b"\t" in bad else b'"b"')
        assert offset > 3 << 20  # well past the first 1 MiB buffer, and past 3 MiB
        path = _write(tmp_path, raw)
        for chunk_size in (4096, 1 << 20):
            with pytest.raises(errors.DataError, match=f"not valid JSON at byte offset {offset}: {re.escape(message)}"):
                list(evidence.stream_json_object(path, chunk_size))


@pytest.mark.parametrize(
    "value, kind",
    [
        ("5", "a number"),
        ("-0.5e3", "a number"),
        ('{"text": "a"}', "an object"),
        ('["a"]', "an array"),
        ("true", "true"),
        ("false", "false"),
        ("null", "null"),
    ],
)
def test_non_string_value_is_refused(tmp_path, value, kind):
    path = _write(tmp_path, f'{{"evidence-1": "a", "evidence-2": {value}}}'.encode())
    for chunk_size in (1, 1 << 20):
        with pytest.raises(errors.DataError) as caught:
            list(evidence.iter_evidence(path, check_md5=False, chunk_size=chunk_size))
        assert str(caught.value) == (
            f"{path}: the value of 'evidence-2' at byte offset 34 is {kind}, not a string (a passage's text)"
        )


def test_duplicate_ids(tmp_path):
    """json.loads keeps a repeated key's last value at the first key's place; the raw stream
    yields every member (so dict() of it agrees), and iter_evidence refuses the file: an id
    that names two texts makes gold lists and retrieval output ambiguous."""
    raw = b'{"evidence-1": "a", "evidence-2": "b", "evidence-1": "c"}'
    path = _write(tmp_path, raw)
    assert list(evidence.stream_json_object(path)) == [("evidence-1", "a"), ("evidence-2", "b"), ("evidence-1", "c")]
    assert dict(evidence.stream_json_object(path)) == json.loads(raw)
    with pytest.raises(errors.DataError, match=f"{re.escape(str(path))}: evidence id 'evidence-1' appears twice"):
        list(evidence.iter_evidence(path, check_md5=False))


@pytest.mark.parametrize(
    "prefix, bad",
    [
        (b'{"evidence-1": "caf', b"\xff"),  # a byte that never starts a character
        (b'{"evidence-1": "caf', b"\xc3("),  # a lead byte without its continuation
        (b'{"evidence-1": "a", "evidence-2": "\xe2\x82', b""),  # cut inside a character at the end
        (b'{"evidence-1": "a', b"\xed\xa0\x80"),  # a surrogate encoded in UTF-8
    ],
)
def test_bad_utf8_names_the_byte_offset(tmp_path, prefix, bad):
    raw = prefix + bad + (b'"}' if bad else b"")
    path = _write(tmp_path, (b"x" * 0) + raw)
    offset = len(prefix) - (2 if not bad else 0)
    for chunk_size in (1, 2, 7, 1 << 20):
        with pytest.raises(
            errors.DataError, match=rf"{re.escape(str(path))}: not UTF-8 text: .* at byte offset {offset}$"
        ):
            list(evidence.iter_evidence(path, check_md5=False, chunk_size=chunk_size))


def test_bad_utf8_far_into_the_file(tmp_path):
    head = json.dumps({f"evidence-{i}": "é" * 40 for i in range(40_000)}, ensure_ascii=False).encode("utf-8")[:-1]
    raw = head + b', "evidence-x": "\xc3\x28"}'
    path = _write(tmp_path, raw)
    offset = raw.index(b"\xc3\x28")
    assert offset > 3 << 20
    with pytest.raises(errors.DataError, match=f"invalid continuation byte at byte offset {offset}$"):
        list(evidence.iter_evidence(path, check_md5=False))


@pytest.mark.parametrize(
    "text, message",
    [
        ("{}", "holds no passages; a corpus needs at least 2"),
        ('{"evidence-1": "a"}', "holds a single passage; a corpus needs at least 2"),
        ('{"evidence-1": "", "evidence-2": "", "evidence-3": ""}', "all 3 passages are empty"),
        ('{"evidence-1": " ", "evidence-2": "\\n\\t"}', "all 2 passages are empty"),
        (
            '{"evidence-1": "a", "evidence-2": "b\\ud83d"}',
            "evidence 'evidence-2': its text holds a lone surrogate \\ud83d",
        ),
        ('{"evidence-1": "a", "\\udc00": "b"}', "evidence '\\udc00': its id holds a lone surrogate \\udc00"),
    ],
)
def test_unusable_corpus_is_refused(tmp_path, text, message):
    path = _write(tmp_path, text.encode("utf-8"))
    assert dict(evidence.stream_json_object(path)) == json.loads(text)  # valid JSON of strings...
    with pytest.raises(errors.DataError) as caught:  # ...but no corpus
        list(evidence.iter_evidence(path, check_md5=False))
    assert str(caught.value) == f"{path}: {message}" or str(caught.value).startswith(f"{path}: {message}")


def test_one_empty_passage_among_others_is_fine(tmp_path):
    path = _write(tmp_path, b'{"evidence-1": "", "evidence-2": "text"}')
    assert list(evidence.iter_evidence(path, check_md5=False)) == [("evidence-1", ""), ("evidence-2", "text")]
