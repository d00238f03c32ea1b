"""The data layer: finding, checking and loading course files; gold passages; demo corpus."""

from __future__ import annotations

import codecs
import json
import re
import shutil
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from claimtrace import constants as C
from claimtrace import errors
from claimtrace.cli.main import main
from claimtrace.data import evidence
from claimtrace.data import files as data
from claimtrace.lib import store


@pytest.fixture()
def data_copy(tmp_path, data_dir) -> Path:
    """A writable copy of the data folder (the shared one is read-only)."""
    target = tmp_path / "data"
    shutil.copytree(data_dir, target)
    for path in target.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return target


def run_cli(*args: str):
    return CliRunner().invoke(main, list(args))


def test_course_files_load_with_expected_counts(data_dir):
    counts = {split: len(data.load_claims(split, data_dir)) for split in C.SPLIT_FILES}
    assert counts == {"train": 1228, "dev": 154, "test": 153, "baseline": 154}


def test_test_claims_have_no_label(data_dir):
    claims = data.load_claims("test", data_dir)
    assert all(c.label is None and c.evidences == () for c in claims.values())


def test_gold_passages_rebuilt(data_dir):
    gold = data.gold_passages(data_dir)
    assert len(gold) == 3443
    assert gold["evidence-67732"].startswith("[citation needed] South Australia has the highest retail price")
    assert gold["evidence-572512"] == '"South Australia has the highest power prices in the world".'


def test_demo_corpus_shape_and_order(data_dir):
    corpus = data.demo_corpus(data_dir)
    ids = list(corpus)
    assert len(corpus) == 5240
    assert len(set(corpus.values())) == 5240
    gold_ids = [i for i in ids if i.startswith("evidence-")]
    assert len(gold_ids) == 3443
    assert ids[:3443] == gold_ids
    assert gold_ids == sorted(gold_ids, key=lambda i: int(i.split("-")[1]))
    assert all(i.startswith(data.DEMO_ID_PREFIX) for i in ids[3443:])
    # The first non-gold sentence is the first CLIMATE-FEVER sentence not used as gold.
    assert ids[3443] == "cf:Extinction risk from global warming:170"


def test_data_dir_precedence(tmp_path, monkeypatch, data_dir):
    monkeypatch.setenv("CLAIMTRACE_DATA", str(data_dir))
    assert data.find_data_dir() == data_dir
    assert data.find_data_dir(data_dir) == data_dir
    with pytest.raises(errors.DataError, match="does not exist"):
        data.find_data_dir(tmp_path / "nowhere")
    monkeypatch.setenv("CLAIMTRACE_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(errors.DataError, match="CLAIMTRACE_DATA"):
        data.find_data_dir()


def test_data_check_passes(data_dir):
    result = run_cli("--data", str(data_dir), "data", "check")
    assert result.exit_code == 0, result.output
    assert "gold passages (train+dev) rebuilt from CLIMATE-FEVER: 3443" in result.output


def _corrupt(path: Path, edit) -> None:
    raw = json.loads(path.read_text(encoding="utf-8"))
    edit(raw)
    path.write_text(json.dumps(raw), encoding="utf-8")


@pytest.mark.parametrize(
    "name, edit, message",
    [
        ("dev-claims.json", lambda raw: raw["claim-752"].pop("claim_text"), "claim 'claim-752' has no claim_text"),
        ("train-claims.json", lambda raw: raw["claim-126"]["evidences"].append(7), "evidences[2] is 7, not a string"),
        ("dev-claims.json", lambda raw: raw["claim-752"].update(claim_label="TRUE"), "claim_label 'TRUE'"),
        ("test-claims-unlabelled.json", lambda raw: raw["claim-2967"].update(claim_text="x"), "md5 is"),
    ],
)
def test_corrupted_claim_file_named_exit_2(data_copy, name, edit, message):
    path = data_copy / C.COURSE_DIR / name
    _corrupt(path, edit)
    before = sorted(p.name for p in data_copy.rglob("*"))
    result = run_cli("--data", str(data_copy), "data", "check")
    assert result.exit_code == 2
    assert str(path) in result.output and message in result.output
    assert sorted(p.name for p in data_copy.rglob("*")) == before  # nothing left behind


def test_not_json_and_missing(data_copy):
    path = data_copy / C.COURSE_DIR / "dev-claims.json"
    path.write_text("{ not json", encoding="utf-8")
    result = run_cli("--data", str(data_copy), "data", "check")
    assert result.exit_code == 2 and f"{path}: not valid JSON" in result.output
    path.unlink()
    result = run_cli("--data", str(data_copy), "data", "check")
    assert result.exit_code == 2 and f"{path}: file is missing" in result.output


def test_wrong_top_level_shape(data_copy):
    path = data_copy / C.COURSE_DIR / "train-claims.json"
    path.write_text("[1, 2]", encoding="utf-8")
    result = run_cli("--data", str(data_copy), "data", "check")
    assert result.exit_code == 2 and "expected a JSON object" in result.output


def test_demo_corpus_command_writes_atomically(tmp_path, data_dir):
    out = tmp_path / "evidence.json"
    result = run_cli("--data", str(data_dir), "data", "demo-corpus", "--out", str(out))
    assert result.exit_code == 0, result.output
    corpus = json.loads(out.read_text(encoding="utf-8"))
    assert len(corpus) == 5240
    assert [p.name for p in tmp_path.iterdir()] == ["evidence.json"]  # no temporary left


def test_write_atomic_leaves_old_file_on_failure(tmp_path):
    target = tmp_path / "a.json"
    store.write_atomic(target, "old")

    with pytest.raises(TypeError):
        store.write_atomic(target, 123)  # type: ignore[arg-type]
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


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


@pytest.mark.parametrize(
    "text",
    ["{}", '{"evidence-1": "a"}', '{"evidence-1": "", "evidence-2": ""}', '{"evidence-1": "a", "evidence-2": 2}'],
)
def test_build_refuses_an_unusable_corpus_before_writing(tmp_path, data_dir, text):
    evidence = _write(tmp_path, text.encode("utf-8"))
    workdir = tmp_path / "work"
    result = run_cli("--data", str(data_dir), "build", "--evidence", str(evidence), "--workdir", str(workdir))
    assert result.exit_code == 2, result.output
    assert f"claimtrace: error: {evidence}: " in result.output
    assert not workdir.exists() or not any(workdir.iterdir())


@pytest.mark.parametrize("tail", [b"x", b"}"])
def test_bad_evidence_via_the_cli_exits_2(tmp_path, data_dir, tail):
    evidence = _write(tmp_path, b'{"evidence-1": "a", "evidence-2": "b"}' + tail)
    result = run_cli("--data", str(data_dir), "build", "--evidence", str(evidence), "--workdir", str(tmp_path / "w"))
    assert result.exit_code == 2 and "after the object's closing brace" in result.output


# --- CLIMATE-FEVER: every field used, checked -----------------------------------------------


def _edit_climate_fever(path: Path, line: int, edit) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    row = json.loads(lines[line - 1])
    edit(row)
    lines[line - 1] = json.dumps(row) + "\n"
    path.write_text("".join(lines), encoding="utf-8")


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda row: row.update(claim=5), "line 3: field claim is a number, expected a string"),
        (lambda row: row.update(claim_id=752), "line 3: field claim_id is a number, expected a string"),
        (lambda row: row.pop("claim"), "line 3: field claim is missing"),
        (lambda row: row.update(claim_label="TRUE"), "line 3: field claim_label is 'TRUE', expected one of SUPPORTS"),
        (lambda row: row.update(evidences=None), "line 3: field evidences is null, expected an array"),
        (lambda row: row["evidences"].__setitem__(1, "text"), "line 3: evidences[1] is a string, expected an object"),
        (
            lambda row: row["evidences"][2].update(evidence=["a"]),
            "line 3: evidences[2]: field evidence is an array, expected a string",
        ),
        (lambda row: row["evidences"][4].update(evidence=None), "line 3: evidences[4]: field evidence is null"),
        (lambda row: row["evidences"][0].pop("evidence_id"), "line 3: evidences[0]: field evidence_id is missing"),
        (
            lambda row: row["evidences"][0].update(evidence_label="DISPUTED"),
            "line 3: evidences[0]: field evidence_label is 'DISPUTED', expected one of SUPPORTS, REFUTES, NOT_ENOUGH_INFO",
        ),
        (lambda row: row.update(claim_id="0"), "line 3: claim_id '0' appears a second time"),
    ],
)
def test_climate_fever_fields_are_checked(data_copy, edit, message):
    path = data_copy / C.CLIMATE_FEVER_FILE
    _edit_climate_fever(path, 3, edit)
    result = run_cli("--data", str(data_copy), "data", "check")
    assert result.exit_code == 2, result.output
    assert f"claimtrace: error: {path}: {message}" in result.output


@pytest.mark.parametrize(
    "line, message",
    [
        (
            b'{"claim_id": "0", "claim": "caf\xe9"}',
            "line 2 is not UTF-8 text (invalid continuation byte at byte 31 of the line)",
        ),
        (b'{"claim_id": ', "line 2 is not valid JSON"),
        (b'["claim"]', "line 2 is an array, expected an object (one claim)"),
    ],
)
def test_climate_fever_bad_line(data_copy, line, message):
    path = data_copy / C.CLIMATE_FEVER_FILE
    lines = path.read_bytes().splitlines(keepends=True)
    lines.insert(1, line + b"\n")
    path.write_bytes(b"".join(lines))
    result = run_cli("--data", str(data_copy), "data", "check")
    assert result.exit_code == 2, result.output
    assert f"claimtrace: error: {path}: {message}" in result.output


# --- the stopword list, and --data for everything --------------------------------------------


def test_data_check_checks_the_stopwords(data_dir):
    result = run_cli("--data", str(data_dir), "data", "check")
    assert result.exit_code == 0, result.output
    assert f"ok  nltk_data/corpora/stopwords.zip: 179 English stopwords, sha256 {C.STOPWORDS_SHA256}" in result.output


def _garbage_stopwords(data_copy: Path) -> Path:
    path = data_copy / data.STOPWORDS_ZIP
    path.write_bytes(b"PK\x03\x04 this is not really a zip archive")
    return path


@pytest.mark.parametrize(
    "command",
    [
        ["data", "check"],
        ["preprocess", "Glaciers are melting"],
        ["serve", "--workdir", "nowhere"],
    ],
)
def test_garbage_stopwords_zip_exits_2(data_copy, monkeypatch, command):
    path = _garbage_stopwords(data_copy)
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: pytest.fail("serve started despite a bad stopword list"))
    result = run_cli("--data", str(data_copy), *command)
    assert result.exit_code == 2, result.output
    assert f"claimtrace: error: {path}: not a readable zip archive" in result.output
    assert "Traceback" not in result.output


def test_missing_stopwords_exits_2(data_copy):
    path = data_copy / data.STOPWORDS_ZIP
    path.unlink()
    result = run_cli("--data", str(data_copy), "preprocess", "Glaciers are melting")
    assert result.exit_code == 2
    assert f"claimtrace: error: {path}: file is missing" in result.output


def test_build_reads_stopwords_from_data_option(tmp_path, data_copy):
    """build --data D preprocesses with D's stopword list (it used to find another folder's)."""
    path = _garbage_stopwords(data_copy)
    evidence = _write(tmp_path, json.dumps({"evidence-1": "Glaciers are melting", "evidence-2": "Seas rise"}).encode())
    result = run_cli(
        "--data",
        str(data_copy),
        "build",
        "--evidence",
        str(evidence),
        "--workdir",
        str(tmp_path / "w"),
        "--until",
        "tagging",
    )
    assert result.exit_code == 2, result.output
    assert f"claimtrace: error: {path}: not a readable zip archive" in result.output
    # The choice of folder ended with the command: the default folder's list is used again.
    from claimtrace.pipeline.preprocess import preprocess

    assert preprocess("Glaciers are melting").stems == ["glacier", "melt"]


# --- strings found by offset ------------------------------------------------------------------------


def test_packed_strings_and_their_index_round_trip():
    strings = ["evidence-1", "cf:Global warming:14", "", "محمد", "evidence-1", "b"]
    buffer, offsets = store.PackedStrings.pack(strings)
    packed = store.PackedStrings(buffer, offsets)
    assert len(packed) == 6 and list(packed) == strings and packed[-1] == "b" and packed[1:3] == strings[1:3]
    with pytest.raises(IndexError):
        packed[6]
    index = store.StringIndex.of(strings)
    assert [index.position(s) for s in strings] == [0, 1, 2, 3, 0, 5]  # the first of a repeated string
    assert index.position("evidence-2") is None


# --- aligned npz archives: written once, memory-mapped by readers ------------------------------


def _npz_arrays():
    import numpy as np

    rng = np.random.default_rng(0)
    return {
        "doc": rng.integers(0, 1 << 30, size=50_000, dtype=np.int32),
        "weight": rng.random(30_001),
        "buffer": rng.integers(0, 255, size=70_003, dtype=np.uint8),
        "matrix": np.asfortranarray(rng.random((300, 70))),
        "small": np.arange(5, dtype=np.int64),
        "meta": np.array(json.dumps({"a": 1})),
    }


def test_write_npz_is_an_npz_with_every_array_aligned(tmp_path):
    """np.load reads it as any npz; every member's data starts at a multiple of 64 bytes."""
    import zipfile

    import numpy as np

    arrays = _npz_arrays()
    path = tmp_path / "a.npz"
    store.write_npz(path, **arrays)
    with np.load(path) as stored:
        assert stored.files == list(arrays)
        for name, array in arrays.items():
            assert np.array_equal(stored[name], array) and stored[name].dtype == array.dtype
    with zipfile.ZipFile(path) as archive:
        assert all(info.compress_type == zipfile.ZIP_STORED for info in archive.infolist())
    loaded = store.load_npz(path)
    for name in ("doc", "weight", "buffer", "matrix"):  # the large ones are mapped, not read
        assert isinstance(loaded[name].base, np.memmap), name
        assert loaded[name].ctypes.data % 8 == 0 and loaded[name].flags.writeable
    store.write_npz(tmp_path / "b.npz", **arrays)  # the same arrays give the same bytes
    assert (tmp_path / "b.npz").read_bytes() == path.read_bytes()


def test_load_npz_reads_what_np_savez_wrote(tmp_path):
    """An archive from np.savez (a build made before the aligned writer) or a compressed one is
    read whole, with the same arrays."""
    import numpy as np

    arrays = _npz_arrays()
    for writer in (np.savez, np.savez_compressed):
        path = tmp_path / f"{writer.__name__}.npz"
        writer(path, **arrays)
        loaded = store.load_npz(path)
        assert list(loaded) == list(arrays)
        for name, array in arrays.items():
            assert np.array_equal(loaded[name], array) and loaded[name].dtype == array.dtype
            assert loaded[name].flags.aligned


def test_load_npz_of_a_truncated_archive_fails(tmp_path):
    import zipfile

    import numpy as np

    path = tmp_path / "a.npz"
    store.write_npz(path, **_npz_arrays())
    blob = path.read_bytes()
    path.write_bytes(blob[: len(blob) // 2])
    with pytest.raises((zipfile.BadZipFile, ValueError, OSError)):
        loaded = store.load_npz(path)
        np.asarray(loaded["doc"]).sum()


DEEP = "[" * 100_000 + "]" * 100_000
HUGE = "9" * 10_000


@pytest.mark.parametrize(
    "value, message",
    [(DEEP, "nested too deeply to read"), (HUGE, "not JSON this reader accepts (Exceeds the limit (4300 digits)")],
)
def test_deep_nesting_and_huge_integers_are_refused_in_one_line(data_copy, data_dir, tmp_path, value, message):
    """Every JSON reader: a claim file, a CLIMATE-FEVER line, a predictions file."""
    claims = data_copy / C.COURSE_DIR / "dev-claims.json"
    claims.write_text('{"claim-1": ' + value + "}", encoding="utf-8")
    result = run_cli("--data", str(data_copy), "data", "check")
    assert result.exit_code == 2, result.output
    assert f"claimtrace: error: {claims}: {message}" in result.output
    assert result.output.count("claimtrace:") == 1 and "internal error" not in result.output

    shutil.copyfile(data_dir / C.COURSE_DIR / "dev-claims.json", claims)  # whole again
    fever = data_copy / C.CLIMATE_FEVER_FILE
    lines = fever.read_bytes().splitlines(keepends=True)
    lines.insert(1, ('{"claim_id": ' + value + "}\n").encode())
    fever.write_bytes(b"".join(lines))
    result = run_cli("--data", str(data_copy), "data", "check")
    assert result.exit_code == 2, result.output
    assert f"{fever}: line 2 is {message}" in result.output

    predictions = tmp_path / "predictions.json"
    predictions.write_text('{"claim-1": ' + value + "}", encoding="utf-8")
    result = run_cli("--data", str(data_copy), "evaluate", "--predictions", str(predictions))
    assert result.exit_code == 2, result.output
    assert result.output.strip().startswith(f"claimtrace: error: {predictions}: {message}")
    assert len(result.output.strip().splitlines()) == 1


def test_an_empty_climate_fever_file_is_named_itself(data_copy):
    path = data_copy / C.CLIMATE_FEVER_FILE
    path.write_bytes(b"\n\n")
    result = run_cli("--data", str(data_copy), "data", "check")
    assert result.exit_code == 2, result.output
    assert f"claimtrace: error: {path}: holds no claim" in result.output
