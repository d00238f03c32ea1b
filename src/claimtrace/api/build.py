"""A build, opened for Python, and its claims' traces, read through the one reader
(:class:`claimtrace.workdir.reader.BuildReader`) and the site's data
(:class:`claimtrace.web.site_data.SiteData`): a trace here is the site's trace of the same claim
(the claim page's data, or the live page's for a typed text), with its verdicts, each token's
share, the retrieved passages and the filter's kept table as plain values."""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path
from typing import Any

import orjson

from claimtrace.data.files import find_data_dir
from claimtrace.errors import DataError, Missing
from claimtrace.evaluation.sweep import RULES
from claimtrace.explain.counterfactuals.report import counterfactuals as find_counterfactuals
from claimtrace.explain.retrieval import NOTEBOOK_RULE, rule_named
from claimtrace.web import pages
from claimtrace.web.encoding import encode
from claimtrace.web.notebook import notebook_page, notebook_renderer, notebook_template
from claimtrace.web.render import Renderer
from claimtrace.web.site_data import SiteData, UnknownClaim
from claimtrace.web.typed_claims import BadText
from claimtrace.workdir.location import default_workdir
from claimtrace.workdir.reader import BuildReader

__all__ = ["Build", "Trace", "open_build", "data_folder"]


class Build:
    """A finished (or partly finished) ``claimtrace build`` folder.

    ``claim(claim_id)`` and ``trace(text, rule="notebook")`` give a :class:`Trace`;
    ``root`` is the folder, ``data_dir`` the data folder it is read with; ``reader`` is the
    build reader every command and page reads it through."""

    def __init__(self, reader: BuildReader):
        self.reader = reader
        self.site_data = SiteData(reader)

    @property
    def root(self) -> Path:
        return self.reader.root

    @property
    def data_dir(self) -> Path:
        return self.reader.data_dir

    @cached_property
    def renderer(self) -> Renderer:
        """The site's renderer in notebook mode, over this build."""
        return notebook_renderer(self.site_data)

    def claim(self, claim_id: str) -> Trace:
        """A course claim (train, dev or test) through every stage: the claim page's trace."""
        if not isinstance(claim_id, str):
            raise DataError(f"claim_id: a claim id such as 'claim-752', not {type(claim_id).__name__}")
        try:
            data = self.site_data.trace(claim_id)
        except UnknownClaim:
            raise DataError(f"{claim_id}: no such claim in the train, dev or test claims of {self.data_dir}") from None
        return Trace(self, data)

    def trace(self, text: str, rule: str = NOTEBOOK_RULE.name) -> Trace:
        """Any text traced as a new claim (no gold, no batch): the live page's trace of it, its
        passages retrieved under the scoring rule ``rule`` (``"notebook"`` or ``"submission"``,
        :data:`claimtrace.evaluation.sweep.RULES`; the live page's ``rule=``)."""
        try:
            chosen = rule_named(rule)
        except ValueError:
            choices = " or ".join(repr(r.name) for r in RULES)
            raise DataError(f"rule: {rule!r} is no scoring rule; give {choices}") from None
        try:
            data = self.site_data.typed_claims.trace_text(text, chosen)
        except BadText as err:
            raise DataError(f"text: {err}") from None
        return Trace(self, data, text=text, rule=chosen.name)

    def claim_ids(self, split: str = "dev") -> list[str]:
        """The ids of a split's claims, in file order."""
        if split not in ("train", "dev", "test"):
            raise DataError(f"split: {split!r} is not one of train, dev, test")
        return list(self.reader.claims(split))

    def info(self) -> dict:
        """What the build holds: each stage's status (the site's ``/api/build.json``)."""
        return self.site_data.build_info()

    def __repr__(self) -> str:
        return f"<claimtrace.Build {self.root}>"

    def _repr_html_(self) -> str:
        return notebook_template(
            self.renderer, "notebook.html", f"The build in {self.root.name}", view="build", b=self.info()
        )


def data_folder(data: str | os.PathLike | None) -> Path:
    """The data folder: ``data``, else as the command line finds it (``$CLAIMTRACE_DATA``,
    ``./data``, ``../shared/data``)."""
    if data is not None and not Path(data).is_dir():
        raise DataError(f"{data}: the data folder given as data= does not exist")
    return find_data_dir(data)


def open_build(workdir: str | os.PathLike | None = None, data: str | os.PathLike | None = None) -> Build:
    """The build in ``workdir`` (default: ``$CLAIMTRACE_WORKDIR``, else ``work/demo``, as the
    command line's ``--workdir``), read with the data folder ``data`` (default: as the command
    line finds it). A DataError names a folder that is not a build."""
    root = Path(workdir if workdir is not None else default_workdir())
    reader = BuildReader(root, data_folder(data))
    reader.build_record()  # a folder that is not a build: a DataError naming it
    return Build(reader)


class Trace:
    """A course claim's trace (``build.claim(id)``) or a typed text's (``build.trace(text, rule)``).

    Every property reads the trace the site shows; :meth:`to_dict` is the page's JSON twin."""

    def __init__(self, build: Build, data: dict, text: str | None = None, rule: str = NOTEBOOK_RULE.name):
        self.build = build
        self._data = data
        self._typed_text = text  # what was typed, for a typed claim (None: a course claim)
        self._rule = rule

    # -- what the claim is -------------------------------------------------------------------------

    @property
    def claim(self) -> dict:
        """The claim: ``{"kind": "claim" | "typed", "id", "text", "split", "label", "gold", ...}``."""
        return self._data["claim"]

    @property
    def claim_id(self) -> str | None:
        """The course claim's id; None for a typed text."""
        return None if self.typed else self.claim.get("id")

    @property
    def typed(self) -> bool:
        return self._typed_text is not None

    @property
    def text(self) -> str:
        return self.claim["text"]

    @property
    def rule(self) -> str:
        """The scoring rule its passages were retrieved under: a typed text's, the one asked for;
        a course claim's, the build's, the notebook's."""
        return self._rule

    @property
    def label(self) -> str | None:
        """The gold label (None for a test claim or a typed text)."""
        return self.claim.get("label")

    # -- the verdict -----------------------------------------------------------------------------

    def _classifier(self) -> dict:
        section = self._data["classifier"]
        if section.get("status") != "ok":
            raise Missing("classifier", self.build.root, section.get("reason", "the classifier stage is not built"))
        return section

    @property
    def verdicts(self) -> dict[str, dict[str, str]]:
        """``{evidence: {protocol: verdict}}``: with the retrieved passages, the claim alone
        (``"alone"``) and, for a course claim, in its notebook batch of 16 (``"notebook"``); with
        the gold passages, both, for a labelled claim."""
        section = self._classifier()
        retrieved = {"alone": section["alone"]["verdict"]}
        if section.get("notebook"):
            retrieved["notebook"] = section["notebook"]["verdict"]
        out = {"retrieved": retrieved}
        if section.get("gold_evidence"):
            out["gold"] = dict(section["gold_evidence"])
        return out

    @property
    def shares(self) -> list[dict[str, Any]]:
        """Each real token of the model input and its exact share of each label's logit (the
        claim alone): ``{"position", "token", "word", "unknown", "SUPPORTS", "REFUTES", ...}``."""
        contributions = self._classifier()["contributions"]
        return [
            {
                "position": token["position"],
                "token": token["token"],
                "word": token["word"],
                "unknown": token["unknown"],
                **dict(zip(contributions["labels"], token["contribution"])),
            }
            for token in contributions["tokens"]
        ]

    @property
    def margin(self) -> dict:
        """The verdict's lead over the runner-up, split into bias, tokens and padding."""
        return self._classifier()["contributions"]["margin"]

    # -- the retrieval ---------------------------------------------------------------------------

    def _retrieval(self) -> dict:
        section = self._data["retrieval"]
        if section.get("status") != "ok":
            raise Missing("retrieval", self.build.root, section.get("reason", "the retrieval stage is not built"))
        return section

    @property
    def passages(self) -> list[dict]:
        """The passages the notebook's retrieval returned (the classifier's evidence), in order."""
        return self._retrieval()["evidences"]

    @property
    def kept(self) -> list[dict]:
        """The filter's table: every passage that passed (the first rows, by score), each with
        whether the max-shared cut kept it, its rank and whether it was returned."""
        return self._retrieval()["passed_rows"]

    @property
    def fallback(self) -> bool:
        """Whether no passage passed and the notebook's fallback gave the evidence."""
        return self._retrieval()["fallback"]

    # -- what comes next -------------------------------------------------------------------------

    def counterfactuals(self, max_words: int = 3) -> dict:
        """The smallest edits that change this verdict, each re-run through the pipeline: what
        ``claimtrace counterfactual CLAIM_ID --json`` (or ``--text``) prints and the page's section
        shows (``explain.counterfactuals.report.counterfactuals``). A course claim's record is read
        from the build when ``claimtrace counterfactual --all`` wrote one with this bound, computed
        otherwise; a typed text is always computed (a few seconds to a minute), under the trace's
        rule (every re-trace too)."""
        if self.typed:
            return find_counterfactuals(self.build.reader, text=self._typed_text, max_words=max_words, rule=self.rule)
        return find_counterfactuals(self.build.reader, claim_id=self.claim_id, max_words=max_words)

    # -- as the site has it ----------------------------------------------------------------------

    def to_dict(self) -> dict:
        """The page's JSON twin, read back: ``/claim/<id>.json`` for a course claim,
        ``/live.json?text=...&rule=...`` (``/api/trace``'s) for a typed text (the same bytes,
        decoded)."""
        return orjson.loads(encode(self._data))

    def __repr__(self) -> str:
        who = f"typed claim (rule {self.rule})" if self.typed else self.claim_id
        try:
            verdict = self.verdicts["retrieved"]
            said = ", ".join(f"{p}: {v}" for p, v in verdict.items())
        except Exception:  # noqa: BLE001 - a repr never fails: a missing stage says so below
            said = "no verdict (classifier not built)"
        return f"<claimtrace.Trace {who} {self.text[:60]!r}: {said}>"

    def _repr_html_(self) -> str:
        if self.typed:
            return notebook_page(
                self.build.renderer,
                pages.LIVE,
                self._data,
                text=self._typed_text,
                error=None,
                rule=rule_named(self.rule),
            )
        return notebook_page(self.build.renderer, pages.CLAIM, self._data)
