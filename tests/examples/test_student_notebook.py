"""examples/student.ipynb run top to bottom in one kernel over the shared demo build, its outputs
checked: the course baseline's dev HM as the course's eval.py gives it (0.3441), the claims where
it differs from the notebook's pipeline, a claim page and a typed claim drawn by the site."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from claimtrace.data import files as data_layer

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "student.ipynb"

#: Runs the notebook (argv: notebook, the folder it runs in, where the executed copy is written).
_EXECUTE = """
import sys, nbclient, nbformat
notebook = nbformat.read(sys.argv[1], as_version=4)
client = nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": sys.argv[2]}})
client.execute()
nbformat.write(notebook, sys.argv[3])
"""


def _text(cell) -> str:
    """A code cell's printed text and the plain text of what it displayed."""
    out = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            out.append(output["text"])
        elif "data" in output:
            out.append(output["data"].get("text/plain", ""))
    return "".join(out)


def _html(cell) -> str:
    return "".join(output.get("data", {}).get("text/html", "") for output in cell.get("outputs", []))


@pytest.fixture(scope="module")
def ran(demo_build, data_dir, tmp_path_factory):
    """The notebook executed in a folder holding its predictions.json (the course baseline's dev
    predictions, written from the data folder), with the demo build as its build."""
    folder = tmp_path_factory.mktemp("student")
    shutil.copyfile(data_layer.course_file(data_dir, "baseline"), folder / "predictions.json")
    executed = folder / "executed.ipynb"
    # nbclient runs in a process of its own: its event loop, left set in the process that ran it,
    # would break every later test of this process that drives asyncio or Playwright's sync API.
    environment = {**os.environ, "CLAIMTRACE_WORKDIR": str(demo_build.root.resolve())}
    environment["CLAIMTRACE_DATA"] = str(data_dir.resolve())  # the kernel inherits it
    subprocess.run(
        [sys.executable, "-c", _EXECUTE, str(NOTEBOOK), str(folder), str(executed)],
        env=environment,
        check=True,
        timeout=900,
    )
    notebook = nbformat.read(executed, as_version=4)
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def test_the_notebook_scores_the_baseline_as_the_course_does(ran):
    opened, scored = ran[0], ran[1]
    assert "claimtrace.Build" in _text(opened) and "The build in" in _html(opened)
    assert "F = 0.3378, A = 0.3506, HM = 0.3441 over 154 dev claims" in _text(scored)
    assert "The course’s scores" in _html(scored)


def test_the_notebook_finds_where_the_baseline_and_the_pipeline_differ(ran, demo_build, data_dir):
    import json

    compared, opened = ran[2], ran[3]
    baseline = json.loads(data_layer.course_file(data_dir, "baseline").read_text(encoding="utf-8"))
    notebook = demo_build.verdict_table("dev")  # the build's verdicts, retrieved evidence, batches of 16
    differ = [cid for cid, entry in baseline.items() if entry["claim_label"] != notebook[cid]["notebook"]]
    assert f"my label differs from the notebook's on {len(differ)} of 154 claims" in _text(compared)
    assert _text(opened).startswith(differ[0]) and differ[0] in _html(opened) and "<iframe" in _html(opened)


def test_the_notebook_traces_a_typed_claim(ran):
    typed = ran[4]
    assert "verdict:" in _text(typed) and "The whole trace of your claim" in _html(typed)
