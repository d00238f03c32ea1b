"""What every command group shares: the group class that ends a command in one line, and the
options that mean one thing wherever they appear (``--workdir``, ``--checkpoint``, ``--split``,
``--port``), each defined once."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import click

from claimtrace.constants import SPLITS
from claimtrace.data import files as data_layer
from claimtrace.errors import DataError
from claimtrace.lib.forked_job import ForkedJobDied
from claimtrace.workdir.location import default_workdir


def _os_error_message(err: OSError) -> str:
    """``path: No space left on device``: the file, then what the system said."""
    what = err.strerror or str(err) or type(err).__name__
    files = [str(name) for name in (err.filename, err.filename2) if name is not None]
    return f"{' -> '.join(files)}: {what}" if files else what


class CommandGroup(click.Group):
    """One line on stderr instead of a traceback: a bad input (DataError) or a file the system
    would not read or write (OSError: disk full, permission, not a folder) exits 2; anything else
    is a bug in claimtrace and exits 1 (CLAIMTRACE_DEBUG=1 shows its traceback)."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        """Click's own errors in one line too: a usage error (exit 2) names the command's help."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.UsageError as err:
            where = err.ctx.command_path if err.ctx is not None else "claimtrace"
            click.echo(f"claimtrace: error: {err.format_message()} (see `{where} --help`)", err=True)
            sys.exit(err.exit_code)
        except click.ClickException as err:
            click.echo(f"claimtrace: error: {err.format_message()}", err=True)
            sys.exit(err.exit_code)
        except click.exceptions.Abort:
            click.echo("claimtrace: aborted", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except DataError as err:
            click.echo(f"claimtrace: error: {err}", err=True)
            ctx.exit(2)
        except OSError as err:
            click.echo(f"claimtrace: error: {_os_error_message(err)}", err=True)
            ctx.exit(2)
        except ForkedJobDied as err:  # killed from outside: not a bug of claimtrace's
            click.echo(f"claimtrace: error: {err}", err=True)
            ctx.exit(1)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as err:  # noqa: BLE001 - the last resort: a bug, said in one line
            if os.environ.get("CLAIMTRACE_DEBUG") or ctx.parent is not None:
                raise  # the outer group reports it once (nested groups: data, export)
            click.echo(
                f"claimtrace: internal error ({type(err).__name__}: {err}); please report it "
                "(CLAIMTRACE_DEBUG=1 shows the traceback)",
                err=True,
            )
            ctx.exit(1)


def data_dir(ctx: click.Context) -> Path:
    """The command's data folder (``--data``, else the default): the command passes it, or what
    it reads there (the stopword list, in the preprocessing), to every stage."""
    return data_layer.find_data_dir(ctx.obj.get("data"))


def print_json(value: object) -> None:
    """``json.dumps(value, ensure_ascii=False)`` and a newline on stdout, the same bytes, written
    a piece at a time: a class's report is large, and as one string (and click's copy of it) it
    would cost several times its size in memory (docs/benchmarks.md, "A class: `claimtrace
    compare --class`")."""
    for piece in json_pieces(value, depth=2):
        click.echo(piece, nl=False)
    click.echo("")


def json_pieces(value: object, depth: int):
    """The text of ``json.dumps(value, ensure_ascii=False)`` in pieces: an object's or array's
    members one by one, ``depth`` levels down."""
    if depth == 0 or not isinstance(value, (dict, list)) or not value:
        yield json.dumps(value, ensure_ascii=False)
        return
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):  # json.dumps's own key conversions
            yield json.dumps(value, ensure_ascii=False)
            return
        yield "{"
        for position, (key, member) in enumerate(value.items()):
            yield (", " if position else "") + json.dumps(key, ensure_ascii=False) + ": "
            yield from json_pieces(member, depth - 1)
        yield "}"
        return
    yield "["
    for position, member in enumerate(value):
        if position:
            yield ", "
        yield from json_pieces(member, depth - 1)
    yield "]"


# --- the two folder options: one meaning each --------------------------------------------------


def workdir_option(help_text: str = "The build (default: $CLAIMTRACE_WORKDIR, else ./work/demo).") -> Callable:
    """``--workdir DIR``: always a ``claimtrace build`` folder."""
    return click.option(
        "--workdir",
        type=click.Path(file_okay=False),
        default=default_workdir,  # read when the command runs: the rule in workdir.location
        show_default="$CLAIMTRACE_WORKDIR or work/demo",
        help=help_text,
    )


def checkpoint_option(help_text: str, required: bool = False) -> Callable:
    """``--checkpoint DIR``: always a trained classifier folder (``claimtrace train``)."""
    return click.option(
        "--checkpoint", "checkpoint", type=click.Path(file_okay=False), default=None, required=required, help=help_text
    )


def open_build(ctx: click.Context, workdir: str):
    """The build in ``workdir``, read through the one reader; a clear error naming the path."""
    from claimtrace.workdir.reader import BuildReader

    build = BuildReader(Path(workdir), data_dir(ctx))
    build.build_record()
    return build


# --- the splits -----------------------------------------------------------------------------------

#: ``--split`` where any split of the course will do (exports, predictions, comparisons, pages).
ANY_SPLIT = click.Choice(SPLITS)
#: ``--split`` where a score is computed: the splits whose labels the course gives (not test's).
LABELLED_SPLIT = click.Choice([split for split in SPLITS if split != "test"])


def split_option(choice: click.Choice = ANY_SPLIT, help_text: str | None = None) -> Callable:
    """``--split NAME``: one split of the course, dev unless given."""
    return click.option("--split", type=choice, default="dev", show_default=True, help=help_text)


# --- the port -------------------------------------------------------------------------------------

#: The port ``claimtrace serve`` listens on when no --port is given.
DEFAULT_PORT = 8000


def port_option(help_text: str) -> Callable:
    """``--port N``: the port on 127.0.0.1 the site is served on."""
    return click.option(
        "--port", type=click.IntRange(1, 65535), default=DEFAULT_PORT, show_default=True, help=help_text
    )
