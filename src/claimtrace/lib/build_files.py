"""How every stage stores what it computed: files written whole (a temporary name, then a
rename), npz archives that map, strings packed end to end and found by offset or by binary
search. No stage and no reader writes or reads a build file another way."""

from __future__ import annotations

import io
import json
import os
import shutil
import struct
import tempfile
import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from claimtrace.errors import damaged


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

    def __iter__(self) -> Iterator[str]:
        """Every string in order (a loop over the offsets once, not a look-up per item)."""
        buffer, offsets = self._buffer, self._offsets.tolist()
        for start, stop in zip(offsets, offsets[1:]):
            yield bytes(buffer[start:stop]).decode("utf-8")

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
    def from_strings(cls, strings: Iterable[str]) -> StringIndex:
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


def read_json(path: Path) -> Any:
    """A build's JSON file, or a DataError naming it."""
    with damaged(path):
        return json.loads(path.read_text(encoding="utf-8"))
