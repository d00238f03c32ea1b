"""Shared fixtures: the data folder, and the 2024 reference environment (the oracle).

Oracle tests run scripts from ``oracle/`` under ``.venv-oracle`` (numpy 1.24.4,
scikit-learn 1.2.2, pandas 2.0.3, nltk 3.8.1: ``make oracle-env``), exchanging inputs and
outputs through files; each test process starts that interpreter once and runs every script in a
fork of it (``oracle/fork_server.py``). A missing oracle environment fails these tests loudly: it is never a
silent skip.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest

# Before torch is first imported: its OpenMP threads sleep at barriers instead of spinning
# (constants.OMP_WAIT_POLICY; same numbers, much faster on a shared CPU).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from claimtrace.data.files import find_data_dir  # noqa: E402

# The suite keeps builds, traces and pages in memory between tests (hundreds of thousands of
# containers); Python's cyclic collector, run every 700 new containers, walks them again and
# again. Run rarely, it costs the suite about 8% less time (docs/benchmarks.md, "The test suite");
# what a test leaves in cycles is still collected.
gc.set_threshold(100_000, 50, 100)

REPO = Path(__file__).resolve().parents[1]
ORACLE_PYTHON = REPO / ".venv-oracle" / "bin" / "python"


def _platform_lines() -> list[str]:
    """What this run's CPU offers: which SIMD numpy dispatches to (the exact path must not
    depend on it; tests/test_reference_platform.py) and whether the C library's log runs its
    FMA variant (docs/architecture.md, "Reference platform")."""
    import numpy as np
    from numpy._core._multiarray_umath import __cpu_baseline__, __cpu_dispatch__, __cpu_features__

    found = [name for name in __cpu_dispatch__ if __cpu_features__.get(name)]
    flags = set()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    return [
        f"numpy {np.__version__} SIMD: baseline {' '.join(__cpu_baseline__)}; dispatches to {' '.join(found) or 'nothing'}",
        f"AVX-512: {'yes' if 'AVX512F' in found else 'no'}; FMA (glibc's log variant): {'yes' if 'fma' in flags else 'no'}",
    ]


def pytest_sessionstart(session) -> None:
    """Print the platform lines once at the top of every run, quiet or not, so that every CI
    log says what it ran on."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        for line in _platform_lines():
            reporter.write_line(line)


# --- the page tests' browser -----------------------------------------------------------------------
# (tests/web/, tests/api/)

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def browser():
    """One Chromium per test process, shared by every page test it runs (each test opens its
    own page or context and closes it), rather than a launch per module. Defined here, at the
    root, and nowhere else: a second definition would enter Playwright's sync API a second time
    in the same thread, which it refuses while the first is alive. While it lives, this thread
    holds Playwright's running event loop (tests/support/event_loop.py)."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (.ci/run does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def axe(browser):
    """``axe.violations(url, width, scheme)``: axe-core's violations on a page, checked in one tab
    of the process's Chromium kept open from check to check (tests/web/conftest.py,
    ``AxeChecker``). axe-core is npm's package, installed by ``make test`` (tests/axe)."""
    from tests.web.conftest import AXE, AxeChecker

    if not AXE.is_file():
        pytest.fail(f"{AXE} is missing: make test installs it (cd tests/axe && npm ci)")
    checker = AxeChecker(browser, AXE.read_text(encoding="utf-8"))
    yield checker
    checker.close()


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return find_data_dir()


@pytest.fixture(scope="session")
def preprocessor(data_dir):
    """The preprocessing with the data folder's stopword list."""
    from claimtrace.pipeline.preprocess import Preprocessor

    return Preprocessor.of_data_dir(data_dir)


@pytest.fixture()
def small_evidence(tmp_path, data_dir):
    """The first 600 demo passages plus a duplicate text, as a user's evidence.json (the build's
    and the command line's tests of a user's corpus)."""
    from claimtrace.data import files as data

    corpus = dict(list(data.demo_corpus(data_dir).items())[:600])
    corpus["evidence-9999999"] = corpus["evidence-67732"]
    path = tmp_path / "evidence.json"
    path.write_text(json.dumps(corpus, ensure_ascii=False), encoding="utf-8")
    return path


class OracleServer:
    """``oracle/fork_server.py`` under the 2024 environment, for one test process: each call runs
    a script in a fork of it, with the reference libraries already imported, and returns its
    stdout, as ``python oracle/SCRIPT ARGS < stdin`` would print it."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.calls = 0
        self.process = subprocess.Popen(
            [str(ORACLE_PYTHON), str(REPO / "oracle" / "fork_server.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
            start_new_session=True,  # its forks in its process group: stopped with it
        )

    def __call__(self, script: str, *args: str, stdin: str | None = None, timeout: float = 600) -> str:
        import select

        self.calls += 1
        streams = {name: self.folder / f"{self.calls}.{name}" for name in ("stdin", "stdout", "stderr")}
        streams["stdin"].write_text(stdin or "", encoding="utf-8")
        for name in ("stdout", "stderr"):
            streams[name].write_bytes(b"")
        request = {"script": script, "args": list(args), **{k: str(v) for k, v in streams.items()}}
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            pytest.fail(f"oracle/fork_server.py has stopped:\n{self.process.stderr.read()[-4000:]}")
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline() if ready else ""
        if not line:
            self.kill()
            pytest.fail(f"oracle/{script}: no answer within {timeout} s:\n{self.process.stderr.read()[-4000:]}")
        returncode = json.loads(line)["returncode"]
        if returncode != 0:
            stderr = streams["stderr"].read_text(encoding="utf-8")
            pytest.fail(f"oracle/{script} failed ({returncode}):\n{stderr[-4000:]}")
        return streams["stdout"].read_text(encoding="utf-8")

    def kill(self) -> None:
        """The server and the script it is running (a fork of it, in its process group)."""
        import signal

        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(timeout=30)

    def close(self) -> None:
        try:
            self.process.stdin.close()
            self.process.wait(timeout=30)
        except (BrokenPipeError, subprocess.TimeoutExpired):
            self.kill()


@pytest.fixture(scope="session")
def oracle(tmp_path_factory):
    """``oracle(script, *args, stdin=None)`` -> stdout of the script under the 2024 environment:
    one oracle process per test process, each script run in a fork of it (oracle/fork_server.py)."""
    if not ORACLE_PYTHON.exists():
        pytest.fail(f"{ORACLE_PYTHON} is missing: run `make oracle-env` (the README's test command does)")
    server = OracleServer(tmp_path_factory.mktemp("oracle-streams"))
    yield server
    server.close()


# --- the demo build, stage by stage -------------------------------------------------------------
# One workdir per test session, built only as far as the tests that run need: a stage's tests
# ask for that stage (the build resumes, so asking for a later one only adds what it lacks).


#: Where the demo build is kept between test sessions, one folder per version of what makes it.
DEMO_CACHE = REPO / ".pytest_cache" / "claimtrace-demo"


def _demo_key(data_dir: Path) -> str:
    """A digest of everything the demo build is made from: the code the build imports (the
    modules of ``claimtrace.workdir.builder``'s import closure, tests/layering.py), by path, the
    shipped assets (the checkpoints) and the data files. Editing code the build does not import
    (the command line, the site) keeps the build, and so does the seed-spread file."""
    import hashlib

    from claimtrace.evaluation.seed_spread import SEED_SPREAD_FILE
    from tests.layering import PACKAGE, closure, modules

    digest = hashlib.sha256()
    known = modules()
    inputs = [known[name] for name in sorted(closure("claimtrace.workdir.builder"))]
    # the seed-spread file is the site's, not the build's, and is rewritten while seeds train
    assets = [path for path in sorted((PACKAGE / "assets").iterdir()) if path.name != SEED_SPREAD_FILE]
    inputs += assets + sorted(data_dir.rglob("*"))
    for path in inputs:
        if path.is_file() and "__pycache__" not in path.parts:
            name = str(path.relative_to(PACKAGE.parent) if path.is_relative_to(PACKAGE) else path.relative_to(data_dir))
            digest.update(name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


@pytest.fixture(scope="session")
def demo_root(tmp_path_factory, data_dir) -> Path:
    """The demo build's folder: kept between sessions under .pytest_cache, keyed by the code
    and data it is made from, so that a second run of the suite does not build it again (the
    build checks every file against its manifest first and repairs what a test may have
    damaged). CLAIMTRACE_TEST_FRESH=1 builds it in a new temporary folder instead."""
    import shutil

    if os.environ.get("CLAIMTRACE_TEST_FRESH") == "1":
        return tmp_path_factory.mktemp("demo-build")
    key = _demo_key(data_dir)
    if DEMO_CACHE.is_dir():
        for stale in DEMO_CACHE.iterdir():
            if stale.name != key and stale.name != f"{key}.lock":
                if stale.is_dir():
                    shutil.rmtree(stale, ignore_errors=True)
                else:
                    stale.unlink(missing_ok=True)
    root = DEMO_CACHE / key
    root.mkdir(parents=True, exist_ok=True)
    return root


@contextmanager
def demo_build_lock(root: Path):
    """One `claimtrace build` of the kept demo build at a time across the suite's processes
    (``make test`` and ``make test-fast`` run two, pytest-xdist): the first builds or checks it, the other waits
    and then finds it whole, where the build's own workdir lock would refuse it."""
    import fcntl

    with open(root.parent / f"{root.name}.lock", "a+", encoding="utf-8") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        yield


def _demo_until(root: Path, data_dir: Path, stage: str):
    from claimtrace.workdir.builder import build
    from claimtrace.workdir.reader import BuildReader

    with demo_build_lock(root):
        build(root, data_dir, None, processes=2, until=stage)
    return BuildReader(root, data_dir)


@pytest.fixture(scope="session")
def demo_tagged(demo_root, data_dir):
    """The demo build up to its tagging stage, opened by the build reader."""
    return _demo_until(demo_root, data_dir, "tagging")


@pytest.fixture(scope="session")
def demo_retrieved(demo_tagged, demo_root, data_dir):
    """The demo build up to its retrieval stage."""
    return _demo_until(demo_root, data_dir, "retrieval")


@pytest.fixture(scope="session")
def demo_build(demo_retrieved, demo_root, data_dir):
    """The whole demo build (every stage), made once per test session."""
    return _demo_until(demo_root, data_dir, "classifier")


@pytest.fixture(scope="session")
def demo_counterfactuals(demo_build, tmp_path_factory, data_dir):
    """A copy of the demo build holding ``claimtrace counterfactual --all``'s files for the first
    :data:`COUNTERFACTUAL_CLAIMS` dev and test claims (words up to 2): computed once per session
    (tests/explain/, tests/web/views/)."""
    import shutil

    from claimtrace.cli.counterfactual import write_all
    from claimtrace.workdir.reader import BuildReader

    root = tmp_path_factory.mktemp("counterfactuals") / "demo"
    shutil.copytree(demo_build.root, root)
    write_all(BuildReader(root, data_dir), max_words=COUNTERFACTUAL_WORDS, limit=COUNTERFACTUAL_CLAIMS)
    return BuildReader(root, data_dir)


#: The claims of each split, and the largest word set, of the session's counterfactuals.
COUNTERFACTUAL_CLAIMS, COUNTERFACTUAL_WORDS = 2, 2


# --- the shipped classifier, and the train and dev claims with their gold evidence ----------------
# (tests/models/, tests/explain/)


@pytest.fixture(scope="session")
def classifier():
    """The shipped classifier (checkpoint and table), loaded once."""
    from claimtrace.models.predict import load_classifier

    return load_classifier()


@pytest.fixture(scope="session")
def splits(data_dir):
    """``{split: (claims, gold evidence)}`` for train and dev."""
    from claimtrace.data.files import gold_passages, load_claims
    from claimtrace.models.inputs import gold_evidence

    passages = gold_passages(data_dir)
    out = {}
    for split in ("train", "dev"):
        claims = load_claims(split, data_dir)
        out[split] = (claims, gold_evidence(claims, passages))
    return out


# --- the web site (tests/web/, tests/compare/, tests/workdir/stages/) ---------------------------


@pytest.fixture(scope="session")
def demo_site_data(demo_build):
    """One SiteData over the demo build, for every web test: it caches what it computes."""
    from claimtrace.web.site_data import SiteData

    return SiteData(demo_build)


@pytest.fixture(scope="session")
def web_client(demo_site_data):
    """A FastAPI TestClient of the site over the demo build."""
    from fastapi.testclient import TestClient

    from claimtrace.web.app import create_app

    with TestClient(create_app(site_data=demo_site_data)) as client:
        yield client


@pytest.fixture(scope="session")
def web_server(demo_site_data):
    """The site served by uvicorn in a thread on 127.0.0.1 and a free port; its base URL.
    Stopped at the end of the session."""
    import socket
    import threading
    import time

    import uvicorn

    from claimtrace.web.app import create_app

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(site_data=demo_site_data), host="127.0.0.1", port=port, log_level="warning", lifespan="off"
        )
    )
    thread = threading.Thread(target=server.run, name="claimtrace-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            pytest.fail(f"the test server did not start on 127.0.0.1:{port}")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=15)
