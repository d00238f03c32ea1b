"""The ``claimtrace`` command: build, inspect and serve the pipeline, stage by stage.

Every command that reads course data takes ``--data DIR`` (before the command name); a bad
input file ends the command with one message naming the file and exit status 2. Each command
group is a module of this package; a command imports its stage when it runs, so that
``claimtrace --help`` loads none.
"""

from __future__ import annotations

import os
import sys
import warnings

import click

from claimtrace import constants
from claimtrace.cli import build, classifier, compare, counterfactual, data, evaluate, llm, serve
from claimtrace.cli.options import CommandGroup


@click.group(cls=CommandGroup, name="claimtrace")
@click.option(
    "--data",
    "data",
    type=click.Path(file_okay=False),
    default=None,
    help="Data folder (default: $CLAIMTRACE_DATA, ./data, ../shared/data).",
)
@click.pass_context
def main(ctx: click.Context, data: str | None) -> None:
    """claimtrace: one claim through every stage of the 2024 COMP90042 notebook."""
    ctx.ensure_object(dict)
    ctx.obj["data"] = data
    warnings.showwarning = _show_warning
    _set_openmp_wait_policy()


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    click.echo(f"claimtrace: warning: {message}", err=True)


def _set_openmp_wait_policy() -> None:
    """The one environment variable the command line sets, for every command, at its entry:
    ``OMP_WAIT_POLICY``, so that torch's OpenMP threads sleep at barriers instead of spinning
    (:data:`claimtrace.constants.OMP_WAIT_POLICY`: much faster on a shared CPU, the same numbers).
    OpenMP reads it once, when torch is first imported, which any command may do: so it is set
    here, before a command runs, rather than where torch is used. A value already set is kept."""
    os.environ.setdefault("OMP_WAIT_POLICY", constants.OMP_WAIT_POLICY)


for _module in (
    data,
    build,
    classifier,
    counterfactual,
    evaluate,
    compare,
    llm,
    serve,
):  # the command groups, one module each
    for _command in _module.COMMANDS:
        main.add_command(_command)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
