"""np.argsort under numpy 1.24 (the 2024 reference environment), for tests/lib/test_npsort.py.

Usage: .venv-oracle/bin/python oracle/npsort_oracle.py IN.npz OUT.npz

IN.npz holds batches, each under a name prefix:

* flat batches: ``<name>__values`` (all arrays concatenated, float64 or int64) and
  ``<name>__offsets`` (int64, length n_arrays + 1). OUT gets ``<name>__argsort``: every array's
  ``np.argsort(a)`` (default kind, 'quicksort'), concatenated the same way.
* sparse-row batches: ``<name>__data``, ``<name>__indices``, ``<name>__indptr`` (a CSR matrix)
  and ``<name>__shape`` ([n_rows, n_features, k]). OUT gets ``<name>__topk``, shape
  (n_rows, min(k, n_features)): per row, the notebook's ``np.argsort(dense_row)[-k:][::-1]``
  on the dense float64 row.

OUT also holds ``numpy_version`` and ``simd`` (what this numpy build dispatches to on this CPU),
so the tests can say what produced the reference. Only numpy is imported.
"""

import sys

import numpy as np
import reference_platform

reference_platform.require()  # numpy's generic path on every CPU


def _simd_features():
    try:
        from numpy.core._multiarray_umath import __cpu_features__ as features
    except ImportError:  # pragma: no cover - numpy layout changed
        return ""
    return " ".join(sorted(name for name, on in features.items() if on))


def main(src, dst):
    inp = np.load(src)
    out = {"numpy_version": np.array(np.__version__), "simd": np.array(_simd_features())}
    names = sorted({key.split("__")[0] for key in inp.files})
    for name in names:
        if f"{name}__values" in inp.files:
            values = inp[f"{name}__values"]
            offsets = inp[f"{name}__offsets"]
            result = np.empty(values.shape[0], dtype=np.int64)
            for i in range(offsets.shape[0] - 1):
                lo, hi = int(offsets[i]), int(offsets[i + 1])
                # a fresh contiguous copy, as a caller would hand it over
                result[lo:hi] = np.argsort(values[lo:hi].copy())
            out[f"{name}__argsort"] = result
        else:
            data = inp[f"{name}__data"]
            indices = inp[f"{name}__indices"]
            indptr = inp[f"{name}__indptr"]
            n_rows, n_features, k = (int(x) for x in inp[f"{name}__shape"])
            kk = min(k, n_features)
            top = np.empty((n_rows, kk), dtype=np.int64)
            row = np.zeros(n_features, dtype=np.float64)
            for r in range(n_rows):
                lo, hi = int(indptr[r]), int(indptr[r + 1])
                row[:] = 0.0
                np.add.at(row, indices[lo:hi], data[lo:hi])  # toarray() semantics
                if kk:
                    top[r] = np.argsort(row)[-kk:][::-1]
            out[f"{name}__topk"] = top
    np.savez(dst, **out)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
