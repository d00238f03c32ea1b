"""The ``claimtrace`` command: build, inspect and serve the pipeline, stage by stage.

Every command that reads course data takes ``--data DIR`` (before the command name); a bad
input file ends the command with one message naming the file and exit status 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from . import data as data_layer
from .data import DataError


class _Group(click.Group):
    """Turns DataError into one clear line on stderr and exit status 2."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except DataError as err:
            click.echo(f"claimtrace: error: {err}", err=True)
            ctx.exit(2)


def _data_dir(ctx: click.Context) -> Path:
    return data_layer.find_data_dir(ctx.obj.get("data"))


def _print_json(value: object) -> None:
    click.echo(json.dumps(value, ensure_ascii=False))


@click.group(cls=_Group)
@click.option("--data", "data", type=click.Path(file_okay=False), default=None,
              help="Data folder (default: $CLAIMTRACE_DATA, ./data, ../shared/data).")
@click.pass_context
def main(ctx: click.Context, data: str | None) -> None:
    """claimtrace: one claim through every stage of the 2024 COMP90042 notebook."""
    ctx.ensure_object(dict)
    ctx.obj["data"] = data


# --- data -------------------------------------------------------------------------------------


@main.group(cls=_Group)
def data() -> None:
    """Check the course files; write the demo corpus."""


@data.command("check")
@click.pass_context
def data_check(ctx: click.Context) -> None:
    """Check every course file (presence, JSON, shape, md5) and the gold reconstruction."""
    for line in data_layer.check(_data_dir(ctx)):
        click.echo(line)


@data.command("demo-corpus")
@click.option("--out", type=click.Path(dir_okay=False), required=True, help="Where to write the JSON.")
@click.pass_context
def data_demo_corpus(ctx: click.Context, out: str) -> None:
    """Write the demo corpus (every distinct CLIMATE-FEVER sentence) as an evidence.json."""
    corpus = data_layer.demo_corpus(_data_dir(ctx))
    data_layer.write_atomic(out, json.dumps(corpus, ensure_ascii=False, indent=0))
    click.echo(f"wrote {len(corpus)} passages to {out}", err=True)


# --- preprocess -------------------------------------------------------------------------------


@main.command("preprocess")
@click.argument("text")
@click.option("--keep-stopwords", is_flag=True, help="The older variant that built the tagging corpus.")
@click.option("--json", "as_json", is_flag=True, help="Print {tokens, kept, stems} as JSON.")
@click.pass_context
def preprocess_command(ctx: click.Context, text: str, keep_stopwords: bool, as_json: bool) -> None:
    """Run the notebook's preprocessing on TEXT."""
    from .preprocess import preprocess

    result = preprocess(text, keep_stopwords=keep_stopwords, data_dir=_data_dir(ctx))
    if as_json:
        _print_json({"tokens": result.tokens, "kept": result.kept, "stems": result.stems})
    else:
        click.echo(f"tokens  {' '.join(result.tokens)}")
        click.echo(f"kept    {' '.join(result.kept)}")
        click.echo(f"stems   {' '.join(result.stems)}")


# --- vocab ------------------------------------------------------------------------------------


@main.command("vocab")
@click.option("--json", "as_json", is_flag=True, help="Print {size, head} as JSON.")
@click.pass_context
def vocab_command(ctx: click.Context, as_json: bool) -> None:
    """The classifier's vocabulary, built from train claims and their gold passages."""
    from .classifier.inputs import training_vocabulary

    data_dir = _data_dir(ctx)
    vocab = training_vocabulary(data_layer.load_claims("train", data_dir), data_layer.gold_passages(data_dir))
    if as_json:
        _print_json({"size": len(vocab), "head": vocab.tokens[:20]})
    else:
        click.echo(f"{len(vocab)} entries: {' '.join(vocab.tokens[:20])} ...")


# --- demo -------------------------------------------------------------------------------------


@main.command("demo")
@click.option("--workdir", type=click.Path(file_okay=False), default="work/demo", show_default=True)
@click.option("--claim", "claim_id", default="claim-752", show_default=True)
@click.pass_context
def demo_command(ctx: click.Context, workdir: str, claim_id: str) -> None:
    """Write the demo corpus into WORKDIR and walk one claim through the stages that exist."""
    from .classifier.inputs import training_vocabulary
    from .preprocess import preprocess

    data_dir = _data_dir(ctx)
    corpus_path = Path(workdir) / "evidence.json"
    if not corpus_path.exists():
        corpus = data_layer.demo_corpus(data_dir)
        data_layer.write_atomic(corpus_path, json.dumps(corpus, ensure_ascii=False))
        click.echo(f"demo corpus: {len(corpus)} passages -> {corpus_path}")
    claims = {**data_layer.load_claims("train", data_dir), **data_layer.load_claims("dev", data_dir)}
    if claim_id not in claims:
        raise DataError(f"{claim_id}: not a train or dev claim")
    claim = claims[claim_id]
    result = preprocess(claim.text, data_dir=data_dir)
    click.echo(f"{claim_id}: {claim.text}  [{claim.label}]")
    click.echo(f"  tokens  {' '.join(result.tokens)}")
    click.echo(f"  kept    {' '.join(result.kept)}")
    click.echo(f"  stems   {' '.join(result.stems)}")
    click.echo(f"  tags    {result.tags()}")
    gold = data_layer.gold_passages(data_dir)
    for evidence_id in claim.evidences:
        click.echo(f"  gold    {evidence_id}: {gold[evidence_id]}")
    vocab = training_vocabulary(data_layer.load_claims("train", data_dir), gold)
    click.echo(f"  vocabulary: {len(vocab)} entries")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
