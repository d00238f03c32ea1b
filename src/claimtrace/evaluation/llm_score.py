"""An LLM run scored beside the notebook's classifier on the same sampled claims (docs/llm.md,
"The scores"): accuracy and macro-F1 with intervals, the paired difference (McNemar, Cohen's h),
citation validity, the evidence F of the cited ids and HM, latency, tokens and an estimated cost;
and one model's two runs, gold passages and retrieved, paired on the same claims.

Reads a run file's value (:mod:`claimtrace.evaluation.llm`) and what the caller read from the
build (the notebook's labels, the passage ids shown); never the network, never the build.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from claimtrace.data.files import Claim
from claimtrace.evaluation import llm as P
from claimtrace.evaluation import statistics as S
from claimtrace.evaluation.scorer import evidence_f
from claimtrace.evaluation.significance import labels_paired


def interval_width(n: int) -> float:
    """The half-width of a 95% Wilson interval at p = 0.5 over ``n`` claims, about 0.98/sqrt(n)."""
    return P.WIDTH_AT_HALF / math.sqrt(n) if n else float("nan")


def width_note(n: int) -> str:
    """The sentence shown beside every result of a sample of ``n`` claims."""
    if not n:
        return "No claim was scored: no interval."
    return (
        f"At {n} claims a 95% interval on a share is about ±{interval_width(n):.2f} wide (near 50%): "
        "differences smaller than that cannot be told apart from chance."
    )


def price_of(model: str) -> tuple[float, float] | None:
    """(input, output) dollars per million tokens of the longest matching prefix, or None."""
    found = [row for row in P.PRICES if model.startswith(row[0])]
    if not found:
        return None
    _, inp, out = max(found, key=lambda row: len(row[0]))
    return inp, out


def cost_of(model: str, tokens_in: int, tokens_out: int) -> dict:
    """The estimated cost in dollars of the tokens, or ``"unknown"``, with the table's date."""
    price = price_of(model)
    if price is None:
        return {"usd": "unknown", "prices_date": P.PRICES_DATE}
    usd = (tokens_in * price[0] + tokens_out * price[1]) / 1_000_000
    return {"usd": round(usd, 6), "per_million": {"in": price[0], "out": price[1]}, "prices_date": P.PRICES_DATE}


def latency(values: Sequence[float]) -> dict:
    """Median and 90th percentile in milliseconds (numpy's linear interpolation)."""
    if not values:
        return {"median_ms": None, "p90_ms": None}
    array = np.asarray(values, dtype=np.float64)
    return {"median_ms": float(np.median(array)), "p90_ms": float(np.percentile(array, 90))}


def score_run(
    run: Mapping,
    gold: Mapping[str, Claim],
    notebook: Mapping[str, str],
    shown: Mapping[str, Sequence[str]],
    resamples: int = S.RESAMPLES,
    seed: int = S.SEED,
) -> dict:
    """The run's figures on its scored claims (sampled, not failed), in sorted id order.

    Parameters
    ----------
    run : mapping
        A run file's value (claim entries and the reserved key).
    gold : mapping
        The split's claims, claim id -> Claim.
    notebook : mapping
        claim id -> the build's notebook classifier's label (on retrieved passages, notebook protocol).
    shown : mapping
        claim id -> the passage ids the model was shown.

    Returns
    -------
    dict
        ``counts``, ``accuracy`` and ``notebook_accuracy`` (Wilson), ``macro_f1`` (bootstrap),
        ``paired`` (:func:`claimtrace.evaluation.significance.labels_paired`, run minus notebook),
        ``citations`` (validity, Wilson), ``evidence_f`` (bootstrap), ``hm`` (the course's
        harmonic mean of accuracy and evidence F, bootstrap), ``latency``, ``tokens``, ``cost``,
        ``interval_width`` and ``note``.
    """
    meta = P.run_metadata(run) or {}
    entries = P.claim_entries(run)
    sampled = list((meta.get("sample") or {}).get("claim_ids") or entries)
    # in sorted id order, as the course's scorer lists them: the same resampled claims, so the
    # intervals equal `claimtrace evaluate --predictions RUN`'s
    asked = set(sampled)
    ids = [cid for cid in sorted(gold) if cid in asked and cid in entries]
    llm = [entries[cid].get("llm") or {} for cid in ids]
    counts = {
        "sampled": len(sampled),
        "scored": len(ids),
        **{status: sum(1 for e in llm if e.get("status") == status) for status in ("ok", "unusable")},
        "failed": len(meta.get("failed") or {}),
    }
    out = {"model": meta.get("model"), "counts": counts, "interval_width": interval_width(len(ids))}
    out["note"] = width_note(len(ids))
    if not ids:
        return out
    truth = [gold[cid].label for cid in ids]
    predicted = [entries[cid].get("claim_label") for cid in ids]
    theirs = [notebook[cid] for cid in ids]
    indices = S.resample_indices(len(ids), resamples, seed)
    right = [p == t for p, t in zip(predicted, truth, strict=True)]
    out["accuracy"] = S.wilson(sum(right), len(ids)).to_dict()
    out["notebook_accuracy"] = S.wilson(sum(p == t for p, t in zip(theirs, truth, strict=True)), len(ids)).to_dict()
    out["macro_f1"] = S.bootstrap_macro_f1(truth, _named(predicted), indices, seed).to_dict()
    out["paired"] = _plain(labels_paired(truth, _named(predicted), theirs, resamples, seed))
    out.update(_evidence(ids, entries, gold, shown, indices, seed, right))
    out.update(_usage(llm, str(meta.get("model") or "")))
    return out


def _cited_f(ids: Sequence[str], entries: Mapping, gold: Mapping[str, Claim]) -> list[float]:
    """Each claim's evidence F of the ids its answer cited (the course's per-claim F)."""
    return [evidence_f(list(entries[cid].get("evidences") or []), list(gold[cid].evidences)) for cid in ids]


def _harmonic(right: Sequence[bool], f: Sequence[float], indices: np.ndarray, seed: int) -> dict:
    """The course's HM, ``2FA / (F + A)`` of the accuracy A and the mean evidence F, with its
    percentile bootstrap interval over the same resampled claims as the other figures."""
    a_values, f_values = np.asarray(right, dtype=np.float64), np.asarray(f, dtype=np.float64)
    estimate = float(S.harmonic_means(np.array(f_values.mean()), np.array(a_values.mean())))
    resampled = S.harmonic_means(S.resampled_means(f_values, indices), S.resampled_means(a_values, indices))
    return S.percentile_interval(estimate, resampled, len(indices), seed).to_dict()


def conditions_paired(
    retrieved: Mapping, on_gold: Mapping, gold: Mapping[str, Claim], resamples: int = S.RESAMPLES, seed: int = S.SEED
) -> dict:
    """One model asked about the same claims twice, with the gold passages and with the retrieved
    ones (two runs): gold minus retrieved on the claims scored in both, in sorted id order, by the
    evaluation layer's paired test (:meth:`claimtrace.evaluation.statistics.Resampled.paired`):
    the differences in accuracy (McNemar's exact test, Cohen's h), evidence F and HM, each with
    its paired bootstrap interval.

    Returns
    -------
    dict
        ``{"claims", "accuracy": {"retrieved", "gold"} (Wilson), "hm": {"retrieved", "gold"}
        (estimates), "A", "F", "HM", "mcnemar", "cohens_h", "p", "verdict"}``; with no claim
        scored in both, ``{"claims": 0}``.
    """
    entries = {"gold": P.claim_entries(on_gold), "retrieved": P.claim_entries(retrieved)}
    ids = [cid for cid in sorted(gold) if all(cid in e for e in entries.values())]
    if not ids:
        return {"claims": 0}
    truth = tuple(gold[cid].label for cid in ids)
    systems = {}
    for condition, found in entries.items():
        predicted = _named([found[cid].get("claim_label") for cid in ids])
        right = np.array([p == t for p, t in zip(predicted, truth, strict=True)])
        systems[condition] = S.PerClaim(truth, tuple(predicted), np.array(_cited_f(ids, found, gold)), right)
    paired = S.Resampled([systems["gold"], systems["retrieved"]], resamples, seed).paired(0, 1)
    return {
        "claims": len(ids),
        "accuracy": {c: S.wilson(int(s.right.sum()), len(ids)).to_dict() for c, s in systems.items()},
        "hm": {c: float(S.harmonic_means(np.array(s.f.mean()), np.array(s.right.mean()))) for c, s in systems.items()},
        **{key: paired[key] for key in ("A", "F", "HM", "mcnemar", "cohens_h", "p")},
        "verdict": S.verdict(paired["p"]),
    }


def _usage(llm: Sequence[dict], model: str) -> dict:
    """Latency, tokens and the estimated cost of the scored calls."""
    tokens_in = sum(int(e.get("tokens_in") or 0) for e in llm)
    tokens_out = sum(int(e.get("tokens_out") or 0) for e in llm)
    return {
        "latency": latency([e["latency_ms"] for e in llm if isinstance(e.get("latency_ms"), (int, float))]),
        "tokens": {"in": tokens_in, "out": tokens_out},
        "cost": cost_of(model, tokens_in, tokens_out),
    }


def _named(labels: Sequence[str | None]) -> list[str]:
    """Labels with an unusable answer's None named (it is a wrong answer, a label of its own)."""
    return ["UNUSABLE" if label is None else label for label in labels]


def _evidence(ids, entries, gold, shown, indices, seed, right) -> dict:
    """Citation validity (Wilson over every id cited), the cited ids' evidence F (bootstrap) and
    its HM with the accuracy (``right``: each claim's label right or not)."""
    cited = [list(entries[cid].get("evidences") or []) for cid in ids]
    total = sum(len(c) for c in cited)
    valid = sum(1 for cid, c in zip(ids, cited, strict=True) for pid in c if pid in set(shown.get(cid, ())))
    f = _cited_f(ids, entries, gold)
    return {
        "citations": {"cited": total, "valid": valid, "validity": S.wilson(valid, total).to_dict()},
        "evidence_f": S.bootstrap_mean(f, indices, seed).to_dict(),
        "hm": _harmonic(right, f, indices, seed),
    }


def _plain(value):
    """A result with its dataclasses as dicts (JSON-ready)."""
    if isinstance(value, dict):
        return {key: _plain(v) for key, v in value.items()}
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if hasattr(value, "__dataclass_fields__"):
        return {name: getattr(value, name) for name in value.__dataclass_fields__}
    return value
