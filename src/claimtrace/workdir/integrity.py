"""A workdir's integrity: what a build is of (build.json: its corpus, by content, and its
checkpoint), the file manifest checked before the stages run and completed after each, and the
repair of what is damaged (each damaged file removed so that its stage writes it again, exactly
it). :mod:`claimtrace.workdir.builder` runs the stages between :func:`open_file_manifest` and
:func:`verify_repairs`."""

from __future__ import annotations

import json
import os
import shutil
import sys
import zipfile
from pathlib import Path

import numpy as np
from tqdm import tqdm

from claimtrace.constants import CHECKPOINT_FILE, PROVENANCE_FILE, TABLE_FILE, TRAINING_LOG_FILE, VOCAB_FILE
from claimtrace.errors import DataError
from claimtrace.lib.build_files import atomic_output, read_json, write_atomic
from claimtrace.workdir.layout import FileManifest, Workdir, sha256_of


def log(message: str) -> None:
    tqdm.write(message, file=sys.stderr)


def _checkpoint_record(checkpoint: Path | None) -> dict | None:
    """How build.json names a trained checkpoint: by content (its weights' sha256), not by where
    it was; the build keeps a copy (``Workdir.checkpoint_copy``). None: the shipped one."""
    if checkpoint is None:
        return None
    return {"name": Path(checkpoint).resolve().name, "sha256": sha256_of(Path(checkpoint) / CHECKPOINT_FILE)[0]}


def _same_checkpoint(work: Workdir, recorded, wanted: dict | None, checkpoint: Path | None) -> bool:
    if recorded is None or wanted is None:
        return recorded is wanted
    if isinstance(recorded, str):  # an older build.json: the folder's absolute path
        return checkpoint is not None and Path(recorded).resolve() == Path(checkpoint).resolve()
    return recorded.get("sha256") == wanted["sha256"]


def _same_corpus(work: Workdir, before: dict, description: dict) -> bool:
    if "sha256" in before:
        return (before["kind"], before["passages"], before["sha256"]) == (
            description["kind"],
            description["passages"],
            description["sha256"],
        )
    # an older build.json knew its corpus by absolute path and passage count only
    return (
        before["kind"] == description["kind"]
        and before["passages"] == description["passages"]
        and _corpus_place(work, before) == _corpus_place(work, description)
    )


def _corpus_file(work: Workdir, kind: str | None, source: str) -> Path:
    """Where a recorded corpus lives: the demo corpus is always the workdir's own evidence.json;
    a user's is where build.json names it (relative to the workdir)."""
    return work.demo_evidence if kind == "demo" else work.corpus_path(source)


def _corpus_place(work: Workdir, corpus: dict) -> Path:
    """A recorded corpus's real path (two records of one file name the same place)."""
    return _corpus_file(work, corpus["kind"], corpus["source"]).resolve()


def corpus_change(work: Workdir, files: FileManifest) -> str | None:
    """What ``claimtrace verify`` says when the corpus the build was made from changed since (an
    edit in place: the build is stale), or None: unchanged, not there, or recorded before
    corpora were known by content. The corpus is build.json's, else the manifest's copy of it."""
    try:
        recorded = (
            read_json(work.build_record)["corpus"] if work.build_record.is_file() else (files.build or {})["corpus"]
        )
    except (DataError, KeyError, TypeError):
        return None
    place = _corpus_file(work, recorded.get("kind"), recorded.get("source", ""))
    if recorded.get("kind") != "demo":
        place = place.resolve()  # a user's corpus by its real path; the demo's as the workdir was given
    if "sha256" not in recorded or not place.is_file():
        return None
    now = sha256_of(place)[0]
    if now == recorded["sha256"]:
        return None
    return (
        f"{place}: corpus changed since this workdir was built from it (sha256 {now[:12]}..., the build read "
        f"{recorded['sha256'][:12]}...): run `claimtrace build --workdir {work.root} --corpus-changed` to rebuild over it"
    )


def check_build_record(
    work: Workdir, files: FileManifest, description: dict, checkpoint: Path | None, corpus_changed: bool
) -> FileManifest:
    """Record what the build is of (its corpus, the classifier checkpoint) in build.json, or
    refuse to mix two. The corpus is known by content: the same file edited in place is noticed
    (refused, or with ``corpus_changed`` every stage is rebuilt over the new content); a workdir
    moved or copied, its corpus found again by the same content, is accepted in its new place."""
    wanted = {"corpus": description, "checkpoint": _checkpoint_record(checkpoint)}
    if work.build_record.is_file():
        previous = read_json(work.build_record)
        before = previous["corpus"]
        if not _same_corpus(work, before, description):
            place = _corpus_place(work, before)
            if place != _corpus_place(work, description):
                raise DataError(
                    f"{work.root}: this workdir was built from {before['source']} "
                    f"({before['passages']} passages), not {description['source']} "
                    f"({description['passages']}): use another --workdir"
                )
            was = f"{before['passages']} passages" + (f", sha256 {before['sha256'][:12]}" if "sha256" in before else "")
            now = f"{description['passages']} passages, sha256 {description['sha256'][:12]}"
            if not corpus_changed:
                raise DataError(
                    f"{place}: changed since this workdir was built from it ({was}; now {now}): every stage "
                    "would be stale. Run again with --corpus-changed to rebuild every stage over the new "
                    "content, or use another --workdir"
                )
            log(f"{place}: changed since this workdir was built ({was}; now {now}): rebuilding every stage")
            _clear_workdir(work, keep=place)
            files = FileManifest(work)
        elif not _same_checkpoint(work, previous.get("checkpoint"), wanted["checkpoint"], checkpoint):
            recorded = previous.get("checkpoint")
            name = recorded if isinstance(recorded, str) or recorded is None else recorded.get("name")
            raise DataError(
                f"{work.root}: this workdir's verdicts come from checkpoint {name or 'shipped'}, "
                f"not {'shipped' if checkpoint is None else checkpoint}: use another --workdir"
            )
        elif isinstance(previous.get("checkpoint"), dict):  # the same content: keep its first name
            wanted["checkpoint"] = previous["checkpoint"]
        if (
            work.build_record.is_file() and previous != wanted
        ):  # moved, copied, or written before corpora were known by content
            log(
                f"{work.build_record}: recording the corpus as {description['source']} (sha256 {description['sha256'][:12]})"
            )
            write_atomic(work.build_record, json.dumps(wanted, indent=1))
    if not work.build_record.is_file():
        write_atomic(work.build_record, json.dumps(wanted, indent=1))
    files.build = wanted
    return files


def _clear_workdir(work: Workdir, keep: Path) -> None:
    """Remove every artifact (the corpus ``keep`` excepted): what was built from another content."""
    for path in [*artifact_files_of(work), work.file_manifest]:
        if path.is_file() and path.resolve() != keep:
            path.unlink()
    for folder, _, _ in sorted(os.walk(work.root), key=lambda entry: -len(entry[0])):
        if Path(folder) != work.root and not any(Path(folder).iterdir()):
            Path(folder).rmdir()


def copy_checkpoint(work: Workdir, checkpoint: Path | None) -> None:
    """Keep the trained checkpoint's files in the workdir (written once; the same bytes)."""
    if checkpoint is None or Path(checkpoint).resolve() == work.checkpoint_copy.resolve():
        return
    for name in (CHECKPOINT_FILE, VOCAB_FILE, TABLE_FILE, PROVENANCE_FILE, TRAINING_LOG_FILE):
        source, copy = Path(checkpoint) / name, work.checkpoint_copy / name
        if source.is_file() and not copy.is_file():
            with atomic_output(copy) as temporary:
                shutil.copyfile(source, temporary)


def open_file_manifest(work: Workdir) -> FileManifest:
    """The workdir's manifest, checked in full (size, sha256, item count of every file): each
    damaged or missing file is removed, so that the stages write it again, exactly it. A file the
    manifest does not list (a build made before manifests, or one killed between writing a file
    and recording it) is kept when it reads whole, and recorded after its stage."""
    try:
        files = FileManifest.read(work)
    except DataError as err:
        log(f"{err}; checking every file instead")
        files = None
    if files is None:
        if work.build_record.is_file():
            log(f"{work.root}: built before claimtrace kept a manifest: checking its files and recording them")
        files = FileManifest(work)
    for name, problem in files.problems(full=True).items():
        log(f"{work.at(name)}: {problem}: rebuilding it")
        _remove_piece(work, files, name)
    for path in artifact_files_of(work):
        if files.get(path) is None:
            problem = _unreadable(path)
            if problem is not None:
                log(f"{path}: {problem}: rebuilding it")
                _remove_piece(work, files, work.relative(path))
    return files


def _remove_piece(work: Workdir, files: FileManifest, name: str) -> None:
    """Remove a damaged file so that its stage writes it again. The BM25 index is one piece (a
    folder written whole); build.json is written again from the manifest's copy."""
    path = work.at(name)
    if path == work.build_record and files.build is not None:
        write_atomic(work.build_record, json.dumps(files.build, indent=1))
        return
    files.repaired[name] = files.files.pop(name, None)
    if work.bm25_index in path.parents:
        for other in [n for n in files.files if work.bm25_index in work.at(n).parents]:
            files.repaired[other] = files.files.pop(other)
        shutil.rmtree(work.bm25_index, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _unreadable(path: Path) -> str | None:
    """Why a file the manifest does not list cannot be trusted (it does not read whole), or None."""

    try:
        if path.suffix == ".json":
            json.loads(path.read_text(encoding="utf-8"))
        elif path.suffix == ".jsonl":
            text = path.read_text(encoding="utf-8")
            if text and not text.endswith("\n"):
                return "its last line is cut"
            for line in text.splitlines():
                json.loads(line)
        elif path.suffix == ".npz":
            with np.load(path) as stored:
                for key in stored.files:
                    stored[key]  # reading checks each member's CRC
        elif path.suffix == ".npy":
            np.load(path)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
        return f"damaged ({str(err)[:200] or type(err).__name__})"
    return None


def artifact_files_of(work: Workdir) -> list[Path]:
    """The workdir's artifacts: not a user's corpus kept inside it (never the build's to remove)."""
    try:
        corpus = read_json(work.build_record)["corpus"] if work.build_record.is_file() else None
    except (DataError, KeyError, TypeError):
        corpus = None
    if corpus is None or corpus.get("kind") != "evidence":
        return work.artifact_files()
    own = work.corpus_path(corpus["source"]).resolve()
    return [path for path in work.artifact_files() if path.resolve() != own]


def record_new(work: Workdir, files: FileManifest, items: dict[Path, int] | None = None) -> None:
    """Record every file a stage wrote (each whole: written aside and renamed)."""
    items = items or {}
    added = False
    for path in artifact_files_of(work):
        if files.get(path) is None:
            files.record(path, items.get(path), save=False)
            added = True
    if added or files.build is not None:
        files.save()


def verify_repairs(work: Workdir, files: FileManifest) -> None:
    """After the stages: every recorded file is as recorded, and a rebuilt file is said to be
    the same bytes as the one it replaced (or not: its stage records timings)."""
    problems = files.problems(full=False)  # each file was hashed as it was recorded
    if problems:
        raise DataError(
            "; ".join(f"{work.at(n)}: {p}" for n, p in problems.items()) + ": still damaged after the build"
        )
    for name, before in files.repaired.items():
        now = files.files.get(name)
        if before is None or now is None:
            continue
        same = now["sha256"] == before["sha256"]
        log(f"{work.at(name)}: rebuilt, {'identical to what the build first wrote' if same else 'new content'}")


def recorded_inputs(workdir: Path, checkpoint: str | None) -> tuple[bool, str | None, str | None] | None:
    """(demo, evidence, checkpoint) of the build a workdir holds, for ``claimtrace build
    --workdir DIR`` alone: its corpus where build.json says (relative to the workdir) and the
    copy of its trained checkpoint it keeps. None: the workdir holds no build yet."""
    work = Workdir(workdir)
    if not work.build_record.is_file() and not work.file_manifest.is_file():
        return None
    try:
        recorded = read_json(work.build_record)
    except DataError:  # missing or damaged: the manifest keeps a copy (the build writes it back)
        files = FileManifest.read(work)
        if files is None or files.build is None:
            raise
        recorded = files.build
    corpus = recorded["corpus"]
    if checkpoint is None and isinstance(recorded.get("checkpoint"), dict):
        copy = work.checkpoint_copy / CHECKPOINT_FILE
        if not copy.is_file():
            raise DataError(
                f"{copy}: missing, and it is this workdir's only copy of its trained checkpoint: "
                "run `claimtrace build --checkpoint DIR` with the checkpoint it was built with"
            )
        checkpoint = str(work.checkpoint_copy)
    elif checkpoint is None and isinstance(recorded.get("checkpoint"), str):  # an older build.json
        checkpoint = recorded["checkpoint"]
    if corpus["kind"] == "demo":
        return True, None, checkpoint
    source = work.corpus_path(corpus["source"])
    if not source.is_file():
        raise DataError(
            f"{source}: this workdir's corpus is not there (build.json names it relative to the workdir): "
            "give --evidence FILE"
        )
    return False, str(source), checkpoint
