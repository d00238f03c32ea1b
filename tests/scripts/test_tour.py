"""scripts/tour.py: one journey at one width, captured from the demo build, is what the tour page
reads."""

from __future__ import annotations

import subprocess
import sys

import pytest

from claimtrace.web.views.tour import png_size, tour_view
from tests.conftest import REPO


@pytest.mark.browser
def test_the_script_captures_a_journey_the_tour_page_reads(demo_build, data_dir, tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "tour.py"),
            "--workdir",
            str(demo_build.root),
            "--data",
            str(data_dir),
            "--out",
            str(tmp_path),
            "--journey",
            "one-claim",
            "--width",
            "390",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    tour = tour_view(tmp_path)
    assert tour["status"] == "ok" and tour["widths"] == [390]
    (journey,) = tour["journeys"]
    assert journey["id"] == "one-claim" and [s["id"] for s in journey["steps"]] == ["summary", "filter", "verdict"]
    for step in journey["steps"]:
        (shot,) = step["shots"]
        assert png_size(tmp_path / shot["file"]) == (390, 844)
        assert (tmp_path / shot["file"]).stat().st_size < 150_000
    assert sorted(p.name for p in tmp_path.glob("*.png")) == [f"one-claim-{k}-390.png" for k in (1, 2, 3)]
