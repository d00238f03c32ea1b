"""A large language model on the same claims (``llm``): a seeded sample of a split's claims sent
with the build's passages to any OpenAI-compatible endpoint or Anthropic's API, resumable; the
contamination probe; an imported run verified (docs/llm.md)."""

from __future__ import annotations

import os
import sys
from urllib.parse import urlparse

import click

from claimtrace.cli.options import LABELLED_SPLIT, open_build, workdir_option
from claimtrace.errors import DataError
from claimtrace.evaluation import llm as P


def _provider_kind(provider: str | None, base_url: str) -> str:
    """The provider recorded: as given, else OpenAI's own API or any OpenAI-compatible server."""
    if provider in ("anthropic", "openai-compatible"):
        return provider
    return "openai" if urlparse(base_url).hostname == "api.openai.com" else "openai-compatible"


def _key(api_key_env: str | None) -> str | None:
    """The key read from the environment variable named (never from the command line, where it
    would be in the shell's history and the process list)."""
    if api_key_env is None:
        return None
    key = os.environ.get(api_key_env)
    if not key:
        raise DataError(f"--api-key-env {api_key_env}: the environment variable is not set")
    return key


@click.command("llm")
@click.option("--base-url", default=None, help="The provider's base URL (OpenAI-compatible: ending in /v1).")
@click.option("--model", default=None, help="The model id the provider knows.")
@click.option(
    "--provider",
    type=click.Choice(["openai", "anthropic", "openai-compatible"]),
    default="openai",
    show_default=True,
    help="The wire format: OpenAI's Chat Completions (any compatible server: llama.cpp, Ollama, vLLM) or Anthropic's Messages.",
)
@click.option("--api-key-env", default=None, help="The environment variable holding the key (none: no key sent).")
@click.option("--sample", "n", type=click.IntRange(1), default=20, show_default=True, help="Claims to sample.")
@click.option("--seed", type=int, default=0, show_default=True, help="The sample's seed.")
@click.option("--stratified", is_flag=True, help="Sample each gold label in proportion (every label at N >= 4).")
@click.option("--condition", type=click.Choice(P.CONDITIONS), default="retrieved", show_default=True)
@click.option("--split", type=LABELLED_SPLIT, default="dev", show_default=True)
@workdir_option()
@click.option("--concurrency", type=click.IntRange(1, 64), default=4, show_default=True)
@click.option("--probe", is_flag=True, help="Also run the contamination probe (docs/llm.md).")
@click.option("--out", default=None, type=click.Path(dir_okay=False), help="The run file to write.")
@click.option(
    "--verify",
    "verify_paths",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Verify a run file (repeat for several).",
)
@click.option(
    "--csv",
    "csv_path",
    default=None,
    type=click.Path(dir_okay=False),
    help="Also write the run (or the runs verified) as CSV: a row per claim asked per condition.",
)
@click.pass_context
def llm_command(
    ctx,
    base_url,
    model,
    provider,
    api_key_env,
    n,
    seed,
    stratified,
    condition,
    split,
    workdir,
    concurrency,
    probe,
    out,
    verify_paths,
    csv_path,
) -> None:
    """Ask a large language model to label a seeded sample of claims from the build's passages,
    and write a run file (also a predictions file: `claimtrace compare --predictions RUN` scores
    it beside the notebook's classifier). A killed run resumes from RUN.partial.jsonl."""
    if verify_paths:
        return _verify(ctx, workdir, verify_paths, csv_path)
    if not (base_url or provider == "anthropic") or not model or not out:
        raise click.UsageError("give --base-url URL (not needed for Anthropic's API), --model M and --out RUN")
    from claimtrace.compare.llm_client import Provider, default_base_url
    from claimtrace.compare.llm_run import Settings, run

    base_url = base_url or default_base_url(provider)
    kind = _provider_kind(provider, base_url)
    settings = Settings(
        Provider(kind, base_url, model, _key(api_key_env)), split, n, seed, stratified, condition, concurrency, probe
    )
    build = open_build(ctx, workdir)
    value = run(build, settings, out, progress=_bar())
    if csv_path is not None:
        _write_csv(build, [value], csv_path)
    _report(build, value, out)


def _bar():
    """A progress bar on stderr, fed (done, total) after each call."""
    from tqdm import tqdm

    state = {}

    def progress(done: int, total: int) -> None:
        if "bar" not in state:
            state["bar"] = tqdm(total=total, initial=done, desc="llm", unit="call", file=sys.stderr)
        else:
            state["bar"].update(done - state["bar"].n)
        if done == total:
            state["bar"].close()

    return progress


def _report(build, value: dict, out: str) -> None:
    """What was written, the failures named, and the run's figures on its sample beside the
    notebook's classifier (as `claimtrace compare --predictions RUN` shows them)."""
    from claimtrace.cli.compare import echo_llm_figures
    from claimtrace.compare.llm_report import llm_report

    meta = value[P.RUN_KEY]
    entries = P.claim_entries(value)
    unusable = sum(1 for e in entries.values() if e["llm"]["status"] == "unusable")
    click.echo(f"wrote {out}: {P.describe_run(meta)}")
    click.echo(
        f"  {len(entries)} claims scored ({unusable} unusable answers, scored wrong); "
        f"{len(meta['failed'])} calls failed (excluded from scoring)"
    )
    for cid, error in list(meta["failed"].items())[:3]:
        click.echo(f"  failed {cid}: {error}", err=True)
    echo_llm_figures(llm_report(build, value))
    click.echo(f"  beside every system of the build: claimtrace compare --predictions {out}")
    if not entries and meta["failed"]:
        sys.exit(1)


def _verify(ctx, workdir: str, paths: tuple[str, ...], csv_path: str | None) -> None:
    """Each run file verified against the build (exit 2 at the first that differs); then, when
    asked, every run's rows written as one CSV, the runs in the order given."""
    from claimtrace.compare.llm_run import verify
    from claimtrace.data.files import json_from_bytes
    from claimtrace.evaluation.scorer import predictions_bytes

    build = open_build(ctx, workdir)
    values = []
    for path in paths:
        value = json_from_bytes(predictions_bytes(path), path)
        problems = verify(build, value, path)
        if problems:
            raise DataError(f"{path}: does not verify against the build:\n  " + "\n  ".join(problems))
        click.echo(
            f"{path}: verified: {P.describe_run(value[P.RUN_KEY])}; sample, answers and passages as the build gives"
        )
        values.append(value)
    if csv_path is not None:
        _write_csv(build, values, csv_path)


def _write_csv(build, values: list[dict], path: str) -> None:
    """The runs as one CSV (:func:`claimtrace.compare.llm_report.run_csv`), UTF-8, CRLF lines."""
    from claimtrace.compare.llm_report import run_csv

    with open(path, "w", encoding="utf-8", newline="") as out:
        out.write(run_csv(build, values))
    click.echo(f"wrote {path}: a row per claim asked per condition")


COMMANDS = [llm_command]
