"""The course's own figures: what the 2024 notebook, its report and the 2026 explainer printed.

These are reference numbers quoted from the notebook's description (notebook.md), never computed
here; the site shows them beside the same figure computed from the build ("course run / this
build"). Each figure names where it comes from. They should coincide with a build's own only when
the build is of the course's evidence.json (md5 :data:`claimtrace.constants.EVIDENCE_MD5`); the
demo corpus holds only CLIMATE-FEVER's 5,240 sentences, so its retrieval figures differ.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from claimtrace.assets import ASSETS_DIR
from claimtrace.constants import BATCH_SIZE, EVIDENCE_MD5, EVIDENCE_PASSAGES, PROVENANCE_FILE
from claimtrace.errors import damaged


@dataclass(frozen=True)
class Figure:
    """One course figure: its value, how the course printed it, and where it is quoted from."""

    value: Any
    shown: str
    source: str


NOTEBOOK_RETRIEVAL = "notebook.md §4 (Retrieval)"
NOTEBOOK_INPUT = "notebook.md §5 (Classifier input)"
NOTEBOOK_TAGS = "notebook.md §3 (Passage tags)"
NOTEBOOK_TRAINING = "notebook.md §6 (The model and its training)"
NOTEBOOK_EXACT = "notebook.md §7 (Why one claim is explainable)"
REPORT_TABLE2 = "the report's Table 2 (notebook.md §8)"

REPORT_TABLE1 = "the report's Table 1 (notebook.md §9)"

#: The original notebook on GitHub: a chip names the cell it cites, counted from 1 in the file's
#: order, markdown cells included (as GitHub draws them, one after another).
NOTEBOOK_URL = (
    "https://github.com/rNLKJA/Automated-Fact-Checking-System-for-Climate-Change-Claims/blob/main/"
    "COMP90042_Wed5PM_Group1.ipynb"
)


@dataclass(frozen=True)
class Step:
    """One section of the notebook's description (notebook.md §N), as the methods page tells it:
    its title and the notebook's cells that do it."""

    number: int
    title: str
    cells: tuple[int, ...]

    @property
    def anchor(self) -> str:
        """The methods page's anchor of the step."""
        return f"step-{self.number}"

    @property
    def cells_shown(self) -> str:
        """``"cell 25"``, ``"cells 21 and 25"``, ``"cells 55, 57 and 59"``."""
        names = [str(cell) for cell in self.cells]
        if len(names) == 1:
            return f"cell {names[0]}"
        return f"cells {', '.join(names[:-1])} and {names[-1]}"


#: The notebook's pipeline step by step, as notebook.md numbers it (§0 to §9), with the cells of
#: COMP90042_Wed5PM_Group1.ipynb that do each step. §7 is the explainer's insight about the model
#: of cell 38; §9 is the report's Table 1, printed by no cell (the data cells load the corpus).
STEPS: dict[int, Step] = {
    step.number: step
    for step in (
        Step(0, "Data", (6, 8)),
        Step(1, "Text preprocessing", (10,)),
        Step(2, "Tagging TF-IDF", (15,)),
        Step(3, "Passage tags", (17, 19)),
        Step(4, "Retrieval", (21, 25, 52)),
        Step(5, "Classifier input", (34, 36)),
        Step(6, "The model and its training", (38, 43, 44)),
        Step(7, "Why one claim is explainable", (38,)),
        Step(8, "Scores", (55, 57, 59)),
        Step(9, "The evidence corpus, for scale", (8,)),
    )
}

#: A source's citation of a step: "notebook.md §4 (Retrieval)" -> 4.
_STEP_CITED = re.compile(r"notebook\.md §(\d+)")


def cited_step(source: str) -> Step | None:
    """The notebook step a figure's source cites (``"notebook.md §4 (Retrieval)"``), or None."""
    found = _STEP_CITED.search(source)
    return None if found is None else STEPS.get(int(found.group(1)))


#: Passage lengths in words (whitespace-separated), the report's seven buckets: (name, the
#: longest length in it; None for the last, open bucket).
LENGTH_BUCKETS: tuple[tuple[str, int | None], ...] = (
    ("<=5", 5),
    ("6-10", 10),
    ("11-20", 20),
    ("21-50", 50),
    ("51-100", 100),
    ("101-200", 200),
    (">200", None),
)

#: The report's Table 1: passages of the course's evidence.json per length bucket (notebook.md §9).
TABLE1: dict[str, int] = {
    "<=5": 13_578,
    "6-10": 180_771,
    "11-20": 547_481,
    "21-50": 451_498,
    "51-100": 15_217,
    "101-200": 270,
    ">200": 12,
}


def length_bucket(words: int) -> str:
    """The :data:`LENGTH_BUCKETS` name of a passage ``words`` long."""
    for name, longest in LENGTH_BUCKETS:
        if longest is None or words <= longest:
            return name
    raise AssertionError("the last bucket is open")


#: The claim the walkthrough follows.
WALKTHROUGH_CLAIM = "claim-752"

FIGURES: dict[str, Figure] = {
    # claim-752 through retrieval and into the model input
    "claim752_passed": Figure(8, "8", NOTEBOOK_RETRIEVAL),
    "claim752_kept": Figure(4, "4", NOTEBOOK_RETRIEVAL),
    "claim752_max_shared": Figure(3, "3", NOTEBOOK_RETRIEVAL),
    "claim752_F": Figure(0.67, "0.67", NOTEBOOK_RETRIEVAL),
    "claim752_real_tokens": Figure(37, "37", NOTEBOOK_INPUT),
    "claim752_pad_tokens": Figure(91, "91", NOTEBOOK_INPUT),
    # the whole dev set's retrieval
    "dev_fallback_share": Figure(0.47, "47%", NOTEBOOK_RETRIEVAL),
    # the tagging quirk
    "last_feature": Figure("محمد", "محمد", NOTEBOOK_TAGS),
    "passages_with_last_feature": Figure(167_592, "167,592", NOTEBOOK_TAGS),
    "share_with_last_feature": Figure(0.141, "14.1%", NOTEBOOK_TAGS),
    "passages": Figure(EVIDENCE_PASSAGES, f"{EVIDENCE_PASSAGES:,}", "notebook.md §0 (Data)"),
    # the exact table
    "table_vs_torch": Figure(7.7e-7, "7.7e-07", NOTEBOOK_EXACT),
    # the 2026 explainer's retrained weights, notebook protocol (batches of 16 in file order)
    "dev_gold_notebook_correct": Figure(89, "89/154", NOTEBOOK_TRAINING),
    "dev_retrieved_notebook_correct": Figure(59, "59/154", NOTEBOOK_TRAINING),
    # the notebook's own final dev run, which passed the raw claim text to retrieval
    "final_cell_raw_claim_F": Figure(0.011, "0.011", NOTEBOOK_RETRIEVAL),
}

#: The 2026 explainer's 95% Wilson intervals of three dev accuracies (its site's figures), as
#: (successes, claims) -> (lower, upper): a check of the definition, reproduced exactly.
EXPLAINER_SITE = "the 2026 explainer's site"
EXPLAINER_WILSON: dict[tuple[int, int], tuple[float, float]] = {
    (59, 154): (0.310, 0.462),  # its classifier, retrieved evidence
    (89, 154): (0.499, 0.653),  # its classifier, gold evidence
    (68, 154): (0.366, 0.520),  # always SUPPORTS
}

#: The report's Table 2: the course's scores of the pipeline as designed (retrieved evidence).
TABLE2: dict[str, dict[str, float]] = {
    "dev": {"F": 0.04299, "A": 0.55844, "HM": 0.07984},
    "test": {"F": 0.03310, "A": 0.40790, "HM": 0.06120},
}

#: The original 2024 training run's log, epoch -> (train accuracy, dev accuracy); notebook.md §6.
ORIGINAL_LOG: dict[int, tuple[float, float]] = {
    1: (0.5163, 0.5519),
    2: (0.5505, 0.5649),
    3: (0.5668, 0.5714),
    4: (0.5757, 0.5779),
    5: (0.5896, 0.5649),
    6: (0.6042, 0.5974),
    7: (0.6173, 0.5649),
    8: (0.6270, 0.6039),
    9: (0.6311, 0.5779),
    10: (0.6490, 0.5714),
}


#: The notebook's LSTM training run as it printed it (its cell "Train the LSTM model", the same
#: ``train_model`` as the Transformer's), epoch -> (train loss, train accuracy, dev loss, dev
#: accuracy), rounded to 4 places.
ORIGINAL_LSTM_LOG: dict[int, tuple[float, float, float, float]] = {
    1: (1.2922, 0.4161, 1.2715, 0.4416),
    2: (1.2611, 0.4218, 1.2694, 0.4416),
    3: (1.2592, 0.4251, 1.2682, 0.4481),
    4: (1.2557, 0.4332, 1.2618, 0.4675),
    5: (1.2496, 0.4520, 1.2513, 0.4675),
    6: (1.2209, 0.4650, 1.2013, 0.5130),
    7: (1.1240, 0.5440, 1.0935, 0.5779),
    8: (1.0539, 0.5700, 1.0808, 0.5519),
    9: (1.0205, 0.5912, 1.1122, 0.5325),
    10: (0.9683, 0.6287, 1.1163, 0.5844),
}

#: The group's comparison of the two models' dev accuracy: LSTM 46.75% against
#: Transformer 57.14% (the LSTM's figure is its epoch 4-5 accuracy, not its best, 58.44% at 10).
NOTEBOOK_LSTM = "the notebook's markdown cell after its training curves"
REPORT_LSTM_VS_TRANSFORMER = {
    "lstm": Figure(0.4675, "46.75%", NOTEBOOK_LSTM),
    "transformer": Figure(0.5714, "57.14%", NOTEBOOK_LSTM),
}


def is_course_corpus(corpus: dict | None) -> bool:
    """Whether a build's manifest corpus is the course's own evidence.json, the one case in which
    the course's retrieval figures and the build's should coincide.

    By its md5 when the manifest records one; otherwise (manifests record kind, source and
    passage count) an evidence build of exactly the course's 1,208,827 passages counts as it.

    Parameters
    ----------
    corpus : dict or None
        The manifest's ``"corpus"`` entry (``kind``, ``source``, ``passages``, ``md5``...).

    Returns
    -------
    bool
    """
    if not corpus or corpus.get("kind") != "evidence":
        return False
    if corpus.get("md5") is not None:
        return corpus["md5"] == EVIDENCE_MD5
    return corpus.get("passages") == EVIDENCE_PASSAGES


def pair(key: str, build_value: Any, close: float | None = None) -> dict:
    """The course's figure ``key`` beside the build's value, for one "course run / this build" cell.

    Parameters
    ----------
    key : str
        A key of :data:`FIGURES`.
    build_value : int, float, str or None
        The same quantity computed from the build (None when the build cannot say).
    close : float, optional
        For a rounded course figure: the largest difference still counted as the same.

    Returns
    -------
    dict
        ``{"course", "course_shown", "source", "build", "same"}``; ``same`` is None when the build
        has no value.
    """
    figure = FIGURES[key]
    same = None
    if build_value is not None:
        if close is None:
            same = build_value == figure.value
        else:
            same = abs(float(build_value) - float(figure.value)) <= close
    return {
        "course": figure.value,
        "course_shown": figure.shown,
        "source": figure.source,
        "build": build_value,
        "same": same,
    }


def corpus_note(corpus: dict | None) -> dict:
    """Whether the course figures should coincide with this build's, and the sentence saying so.

    Returns
    -------
    dict
        ``{"course_corpus": bool, "note": str}``.
    """
    if is_course_corpus(corpus):
        return {
            "course_corpus": True,
            "note": "This build is of the course’s own evidence.json (md5 "
            f"{EVIDENCE_MD5[:8]}…), so each course figure and this build’s should coincide.",
        }
    return {
        "course_corpus": False,
        "note": "This build is not of the course’s evidence.json, so its retrieval figures "
        "(and what follows from them) need not match the course run’s.",
    }


def training_curve(history: list[dict] | None) -> list[dict]:
    """The original run's training curve beside a retrained checkpoint's, epoch by epoch.

    Parameters
    ----------
    history : list of dict or None
        The checkpoint provenance's ``history`` (``epoch``, ``train_accuracy``, ``dev_accuracy``,
        ``dev_correct``, ``saved``).

    Returns
    -------
    list of dict
        One row per epoch: ``{"epoch", "course_train", "course_dev", "train", "dev", "dev_correct",
        "saved"}`` (the checkpoint's entries None where it has no such epoch).
    """
    mine = {int(h["epoch"]): h for h in history or []}
    rows = []
    for epoch, (train, dev) in ORIGINAL_LOG.items():
        h = mine.get(epoch, {})
        rows.append(
            {
                "epoch": epoch,
                "course_train": train,
                "course_dev": dev,
                "train": h.get("train_accuracy"),
                "dev": h.get("dev_accuracy"),
                "dev_correct": h.get("dev_correct"),
                "saved": h.get("saved"),
            }
        )
    return rows


def checkpoint_provenance(checkpoint_dir: Path | None) -> dict | None:
    """The provenance of the checkpoint a build used: the shipped one's (``assets/``), or the
    file beside a trained checkpoint; None when a trained checkpoint has none; a DataError naming
    the file when it cannot be read."""
    path = (ASSETS_DIR if checkpoint_dir is None else Path(checkpoint_dir)) / PROVENANCE_FILE
    if not path.is_file():
        return None
    with damaged(path):  # a file that is not whole JSON: a DataError naming it, not a traceback
        return json.loads(path.read_text(encoding="utf-8"))


def accuracy_note(provenance: dict | None, build_correct: int | None, claims: int) -> str:
    """Why the course's 89/154 (dev, gold evidence, notebook protocol) and this build's differ.

    Parameters
    ----------
    provenance : dict or None
        The build's checkpoint provenance (:func:`checkpoint_provenance`).
    build_correct : int or None
        This build's dev claims right with gold evidence in the notebook protocol.
    claims : int
        Dev claims (154).

    Returns
    -------
    str
    """
    course_correct = FIGURES["dev_gold_notebook_correct"].value
    best_original = max(ORIGINAL_LOG.items(), key=lambda item: item[1][1])
    text = (
        f"The course figure {course_correct}/{claims} (notebook.md §6) is the dev accuracy of the 2026 "
        "explainer’s retrained weights. The notebook set no seed, so every retraining of its recipe ends "
        f"with different weights: the 2024 run’s own best was epoch {best_original[0]} at "
        f"{best_original[1][1]:.4f} ({round(best_original[1][1] * claims)}/{claims})."
    )
    if provenance is None:
        return text + " This build’s checkpoint has no provenance file, so its training is not on record."
    best = next((h for h in provenance.get("history", []) if h["epoch"] == provenance.get("best_epoch")), None)
    text += (
        f" This build’s checkpoint is another retraining (claimtrace’s, seed {provenance.get('seed')}, "
        f"torch {provenance.get('torch')}), which kept its best dev epoch as the notebook did (strictly "
        f"greater accuracy, gold evidence, batches of {BATCH_SIZE})"
    )
    if best is not None:
        text += f": epoch {best['epoch']}, {best['dev_correct']}/{claims}"
    text += "."
    if build_correct is not None and build_correct != course_correct:
        text += f" Hence {build_correct} here, not {course_correct}: different weights, same protocol."
    return text
