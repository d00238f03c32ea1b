"""claimtrace.course: the notebook's steps a figure cites, and where a reader can open them."""

from __future__ import annotations

from claimtrace import course


def test_every_source_that_cites_a_step_finds_it():
    sources = {figure.source for figure in course.FIGURES.values()} | {course.REPORT_TABLE2, course.REPORT_TABLE1}
    for source in sources:
        step = course.cited_step(source)
        assert step is not None, source
        assert f"§{step.number} ({step.title})" in source or source.startswith("the report's"), source
    assert course.cited_step("the 2026 explainer's site") is None
    assert list(course.STEPS) == list(range(10))


def test_a_step_names_its_cells():
    assert course.STEPS[4].cells_shown == "cells 21, 25 and 52"
    assert course.STEPS[1].cells_shown == "cell 10"
    assert course.STEPS[4].anchor == "step-4"
    assert course.NOTEBOOK_URL.endswith("/blob/main/COMP90042_Wed5PM_Group1.ipynb")


def test_a_damaged_provenance_file_is_named_not_a_traceback(tmp_path):
    """A trained checkpoint's provenance that is not whole JSON is a DataError naming the file
    (pages that read it answer 503 saying so); none there is None."""
    import pytest

    from claimtrace.constants import PROVENANCE_FILE
    from claimtrace.course import checkpoint_provenance
    from claimtrace.errors import DataError

    assert checkpoint_provenance(tmp_path) is None
    (tmp_path / PROVENANCE_FILE).write_text('{"seed": 0,')
    with pytest.raises(DataError, match=str(tmp_path / PROVENANCE_FILE)):
        checkpoint_provenance(tmp_path)
