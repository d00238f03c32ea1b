"""The LLM harness's protocol (docs/llm.md), shared by ``claimtrace llm`` and the site's
evaluation page: which claims are asked (a seeded sample, stratified on request), the prompt
(versioned), how an answer is read and judged, and the run file's shape. No network here: the
calls are made by :mod:`claimtrace.compare.llm_client`; the figures by
:mod:`claimtrace.evaluation.llm_score`.

The browser reads these constants from :func:`protocol_constants` (embedded in the page's data),
so nothing is typed twice.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from claimtrace.constants import LABELS

#: The reserved top-level key of a run file: not a claim id, never read by the course's scorer.
RUN_KEY = "claimtrace-llm-run"
#: The run file's schema version (a change of shape is a new version).
SCHEMA = 1
#: The prompt's version, recorded in every run; a change of wording is a new version.
PROMPT_VERSION = "v1"
TEMPERATURE = 0
MAX_TOKENS = 400
CONDITIONS = ("retrieved", "gold")
PROVIDERS = ("openai", "anthropic", "openai-compatible")
ANTHROPIC_URL = "https://api.anthropic.com"
OPENAI_URL = "https://api.openai.com/v1"
ANTHROPIC_VERSION = "2023-06-01"
#: The statuses of a call: ``ok`` scored, ``unusable`` scored as wrong, ``failed`` excluded.
STATUSES = ("ok", "unusable", "failed")
#: Retries of a 429, a 5xx or a network error: attempts after the first, backoff base and cap.
RETRIES = 4
BACKOFF_BASE = 0.5
BACKOFF_CAP = 8.0

#: When the prices below were read from the providers' price pages.
PRICES_DATE = "2025-06"
#: US dollars per million tokens (input, output) by model id prefix; the longest prefix wins.
PRICES = (
    ("gpt-4o-mini", 0.15, 0.60),
    ("gpt-4o", 2.50, 10.00),
    ("gpt-4.1-nano", 0.10, 0.40),
    ("gpt-4.1-mini", 0.40, 1.60),
    ("gpt-4.1", 2.00, 8.00),
    ("claude-3-haiku", 0.25, 1.25),
    ("claude-3-5-haiku", 0.80, 4.00),
    ("claude-3-5-sonnet", 3.00, 15.00),
    ("claude-3-7-sonnet", 3.00, 15.00),
    ("claude-sonnet-4", 3.00, 15.00),
    ("claude-opus-4", 15.00, 75.00),
)


#: A 95% Wilson interval's half-width at p = 0.5 over n claims is about this over sqrt(n).
WIDTH_AT_HALF = 0.98

#: What each label means, one line each, as the prompt states it.
LABEL_MEANINGS = {
    "SUPPORTS": "the passages support the claim",
    "REFUTES": "the passages contradict the claim",
    "NOT_ENOUGH_INFO": "the passages say too little to decide",
    "DISPUTED": "some passages support the claim and others contradict it",
}

SYSTEM_PROMPT_V1 = (
    "You are a fact-checker of claims about climate change. You are given one claim and a list of "
    "passages, each with an id in square brackets. Using only these passages (not what you know), "
    "label the claim with exactly one of:\n"
    + "".join(f"- {label}: {LABEL_MEANINGS[label]}\n" for label in LABELS)
    + 'Answer with ONE JSON object and nothing else: {"label": "<one of the four labels>", '
    '"evidence_ids": ["<id>", ...], "rationale": "<one or two sentences>"}. '
    "Choose evidence_ids only among the passage ids shown, the passages your label rests on."
)

#: The answer's schema (JSON Schema), stated on the page and in docs/llm.md.
ANSWER_SCHEMA = {
    "type": "object",
    "required": ["label", "evidence_ids"],
    "properties": {
        "label": {"enum": list(LABELS)},
        "evidence_ids": {"type": "array", "items": {"type": "string"}},
        "rationale": {"type": "string"},
    },
}


def protocol_constants() -> dict:
    """Everything the browser needs to follow the protocol exactly, as JSON."""
    return {
        "run_key": RUN_KEY,
        "schema": SCHEMA,
        "prompt_version": PROMPT_VERSION,
        "system_prompt": SYSTEM_PROMPT_V1,
        "labels": list(LABELS),
        "label_meanings": LABEL_MEANINGS,
        "answer_schema": ANSWER_SCHEMA,
        "temperature": TEMPERATURE,
        "max_tokens": MAX_TOKENS,
        "conditions": list(CONDITIONS),
        "providers": list(PROVIDERS),
        "anthropic_url": ANTHROPIC_URL,
        "openai_url": OPENAI_URL,
        "anthropic_version": ANTHROPIC_VERSION,
        "retries": RETRIES,
        "backoff_base": BACKOFF_BASE,
        "backoff_cap": BACKOFF_CAP,
        "probe_system_prompt": PROBE_SYSTEM_V1,
        "near_verbatim": NEAR_VERBATIM,
        "probe_slack": PROBE_SLACK,
        "probe_definition": PROBE_DEFINITION,
        "prices": [{"prefix": prefix, "in": inp, "out": out} for prefix, inp, out in PRICES],
        "prices_date": PRICES_DATE,
        "width_at_half": WIDTH_AT_HALF,
        "csv_columns": list(CSV_COLUMNS),
    }


# -- the sample ----------------------------------------------------------------------------------


def hash_order(claim_ids: Sequence[str], seed: int) -> list[str]:
    """The claims in ascending hex of sha256(f"{seed}:{claim_id}"): the order both halves share."""
    return sorted(claim_ids, key=lambda cid: hashlib.sha256(f"{int(seed)}:{cid}".encode()).hexdigest())


def stratified_counts(counts: Mapping[str, int], n: int) -> dict[str, int]:
    """Claims per gold label for a stratified sample of ``n``: proportional, floors first, the
    rest to the largest remainders, then (``n >= 4``) one for every label left at none, taken from
    the label with the most; ties in the labels' order."""
    total = sum(counts.values())
    labels = [label for label in LABELS if counts.get(label, 0)]
    taken = {label: n * counts[label] // total for label in labels}
    order = sorted(labels, key=lambda label: (-((n * counts[label]) % total), LABELS.index(label)))
    for label in order[: n - sum(taken.values())]:
        taken[label] += 1
    if n >= 4:
        for label in labels:
            if taken[label] == 0:
                richest = max(labels, key=lambda other: (taken[other], -LABELS.index(other)))
                taken[richest] -= 1
                taken[label] = 1
    return taken


def sample_ids(labels: Mapping[str, str], n: int, seed: int, stratified: bool = False) -> list[str]:
    """The sampled claim ids, in the hash order.

    Parameters
    ----------
    labels : mapping
        claim id -> gold label, the pool (the split's labelled claims).
    n : int
        The sample's size (the whole pool when larger).
    seed : int
    stratified : bool
        Per gold label in proportion (:func:`stratified_counts`).
    """
    order = hash_order(list(labels), seed)
    n = min(int(n), len(order))
    if not stratified:
        return order[:n]
    counts = {label: sum(1 for cid in order if labels[cid] == label) for label in LABELS}
    wanted = stratified_counts(counts, n)
    chosen = set()
    for label, count in wanted.items():
        chosen.update([cid for cid in order if labels[cid] == label][:count])
    return [cid for cid in order if cid in chosen]


# -- the prompt ----------------------------------------------------------------------------------


def user_prompt(claim_text: str, passages: Sequence[tuple[str, str]]) -> str:
    """The user message: the claim, then each passage as ``[<id>] <text>`` on its own line."""
    lines = "\n".join(f"[{pid}] {text}" for pid, text in passages)
    return f"Claim: {claim_text}\n\nPassages:\n{lines}"


# -- the answer ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """An answer judged: ``status`` ``ok`` or ``unusable``, the label (None when unusable), the
    ids cited as given, the rationale, and why it is unusable."""

    status: str
    label: str | None
    cited_ids: tuple[str, ...]
    rationale: str
    error: str | None = None


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def first_object(text: str) -> dict | None:
    """The first JSON object in ``text`` (inside a fenced block if there is one), or None."""
    fenced = _FENCE.search(text)
    candidates = [fenced.group(1)] if fenced else []
    candidates.append(text)
    decoder = json.JSONDecoder()
    for candidate in candidates:
        for start in (i for i, ch in enumerate(candidate) if ch == "{"):
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    return None


def judge_answer(text: str) -> Answer:
    """Read a model's answer: ``ok`` when its first JSON object has one of the four labels and
    a list of strings as ``evidence_ids``; else ``unusable`` (scored as wrong, no evidence)."""
    value = first_object(text or "")
    if value is None:
        return Answer("unusable", None, (), "", "no JSON object in the answer")
    label, ids = value.get("label"), value.get("evidence_ids")
    rationale = value.get("rationale")
    rationale = rationale if isinstance(rationale, str) else ""
    if label not in LABELS:
        return Answer("unusable", None, (), rationale, f"label {label!r} is not one of the four")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        return Answer("unusable", None, (), rationale, "evidence_ids is not a list of strings")
    return Answer("ok", label, tuple(ids), rationale)


# -- the run file --------------------------------------------------------------------------------


def claim_entry(claim_text: str, answer: Answer, raw: str, latency_ms: float, tokens: tuple[int, int]) -> dict:
    """A scored claim's entry in the run file (course shape plus ``llm``)."""
    return {
        "claim_text": claim_text,
        "claim_label": answer.label,
        "evidences": list(answer.cited_ids),
        "llm": {
            "status": answer.status,
            "rationale": answer.rationale,
            "cited_ids": list(answer.cited_ids),
            "latency_ms": round(float(latency_ms), 1),
            "tokens_in": int(tokens[0]),
            "tokens_out": int(tokens[1]),
            "raw": raw,
            "error": answer.error,
        },
    }


def run_metadata(run: Mapping) -> dict | None:
    """The reserved key's value when ``run`` (a parsed JSON file) is an LLM run, else None."""
    meta = run.get(RUN_KEY) if isinstance(run, Mapping) else None
    return meta if isinstance(meta, dict) else None


def describe_run(meta: Mapping) -> str:
    """One line naming an LLM run: its model, prompt, condition and sample."""
    sample = meta.get("sample") or {}
    how = ", stratified by gold label" if sample.get("stratified") else ""
    return (
        f"an LLM run of {meta.get('model')} (prompt {meta.get('prompt_version')}, {meta.get('condition')} "
        f"passages, {sample.get('n')} {meta.get('split', 'dev')} claims sampled with seed {sample.get('seed')}{how})"
    )


def claim_entries(run: Mapping) -> dict[str, dict]:
    """The run's claim entries (every key but the reserved one)."""
    return {key: value for key, value in run.items() if key != RUN_KEY}


#: A run's rows as CSV (docs/llm.md, "The run as CSV"): one per claim asked, scored or failed.
CSV_COLUMNS = (
    "claim_id",
    "condition",
    "status",
    "gold_label",
    "notebook_label",
    "model_label",
    "correct",
    "evidence_ids",
    "rationale",
)


def csv_rows(run: Mapping, gold: Mapping[str, str], notebook: Mapping[str, str]) -> list[list[str]]:
    """A run's CSV rows (:data:`CSV_COLUMNS`), in its sample's order: every claim scored, and
    every failed call with its status and no answer (a claim not asked has no row).

    ``gold``: claim id -> gold label; ``notebook``: claim id -> the notebook classifier's label on
    the passages of the run's condition. An unusable answer has no model label and is not correct;
    the cited ids are joined by single spaces."""
    meta = run_metadata(run) or {}
    entries, failed = claim_entries(run), meta.get("failed") or {}
    condition = str(meta.get("condition") or "")
    rows = []
    for cid in (meta.get("sample") or {}).get("claim_ids") or []:
        if cid in entries:
            entry, llm = entries[cid], entries[cid].get("llm") or {}
            said = entry.get("claim_label")
            right = "true" if said is not None and said == gold.get(cid) else "false"
            cited = " ".join(entry.get("evidences") or [])
            status, rationale = str(llm.get("status") or ""), str(llm.get("rationale") or "")
        elif cid in failed:
            said, right, cited, status, rationale = None, "", "", "failed", ""
        else:
            continue
        rows.append(
            [cid, condition, status, gold.get(cid) or "", notebook.get(cid) or "", said or "", right, cited, rationale]
        )
    return rows


def csv_text(rows: Sequence[Sequence[str]]) -> str:
    """The rows under :data:`CSV_COLUMNS` as RFC 4180 CSV: lines end in CRLF; a field holding a
    comma, a double quote or a line break is quoted, its quotes doubled (the browser writes the
    same bytes)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    writer.writerows(rows)
    return out.getvalue()


# -- the contamination probe ---------------------------------------------------------------------

PROBE_SYSTEM_V1 = (
    "You will be given the beginning of a sentence. If you have seen the sentence before, continue it "
    "exactly as it was written; otherwise continue it as best you can. Answer with the continuation "
    "only, no comment."
)
#: A probe's continuation is near-verbatim when its overlap reaches this share.
NEAR_VERBATIM = 0.8
#: How many words past the true second half's length the continuation is read to.
PROBE_SLACK = 5
PROBE_DEFINITION = (
    "the claim's text split after ceil(words / 2) words; the model is given the first half; its "
    "continuation is near-verbatim when the longest common subsequence of the true second half's "
    f"tokens (lower-cased words, punctuation stripped) and the continuation's first (that many + {PROBE_SLACK}) "
    f"tokens covers at least {NEAR_VERBATIM:.0%} of the true second half"
)
_TOKEN = re.compile(r"[a-z0-9]+")


def probe_halves(text: str) -> tuple[str, str]:
    """A claim's text cut after ``ceil(words / 2)`` words: (given half, true second half)."""
    words = text.split()
    cut = (len(words) + 1) // 2
    return " ".join(words[:cut]), " ".join(words[cut:])


def probe_tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def probe_overlap(second_half: str, continuation: str) -> float:
    """The share of the true second half's tokens the continuation repeats in order (the longest
    common subsequence over the true half's length, the continuation read to its length plus
    :data:`PROBE_SLACK` tokens); 1.0 for an empty second half."""
    truth = probe_tokens(second_half)
    if not truth:
        return 1.0
    said = probe_tokens(continuation)[: len(truth) + PROBE_SLACK]
    previous = [0] * (len(said) + 1)
    for word in truth:
        current = [0]
        for j, other in enumerate(said):
            current.append(previous[j] + 1 if word == other else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1] / len(truth)
