"""The scoreboard: every retrieval x classifier x protocol row of dev, scored with the course's
measure (:mod:`claimtrace.evaluation.scorer`); and what the retrieval variants table is made of:
a retrieval's figures on one split (its F and the share of claims it failed in its own way) and
BM25's reference row."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from claimtrace.constants import MAX_EVIDENCES
from claimtrace.course import TABLE2
from claimtrace.data import files as data_layer
from claimtrace.data.files import Claim
from claimtrace.errors import DataError
from claimtrace.evaluation.baselines import Baseline, course_baseline, label_baselines
from claimtrace.evaluation.scorer import Evaluation, evaluate, evidence_f
from claimtrace.evaluation.significance import against_reference, strict_per_claim, verdicts_paired
from claimtrace.pipeline.retrieval import VARIANTS

#: The retrievals a row can use: the notebook's as designed, each quirk variant, and BM25.
SCORE_RETRIEVALS = ("notebook", "raw-claim-text", "cosine-once", "unpadded-tags", "bm25")


#: The classifiers: the notebook's model (both bugs), the intended one (both fixed) and the
#: notebook's other model, its LSTM (verdict read at the 128th position, usually a [PAD]).
SCORE_MODELS = {
    "notebook": "the notebook's model (attention across the batch, positions by batch index)",
    "intended": "the intended model (batch-first attention, positions by word index)",
    "lstm": "the notebook's LSTM (4 layers of 256, its verdict read at the last of the 128 positions)",
}


#: The models whose claims never meet their batch-mates (models.predict.PerClaimClassifier): the
#: build computes their two protocols once, so a row's "alone" predictions are its "notebook"
#: row's, file for file.
ONE_COMPUTATION_MODELS = frozenset({"intended", "lstm"})


_PROTOCOL_CHANGES = {"alone": "each claim alone (a batch of one)", "notebook": "batches of 16 in file order"}


_BM25_CHANGE = "BM25 over the raw passage text instead of TF-IDF over tags (a reference, not a quirk)"


@dataclass(frozen=True)
class ScoreRow:
    """One combination the build can score: a retrieval, a classifier and a protocol."""

    retrieval: str
    model: str
    protocol: str

    @property
    def name(self) -> str:
        return f"{self.retrieval}+{self.model}+{self.protocol}"

    @property
    def file_row(self) -> ScoreRow:
        """The row whose predictions file holds this row's predictions: itself, or for a model
        of :data:`ONE_COMPUTATION_MODELS` under "alone", the same row under "notebook" (the same
        verdicts, so a site writes that file once)."""
        if self.model in ONE_COMPUTATION_MODELS and self.protocol == "alone":
            return ScoreRow(self.retrieval, self.model, "notebook")
        return self

    def changes(self) -> list[str]:
        """What this row changes from the notebook's pipeline (its retrieval as designed, its
        model, batches of 16); empty for the notebook's own row."""
        out = []
        if self.retrieval == "bm25":
            out.append(_BM25_CHANGE)
        elif self.retrieval != "notebook":
            out.append(VARIANTS[self.retrieval].description)
        if self.model != "notebook":
            out.append(SCORE_MODELS[self.model])
        if self.protocol != "notebook":
            out.append(_PROTOCOL_CHANGES[self.protocol])
        return out


def scoreboard_rows() -> list[ScoreRow]:
    """Every row, retrieval-major; the notebook's own row first."""
    return [ScoreRow(r, m, p) for r in SCORE_RETRIEVALS for m in SCORE_MODELS for p in reversed(_PROTOCOL_CHANGES)]


def scoreboard_row(name: str) -> ScoreRow:
    """The row called ``name`` (``retrieval+model+protocol``); DataError naming the choices."""
    for row in scoreboard_rows():
        if row.name == name:
            return row
    raise DataError(f"unknown scoreboard row {name!r}: expected one of {', '.join(r.name for r in scoreboard_rows())}")


def evidence_source(retrieval: str) -> str:
    """The classifier's name for a retrieval's evidence (the notebook's own is ``retrieved``)."""
    return "retrieved" if retrieval == "notebook" else retrieval


def row_result(build, split: str, row: ScoreRow) -> Evaluation:
    """One row's course scores on a labelled split, scored exactly as ``claimtrace evaluate
    --predictions`` scores that row's exported predictions (per claim included)."""
    source = f"{build.root} ({split}, row {row.name})"
    predicted = data_layer.parse_claims(
        build.predictions(split, row.retrieval, row.model, row.protocol), source, labelled=True
    )
    return evaluate(predicted, build.claims(split), source=source)


def _row_entry(row: ScoreRow, result: Evaluation) -> dict:
    """A scoreboard row's entry: ``name``, ``retrieval``, ``model``, ``protocol``, ``changes``,
    ``reference`` (BM25's rows), then :meth:`Evaluation.summary`'s ``F``, ``A``, ``HM``,
    ``claims``, ``skipped_missing``, ``ignored_extra``."""
    return {
        "name": row.name,
        "retrieval": row.retrieval,
        "model": row.model,
        "protocol": row.protocol,
        "changes": row.changes(),
        "reference": row.retrieval == "bm25",
        **result.summary(),
    }


#: The row every other row and baseline is paired with: the notebook's own pipeline.
NOTEBOOK_ROW = ScoreRow("notebook", "notebook", "notebook")


def baseline_results(build, split: str, gold: Mapping[str, Claim]) -> list[tuple[Baseline, Evaluation]]:
    """Each baseline (:mod:`claimtrace.evaluation.baselines`) scored on the split."""
    notebook = build.predictions(split, NOTEBOOK_ROW.retrieval, NOTEBOOK_ROW.model, NOTEBOOK_ROW.protocol)
    found = label_baselines(notebook, build.claims("train"))
    course_file = course_baseline(build.data_dir) if split == "dev" else None
    found += [course_file] if course_file is not None else []
    out = []
    for baseline in found:
        source = f"{build.root} ({split}, {baseline.name})"
        predicted = data_layer.parse_claims(baseline.predictions, source, labelled=True)
        out.append((baseline, evaluate(predicted, gold, source=source, skip_missing=True)))
    return out


def scoreboard(build, split: str = "dev") -> dict:
    """Every row's course scores on a labelled split, each scored exactly as ``claimtrace evaluate
    --predictions`` scores that row's exported predictions, the baselines beside them, and
    every figure with its interval and every row paired with the notebook's own
    (:func:`claimtrace.evaluation.significance.against_reference`).

    Parameters
    ----------
    build : claimtrace.workdir.reader.BuildReader
        A build with its BM25, quirk-variant and classifier files.
    split : str
        A labelled split (dev).

    Returns
    -------
    dict
        ``{"split", "anchor", "rows", "baselines", "statistics"}``: ``anchor`` is the course's
        Table 2 for the split (or None); ``rows`` one dict per :func:`scoreboard_rows` row:
        ``name``, ``retrieval``, ``model``, ``protocol``, ``changes`` (list of str),
        ``reference`` (BM25's rows), ``F``, ``A``, ``HM``, ``claims``, ``intervals`` (A, F, HM,
        macro-F1, per-label recall) and, but for the notebook's row, ``paired`` (the row minus
        the notebook's, tested); ``baselines`` the same for each baseline (``"baseline": true``,
        ``description``); ``statistics`` how the intervals and tests were made;
        ``intended_minus_notebook_on_gold`` the intended model minus the notebook's on the same
        claims with gold evidence, batches of 16 (:func:`verdicts_paired`);
        ``lstm_minus_notebook_on_gold`` the same for the notebook's LSTM against its Transformer.
    """
    gold = build.claims(split)
    results = {row.name: (row, row_result(build, split, row)) for row in scoreboard_rows()}
    baselines = baseline_results(build, split, gold)
    systems = {name: strict_per_claim(result, gold) for name, (_, result) in results.items()}
    systems.update({b.name: strict_per_claim(result, gold) for b, result in baselines})
    tested = against_reference(systems, NOTEBOOK_ROW.name)
    rows = [_row_entry(row, result) for row, result in results.values()]
    extra = [
        {"name": b.name, "description": b.description, "baseline": True, **result.summary()} for b, result in baselines
    ]
    for entry in rows + extra:
        entry["intervals"] = tested["figures"][entry["name"]]
        if entry["name"] in tested["paired"]:
            entry["paired"] = tested["paired"][entry["name"]]
    return {
        "split": split,
        "anchor": TABLE2.get(split),
        "rows": rows,
        "baselines": extra,
        "statistics": tested["method"],
        **{
            f"{model}_minus_notebook_on_gold": verdicts_paired(
                gold,
                build.verdict_of(split, model, "gold", "notebook"),
                build.verdict_of(split, "notebook", "gold", "notebook"),
            )
            for model in ("intended", "lstm")
        },
    }


# --- the retrieval variants table -----------------------------------------------------------------


@dataclass(frozen=True)
class Share:
    """A share of claims a retrieval's split figures report: its key, and the records it counts."""

    key: str
    counts: Callable[[dict], bool]


#: The claims that took the fallback passages (the notebook's retrieval and its quirk variants).
FALLBACK_SHARE = Share("fallback_share", lambda record: record["fallback"])
#: The claims given fewer than six passages (BM25: fewer passages share a stem with the claim).
SHORT_SHARE = Share("short_share", lambda record: len(record["evidences"]) < MAX_EVIDENCES)


def split_figures(records: Sequence[dict], claims: Mapping[str, Claim], share: Share, labelled: bool) -> dict:
    """A retrieval's figures on one split from its records (``{"claim_id", "evidences", ...}``
    per claim, file order): ``claims``, the ``share`` of them and, on a labelled split, ``F``:
    the course's per-claim evidence F summed in file order over the claim count."""
    n = len(records)
    figures = {"claims": n, share.key: sum(share.counts(record) for record in records) / max(1, n)}
    if labelled:
        figures["F"] = sum(evidence_f(r["evidences"], claims[r["claim_id"]].evidences) for r in records) / max(1, n)
    return figures


def bm25_variant_row(dev: Mapping[str, float], passages: int) -> dict:
    """BM25's row of the dev retrieval variants table (:func:`split_figures`' dev figures),
    after the quirk variants' rows: a reference, not a quirk."""
    return {
        "variant": "bm25",
        "description": "BM25 over the raw passage text (k1 = 1.2, b = 0.75): a standard retriever, not a quirk",
        "F": dev["F"],
        "fallback_share": 0.0,  # BM25 has no filter, so no fallback: a claim gets what shares a stem
        "claims": dev["claims"],
        "passages": passages,
        "reference": True,
    }
