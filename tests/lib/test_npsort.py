"""claimtrace.lib.npsort against numpy 1.24.4 itself (the oracle), and against its own dense path.

Every input is generated from fixed seeds (``build_flat_cases``, ``build_row_batches``,
``median_of_three_killer``), written to one .npz, sorted once by ``oracle/npsort_oracle.py``
under .venv-oracle, and compared index for index:

* ``argsort`` and ``top_k`` on about 7,400 float64/int64 arrays: random, heavy ties, sorted /
  reversed / organ-pipe patterns, NaNs and infinities, TF-IDF-like rows, lengths 0 to 50,000;
* inputs built by a median-of-3 adversary that exhaust the depth budget, proving that the
  heapsort fallback runs (the kernel counts its heapsorts) and matches;
* ``top_k_rows`` (sparse simulation and dense pruned baseline) on about 4,000 CSR rows.

Hypothesis then checks ``top_k == argsort[-k:][::-1]`` and sparse == dense pruned on rows of its
own making (no oracle needed: the dense path is the one proven above).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from claimtrace.lib import npsort
from claimtrace.lib.npsort import introsort

SEED = 20240517
WIDTH = 20_000  # the tagging TF-IDF's max_features


# ------------------------------------------------------------------------------------------
# Inputs, all from seeds
# ------------------------------------------------------------------------------------------


def _length(rng: np.random.Generator) -> int:
    """Mostly short arrays (the introsort's small-partition edge is at 16), some long ones."""
    u = rng.random()
    if u < 0.70:
        return int(rng.integers(0, 70))
    if u < 0.95:
        return int(rng.integers(70, 2_000))
    if u < 0.99:
        return int(rng.integers(2_000, 10_000))
    return int(rng.integers(10_000, 50_001))


def _patterns(n: int) -> dict[str, np.ndarray]:
    i = np.arange(n)
    return {
        "sorted": i.copy(),
        "reversed": i[::-1].copy(),
        "organ_pipe": np.minimum(i, n - 1 - i),
        "inverted_pipe": np.maximum(i, n - 1 - i),
        "sawtooth": i % 7,
        "all_equal": np.zeros(n, np.int64),
        "alternating": i % 2,
        "sorted_then_one": np.r_[i[:-1], 0][:n] if n else i,
    }


def tfidf_dense_row(rng: np.random.Generator, m: int, width: int = WIDTH) -> tuple[np.ndarray, np.ndarray]:
    """Column indices and l2-normalised weights of one TF-IDF-like row: tf x idf with idf values
    shared by many features (idf depends on df only), so equal weights are common."""
    cols = np.sort(rng.choice(width, size=min(m, width), replace=False))
    idf = np.log(1_200_000 / rng.choice([5, 5, 6, 7, 9, 12, 40, 300], size=len(cols))) + 1.0
    tf = np.where(rng.random(len(cols)) < 0.8, 1.0, rng.integers(2, 4, len(cols)))
    w = tf * idf
    return cols, w / np.sqrt((w * w).sum()) if len(w) else w


def build_flat_cases(seed: int = SEED) -> tuple[list[tuple[str, np.ndarray]], list[tuple[str, np.ndarray]]]:
    """(float64 cases, int64 cases), each a list of (category, array)."""
    rng = np.random.default_rng(seed)
    floats: list[tuple[str, np.ndarray]] = []
    ints: list[tuple[str, np.ndarray]] = []
    for _ in range(2_500):
        n = _length(rng)
        floats.append(("float_random", rng.standard_normal(n)))
    for _ in range(1_500):
        n = _length(rng)
        bound = int(rng.choice([3, 100, 10**9, 2**62]))
        ints.append(("int_random", rng.integers(-bound, bound, n, dtype=np.int64)))
    for _ in range(1_000):
        n = _length(rng)
        floats.append(("float_ties", rng.integers(0, int(rng.integers(1, 6)), n).astype(np.float64) * 0.25))
    for _ in range(1_000):
        n = _length(rng)
        ints.append(("int_ties", rng.integers(-2, int(rng.integers(-1, 4)), n, dtype=np.int64)))
    for n in (0, 1, 2, 3, 15, 16, 17, 18, 31, 32, 33, 64, 100, 1_000, 1_023, 1_024, 1_025, 20_000, 50_000):
        for name, a in _patterns(n).items():
            ints.append((f"pattern_{name}", a.astype(np.int64)))
            floats.append((f"pattern_{name}", a.astype(np.float64)))
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0])
    for _ in range(1_000):
        n = _length(rng)
        a = np.where(rng.random(n) < 0.5, rng.integers(-2, 3, n) * 0.5, rng.choice(specials, n))
        if n and rng.random() < 0.2:
            a[:] = np.nan
        floats.append(("float_nan", a))
    for t in range(40):
        cols, w = tfidf_dense_row(rng, int(rng.integers(0, 60)) if t else 0)
        row = np.zeros(WIDTH)
        row[cols] = w
        floats.append(("tfidf_row", row))
    return floats, ints


class _Stop(Exception):
    pass


def _py_heapsort(t: list[int], lo: int, hi: int, less) -> None:
    n = hi - lo + 1
    a = lambda s: lo + s - 1  # noqa: E731  1-based heap slot -> list position

    def sift(tmp, i, n):
        j = 2 * i
        while j <= n:
            if j < n and less(t[a(j)], t[a(j + 1)]):
                j += 1
            if less(tmp, t[a(j)]):
                t[a(i)] = t[a(j)]
                i, j = j, 2 * j
            else:
                break
        t[a(i)] = tmp

    for start in range(n >> 1, 0, -1):
        sift(t[a(start)], start, n)
    while n > 1:
        tmp = t[a(n)]
        t[a(n)] = t[a(1)]
        n -= 1
        sift(tmp, 1, n)


def py_aquicksort(n: int, less, on_heapsort=lambda: None) -> list[int]:
    """A plain-Python restatement of numpy 1.24's ``aquicksort_`` on element ids 0 .. n-1, with
    the comparison ``less(id_a, id_b)`` supplied by the caller (here: the adversary)."""
    t = list(range(n))
    lo, hi = 0, n - 1
    depth = 2 * (n.bit_length() - 1) if n > 1 else 0
    stack: list[tuple[int, int, int]] = []
    while True:
        if depth < 0:
            on_heapsort()
            _py_heapsort(t, lo, hi, less)
        else:
            while hi - lo > 15:
                mid = lo + ((hi - lo) >> 1)
                if less(t[mid], t[lo]):
                    t[mid], t[lo] = t[lo], t[mid]
                if less(t[hi], t[mid]):
                    t[hi], t[mid] = t[mid], t[hi]
                if less(t[mid], t[lo]):
                    t[mid], t[lo] = t[lo], t[mid]
                pivot = t[mid]
                t[mid], t[hi - 1] = t[hi - 1], t[mid]
                i, j = lo, hi - 1
                while True:
                    i += 1
                    while less(t[i], pivot):
                        i += 1
                    j -= 1
                    while less(pivot, t[j]):
                        j -= 1
                    if i >= j:
                        break
                    t[i], t[j] = t[j], t[i]
                t[i], t[hi - 1] = t[hi - 1], t[i]
                depth -= 1
                if i - lo < hi - i:
                    stack.append((i + 1, hi, depth))
                    hi = i - 1
                else:
                    stack.append((lo, i - 1, depth))
                    lo = i + 1
            for i in range(lo + 1, hi + 1):
                x, j = t[i], i
                while j > lo and less(x, t[j - 1]):
                    t[j] = t[j - 1]
                    j -= 1
                t[j] = x
        if not stack:
            return t
        lo, hi, depth = stack.pop()


def median_of_three_killer(n: int, stop_at_heapsort: bool) -> tuple[list[float], int]:
    """McIlroy's adversary ("A Killer Adversary for Quicksort", 1999) run against numpy's introsort.

    Every element starts as "gas" (larger than anything solid); comparing two gas elements
    freezes one, preferring the pivot candidate, to the next solid value. The answers are
    consistent with the final values, so sorting those follows the same path: every partition
    splits off a few elements and the depth budget runs out. With ``stop_at_heapsort`` the
    adversary stops when the heapsort starts; the remaining gas is returned as ``nan`` for the
    caller to fill with any values above all solids. Returns (values, number of solids).
    """
    gas = float("nan")
    val = [gas] * n
    solid = 0
    candidate = -1

    def is_gas(x):
        return val[x] != val[x]

    def less(x, y):
        nonlocal solid, candidate
        if is_gas(x) and is_gas(y):
            z = x if x == candidate else y
            val[z] = float(solid)
            solid += 1
        if is_gas(x):
            candidate = x
            return False
        if is_gas(y):
            candidate = y
            return True
        return val[x] < val[y]

    def stop():
        if stop_at_heapsort:
            raise _Stop

    try:
        py_aquicksort(n, less, stop)
    except _Stop:
        pass
    return val, solid


def build_killers(seed: int = SEED) -> list[tuple[str, np.ndarray]]:
    """Depth-exhausting inputs: plain (int64 and float64), and with the part left for the heapsort
    filled with few distinct values (ties) or with NaNs."""
    rng = np.random.default_rng(seed + 1)
    out = []
    for n in (100, 257, 1_000, 3_000):
        full, solid = median_of_three_killer(n, stop_at_heapsort=False)
        full = np.array([solid if v != v else v for v in full])
        out.append(("killer_int", full.astype(np.int64)))
        out.append(("killer_float", full * 0.5))
        part, solid = median_of_three_killer(n, stop_at_heapsort=True)
        part = np.array(part)
        gas = np.isnan(part)
        ties = part.copy()
        ties[gas] = solid + rng.integers(0, 3, gas.sum())
        out.append(("killer_ties_int", ties.astype(np.int64)))
        out.append(("killer_ties_float", ties))
        out.append(("killer_nan", part))  # NaNs sort last: they behave as equal, largest keys
    return out


@dataclass
class RowBatch:
    name: str
    X: sp.csr_matrix
    k: int


def _tfidf_csr(rng, n_rows, width, m_lo, m_hi, force_probes=0.0) -> sp.csr_matrix:
    indptr, indices, data = [0], [], []
    probes = np.array([0, (width - 1) // 2, width - 1, (width - 1) // 2 + (width - 1) // 4 + 1])
    for _ in range(n_rows):
        cols, w = tfidf_dense_row(rng, int(rng.integers(m_lo, m_hi + 1)), width)
        if rng.random() < force_probes:  # positives where the median of three looks
            extra = rng.choice(probes, int(rng.integers(1, 4)), replace=False)
            cols = np.union1d(cols, extra)
            w = rng.choice([0.1, 0.2, 0.3], len(cols))
        indices.append(cols)
        data.append(w)
        indptr.append(indptr[-1] + len(cols))
    return sp.csr_matrix((np.concatenate(data), np.concatenate(indices), np.array(indptr)), shape=(n_rows, width))


def build_row_batches(seed: int = SEED) -> list[RowBatch]:
    rng = np.random.default_rng(seed + 2)
    batches = [
        RowBatch("tags", _tfidf_csr(rng, 2_100, WIDTH, 0, 60), 10),
        RowBatch("tags_probes", _tfidf_csr(rng, 500, WIDTH, 0, 50, force_probes=0.7), 10),
        RowBatch("tags_wide_k", _tfidf_csr(rng, 300, WIDTH, 0, 30), 150),  # pivot lands in the top k
    ]
    for width, k in (
        (1, 10),
        (2, 1),
        (17, 10),
        (65, 3),
        (100, 40),
        (257, 10),
        (1_000, 10),
        (4_097, 25),
        (4_097, 5_000),
    ):
        X = _tfidf_csr(rng, 100, width, 0, min(width, 40)).tolil()
        for r in rng.choice(100, 10, replace=False):  # negative / NaN / stored zero: dense fallback
            c = int(rng.integers(0, width))
            X[r, c] = rng.choice([-0.5, np.nan, 0.0])
        X = X.tocsr()
        X.data[X.data == 0.0] = 0.0
        batches.append(RowBatch(f"width{width}_k{k}", X, k))
    # unsorted column indices and explicit zeros kept in the structure
    X = _tfidf_csr(rng, 200, WIDTH, 5, 20)
    for r in range(200):
        lo, hi = X.indptr[r], X.indptr[r + 1]
        perm = rng.permutation(hi - lo)
        X.indices[lo:hi] = X.indices[lo:hi][perm]
        X.data[lo:hi] = X.data[lo:hi][perm]
        if r % 3 == 0:
            X.data[lo] = 0.0
    X.has_sorted_indices = False
    batches.append(RowBatch("unsorted_explicit_zeros", X, 10))
    return batches


# ------------------------------------------------------------------------------------------
# One oracle run for the whole module
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def reference(tmp_path_factory, oracle):
    floats, ints = build_flat_cases()
    killers = build_killers()
    floats += [(name, a) for name, a in killers if a.dtype == np.float64]
    ints += [(name, a) for name, a in killers if a.dtype == np.int64]
    batches = build_row_batches()
    payload = {}
    for tag, cases in (("f", floats), ("i", ints)):
        payload[f"{tag}__values"] = np.concatenate([a for _, a in cases])
        payload[f"{tag}__offsets"] = np.cumsum([0] + [len(a) for _, a in cases]).astype(np.int64)
    for b in batches:
        payload[f"{b.name}__data"] = b.X.data
        payload[f"{b.name}__indices"] = b.X.indices.astype(np.int64)
        payload[f"{b.name}__indptr"] = b.X.indptr.astype(np.int64)
        payload[f"{b.name}__shape"] = np.array([b.X.shape[0], b.X.shape[1], b.k])
    folder = tmp_path_factory.mktemp("npsort_oracle")
    np.savez(folder / "in.npz", **payload)
    oracle("npsort_oracle.py", str(folder / "in.npz"), str(folder / "out.npz"))
    out = dict(np.load(folder / "out.npz"))
    flat = {}
    for tag, cases in (("f", floats), ("i", ints)):
        offsets = payload[f"{tag}__offsets"]
        flat[tag] = [
            (name, a, out[f"{tag}__argsort"][offsets[j] : offsets[j + 1]]) for j, (name, a) in enumerate(cases)
        ]
    rows = [(b, out[f"{b.name}__topk"]) for b in batches]
    return {"flat": flat["f"] + flat["i"], "rows": rows, "meta": out}


# ------------------------------------------------------------------------------------------
# Against the oracle
# ------------------------------------------------------------------------------------------


@pytest.mark.oracle
def test_oracle_is_numpy_1_24(reference):
    """The reference is numpy 1.24.4, whose argsort is the generic introsort on every CPU (its
    only x86 SIMD sort, AVX-512 for 32-bit np.sort, does not apply to argsort)."""
    assert str(reference["meta"]["numpy_version"]) == "1.24.4"


@pytest.mark.oracle
def test_argsort_and_top_k_match_numpy_1_24(reference):
    cases = reference["flat"]
    assert len(cases) >= 7_000
    failures = []
    rng = np.random.default_rng(SEED + 3)
    for name, a, expected in cases:
        got = npsort.argsort(a)
        if got.dtype != np.int64 or not np.array_equal(got, expected):
            failures.append((name, len(a), "argsort"))
            continue
        for k in {1, 10, int(rng.integers(1, len(a) + 2)), len(a) + 5}:
            if not np.array_equal(npsort.top_k(a, k), expected[-k:][::-1]):
                failures.append((name, len(a), f"top_k k={k}"))
    assert not failures, f"{len(failures)} mismatches, first: {failures[:10]}"
    categories = {name.split("_")[0] for name, _, _ in cases}
    assert {"float", "int", "pattern", "tfidf", "killer"} <= categories
    assert max(len(a) for _, a, _ in cases) == 50_000


@pytest.mark.oracle
def test_heapsort_fallback_is_exercised_and_matches(reference):
    killers = [(name, a, expected) for name, a, expected in reference["flat"] if name.startswith("killer")]
    assert len(killers) == 20
    for name, a, expected in killers:
        idx, heapsorts = introsort._argsort_kernel(a.copy(), 0)
        assert heapsorts >= 1, f"{name} (n={len(a)}) did not reach the depth limit"
        assert np.array_equal(idx, expected), name
        _, heapsorts = introsort._argsort_kernel(a.copy(), len(a) - 10)  # top_k's pruned run
        assert heapsorts >= 1
        assert np.array_equal(npsort.top_k(a, 10), expected[-10:][::-1]), name
    # control: ordinary random inputs never get there
    rng = np.random.default_rng(0)
    assert introsort._argsort_kernel(rng.standard_normal(50_000), 0)[1] == 0


@pytest.mark.oracle
def test_top_k_rows_match_numpy_1_24(reference):
    n_rows = 0
    reasons = np.zeros(6, np.int64)
    tag_levels = []
    for batch, expected in reference["rows"]:
        for method in ("sparse", "dense"):
            got, stats = npsort.top_k_rows(batch.X, batch.k, method=method, return_stats=True)
            assert got.shape == expected.shape, batch.name
            bad = np.flatnonzero((got != expected).any(axis=1))
            assert len(bad) == 0, f"{batch.name} {method}: rows {bad[:10]} differ"
            if method == "sparse":
                reasons += np.bincount(stats[:, 1], minlength=6)
                if batch.name == "tags":
                    tag_levels = stats[:, 0]
        n_rows += batch.X.shape[0]
    assert n_rows >= 4_000
    # the simulation did the work (not just the dense kernel), and every handoff kind was checked
    assert np.median(tag_levels) >= 7
    assert reasons[npsort.HANDOFF_SMALL] and reasons[npsort.HANDOFF_POSITIVE_PIVOT]
    assert reasons[npsort.HANDOFF_BOTH_SIDES] and reasons[npsort.HANDOFF_DENSE_ROW]


# ------------------------------------------------------------------------------------------
# Properties (no oracle)
# ------------------------------------------------------------------------------------------

_floats = st.one_of(
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, np.nan, np.inf, -np.inf]),
    st.floats(allow_nan=True, allow_infinity=True, width=64),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    values=st.one_of(
        st.lists(_floats, max_size=300).map(lambda v: np.array(v, np.float64)),
        st.lists(st.integers(-3, 3), max_size=300).map(lambda v: np.array(v, np.int64)),
        st.lists(st.integers(-(2**63), 2**63 - 1), max_size=100).map(lambda v: np.array(v, np.int64)),
    ),
    k=st.integers(1, 320),
)
def test_top_k_is_the_tail_of_argsort(values, k):
    order = npsort.argsort(values)
    assert sorted(order.tolist()) == list(range(len(values)))
    assert np.array_equal(npsort.top_k(values, k), order[-k:][::-1])


@st.composite
def sparse_rows(draw):
    width = draw(st.sampled_from([1, 2, 16, 17, 64, 65, 200, 1_000, 5_000, 20_000]))
    n_rows = draw(st.integers(1, 8))
    weights = st.sampled_from([0.0, 0.05, 0.1, 0.1, 0.2, 0.3, 1.0, 1e-300, np.inf])
    probes = [0, (width - 1) // 2, width - 1]
    rows = []
    for _ in range(n_rows):
        m = draw(st.integers(0, min(width, 60)))
        cols = draw(
            st.lists(st.one_of(st.integers(0, width - 1), st.sampled_from(probes)), min_size=m, max_size=m, unique=True)
        )
        rows.append((cols, [draw(weights) for _ in cols]))
    k = draw(st.one_of(st.just(10), st.integers(1, 200)))
    indptr = np.cumsum([0] + [len(c) for c, _ in rows])
    indices = np.array([c for cols, _ in rows for c in cols], np.int64)
    data = np.array([w for _, ws in rows for w in ws], np.float64)
    return sp.csr_matrix((data, indices, indptr), shape=(n_rows, width)), k


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=sparse_rows())
def test_sparse_simulation_equals_dense_pruned_run(case):
    X, k = case
    sparse = npsort.top_k_rows(X, k)
    dense = npsort.top_k_rows(X, k, method="dense")
    assert np.array_equal(sparse, dense)
    row = X[0].toarray().ravel()
    assert np.array_equal(sparse[0], npsort.top_k(row, k))


# ------------------------------------------------------------------------------------------
# API
# ------------------------------------------------------------------------------------------


def test_dtypes_and_shapes():
    for bad in (
        np.zeros(3, np.float32),
        np.zeros(3, np.int32),
        np.zeros(3, bool),
        np.array(["a"]),
        np.zeros(3, np.uint64),
        np.array([1, "a"], dtype=object),
    ):
        with pytest.raises(TypeError, match="float64 and int64"):
            npsort.argsort(bad)
    with pytest.raises(ValueError, match="1-D"):
        npsort.argsort(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="k must be"):
        npsort.top_k(np.zeros(3), 0)
    with pytest.raises(ValueError, match="k must be"):
        npsort.top_k_rows(sp.csr_matrix((1, 5)), 0)
    assert npsort.argsort(np.zeros(0)).dtype == np.int64
    assert npsort.argsort([]).shape == (0,)
    assert npsort.top_k(np.zeros(0), 3).shape == (0,)
    assert npsort.top_k_rows(sp.csr_matrix((2, 5)), 10).shape == (2, 5)
    assert npsort.top_k_rows(sp.csr_matrix((0, 5)), 10).shape == (0, 5)


def test_layout_does_not_matter():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 4, 1_000).astype(np.float64)
    expected = npsort.argsort(a)
    assert np.array_equal(npsort.argsort(a.astype(">f8")), expected)
    assert np.array_equal(npsort.argsort(np.repeat(a, 2)[::2]), expected)
    assert np.array_equal(npsort.argsort(a.tolist()), expected)
    assert np.array_equal(npsort.argsort(a.astype(np.int64)), npsort.argsort(a.astype(np.int64).tolist()))
    b = a.copy()
    npsort.argsort(b)
    assert np.array_equal(a, b)  # the input is not modified
    assert npsort.depth_limit(20_000) == 28 and npsort.depth_limit(1) == 0 and npsort.depth_limit(0) == 0
