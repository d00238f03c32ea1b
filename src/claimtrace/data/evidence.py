"""The evidence corpus: an evidence.json-shaped file read as ``(id, text)`` pairs, in file order,
checked as a corpus as it is read (duplicate ids, lone surrogates, too few passages)."""

from __future__ import annotations

import codecs
import json
import os
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from claimtrace.constants import EVIDENCE_MD5
from claimtrace.data.files import md5_of
from claimtrace.errors import DataError, EvidenceChecksumWarning

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

    Memory: the ids seen (for the duplicate check; what the course's 1.2M take:
    docs/benchmarks.md, "Reading a user's evidence.json"), never the texts.

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
    if actual != EVIDENCE_MD5:
        warnings.warn(
            f"{path}: md5 is {actual}, the course's evidence.json has {EVIDENCE_MD5}: "
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
