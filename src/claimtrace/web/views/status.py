"""What the build holds, for every page: its corpus, each stage's status (built, not built yet,
damaged) and its files against the manifest; and the machine's folders taken out of whatever a
page shows (:func:`public_paths`).

A section of a page whose stage is not built is :func:`missing` (the page says so instead of
failing); a stage with an unreadable or damaged file is ``"damaged"``, naming the file.
"""

from __future__ import annotations

import copy
import re
import time
from pathlib import Path
from typing import Any

from claimtrace import course
from claimtrace.constants import SPLITS
from claimtrace.errors import REPAIR_HINT, DataError, Missing
from claimtrace.workdir.reader import BuildReader


def missing(stage: str, reason: str) -> dict:
    """A section whose stage is not built yet: the stage, and what is missing and how to make it."""
    return {"status": "missing", "stage": stage, "reason": reason}


#: The stage whose files a workdir folder holds (anything else belongs to the build as a whole).
_STAGE_OF_FOLDER = {"tagging": "tagging", "retrieval": "retrieval", "bm25": "bm25", "classifier": "classifier"}


def _file_report(build: BuildReader) -> dict:
    """The build's files against its manifest, by size (a stat each: no file is read, so the
    report stays fast on a 1.2M-passage build; ``claimtrace verify`` checks every sha256)."""
    try:
        manifest = build.file_manifest()
    except DataError as err:
        return {"manifest": "damaged", "reason": str(err)}
    if manifest is None:
        return {
            "manifest": "none",
            "reason": "built before claimtrace kept a manifest: run `claimtrace build` to check and record its files",
        }
    return {"manifest": "ok", "recorded": len(manifest.files), "checked": "size", "damaged": build.file_problems()}


def _stage_problem(stage: str, err: DataError) -> dict:
    """A stage's status when reading it failed: not built (Missing), or a file there but
    unreadable ("damaged", the reason naming it); the other stages still report."""
    if isinstance(err, Missing):
        return missing(err.stage, err.reason)
    return {"status": "damaged", "stage": stage, "reason": str(err)}


#: An absolute path inside a message: a slash not preceded by a word (so "and/or" is not one),
#: then path characters; the last part is its name.
_ABSOLUTE_PATH = re.compile(r"(?<![\w.~])/(?:[^\s/:'\"`()]+/)*([^\s/:'\"`()]+)")


def public_paths(value, root: Path):
    """``value`` (JSON data) with the machine's folders taken out of every string: a path in the
    workdir becomes relative to it (the workdir itself ``.``), any other absolute path its file
    name. The site shows what a build holds, not where this machine keeps it."""
    if isinstance(value, dict):
        return {key: public_paths(item, root) for key, item in value.items()}
    if isinstance(value, list):
        return [public_paths(item, root) for item in value]
    if not isinstance(value, str):
        return value
    for prefix in dict.fromkeys((str(root.resolve()), str(root))):
        value = re.sub(re.escape(prefix) + r"(/|(?![^\s:'\"`()]))", lambda found: "" if found.group(1) else ".", value)
    return _ABSOLUTE_PATH.sub(lambda found: found.group(1), value)


def _stage_statuses(build: BuildReader, brief: bool) -> dict[str, Any]:
    """Each stage's status, from reading its files (``brief``: only what every page needs; else
    each split's too, so that a damaged one shows)."""
    stages: dict[str, Any] = {}
    probes = {
        "tagging": [build.tagging_summary],
        "retrieval": [build.retriever],
        "classifier": [build.classifier_summary],
    }
    if not brief:
        probes["retrieval"] += [lambda s=s: build.retrieval(s) for s in SPLITS]
        probes["classifier"] += [lambda s=s: build.verdicts(s) for s in SPLITS]
    for name, checks in probes.items():
        try:
            for probe in checks:
                probe()
            stages[name] = {"status": "ok"}
        except DataError as err:
            stages[name] = _stage_problem(name, err)
    return stages


def _with_damaged_files(stages: dict[str, Any], files: dict) -> None:
    """A stage with a damaged file is not "ok": its status names the file (the first one)."""
    for name, problem in files.get("damaged", {}).items():
        stage = _STAGE_OF_FOLDER.get(name.split("/")[0], "build")
        if stages.get(stage, {}).get("status", "ok") == "ok":
            stages[stage] = {
                "status": "damaged",
                "stage": stage,
                "reason": f"{name}: damaged ({problem}): {REPAIR_HINT}",
            }


def _or_none(read):
    """What ``read()`` gives, or None when the build cannot give it (not built, or damaged)."""
    try:
        return read()
    except DataError:
        return None


#: A page's brief build status is made again at most this often: it looks at every build file
#: (a good part of a typed claim's trace, all of it holding Python's lock), and a file damaged
#: meanwhile is still reported within the second.
BRIEF_EVERY_SECONDS = 1.0


class BriefBuildInfo:
    """A reader's latest brief build info and when it was made, ``(monotonic seconds, info)``:
    one per reader, kept by it (:meth:`~claimtrace.workdir.reader.BuildReader.once`), so that it
    lives and goes with the reader."""

    def __init__(self):
        self.latest: tuple[float, dict] | None = None


def brief_build_info(build: BuildReader) -> dict:
    """:func:`build_info` ``(build, brief=True)``, what every page carries, made at most once per
    :data:`BRIEF_EVERY_SECONDS` for a reader (each caller gets its own copy)."""
    kept = build.once(("web", "brief_build_info"), BriefBuildInfo)
    now, latest = time.monotonic(), kept.latest
    if latest is None or now - latest[0] >= BRIEF_EVERY_SECONDS:
        latest = kept.latest = (now, build_info(build, brief=True))
    return copy.deepcopy(latest[1])


def build_info(build: BuildReader, brief: bool = False) -> dict:
    """What the build holds: its corpus and each stage's status (``brief``: what every page
    carries; else the whole report of ``/api/build.json``, with each split's retrieval file, the
    checkpoint and the tagging stage's figures)."""
    stages: dict[str, Any] = {}
    try:
        corpus = build.build_record().get("corpus")
    except DataError as err:
        corpus = None
        stages["build"] = _stage_problem("build", err)
    stages.update(_stage_statuses(build, brief))
    files = _file_report(build)
    _with_damaged_files(stages, files)
    info = {
        "workdir": str(build.root),
        "corpus": corpus,
        "stages": stages,
        "files": files,
        "course": course.corpus_note(corpus),
    }
    if not brief:
        info["retrieval_files"] = {s: build.work.retrieval(s).is_file() for s in SPLITS}
        info["checkpoint"] = _or_none(lambda: build.classifier_summary()["checkpoint"])
        info["tagging_summary"] = _or_none(build.tagging_summary)
    return public_paths(info, build.root)  # what the build holds, not where this machine keeps it
