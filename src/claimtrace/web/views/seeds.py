"""The seeds page: the notebook's Transformer and its LSTM retrained under several seeds (the
shipped seed-spread file, :mod:`claimtrace.evaluation.seed_spread`), each seed's dev accuracy
beside the build's own checkpoint of each model, and whether the difference between the two
models survives the seeds' spread, said in one sentence per evidence and protocol.

The file is read on every request, not once per build: it is rewritten while the seeds train.
Nothing is computed here but the build's checkpoints' right verdicts, counted.
"""

from __future__ import annotations

import math

from claimtrace.constants import BATCH_SIZE, EPOCHS
from claimtrace.errors import DataError, Missing
from claimtrace.evaluation import statistics as S
from claimtrace.evaluation.seed_spread import (
    COMMAND,
    MODELS,
    PANELS,
    SEEDS,
    SeedSpread,
    compare_models,
    describe,
    read_seed_spread,
)
from claimtrace.evaluation.significance import verdicts_paired
from claimtrace.web.views.methods import checkpoint_provenance
from claimtrace.web.views.status import public_paths
from claimtrace.workdir.reader import BuildReader

#: Each model's name on the page, and in the build (its scoreboard's).
TITLES = {"transformer": "Transformer", "lstm": "LSTM"}
IN_BUILD = {"transformer": "notebook", "lstm": "lstm"}
EVIDENCE_WORDS = {"gold": "gold evidence", "retrieved": "retrieved evidence"}
PROTOCOL_WORDS = {"notebook": f"in batches of {BATCH_SIZE}", "alone": "each claim alone"}
SHORT_PROTOCOL = {"notebook": f"batches of {BATCH_SIZE}", "alone": "alone"}
#: Where the file is kept in the repository (the page names it; a machine's folders it does not).
SHOWN_PATH = "src/claimtrace/assets/seed_spread.json"


def panel_title(evidence: str, protocol: str) -> str:
    return f"{EVIDENCE_WORDS[evidence]}, {PROTOCOL_WORDS[protocol]}"


def _key(evidence: str, protocol: str) -> str:
    return f"{evidence}-{protocol}"


def _figure(correct: int, claims: int) -> dict:
    interval = S.wilson(correct, claims)
    return {
        "correct": correct,
        "claims": claims,
        "accuracy": correct / claims,
        "lower": interval.lower,
        "upper": interval.upper,
    }


def _right(build: BuildReader, model: str, evidence: str, protocol: str) -> list[bool]:
    """Whether the build's checkpoint of a model is right on each dev claim, in file order."""
    verdicts = build.verdict_of("dev", IN_BUILD[model], evidence, protocol)
    return [verdicts[claim_id] == claim.label for claim_id, claim in build.claims("dev").items()]


def shipped(build: BuildReader, model: str) -> dict:
    """The build's checkpoint of a model beside the seeds: which it is (the shipped one, or the
    one ``build --checkpoint`` trained), its seed, and its dev accuracy on each evidence and
    protocol with its Wilson interval (its right verdicts counted); missing, with why, when the
    build has no such verdicts."""
    trained = model == "transformer" and build.checkpoint_dir() is not None
    seed = (checkpoint_provenance(build, IN_BUILD[model]) or {}).get("seed")  # damaged: the page's 503 names it
    out = {"which": "trained" if trained else "shipped", "seed": seed}
    out["label"] = f"{'this build’s' if trained else 'shipped'}, seed {'?' if seed is None else seed}"
    try:
        dev = {}
        for evidence, protocol in PANELS:
            right = _right(build, model, evidence, protocol)
            dev[_key(evidence, protocol)] = _figure(sum(right), len(right))
    except Missing as err:
        return {**out, "status": "missing", "reason": err.reason}
    except KeyError:  # a build made before it ran this model
        return {
            **out,
            "status": "missing",
            "reason": f"this build has no {TITLES[model]} verdicts: run `claimtrace build`",
        }
    except DataError as err:
        return {**out, "status": "damaged", "reason": str(err)}
    return {**out, "status": "ok", "dev": dev}


def paired(build: BuildReader, evidence: str, protocol: str) -> dict:
    """The build's two checkpoints on the same dev claims, LSTM minus Transformer
    (:func:`~claimtrace.evaluation.significance.verdicts_paired`): ``{"b", "c", "p", "A"}``,
    claims only the LSTM got right, only the Transformer, McNemar's exact p, and the accuracy
    difference with its paired bootstrap interval. Made once per build (a tenth of a second)."""

    def make() -> dict:
        verdicts = {m: build.verdict_of("dev", IN_BUILD[m], evidence, protocol) for m in MODELS}
        both = verdicts_paired(build.claims("dev"), verdicts["lstm"], verdicts["transformer"])
        test = both["mcnemar"]
        return {"b": test["b"], "c": test["c"], "p": test["exact_p"], "A": both["A"]}

    return build.once(("seeds-paired", evidence, protocol), make)


def _spread(values: list[float], seeds: list[int]) -> dict | None:
    """The seeds' spread of one figure (:func:`describe`) and the seeds it is over."""
    described = describe(values)
    return None if described is None else {**described, "seeds": seeds}


def _model(spread: SeedSpread | None, model: str, build_checkpoint: dict) -> dict:
    runs = spread.runs[model] if spread is not None else ()
    trained = [run.seed for run in runs]
    return {
        "name": model,
        "title": TITLES[model],
        "in_build": IN_BUILD[model],
        "trained": trained,
        "count": len(trained),
        "planned": len(SEEDS),
        "untrained": [seed for seed in SEEDS if seed not in trained],
        "runs": [
            {
                "seed": run.seed,
                "epochs": run.epochs,
                "best_epoch": run.best_epoch,
                "seconds": run.seconds,
                "dev": {_key(*panel): run.dev[panel].to_dict() for panel in PANELS},
            }
            for run in runs
        ],
        "spread": {_key(*panel): _spread([run.dev[panel].accuracy for run in runs], trained) for panel in PANELS},
        "shipped": build_checkpoint,
    }


def _seeds_said(described: dict | None) -> str:
    if described is None:
        return "none yet"
    if described["n"] == 1:
        return f"1 ({described['mean']:.3f})"
    return f"{described['n']} ({described['min']:.3f} to {described['max']:.3f})"


def _ranges(t: dict, lstm: dict, overlap: bool) -> str:
    return (
        f"over {t['n']} seeds the Transformer ranges from {t['min']:.3f} to {t['max']:.3f} (mean {t['mean']:.3f}, "
        f"SD {t['sd']:.3f}) and over {lstm['n']} the LSTM from {lstm['min']:.3f} to {lstm['max']:.3f} (mean "
        f"{lstm['mean']:.3f}, SD {lstm['sd']:.3f}), so the two ranges {'overlap' if overlap else 'do not overlap'}"
    )


def _tested(welch: dict) -> str:
    """Welch's test in words: t, df, p, and Holm's p when more than one comparison was made."""
    said = f"Welch’s t-test over the seeds: t = {welch['t']:.2f}, df = {welch['df']:.1f}, p = {welch['p']:.2g}"
    if welch["tested_together"] > 1:
        said += f"; Holm-corrected over the {welch['tested_together']} comparisons here, p = {welch['p_holm']:.2g}"
    return said


def sentence(compared: dict, checkpoints: dict[str, dict], pair: dict | None) -> tuple[str, str]:
    """Whether the LSTM against the Transformer survives the seeds' spread on one evidence and
    protocol, in one sentence with its figures: the build's checkpoints' difference, each
    model's range over its seeds, and Welch's test over them, or what the comparison waits for.
    ``pair``: the checkpoints' McNemar test (:func:`paired`), when the build has both.

    Returns the sentence in two parts, its figures and its conclusion (the page stresses it)."""
    evidence, protocol = compared["evidence"], compared["protocol"]
    title = panel_title(evidence, protocol)
    said = title[0].upper() + title[1:] + ": "
    ours = {m: c["dev"][_key(evidence, protocol)]["accuracy"] for m, c in checkpoints.items() if c["status"] == "ok"}
    if len(ours) == len(MODELS) and pair is not None:
        said += (
            f"the build’s checkpoints differ by {ours['lstm'] - ours['transformer']:+.3f}, LSTM minus Transformer "
            f"({ours['lstm']:.3f} against {ours['transformer']:.3f}; 95% paired bootstrap interval "
            f"[{pair['A']['lower']:+.3f}, {pair['A']['upper']:+.3f}]; McNemar’s exact p = {pair['p']:.2g} on the same "
            "claims); "
        )
    t, lstm = compared["transformer"], compared["lstm"]
    if compared["untested"] == "fewer than 2 seeds":
        return (
            said
            + f"of the {len(SEEDS)} seeds planned, the Transformer has {_seeds_said(t)} and the LSTM {_seeds_said(lstm)}, so ",
            "whether the difference between the two survives the seed spread waits for at least 2 seeds of each.",
        )
    said += _ranges(t, lstm, compared["overlap"])
    if compared["untested"] == "no spread":
        return said + ", and every seed of each model gave the same accuracy: ", "there is no spread to test against."
    welch, difference = compared["welch"], compared["difference"]
    if welch["verdict"] == "more than chance":
        judged = "more than the seeds’ spread accounts for", "the difference survives the seed spread"
    else:
        judged = "which the seeds’ spread can account for", "the difference does not survive the seed spread"
    lower, upper = compared["difference_interval"]
    said += (
        f"; the difference of their means, LSTM minus Transformer, is {difference:+.3f}, 95% interval "
        f"[{lower:+.3f}, {upper:+.3f}], {judged[0]} ({_tested(welch)}): "
    )
    return said, judged[1] + "."


#: The charts' axes step by a twentieth of accuracy.
STEP = 20


def _bounds(models: list[dict], key: str) -> tuple[float, float] | None:
    """The lowest and highest interval bound a panel draws (None when it draws nothing)."""
    figures = [run["dev"][key] for m in models for run in m["runs"]]
    figures += [m["shipped"]["dev"][key] for m in models if m["shipped"]["status"] == "ok"]
    if not figures:
        return None
    return min(f["lower"] for f in figures), max(f["upper"] for f in figures)


def axes(models: list[dict]) -> dict[str, dict]:
    """Each panel's axis: every panel spans the same width of accuracy (the widest any panel
    needs, in twentieths), from a twentieth at or below its own lowest bound, so that a distance
    means the same difference in every panel; the axes need not start at 0, since a dot, not a
    bar's length, stands for each figure. ``{key: {"min", "max"}}``."""
    steps = {}
    for evidence, protocol in PANELS:
        found = _bounds(models, _key(evidence, protocol))
        if found is not None:
            low = math.floor(round(found[0] * STEP, 9))
            steps[_key(evidence, protocol)] = (low, math.ceil(round(found[1] * STEP, 9)))
    span = max((high - low for low, high in steps.values()), default=STEP)
    out = {}
    for evidence, protocol in PANELS:
        low = min(steps.get(_key(evidence, protocol), (0, 0))[0], STEP - span)
        out[_key(evidence, protocol)] = {"min": low / STEP, "max": (low + span) / STEP}
    return out


def _panel(build: BuildReader, models: list[dict], compared: dict, axis: dict) -> dict:
    key = _key(compared["evidence"], compared["protocol"])
    both = all(m["shipped"]["status"] == "ok" for m in models)
    pair = paired(build, compared["evidence"], compared["protocol"]) if both else None
    lead, conclusion = sentence(compared, {m["name"]: m["shipped"] for m in models}, pair)
    return {
        "id": key,
        "evidence": compared["evidence"],
        "protocol": compared["protocol"],
        "title": panel_title(compared["evidence"], compared["protocol"]),
        "short": f"{compared['evidence']}, {SHORT_PROTOCOL[compared['protocol']]}",
        "axis": axis,
        "models": [
            {
                "name": m["name"],
                "title": m["title"],
                "count": m["count"],
                "planned": m["planned"],
                "seeds": [{"seed": run["seed"], **run["dev"][key]} for run in m["runs"]],
                "spread": m["spread"][key],
                "shipped": (
                    {"label": m["shipped"]["label"], "seed": m["shipped"]["seed"], **m["shipped"]["dev"][key]}
                    if m["shipped"]["status"] == "ok"
                    else None
                ),
            }
            for m in models
        ],
        "comparison": compared,
        "checkpoints_paired": pair,
        "lead": lead,
        "conclusion": conclusion,
        "sentence": lead + conclusion,
    }


def _minutes(models: list[dict]) -> int | None:
    """The minutes a seed took on average, every model's together (None before the first)."""
    seconds = [run["seconds"] for m in models for run in m["runs"]]
    return round(sum(seconds) / len(seconds) / 60) if seconds else None


def _corpus(build: BuildReader) -> str:
    try:
        corpus = build.build_record().get("corpus") or {}
    except DataError:
        return "this build’s corpus"
    kind = "the demo corpus" if corpus.get("kind") == "demo" else "its evidence file"
    return f"{kind}, {corpus.get('passages', 0):,} passages"


def seeds_page(build: BuildReader, path=None) -> dict:
    """The page's data (and its JSON twin): the file's state (``"ok"``, ``"missing"``: not
    written yet, ``"damaged"``: the reader's error), each model's seeds and the build's
    checkpoint, a panel per evidence and protocol with the comparison and its sentence, and
    the charts' axis. The machine's folders are taken out of every string."""
    status, reason, spread = "ok", None, None
    try:
        spread = read_seed_spread(path)
    except DataError as err:
        status, reason = "damaged", str(err)
    if spread is None and status == "ok":
        status = "missing"
        reason = f"no seed has been trained yet: `{COMMAND.format(build='BUILD')}` writes {SHOWN_PATH}"
    models = [_model(spread, model, shipped(build, model)) for model in MODELS]
    compared = compare_models(spread)
    drawn = axes(models)
    page = {
        "status": status,
        "reason": reason,
        "file": SHOWN_PATH,
        "seeds": list(SEEDS),
        "epochs": EPOCHS,
        "retrieved_from": None if spread is None else spread.retrieved_from,
        "command": COMMAND.format(build="BUILD") if spread is None else spread.command(),
        "corpus": _corpus(build),
        "complete": not any(m["untrained"] for m in models),
        "waiting": any(m["count"] < 2 for m in models),
        "minutes": _minutes(models),
        "models": models,
        "panels": [_panel(build, models, e, drawn[_key(e["evidence"], e["protocol"])]) for e in compared],
        "tested": sum(entry["welch"] is not None for entry in compared),
        "span": round(drawn[_key(*PANELS[0])]["max"] - drawn[_key(*PANELS[0])]["min"], 10),
    }
    return public_paths(page, build.root)
