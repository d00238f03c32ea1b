"""claimtrace.lib.forked_job: a job in a forked process gives back its value or what it raised, and
never outlives the build that started it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from claimtrace.errors import DataError, Missing
from claimtrace.lib.forked_job import ForkedJob, ForkedJobFailed

SRC = Path(__file__).resolve().parents[2] / "src"


def _value(a, b=0):
    return {"sum": a + b, "pid": os.getpid()}


def _raises(error):
    raise error


def _dies():
    os._exit(3)


def _sleeps(seconds):
    time.sleep(seconds)


def test_a_job_runs_in_another_process_and_gives_back_its_value():
    job = ForkedJob.start(_value, 2, b=3)
    result = job.result()
    assert result["sum"] == 5 and result["pid"] != os.getpid()
    job.cancel()  # after the result: nothing to stop, no error


def test_what_a_job_raises_is_raised_by_result():
    with pytest.raises(DataError, match="evidence.json: not a JSON object"):
        ForkedJob.start(_raises, DataError("evidence.json: not a JSON object")).result()
    with pytest.raises(KeyboardInterrupt):  # a killed chunk writer, as the build's tests stand it in
        ForkedJob.start(_raises, KeyboardInterrupt("killed")).result()


def test_an_error_that_cannot_come_back_whole_keeps_its_message():
    """Missing takes three arguments, so pickling cannot rebuild it: the build still says which
    file and what is wrong, as a DataError (exit 2)."""
    error = Missing("tagging", Path("tagging/tags/00000.jsonl"), "not built yet")
    with pytest.raises(DataError, match=r"tagging/tags/00000.jsonl: not built yet"):
        ForkedJob.start(_raises, error).result()


def test_a_job_that_dies_is_said_to_have_died():
    with pytest.raises(ForkedJobFailed, match="exit code 3"):
        ForkedJob.start(_dies).result()


def test_cancel_stops_a_running_job():
    job = ForkedJob.start(_sleeps, 60)
    started = time.perf_counter()
    job.cancel()
    assert time.perf_counter() - started < 10
    assert not job.running()


def test_a_job_dies_with_the_process_that_started_it(tmp_path):
    """A build killed with SIGKILL leaves no job writing into its workdir."""
    pid_file = tmp_path / "job.pid"
    script = (
        "import os, sys, time\n"
        f"sys.path.insert(0, {str(SRC)!r})\n"
        "from claimtrace.lib.forked_job import ForkedJob\n"
        "def job(path):\n"
        "    open(path, 'w').write(str(os.getpid()))\n"
        "    time.sleep(60)\n"
        f"ForkedJob.start(job, {str(pid_file)!r})\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 30
        while not (pid_file.is_file() and pid_file.read_text()):
            assert time.monotonic() < deadline, "the job never started"
            time.sleep(0.05)
        job_pid = int(pid_file.read_text())
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 10
        while _alive(job_pid):
            assert time.monotonic() < deadline, "the job outlived the killed process"
            time.sleep(0.05)
    finally:
        parent.kill()
        parent.wait()


def _alive(pid: int) -> bool:
    """Running, and not a zombie waiting for its (dead) parent's reaper."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _burns(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_a_job_is_reaped_where_its_result_is_taken():
    """Its CPU time is counted once, where the build takes its result: starting a pool of
    workers meanwhile (multiprocessing reaps the finished children it knows) leaves it be."""
    import multiprocessing

    job = ForkedJob.start(_burns, 0.3)
    deadline = time.monotonic() + 30
    while not _ended(job.pid):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.map(abs, [-1]) == [1]
    before = os.times().children_user + os.times().children_system
    job.result()
    after = os.times().children_user + os.times().children_system
    assert after - before >= 0.25 and job.seconds["cpu"] >= 0.25 and job.seconds["wall"] >= 0.25


def _ended(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True
