"""A build's passage texts, found by id and offset (``corpus/texts.bin``, ``corpus/index.npz``):
written by the build's first step, read by :class:`claimtrace.workdir.reader.BuildReader`."""

from __future__ import annotations

import mmap
import os
from collections.abc import Mapping
from pathlib import Path

from claimtrace.errors import DataError, damaged
from claimtrace.lib import build_files


class PassageStore:
    """Every passage's text, found by id: a UTF-8 file of the texts end to end
    (:class:`~claimtrace.lib.build_files.PackedStrings`, memory-mapped) and an index of the ids sorted
    (:class:`~claimtrace.lib.build_files.StringIndex`) with the texts' byte offsets. The texts stay on disk;
    a look-up is a binary search and one slice."""

    def __init__(self, texts_path: Path, index_path: Path):
        self._texts_path = texts_path
        with damaged(index_path), build_files.load_npz(index_path) as stored:
            self._index = build_files.StringIndex(stored["ids"], stored["rank"])
            offsets = stored["offsets"]  # (n + 1,) byte offsets, file order
        with damaged(texts_path), open(texts_path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            buffer = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        if size != int(offsets[-1]):
            raise DataError(
                f"{texts_path}: {size} bytes but its index says {int(offsets[-1])}: run `claimtrace build` to repair"
            )
        self._texts = build_files.PackedStrings(buffer, offsets)

    @staticmethod
    def write(passages: Mapping[str, str], texts_path: Path, index_path: Path) -> None:
        """Write the store for ``passages`` (id -> text, file order), each file atomically."""
        buffer, offsets = build_files.PackedStrings.pack(passages.values())
        index = build_files.StringIndex.from_strings(passages)
        with build_files.atomic_output(texts_path) as temporary:
            temporary.write_bytes(buffer.tobytes())
        build_files.write_npz(index_path, ids=index.sorted_keys, rank=index.rank, offsets=offsets)

    def __len__(self) -> int:
        return len(self._texts)

    def position(self, passage_id: str) -> int | None:
        return self._index.position(passage_id)

    def get(self, passage_id: str) -> str | None:
        """The text of a passage, or None when the corpus has no such id."""
        p = self.position(passage_id)
        if p is None:
            return None
        with damaged(self._texts_path):  # a flipped byte can leave a text that is not UTF-8
            return self._texts[p]

    def __contains__(self, passage_id: str) -> bool:
        return self.position(passage_id) is not None
