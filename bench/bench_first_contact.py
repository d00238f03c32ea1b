"""First contact: from ``git clone`` to the first page ``make demo`` serves, as a new user meets it.

    python bench/bench_first_contact.py [--repo .] [--port 8890] [--keep DIR]

Clones the repository (its committed state) into a new folder beside nothing else, runs
``make demo`` there with empty installer caches (uv's in a new folder, pip's switched off: a
fresh machine has none; the machine's own PyTorch wheel, which pip's find-links name, is used as
on any machine of this kind), and asks for ``http://127.0.0.1:PORT/`` until it answers. Prints
the calibration (``../shared/bench/calibrate.py``) before and after, and one JSON line: seconds
to the environment installed (the build's first line), to the first page (served while the
build's last steps run: ``serve --while-building``), and to the build done (its report), with
the build's own time per stage. The demo data come from ``../shared`` of the
clone's parent, as ``make demo`` finds them: the clone goes into a temporary folder that has
``shared`` beside it (a link to this repository's ``../shared``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from bench_statistics import calibrate

REPO = Path(__file__).resolve().parents[1]


def first_page(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as answer:
            return answer.status == 200
    except OSError:
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=REPO)
    parser.add_argument("--port", type=int, default=8890)
    parser.add_argument(
        "--keep", type=Path, default=None, help="work in this new folder and keep it (default: a temporary folder)"
    )
    args = parser.parse_args()
    shared = (args.repo / ".." / "shared").resolve()
    print(json.dumps({"calibrate_s_before": calibrate(shared / "data")}), flush=True)
    if args.keep is not None:
        args.keep.mkdir(parents=True)
    parent = args.keep or Path(tempfile.mkdtemp(prefix="first-contact-"))
    (parent / "shared").symlink_to(shared)  # where make demo looks for the data: ../shared beside the clone
    clone = parent / "claimtrace"
    log_path = parent / "make-demo.log"
    environment = {
        **os.environ,
        "UV_CACHE_DIR": str(parent / "uv-cache"),
        "PIP_NO_CACHE_DIR": "1",
        "PORT": str(args.port),
    }
    marks: dict[str, float] = {}
    started = time.monotonic()
    subprocess.run(["git", "clone", "-q", str(args.repo), str(clone)], check=True)
    marks["cloned"] = time.monotonic() - started
    with open(log_path, "w") as log:
        demo = subprocess.Popen(
            ["make", "demo"],
            cwd=clone,
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as on a terminal
        )
        try:
            # the site is served while the build's last steps run: wait for both
            while "first_page" not in marks or "built" not in marks:
                if demo.poll() is not None:
                    raise SystemExit(f"make demo ended ({demo.returncode}): {log_path.read_text()[-2000:]}")
                text = log_path.read_text(errors="replace")
                if "installed" not in marks and "claimtrace build" in text:
                    marks["installed"] = time.monotonic() - started
                if "built" not in marks and re.search(r"^built ", text, re.M):
                    marks["built"] = time.monotonic() - started
                if "first_page" not in marks and first_page(args.port):
                    marks["first_page"] = time.monotonic() - started
                time.sleep(0.1)
        finally:  # make demo's own processes, as Ctrl-C would end them (its recipe stops the build)
            os.killpg(demo.pid, signal.SIGINT)
            demo.wait(timeout=60)
    report = log_path.read_text(errors="replace")
    stages = dict(re.findall(r"^  ([a-z ]+?)\s+([0-9.]+) s", report, re.M))
    print(json.dumps({**{k: round(v, 1) for k, v in marks.items()}, "stages_s": stages}), flush=True)
    print(json.dumps({"calibrate_s_after": calibrate(shared / "data")}), flush=True)
    if args.keep is None:
        shutil.rmtree(parent, ignore_errors=True)


if __name__ == "__main__":
    main()
