"""``claimtrace serve`` and ``site`` (claimtrace.cli.serve)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import httpx
from click.testing import CliRunner

from claimtrace.cli.main import main


def test_cli_has_serve_and_site(tmp_path, demo_build, data_dir, web_tracer, monkeypatch):
    import claimtrace.web.site as site

    monkeypatch.setattr(site, "Tracer", lambda *args, **kwargs: web_tracer)  # reuse what is loaded
    runner = CliRunner()
    for command in ("serve", "site"):
        result = runner.invoke(main, [command, "--help"])
        assert result.exit_code == 0 and "--workdir" in result.output
    args = [
        "--data",
        str(data_dir),
        "site",
        "--workdir",
        str(demo_build.root),
        "--out",
        str(tmp_path / "s"),
        "--split",
        "test",
        "--limit",
        "1",
    ]
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout.strip().splitlines()[-1])["claims"] == 1
    assert (tmp_path / "s" / "explore" / "test.html").is_file()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_serve_with_two_workers_answers_from_both(demo_build, data_dir):
    """``claimtrace serve --workers 2``: two processes share the port; each answers pages and
    reports itself in /api/build.json."""
    port = _free_port()
    command = [sys.executable, "-m", "claimtrace.cli", "--data", str(data_dir), "serve"]
    command += ["--workdir", str(demo_build.root), "--port", str(port), "--workers", "2"]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, server.stderr.read()
            assert time.monotonic() < deadline, "the server did not start"
            try:
                if httpx.get(f"{base}/api/build.json", timeout=10).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        children = open(f"/proc/{server.pid}/task/{server.pid}/children").read().split()
        assert len(children) >= 2, children  # the workers (and multiprocessing's helper)
        for path in ("/", "/claim/claim-375.html", "/claim/claim-375.json"):
            answer = httpx.get(base + path, timeout=120, headers={"Connection": "close"})
            assert answer.status_code == 200, path
        assert "server" in httpx.get(f"{base}/api/build.json", timeout=60).json()
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_serve_refuses_a_bad_predictions_file_before_serving(demo_build, data_dir, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"claim-752": 5}', encoding="utf-8")  # what the course's scorer fails on
    done = CliRunner().invoke(
        main, ["--data", str(data_dir), "serve", "--workdir", str(demo_build.root), "--predictions", str(bad)]
    )
    assert done.exit_code == 2
    assert f"{bad}: claim 'claim-752' is a number: the course's scorer fails on it" in done.output
