"""Same bits on every CPU: the exact path does not depend on which SIMD the CPU offers.

The reference is numpy's generic code path (docs/architecture.md, "Reference platform"). These
tests run the tagging and retrieval of a small corpus in fresh processes, once as the machine
is and once with numpy's and numba's SIMD choices taken away, and demand byte-identical
artifacts. On a CPU without AVX-512 they prove less (the header of every pytest run says which
SIMD features the run had); the FMA scan of the compiled kernels proves the same everywhere.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from claimtrace.constants import FLOAT32_AGREEMENT
from claimtrace.data import files as data

#: The repository: where the scripts run in a fresh interpreter find ``tests.support``.
REPO = Path(__file__).resolve().parents[1]
#: numpy 2.x's AVX-512 dispatch targets: where float64 log takes a vectorised routine.
NUMPY_AVX512 = "AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR"
#: Every target numpy dispatches to above its x86-64 baseline (SSE3).
NUMPY_ALL_DISPATCH = "SSSE3 SSE41 POPCNT SSE42 AVX F16C FMA3 AVX2 " + NUMPY_AVX512

CONFIGURATIONS = {
    "as the machine is": {},
    "numpy without AVX-512": {"NPY_DISABLE_CPU_FEATURES": NUMPY_AVX512},
    "numpy at its baseline, numba for a generic x86-64": {
        "NPY_DISABLE_CPU_FEATURES": NUMPY_ALL_DISPATCH,
        "NUMBA_CPU_NAME": "generic",
    },
}

# Run in a fresh interpreter: tagging and retrieval of a corpus (the build saves the retrieval
# model too: its idf and every passage weight).
_RUN = r"""
import sys, warnings
from pathlib import Path
import numpy as np
from claimtrace.workdir.builder import build

workdir, data_dir, evidence = (Path(a) for a in sys.argv[1:4])
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    build(workdir, data_dir, evidence, processes=1, until="retrieval")
from numpy._core._multiarray_umath import __cpu_features__
print(" ".join(sorted(k for k, on in __cpu_features__.items() if on)))
"""

#: Fields of the summaries that are wall-clock timings, not results.
_TIMINGS = ("timings", "seconds")


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory, data_dir) -> Path:
    """The first 800 demo passages, as a user's evidence.json."""
    corpus = dict(list(data.demo_corpus(data_dir).items())[:800])
    path = tmp_path_factory.mktemp("corpus") / "evidence.json"
    path.write_text(json.dumps(corpus, ensure_ascii=False), encoding="utf-8")
    return path


def _artifacts(root: Path) -> dict[str, bytes]:
    """Every file of a build, timings removed from its summaries (and the summaries' hashes
    from the manifest)."""
    out = {}
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        name = path.relative_to(root).as_posix()
        content = path.read_bytes()
        if name.endswith("summary.json"):
            summary = json.loads(content)
            for key in _TIMINGS:
                summary.pop(key, None)
            content = json.dumps(summary, sort_keys=True).encode()
        elif name == "manifest.json":  # the summaries' entries hash their timings: left out
            manifest = json.loads(content)
            manifest["files"] = {f: entry for f, entry in manifest["files"].items() if not f.endswith("summary.json")}
            content = json.dumps(manifest, sort_keys=True).encode()
        out[name] = content
    return out


def _run(tmp_path: Path, name: str, env_changes: dict, data_dir: Path, evidence: Path) -> tuple[dict, str]:
    workdir = tmp_path / re.sub(r"\W+", "-", name)
    env = {**os.environ, **env_changes}
    done = subprocess.run(
        [sys.executable, "-c", _RUN, str(workdir), str(data_dir), str(evidence)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert done.returncode == 0, f"{name}: {done.stderr[-3000:]}"
    return _artifacts(workdir), done.stdout.strip()


@pytest.mark.platform
def test_tagging_and_retrieval_are_byte_identical_whatever_simd(tmp_path, data_dir, small_corpus):
    runs = {name: _run(tmp_path, name, env, data_dir, small_corpus) for name, env in CONFIGURATIONS.items()}
    reference, features = runs["as the machine is"]
    print(f"\nSIMD features of the run as the machine is: {features}")
    assert {"tagging/vectorizer.npz", "retrieval/vectorizer.npz", "retrieval/index.npz"} <= set(reference)
    assert any(name.startswith("retrieval/") for name in reference)
    for name, (artifacts, other_features) in runs.items():
        # a word of the list, not a substring: a CPU with AVX512FP16 keeps that feature, which is
        # not a dispatch target of numpy's
        assert "AVX512F" not in other_features.split() or name == "as the machine is"
        assert sorted(artifacts) == sorted(reference), name
        different = [f for f in reference if artifacts[f] != reference[f]]
        assert not different, f"{name} ({other_features}) differs from the machine's run ({features}) in {different}"


# The idf of every document frequency of a course-sized corpus (1,208,827 passages and the
# claims of the fit corpus), written to a file.
_IDF = r"""
import sys
import numpy as np
from claimtrace.pipeline.tfidf import smooth_idf

n_docs = 1_208_827 + 1_536
np.save(sys.argv[1], smooth_idf(np.arange(1, n_docs + 1), n_docs))
"""


@pytest.mark.platform
def test_idf_of_every_df_is_byte_identical_whatever_simd(tmp_path):
    """1.2M idf values: numpy's AVX-512 log differed from the C library's on dozens of them."""
    values = {}
    for name, env_changes in CONFIGURATIONS.items():
        out = tmp_path / (re.sub(r"\W+", "-", name) + ".npy")
        done = subprocess.run(
            [sys.executable, "-c", _IDF, str(out)],
            capture_output=True,
            text=True,
            env={**os.environ, **env_changes},
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        values[name] = np.load(out)
    reference = values["as the machine is"]
    for name, idf in values.items():
        assert idf.tobytes() == reference.tobytes(), f"{name}: {int((idf != reference).sum())} idf values differ"


def test_idf_takes_the_c_librarys_log():
    """The tagging and retrieval idf go through math.log, never numpy's dispatched np.log."""
    import math

    from claimtrace.pipeline.tfidf import libm_log

    values = np.arange(1, 200_000) / 7.0
    expected = np.array([math.log(v) for v in values.tolist()])
    assert libm_log(values).tobytes() == expected.tobytes()


# Run in a fresh interpreter with an empty numba cache, so that every kernel of the exact path is
# compiled here for this CPU (the machine code of a kernel loaded from the cache can't be read).
_SCAN = r"""
import json, re
import numpy as np
import scipy.sparse as sp
from claimtrace.lib import npsort
from claimtrace.lib.npsort import introsort, rows, segments, zero_pivot
from claimtrace.data.files import find_data_dir
from claimtrace.pipeline import retrieval, tfidf
from claimtrace.pipeline.preprocess import Preprocessor
from claimtrace.pipeline.retrieval import kernels
from claimtrace.pipeline.tagging import Restemmer

rows = sp.random(40, 30, density=0.3, format="csr", random_state=0)
tfidf.l2_normalize_rows(rows.copy())
retrieval.notebook_weights(rows, np.ones(30))
npsort.argsort(np.random.default_rng(0).random(200))
npsort.top_k_rows(rows, 10)
retriever = retrieval.Retriever.fit([f"p{i}" for i in range(6)],
                                ["sea level rise", "sea ice", "ice sheet melt", "level", "rise sea", "melt"],
                                Restemmer(Preprocessor.of_data_dir(find_data_dir())),
                                vectorizer_params={"min_df": 1, "max_df": 1.0})
retriever.retrieve("sea level")
found = {}
for module in (tfidf, kernels, introsort, segments, zero_pivot, rows):
    for name in dir(module):
        kernel = getattr(module, name)
        if hasattr(kernel, "inspect_asm"):
            for signature in kernel.signatures:
                asm = kernel.inspect_asm(signature)
                found[f"{module.__name__}.{name}{signature}"] = sorted(set(re.findall(r"\bv?fn?m(?:add|sub)\w*", asm)))
print(json.dumps(found))
"""


@pytest.mark.platform
def test_no_kernel_contracts_a_multiply_and_add_into_fma(tmp_path):
    """numba compiles for the host CPU; without fastmath LLVM must not fuse a * b + c (one
    rounding instead of two) or reorder sums, so the kernels compute the same bits on a CPU
    with or without FMA. Scanning the machine code proves it for this CPU's compilation."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    done = subprocess.run([sys.executable, "-c", _SCAN], capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    fused = json.loads(done.stdout)
    assert len(fused) >= 10, sorted(fused)
    assert {name: ops for name, ops in fused.items() if ops} == {}


# --- the classifier: what may vary with the CPU and the thread count, and by how much ---------

# In a fresh interpreter (thread count and kernel choice are set before torch starts): the exact
# table in float64, the same table computed by PyTorch in float32, and the dev claims' float32
# logits (gold evidence) alone and under the notebook protocol (batches of 16), as the build.
_CLASSIFY = r"""
import sys
import numpy as np
import torch
torch.set_num_threads(int(sys.argv[2]))
from claimtrace.models.inputs import encode, gold_evidence, make_rows
from claimtrace.models.transformer import notebook_logits
from claimtrace.models.predict import load_classifier
from claimtrace.models.table import export_table
from tests.support.alone_stacked import alone_logits_stacked
from claimtrace.data.files import find_data_dir, gold_passages, load_claims
from claimtrace.pipeline.preprocess import Preprocessor

classifier = load_classifier()
data_dir = find_data_dir()
claims = load_claims("dev", data_dir)
rows = make_rows(claims, gold_evidence(claims, gold_passages(data_dir)), Preprocessor.of_data_dir(data_dir))
ids = torch.from_numpy(encode(rows, classifier.vocab).input_ids)
with torch.no_grad():
    alone = alone_logits_stacked(classifier.model, ids)
    notebook = notebook_logits(classifier.model, ids)
np.savez(sys.argv[1], g=export_table(classifier.model).g, g_float32=export_table(classifier.model, torch.float32).g,
         table_logits=classifier.table.logits(ids.numpy()), alone=alone.double().numpy(),
         notebook=notebook.double().numpy())
"""

#: PyTorch's own kernels (ATen), its BLAS (MKL) and oneDNN each pick code by the CPU's ISA.
TORCH_GENERIC = {"ATEN_CPU_CAPABILITY": "default", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2", "ONEDNN_MAX_CPU_ISA": "SSE41"}

TORCH_CONFIGURATIONS = {
    "1 thread": ({}, 1),
    "2 threads": ({}, 2),
    "1 thread, generic kernels": (TORCH_GENERIC, 1),
}


@pytest.mark.platform
def test_verdicts_and_table_bound_hold_on_one_and_two_threads_and_generic_kernels(tmp_path):
    """PyTorch's float32 sums vary with the kernels and the thread count; what claimtrace shows
    does not: the same verdict for every dev claim under both protocols, the float64 table
    within 1e-12 of itself, and PyTorch's float32 within ``FLOAT32_AGREEMENT`` of the table,
    row by row and claim by claim, whatever the kernels (docs/architecture.md, "Reference platform")."""
    runs = {}
    for name, (env_changes, threads) in TORCH_CONFIGURATIONS.items():
        out = tmp_path / (re.sub(r"\W+", "-", name) + ".npz")
        env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", **env_changes}
        done = subprocess.run(
            [sys.executable, "-c", _CLASSIFY, str(out), str(threads)],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO,  # the script imports tests.support
            timeout=900,
        )
        assert done.returncode == 0, f"{name}: {done.stderr[-3000:]}"
        with np.load(out) as stored:
            runs[name] = {key: stored[key] for key in stored.files}
    reference = runs["1 thread"]
    for name, run in runs.items():
        figures = {
            "|g - g(1 thread)|": np.abs(run["g"] - reference["g"]).max(),
            "|g float32 torch - g|": np.abs(run["g_float32"] - run["g"]).max(),
            "|table logits - torch float32 alone|": np.abs(run["table_logits"] - run["alone"]).max(),
            "|torch float32 - (1 thread)|": max(
                np.abs(run["alone"] - reference["alone"]).max(), np.abs(run["notebook"] - reference["notebook"]).max()
            ),
        }
        print(f"\n{name}: " + ", ".join(f"{k} {v:.2g}" for k, v in figures.items()))
        assert figures["|g - g(1 thread)|"] < 1e-12, name
        assert max(v for k, v in figures.items() if k != "|g - g(1 thread)|") < FLOAT32_AGREEMENT, (name, figures)
        for key in ("table_logits", "alone", "notebook"):
            assert (run[key].argmax(1) == reference[key].argmax(1)).all(), f"{name}: a {key} verdict changed"
