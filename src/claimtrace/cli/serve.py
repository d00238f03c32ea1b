"""The explainer site for a build: served (``serve``, its worker processes' settings
:class:`WorkerSettings`) or written as static files (``site``), with the runs to set beside it."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from claimtrace.cli.options import ANY_SPLIT, data_dir, open_build, port_option, workdir_option
from claimtrace.compare.run_store import DEFAULT_CAP_BYTES
from claimtrace.constants import SPLITS
from claimtrace.data import files as data_layer
from claimtrace.errors import DataError
from claimtrace.web.policy import origin_of
from claimtrace.workdir.layout import Workdir

if TYPE_CHECKING:  # the annotations only
    from fastapi import FastAPI

    from claimtrace.compare.run_store import RunStore

#: Seconds ``serve --while-building`` waits for a build to start writing the workdir (``make demo``
#: starts both at once; the build takes its lock once its imports are done).
BUILD_START_SECONDS = 60.0

#: Typed-claims processes per server process by default: one per core of the two-core machines
#: the project is measured on (bench/bench_typed.py; docs/benchmarks.md, "Typed claims under load").
TYPED_PROCESSES = 2
#: Seconds the typed-claims processes wait, at most, for the server's first page before they
#: start (``SiteData.warm`` waits as long before it computes every Explore).
TYPED_START_AFTER = 30.0


def predictions_options(command: Callable) -> Callable:
    """``--predictions FILE [--name NAME]... [--class DIR] [--course-baseline]``: runs to set
    beside the build."""
    command = click.option(
        "--class",
        "class_dir",
        type=click.Path(file_okay=False),
        default=None,
        help="A folder of predictions files (every *.json in it, each named by its file name): a class at once. "
        "A file the course's scorer cannot score, or of train, is set aside with a line saying why, "
        "also listed on the compare index; /compare/class.html shows the dev runs together.",
    )(command)
    command = click.option(
        "--course-baseline",
        is_flag=True,
        help="Also compare the course's baseline (the data folder's dev-claims-baseline.json), as \"course baseline\".",
    )(command)
    command = click.option(
        "--name", "names", multiple=True, help="A name for each --predictions, in order (default: the file's stem)."
    )(command)
    command = click.option(
        "--llm-origin",
        "llm_origins",
        multiple=True,
        help="A provider's base URL (e.g. a local model's http://127.0.0.1:8080/v1) the evaluation page and the "
        "second opinion (a claim page's, the served live page's on a typed claim) may call from the browser, beside api.anthropic.com and api.openai.com "
        "(repeatable; the content security policy lets no other page connect anywhere but this site).",
    )(command)
    return click.option(
        "--predictions",
        "predictions",
        type=click.Path(dir_okay=False),
        multiple=True,
        help="A predictions file in the course's shape to compare with the build (repeatable): its page is "
        "/compare/<digest>, and a claim page shows it with ?run=<name or digest>.",
    )(command)


def _given_runs(
    ctx: click.Context, predictions, names, course_baseline: bool, class_dir: str | None = None
) -> list[tuple[str, str | None]]:
    """The runs a command was given, as (file, name) pairs: the course's baseline first, a class
    folder last (a folder, which :meth:`claimtrace.web.runs.Runs.give_all` reads as a class)."""
    if len(names) > len(predictions):
        raise click.UsageError(f"{len(names)} --name given for {len(predictions)} --predictions")
    runs = [(str(path), names[i] if i < len(names) else None) for i, path in enumerate(predictions)]
    if course_baseline:
        runs.insert(0, (str(data_layer.course_file(data_dir(ctx), "baseline")), "course baseline"))
    if class_dir is not None:
        if not Path(class_dir).is_dir():
            raise DataError(f"{class_dir}: no such folder")
        runs.append((str(class_dir), None))
    return runs


def _give_runs(site_data, runs: list[tuple[str, str | None]]) -> None:
    """Give the site data its runs (a bad file named one by one stops the command, naming it); each
    file of a class set aside is said on stderr, one line each."""
    site_data.runs.give_all(runs)
    for line in site_data.runs.set_aside:
        click.echo(f"set aside: {line['file']}: {line['why']}", err=True)


@click.command("serve")
@workdir_option("The build to explain (default: $CLAIMTRACE_WORKDIR, else ./work/demo).")
@port_option("Port on 127.0.0.1.")
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Server processes sharing the port (each loads the build; the large arrays are mapped, so shared; "
    "uploads go to the run store every process reads).",
)
@click.option(
    "--store",
    "store_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="The run store: an SQLite file keeping the runs compared (uploads, and the files given), shared by "
    "every process and kept across restarts [default: beside the build, WORKDIR.runs.sqlite].",
)
@click.option(
    "--store-cap",
    "store_cap",
    type=click.IntRange(1, 1 << 20),
    default=DEFAULT_CAP_BYTES >> 20,
    show_default=True,
    help="MiB of stored files past which the oldest runs are evicted (and the compare page says so).",
)
@click.option(
    "--typed-processes",
    "typed_processes",
    type=click.IntRange(0, 64),
    default=TYPED_PROCESSES,
    show_default=True,
    help="Processes tracing typed claims side by side for every server process, from one queue (each holds a "
    "reader of the build); they start once the first page is answered, at a lower CPU priority, and until one "
    "is ready the server traces typed claims itself; 0: each server process traces its own, one at a time.",
)
@click.option(
    "--prerender",
    is_flag=True,
    help="Once warm, render every claim page and keep it (a server under load; about 16 ms a claim, in the background).",
)
@click.option(
    "--while-building",
    is_flag=True,
    help="Serve a build `claimtrace build` is still writing (make demo runs the two side by side): wait until "
    "its checkpoint's verdicts are written, then serve while it finishes; a page that needs a later step says "
    "it is being built, and reloads itself once it is written.",
)
@predictions_options
@click.pass_context
def serve_command(
    ctx: click.Context,
    workdir: str,
    port: int,
    workers: int,
    store_path: str | None,
    store_cap: int,
    typed_processes: int,
    prerender: bool,
    while_building: bool,
    predictions: tuple[str, ...],
    names: tuple[str, ...],
    class_dir: str | None,
    course_baseline: bool,
    llm_origins: tuple[str, ...],
) -> None:
    """Serve the explainer site for a build on http://127.0.0.1:PORT/."""
    from claimtrace.compare.run_store import RunStore, store_beside
    from claimtrace.web.process_settings import configure_server_process
    from claimtrace.web.site_data import SiteData
    from claimtrace.web.typed_processes import TypedProcesses

    configure_server_process()  # this process's settings, first; the processes it starts inherit the environment
    folder = data_dir(ctx)
    data_layer.load_stopwords(folder)  # every trace preprocesses: a bad stopword list stops the server now
    if while_building:
        _check_port_free(port)  # said now, not after the build's first minute
        wait_for_verdicts(Workdir(Path(workdir)))
    build = open_build(ctx, workdir)
    runs = _given_runs(ctx, predictions, names, course_baseline, class_dir)
    origins = tuple(origin_of(url) for url in llm_origins)
    store = {"path": str(store_path or store_beside(build.root)), "cap_bytes": store_cap << 20}
    site_data = SiteData(build, RunStore(store["path"], store["cap_bytes"]))  # a file that is no store stops it now
    _give_runs(site_data, runs)  # a bad file stops the server now, naming it
    _check_port_free(port)
    click.echo(f"claimtrace: runs kept in {store['path']}", err=True)
    click.echo(f"claimtrace: serving {workdir} on http://127.0.0.1:{port}/ ({workers} process(es))", err=True)
    if typed_processes:
        click.echo(
            f"claimtrace: typed claims traced by {typed_processes} process(es) of their own, started once the "
            "first page is answered (until one is ready, the server traces them itself)",
            err=True,
        )
    typed = TypedProcesses(build.root, folder, typed_processes, TYPED_START_AFTER) if typed_processes else None
    try:
        _run_server(build, folder, port, workers, site_data, prerender, runs, store, origins, typed)
    finally:
        if typed is not None:
            typed.close()


def wait_for_verdicts(work: Workdir, poll: float = 0.25, start_seconds: float = BUILD_START_SECONDS) -> None:
    """Return once the build in ``work`` has written its checkpoint's verdicts (the walkthroughs
    need no later step); a DataError when no build is writing it and they are not there: none
    started within ``start_seconds``, or the one that was ended without them."""
    started, seen_running, said = time.monotonic(), False, False
    while not work.verdicts_written():
        running = work.build_running()
        seen_running |= running
        if not running and (seen_running or time.monotonic() - started > start_seconds):
            if work.verdicts_written():  # the build ended just now, having written them
                return
            raise DataError(
                f"{work.root}: no `claimtrace build` is writing this workdir, and its verdicts are not there: "
                f"run `claimtrace build --workdir {work.root}` (a build that stopped said why)"
            )
        if not said:
            click.echo(
                f"claimtrace: waiting for the build in {work.root} to write its checkpoint's verdicts; "
                "the site is served from then on, while the build finishes",
                err=True,
            )
            said = True
        time.sleep(poll)


def _run_server(build, folder, port, workers, site_data, prerender, runs, store, origins, typed) -> None:
    """uvicorn, in this process or with ``workers`` processes, each reaching ``typed``."""
    import uvicorn

    from claimtrace.web.app import create_app
    from claimtrace.web.serving import server_config

    if workers == 1:
        client = typed.client() if typed is not None else None
        app = create_app(
            site_data=site_data,
            warm=True,
            prerender=prerender,
            llm_origins=origins,
            typed=client,
            freeze_when_warm=True,
        )
        uvicorn.Server(server_config(app, port)).run()
        return
    # Several processes: uvicorn starts each worker afresh from its configuration, pickled; the
    # app factory in it carries which build to open.
    from uvicorn.supervisors import Multiprocess

    shared = {"socket": str(typed.socket_path), "processes": typed.processes} if typed is not None else {}
    settings = WorkerSettings(build.root, folder, prerender, runs, store, origins, shared)
    config = server_config(settings.factory(), port, factory=True, workers=workers)
    Multiprocess(config, sockets=[config.bind_socket()]).run()


class WorkerSettings:
    """What a worker process of ``serve --workers N`` opens: the build and the course data,
    whether it pre-renders, the runs it is given, the run store, the LLM origins and the
    typed-claims processes.

    uvicorn starts each worker afresh (``spawn``) from its configuration, pickled, whose app is
    :meth:`factory`: the settings travel with it, not through the environment. A worker
    unpickles its configuration before it answers its supervisor's health checks (within 5 s,
    else it is killed and started again), so what that imports stays light: this module, which
    imports no stage at its top (the site is imported when :func:`worker_app` runs)."""

    def __init__(
        self,
        workdir,
        data_dir,
        prerender: bool,
        runs=(),
        store: dict | None = None,
        llm_origins=(),
        typed: dict | None = None,
    ):
        self.workdir, self.data_dir, self.prerender = str(workdir), str(data_dir), bool(prerender)
        #: (predictions file, name or None) pairs, each worker loads them (serve --predictions)
        self.runs = [(str(path), name) for path, name in runs]
        #: the run store every worker opens: ``{"path", "cap_bytes"}`` (``serve --store``)
        self.store = dict(store or {})
        #: the provider origins the LLM pages may connect to (serve --llm-origin)
        self.llm_origins = tuple(llm_origins)
        #: the processes tracing typed claims for every worker: ``{"socket", "processes"}``
        #: (serve --typed-processes; empty: each worker traces its own, in turn)
        self.typed = dict(typed or {})

    def factory(self) -> Callable[[], FastAPI]:
        """uvicorn's app factory for the workers (``factory=True``): :func:`worker_app` of these
        settings, which pickles (this module's function and these plain fields)."""
        return functools.partial(worker_app, self)

    def open_store(self) -> RunStore | None:
        """The run store the server was told (None: each process keeps its runs in memory)."""
        from claimtrace.compare.run_store import RunStore

        if not self.store.get("path"):
            return None
        return RunStore(self.store["path"], self.store.get("cap_bytes", DEFAULT_CAP_BYTES))


def worker_app(settings: WorkerSettings) -> FastAPI:
    """A worker process's app, made in the worker: its process-wide settings set first (a process
    of its own, started afresh), then the app over the build ``settings`` name, with the run
    store every worker shares, warming up (and pre-rendering) as a one-process server does."""
    from claimtrace.web.app import create_app
    from claimtrace.web.process_settings import configure_server_process
    from claimtrace.web.site_data import SiteData
    from claimtrace.web.typed_processes import TypedClient
    from claimtrace.workdir.reader import BuildReader

    configure_server_process()
    site_data = SiteData(BuildReader(settings.workdir, settings.data_dir), settings.open_store())
    site_data.runs.give_all(settings.runs)
    return create_app(
        site_data=site_data,
        warm=True,
        prerender=settings.prerender,
        llm_origins=settings.llm_origins,
        typed=TypedClient(settings.typed["socket"], settings.typed["processes"]) if settings.typed else None,
        freeze_when_warm=True,  # a worker process of its own
    )


def _check_port_free(port: int) -> None:
    """A port another program holds is said in one line (uvicorn would log it and exit 3)."""
    import errno
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as err:
            if err.errno == errno.EADDRINUSE:
                raise DataError(f"port {port} is in use: pass --port") from None
            raise DataError(f"port {port}: {err.strerror or err}: pass another --port") from None


@click.command("site")
@workdir_option("The build to explain (default: $CLAIMTRACE_WORKDIR, else ./work/demo).")
@click.option("--out", type=click.Path(file_okay=False), required=True, help="Folder to write the site into.")
@click.option(
    "--split",
    "splits",
    type=ANY_SPLIT,
    multiple=True,
    help="Splits whose claim pages to write (default: all three).",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    help="Write only the first N claim pages of each split (a quick preview).",
)
@click.option("--json", "json_twins", is_flag=True, help="Also write every claim page's JSON twin (most of the size).")
@predictions_options
@click.pass_context
def site_command(
    ctx: click.Context,
    workdir: str,
    out: str,
    splits: tuple[str, ...],
    limit: int | None,
    json_twins: bool,
    predictions: tuple[str, ...],
    names: tuple[str, ...],
    class_dir: str | None,
    course_baseline: bool,
    llm_origins: tuple[str, ...],
) -> None:
    """Write the explainer site as static files (relative links; claim pages' JSON with --json)."""
    from claimtrace.web.site import write_site
    from claimtrace.web.site_data import SiteData

    origins = tuple(origin_of(url) for url in llm_origins)
    site_data = SiteData(open_build(ctx, workdir))
    _give_runs(site_data, _given_runs(ctx, predictions, names, course_baseline, class_dir))
    result = write_site(
        None,
        out,
        site_data=site_data,
        splits=splits or SPLITS,
        echo=lambda line: click.echo(line, err=True),
        progress=True,
        limit=limit,
        json_twins=json_twins,
        llm_origins=origins,
    )
    click.echo(json.dumps(result, ensure_ascii=False))


#: What this module adds to the ``claimtrace`` command.
COMMANDS = (serve_command, site_command)
