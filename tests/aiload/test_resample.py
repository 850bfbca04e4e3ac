"""aiload.resample: interval means at 0.1 s - 1 h with energy conserved.

The reference integral is computed a second way: the piecewise-linear curve is refined by
inserting the bin edges (numpy.interp) and integrated with numpy.trapezoid.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiload.errors import InputError
from aiload.resampling import resample
from aiload.traces import read_trace

T0 = pd.Timestamp("2024-03-10 06:00:00", tz="UTC")


def exact_integral(t_s, p, a_s, b_s):
    """Integral over [a, b] of the straight lines joining (t_s, p) [W s]."""
    x = np.union1d(t_s[(t_s > a_s) & (t_s < b_s)], [a_s, b_s])
    return np.trapezoid(np.interp(x, t_s, p), x)


def series(t_s, p, tz="UTC"):
    index = pd.DatetimeIndex(T0 + pd.to_timedelta(t_s, unit="s"), name="time").tz_convert(tz)
    return pd.Series(p, index=index, name="p_w")


def test_hand_example():
    # 100 W at 0 s, 300 W at 2 s: the line gives 150 W over [0, 1) and 250 W over [1, 2)
    out = resample(series(np.array([0.0, 2.0]), np.array([100.0, 300.0])), "1s")
    assert out.tolist() == [150.0, 250.0]
    assert out.index.freq == pd.Timedelta("1s") and out.index[0] == T0 and out.name == "p_w"


@settings(max_examples=80, deadline=None)
@given(
    gaps=st.lists(st.floats(0.01, 3.0), min_size=2, max_size=150),
    values=st.lists(st.floats(0.0, 2000.0), min_size=151, max_size=151),
    freq=st.sampled_from(["100ms", "250ms", "1s", "2s", "5s"]),
    origin=st.sampled_from(["start", "epoch"]),
)
def test_energy_is_conserved_for_irregular_samples(gaps, values, freq, origin):
    t_s = np.concatenate([[0.0], np.cumsum(gaps)]) + 0.123
    p = np.array(values[: t_s.size])
    step_s = pd.Timedelta(freq).total_seconds()
    s = series(t_s, p)
    t_ns = s.index.asi8
    if (t_ns[-1] - t_ns[0]) / 1e9 < 2 * step_s:
        return
    out = resample(s, freq, origin=origin, fill="interpolate")
    t_exact = (t_ns - t_ns[0]) / 1e9  # the ns times actually in the index
    a = (out.index[0].value - t_ns[0]) / 1e9
    b = a + len(out) * step_s
    expected = exact_integral(t_exact, p, a, b)
    assert out.sum() * step_s == pytest.approx(expected, rel=1e-9, abs=1e-6)
    # only whole bins inside the samples, and no whole bin left out at either end
    assert a >= -1e-9 and b <= t_exact[-1] + 1e-9
    assert a < step_s and b + step_s > t_exact[-1]
    if origin == "epoch":
        assert out.index[0].value % pd.Timedelta(freq).value == 0


def test_trace_from_real_mlperf_node_to_one_minute(data_dir):
    path = data_dir / (
        "mlperf-training-v4.0-smc-power/smc-ac-power/results/8xSMC-H100-SXM-80GB/"
        "llama2_70b_lora/power/result_5742-240517053836692164828_10/node_3.txt"
    )
    trace = read_trace(path)
    out = resample(trace, "1min")
    assert isinstance(out, pd.DataFrame) and list(out.columns) == ["node_3"]
    t = (trace.power_w.index.asi8 - trace.power_w.index.asi8[0]) / 1e9
    a = (out.index[0].value - trace.power_w.index.asi8[0]) / 1e9
    expected = exact_integral(t, trace.power_w["node_3"].to_numpy(), a, a + 60 * len(out))
    assert out["node_3"].sum() * 60 == pytest.approx(expected, rel=1e-9)
    assert len(out) == 5  # the 316 s of samples hold five whole minutes


def test_means_downsample_is_block_average_and_upsample_repeats():
    rng = np.random.default_rng(7)
    idx = pd.date_range("2024-06-01", periods=7200, freq="1s", tz="Europe/Berlin", name="time")
    s = pd.Series(rng.uniform(500, 900, idx.size), index=idx)
    down = resample(s, "15min")
    np.testing.assert_allclose(down.to_numpy(), s.to_numpy().reshape(8, 900).mean(axis=1), rtol=1e-12)
    assert down.index.tz == s.index.tz and down.index.freq == pd.Timedelta("15min")
    up = resample(down, "100ms")
    np.testing.assert_allclose(up.to_numpy(), np.repeat(down.to_numpy(), 9000), rtol=1e-12)
    assert up.sum() * 0.1 == pytest.approx(s.sum() * 1.0, rel=1e-12)


def test_means_non_integer_ratio_conserves_energy():
    idx = pd.timedelta_range(0, periods=90, freq="20s", name="elapsed")
    s = pd.Series(np.arange(90, dtype=float) * 10 + 100, index=idx)
    out = resample(s, "30s")
    assert out.index.name == "elapsed" and isinstance(out.index, pd.TimedeltaIndex)
    assert len(out) == 60 and out.sum() * 30 == pytest.approx(s.sum() * 20, rel=1e-12)
    # the first 30-s bin = 20 s at 100 W and 10 s at 110 W
    assert out.iloc[0] == pytest.approx((20 * 100 + 10 * 110) / 30)


def test_gap_policies():
    t = np.array([0.0, 1, 2, 3, 30, 31, 32, 33])
    p = np.array([100.0, 100, 100, 100, 300, 300, 300, 300])
    s = series(t, p)
    with pytest.raises(InputError, match=r"1 gap\(s\) longer than max_gap=10 s; the first is 27 s.*fill="):
        resample(s, "1s")
    interp = resample(s, "1s", fill="interpolate")
    zero = resample(s, "1s", fill="zero")
    nan = resample(s, "1s", fill="nan")
    assert interp.sum() == pytest.approx(3 * 100 + 27 * 200 + 3 * 300)
    assert zero.sum() == pytest.approx(3 * 100 + 3 * 300)
    assert nan.isna().sum() == 27 and nan.iloc[:3].tolist() == [100.0] * 3
    assert resample(s, "1s", max_gap="30s").equals(interp)


@pytest.mark.parametrize(
    ("freq", "match"),
    [("10ms", r"outside the supported range 0.1 s to 3600 s"), ("2h", "outside"), ("banana", "not a time step")],
)
def test_freq_out_of_range(freq, match):
    with pytest.raises(InputError, match=match):
        resample(series(np.arange(10.0), np.ones(10)), freq)


def test_bad_inputs_are_named():
    naive = pd.Series([1.0, 2.0], index=pd.to_datetime(["2024-01-01 00:00", "2024-01-01 00:01"]))
    with pytest.raises(InputError, match=r"no time zone.*tz_localize"):
        resample(naive, "1s")
    with pytest.raises(InputError, match=r"times must strictly increase; label 2"):
        resample(series(np.array([0.0, 2, 1, 3]), np.ones(4)), "1s")
    with pytest.raises(InputError, match=r"1 NaN value\(s\), first in column 'p_w'"):
        resample(series(np.arange(4.0), np.array([1.0, np.nan, 1, 1])), "1s")
    with pytest.raises(InputError, match=r"span 1 s and hold no whole output bin of 60 s aligned to origin='start'"):
        resample(series(np.array([0.0, 1.0]), np.ones(2)), "1min")


def test_dst_change_keeps_bins_in_real_time():
    # 2024-03-10 07:00 UTC is 02:00 -> 03:00 in New York: one real hour, no lost bins
    s = series(np.arange(0, 3 * 3600 + 1, 10.0), np.full(1081, 400.0), tz="America/New_York")
    out = resample(s, "1h")
    assert len(out) == 3 and (out == 400.0).all()
    assert str(out.index.tz) == "America/New_York"


def test_combined_trace_is_resampled_as_interval_means(data_dir):
    """Brute force: each 2.007-s mean repeated on a 1-ms grid, then summed per minute."""
    trace = read_trace(
        data_dir / "mlperf-training-v4.0-smc-power/smc-ac-power/results/8xSMC-H100-SXM-80GB/"
        "llama2_70b_lora/power/result_5742-240517053836692164828_10"
    )
    step_ms = round(trace.meta.extra["grid_step_s"] * 1000)
    out = resample(trace, "1min")
    fine = np.repeat(trace.power_w.to_numpy(), step_ms, axis=0)
    expected = fine[: len(out) * 60_000].reshape(len(out), 60_000, -1).mean(axis=1)
    np.testing.assert_allclose(out.to_numpy(), expected, rtol=1e-9)


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(st.floats(0.0, 5000.0), min_size=20, max_size=400),
    src_ms=st.sampled_from([100, 250, 1000, 2007, 60_000]),
    dst_ms=st.sampled_from([100, 300, 1000, 7000, 900_000]),
    offset_ms=st.integers(0, 59_999),
)
def test_means_conserve_energy_for_any_ratio(values, src_ms, dst_ms, offset_ms):
    """Brute force: every source mean repeated on a 1-ms grid, then cut into output bins."""
    p = np.array(values)
    start = T0 + pd.Timedelta(offset_ms, "ms")
    idx = pd.date_range(start, periods=p.size, freq=pd.Timedelta(src_ms, "ms"), name="time")
    if p.size * src_ms < 2 * dst_ms:  # may hold no whole epoch-aligned bin
        return
    out = resample(pd.Series(p, index=idx), pd.Timedelta(dst_ms, "ms"), origin="epoch")
    fine = np.repeat(p, src_ms)
    first = (out.index[0] - start) // pd.Timedelta("1ms")
    expected = fine[first : first + len(out) * dst_ms].reshape(len(out), dst_ms).mean(axis=1)
    # exact up to float64 rounding of the cumulative energy, whose magnitude is set by the
    # largest values in the series, not by the bin at hand
    np.testing.assert_allclose(out.to_numpy(), expected, rtol=1e-9, atol=1e-12 * p.max() * p.size)
    assert out.index[0].value % (dst_ms * 1_000_000) == 0


def test_daily_means_across_a_dst_change_are_refused_not_shifted():
    # local midnights of America/Chicago: 9 March 2025 lasts 23 h, but pandas reports freq 'D'
    # as 24 h; taking it at its word moved the energy of 10 March's first hour to 9 March
    days = pd.date_range("2025-03-07", periods=4, freq="D", tz="America/Chicago")
    with pytest.raises(InputError, match=r"freq 'D' says each interval is 24 h, but labels "
                       r"2025-03-09 00:00:00-06:00 -> 2025-03-10 00:00:00-05:00 are 23 h apart"):
        resample(pd.Series([10.0, 20.0, 30.0, 40.0], index=days), "1h")
    # the same calendar days in UTC are 24 h each: hourly means repeat each day's mean and
    # the energy is the days' energy, 24 h x (10 + 20 + 30 + 40) kW
    utc = pd.Series([10.0, 20.0, 30.0, 40.0], index=days.tz_localize(None).tz_localize("UTC"))
    utc.index.freq = "D"
    hourly = resample(utc, "1h")
    assert len(hourly) == 96 and hourly.sum() * 1.0 == pytest.approx(24 * 100.0)  # x 1 h
    assert hourly.iloc[47] == 20.0 and hourly.iloc[48] == 30.0


@pytest.mark.parametrize("freq", ["MS", "B", "W-SUN"])
def test_calendar_freq_means_are_refused_by_name(freq):
    idx = pd.date_range("2025-01-06", periods=3, freq=freq, tz="UTC")
    with pytest.raises(InputError, match=rf"freq '{freq}' has no fixed length"):
        resample(pd.Series([1.0, 2.0, 3.0], index=idx), "1h")


def test_bare_number_freq_is_not_read_as_nanoseconds():
    s = series(np.arange(10.0), np.ones(10))
    with pytest.raises(InputError, match=r"freq=60 is a bare number without a unit; expected "
                       r"a pandas frequency string such as '60s'"):
        resample(s, 60)


def test_times_in_several_zones_are_named():
    mixed = pd.Series([1.0, 2.0, 3.0], index=pd.Index([
        pd.Timestamp("2025-01-01 00:00", tz="UTC"), pd.Timestamp("2025-01-01 02:00", tz="Europe/Berlin"),
        pd.Timestamp("2025-01-01 03:00", tz="UTC")]))
    with pytest.raises(InputError, match=r"timestamps in several time zones.*utc=True"):
        resample(mixed, "15min")


@pytest.mark.parametrize("day", ["2025-03-09", "2025-11-02"])
@pytest.mark.parametrize("freq", ["1h", "5min", "1s"])
def test_energy_kept_over_a_local_dst_day(day, freq):
    # a 23 h and a 25 h local day at 15 min: the energy computed by hand (value x 0.25 h)
    start = pd.Timestamp(day, tz="America/Chicago")
    idx = pd.date_range(start, start + pd.DateOffset(days=1), freq="15min", inclusive="left")
    values = np.random.default_rng(3).uniform(100.0, 200.0, len(idx))
    out = resample(pd.Series(values, index=idx), freq)
    step_h = pd.Timedelta(freq).total_seconds() / 3600
    assert len(idx) in (92, 100) and out.index.tz == idx.tz
    assert out.sum() * step_h == pytest.approx(values.sum() * 0.25, rel=1e-12)
    assert out.index[-1] + pd.Timedelta(freq) == start + pd.DateOffset(days=1)
