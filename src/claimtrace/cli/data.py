"""The course data's commands: check the files, write the demo corpus, run the notebook's
preprocessing on a text, build the classifier's vocabulary."""

from __future__ import annotations

import json
import os
import sys

import click

from claimtrace.cli.options import CommandGroup, data_dir, print_json
from claimtrace.data import files as data_layer
from claimtrace.lib import build_files


@click.group(cls=CommandGroup)
def data() -> None:
    """Fetch and check the course files; write the demo corpus."""


@data.command("check")
@click.pass_context
def data_check(ctx: click.Context) -> None:
    """Check every course file (presence, JSON, shape, md5) and the gold reconstruction."""
    for line in data_layer.check(data_dir(ctx)):
        click.echo(line)


@data.command("fetch")
@click.option(
    "--data",
    "target",
    type=click.Path(file_okay=False),
    default=None,
    help="The folder to fill (default: claimtrace's --data, $CLAIMTRACE_DATA, the data folder found, else ./data).",
)
@click.option(
    "--mirror",
    default=None,
    metavar="URL",
    help="A base address serving the data folder's layout, in place of the public hosts "
    "(default: $CLAIMTRACE_DATA_MIRROR).",
)
@click.pass_context
def data_fetch(ctx: click.Context, target: str | None, mirror: str | None) -> None:
    """Download the course's files, CLIMATE-FEVER and NLTK's stopword list, each from a pinned
    commit, checked against a pinned digest; a partial download resumes. evidence.json is yours
    to bring (claimtrace build --evidence)."""
    from claimtrace.data import fetch

    folder = fetch.default_target(target if target is not None else ctx.obj.get("data"))
    mirror = mirror or os.environ.get(fetch.MIRROR_ENV) or None
    for source, done in fetch.fetch_all(folder, mirror, _progress_bar):
        click.echo(f"{done:13} {folder / source.path}")
    click.echo(f"data folder: {folder} (check it with `claimtrace --data {folder} data check`)", err=True)


def _progress_bar(label: str, total: int | None, initial: int):
    """A download's bar on stderr, shown only on a terminal."""
    from tqdm import tqdm

    return tqdm(
        total=total,
        initial=initial,
        desc=label,
        unit="B",
        unit_scale=True,
        unit_divisor=1024,
        file=sys.stderr,
        disable=not sys.stderr.isatty(),
        leave=False,
    )


@data.command("demo-corpus")
@click.option("--out", type=click.Path(dir_okay=False), required=True, help="Where to write the JSON.")
@click.pass_context
def data_demo_corpus(ctx: click.Context, out: str) -> None:
    """Write the demo corpus (every distinct CLIMATE-FEVER sentence) as an evidence.json."""
    corpus = data_layer.demo_corpus(data_dir(ctx))
    build_files.write_atomic(out, json.dumps(corpus, ensure_ascii=False, indent=0))
    click.echo(f"wrote {len(corpus)} passages to {out}", err=True)


@click.command("preprocess")
@click.argument("text")
@click.option("--keep-stopwords", is_flag=True, help="The older variant that built the tagging corpus.")
@click.option("--json", "as_json", is_flag=True, help="Print {tokens, kept, stems} as JSON.")
@click.pass_context
def preprocess_command(ctx: click.Context, text: str, keep_stopwords: bool, as_json: bool) -> None:
    """Run the notebook's preprocessing on TEXT."""
    from claimtrace.pipeline.preprocess import Preprocessor

    result = Preprocessor.of_data_dir(data_dir(ctx)).preprocess(text, keep_stopwords=keep_stopwords)
    if as_json:
        print_json({"tokens": result.tokens, "kept": result.kept, "stems": result.stems})
    else:
        click.echo(f"tokens  {' '.join(result.tokens)}")
        click.echo(f"kept    {' '.join(result.kept)}")
        click.echo(f"stems   {' '.join(result.stems)}")


@click.command("vocab")
@click.option("--json", "as_json", is_flag=True, help="Print {size, head} as JSON.")
@click.pass_context
def vocab_command(ctx: click.Context, as_json: bool) -> None:
    """The classifier's vocabulary, built from train claims and their gold passages."""
    from claimtrace.models.inputs import training_vocabulary  # nltk: the preprocessing
    from claimtrace.pipeline.preprocess import Preprocessor

    folder = data_dir(ctx)
    train, gold = data_layer.load_claims("train", folder), data_layer.gold_passages(folder)
    vocab = training_vocabulary(train, gold, Preprocessor.of_data_dir(folder))
    if as_json:
        print_json({"size": len(vocab), "head": vocab.tokens[:20]})
    else:
        click.echo(f"{len(vocab)} entries: {' '.join(vocab.tokens[:20])} ...")


#: What this module adds to the ``claimtrace`` command.
COMMANDS = (data, preprocess_command, vocab_command)
