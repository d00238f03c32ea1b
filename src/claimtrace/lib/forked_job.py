"""One piece of the build run alongside the rest, in a forked process, on the other core.

The build's stages are mostly one Python thread each. Where a later step needs nothing an earlier
one makes (BM25 reads the passages only; the unpadded-tags retriever reads the tags, not the
padded retriever), the build starts it here and collects it where its result is needed:

    job = ForkedJob.start(build_bm25, work, data_dir, passages, processes=1)
    ...                      # the build's main line goes on in this process
    summary = job.result()   # waits; re-raises what the job raised

The process is forked, so what the job reads (the corpus, the tags) is shared, not pickled; only
its return value comes back, pickled. It dies with the build's process (``PR_SET_PDEATHSIG``): a
killed build leaves no job writing into its workdir, and what the job wrote is whole files only
(every writer writes a temporary name, then renames), so the next build resumes it. A job that
is not collected (the main line raised) is killed by :meth:`ForkedJob.cancel`.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import pickle
import signal
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

from claimtrace.errors import DataError

__all__ = ["ForkedJob", "ForkedJobDied", "ForkedJobFailed", "cpu_seconds"]

#: prctl(2)'s option: a signal delivered to this process when its parent dies.
_PR_SET_PDEATHSIG = 1


class ForkedJobFailed(RuntimeError):
    """A job alongside the build raised what cannot be sent back (a bug): its traceback."""


class ForkedJobDied(ForkedJobFailed):
    """A job's process ended without a result: killed (the system out of memory, a signal),
    not a bug of the job; the command line says so in one line (exit 1)."""


def _die_with_parent(parent: int) -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the job may outlive a killed build
        pass
    if os.getppid() != parent:  # the build died before the signal was asked for
        os._exit(1)


def _run(connection, parent: int, job: Callable[..., Any], args: tuple, kwargs: dict) -> None:
    _die_with_parent(parent)
    # the main line's progress bars own the terminal: the job's would be drawn over them
    sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - for the process's life
    started, cpu = time.perf_counter(), cpu_seconds()
    try:
        value = job(*args, **kwargs)
        outcome = ("value", value, {"wall": time.perf_counter() - started, "cpu": cpu_seconds() - cpu})
    except BaseException as error:  # noqa: BLE001 - every failure goes back to the build
        outcome = ("error", _readable(error), traceback.format_exc())
    try:
        payload = pickle.dumps(outcome)
    except Exception:  # noqa: BLE001 - a value or error that cannot be pickled: the traceback
        payload = pickle.dumps(("error", None, outcome[-1] if outcome[0] == "error" else traceback.format_exc()))
    connection.send_bytes(payload)
    connection.close()


def cpu_seconds() -> float:
    """CPU time of this process and of the workers it has waited for, in seconds."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _readable(error: BaseException) -> BaseException | None:
    """``error`` if the build's process can rebuild it from its pickle; a DataError that cannot
    (its constructor takes other arguments) as a plain DataError with its message, so the build
    still ends in one line naming the file (exit 2); None for any other: its traceback is sent."""
    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:  # noqa: BLE001 - whatever pickling an arbitrary exception raises
        return DataError(str(error)) if isinstance(error, DataError) else None


class ForkedJob:
    """A function running in a forked process; :meth:`result` waits for it.

    The process is forked with ``os.fork`` and reaped only by :meth:`result` or :meth:`cancel`
    (multiprocessing reaps finished children whenever it starts another, a pool worker
    included): its CPU time is counted where the build takes its result, once."""

    def __init__(self, pid: int, connection, name: str):
        self.pid = pid
        self._connection = connection
        self.name = name
        self.exit_code: int | None = None
        #: The job's own wall and CPU time, once :meth:`result` returned (``{"wall", "cpu"}``).
        self.seconds: dict[str, float] | None = None

    @classmethod
    def start(cls, job: Callable[..., Any], *args: Any, **kwargs: Any) -> ForkedJob:
        """Fork and run ``job(*args, **kwargs)`` in the child."""
        receiver, sender = multiprocessing.Pipe(duplex=False)
        sys.stdout.flush(), sys.stderr.flush()  # nothing buffered is written twice
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the child: run the job, send its outcome, never return into the build
            code = 1
            try:
                receiver.close()
                _run(sender, parent, job, args, kwargs)
                code = 0
            finally:
                os._exit(code)
        sender.close()
        return cls(pid, receiver, getattr(job, "__name__", "job"))

    def result(self) -> Any:
        """The job's return value; what it raised is raised here (an exception that could not
        be pickled, or a job that died without a word, as :class:`ForkedJobFailed`)."""
        try:
            payload = self._connection.recv_bytes()
        except EOFError:
            payload = None
        finally:
            self._connection.close()
            self._reap()
        if payload is None:
            raise ForkedJobDied(
                f"{self.name}: its process alongside the build ended without a result ({self._how_it_ended()}; "
                "a signal 9 is often the system out of memory): run the same `claimtrace build` again to resume, "
                "or with --processes 1 to run every stage in one process"
            )
        try:
            outcome = pickle.loads(payload)
        except Exception as error:  # an exception type whose constructor pickling cannot call
            raise ForkedJobFailed(f"{self.name}: failed, and its error could not be read back: {error}") from None
        if outcome[0] == "value":
            self.seconds = outcome[2]
            return outcome[1]
        _, error, text = outcome
        if error is None:  # an error that could not be sent back whole
            raise ForkedJobFailed(f"{self.name} failed:\n{text}")
        raise error

    def running(self) -> bool:
        """The job's process has not ended (one that has is reaped here)."""
        if self.exit_code is not None:
            return False
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        if pid == 0:
            return True
        self.exit_code = os.waitstatus_to_exitcode(status)
        return False

    def cancel(self) -> None:
        """Kill the job if it still runs (the build's main line failed); reap it."""
        if self.exit_code is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:  # ended, not reaped yet
                pass
            self._reap()
        self._connection.close()

    def _reap(self) -> None:
        if self.exit_code is None:
            _, status = os.waitpid(self.pid, 0)
            self.exit_code = os.waitstatus_to_exitcode(status)

    def _how_it_ended(self) -> str:
        code = self.exit_code
        return f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
