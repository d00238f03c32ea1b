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

import hashlib
import json
import os
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from claimtrace import constants
from claimtrace.errors import DataError

# --- Finding the data -------------------------------------------------------------------------

#: The repository a source checkout runs from: src/claimtrace/data/files.py is four levels down.
#: An installed package has no repository above it (site-packages holds no pyproject.toml).
_CHECKOUT = Path(__file__).resolve().parents[3]


def _repo_root() -> Path | None:
    """The repository claimtrace runs from, when it runs from a source checkout."""
    return _CHECKOUT if (_CHECKOUT / "pyproject.toml").is_file() else None


def find_data_dir(explicit: str | os.PathLike | None = None) -> Path:
    """The data folder: ``explicit``, else ``$CLAIMTRACE_DATA``, else ``./data``, else
    ``../shared/data`` (beside the working directory, then beside the repository).

    Called where a command starts (the command line's ``--data``, a :class:`BuildReader`
    opened without a folder, a script): from there the folder, or what was read from it, is
    passed to whatever needs it."""
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
    candidates = [Path("data"), Path("../shared/data")]
    repo = _repo_root()
    if repo is not None:
        candidates.append(repo.parent / "shared" / "data")
    for path in candidates:
        if (path / constants.COURSE_DIR).is_dir():
            return path
    tried = ", ".join(str(p) for p in candidates)
    raise DataError(
        f"no data folder found (tried {tried}): pass --data DIR or set CLAIMTRACE_DATA "
        f"to a folder holding {constants.COURSE_DIR}/ and {constants.CLIMATE_FEVER_FILE}, "
        f"or run `claimtrace data fetch` to download them into ./data"
    )


def course_file(data_dir: Path, split: str) -> Path:
    """Path of a course claim file by split name (train, dev, test, baseline)."""
    if split not in constants.SPLIT_FILES:
        raise DataError(f"unknown split {split!r}: expected one of {', '.join(constants.SPLIT_FILES)}")
    return Path(data_dir) / constants.COURSE_DIR / constants.SPLIT_FILES[split]


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


def json_value(text: str, where: str, line: bool = False) -> object:
    """``json.loads(text)``, or a DataError naming ``where`` (a file, or with ``line`` a file's
    line) and what is wrong: not valid JSON (with the line and column), nested deeper than the
    reader's stack (json.loads raises RecursionError), or an integer longer than Python converts
    (ValueError)."""
    is_ = " is" if line else ":"
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        at = f"column {err.colno}" if line else f"line {err.lineno}, column {err.colno}"
        raise DataError(f"{where}{is_} not valid JSON ({err.msg} at {at})") from None
    except RecursionError:
        raise DataError(f"{where}{is_} nested too deeply to read (arrays or objects within each other)") from None
    except ValueError as err:  # int(): an integer of more than sys.get_int_max_str_digits() digits
        raise DataError(f"{where}{is_} not JSON this reader accepts ({str(err).split(';')[0]})") from None


#: What a missing file of the data folder's error adds: the command that downloads it.
FETCH_HINT = "`claimtrace data fetch` downloads it"


def _read_json(path: Path) -> object:
    """The JSON value of a whole (small) course file; DataError for anything unreadable."""
    if not path.is_file():
        raise DataError(f"{path}: file is missing ({FETCH_HINT})")
    return json_from_bytes(path.read_bytes(), str(path))


def json_from_bytes(raw: bytes, source: str) -> object:
    """The JSON value of a whole (small) file's bytes; DataError naming ``source`` for anything
    that is not UTF-8 JSON."""
    try:
        text = raw.decode("utf-8")  # bytes first: the error's offset is the file's
    except UnicodeDecodeError as err:
        raise DataError(f"{source}: not UTF-8 text ({err.reason} at byte offset {err.start})") from None
    return json_value(text, source)


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
            if label not in constants.LABELS:
                raise DataError(f"{where} has claim_label {label!r}, expected one of {', '.join(constants.LABELS)}")
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


def load_claims(split: str, data_dir: Path, check_md5: bool = True) -> dict[str, Claim]:
    """Load and validate one course claim file of the data folder ``data_dir``; its md5 must be
    the course's."""
    path = course_file(Path(data_dir), split)
    raw = _read_json(path)
    claims = parse_claims(raw, str(path), labelled=split != "test")
    if check_md5:
        expected = constants.COURSE_FILE_MD5[path.name]
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
STOPWORDS_ZIP = f"{constants.NLTK_DATA_DIR}/corpora/stopwords.zip"
STOPWORDS_MEMBER = "stopwords/english"
STOPWORDS_UNZIPPED = f"{constants.NLTK_DATA_DIR}/corpora/{STOPWORDS_MEMBER}"


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
            f"data folder; put the 2024 stopwords.zip there ({FETCH_HINT}; nltk's "
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
    if len(words) != constants.STOPWORDS_COUNT or digest != constants.STOPWORDS_SHA256:
        raise DataError(
            f"{path}: this is not the 2024 English stopword list ({len(words)} words, "
            f"sha256 {digest}; expected {constants.STOPWORDS_COUNT} words with sha256 "
            f"{constants.STOPWORDS_SHA256}). A different list changes every tag: use the 2024 stopwords.zip"
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
    path = Path(data_dir) / constants.CLIMATE_FEVER_FILE
    if not path.is_file():
        raise DataError(f"{path}: file is missing ({FETCH_HINT})")
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
    if not claims:  # not the claim files' fault when they are looked up in it
        raise DataError(f"{path}: holds no claim (empty, or blank lines only)")
    return claims


def _json_line(raw: bytes, where: str) -> object | None:
    """One JSON Lines line's value; None for a blank line."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataError(f"{where} is not UTF-8 text ({err.reason} at byte {err.start} of the line)") from None
    if not line.strip():
        return None
    return json_value(line, where, line=True)


def _climate_fever_claim(row: object, where: str) -> tuple[str, dict]:
    """("claim-N", {"claim", "label", "evidences"}) of one parsed CLIMATE-FEVER line."""
    if not isinstance(row, dict):
        raise DataError(f"{where} is {_json_type(row)}, expected an object (one claim)")
    claim_id = _field(row, "claim_id", str, where)
    claim = _field(row, "claim", str, where)
    label = _field(row, "claim_label", str, where, constants.LABELS)
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
                raise DataError(f"{source}: claim {claim.id!r} is not in {constants.CLIMATE_FEVER_FILE}")
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


# --- The whole check --------------------------------------------------------------------------


def check(data_dir: Path) -> list[str]:
    """Check every course file, CLIMATE-FEVER, the stopword list and the gold reconstruction;
    return lines describing what was found. Raises DataError at the first problem."""
    lines = [f"data folder: {data_dir}"]
    for split in constants.SPLIT_FILES:
        claims = load_claims(split, data_dir)
        path = course_file(data_dir, split)
        lines.append(f"ok  {path.name}: {len(claims)} claims, md5 {constants.COURSE_FILE_MD5[path.name]}")
    climate_fever = load_climate_fever(data_dir)
    lines.append(f"ok  {constants.CLIMATE_FEVER_FILE}: {len(climate_fever)} claims, every field used checked")
    stopwords = load_stopwords(data_dir)
    lines.append(
        f"ok  {stopwords_file(data_dir).relative_to(data_dir)}: {len(stopwords)} English stopwords, "
        f"sha256 {constants.STOPWORDS_SHA256}"
    )
    gold = gold_passages(data_dir)
    lines.append(f"ok  gold passages (train+dev) rebuilt from CLIMATE-FEVER: {len(gold)}")
    lines.append(f"ok  demo corpus: {len(demo_corpus(data_dir))} distinct sentences")
    return lines
