"""``make test`` sets itself up: scripts/ensure-chromium, its first step, finds Debian's
Chromium, installs it where it can (root with apt-get), or stops at once with one line saying
what to install. Each path is tried with a made-up Chromium path, apt-get and user id (the
machine's own Chromium is left alone). And the environments it installs (with uv, pinned in the
Makefile) hold the locks' exact versions."""

from __future__ import annotations

import os
import re
import subprocess
import time
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "ensure-chromium"


def _run(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    done = subprocess.run(
        [str(SCRIPT)], env={"PATH": os.environ["PATH"], **env}, capture_output=True, text=True, timeout=30
    )
    return done, time.monotonic() - started


def _fake_apt_get(tmp_path: Path, installs: Path | None) -> Path:
    """An apt-get that records its calls and, for ``install chromium``, creates ``installs``."""
    log = tmp_path / "apt-get.log"
    script = tmp_path / "apt-get"
    create = f'touch "{installs}" && chmod +x "{installs}"' if installs else "exit 100"
    script.write_text(f'#!/bin/sh\necho "$@" >> "{log}"\ncase "$*" in *install*chromium*) {create} ;; esac\nexit 0\n')
    script.chmod(0o755)
    return script


def test_chromium_there_is_left_alone(tmp_path):
    present = tmp_path / "chromium"
    present.write_text("#!/bin/sh\n")
    present.chmod(0o755)
    apt_get = _fake_apt_get(tmp_path, None)
    done, _ = _run(tmp_path, CHROMIUM=str(present), APT_GET=str(apt_get), USER_ID="0")
    assert done.returncode == 0 and done.stderr == ""
    assert not (tmp_path / "apt-get.log").exists()


def test_chromium_missing_is_installed_as_root_with_apt_get(tmp_path):
    wanted = tmp_path / "bin" / "chromium"
    wanted.parent.mkdir()
    apt_get = _fake_apt_get(tmp_path, wanted)
    done, _ = _run(tmp_path, CHROMIUM=str(wanted), APT_GET=str(apt_get), USER_ID="0")
    assert done.returncode == 0, done.stderr
    assert wanted.is_file()
    assert (tmp_path / "apt-get.log").read_text().splitlines() == ["update -qq", "install -y -qq chromium"]


def test_chromium_missing_without_root_stops_at_once_saying_what_to_install(tmp_path):
    apt_get = _fake_apt_get(tmp_path, tmp_path / "chromium")
    done, seconds = _run(tmp_path, CHROMIUM=str(tmp_path / "chromium"), APT_GET=str(apt_get), USER_ID="1000")
    assert done.returncode == 1 and seconds < 5
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "install Debian's chromium package" in lines[0] and str(tmp_path) in lines[0]
    assert not (tmp_path / "apt-get.log").exists()


def test_chromium_missing_without_apt_get_stops_at_once(tmp_path):
    done, seconds = _run(tmp_path, CHROMIUM=str(tmp_path / "chromium"), APT_GET=str(tmp_path / "none"), USER_ID="0")
    assert done.returncode == 1 and seconds < 5
    assert len(done.stderr.splitlines()) == 1 and "install Debian's chromium package" in done.stderr


def test_an_install_that_fails_says_so(tmp_path):
    apt_get = _fake_apt_get(tmp_path, None)  # "installs" nothing
    done, _ = _run(tmp_path, CHROMIUM=str(tmp_path / "chromium"), APT_GET=str(apt_get), USER_ID="0")
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1].startswith("make test: apt-get could not install chromium")


def test_make_test_runs_it_first_and_ci_runs_only_the_readmes_commands():
    makefile = (REPO / "Makefile").read_text()
    test_rule = next(line for line in makefile.splitlines() if line.startswith("test:"))
    assert test_rule.split(":", 1)[1].split()[0] == "chromium"
    assert "\tscripts/ensure-chromium" in makefile or "\t@scripts/ensure-chromium" in makefile
    commands = [
        line
        for line in (REPO / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.startswith("#") and not line.startswith(("set ", "cd "))
    ]
    assert commands == ["make lint", "make test"]


def _pins(lock: Path) -> dict[str, str]:
    """name -> version of every ``name==version`` line of a lock file."""
    pins = {}
    for line in lock.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"{lock.name}: {line!r} is not an exact pin"
            pins[name] = version
    return pins


def test_the_installed_environment_holds_the_locks_exact_versions():
    """uv installs from the same registry and find-links as pip would: every pin of both locks
    is the version installed (a local label such as torch's ``+cpu`` aside)."""
    for lock in ("requirements.lock", "requirements-dev.lock"):
        for name, pinned in _pins(REPO / lock).items():
            installed = metadata.version(name).split("+", 1)[0]
            assert installed == pinned, f"{lock}: {name} {pinned} pinned, {installed} installed"


def test_the_installer_is_pinned_and_given_pips_find_links():
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^UV_VERSION := \d+\.\d+\.\d+$", makefile, re.M)
    assert "uv==$(UV_VERSION)" in makefile
    assert "PIP_FIND_LINKS" in makefile  # the local PyTorch CPU wheel, for uv too
    installs = [line for line in makefile.splitlines() if line.startswith("\t") and " install " in line]
    # Every install, into .venv and into the oracle's .venv-oracle, goes through uv; pip only
    # fetches uv itself.
    assert all(
        "$(UV_INSTALL)" in line or "uv==" in line or "$(UV_PIP) --python $(ORACLE)" in line for line in installs
    ), installs
    assert not any("pip install" in line and "uv==" not in line for line in installs), installs


def test_make_demo_writes_the_bytecode_of_what_the_build_and_the_site_import(tmp_path):
    """`make demo` runs scripts/compile_bytecode.py beside the build and the server; every module it names
    exists (a renamed one would leave its imports compiled from source at every start), and run
    with ``PYTHONDONTWRITEBYTECODE`` set it still writes bytecode, its own process only."""
    import importlib.util
    import os
    import subprocess
    import sys

    makefile = (REPO / "Makefile").read_text()
    demo = makefile[makefile.index("\ndemo:") :].split("\n\n", 1)[0]
    assert "$(PY) scripts/compile_bytecode.py & bytecode=$$!" in demo
    # the build and the server side by side: the site is served once the verdicts are written;
    # Ctrl-C (ignored by a job in the background) stops the build through the shell's traps
    assert "claimtrace build --demo" in demo and "--port $(PORT) & build=$$!" in demo
    assert "trap 'kill $$build $$bytecode 2>/dev/null' EXIT; trap 'exit 130' INT TERM" in demo
    assert "serve --workdir $(WORKDIR) --port $(PORT) --course-baseline --while-building" in demo
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import compile_bytecode
    finally:
        sys.path.remove(str(REPO / "scripts"))
    for name in compile_bytecode.ENTRY_MODULES:
        assert importlib.util.find_spec(name) is not None, name
    # A module imported the script's way gets its bytecode, PYTHONDONTWRITEBYTECODE set or not.
    (tmp_path / "fresh_module.py").write_text("VALUE = 1\n")
    program = (
        "import sys; sys.path.insert(0, sys.argv[1]); import compile_bytecode as c; "
        "c.ENTRY_MODULES = ('fresh_module',); c.main()"
    )
    environment = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(tmp_path)}
    subprocess.run([sys.executable, "-c", program, str(REPO / "scripts")], env=environment, check=True)
    assert list((tmp_path / "__pycache__").glob("fresh_module.*.pyc"))


def test_ctrl_c_on_make_demo_stops_both_the_build_and_the_server(tmp_path):
    """`make demo` runs the build in the background (where a shell ignores Ctrl-C) beside the
    server: Ctrl-C on the terminal's process group stops both; the next `make demo` resumes."""
    import os
    import signal
    import socket
    import subprocess
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    workdir = tmp_path / "work"
    environment = {**os.environ, "PORT": str(port), "WORKDIR": str(workdir)}

    def as_a_terminal_would() -> None:  # a foreground job: Ctrl-C's default, whatever ran this test
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)

    def ours() -> list[str]:
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                command = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if f"--workdir {workdir}" in command:
                found.append(command)
        return found

    demo = subprocess.Popen(
        ["make", "--no-print-directory", "demo"],
        cwd=REPO,
        env=environment,
        start_new_session=True,
        preexec_fn=as_a_terminal_would,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while not (any(" build " in c for c in ours()) and any(" serve " in c for c in ours())):
            assert demo.poll() is None and time.monotonic() < deadline, "make demo did not start both"
            time.sleep(0.2)
        time.sleep(2)  # the build under way, the server waiting for its verdicts
        os.killpg(demo.pid, signal.SIGINT)
        demo.wait(timeout=60)
        deadline = time.monotonic() + 15
        while ours() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not ours(), f"left running after Ctrl-C: {ours()}"
    finally:
        if demo.poll() is None:
            os.killpg(demo.pid, signal.SIGKILL)


def test_make_test_runs_every_test_in_two_processes_writing_bytecode():
    """`make test` (what CI runs) and `make test-fast` share one pytest command: two processes
    that take each other's tests when done, and PYTHONDONTWRITEBYTECODE unset for them and every
    process they start (each would otherwise compile all it imports from source)."""
    makefile = (REPO / "Makefile").read_text()
    pytest_line = next(line for line in makefile.splitlines() if line.startswith("PYTEST = "))
    assert "env -u PYTHONDONTWRITEBYTECODE" in pytest_line
    assert "-n 2" in pytest_line and "--dist worksteal" in pytest_line
    test = makefile[makefile.index("\ntest:") :].split("\n\n", 1)[0]
    assert test.splitlines()[2] == "\t$(PYTEST)", test  # every test: no marker left out
