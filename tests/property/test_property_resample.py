"""resample under random data and hostile arguments: an InputError naming the argument, or
interval means whose energy equals the exact integral of the input over the output span."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from property_strategies import FAST, assert_clear_error, fast, hostile_values

from aiload import resample
from aiload.errors import AiloadError

T0 = pd.Timestamp("2024-03-31 00:30", tz="Europe/Berlin")  # DST starts at 02:00 local
STEPS = ["100ms", "250ms", "1s", "7s", "1min", "15min"]


def _exact_energy(t_s: np.ndarray, p: np.ndarray, a: float, b: float) -> float:
    """Integral of the straight lines joining (t_s, p) over [a, b], by the trapezoid rule on
    the samples plus the two ends (exact for a piecewise-linear curve)."""
    inner = (t_s > a) & (t_s < b)
    x = np.concatenate([[a], t_s[inner], [b]])
    y = np.interp(x, t_s, p)
    return float(np.trapezoid(y, x))


@FAST
@given(
    gaps_ms=st.lists(st.integers(10, 20_000), min_size=1, max_size=80),
    data=st.data(),
    freq=st.sampled_from(STEPS),
    origin=st.sampled_from(["start", "epoch"]),
)
def test_samples_keep_their_energy(gaps_ms, data, freq, origin):
    n = len(gaps_ms) + 1
    p = np.array(data.draw(st.lists(st.floats(0, 5000, allow_nan=False), min_size=n, max_size=n)))
    t = T0 + pd.to_timedelta(np.r_[0, np.cumsum(gaps_ms)], unit="ms")
    series = pd.Series(p, index=pd.DatetimeIndex(t, name="time"), name="p_w")
    try:
        out = resample(series, freq, kind="samples", fill="interpolate", origin=origin)
    except AiloadError as err:  # e.g. no whole bin inside the samples
        assert_clear_error(err)
        assert "no whole" in str(err)
        event("shorter than one bin")
        return
    event("resampled")
    step_s = pd.Timedelta(freq).total_seconds()
    t_s = (series.index.asi8 - series.index.asi8[0]) / 1e9
    a = (out.index[0].value - series.index.asi8[0]) / 1e9
    b = a + len(out) * step_s
    assert a >= -1e-9 and b <= t_s[-1] + 1e-9  # only bins the samples cover
    assert out.sum() * step_s == pytest.approx(_exact_energy(t_s, p, a, b), rel=1e-9, abs=1e-6)
    assert (out >= -1e-9).all() and str(out.index.tz) == "Europe/Berlin"
    assert pd.Timedelta(out.index.freq) == pd.Timedelta(freq)


@FAST
@given(
    n=st.integers(1, 300),
    seed=st.integers(0, 2**32 - 1),
    src=st.sampled_from(["1s", "10s", "1min"]),
    freq=st.sampled_from(STEPS),
)
def test_interval_means_keep_their_energy(n, seed, src, freq):
    values = np.random.default_rng(seed).uniform(0, 1000, n)
    index = pd.date_range(T0, periods=n, freq=src, name="time")
    series = pd.Series(values, index=index, name="p_kw")
    try:
        out = resample(series, freq, kind="means")
    except AiloadError as err:
        assert_clear_error(err)
        assert "no whole output bin" in str(err)
        return
    step_s, src_s = pd.Timedelta(freq).total_seconds(), pd.Timedelta(src).total_seconds()
    # the input's energy over the output span, from the step function of the means
    a = (out.index[0] - index[0]).total_seconds()
    b = a + len(out) * step_s
    edges = np.arange(n + 1) * src_s
    overlap = np.clip(np.minimum(edges[1:], b) - np.maximum(edges[:-1], a), 0, None)
    assert out.sum() * step_s == pytest.approx(float(values @ overlap), rel=1e-9, abs=1e-6)


@fast(60)
@given(
    freq=st.one_of(hostile_values, st.sampled_from(STEPS)),
    max_gap=st.one_of(st.none(), hostile_values, st.sampled_from(["5s", "-1s", "0s", "NaT"])),
    origin=st.one_of(st.sampled_from(["start", "epoch", "noon"]), hostile_values),
    kind=st.one_of(st.sampled_from(["auto", "samples", "means"]), hostile_values),
    fill=st.one_of(st.sampled_from([None, "interpolate", "zero", "nan", "mean"]), hostile_values),
)
def test_hostile_arguments_are_named_errors_or_valid_results(freq, max_gap, origin, kind, fill):
    index = pd.date_range("2024-01-01", periods=120, freq="1s", tz="UTC", name="time")
    series = pd.Series(np.linspace(10, 20, 120), index=index, name="p_w")
    try:
        out = resample(series, freq, max_gap=max_gap, origin=origin, kind=kind, fill=fill)
    except AiloadError as err:
        assert_clear_error(err)
        named = ("freq", "max_gap", "origin", "kind", "fill", "bin")
        assert any(word in str(err) for word in named), str(err)
        event("refused")
        return
    event("resampled")
    assert np.isfinite(out.to_numpy()).all() or fill == "nan"
    assert out.index.freq is not None
