"""Stage 0, data: find, check and load the course files; rebuild gold passages; the demo corpus.

The course's ``evidence.json`` (1,208,827 passages) is not shipped: users bring it. What can be
rebuilt without it is rebuilt from CLIMATE-FEVER, which the course data was made from
(notebook.md section 0):

* the gold passages of train and dev (3,443 passages with their real ``evidence-N`` ids);
* a demo corpus of every distinct CLIMATE-FEVER sentence (5,240), shaped like evidence.json.

It also reads NLTK's English stopword list from the data folder (checked against a pinned
sha256), and streams a user's evidence.json (174 MB) without ever holding it whole.

Every problem with an input file raises :class:`DataError`, whose message names the file and
what is wrong (and where: line, field or byte offset); the command line turns it into exit
status 2.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import os
import re
import shutil
import tempfile
import warnings
import zipfile
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from . import constants as C


class DataError(Exception):
    """An input file is missing, unreadable or not what the course handed out."""


class EvidenceChecksumWarning(UserWarning):
    """A user's evidence.json is not the course's: results will not match the course's."""


# --- Finding the data -------------------------------------------------------------------------

_REPO_ROOT = Path(__file__).resolve().parents[2]

#: The data folder chosen for the running command (``--data``), see :func:`use_data_dir`.
_chosen_data_dir: Path | None = None


def find_data_dir(explicit: str | os.PathLike | None = None) -> Path:
    """The data folder: ``explicit``, else the one chosen with :func:`use_data_dir`, else
    ``$CLAIMTRACE_DATA``, else ``./data``, else ``../shared/data`` (beside the working
    directory, then beside the repository)."""
    if explicit is not None:
        path = Path(explicit)
        if not path.is_dir():
            raise DataError(f"{path}: data folder given with --data does not exist")
        return path
    if _chosen_data_dir is not None:
        return _chosen_data_dir
    env = os.environ.get("CLAIMTRACE_DATA")
    if env:
        path = Path(env)
        if not path.is_dir():
            raise DataError(f"{path}: $CLAIMTRACE_DATA names no folder")
        return path
    candidates = [Path("data"), Path("../shared/data"), _REPO_ROOT.parent / "shared" / "data"]
    for path in candidates:
        if (path / C.COURSE_DIR).is_dir():
            return path
    tried = ", ".join(str(p) for p in candidates)
    raise DataError(
        f"no data folder found (tried {tried}): pass --data DIR or set CLAIMTRACE_DATA "
        f"to a folder holding {C.COURSE_DIR}/ and {C.CLIMATE_FEVER_FILE}"
    )


def choose_data_dir(path: str | os.PathLike) -> Path:
    """:func:`use_data_dir` for the rest of the process (a server's worker process, which lives
    until it is stopped)."""
    global _chosen_data_dir
    _chosen_data_dir = Path(path)
    return _chosen_data_dir


@contextmanager
def use_data_dir(path: str | os.PathLike) -> Iterator[Path]:
    """Within the block, :func:`find_data_dir` without an argument returns ``path``.

    The command line enters it with the folder of ``--data`` for the whole command, so the
    stages that look the folder up themselves (the preprocessing's stopword list, reached from
    tagging, retrieval and the classifier) read the same folder as the rest. Forked worker
    processes inherit it. Restores the previous choice on exit.
    """
    global _chosen_data_dir
    previous, _chosen_data_dir = _chosen_data_dir, Path(path)
    try:
        yield _chosen_data_dir
    finally:
        _chosen_data_dir = previous


def chosen_data_dir() -> Path | None:
    """The folder :func:`use_data_dir` chose, if a block of it is running."""
    return _chosen_data_dir


def course_file(data_dir: Path, split: str) -> Path:
    """Path of a course claim file by split name (train, dev, test, baseline)."""
    if split not in C.SPLIT_FILES:
        raise DataError(f"unknown split {split!r}: expected one of {', '.join(C.SPLIT_FILES)}")
    return Path(data_dir) / C.COURSE_DIR / C.SPLIT_FILES[split]


def md5_of(path: Path, chunk: int = 1 << 20) -> str:
    """md5 hex digest of a file, read in chunks."""
    digest = hashlib.md5()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


# --- Claims -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    """One claim of a course file. ``label`` is None in the unlabelled test file."""

    id: str
    text: str
    label: str | None
    evidences: tuple[str, ...]


def _read_json(path: Path) -> object:
    """The JSON value of a whole (small) file; DataError for anything unreadable."""
    if not path.is_file():
        raise DataError(f"{path}: file is missing")
    return json_from_bytes(path.read_bytes(), str(path))


def json_from_bytes(raw: bytes, source: str) -> object:
    """The JSON value of a whole (small) file's bytes; DataError naming ``source`` for anything
    that is not UTF-8 JSON."""
    try:
        text = raw.decode("utf-8")  # bytes first: the error's offset is the file's
    except UnicodeDecodeError as err:
        raise DataError(f"{source}: not UTF-8 text ({err.reason} at byte offset {err.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise DataError(f"{source}: not valid JSON ({err.msg} at line {err.lineno}, column {err.colno})") from None


def parse_claims(raw: object, source: str, labelled: bool) -> dict[str, Claim]:
    """Validate a claim mapping ``claim-N -> {claim_text, claim_label, evidences}``.

    ``source`` names the file in error messages. Unlabelled files (test) may omit the label
    and evidences; labelled ones must carry a known label and a list of string ids.
    """
    if not isinstance(raw, dict):
        raise DataError(f"{source}: expected a JSON object mapping claim ids to claims, got {type(raw).__name__}")
    claims: dict[str, Claim] = {}
    for claim_id, body in raw.items():
        where = f"{source}: claim {claim_id!r}"
        if not isinstance(body, dict):
            raise DataError(f"{where} is {type(body).__name__}, expected an object")
        text = body.get("claim_text")
        if not isinstance(text, str):
            problem = "has no claim_text" if text is None else f"claim_text is {type(text).__name__}, not a string"
            raise DataError(f"{where} {problem}")
        label = body.get("claim_label")
        if labelled or label is not None:
            if label not in C.LABELS:
                raise DataError(f"{where} has claim_label {label!r}, expected one of {', '.join(C.LABELS)}")
        evidences = body.get("evidences", [] if not labelled else None)
        if not isinstance(evidences, list):
            raise DataError(f"{where}: evidences must be a list of evidence ids")
        for position, evidence_id in enumerate(evidences):
            if not isinstance(evidence_id, str):
                raise DataError(
                    f"{where}: evidences[{position}] is {json.dumps(evidence_id)}, not a string evidence id"
                )
        claims[claim_id] = Claim(claim_id, text, label, tuple(evidences))
    return claims


def load_claims(split: str, data_dir: Path | None = None, check_md5: bool = True) -> dict[str, Claim]:
    """Load and validate one course claim file; its md5 must be the course's."""
    data_dir = find_data_dir(data_dir) if data_dir is None else Path(data_dir)
    path = course_file(data_dir, split)
    raw = _read_json(path)
    claims = parse_claims(raw, str(path), labelled=split != "test")
    if check_md5:
        expected = C.COURSE_FILE_MD5[path.name]
        actual = md5_of(path)
        if actual != expected:
            raise DataError(
                f"{path}: md5 is {actual}, the course's file has {expected}: "
                f"this copy was changed; restore the course's file"
            )
    return claims


# --- NLTK's English stopword list -------------------------------------------------------------

#: Where the list lives in the data folder, as nltk's downloader ships it (zipped) or leaves it
#: (unzipped beside the zip); the zip is preferred.
STOPWORDS_ZIP = f"{C.NLTK_DATA_DIR}/corpora/stopwords.zip"
STOPWORDS_MEMBER = "stopwords/english"
STOPWORDS_UNZIPPED = f"{C.NLTK_DATA_DIR}/corpora/{STOPWORDS_MEMBER}"


def stopwords_file(data_dir: Path) -> Path:
    """The stopword file of a data folder: its stopwords.zip, else the unzipped list."""
    zipped, unzipped = Path(data_dir) / STOPWORDS_ZIP, Path(data_dir) / STOPWORDS_UNZIPPED
    if zipped.is_file() or not unzipped.is_file():
        return zipped
    return unzipped


def load_stopwords(data_dir: Path) -> frozenset[str]:
    """The 179 English stopwords nltk's data served in 2024, from the data folder only (never
    nltk's own search path: ``--data`` decides), checked against a pinned sha256.

    A missing, unreadable, non-zip or different list raises DataError naming the file: a
    different list would silently change every tag.
    """
    path = stopwords_file(data_dir)
    if not path.is_file():
        raise DataError(
            f"{path}: file is missing: the preprocessing reads NLTK's English stopword list from the "
            f"data folder; put the 2024 stopwords.zip there (../shared/data has it; nltk's "
            f"downloader leaves one in its nltk_data/corpora/)"
        )
    raw = _stopword_bytes(path)
    try:
        words = raw.decode("utf-8").splitlines()
    except UnicodeDecodeError as err:
        raise DataError(
            f"{path}: {STOPWORDS_MEMBER} is not UTF-8 text ({err.reason} at byte offset {err.start})"
        ) from None
    digest = hashlib.sha256("\n".join(words).encode("utf-8")).hexdigest()
    if len(words) != C.STOPWORDS_COUNT or digest != C.STOPWORDS_SHA256:
        raise DataError(
            f"{path}: this is not the 2024 English stopword list ({len(words)} words, "
            f"sha256 {digest}; expected {C.STOPWORDS_COUNT} words with sha256 "
            f"{C.STOPWORDS_SHA256}). A different list changes every tag: use the 2024 stopwords.zip"
        )
    return frozenset(words)


def _stopword_bytes(path: Path) -> bytes:
    """The English list's bytes: the zip's ``stopwords/english`` member, or the plain file."""
    try:
        if path.suffix != ".zip":
            return path.read_bytes()
        with zipfile.ZipFile(path) as archive:
            return archive.read(STOPWORDS_MEMBER)
    except KeyError:
        raise DataError(f"{path}: the archive holds no {STOPWORDS_MEMBER} (the English list)") from None
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as err:
        raise DataError(f"{path}: not a readable zip archive ({err})") from None
    except OSError as err:
        raise DataError(f"{path}: cannot be read ({err.strerror or err})") from None


# --- CLIMATE-FEVER and the gold passages ------------------------------------------------------


#: The labels a CLIMATE-FEVER evidence sentence can carry (its claims also have DISPUTED).
CLIMATE_FEVER_EVIDENCE_LABELS = ("SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO")


def load_climate_fever(data_dir: Path) -> dict[str, dict]:
    """CLIMATE-FEVER claims keyed by the course's claim id (``claim-752`` is claim ``752``).

    Returns ``{"claim-N": {"claim": str, "label": str, "evidences": [(evidence_id, sentence,
    evidence_label), ...]}}`` in file order. Every field used is checked (type; labels against
    the known ones); a bad line raises DataError naming the file, the line and the field.
    """
    path = Path(data_dir) / C.CLIMATE_FEVER_FILE
    if not path.is_file():
        raise DataError(f"{path}: file is missing")
    claims: dict[str, dict] = {}
    with open(path, "rb") as handle:  # bytes: a bad line is named, not a traceback
        for line_number, raw in enumerate(handle, 1):
            where = f"{path}: line {line_number}"
            row = _json_line(raw, where)
            if row is None:
                continue
            claim_id, claim = _climate_fever_claim(row, where)
            if claim_id in claims:
                raise DataError(f"{where}: claim_id {row['claim_id']!r} appears a second time")
            claims[claim_id] = claim
    return claims


def _json_line(raw: bytes, where: str) -> object | None:
    """One JSON Lines line's value; None for a blank line."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataError(f"{where} is not UTF-8 text ({err.reason} at byte {err.start} of the line)") from None
    if not line.strip():
        return None
    try:
        return json.loads(line)
    except json.JSONDecodeError as err:
        raise DataError(f"{where} is not valid JSON ({err.msg} at column {err.colno})") from None


def _climate_fever_claim(row: object, where: str) -> tuple[str, dict]:
    """("claim-N", {"claim", "label", "evidences"}) of one parsed CLIMATE-FEVER line."""
    if not isinstance(row, dict):
        raise DataError(f"{where} is {_json_type(row)}, expected an object (one claim)")
    claim_id = _field(row, "claim_id", str, where)
    claim = _field(row, "claim", str, where)
    label = _field(row, "claim_label", str, where, C.LABELS)
    evidences = _field(row, "evidences", list, where)
    sentences = []
    for position, evidence in enumerate(evidences):
        at = f"{where}: evidences[{position}]"
        if not isinstance(evidence, dict):
            raise DataError(f"{at} is {_json_type(evidence)}, expected an object (one sentence)")
        sentences.append(
            (
                _field(evidence, "evidence_id", str, at),
                _field(evidence, "evidence", str, at),
                _field(evidence, "evidence_label", str, at, CLIMATE_FEVER_EVIDENCE_LABELS),
            )
        )
    return f"claim-{claim_id}", {"claim": claim, "label": label, "evidences": sentences}


def _field(row: dict, name: str, kind: type, where: str, allowed: tuple[str, ...] = ()) -> object:
    """``row[name]``, which must be a ``kind`` (and one of ``allowed`` when given)."""
    if name not in row:
        raise DataError(f"{where}: field {name} is missing")
    value = row[name]
    if not isinstance(value, kind):
        raise DataError(f"{where}: field {name} is {_json_type(value)}, expected {_json_type(kind())}")
    if allowed and value not in allowed:
        raise DataError(f"{where}: field {name} is {value!r}, expected one of {', '.join(allowed)}")
    return value


def _json_type(value: object) -> str:
    """What a parsed JSON value is, in JSON's words: "a string", "null", "an array"..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    names = {str: "a string", int: "a number", float: "a number", list: "an array", dict: "an object"}
    return names.get(type(value), type(value).__name__)


def gold_sentences(climate_fever_claim: dict, claim_label: str) -> list[str]:
    """The CLIMATE-FEVER sentences the course's gold list points at, in order.

    NOT_ENOUGH_INFO claims keep all five sentences; other claims keep the sentences whose own
    evidence_label is not NOT_ENOUGH_INFO (notebook.md section 0).
    """
    evidences = climate_fever_claim["evidences"]
    if claim_label == "NOT_ENOUGH_INFO":
        return [text for _, text, _ in evidences]
    return [text for _, text, label in evidences if label != "NOT_ENOUGH_INFO"]


def gold_passages(data_dir: Path, splits: tuple[str, ...] = ("train", "dev")) -> dict[str, str]:
    """Rebuild ``evidence-N -> text`` for every gold id of the given splits.

    Raises DataError when a claim is not in CLIMATE-FEVER, when its gold list and its
    sentences differ in length, or when an id would map to two different texts.
    """
    climate_fever = load_climate_fever(data_dir)
    passages: dict[str, str] = {}
    for split in splits:
        source = course_file(data_dir, split)
        for claim in load_claims(split, data_dir).values():
            origin = climate_fever.get(claim.id)
            if origin is None:
                raise DataError(f"{source}: claim {claim.id!r} is not in {C.CLIMATE_FEVER_FILE}")
            sentences = gold_sentences(origin, claim.label)
            if len(sentences) != len(claim.evidences):
                raise DataError(
                    f"{source}: claim {claim.id!r} lists {len(claim.evidences)} gold ids but "
                    f"CLIMATE-FEVER gives {len(sentences)} gold sentences"
                )
            for evidence_id, text in zip(claim.evidences, sentences):
                known = passages.setdefault(evidence_id, text)
                if known != text:
                    raise DataError(
                        f"{source}: claim {claim.id!r}: {evidence_id} would map to two texts: {known!r} and {text!r}"
                    )
    return passages


# --- The demo corpus --------------------------------------------------------------------------

#: Non-gold demo passages are named after their CLIMATE-FEVER evidence id, which is unique per
#: sentence in CLIMATE-FEVER: "Global warming:14" -> "cf:Global warming:14".
DEMO_ID_PREFIX = "cf:"


def _evidence_number(evidence_id: str) -> int:
    return int(evidence_id.rsplit("-", 1)[1])


def demo_corpus(data_dir: Path) -> dict[str, str]:
    """Every distinct CLIMATE-FEVER sentence as an evidence.json-shaped ``id -> text`` mapping.

    Gold sentences keep their ``evidence-N`` id and come first, by N; the others follow in
    CLIMATE-FEVER file order with the id ``cf:<CLIMATE-FEVER evidence_id>``.
    """
    gold = gold_passages(data_dir)
    corpus = {evidence_id: gold[evidence_id] for evidence_id in sorted(gold, key=_evidence_number)}
    gold_texts = set(gold.values())
    seen: set[str] = set()
    for origin in load_climate_fever(data_dir).values():
        for source_id, text, _ in origin["evidences"]:
            if text in gold_texts or text in seen:
                continue
            seen.add(text)
            corpus[DEMO_ID_PREFIX + source_id] = text
    return corpus


# --- A user's evidence.json -------------------------------------------------------------------

#: A corpus needs at least this many passages: a one-passage "corpus" is always a mistake.
MIN_PASSAGES = 2

#: Characters that cannot be written as UTF-8: a ``\udXXX`` escape that is not half of a pair.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def iter_evidence(
    path: str | os.PathLike, check_md5: bool = True, chunk_size: int = 1 << 20
) -> Iterator[tuple[str, str]]:
    """Stream ``(id, text)`` pairs of an evidence.json-shaped file, in file order.

    The file is parsed once, ``chunk_size`` bytes at a time (see :func:`stream_json_object`),
    and checked as a corpus as it goes. Raises :class:`DataError` (at the latest when the
    stream ends, so a consumer that collects every pair before writing writes nothing) when:

    * the file is not one JSON object of string values (the message gives a byte offset);
    * an id appears twice: ``json.load`` would silently keep the last text, but retrieval and
      the gold lists name passages by id, so an ambiguous id is refused;
    * a text or id holds a lone surrogate (a ``\\ud83d`` escape without its pair), which is valid
      JSON but not text, and no artifact could be written with it;
    * it holds fewer than :data:`MIN_PASSAGES` passages, or only empty (blank) texts.

    Memory: the ids seen (for the duplicate check; the course's 1.2M take about 110 MB), never
    the texts.

    When ``check_md5`` is set and the file is not the course's, an
    :class:`EvidenceChecksumWarning` says results will not match the course's.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: evidence file is missing")
    if check_md5:
        _warn_if_not_course_evidence(path)
    seen: set[str] = set()
    has_text = False
    for evidence_id, text in stream_json_object(path, chunk_size):
        known = len(seen)
        seen.add(evidence_id)
        if len(seen) == known:
            raise DataError(
                f"{path}: evidence id {_shown(evidence_id)} appears twice (again as passage {known + 1}): "
                f"each id must name one text"
            )
        # Decoded UTF-8 never holds surrogates, so only non-ASCII strings need the search.
        if not (evidence_id.isascii() and text.isascii()):
            _refuse_lone_surrogates(path, evidence_id, text)
        if not has_text:
            has_text = not text.isspace() and text != ""
        yield evidence_id, text
    _refuse_degenerate_corpus(path, len(seen), has_text)


def _warn_if_not_course_evidence(path: Path) -> None:
    actual = md5_of(path)
    if actual != C.EVIDENCE_MD5:
        warnings.warn(
            f"{path}: md5 is {actual}, the course's evidence.json has {C.EVIDENCE_MD5}: "
            f"results will not match the course's",
            EvidenceChecksumWarning,
            stacklevel=3,
        )


def _refuse_lone_surrogates(path: Path, evidence_id: str, text: str) -> None:
    for what, value in (("id", evidence_id), ("text", text)):
        if not value.isascii() and (found := _LONE_SURROGATE.search(value)):
            raise DataError(
                f"{path}: evidence {_shown(evidence_id)}: its {what} holds a lone surrogate "
                f"\\u{ord(found.group()):04x} (half of an escaped pair), which is not a character"
            )


def _refuse_degenerate_corpus(path: Path, passages: int, has_text: bool) -> None:
    if passages < MIN_PASSAGES:
        held = "no passages" if passages == 0 else "a single passage"
        raise DataError(f"{path}: holds {held}; a corpus needs at least {MIN_PASSAGES}")
    if not has_text:
        raise DataError(f"{path}: all {passages} passages are empty: there is no text to retrieve from")


def _shown(text: str, limit: int = 80) -> str:
    """repr of an id for a message, cut to ``limit`` characters (ids can be anything)."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + "..."


def stream_json_object(path: str | os.PathLike, chunk_size: int = 1 << 20) -> Iterator[tuple[str, str]]:
    """Stream the members ``(key, value)`` of a file holding one JSON object of string values.

    Accepts what ``json.loads`` accepts from the file's bytes (``strict=True``, its default)
    when they are UTF-8 and hold an object of strings, and yields its members in file order,
    duplicates included: ``dict()`` of the stream equals ``json.loads``'s result, which keeps
    a repeated key's last value. A leading UTF-8 byte order mark is skipped, as ``json.loads``
    does on bytes. Memory: a window of about ``chunk_size`` bytes' text, widened (doubling)
    while a member longer than it is read, so at most about twice the longest member.

    Raises :class:`DataError` naming the file and the byte offset (from 0 at the file's first
    byte, a BOM included) of bad UTF-8, invalid JSON, a value that is not a string, or anything
    but whitespace after the closing brace.
    """
    try:
        handle = open(path, "rb")
    except OSError as err:
        raise DataError(f"{path}: cannot be read ({err.strerror or err})") from None
    with handle:
        yield from _ObjectStream(Path(path), handle, chunk_size).members()


#: JSON's whitespace (and only it: json.load refuses other Unicode spaces).
_WHITESPACE = re.compile(r"[ \t\n\r]*")

#: Between a key's closing quote and its value's opening quote; between a value's closing quote
#: and the next key's opening quote.
_KEY_VALUE = re.compile(r'[ \t\n\r]*:[ \t\n\r]*"')
_NEXT_KEY = re.compile(r'[ \t\n\r]*,[ \t\n\r]*"')

#: The json module's own string scanner (C when available): (text, index after the opening
#: quote, strict) -> (string, index after the closing quote).
_scanstring = json.decoder.scanstring

#: What a JSON value that is not a string is, by its first character.
_LITERALS = ("true", "false", "null")
_VALUE_KINDS = {
    "{": "an object",
    "[": "an array",
    **{word[0]: word for word in _LITERALS},
    **{c: "a number" for c in "-0123456789"},
}

#: The json scanner's messages that read badly without the "line, column" it appends.
_SCANNER_MESSAGES = {
    "Unterminated string starting at": "a string opens here and is never closed (is the file cut short?)",
    "Invalid control character at": "a raw control character (a tab or line break?) inside a string; "
    "JSON needs it escaped",
}


class _ObjectStream:
    """Incremental parser of one JSON object of strings over a binary file.

    ``window`` holds decoded text from the file; ``pos`` values passed around index into it.
    The window only ever moves forward: :meth:`_read_on` drops the text before ``pos`` and
    appends the next chunk, returning ``pos``'s new index (0).
    """

    def __init__(self, path: Path, handle: BinaryIO, chunk_size: int):
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be positive, got {chunk_size}")
        self.path = path
        self.handle = handle
        self.chunk_size = chunk_size
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.bytes_read = 0  # bytes taken from the file (a BOM included)
        self.eof = False
        self.window = ""
        self._skip_bom()

    # -- reading -----------------------------------------------------------------------------

    def _skip_bom(self) -> None:
        """Fill the first window, past a UTF-8 byte order mark if the file starts with one."""
        head = b""
        while len(head) < len(codecs.BOM_UTF8):  # a tiny chunk_size may need several reads
            raw = self.handle.read(self.chunk_size)
            if not raw:
                self.eof = True
                break
            head += raw
        self.bytes_read = len(head)
        skipped = len(codecs.BOM_UTF8) if head.startswith(codecs.BOM_UTF8) else 0
        self.window = self._decode(head[skipped:], skipped, final=self.eof)

    def _decode(self, raw: bytes, offset: int, final: bool) -> str:
        """Decode the bytes found at file ``offset`` (after any pending partial character)."""
        pending = len(self.decoder.getstate()[0])
        try:
            return self.decoder.decode(raw, final)
        except UnicodeDecodeError as err:
            raise DataError(
                f"{self.path}: not UTF-8 text: {err.reason} at byte offset {offset - pending + err.start}"
            ) from None

    def _read_on(self, pos: int) -> int:
        """Drop the window before ``pos``, append more of the file; return ``pos``'s new index.

        Reads at least as much as the window still holds, so a member much longer than the
        window is read in doubling steps (linear time overall). At the end of the file sets
        ``eof`` and leaves the window as it was (but shifted).
        """
        self.window = self.window[pos:]
        text = ""
        while not text and not self.eof:
            raw = self.handle.read(max(self.chunk_size, len(self.window)))
            self.eof = not raw
            text = self._decode(raw, self.bytes_read, final=self.eof)
            self.bytes_read += len(raw)
        self.window += text
        return 0

    def _byte_offset(self, pos: int) -> int:
        """File byte offset of window index ``pos``, counted back from what was read."""
        pending = len(self.decoder.getstate()[0])
        return self.bytes_read - pending - len(self.window[pos:].encode("utf-8", "surrogatepass"))

    def _error(self, message: str, pos: int) -> DataError:
        return DataError(f"{self.path}: not valid JSON at byte offset {self._byte_offset(pos)}: {message}")

    # -- tokens ------------------------------------------------------------------------------

    def _token(self, pos: int) -> tuple[int, str]:
        """Skip whitespace from ``pos``: (index, character there), or (index, "") at the end."""
        while True:
            pos = _WHITESPACE.match(self.window, pos).end()
            if pos < len(self.window):
                return pos, self.window[pos]
            if self.eof:
                return pos, ""
            pos = self._read_on(pos)

    def _string(self, pos: int) -> tuple[str, int]:
        """The string whose opening quote is at ``pos``, and the index after its closing quote."""
        while True:
            try:
                return _scanstring(self.window, pos + 1, True)
            except json.JSONDecodeError as err:
                # A string cut by the window's end fails too: it is a real error only when its
                # closing quote is in the window (or the file has ended).
                if self.eof or _closing_quote_after(self.window, pos):
                    raise self._error(_SCANNER_MESSAGES.get(err.msg, err.msg), err.pos) from None
                pos = self._read_on(pos)

    # -- the object --------------------------------------------------------------------------

    def members(self) -> Iterator[tuple[str, str]]:
        """Every member of the object, in file order; then checks that the file ends there."""
        pos = self._first_key()
        scan, key_value, next_key = _scanstring, _KEY_VALUE.match, _NEXT_KEY.match
        while pos is not None:
            # Fast path, nearly every member: the member and the separator up to the next key's
            # quote lie in the window, and C code (the json scanner, two regexes) parses them.
            window = self.window
            try:
                key, end = scan(window, pos + 1, True)
                between = key_value(window, end)
                if between is not None:
                    value, end = scan(window, between.end(), True)
                    after = next_key(window, end)
                    if after is not None:
                        yield key, value
                        pos = after.end() - 1
                        continue
            except json.JSONDecodeError:
                pass  # an error, or a member cut by the window's end: the careful path decides
            key, value, pos = self._member(pos)
            yield key, value

    def _first_key(self) -> int | None:
        """Index of the first key's opening quote; None for an empty object."""
        pos, char = self._token(0)
        if char != "{":
            found = "nothing" if char == "" else repr(char)
            raise self._error(f"expected a JSON object ('{{'), found {found}", pos)
        pos, char = self._token(pos + 1)
        if char == "}":
            self._after_object(pos + 1)
            return None
        if char != '"':
            raise self._error(self._unexpected(char, "a string key (an evidence id)"), pos)
        return pos

    def _member(self, pos: int) -> tuple[str, str, int | None]:
        """The member whose key opens at ``pos``, reading on as needed, with every error named:
        (key, value, index of the next key's opening quote or None after the last member)."""
        key, pos = self._string(pos)
        pos, char = self._token(pos)
        if char != ":":
            raise self._error(self._unexpected(char, "':' after the key"), pos)
        pos, char = self._token(pos + 1)
        if char != '"':
            raise self._value_error(key, char, pos)
        value, pos = self._string(pos)
        pos, char = self._token(pos)
        if char == "}":
            self._after_object(pos + 1)
            return key, value, None
        if char != ",":
            raise self._error(self._unexpected(char, "',' or '}' after a member"), pos)
        pos, char = self._token(pos + 1)
        if char != '"':  # also a trailing comma before '}', which JSON does not allow
            raise self._error(self._unexpected(char, "a string key (an evidence id)"), pos)
        return key, value, pos

    def _after_object(self, pos: int) -> None:
        pos, char = self._token(pos)
        if char != "":
            raise self._error(f"unexpected {char!r} after the object's closing brace", pos)

    @staticmethod
    def _unexpected(char: str, wanted: str) -> str:
        if char == "":
            return f"the file ends where {wanted} should be (truncated?)"
        return f"expected {wanted}, found {char!r}"

    def _value_error(self, key: str, char: str, pos: int) -> DataError:
        """The error for a value that does not open with a quote: name what it is instead."""
        kind = _VALUE_KINDS.get(char)
        if kind in _LITERALS:
            pos = self._ensure(pos, len(kind))
            if not self.window.startswith(kind, pos):
                kind = None  # "tru", "nul": not JSON at all
        if kind is None:
            return self._error(self._unexpected(char, f"the value of {_shown(key)}"), pos)
        return DataError(
            f"{self.path}: the value of {_shown(key)} at byte offset {self._byte_offset(pos)} is {kind}, "
            f"not a string (a passage's text)"
        )

    def _ensure(self, pos: int, count: int) -> int:
        """Read on until the window holds ``count`` characters from ``pos`` (or the file ends);
        return ``pos``'s index then."""
        while len(self.window) - pos < count and not self.eof:
            pos = self._read_on(pos)
        return pos


def _closing_quote_after(text: str, start: int) -> bool:
    """Whether the string opened by the quote at ``start`` is closed within ``text``: an
    unescaped quote follows (one preceded by an even run of backslashes)."""
    index = start + 1
    while (index := text.find('"', index)) >= 0:
        backslashes = index - 1
        while text[backslashes] == "\\":  # text[start] is a quote: the walk stops there
            backslashes -= 1
        if (index - 1 - backslashes) % 2 == 0:
            return True
        index += 1
    return False


# --- Strings found by offset -------------------------------------------------------------------


class PackedStrings(Sequence):
    """Strings laid end to end in one UTF-8 buffer, decoded one at a time on access.

    A build keeps large string lists (1.2M passage ids, texts, tag strings) this way, so that a
    reader maps or loads one buffer and two arrays instead of building a million Python strings.

    Parameters
    ----------
    buffer : bytes-like (a memory map, bytes, or a uint8 ndarray)
        The strings' UTF-8 bytes, end to end.
    offsets : ndarray of shape (n + 1,), int64
        Item ``i`` is ``buffer[offsets[i]:offsets[i + 1]]``.
    """

    def __init__(self, buffer, offsets: np.ndarray):
        self._buffer = buffer.tobytes() if isinstance(buffer, np.ndarray) else buffer
        self._offsets = np.asarray(offsets, dtype=np.int64)

    @staticmethod
    def pack(strings: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
        """(buffer (total bytes,) uint8, offsets (n + 1,) int64) of ``strings``."""
        encoded = [s.encode("utf-8") for s in strings]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(b) for b in encoded], out=offsets[1:])
        return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        return bytes(self._buffer[int(self._offsets[i]) : int(self._offsets[i + 1])]).decode("utf-8")

    @property
    def nbytes(self) -> int:
        return int(self._offsets[-1])


class StringIndex:
    """Positions of strings found by binary search over their sorted UTF-8 bytes.

    Parameters
    ----------
    sorted_keys : ndarray of shape (n,), fixed-width bytes (``S``), ascending
    rank : ndarray of shape (n,), int64
        The position of each sorted key in the original sequence.
    """

    def __init__(self, sorted_keys: np.ndarray, rank: np.ndarray):
        self.sorted_keys = sorted_keys
        self.rank = rank

    @classmethod
    def of(cls, strings: Iterable[str]) -> StringIndex:
        keys = np.array([s.encode("utf-8") for s in strings], dtype=bytes)
        rank = np.argsort(keys, kind="stable").astype(np.int64)
        return cls(keys[rank], rank)

    def position(self, key: str) -> int | None:
        """Where ``key`` stands in the original sequence (the first, if repeated), or None."""
        wanted = key.encode("utf-8")
        at = int(np.searchsorted(self.sorted_keys, wanted))
        if at < len(self.sorted_keys) and self.sorted_keys[at] == wanted:
            return int(self.rank[at])
        return None


# --- Writing artifacts ------------------------------------------------------------------------


#: The date every member of an npz claimtrace writes carries: np.savez stamps the time of writing,
#: so the same arrays saved twice would differ in bytes and a repaired file could not be proved
#: identical to the one it replaces.
NPZ_MEMBER_DATE = (1980, 1, 1, 0, 0, 0)
#: Where an array's data starts in an archive written by :func:`write_npz`: a multiple of this
#: from the file's start, as numpy aligns data within a .npy file, so that it can be mapped.
NPZ_ALIGNMENT = 64
#: Extra-field id of the padding :func:`write_npz` puts in a member's local header (zip readers
#: skip extra fields they do not know).
_NPZ_PADDING_FIELD = 0xCA7A
#: Members smaller than this are read, not mapped: a map costs more than the copy.
_NPZ_MAP_MIN_BYTES = 1 << 16


def write_npz(path: str | os.PathLike, **arrays: np.ndarray) -> None:
    """Write ``arrays`` as an uncompressed .npz through :func:`atomic_output`, each array's data
    aligned to NPZ_ALIGNMENT bytes from the file's start, so that :func:`load_npz` can map it,
    and every member dated NPZ_MEMBER_DATE, so that the same arrays always give the same bytes
    (and the same sha256). ``np.load`` reads it as any npz (the alignment is zip padding)."""
    import io
    import struct

    with atomic_output(path) as temporary, zipfile.ZipFile(temporary, "w", zipfile.ZIP_STORED) as archive:
        for name, array in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=NPZ_MEMBER_DATE)
            info.compress_type = zipfile.ZIP_STORED
            # local header: 30 bytes, the name, the extra field; the .npy header is a multiple of 64
            start = archive.fp.tell() + 30 + len(info.filename.encode("utf-8")) + 4
            padding = -start % NPZ_ALIGNMENT
            info.extra = struct.pack("<HH", _NPZ_PADDING_FIELD, padding) + bytes(padding)
            archive.writestr(info, member.getbuffer())


class NpzArrays(Mapping):
    """The arrays of an .npz file by name (``.files`` lists them, as ``np.load``'s archive).

    Uncompressed members whose data is aligned (:func:`write_npz` writes them so) are
    memory-mapped copy-on-write: opening is instant whatever the size, pages are read from the
    page cache when first touched and shared between processes; the arrays are ordinary
    writable ndarrays (a write stays private to the process). Other members are read whole.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._arrays: dict[str, np.ndarray] = {}
        with zipfile.ZipFile(self.path) as archive, open(self.path, "rb") as raw:
            for info in archive.infolist():
                name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
                mapped = self._mapped(raw, info) if info.compress_type == zipfile.ZIP_STORED else None
                if mapped is None:
                    with archive.open(info) as member:
                        mapped = np.lib.format.read_array(member, allow_pickle=False)
                self._arrays[name] = mapped
        self.files = list(self._arrays)

    def _mapped(self, raw: BinaryIO, info: zipfile.ZipInfo) -> np.ndarray | None:
        import struct

        raw.seek(info.header_offset)
        local = raw.read(30)
        if len(local) < 30 or local[:4] != b"PK\x03\x04":
            raise ValueError(f"member {info.filename}: no local header")
        name_length, extra_length = struct.unpack("<HH", local[26:30])
        raw.seek(info.header_offset + 30 + name_length + extra_length)
        version = np.lib.format.read_magic(raw)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(raw)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(raw)
        offset = raw.tell()
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if dtype.hasobject or nbytes < _NPZ_MAP_MIN_BYTES or offset % max(dtype.alignment, 1):
            return None
        array = np.memmap(self.path, dtype=dtype, mode="c", offset=offset, shape=shape, order="F" if fortran else "C")
        return array.view(np.ndarray)

    def __getitem__(self, name: str) -> np.ndarray:
        return self._arrays[name]

    def __iter__(self):
        return iter(self._arrays)

    def __len__(self) -> int:
        return len(self._arrays)

    def __enter__(self) -> NpzArrays:
        return self

    def __exit__(self, *exc) -> None:
        return None


def load_npz(path: str | os.PathLike) -> NpzArrays:
    """The arrays of an .npz file, large aligned members memory-mapped (:class:`NpzArrays`)."""
    return NpzArrays(path)


@contextmanager
def atomic_output(path: str | os.PathLike) -> Iterator[Path]:
    """The one way claimtrace writes a file: yield a temporary path beside ``path``; when the
    block ends without error, give it the usual permissions and rename it over ``path``, else
    remove it. A reader never sees a half-written file, and a crash leaves the old one (or none).

    Use it for writers that want a file name (``np.savez``, safetensors); :func:`write_atomic`
    is the short form for text and bytes.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    temporary = Path(name)
    try:
        yield temporary
        umask = os.umask(0)  # mkstemp makes the file 0600; a final file gets 0666 & ~umask
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, path)
    except BaseException as err:
        temporary.unlink(missing_ok=True)
        if isinstance(err, OSError) and err.errno is not None and err.filename is None:
            # a failed write (a full disk) names no file: name the one that was being written
            raise OSError(err.errno, err.strerror, str(path)) from err
        raise


@contextmanager
def atomic_folder(path: str | os.PathLike) -> Iterator[Path]:
    """:func:`atomic_output` for a folder written by a library (many files): yield a temporary
    folder beside ``path`` and rename it into place whole when the block ends without error."""
    path = Path(path)
    if path.exists():
        raise FileExistsError(f"{path}: already there")
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
    try:
        yield temporary
        umask = os.umask(0)  # mkdtemp makes the folder 0700
        os.umask(umask)
        os.chmod(temporary, 0o777 & ~umask)
        os.rename(temporary, path)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise


def write_atomic(path: str | os.PathLike, content: str | bytes) -> None:
    """Write text (UTF-8) or bytes to ``path`` through :func:`atomic_output`."""
    with atomic_output(path) as temporary:
        if isinstance(content, bytes):
            temporary.write_bytes(content)
        else:
            temporary.write_text(content, encoding="utf-8")


# --- The whole check --------------------------------------------------------------------------


def check(data_dir: Path) -> list[str]:
    """Check every course file, CLIMATE-FEVER, the stopword list and the gold reconstruction;
    return lines describing what was found. Raises DataError at the first problem."""
    lines = [f"data folder: {data_dir}"]
    for split in C.SPLIT_FILES:
        claims = load_claims(split, data_dir)
        path = course_file(data_dir, split)
        lines.append(f"ok  {path.name}: {len(claims)} claims, md5 {C.COURSE_FILE_MD5[path.name]}")
    climate_fever = load_climate_fever(data_dir)
    lines.append(f"ok  {C.CLIMATE_FEVER_FILE}: {len(climate_fever)} claims, every field used checked")
    stopwords = load_stopwords(data_dir)
    lines.append(
        f"ok  {stopwords_file(data_dir).relative_to(data_dir)}: {len(stopwords)} English stopwords, "
        f"sha256 {C.STOPWORDS_SHA256}"
    )
    gold = gold_passages(data_dir)
    lines.append(f"ok  gold passages (train+dev) rebuilt from CLIMATE-FEVER: {len(gold)}")
    lines.append(f"ok  demo corpus: {len(demo_corpus(data_dir))} distinct sentences")
    return lines
