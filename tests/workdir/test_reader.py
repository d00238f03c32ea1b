"""The build reader (workdir/reader.py): what it reads of a workdir, lazily and each piece once,
checked against the manifest at its first read; what is missing named with the command that
makes it; the classifier's figures from a split's verdicts; a row's predictions."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pytest

from claimtrace.constants import PROTOCOLS
from claimtrace.errors import DataError, Missing
from claimtrace.workdir.reader import BuildReader, protocol_verdicts, source_figures


@pytest.fixture()
def copied(demo_build, tmp_path) -> BuildReader:
    """A reader over a copy of the demo build (the tests change its files)."""
    root = tmp_path / "work"
    shutil.copytree(demo_build.root, root)
    return BuildReader(root, demo_build.data_dir)


def test_a_folder_that_is_not_there_is_named_with_the_command_that_makes_it(tmp_path):
    with pytest.raises(DataError) as raised:
        BuildReader(tmp_path / "nowhere")
    assert str(raised.value) == (
        f"{tmp_path / 'nowhere'}: no such build folder "
        f"(make one with `claimtrace build --demo --workdir {tmp_path / 'nowhere'}`)"
    )


def test_opening_reads_nothing_and_a_piece_not_built_names_its_file_and_what_to_run(demo_build, tmp_path):
    BuildReader(tmp_path)  # an empty folder: nothing is read until asked for
    with pytest.raises(Missing, match=r"not a claimtrace build \(no build.json\): run `claimtrace build` first"):
        BuildReader(tmp_path).retrieval_summary()
    root = tmp_path / "tagged"
    root.mkdir()
    for entry in demo_build.root.iterdir():  # every stage but retrieval's folder
        if entry.name != "retrieval":
            (root / entry.name).symlink_to(entry)
    with pytest.raises(Missing) as raised:
        BuildReader(root, demo_build.data_dir).retrieval_summary()
    assert raised.value.stage == "retrieval"
    assert str(raised.value) == (
        f"{root / 'retrieval' / 'summary.json'}: missing (the build wrote it): run `claimtrace build` to repair"
    )  # the manifest lists it: not "not built yet"


def test_each_piece_is_read_once_on_first_use_and_kept(copied):
    records = copied.retrieval("dev")
    assert copied.retrieval("dev") is records
    assert len(records) == len(copied.claims("dev")) and list(records) == list(copied.claims("dev"))
    (copied.root / "retrieval" / "dev.jsonl").unlink()
    assert copied.retrieval("dev") is records  # kept: not read again
    with pytest.raises(Missing, match="dev.jsonl: missing"):
        BuildReader(copied.root, copied.data_dir).retrieval("dev")


def test_a_piece_not_there_yet_is_looked_for_again(demo_build, tmp_path):
    """A failure is not remembered: a server notices the build completing while it runs."""
    root = tmp_path / "work"
    root.mkdir()
    for entry in demo_build.root.iterdir():
        if entry.name not in ("scoreboard.json", "manifest.json"):
            (root / entry.name).symlink_to(entry)
    reader = BuildReader(root, demo_build.data_dir)
    with pytest.raises(Missing, match=r"scoreboard.json: not built yet: run `claimtrace build --workdir "):
        reader.scoreboard()
    (root / "scoreboard.json").symlink_to(demo_build.root / "scoreboard.json")
    assert reader.scoreboard() == demo_build.scoreboard()


def test_the_first_read_checks_the_bytes_against_the_manifest(copied):
    path = copied.root / "retrieval" / "summary.json"
    text = path.read_text(encoding="utf-8")
    digit = next(i for i, ch in enumerate(text) if ch.isdigit())
    path.write_text(text[:digit] + str((int(text[digit]) + 1) % 10) + text[digit + 1 :], encoding="utf-8")
    with pytest.raises(DataError, match=r"summary.json: damaged \(content changed \(sha256 "):
        copied.retrieval_summary()
    path.write_text(text + " ", encoding="utf-8")
    with pytest.raises(DataError, match=rf"summary.json: damaged \({len(text) + 1} bytes, but the build wrote"):
        copied.retrieval_summary()
    path.write_text(text, encoding="utf-8")  # repaired: read
    assert copied.retrieval_summary()["splits"]["dev"]["claims"] == len(copied.claims("dev"))


def test_once_makes_a_piece_once_across_threads_and_forgets_a_failure(demo_build):
    reader = BuildReader(demo_build.root, demo_build.data_dir)
    made = []

    def slow() -> object:
        made.append(threading.get_ident())
        time.sleep(0.05)  # the other threads arrive while it is being made
        return object()

    results = []
    threads = [threading.Thread(target=lambda: results.append(reader.once("piece", slow))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 1 and len(results) == 8 and all(result is results[0] for result in results)

    def failing() -> object:
        raise Missing("stage", Path("somewhere"), "not built yet")

    with pytest.raises(Missing):
        reader.once("later", failing)
    assert reader.once("later", lambda: "built") == "built"


def test_a_retrievals_records_and_evidence_ids_by_name(demo_build):
    for split in ("dev", "test"):
        assert demo_build.retrieval_records(split, "notebook") is demo_build.retrieval(split)
        assert demo_build.retrieval_records(split, "bm25") is demo_build.bm25_retrieval(split)
        assert demo_build.retrieval_records(split, "cosine-once") is demo_build.variant_retrieval("cosine-once", split)
        ids = demo_build.evidence_ids(split, "bm25")
        assert list(ids) == list(demo_build.claims(split))
        assert ids == {cid: record["evidences"] for cid, record in demo_build.bm25_retrieval(split).items()}


def test_the_classifiers_figures_count_each_protocols_right_verdicts(demo_build):
    claims, verdicts = demo_build.claims("dev"), demo_build.verdicts("dev")
    for source in ("gold", "retrieved"):
        figures = source_figures(claims, verdicts, source)
        assert list(figures) == list(PROTOCOLS)
        for protocol, result in figures.items():
            right = sum(verdicts[cid][source][protocol]["verdict"] == claim.label for cid, claim in claims.items())
            assert (result["correct"], result["claims"]) == (right, len(claims))
            assert result["accuracy"] == right / len(claims)
            assert sum(map(sum, result["confusion"])) == len(claims)
        assert figures == demo_build.classifier_summary()["dev"][source]  # what the stage wrote


def test_protocol_verdicts_of_one_entry():
    entry = {"alone": {"logits": [0.0] * 4, "verdict": "REFUTES"}, "notebook": {"logits": [], "verdict": "SUPPORTS"}}
    assert protocol_verdicts(entry) == {"alone": "REFUTES", "notebook": "SUPPORTS"}


def test_a_claim_is_located_in_its_split(demo_build):
    assert demo_build.locate("claim-752") == ("dev", list(demo_build.claims("dev")).index("claim-752"))
    first_test = next(iter(demo_build.claims("test")))
    assert demo_build.locate(first_test) == ("test", 0)
    assert demo_build.locate("claim-none") is None


def test_a_rows_predictions_in_the_course_shape(demo_build):
    own = demo_build.predictions("dev", "notebook", "notebook", "notebook")
    assert own == demo_build.course_predictions("dev")
    bm25 = demo_build.predictions("test", "bm25", "intended", "alone")
    more = demo_build.more_verdicts("test")
    assert [entry["claim_label"] for entry in bm25.values()] == [
        more[cid]["intended"]["bm25"]["alone"]["verdict"] for cid in bm25
    ]
    assert len(demo_build.predictions("train", "notebook", "notebook", "alone")) == len(demo_build.claims("train"))
    with pytest.raises(DataError, match=r"the build computes bm25\+notebook\+notebook for dev and test only"):
        demo_build.predictions("train", "bm25", "notebook", "notebook")


def test_passage_texts_from_the_builds_store(demo_build):
    corpus = demo_build.passages()
    assert len(corpus) == demo_build.build_record()["corpus"]["passages"] == 5240
    some = demo_build.tagging_summary()["padding_example"]
    assert demo_build.passage_text(some) == corpus.get(some) and some in corpus
    assert demo_build.passage_text("evidence-none") is None and "evidence-none" not in corpus
