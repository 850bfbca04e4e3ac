"""Trace readers under random and hostile files: a TraceFormatError/InputError naming the
file, or a Trace whose samples are exactly those written, finite and >= 0, at strictly
increasing UTC times."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from property_strategies import FAST, assert_clear_error, hostile_floats

from aiload.errors import AiloadError, InputWarning
from aiload.traces import FORMATS, read_trace

_count = itertools.count()


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("property_traces")


def _new(folder, suffix):
    return folder / f"f{next(_count)}{suffix}"


_plausible_w = st.floats(min_value=0, max_value=2000, allow_nan=False).map(lambda w: f"{w:.3f}")
_hostile_token = st.one_of(
    hostile_floats.map(repr), st.sampled_from(["[N/A]", "", "W", "12,5", "1e3", "-0.0", "0x1F"])
)


@FAST
@given(
    tokens=st.lists(_plausible_w, min_size=0, max_size=12),
    steps_ms=st.lists(st.integers(1, 5000), min_size=12, max_size=12),
    bad_token=st.one_of(st.none(), st.tuples(st.integers(0, 11), _hostile_token)),
    bad_step=st.one_of(st.none(), st.tuples(st.integers(0, 11), st.integers(-500, 0))),
)
def test_nvidia_smi_rows_are_read_exactly_or_refused(folder, tokens, steps_ms, bad_token, bad_step):
    # readings a GPU gives, with at most one hostile value and one clock step back injected
    if bad_token is not None and tokens:
        tokens[bad_token[0] % len(tokens)] = bad_token[1]
    if bad_step is not None:
        steps_ms[bad_step[0]] = bad_step[1]
    t = pd.Timestamp("2024-05-01 12:00:00") + pd.to_timedelta(np.cumsum(steps_ms[: len(tokens)]), unit="ms")
    rows = [f"{s.strftime('%Y/%m/%d %H:%M:%S.%f')[:-3]}, 0, {w} W" for s, w in zip(t, tokens)]
    path = _new(folder, ".csv")
    path.write_text("timestamp, index, power.draw [W]\n" + "\n".join(rows) + "\n")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InputWarning)
            trace = read_trace(path, format="nvidia-smi")
    except AiloadError as err:
        assert_clear_error(err)
        assert str(path) in str(err)
        event("refused")
        return
    event("read")
    values = trace.power_w["gpu0"].to_numpy()
    assert np.isfinite(values).all() and (values >= 0).all()
    assert trace.power_w.index.is_monotonic_increasing and trace.power_w.index.is_unique
    assert str(trace.power_w.index.tz) == "UTC"
    # the samples are the ones written, at the times written (UTC assumed)
    np.testing.assert_allclose(values, np.array([float(w) for w in tokens]), rtol=1e-12)
    assert (trace.power_w.index == t.tz_localize("UTC")).all()


@FAST
@given(data=st.binary(min_size=0, max_size=600), fmt=st.sampled_from([None, *FORMATS]),
       suffix=st.sampled_from([".csv", ".log", ".txt", ".parquet", ".png"]))
def test_random_bytes_in_any_format_are_a_clear_error(folder, data, fmt, suffix):
    path = _new(folder, suffix)
    path.write_bytes(data)
    with pytest.raises(AiloadError) as info:
        read_trace(path, format=fmt)
    assert_clear_error(info.value)
