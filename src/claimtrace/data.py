"""Stage 0, data: find, check and load the course files; rebuild gold passages; the demo corpus.

The course's ``evidence.json`` (1,208,827 passages) is not shipped: users bring it. What can be
rebuilt without it is rebuilt from CLIMATE-FEVER, which the course data was made from
(notebook.md section 0):

* the gold passages of train and dev (3,443 passages with their real ``evidence-N`` ids);
* a demo corpus of every distinct CLIMATE-FEVER sentence (5,240), shaped like evidence.json.

Every problem with an input file raises :class:`DataError`, whose message names the file and
what is wrong; the command line turns it into exit status 2.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from . import constants as C


class DataError(Exception):
    """An input file is missing, unreadable or not what the course handed out."""


class EvidenceChecksumWarning(UserWarning):
    """A user's evidence.json is not the course's: results will not match the course's."""


# --- Finding the data -------------------------------------------------------------------------

_REPO_ROOT = Path(__file__).resolve().parents[2]


def find_data_dir(explicit: str | os.PathLike | None = None) -> Path:
    """The data folder: ``explicit``, else ``$CLAIMTRACE_DATA``, else ``./data``, else
    ``../shared/data`` (beside the working directory, then beside the repository)."""
    if explicit is not None:
        path = Path(explicit)
        if not path.is_dir():
            raise DataError(f"{path}: data folder given with --data does not exist")
        return path
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
    if not path.is_file():
        raise DataError(f"{path}: file is missing")
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise DataError(f"{path}: not valid JSON ({err.msg} at line {err.lineno}, column {err.colno})") from None


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
                    f"{where}: evidences[{position}] is {json.dumps(evidence_id)}, "
                    f"not a string evidence id"
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


# --- CLIMATE-FEVER and the gold passages ------------------------------------------------------


def load_climate_fever(data_dir: Path) -> dict[str, dict]:
    """CLIMATE-FEVER claims keyed by the course's claim id (``claim-752`` is claim ``752``)."""
    path = Path(data_dir) / C.CLIMATE_FEVER_FILE
    if not path.is_file():
        raise DataError(f"{path}: file is missing")
    claims: dict[str, dict] = {}
    with open(path, encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(f"{path}: line {line_number} is not valid JSON ({err.msg})") from None
            try:
                claim_id = f"claim-{row['claim_id']}"
                evidences = [(e["evidence_id"], e["evidence"], e["evidence_label"]) for e in row["evidences"]]
                claims[claim_id] = {"claim": row["claim"], "label": row["claim_label"], "evidences": evidences}
            except (KeyError, TypeError) as err:
                raise DataError(f"{path}: line {line_number} lacks field {err}") from None
    return claims


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
                        f"{source}: claim {claim.id!r}: {evidence_id} would map to two texts: "
                        f"{known!r} and {text!r}"
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


def iter_evidence(path: str | os.PathLike, check_md5: bool = True) -> Iterator[tuple[str, str]]:
    """Stream ``(id, text)`` pairs from an evidence.json-shaped file, in file order.

    The file is parsed once, incrementally: the whole mapping is never held as one JSON value
    next to its text. When ``check_md5`` is set and the file is not the course's, an
    :class:`EvidenceChecksumWarning` says results will not match the course's.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: evidence file is missing")
    if check_md5:
        actual = md5_of(path)
        if actual != C.EVIDENCE_MD5:
            warnings.warn(
                f"{path}: md5 is {actual}, the course's evidence.json has {C.EVIDENCE_MD5}: "
                f"results will not match the course's",
                EvidenceChecksumWarning,
                stacklevel=2,
            )
    yield from _stream_json_object(path)


def _stream_json_object(path: Path, chunk_size: int = 1 << 20) -> Iterator[tuple[str, str]]:
    """Yield the string members of a top-level JSON object, reading ``chunk_size`` at a time."""
    decoder = json.JSONDecoder()
    with open(path, encoding="utf-8") as handle:
        buffer = handle.read(chunk_size)
        position = _skip_space(buffer, 0)
        if position >= len(buffer) or buffer[position] != "{":
            raise DataError(f"{path}: expected a JSON object mapping evidence ids to texts")
        position += 1
        expect_member = True
        while True:
            position = _skip_space(buffer, position)
            # Refill when the next member may be cut at the buffer's end.
            if len(buffer) - position < chunk_size // 2:
                more = handle.read(chunk_size)
                if more:
                    buffer = buffer[position:] + more
                    position = 0
                    continue
            if position >= len(buffer):
                raise DataError(f"{path}: ends before the closing brace")
            char = buffer[position]
            if char == "}":
                return
            if char == ",":
                if expect_member:
                    raise DataError(f"{path}: misplaced comma")
                expect_member = True
                position += 1
                continue
            try:
                key, position = decoder.raw_decode(buffer, position)
                position = _skip_space(buffer, position)
                if buffer[position] != ":":
                    raise ValueError("expected ':'")
                value, position = decoder.raw_decode(buffer, _skip_space(buffer, position + 1))
            except (ValueError, IndexError) as err:
                raise DataError(f"{path}: not valid JSON near character {position} ({err})") from None
            if not isinstance(key, str) or not isinstance(value, str):
                raise DataError(f"{path}: evidence {key!r} has a {type(value).__name__} value, expected text")
            expect_member = False
            yield key, value


def _skip_space(buffer: str, position: int) -> int:
    while position < len(buffer) and buffer[position] in " \t\r\n":
        position += 1
    return position


# --- Writing artifacts ------------------------------------------------------------------------


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
    except BaseException:
        temporary.unlink(missing_ok=True)
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
    """Check every course file and the gold reconstruction; return lines describing what was
    found. Raises DataError at the first problem."""
    lines = [f"data folder: {data_dir}"]
    for split in C.SPLIT_FILES:
        claims = load_claims(split, data_dir)
        path = course_file(data_dir, split)
        lines.append(f"ok  {path.name}: {len(claims)} claims, md5 {C.COURSE_FILE_MD5[path.name]}")
    climate_fever = load_climate_fever(data_dir)
    lines.append(f"ok  {C.CLIMATE_FEVER_FILE}: {len(climate_fever)} claims")
    gold = gold_passages(data_dir)
    lines.append(f"ok  gold passages (train+dev) rebuilt from CLIMATE-FEVER: {len(gold)}")
    lines.append(f"ok  demo corpus: {len(demo_corpus(data_dir))} distinct sentences")
    return lines
