"""claimtrace.lib.build_files: files written atomically, strings packed and found by offset, aligned npz
archives written once and memory-mapped by readers."""

from __future__ import annotations

import json

import pytest

from claimtrace.lib import build_files


def test_write_atomic_leaves_old_file_on_failure(tmp_path):
    target = tmp_path / "a.json"
    build_files.write_atomic(target, "old")

    with pytest.raises(TypeError):
        build_files.write_atomic(target, 123)  # type: ignore[arg-type]
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


# --- strings found by offset ------------------------------------------------------------------------


def test_packed_strings_and_their_index_round_trip():
    strings = ["evidence-1", "cf:Global warming:14", "", "محمد", "evidence-1", "b"]
    buffer, offsets = build_files.PackedStrings.pack(strings)
    packed = build_files.PackedStrings(buffer, offsets)
    assert len(packed) == 6 and list(packed) == strings and packed[-1] == "b" and packed[1:3] == strings[1:3]
    with pytest.raises(IndexError):
        packed[6]
    index = build_files.StringIndex.from_strings(strings)
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
    build_files.write_npz(path, **arrays)
    with np.load(path) as stored:
        assert stored.files == list(arrays)
        for name, array in arrays.items():
            assert np.array_equal(stored[name], array) and stored[name].dtype == array.dtype
    with zipfile.ZipFile(path) as archive:
        assert all(info.compress_type == zipfile.ZIP_STORED for info in archive.infolist())
    loaded = build_files.load_npz(path)
    for name in ("doc", "weight", "buffer", "matrix"):  # the large ones are mapped, not read
        assert isinstance(loaded[name].base, np.memmap), name
        assert loaded[name].ctypes.data % 8 == 0 and loaded[name].flags.writeable
    build_files.write_npz(tmp_path / "b.npz", **arrays)  # the same arrays give the same bytes
    assert (tmp_path / "b.npz").read_bytes() == path.read_bytes()


def test_load_npz_reads_what_np_savez_wrote(tmp_path):
    """An archive from np.savez (a build made before the aligned writer) or a compressed one is
    read whole, with the same arrays."""
    import numpy as np

    arrays = _npz_arrays()
    for writer in (np.savez, np.savez_compressed):
        path = tmp_path / f"{writer.__name__}.npz"
        writer(path, **arrays)
        loaded = build_files.load_npz(path)
        assert list(loaded) == list(arrays)
        for name, array in arrays.items():
            assert np.array_equal(loaded[name], array) and loaded[name].dtype == array.dtype
            assert loaded[name].flags.aligned


def test_load_npz_of_a_truncated_archive_fails(tmp_path):
    import zipfile

    import numpy as np

    path = tmp_path / "a.npz"
    build_files.write_npz(path, **_npz_arrays())
    blob = path.read_bytes()
    path.write_bytes(blob[: len(blob) // 2])
    with pytest.raises((zipfile.BadZipFile, ValueError, OSError)):
        loaded = build_files.load_npz(path)
        np.asarray(loaded["doc"]).sum()


def test_npz_files_are_the_same_bytes_for_the_same_arrays(tmp_path):
    import time

    import numpy as np

    build_files.write_npz(tmp_path / "a.npz", x=np.arange(3), meta=np.array("é"))
    time.sleep(1.1)  # np.savez would stamp another time
    build_files.write_npz(tmp_path / "b.npz", x=np.arange(3), meta=np.array("é"))
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    with np.load(tmp_path / "a.npz") as stored:
        assert stored["x"].tolist() == [0, 1, 2] and str(stored["meta"]) == "é"
