"""The scoreboard: every retrieval x classifier x protocol row of dev, scored with the course's
measure (:mod:`claimtrace.evaluation.scorer`)."""

from __future__ import annotations

from dataclasses import dataclass

from claimtrace.course import TABLE2
from claimtrace.data import files as data_layer
from claimtrace.errors import DataError
from claimtrace.evaluation.scorer import evaluate
from claimtrace.pipeline.retrieval import VARIANTS

#: The retrievals a row can use: the notebook's as designed, each quirk variant, and BM25.
SCORE_RETRIEVALS = ("notebook", "raw-claim-text", "cosine-once", "unpadded-tags", "bm25")


#: The classifiers: the notebook's model (both bugs) and the intended one (both fixed).
SCORE_MODELS = {
    "notebook": "the notebook's model (attention across the batch, positions by batch index)",
    "intended": "the intended model (batch-first attention, positions by word index)",
}


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


def scoreboard(build, split: str = "dev") -> dict:
    """Every row's course scores on a labelled split, each scored exactly as ``claimtrace evaluate
    --predictions`` scores that row's exported predictions.

    Parameters
    ----------
    build : claimtrace.workdir.reader.Build
        A build with its BM25, quirk-variant and classifier files.
    split : str
        A labelled split (dev).

    Returns
    -------
    dict
        ``{"split", "anchor", "rows"}``: ``anchor`` is the course's Table 2 for the split (or
        None), ``rows`` one dict per :func:`scoreboard_rows` row: ``name``, ``retrieval``,
        ``model``, ``protocol``, ``changes`` (list of str), ``reference`` (BM25's rows),
        ``F``, ``A``, ``HM``, ``claims``.
    """
    gold = build.claims(split)
    rows = []
    for row in scoreboard_rows():
        source = f"{build.root} ({split}, row {row.name})"
        predicted = data_layer.parse_claims(
            build.predictions(split, row.retrieval, row.model, row.protocol), source, labelled=True
        )
        result = evaluate(predicted, gold, source=source)
        rows.append(
            {
                "name": row.name,
                "retrieval": row.retrieval,
                "model": row.model,
                "protocol": row.protocol,
                "changes": row.changes(),
                "reference": row.retrieval == "bm25",
                **result.summary(),
            }
        )
    return {"split": split, "anchor": TABLE2.get(split), "rows": rows}
