"""Stage 0's downloads: the data folder filled from the files' public homes, each from an address
pinned to a commit and checked against a pinned digest before it takes its place.

* the course's four files (train, dev, unlabelled test, the dev baseline) from the course's
  repository, checked against the md5s ``claimtrace data check`` holds;
* CLIMATE-FEVER's ``climate-fever.jsonl`` from its authors' repository, and NLTK's stopword
  archive (the English list the preprocessing reads) from nltk_data, each against a sha256.

The course's evidence.json (174 MB on Google Drive) is not fetched: a build over it is the
user's (``claimtrace build --evidence``).

A file is downloaded to ``.NAME.part`` beside its place and renamed once its digest is right;
an interrupted download resumes from the partial file (an HTTP Range request), and a wrong
digest removes it (:class:`DataError` naming the file, the address and both digests). A mirror
(``--mirror URL`` or ``$CLAIMTRACE_DATA_MIRROR``) serves the data folder's own layout under one
base address (``URL/comp90042-2024/dev-claims.json``) in place of the public hosts.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from claimtrace import constants
from claimtrace.data.files import find_data_dir
from claimtrace.errors import DataError

#: The environment variable that names a mirror when ``--mirror`` is not given.
MIRROR_ENV = "CLAIMTRACE_DATA_MIRROR"

#: The course's repository at the commit its 2024 files were read from (they have not changed
#: since they were uploaded), CLIMATE-FEVER's at its last commit, nltk_data's at the commit that
#: last changed stopwords.zip (the archive nltk's downloader served in 2024).
COURSE_AT = "https://raw.githubusercontent.com/drcarenhan/COMP90042_2024/eae17547dca7a0481da380d47a9c5b8d1e87f8ec/data"
CLIMATE_FEVER_AT = (
    "https://raw.githubusercontent.com/tdiggelm/climate-fever-dataset/03de61617b10a5c1935f8e08bb0e8ac1ee775356/dataset"
)
NLTK_DATA_AT = "https://raw.githubusercontent.com/nltk/nltk_data/4d5ecb6077471be3ac9747efcd59b85d6a8d835c/packages"

#: sha256 of the two files the course did not hand out, as their pinned commits hold them.
CLIMATE_FEVER_SHA256 = "8a4b9032d861be482ffb49dddfd283ffa6089e654f1e968040011882c5eb6e0b"
STOPWORDS_ZIP_SHA256 = "15c94179887425ca1bedc265608cab9f27d650211f709bb929e320990a4b01d1"

#: Bytes read and written at a time.
BLOCK = 1 << 16
#: Seconds to wait on a host before giving up on it.
TIMEOUT = 30


@dataclass(frozen=True)
class Source:
    """One file of the data folder: where it goes (relative to the folder, ``/``-separated),
    its public address and its digest (``md5`` or ``sha256``, hex)."""

    path: str
    url: str
    algorithm: str
    digest: str

    def address(self, mirror: str | None) -> str:
        """The public address, or the mirror's: its base and the file's place in the folder."""
        return self.url if not mirror else f"{mirror.rstrip('/')}/{self.path}"


def sources() -> tuple[Source, ...]:
    """Every file ``claimtrace data fetch`` writes, in the order it fetches them."""
    course = tuple(
        Source(f"{constants.COURSE_DIR}/{name}", f"{COURSE_AT}/{name}", "md5", constants.COURSE_FILE_MD5[name])
        for name in constants.SPLIT_FILES.values()
    )
    return (
        *course,
        Source(constants.CLIMATE_FEVER_FILE, f"{CLIMATE_FEVER_AT}/climate-fever.jsonl", "sha256", CLIMATE_FEVER_SHA256),
        Source(
            f"{constants.NLTK_DATA_DIR}/corpora/stopwords.zip",
            f"{NLTK_DATA_AT}/corpora/stopwords.zip",
            "sha256",
            STOPWORDS_ZIP_SHA256,
        ),
    )


class Progress(Protocol):
    """What a download tells as it goes (a progress bar, or nothing)."""

    def update(self, n: int) -> None: ...

    def close(self) -> None: ...


#: ``(label, total bytes or None, bytes already there) -> Progress``.
ProgressFactory = Callable[[str, "int | None", int], Progress]


class _Silent:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _silent(label: str, total: int | None, initial: int) -> Progress:
    return _Silent()


def digest_of(path: Path, algorithm: str) -> str:
    """The hex digest of a file, read in blocks."""
    digest = hashlib.new(algorithm)
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def partial_path(path: Path) -> Path:
    """Where a file's download is written until its digest is checked."""
    return path.with_name(f".{path.name}.part")


def fetch_all(
    data_dir: Path, mirror: str | None = None, progress: ProgressFactory = _silent
) -> list[tuple[Source, str]]:
    """Fill ``data_dir`` with every file of :func:`sources`; return each with what was done
    ("fetched", "already there"). A file already there with the right digest is kept; one with
    another digest is left alone and refused (the user's to move). When a host cannot be
    reached, the DataError says which files to download by hand and where to put them."""
    done = []
    for source in sources():
        target = Path(data_dir) / source.path
        if target.is_file():
            actual = digest_of(target, source.algorithm)
            if actual != source.digest:
                raise DataError(
                    f"{target}: already there with {source.algorithm} {actual}, not the pinned "
                    f"{source.digest}: move it away and fetch again"
                )
            done.append((source, "already there"))
            continue
        try:
            fetch_one(source, target, mirror, progress)
        except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException) as err:
            raise DataError(_by_hand(data_dir, source, mirror, err)) from None
        done.append((source, "fetched"))
    return done


def fetch_one(source: Source, target: Path, mirror: str | None, progress: ProgressFactory = _silent) -> None:
    """Download one file to its partial name (resuming what is there), check its digest, and
    rename it into place; a wrong digest removes the partial file and raises DataError."""
    url = source.address(mirror)
    target.parent.mkdir(parents=True, exist_ok=True)
    part = partial_path(target)
    _download(url, part, target, progress)
    actual = digest_of(part, source.algorithm)
    if actual != source.digest:
        part.unlink()
        raise DataError(
            f"{target}: {url} served a file with {source.algorithm} {actual}, not the pinned "
            f"{source.digest}: nothing of it was kept"
        )
    os.replace(part, target)


def _download(url: str, part: Path, target: Path, progress: ProgressFactory) -> None:
    """Append the rest of ``url`` to ``part``: a Range request from the partial file's length
    when there is one; a server that answers with the whole file (200) starts it again."""
    have = part.stat().st_size if part.is_file() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    try:
        response = urllib.request.urlopen(request, timeout=TIMEOUT)
    except urllib.error.HTTPError as err:
        if err.code == 416 and have:  # nothing past the end: the partial file is whole
            return
        raise DataError(f"{target}: {url} answered {err.code} {err.reason}") from None
    with response:
        resumed = response.status == 206
        length = response.headers.get("Content-Length")
        total = int(length) + (have if resumed else 0) if length is not None else None
        bar = progress(target.name, total, have if resumed else 0)
        try:
            with open(part, "ab" if resumed else "wb") as out:
                while block := response.read(BLOCK):
                    out.write(block)
                    bar.update(len(block))
        finally:
            bar.close()
    if total is not None and part.stat().st_size < total:
        raise ConnectionError(f"{url}: the connection closed after {part.stat().st_size} of {total} bytes")


def _by_hand(data_dir: Path, failed: Source, mirror: str | None, err: BaseException) -> str:
    """What to do without a network: each file's address and where it goes."""
    reason = getattr(err, "reason", None) or err
    lines = [f"{failed.address(mirror)}: cannot be fetched ({reason}).", "Download these by hand and put them here:"]
    for source in sources():
        target = Path(data_dir) / source.path
        if not target.is_file():
            lines.append(f"  {source.address(mirror)}\n    -> {target}")
    lines.append(f"then run `claimtrace --data {data_dir} data check` (or fetch again: a partial download resumes).")
    return "\n".join(lines)


def default_target(explicit: str | os.PathLike | None) -> Path:
    """Where ``claimtrace data fetch`` writes: ``explicit``, else ``$CLAIMTRACE_DATA``, else the
    data folder claimtrace finds, else ``./data`` (created)."""
    if explicit is not None:
        return Path(explicit)
    env = os.environ.get("CLAIMTRACE_DATA")
    if env:
        return Path(env)
    try:
        return find_data_dir()
    except DataError:
        return Path("data")
