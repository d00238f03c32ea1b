"""A run of the LLM harness over a build's claims (docs/llm.md): the sample, each claim's
passages read from the build, the calls made a few at a time, each finished call journaled so a
killed run resumes, and the run file written whole. Also the contamination probe and the
verification of an imported run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from claimtrace import __version__
from claimtrace.compare.llm_client import Provider, Reply, call
from claimtrace.compare.llm_report import passages_for, sample_of
from claimtrace.data.files import Claim
from claimtrace.errors import DataError
from claimtrace.evaluation import llm as P
from claimtrace.evaluation.statistics import wilson
from claimtrace.lib import build_files
from claimtrace.workdir.reader import BuildReader

JOURNAL_SUFFIX = ".partial.jsonl"


@dataclass(frozen=True)
class Settings:
    """What one run asks: of whom, which claims, with which passages."""

    provider: Provider
    split: str = "dev"
    n: int = 20
    seed: int = 0
    stratified: bool = False
    condition: str = "retrieved"
    concurrency: int = 4
    probe: bool = False


def journal_path(out: str | os.PathLike) -> Path:
    return Path(str(out) + JOURNAL_SUFFIX)


def header_of(settings: Settings, ids: Sequence[str]) -> dict:
    """The run's metadata that names what it asks (the journal's first line; never the key)."""
    provider = settings.provider
    return {
        "schema": P.SCHEMA,
        "prompt_version": P.PROMPT_VERSION,
        "provider": provider.kind,
        "base_url": provider.base_url,
        "model": provider.model,
        "condition": settings.condition,
        "split": settings.split,
        "sample": {"n": len(ids), "seed": settings.seed, "stratified": settings.stratified, "claim_ids": list(ids)},
        "temperature": P.TEMPERATURE,
        "probe": settings.probe,
    }


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def read_journal(path: Path, header: dict) -> tuple[str, dict[tuple[str, str], dict]]:
    """(started, finished calls by (kind, claim id)) of a killed run's journal with this header;
    a journal of another run is refused (a half line at its end, cut by the kill, is dropped)."""
    if not path.is_file():
        return _now(), {}
    lines = path.read_text(encoding="utf-8").splitlines()
    rows = []
    for line in lines:
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue  # the last line, cut by the kill
    if not rows or rows[0].get("journal") != header:
        raise DataError(
            f"{path}: the journal of another run (model, sample, condition or prompt differ): "
            "remove it or choose another --out"
        )
    done = {(row["kind"], row["claim_id"]): row for row in rows[1:] if "kind" in row}
    return rows[0].get("started") or _now(), done


def _label_task(build: BuildReader, settings: Settings, claim: Claim) -> Callable[[], dict]:
    passages = passages_for(build, settings.split, claim, settings.condition)
    user = P.user_prompt(claim.text, passages)

    def ask() -> dict:
        reply = call(settings.provider, P.SYSTEM_PROMPT_V1, user)
        if reply.error is not None:
            return {"failed": reply.error}
        answer = P.judge_answer(reply.text)
        return {"entry": P.claim_entry(claim.text, answer, reply.text, reply.latency_ms, _tokens(reply))}

    return ask


def _probe_task(settings: Settings, claim: Claim) -> Callable[[], dict]:
    given, truth = P.probe_halves(claim.text)

    def ask() -> dict:
        reply = call(settings.provider, P.PROBE_SYSTEM_V1, given)
        if reply.error is not None:
            return {"failed": reply.error}
        return {"overlap": P.probe_overlap(truth, reply.text), "continuation": reply.text}

    return ask


def _tokens(reply: Reply) -> tuple[int, int]:
    return reply.tokens_in, reply.tokens_out


def run(
    build: BuildReader, settings: Settings, out: str | os.PathLike, progress: Callable[[int, int], None] | None = None
) -> dict:
    """Ask every sampled claim (and, with ``settings.probe``, its probe), resuming from the
    journal beside ``out``; write the run file atomically, remove the journal, return the run."""
    ids = sample_of(build, settings.split, settings.n, settings.seed, settings.stratified)
    claims = build.claims(settings.split)
    header = header_of(settings, ids)
    path = journal_path(out)
    if Path(out).exists() and not path.exists():  # a finished run: asking again would spend again
        raise DataError(f"{out}: a finished run is there already: remove it or choose another --out")
    started, done = read_journal(path, header)
    tasks = {("label", cid): _label_task(build, settings, claims[cid]) for cid in ids}
    if settings.probe:
        tasks.update({("probe", cid): _probe_task(settings, claims[cid]) for cid in ids})
    pending = [key for key in tasks if key not in done]
    failed: dict[tuple[str, str], str] = {}
    _ask_all(tasks, pending, done, failed, path, {"journal": header, "started": started}, settings, progress)
    value = assemble(header, ids, done, failed, started)
    build_files.write_atomic(out, json.dumps(value, indent=1, ensure_ascii=False) + "\n")
    path.unlink(missing_ok=True)
    return value


def _ask_all(tasks, pending, done, failed, path: Path, first: dict, settings: Settings, progress) -> None:
    """Run the pending calls ``settings.concurrency`` at a time, journaling each as it ends."""
    total, finished = len(tasks), len(tasks) - len(pending)
    if progress:
        progress(finished, total)
    new = not path.is_file()
    with open(path, "a", encoding="utf-8") as journal, ThreadPoolExecutor(max(1, settings.concurrency)) as pool:
        if new:
            journal.write(json.dumps(first) + "\n")
            journal.flush()
        futures = {pool.submit(tasks[key]): key for key in pending}
        for future in as_completed(futures):
            kind, cid = futures[future]
            result = future.result()
            finished += 1
            if "failed" in result:
                failed[(kind, cid)] = result["failed"]  # not journaled: a resumed run asks again
            else:
                row = {"kind": kind, "claim_id": cid, **result}
                done[(kind, cid)] = row
                journal.write(json.dumps(row, ensure_ascii=False) + "\n")
                journal.flush()
            if progress:
                progress(finished, total)


def assemble(header: dict, ids: Sequence[str], done: Mapping, failed: Mapping, started: str) -> dict:
    """The run file: scored claims in the sample's order, then the reserved key's metadata."""
    value = {cid: done[("label", cid)]["entry"] for cid in ids if ("label", cid) in done}
    meta = {key: v for key, v in header.items() if key != "probe"}
    meta["failed"] = {cid: error for (kind, cid), error in failed.items() if kind == "label"}
    if header.get("probe"):
        meta["probe"] = probe_summary(ids, done, failed)
    meta.update({"started": started, "finished": _now(), "tool": f"claimtrace {__version__}"})
    value[P.RUN_KEY] = meta
    return value


def probe_summary(ids: Sequence[str], done: Mapping, failed: Mapping) -> dict:
    """The contamination probe's result: per claim the overlap, and the share near-verbatim."""
    overlaps = {cid: round(done[("probe", cid)]["overlap"], 4) for cid in ids if ("probe", cid) in done}
    near = sum(1 for value in overlaps.values() if value >= P.NEAR_VERBATIM)
    return {
        "prompt_version": P.PROMPT_VERSION,
        "definition": P.PROBE_DEFINITION,
        "asked": len(overlaps),
        "failed": {cid: error for (kind, cid), error in failed.items() if kind == "probe"},
        "near_verbatim": near,
        "share": wilson(near, len(overlaps)).to_dict(),
        "overlaps": overlaps,
        "continuations": {cid: done[("probe", cid)]["continuation"] for cid in overlaps},
    }


# -- an imported run, verified ---------------------------------------------------------------------


def verify(build: BuildReader, value: object, source: str) -> list[str]:
    """What in an imported run differs from what the protocol and the build give (empty: none):
    its sample computed again from its seed, each answer judged again from its raw text, each
    entry's claim and citations checked against the build's claims and passages."""
    meta = P.run_metadata(value)
    if meta is None:
        return [f"{source}: no {P.RUN_KEY!r} key: not an LLM run"]
    problems = _meta_problems(meta)
    if problems:
        return problems
    sample = meta["sample"]
    ids = sample_of(build, meta["split"], sample["n"], sample["seed"], sample["stratified"])
    if ids != list(sample["claim_ids"]):
        problems.append(
            f"sample: the claim ids differ from those seed {sample['seed']} gives "
            f"(n {sample['n']}, stratified {sample['stratified']}, split {meta['split']})"
        )
    entries = P.claim_entries(value)
    claims = build.claims(meta["split"])
    order = [cid for cid in sample["claim_ids"] if cid in entries and cid in claims]
    if list(entries) != order:
        problems.append("claims: entries not in the recorded sample, not in its order, or not claims of the split")
    for cid in order:
        problems.extend(f"{cid}: {p}" for p in _entry_problems(build, meta, claims[cid], entries[cid]))
    return problems


def _meta_problems(meta: dict) -> list[str]:
    if meta.get("schema") != P.SCHEMA:
        return [f"schema {meta.get('schema')!r}: this claimtrace reads schema {P.SCHEMA}"]
    if meta.get("prompt_version") != P.PROMPT_VERSION:
        return [f"prompt_version {meta.get('prompt_version')!r}: this claimtrace knows {P.PROMPT_VERSION}"]
    sample = meta.get("sample")
    if not isinstance(sample, dict) or not all(k in sample for k in ("n", "seed", "stratified", "claim_ids")):
        return ["sample: missing n, seed, stratified or claim_ids"]
    if meta.get("condition") not in P.CONDITIONS:
        return [f"condition {meta.get('condition')!r}: expected one of {', '.join(P.CONDITIONS)}"]
    return []


def _entry_problems(build: BuildReader, meta: dict, claim: Claim, entry: object) -> list[str]:
    if not isinstance(entry, dict) or not isinstance(entry.get("llm"), dict):
        return ["not an entry of an LLM run (no llm object)"]
    llm = entry["llm"]
    problems = []
    if entry.get("claim_text") != claim.text:
        problems.append("claim_text differs from the build's claim")
    answer = P.judge_answer(llm.get("raw") or "")
    if (answer.status, answer.label) != (llm.get("status"), entry.get("claim_label")):
        problems.append(
            f"the raw answer judges as {answer.status} {answer.label}, the file says "
            f"{llm.get('status')} {entry.get('claim_label')}"
        )
    if list(answer.cited_ids) != list(entry.get("evidences") or []) or list(answer.cited_ids) != list(
        llm.get("cited_ids") or []
    ):
        problems.append("the cited ids differ from those in the raw answer")
    shown = {pid for pid, _ in passages_for(build, meta["split"], claim, meta["condition"])}
    if any(not build.passage_text(pid) for pid in shown):
        problems.append("a passage shown is not in this build's corpus (another build?)")
    return problems
