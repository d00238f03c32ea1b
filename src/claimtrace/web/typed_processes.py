"""Typed claims traced in processes of their own (``serve --typed-processes N``).

A typed claim's trace is almost all Python: in one server process, two at once share one core
under the interpreter's lock, and the next waits for both. Measured on the demo build with one
worker: 8 clients typing at once got no more claims a second than one client alone, so each
waited for the seven others, and the slowest for more (bench/bench_typed.py; docs/benchmarks.md,
"Typed claims under concurrent load, and a lecture hall").

So ``serve`` starts N processes that do nothing else (:class:`TypedProcesses`), each with its
own reader of the build (the large arrays are mapped, so shared). They all accept on one Unix
socket, and a process asks for the next connection only when it has answered the last: the
socket's queue is one queue, first come first served, for every server process, and N claims
are traced at once on N cores whichever worker took the request. A server process hands a
typed text over and sends back the answer's bytes (:class:`TypedClient`): the same bytes as its
own trace would be (:func:`typed_answer_json`, the same encoder; ``tests/web/test_typed_processes.py``).

The processes start once the server has answered its first page (or after ``start_after``
seconds if none is asked for), at a lower CPU priority (:data:`NICENESS`): started with the
server, their imports and their reading of the build took the two cores from the first page
while it was being made. Until one is ready (each says so with a file beside the socket), a
server process traces a typed claim itself, the same bytes, rather than leaving it to wait for a
process still reading the build (``claimtrace.web.routes.typed_json``).

A process that dies is started again within a second, and the claim it held is answered 503
saying so; a process looks at the build's manifest at most once a second and reads the build
again when it was completed or repaired, as the server's pages do; every process ends with the
command that started it, however that ended. A process returns freed memory to the system
(which takes longer than a claim's wait should: docs/benchmarks.md, the same section) at a moment
no claim waits on it, rather than in the middle of a queue (:func:`release_due`).
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import select
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from claimtrace.errors import DataError
from claimtrace.evaluation.sweep import Rule
from claimtrace.explain.retrieval import NOTEBOOK_RULE, rule_named
from claimtrace.web.encoding import encode
from claimtrace.web.process_settings import (
    RELEASE_EVERY,
    RELEASE_LATEST,
    configure_server_process,
    keep_out_of_collections,
    release_memory,
)
from claimtrace.web.responses import text_problem, unreadable_build
from claimtrace.web.site_data import build_stamp
from claimtrace.web.typed_claims import MAX_TEXT_CHARS, BadText, TypedClaimQueue
from claimtrace.workdir.reader import BuildReader

#: How often a typed-claims process looks whether its command is still there, and the command
#: whether each process is (a dead one is started again).
CHECK_SECONDS = 1.0
#: Connections waiting for a typed-claims process, beyond which a claim is answered 503.
WAITING = 256
#: Seconds a server process waits for a typed claim's answer before it says it cannot give one
#: (a claim takes tens of milliseconds; no process may have started at all).
ANSWER_SECONDS = 60.0
#: Bytes of a message's length prefix; a status and a length prefix the answer.
_PREFIX = 4
#: How much lower than the command's the processes' CPU priority is (``nice``). Started after the
#: first page, their imports and reading of the build took the cores from the server while it
#: traced the claims typed meanwhile and made its next pages; at a lower priority they take what
#: the server leaves. An unprivileged process cannot raise its priority again, so they keep it:
#: with only typed claims to trace the server leaves them the cores, and under a mixed load a
#: page (or another program on the machine) goes before a typed claim's trace.
NICENESS = 10
#: The file beside the socket that says a server process has answered its first page.
FIRST_PAGE_FILE = "first-page-served"
#: How often the command looks for that file while its processes wait for it.
FIRST_PAGE_POLL_SECONDS = 0.05


def typed_answer(typed_claims: TypedClaimQueue, text: str, rule: Rule = NOTEBOOK_RULE) -> tuple[int, dict]:
    """A typed text's answer under ``rule``, ``(status, value)``: its trace, or ``{"error",
    "status"}`` (400 for a text that cannot be traced, 413 past :data:`MAX_TEXT_CHARS`)."""
    return _answer(text, rule, typed_claims.trace_text)


def typed_answer_json(typed_claims: TypedClaimQueue, text: str, rule: Rule = NOTEBOOK_RULE) -> tuple[int, bytes]:
    """:func:`typed_answer` as the JSON bytes sent (``encode`` of its value), the trace encoded by
    :meth:`TypedClaimQueue.trace_text_json`."""
    status, value = _answer(text, rule, typed_claims.trace_text_json)
    return status, value if isinstance(value, bytes) else encode(value)


def _answer(text: str, rule: Rule, trace) -> tuple[int, Any]:
    try:
        problem = text_problem(text)
        if problem is not None:
            raise BadText(problem)
        return 200, trace(text, rule)
    except BadText as err:
        status = 413 if len(text) > MAX_TEXT_CHARS else 400
        return status, {"error": str(err), "status": status}


def answer_in_process(typed_claims: TypedClaimQueue, text: str, rule: Rule = NOTEBOOK_RULE) -> tuple[int, bytes]:
    """A typed-claims process's answer: :func:`typed_answer_json`, and for a build file the trace could
    not read the 503 the server itself gives (the file named, no machine path), rather than the
    process ending on it."""
    try:
        return typed_answer_json(typed_claims, text, rule)
    except DataError as err:
        _, message, fields = unreadable_build(err, typed_claims.build.root)
        return 503, encode({"error": message, "status": 503, **fields})


def unavailable(why: str) -> tuple[int, bytes]:
    return 503, encode({"error": f"{why}: try again in a moment.", "status": 503})


# --- the command's side: the processes ------------------------------------------------------------


class TypedProcesses:
    """N processes tracing typed claims, accepting on one Unix socket.

    Parameters
    ----------
    workdir, data_dir : str or Path
        The build and the course data, as the server has them.
    processes : int
        How many claims are traced at once (one core each).
    start_after : float
        0: the processes start at once. Else they start once a server process has answered its
        first page (:meth:`TypedClient.first_page_served`), or after this many seconds if none has,
        so that they take no core from the first page (``serve``).
    """

    def __init__(self, workdir, data_dir, processes: int, start_after: float = 0.0):
        self.workdir, self.data_dir, self.processes = str(workdir), str(data_dir), int(processes)
        self.folder = Path(tempfile.mkdtemp(prefix="claimtrace-typed-"))
        self.socket_path = self.folder / "typed.sock"
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(self.socket_path))
        self._listener.listen(WAITING)
        # spawn, not fork: the command may have threads whose locks a forked child would inherit held
        self._context = multiprocessing.get_context("spawn")
        self._closing = threading.Event()
        self._running = [] if start_after > 0 else [self._start() for _ in range(self.processes)]
        self.restarted = 0
        self._watcher = threading.Thread(
            target=self._watch, args=(float(start_after),), name="typed-claims-watch", daemon=True
        )
        self._watcher.start()

    def _start(self):
        process = self._context.Process(
            target=_serve_claims,
            args=(self._listener, self.workdir, self.data_dir, str(self.folder), os.getpid()),
            name="claimtrace-typed",
            daemon=True,  # ended when the command exits normally; _end_with covers the rest
        )
        process.start()
        # set from here, at once: the child's own first act would come after its imports
        priority = min(19, os.getpriority(os.PRIO_PROCESS, 0) + NICENESS)
        try:
            os.setpriority(os.PRIO_PROCESS, process.pid, priority)
        except OSError:  # it ended already: the watcher starts it again
            pass
        return process

    def _watch(self, start_after: float) -> None:
        if not self._running:  # they start after the server's first page
            deadline = time.monotonic() + start_after
            while not (self.folder / FIRST_PAGE_FILE).exists() and time.monotonic() < deadline:
                if self._closing.wait(FIRST_PAGE_POLL_SECONDS):
                    return
            if self._closing.is_set():
                return
            self._running = [self._start() for _ in range(self.processes)]
        while not self._closing.wait(CHECK_SECONDS):
            for index, process in enumerate(self._running):
                if not process.is_alive() and not self._closing.is_set():
                    (self.folder / f"ready-{process.pid}").unlink(missing_ok=True)
                    self._running[index] = self._start()
                    self.restarted += 1

    @property
    def pids(self) -> list[int]:
        return [process.pid for process in self._running]

    def client(self) -> TypedClient:
        return TypedClient(self.socket_path, self.processes)

    def close(self) -> None:
        self._closing.set()
        self._watcher.join()  # it starts no process once this returns
        for process in self._running:
            process.terminate()
        for process in self._running:
            process.join(timeout=10)
        self._listener.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def _serve_claims(listener: socket.socket, workdir: str, data_dir: str, folder: str, command: int) -> None:
    """A typed-claims process: warm, then one connection at a time, for ever."""
    configure_server_process()  # a process of its own, started afresh: the server's settings
    threading.Thread(target=_end_with, args=(command,), name="typed-claims-command", daemon=True).start()
    typed_claims = _warm_typed_claims(workdir, data_dir)
    # What is loaded now stays for the process's life: kept out of the collector's full passes,
    # which would otherwise walk it all every few hundred claims (a slow claim now and then).
    keep_out_of_collections()
    Path(folder, f"ready-{os.getpid()}").touch()
    seen, checked = build_stamp(typed_claims.build), time.monotonic()
    owed = 0  # claims answered since freed memory was last returned
    while True:
        connection, _ = listener.accept()
        with connection:
            if time.monotonic() - checked >= CHECK_SECONDS:  # a completed or repaired build: read again
                checked, stamp = time.monotonic(), build_stamp(typed_claims.build)
                if stamp != seen:  # warmed as at the start: the claim waiting pays the model's load once
                    seen, typed_claims = stamp, _warm_typed_claims(workdir, data_dir)
            try:  # [text, rule's name]: the server process checked the name
                text, rule_name = json.loads(_receive(connection))
                rule = rule_named(rule_name)
            except (OSError, ValueError, TypeError):  # the server process gave up on it
                continue
            status, body = answer_in_process(typed_claims, text, rule)
            try:
                connection.sendall(status.to_bytes(_PREFIX, "big") + len(body).to_bytes(_PREFIX, "big") + body)
            except OSError:
                continue
        owed += 1
        if release_due(owed, _someone_waiting(listener)):
            release_memory()
            owed = 0


def _warm_typed_claims(workdir: str, data_dir: str) -> TypedClaimQueue:
    """A typed-claims process's queue: warm (the model loaded, its rows checked), leaving freed
    memory to the process (:func:`release_due`)."""
    typed_claims = TypedClaimQueue(BuildReader(workdir, data_dir))
    typed_claims.release_every = 0
    typed_claims.warm()
    return typed_claims


def release_due(owed: int, waiting: bool) -> bool:
    """Whether a typed-claims process returns freed memory now, ``owed`` claims after it last did
    and with a claim ``waiting`` or not: once :data:`RELEASE_EVERY` have passed, at a moment no
    claim waits, or after :data:`RELEASE_LATEST` whatever waits (the resident memory stays level
    under a stream that never pauses)."""
    return owed >= RELEASE_LATEST or (owed >= RELEASE_EVERY and not waiting)


def _someone_waiting(listener: socket.socket) -> bool:
    """Whether a claim's connection waits on the processes' socket (a listening socket is
    readable when one does)."""
    return bool(select.select([listener], [], [], 0)[0])


def _receive(connection: socket.socket) -> bytes:
    size = int.from_bytes(_exactly(connection, _PREFIX), "big")
    return _exactly(connection, size)


def _exactly(connection: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = connection.recv(size - len(data))
        if not chunk:
            raise OSError("closed")
        data += chunk
    return data


def _end_with(command: int) -> None:
    """End this process once the command that started it has gone, however it went (killed
    included): nothing else would tell a process waiting in accept()."""
    while os.getppid() == command:
        time.sleep(CHECK_SECONDS)
    os._exit(0)


# --- a server process's side -----------------------------------------------------------------------


class TypedClient:
    """A server process's way to the typed-claims processes: a text in, ``(status, JSON bytes)``
    out, over one new connection to their socket per claim."""

    def __init__(self, socket_path, processes: int):
        self.socket_path, self.processes = str(socket_path), int(processes)

    def ready(self) -> int:
        """How many of the processes are warm (each says so with a file beside the socket)."""
        return len(list(Path(self.socket_path).parent.glob("ready-*")))

    def any_ready(self) -> bool:
        """Whether one process at least is warm (a claim sent now is traced without waiting for
        one to read the build)."""
        try:
            with os.scandir(Path(self.socket_path).parent) as entries:
                return any(entry.name.startswith("ready-") for entry in entries)
        except FileNotFoundError:  # their folder is gone: so are they
            return False

    def first_page_served(self) -> None:
        """Say that this server process has answered its first page: processes started with
        ``start_after`` may start now (a file beside the socket, which every worker shares)."""
        Path(self.socket_path).with_name(FIRST_PAGE_FILE).touch()

    def wait_ready(self, limit: float) -> int:
        deadline = time.monotonic() + limit
        while self.ready() < self.processes and time.monotonic() < deadline:
            time.sleep(0.1)
        return self.ready()

    async def answer(self, text: str, rule: Rule = NOTEBOOK_RULE) -> tuple[int, bytes]:
        """The answer of a typed-claims process to ``text`` retrieved under ``rule``."""
        message = json.dumps([text, rule.name]).encode("ascii")  # ASCII JSON: any text, lone surrogates included
        try:
            reader, writer = await asyncio.open_unix_connection(self.socket_path)
        except OSError:
            return unavailable("Typed claims cannot be traced now (their processes are not there)")
        try:
            return await asyncio.wait_for(self._exchange(reader, writer, message), ANSWER_SECONDS)
        except TimeoutError:  # before OSError, of which it is a kind
            return unavailable(f"No process traced this claim within {ANSWER_SECONDS:g} s")
        except (OSError, asyncio.IncompleteReadError):
            return unavailable("The process tracing this claim stopped; it is being started again")
        finally:
            writer.close()

    @staticmethod
    async def _exchange(reader, writer, message: bytes) -> tuple[int, bytes]:
        writer.write(len(message).to_bytes(_PREFIX, "big") + message)
        await writer.drain()
        head = await reader.readexactly(2 * _PREFIX)
        status, size = int.from_bytes(head[:_PREFIX], "big"), int.from_bytes(head[_PREFIX:], "big")
        return status, await reader.readexactly(size)
