"""``claimtrace serve`` and ``site`` (claimtrace.cli.serve)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import httpx
from click.testing import CliRunner

from claimtrace.cli.main import main


def test_cli_has_serve_and_site(tmp_path, demo_build, data_dir, demo_site_data, monkeypatch):
    import claimtrace.web.site as site

    monkeypatch.setattr(site, "SiteData", lambda *args, **kwargs: demo_site_data)  # reuse what is loaded
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


def test_worker_settings_travel_pickled_with_the_configuration(demo_build, data_dir, monkeypatch):
    """uvicorn pickles a worker's configuration into the process it spawns: the app factory in it
    carries the build to open, and the worker sets its process's settings before it makes the app
    (the environment is not how the settings travel: this process's is left as it was)."""
    import pickle

    from claimtrace.cli.serve import WorkerSettings
    from claimtrace.web import process_settings
    from claimtrace.web.serving import server_config

    configured = []
    monkeypatch.setattr(process_settings, "configure_server_process", lambda: configured.append(1))
    environment = dict(os.environ)
    settings = WorkerSettings(demo_build.root, data_dir, False, store={"path": ""})
    config = server_config(settings.factory(), 8000, factory=True, workers=2)
    factory = pickle.loads(pickle.dumps(config)).app
    assert dict(os.environ) == environment and configured == []
    app = factory()
    assert app.state.site_data.build.root == demo_build.root and configured == [1]


def test_a_worker_unpickles_its_configuration_without_importing_the_site():
    """A worker must answer its supervisor's health checks within seconds of starting, and it
    unpickles its configuration before it can: what that imports stays light."""
    heavy = ("fastapi", "torch", "nltk", "claimtrace.web.app", "claimtrace.web.site_data")
    script = (
        "import pickle, sys\n"
        "from claimtrace.cli.serve import WorkerSettings\n"
        "data = pickle.dumps(WorkerSettings('w', 'd', False).factory())\n"
        "for name in [m for m in sys.modules if m.startswith('claimtrace')]: del sys.modules[name]\n"
        "pickle.loads(data)\n"
        f"print([name for name in {heavy!r} if name in sys.modules])\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def _serving(command: list[str], port: int) -> tuple[subprocess.Popen, str]:
    """``claimtrace serve`` started as its own process, once it answers: the process and its URL."""
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        assert server.poll() is None, server.stderr.read()
        assert time.monotonic() < deadline, "the server did not start"
        try:
            if httpx.get(f"{base}/api/build.json", timeout=10).status_code == 200:
                return server, base
        except httpx.HTTPError:
            time.sleep(0.3)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_serve_with_two_workers_answers_from_both(demo_build, data_dir):
    """``claimtrace serve --workers 2``: two processes share the port; each answers pages and
    reports itself in /api/build.json; typed claims go to the typed-claims processes both share.
    ``--while-building`` over a finished build serves at once (make demo's way)."""
    port = _free_port()
    command = [sys.executable, "-m", "claimtrace.cli", "--data", str(data_dir), "serve", "--while-building"]
    command += ["--workdir", str(demo_build.root), "--port", str(port), "--workers", "2"]
    server, base = _serving(command, port)
    try:
        children = open(f"/proc/{server.pid}/task/{server.pid}/children").read().split()
        assert len(children) >= 2, children  # the workers (and multiprocessing's helper)
        for path in ("/", "/claim/claim-375.html", "/claim/claim-375.json"):
            answer = httpx.get(base + path, timeout=120, headers={"Connection": "close"})
            assert answer.status_code == 200, path
        assert "server" in httpx.get(f"{base}/api/build.json", timeout=60).json()
        for n in range(4):  # on new connections: either worker, one queue
            text = f"Glaciers lost {n} gigatonnes in {2000 + n}."
            answer = httpx.post(f"{base}/api/trace", json={"text": text}, timeout=120, headers={"Connection": "close"})
            assert answer.status_code == 200 and answer.json()["claim"]["text"] == text
        held = _descendants(server.pid)  # the workers and the typed-claims processes
        assert len(held) >= 4, held
    finally:
        server.terminate()
        server.wait(timeout=30)
    deadline = time.monotonic() + 15
    while any(os.path.exists(f"/proc/{pid}") for pid in held) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [pid for pid in held if os.path.exists(f"/proc/{pid}")]
    assert not left, f"processes outlived the server: {left}"


def test_while_building_waits_for_the_verdicts_and_stops_when_no_build_will_write_them(tmp_path):
    """`serve --while-building`: it waits while a build holds the workdir and returns once the
    checkpoint's verdicts are written; with no build writing the workdir (none started in time,
    or one that let go without them) it stops naming the command."""
    import threading

    import pytest

    from claimtrace.cli.serve import wait_for_verdicts
    from claimtrace.errors import DataError
    from claimtrace.workdir.builder import workdir_lock
    from claimtrace.workdir.layout import Workdir

    work = Workdir(tmp_path / "work")
    work.root.mkdir()
    with pytest.raises(DataError, match=r"no `claimtrace build` is writing this workdir.*claimtrace build --workdir"):
        wait_for_verdicts(work, poll=0.01, start_seconds=0.05)

    def build_writing_verdicts(after: float, write: bool) -> None:
        with workdir_lock(work):
            started.set()
            time.sleep(after)
            if write:
                work.classifier_summary.parent.mkdir(parents=True, exist_ok=True)
                work.classifier_summary.write_text("{}")
            time.sleep(after)  # the build goes on after the verdicts: the site is served meanwhile

    for write in (True, False):
        started = threading.Event()
        builder = threading.Thread(target=build_writing_verdicts, args=(0.3, write))
        builder.start()
        started.wait(5)
        try:
            if write:
                wait_for_verdicts(work, poll=0.01, start_seconds=0.05)
                assert work.build_running() and work.verdicts_written()
            else:
                work.classifier_summary.unlink()
                with pytest.raises(DataError, match="its verdicts are not there"):
                    wait_for_verdicts(work, poll=0.01, start_seconds=0.05)
                assert not work.build_running()
        finally:
            builder.join()
    work.classifier_summary.write_text("{}")
    wait_for_verdicts(work, poll=0.01, start_seconds=0.05)  # written: at once, no build needed


def _descendants(pid: int) -> set[int]:
    """Every process under ``pid``: each of its threads' children (the typed-claims processes
    are started by a thread of the command, after its first page)."""
    found: set[int] = set()
    children: list[str] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            children += open(f"/proc/{pid}/task/{task}/children").read().split()
        except OSError:  # a thread that ended meanwhile
            continue
    for child in map(int, children):
        found |= {child} | _descendants(child)
    return found


def _process_answering(base: str, path: str) -> int:
    """Which worker process answers ``path`` (a 200 asserted): one new connection, which stays
    with one worker, asked for the page and then for /api/build.json, which names its process."""
    with httpx.Client(timeout=120) as connection:
        answer = connection.get(base + path)
        assert answer.status_code == 200, (path, answer.text[:300])
        return connection.get(f"{base}/api/build.json").json()["server"]["process"]


def test_serve_with_two_workers_takes_an_upload_every_worker_serves_and_a_restart_keeps(demo_build, data_dir, tmp_path):
    """``serve --workers 2`` takes an upload into the run store beside the build; its page is
    answered by each worker; after a restart over the same store it is still there."""
    store = tmp_path / "demo.runs.sqlite"
    command = [sys.executable, "-m", "claimtrace.cli", "--data", str(data_dir), "serve", "--workdir"]
    # typed claims play no part here: no typed-claims processes to start (twice)
    command += [str(demo_build.root), "--workers", "2", "--store", str(store), "--typed-processes", "0", "--port"]
    port = _free_port()
    server, base = _serving([*command, str(port)], port)
    try:
        raw = (data_dir / "comp90042-2024" / "dev-claims-baseline.json").read_bytes()
        answer = httpx.post(f"{base}/api/compare?name=lecture", content=raw, timeout=120)
        assert answer.status_code == 201, answer.text
        page = "/" + answer.json()["url"]
        processes = set()
        for _ in range(60):  # each new connection goes to either worker
            processes.add(_process_answering(base, page))
            if len(processes) == 2:
                break
        assert len(processes) == 2, processes
    finally:
        server.terminate()
        server.wait(timeout=30)
    port = _free_port()
    server, base = _serving([*command, str(port)], port)
    try:
        kept = httpx.get(base + page.replace(".html", ".json"), timeout=120).json()
        assert kept["run"]["name"] == "lecture"
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


def test_serve_and_site_take_a_class_setting_aside_what_they_cannot_compare(demo_build, data_dir, tmp_path):
    """``--class DIR``: every *.json a run named by its file; a file the course's scorer cannot
    score, or of train, set aside with a line on stderr each (not a refusal); ``site`` writes the
    class page and lists the set-aside files on the compare index."""
    from tests.web.test_class import write_class

    folder = write_class(tmp_path / "class", data_dir, demo_build)
    train = next(iter(demo_build.claims("train").values()))
    (folder / "erin-train.json").write_text(
        json.dumps({train.id: {"claim_label": "SUPPORTS", "evidences": []}}), encoding="utf-8"
    )
    out = tmp_path / "site"
    args = ["--data", str(data_dir), "site", "--workdir", str(demo_build.root), "--out", str(out)]
    done = CliRunner().invoke(main, args + ["--split", "dev", "--limit", "1", "--class", str(folder)])
    assert done.exit_code == 0, done.output
    lines = [line for line in done.stderr.splitlines() if line.startswith("set aside: ")]
    assert sorted(line.split(":")[1].strip() for line in lines) == ["erin-train.json", "notes.json", "words.json"]
    assert "holds train claims" in next(line for line in lines if "erin-train" in line)
    index = (out / "compare" / "index.html").read_text(encoding="utf-8")
    assert "set aside: <code>notes.json</code>: not valid JSON" in index
    page = json.loads((out / "compare" / "class.json").read_text(encoding="utf-8"))
    assert [run["name"] for run in page["runs"]] and {run["name"] for run in page["runs"]} == {"alice", "bob", "carol"}
    missing = CliRunner().invoke(main, args + ["--class", str(tmp_path / "nowhere")])
    assert missing.exit_code == 2 and "no such folder" in missing.output


def test_serve_class_answers_every_compare_page(demo_build, data_dir, tmp_path):
    """``claimtrace serve --class DIR`` in a process of its own: the set-aside lines on stderr, the
    class page and the index answer."""
    from tests.web.test_class import write_class

    folder = write_class(tmp_path / "class", data_dir, demo_build)
    port = _free_port()
    command = [sys.executable, "-m", "claimtrace.cli", "--data", str(data_dir), "serve"]
    command += [
        "--workdir",
        str(demo_build.root),
        "--port",
        str(port),
        "--class",
        str(folder),
        "--typed-processes",
        "0",
    ]
    server, base = _serving(command, port)
    try:
        index = httpx.get(f"{base}/compare/index.json", timeout=120).json()
        assert {line["file"] for line in index["set_aside"]} == {"notes.json", "words.json"}
        assert sorted(run["name"] for run in index["runs"]) == ["alice", "bob", "carol", "dave-test"]
        for path in ("/compare/class.html", "/compare/class.json", "/compare/index.html"):
            assert httpx.get(base + path, timeout=120).status_code == 200, path
    finally:
        server.terminate()
        _, stderr = server.communicate(timeout=30)
    assert "set aside: notes.json: not valid JSON" in stderr and "set aside: words.json: " in stderr
