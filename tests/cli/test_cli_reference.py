"""docs/cli.md against the parser: one section per command of ``claimtrace`` (the groups and
their subcommands included), and in its table every option and argument the command takes, no
more. A command or option added, renamed or removed fails here until the reference says so."""

from __future__ import annotations

import re
from pathlib import Path

import click

from claimtrace.cli.main import main

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "cli.md"

#: A command's section: ``## `claimtrace build` `` (anything after the name is a gloss).
_SECTION = re.compile(r"^## `(claimtrace[^`]*)`", re.MULTILINE)
#: A table row naming an option or argument in its first cell: ``| `--workdir` | ...``.
_ROW = re.compile(r"^\| `([^`]+)` \|", re.MULTILINE)


def parser_commands() -> dict[str, set[str]]:
    """Every command's full name, with the names of what it takes (``--flag``, ``ARGUMENT``)."""
    found: dict[str, set[str]] = {}

    def walk(command: click.Command, name: str) -> None:
        found[name] = {
            parameter.opts[0] if isinstance(parameter, click.Option) else parameter.name.upper()
            for parameter in command.params
        }
        if isinstance(command, click.Group):
            for sub_name, sub in command.commands.items():
                walk(sub, f"{name} {sub_name}")

    walk(main, "claimtrace")
    return found


def reference_commands(text: str) -> dict[str, set[str]]:
    """The reference's sections, each with the names its table rows give."""
    starts = list(_SECTION.finditer(text))
    found: dict[str, set[str]] = {}
    for here, after in zip(starts, [*starts[1:], None], strict=True):
        body = text[here.end() : after.start() if after else len(text)]
        assert here.group(1) not in found, f"docs/cli.md: two sections for {here.group(1)}"
        found[here.group(1)] = set(_ROW.findall(body))
    return found


def test_reference_reader_finds_sections_and_rows():
    text = (
        "## `claimtrace a`\n\n| option | d | m |\n| --- | --- | --- |\n| `--x` | off | x |\n\n## `claimtrace b` (g)\n"
    )
    assert reference_commands(text) == {"claimtrace a": {"--x"}, "claimtrace b": set()}


def test_every_command_has_a_section_and_no_section_is_of_a_gone_command():
    parser, reference = parser_commands(), reference_commands(REFERENCE.read_text(encoding="utf-8"))
    assert sorted(set(parser) - set(reference)) == [], "commands missing from docs/cli.md"
    assert sorted(set(reference) - set(parser)) == [], "docs/cli.md documents commands that are gone"


def test_every_option_is_documented_and_none_documented_is_gone():
    parser, reference = parser_commands(), reference_commands(REFERENCE.read_text(encoding="utf-8"))
    missing = {name: sorted(options - reference.get(name, set())) for name, options in parser.items()}
    gone = {name: sorted(options - parser.get(name, set())) for name, options in reference.items()}
    assert {name: options for name, options in missing.items() if options} == {}, "missing from docs/cli.md"
    assert {name: options for name, options in gone.items() if options} == {}, "in docs/cli.md but gone"


def test_every_option_row_is_short():
    """A table cell is a line: the long explanations are the paragraphs under the table."""
    for row in re.findall(r"^\| `.*$", REFERENCE.read_text(encoding="utf-8"), re.MULTILINE):
        cells = [cell.strip() for cell in row.strip("|").split(" | ")]
        assert len(cells) == 3, row
        assert all(len(cell.split()) <= 12 for cell in cells), row
