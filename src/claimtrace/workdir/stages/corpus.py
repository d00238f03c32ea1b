"""The corpus a build is of: its passages and description (build.json's ``corpus``), and the
passage store every reader finds a passage's text in."""

from __future__ import annotations

import json
import os
from pathlib import Path

from claimtrace.data import files as data_layer
from claimtrace.data.evidence import iter_evidence
from claimtrace.lib.build_files import write_atomic
from claimtrace.workdir.layout import Workdir, sha256_of
from claimtrace.workdir.passages import PassageStore


def load_corpus(work: Workdir, data_dir: Path, evidence: Path | None) -> tuple[dict[str, str], dict]:
    """The passages of this build (``id -> text`` in file order) and its description: its kind,
    its path relative to the workdir (so that a workdir moved or copied with its corpus still
    finds it), its passage count and the sha256 of its bytes (what the build is of: an edit in
    place changes it)."""
    if evidence is None:
        if not work.demo_evidence.is_file():
            corpus = data_layer.demo_corpus(data_dir)
            write_atomic(work.demo_evidence, json.dumps(corpus, ensure_ascii=False))
        source = work.demo_evidence
        passages = dict(iter_evidence(source, check_md5=False))
        kind = "demo"
    else:
        source = Path(evidence)
        passages = dict(iter_evidence(source))
        kind = "evidence"
    description = {
        "kind": kind,
        "source": os.path.relpath(os.path.abspath(source), os.path.abspath(work.root)).replace(os.sep, "/"),
        "passages": len(passages),
        "sha256": sha256_of(source)[0],
    }
    return passages, description


def build_passage_store(work: Workdir, passages: dict[str, str]) -> None:
    """Every passage's text, found by offset (:class:`claimtrace.workdir.passages.PassageStore`)."""
    if not (work.passage_texts.is_file() and work.passage_index.is_file()):
        PassageStore.write(passages, work.passage_texts, work.passage_index)
