"""The JSON bytes every answer sends (web/encoding.py): read back, the standard library's values."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claimtrace.web.encoding import encode

_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**63), 2**63 - 1),
        st.floats(allow_nan=False, allow_infinity=False),
        st.floats(allow_nan=False, allow_infinity=False, width=32),
        st.text(st.characters(exclude_categories=["Cs"]), max_size=12),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=30,
)


@settings(max_examples=500, derandomize=True, deadline=None)
@given(_VALUES)
def test_any_value_reads_back_as_the_standard_librarys_json(value):
    """Every number, string, key and nesting read back exactly as the standard library's own
    compact JSON of it (the floats: the same doubles, bit for bit)."""
    ours, standard = encode(value), json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    assert json.loads(ours) == json.loads(standard)


def test_a_typed_tokens_share_keeps_all_its_digits():
    share = float(np.float32(0.1)) / 128
    assert json.loads(encode({"contribution": [share, 1e-7, -0.0]})) == {"contribution": [share, 1e-7, -0.0]}
    assert encode([1e-7]) == b"[1e-7]" and encode([0.1]) == b"[0.1]"


def test_what_the_fast_writer_refuses_is_written_as_before():
    assert encode({"id": "\udc80"}) == b'{"id":"\\udc80"}'  # a lone surrogate: \u escapes, valid JSON
    assert encode([2**70]) == b"[1180591620717411303424]"  # past 64 bits
    assert encode({1: "é", None: 2}) == '{"1":"é","null":2}'.encode()  # keys as the standard library writes them
    assert encode([np.float64(0.25)]) == b"[0.25]"  # numpy's float64 is a float


def test_json_has_no_nan_so_none_is_written():
    assert encode([math.nan, math.inf]) == b"[null,null]"


@pytest.mark.parametrize("value", [np.int64(3), np.float32(0.5), object()])
def test_what_json_cannot_hold_is_refused(value):
    with pytest.raises(TypeError, match="not JSON serializable"):
        encode({"x": value})
