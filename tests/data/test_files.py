"""claimtrace.data.files: finding and loading course files; gold passages; demo corpus."""

from __future__ import annotations

import pytest

from claimtrace import errors
from claimtrace.constants import SPLIT_FILES
from claimtrace.data import files as data


def test_course_files_load_with_expected_counts(data_dir):
    counts = {split: len(data.load_claims(split, data_dir)) for split in SPLIT_FILES}
    assert counts == {"train": 1228, "dev": 154, "test": 153, "baseline": 154}


def test_test_claims_have_no_label(data_dir):
    claims = data.load_claims("test", data_dir)
    assert all(c.label is None and c.evidences == () for c in claims.values())


def test_gold_passages_rebuilt(data_dir):
    gold = data.gold_passages(data_dir)
    assert len(gold) == 3443
    assert gold["evidence-67732"].startswith("[citation needed] South Australia has the highest retail price")
    assert gold["evidence-572512"] == '"South Australia has the highest power prices in the world".'


def test_demo_corpus_shape_and_order(data_dir):
    corpus = data.demo_corpus(data_dir)
    ids = list(corpus)
    assert len(corpus) == 5240
    assert len(set(corpus.values())) == 5240
    gold_ids = [i for i in ids if i.startswith("evidence-")]
    assert len(gold_ids) == 3443
    assert ids[:3443] == gold_ids
    assert gold_ids == sorted(gold_ids, key=lambda i: int(i.split("-")[1]))
    assert all(i.startswith(data.DEMO_ID_PREFIX) for i in ids[3443:])
    # The first non-gold sentence is the first CLIMATE-FEVER sentence not used as gold.
    assert ids[3443] == "cf:Extinction risk from global warming:170"


def test_data_dir_precedence(tmp_path, monkeypatch, data_dir):
    monkeypatch.setenv("CLAIMTRACE_DATA", str(data_dir))
    assert data.find_data_dir() == data_dir
    assert data.find_data_dir(data_dir) == data_dir
    with pytest.raises(errors.DataError, match="does not exist"):
        data.find_data_dir(tmp_path / "nowhere")
    monkeypatch.setenv("CLAIMTRACE_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(errors.DataError, match="CLAIMTRACE_DATA"):
        data.find_data_dir()


def test_the_repository_guess_is_the_checkout_not_its_src(tmp_path, monkeypatch):
    repo = data._repo_root()
    assert repo is not None and (repo / "pyproject.toml").is_file() and (repo / "src" / "claimtrace").is_dir()
    shared = repo.parent / "shared" / "data"
    if not (shared / "comp90042-2024").is_dir():
        pytest.skip(f"no data folder beside the repository ({shared})")
    monkeypatch.delenv("CLAIMTRACE_DATA", raising=False)
    monkeypatch.chdir(tmp_path)  # neither ./data nor ../shared/data here
    assert data.find_data_dir() == shared
