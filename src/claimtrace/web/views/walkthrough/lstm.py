"""The claim page's word on the notebook's other model, its LSTM: its verdicts on the claim's
retrieved and (labelled claims) gold evidence, under both protocols, read from the build (the
verdicts stage beside the classifier's; nothing is run for a page), and on a dev claim the words
that pushed its verdict most by each attribution method ``claimtrace attribute`` applied to it."""

from __future__ import annotations

from claimtrace.data.files import Claim
from claimtrace.errors import Missing
from claimtrace.web.views.attribution import lstm_top_words
from claimtrace.web.views.status import missing
from claimtrace.web.views.walkthrough.claim import Section
from claimtrace.workdir.reader import BuildReader, protocol_verdicts

#: What the page says the LSTM is, once, beside its verdicts.
ABOUT_THE_LSTM = (
    "The notebook trained a second classifier, an LSTM (4 layers of 256 over the same 128 ids), "
    "the same way; it reads its verdict at the last of the 128 positions, usually a [PAD]. It never "
    "mixes a claim with its batch-mates, so alone and in batches of 16 it gives the same verdict."
)
#: Why a claim has no LSTM verdict.
NOT_RUN = {
    "typed": "The build holds the LSTM's verdicts for the course's claims only.",
    "train": "The LSTM is not run on the training claims it was trained on (dev and test only).",
}


def lstm_section(build: BuildReader, claim: Claim | None, split: str | None) -> Section:
    """``{"status", "verdicts": {source: {protocol: verdict}}, "label", "about", "words"}``,
    sources in the order the page says them (``retrieved``, then ``gold`` where labelled),
    ``words`` the top words by method on a dev claim (None on others); ``"status": "none"`` with
    a ``reason`` for a typed claim or a training claim, ``"missing"`` before the verdicts stage."""
    if claim is None or split is None:
        return Section({"status": "none", "reason": NOT_RUN["typed"]})
    try:
        stored = build.more_verdicts(split)[claim.id].get("lstm") or {}
    except Missing as err:
        return Section(missing(err.stage, err.reason))
    sources = [s for s in ("retrieved", "gold") if s in stored]
    if not sources:
        return Section({"status": "none", "reason": NOT_RUN["train"]})
    verdicts = {source: protocol_verdicts(stored[source]) for source in sources}
    words = lstm_top_words(build, claim.id) if split == "dev" else None
    return Section(
        {"status": "ok", "verdicts": verdicts, "label": claim.label, "about": ABOUT_THE_LSTM, "words": words}
    )
