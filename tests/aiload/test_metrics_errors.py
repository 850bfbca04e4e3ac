"""Bad input gives a clear error: what was received, what was expected, how to fix it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aiload.errors import InputError
from aiload.metrics import Limits, plot_comparison, plot_load_duration, ramp_rates, summary


def series(values=(1.0, 2.0, 3.0), name="x_kw", tz="UTC"):
    idx = pd.date_range("2024-01-01", periods=len(values), freq="1min", tz=tz)
    return pd.Series(np.asarray(values, dtype=float), index=idx, name=name)


def test_empty_series():
    empty = pd.Series([], dtype=float, index=pd.DatetimeIndex([], tz="UTC"), name="x_kw")
    with pytest.raises(InputError, match="the series is empty; expected at least two values"):
        summary(empty)


def test_naive_index_says_how_to_fix():
    with pytest.raises(InputError, match=r"no time zone \(naive\).*tz_localize\('UTC'\)"):
        summary(series(tz=None))


def test_wrong_index_type():
    with pytest.raises(InputError, match="expected a tz-aware DatetimeIndex or a TimedeltaIndex.*got RangeIndex"):
        summary(pd.Series([1.0, 2.0], name="x_kw"))


def test_nan_is_refused_with_its_position():
    with pytest.raises(InputError, match=r"1 NaN or infinite value\(s\), first at 2024-01-01 00:01:00.*interpolate"):
        summary(series((1.0, np.nan, 3.0)))


def test_negative_power_is_refused():
    with pytest.raises(InputError, match=r"1 negative value\(s\), first -2.0.*consumption as positive"):
        summary(series((1.0, -2.0, 3.0)))


def test_unit_missing_conflicting_or_unknown():
    with pytest.raises(InputError, match="cannot tell the unit of series 'power'.*unit='W'"):
        summary(series(name="power"))
    with pytest.raises(InputError, match="unit='W' was given but the name 'x_kw' says 'kW'"):
        summary(series(), unit="W")
    with pytest.raises(InputError, match="unit: got 'hp'; expected one of 'W', 'kW', 'MW'"):
        summary(series(name="p"), unit="hp")


def test_mixed_units_across_inputs():
    a, b = series(name="training_w"), series(name="inference_kw")
    with pytest.raises(InputError, match=r"mixed units across inputs: 'training_w' \(W\), 'inference_kw' \(kW\)"):
        plot_load_duration([a, b])
    with pytest.raises(InputError, match="mixed units across inputs"):
        plot_comparison({"a": a, "b": b})


def test_time_must_increase():
    s = series()
    s.index = s.index[[0, 2, 1]]
    with pytest.raises(InputError, match=r"time labels must increase strictly; label 2 .* Sort the series"):
        summary(s)


def test_dataframe_needs_one_column():
    frame = pd.concat([series(name="it_kw"), series(name="facility_kw")], axis=1)
    with pytest.raises(InputError, match=r"DataFrame with 2 columns.*Pick a column, e.g. df\['facility_kw'\]"):
        summary(frame)
    assert summary(frame[["it_kw"]]).shape[0] > 0


def test_bad_options():
    with pytest.raises(InputError, match="kind='intervals' needs a fixed step.*kind='samples'"):
        s = series((1, 2, 3, 4))
        s.index = s.index[:3].append(pd.DatetimeIndex([s.index[3] + pd.Timedelta("1s")]))
        summary(s, kind="intervals")
    with pytest.raises(InputError, match="kind: got 'means'; expected 'auto', 'intervals' or 'samples'"):
        summary(series(), kind="means")
    with pytest.raises(InputError, match="window: got 'soon'; expected a duration such as '5s'"):
        summary(series(), windows=("soon",))
    with pytest.raises(InputError, match=r"fractions: got 1.5; expected fractions of the peak in \(0, 1\]"):
        summary(series(), fractions=(1.5,))
    with pytest.raises(InputError, match=r"bands: got \(1.0, 0.5\); expected \(low_hz, high_hz\)"):
        summary(series(), bands=((1.0, 0.5),))
    with pytest.raises(InputError, match="ramp_threshold: got -1; expected a positive rate"):
        summary(series(), ramp_threshold=-1)
    with pytest.raises(InputError, match="window 1s is shorter than the step 60 s"):
        ramp_rates(series(), "1s")


def test_limits_validation():
    with pytest.raises(InputError, match=r"Limits.p_max_mw: got -1.0; expected a finite number >= 0"):
        Limits(p_max_mw=-1.0)
    with pytest.raises(InputError, match="p_min_mw=5 is above p_max_mw=1"):
        Limits(p_min_mw=5, p_max_mw=1)
    with pytest.raises(InputError, match="ramp_pct_per_min=10 needs capacity_mw"):
        Limits(ramp_pct_per_min=10)
    with pytest.raises(InputError, match=r"oscillation_mw: got \(0.1, 0.01, 1.0\); expected \(low_hz, high_hz, amplitude_mw\)"):
        Limits(oscillation_mw=((0.1, 0.01, 1.0),))
    with pytest.raises(InputError, match="window: got 'often'"):
        Limits(ramp_window="often")
    limits = Limits(p_max_mw=1.0)
    with pytest.raises(AttributeError):
        limits.p_max_mw = 2.0  # frozen


def test_a_daily_freq_across_dst_is_refused_not_taken_as_24_h():
    # before: duration 119 h but energy 3600 kWh (every day 24 h), mean 30.25 kW, inconsistent
    days = pd.date_range("2025-03-07", periods=5, freq="D", tz="America/Chicago")
    d = pd.Series([10.0, 20.0, 30.0, 40.0, 50.0], index=days, name="x_kw")
    with pytest.raises(InputError, match=r"freq 'D' claims one fixed step, but labels "
                                         r"2025-03-09 00:00:00-06:00 -> 2025-03-10 00:00:00-05:00 "
                                         r"are 23 h apart"):
        summary(d)
    # as point samples the labels' real spacing is used: trapezoid by hand over 119 h
    got = summary(d, kind="samples")
    energy = got.loc[got["metric"] == "energy_kwh", "value"].iloc[0]
    assert energy == pytest.approx(15 * 24 + 25 * 24 + 35 * 23 + 45 * 24, rel=1e-12)


def test_a_microsecond_index_reads_as_the_same_times():
    """pandas keeps a datetime64[us] index in microseconds (Parquet written by other tools,
    pandas 3's default): read as nanoseconds an hour was 3.6 s and the energy 1000 times small."""
    import aiload
    from aiload.metrics import summary

    index = pd.date_range("2025-01-01", periods=48, freq="1h", tz="UTC")
    series = pd.Series(np.linspace(500.0, 1500.0, 48), index, name="facility_kw")
    micro = series.set_axis(index.as_unit("us"))
    got = summary(micro).set_index("metric")
    # by hand: 48 hourly means from 500 to 1500 kW, mean 1000 kW -> 48,000 kWh over 48 h
    assert got.loc["duration_h", "value"] == pytest.approx(48.0, rel=1e-12)
    assert got.loc["energy_kwh", "value"] == pytest.approx(48_000.0, rel=1e-12)
    pd.testing.assert_frame_equal(summary(micro), summary(series))
    quarter = aiload.resample(micro, freq="15min")
    assert quarter.sum() * 0.25 == pytest.approx(48_000.0, rel=1e-12)
