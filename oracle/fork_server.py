"""Runs oracle scripts for one test process: the 2024 environment's libraries imported once, each
script then run in a fork of this process, as if started on its own.

A start of ``.venv-oracle``'s interpreter imports numpy, pandas, scikit-learn and nltk again
before a script can begin; the suite runs several oracle scripts in each of its processes. Here
they are imported once; each request forks, and the child runs the script with ``runpy`` under
its own ``sys.argv``, its stdin read from a file and its stdout and stderr written to files,
exactly as ``python oracle/SCRIPT ARGS < stdin``. A fork shares nothing back: every script
starts from the same state as the others.

Protocol (stdin and stdout of this process, one JSON object a line): a request ``{"script":
NAME, "args": [...], "stdin": PATH, "stdout": PATH, "stderr": PATH}``, its answer
``{"returncode": N}`` once the child has exited. End of input ends the server.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
from pathlib import Path

import reference_platform

reference_platform.require()  # numpy's generic path on every CPU, as every script demands

# What the scripts import, imported before the first fork (the point of this server).
import notebook_path  # noqa: E402, F401  (contractions, nltk, numpy)
import pandas  # noqa: E402, F401
import sklearn.feature_extraction.text  # noqa: E402, F401
import sklearn.metrics.pairwise  # noqa: E402, F401

HERE = Path(__file__).resolve().parent


def _child(request: dict) -> None:
    """In the fork: the script's standard streams on the request's files, then the script."""
    for fd, name, mode in ((0, "stdin", os.O_RDONLY), (1, "stdout", os.O_WRONLY), (2, "stderr", os.O_WRONLY)):
        opened = os.open(request[name], mode)
        os.dup2(opened, fd)
        os.close(opened)
    sys.stdin = open(0, encoding="utf-8", closefd=False)
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
    sys.stderr = open(2, "w", encoding="utf-8", closefd=False)
    script = HERE / request["script"]
    sys.argv = [str(script), *request["args"]]
    code = 0
    try:
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if not isinstance(stop.code, int) and stop.code is not None:
            print(stop.code, file=sys.stderr)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main() -> None:
    requests = sys.stdin
    answers = sys.stdout
    for line in requests:
        request = json.loads(line)
        answers.flush()
        pid = os.fork()
        if pid == 0:
            _child(request)
        _, status = os.waitpid(pid, 0)
        answers.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
