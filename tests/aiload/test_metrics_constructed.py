"""aiload.metrics on constructed series whose figures are known by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiload.metrics import demand_kw, load_duration_curve, power_spectrum, ramp_rates, summary


def value(table: pd.DataFrame, metric: str, window: str = "") -> float:
    hit = table[(table.metric == metric) & (table.window == window)]
    assert len(hit) == 1, (metric, window)
    return float(hit.value.iloc[0])


def available(table: pd.DataFrame, metric: str, window: str) -> bool:
    return bool(table[(table.metric == metric) & (table.window == window)].available.iloc[0])


def square_wave(period_s=20.0, step_s=0.1, duration_s=600.0, mean_kw=100.0, amp_kw=10.0):
    n = int(round(duration_s / step_s))
    t = np.arange(n) * step_s
    # half a step of phase keeps the switching instants off the sample times
    high = ((t + step_s / 2) % period_s) < period_s / 2
    idx = pd.date_range("2024-03-01", periods=n, freq=pd.Timedelta(seconds=step_s), tz="UTC")
    return pd.Series(np.where(high, mean_kw + amp_kw, mean_kw - amp_kw), index=idx, name="it_kw")


def test_constant_load_factor_one_zero_ramps_and_swings():
    idx = pd.date_range("2024-01-01", periods=2 * 96, freq="15min", tz="Europe/Berlin")
    table = summary(pd.Series(250.0, index=idx, name="facility_kw"), windows=("15min", "1h"))
    assert value(table, "load_factor") == pytest.approx(1.0, abs=1e-12)
    assert value(table, "peak_to_average") == pytest.approx(1.0, abs=1e-12)
    assert value(table, "std_kw") == pytest.approx(0.0, abs=1e-9)
    # 2 days at 250 kW = 12,000 kWh, by hand
    assert value(table, "energy_kwh") == pytest.approx(250.0 * 48.0, rel=1e-12)
    for metric in ("ramp_up_max_kw_per_s", "ramp_down_max_kw_per_s", "ramp_up_p95_kw_per_s"):
        assert value(table, metric, "1h") == 0.0
    assert value(table, "ramp_events_per_h", "1h") == 0.0
    assert value(table, "swing_max_kw", "1h") == pytest.approx(0.0, abs=1e-9)
    assert value(table, "hours_above_fraction_of_peak_h", "90%") == pytest.approx(48.0)


def test_linear_ramp_has_known_rate_and_swing():
    # 1 kW/s for 10 min, sampled irregularly: R_delta = 1 kW/s for every delta
    rng = np.random.default_rng(0)
    t = np.cumsum(rng.uniform(0.5, 1.5, 600))
    t -= t[0]
    idx = pd.to_timedelta(t, unit="s").rename("elapsed")
    s = pd.Series(50.0 + 1.0 * t, index=idx, name="p_kw")
    table = summary(s, windows=("5s", "1min"))
    for w in ("5s", "1min"):
        assert value(table, "ramp_up_p95_kw_per_s", w) == pytest.approx(1.0, rel=1e-9)
        assert value(table, "ramp_up_max_kw_per_s", w) == pytest.approx(1.0, rel=1e-9)
        assert value(table, "ramp_down_max_kw_per_s", w) == 0.0
    assert value(table, "swing_max_kw", "1min") == pytest.approx(60.0, abs=1.5)  # one sample gap
    # trapezoid of a straight line is exact: mean of the two ends times the span
    span_h = t[-1] / 3600.0
    assert value(table, "energy_kwh") == pytest.approx((50.0 + 50.0 + t[-1]) / 2 * span_h, rel=1e-12)
    # time at or above 90 % of the peak is the last 10 % of the rise, exactly
    peak = 50.0 + t[-1]
    assert value(table, "hours_above_fraction_of_peak_h", "90%") == pytest.approx(0.1 * peak / 3600.0)


def test_square_wave_ramps_swings_and_fundamental():
    s = square_wave()
    table = summary(s, windows=("1s", "5s", "1min"))
    # a 20-kW step inside one 0.1-s interval: over a window w the ramp is 20 kW / w
    assert value(table, "ramp_up_max_kw_per_s", "1s") == pytest.approx(20.0)
    assert value(table, "ramp_down_max_kw_per_s", "5s") == pytest.approx(4.0)
    assert value(table, "swing_max_kw", "5s") == pytest.approx(20.0)
    # a whole number of periods: ramps over 60 s vanish, 1-min swing still 20 kW
    assert value(table, "ramp_up_max_kw_per_s", "1min") == 0.0
    assert value(table, "swing_max_kw", "1min") == pytest.approx(20.0)
    # 1-s ramp events: each up-switch is seen at 10 labels (1 s / 0.1 s); the wave starts
    # high, so it switches up at 20, 40, ..., 580 s: 29 times in 10 min
    assert value(table, "ramp_events_per_h", "1s") == pytest.approx(29 * 10 / (600 / 3600), rel=1e-9)
    # Fourier series of a square wave of amplitude A: fundamental sine amplitude 4A/pi,
    # RMS 4A/(pi sqrt 2); the 0.01-0.1 Hz band holds only the 0.05 Hz fundamental
    rms_fund = 4 * 10.0 / (np.pi * np.sqrt(2))
    assert value(table, "osc_rms_kw", "0.01-0.1Hz") == pytest.approx(rms_fund, rel=0.01)
    # odd harmonics 3..19 fall in 0.1-1 Hz: RMS^2 = sum (4A / (k pi))^2 / 2
    k = np.arange(3, 20, 2)
    rms_mid = np.sqrt(np.sum((4 * 10.0 / (k * np.pi)) ** 2 / 2))
    assert value(table, "osc_rms_kw", "0.1-1Hz") == pytest.approx(rms_mid, rel=0.03)
    # dominant period 20 s, within one frequency bin of the Welch estimate
    period = value(table, "dominant_period_s", "rank 1")
    psd = power_spectrum(s)
    df = psd.index[1] - psd.index[0]
    assert abs(1 / period - 1 / 20.0) <= df


def test_energy_interval_exact_and_demand_conserves_it():
    rng = np.random.default_rng(3)
    idx = pd.date_range("2024-01-31 22:00", periods=4 * 3600 // 20, freq="20s", tz="UTC")
    s = pd.Series(rng.uniform(100, 200, idx.size), index=idx, name="x_kw")
    table = summary(s)
    assert value(table, "energy_kwh") == pytest.approx(s.sum() * 20 / 3600, rel=1e-12)
    demand = demand_kw(s)
    # 20-s means, 45 per clock quarter hour: pandas' resample is the independent check
    ref = s.resample("15min").mean()
    pd.testing.assert_series_equal(demand, ref.rename("demand_kw"), check_freq=False, rtol=1e-12)
    assert demand.sum() * 0.25 == pytest.approx(value(table, "energy_kwh"), rel=1e-12)
    # monthly peaks split at the month change, in the series' time zone
    jan = value(table, "demand_15min_peak_kw", "2024-01")
    feb = value(table, "demand_15min_peak_kw", "2024-02")
    assert jan == pytest.approx(ref[ref.index.month == 1].max())
    assert feb == pytest.approx(ref[ref.index.month == 2].max())


def test_demand_of_point_samples_is_trapezoid_exact():
    t = np.array([0.0, 100.0, 700.0, 950.0, 1900.0])
    p = np.array([10.0, 30.0, 30.0, 0.0, 20.0])
    idx = pd.Timestamp("2024-05-01", tz="UTC") + pd.to_timedelta(t, unit="s")
    demand = demand_kw(pd.Series(p, index=idx, name="p_kw"))
    # by hand: block [0, 900): 0.5*(10+30)*100 + 30*600 + 0.5*(30+6)*200 = 23,600 kJ
    # (P(900) = 30 - 30 * 200/250 = 6); block [900, 1800): 0.5*(6+0)*50 + 0.5*(0+18.947)*850
    assert demand.iloc[0] == pytest.approx(23600.0 / 900.0)
    p1800 = 20.0 * 850.0 / 950.0
    assert demand.iloc[1] == pytest.approx((0.5 * 6 * 50 + 0.5 * p1800 * 850) / 900.0)
    assert len(demand) == 2


def test_resolution_is_respected():
    idx = pd.date_range("2024-01-01", periods=24 * 60, freq="1min", tz="UTC")
    s = pd.Series(np.linspace(1, 2, idx.size), index=idx, name="x_mw")
    table = summary(s)
    # a 1-s ramp from 1-min data is not available, neither is any band (Nyquist 1/120 Hz)
    for w in ("1s", "5s", "10s"):
        assert not available(table, "ramp_up_p95_kw_per_s", w)
        assert not available(table, "swing_max_kw", w)
    assert np.isnan(value(table, "ramp_up_p95_kw_per_s", "1s"))
    assert "shorter than the step 60 s" in table[table.window == "1s"].note.iloc[0]
    assert available(table, "ramp_up_p95_kw_per_s", "1min")
    assert not available(table, "osc_rms_kw", "0.01-0.1Hz")
    assert "Nyquist" in table[table.metric == "osc_rms_kw"].note.iloc[0]
    # 1-s data: 2 Hz lies above the 0.5 Hz Nyquist frequency
    idx = pd.date_range("2024-01-01", periods=3600, freq="1s", tz="UTC")
    table = summary(pd.Series(1.0 + np.sin(np.arange(3600) / 7.0) ** 2, index=idx, name="x_kw"))
    assert not available(table, "osc_rms_kw", "1-5Hz")
    assert not available(table, "osc_rms_kw", "0.1-1Hz")
    assert available(table, "osc_rms_kw", "0.01-0.1Hz")
    with pytest.raises(ValueError, match="window 1s is shorter than the step 60 s"):
        ramp_rates(s, "1s")


def test_units_are_converted_to_kw():
    idx = pd.date_range("2024-01-01", periods=10, freq="1s", tz="UTC")
    watts = pd.Series(np.arange(10) * 1000.0, index=idx, name="gpu_w")
    megawatts = pd.Series(np.arange(10) / 1000.0, index=idx, name="gpu_mw")
    a, b = summary(watts, windows=("1s",)), summary(megawatts, windows=("1s",))
    assert value(a, "max_kw") == pytest.approx(9.0)
    assert value(b, "max_kw") == pytest.approx(9.0)
    assert value(a, "ramp_up_max_kw_per_s", "1s") == pytest.approx(1.0)
    explicit = summary(watts.rename("gpu"), unit="W", windows=("1s",))
    assert value(explicit, "mean_kw") == pytest.approx(4.5)


def test_load_duration_curve_matches_dense_sampling():
    t = np.array([0.0, 10.0, 25.0, 30.0, 60.0])
    p = np.array([0.0, 100.0, 40.0, 80.0, 20.0])
    idx = pd.to_timedelta(t, unit="s").rename("elapsed")
    curve = load_duration_curve(pd.Series(p, index=idx, name="p_kw"))
    dense_t = np.linspace(0, 60, 600_001)
    dense = np.interp(dense_t, t, p)
    for level in (10.0, 50.0, 75.0, 95.0):
        hours = np.interp(-level, -curve.to_numpy(), curve.index.to_numpy())
        assert hours * 3600 == pytest.approx(np.mean(dense >= level) * 60.0, abs=0.01)


def test_inputs_are_not_mutated_and_results_repeat():
    s = square_wave(duration_s=120.0)
    before = s.copy()
    first = summary(s, windows=("1s", "10s"))
    second = summary(s, windows=("1s", "10s"))
    pd.testing.assert_series_equal(s, before)
    pd.testing.assert_frame_equal(first, second)


def test_samples_and_intervals_readings_differ_as_defined():
    # the same three numbers as interval means (steps) or point samples (straight lines)
    idx = pd.date_range("2024-01-01", periods=3, freq="1h", tz="UTC")
    s = pd.Series([0.0, 10.0, 0.0], index=idx, name="x_kw")
    steps = summary(s, windows=("1h",))
    lines = summary(s, kind="samples", windows=("1h",))
    assert value(steps, "energy_kwh") == pytest.approx(10.0)  # 3 h: 0 + 10 + 0 kWh
    assert value(lines, "energy_kwh") == pytest.approx(10.0)  # triangle over 2 h: 0.5 * 2 * 10
    assert value(steps, "mean_kw") == pytest.approx(10.0 / 3)
    assert value(lines, "mean_kw") == pytest.approx(5.0)



@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(st.floats(0.5, 400.0), min_size=3, max_size=40),
    values=st.lists(st.floats(0.0, 1e4), min_size=41, max_size=41),
)
def test_demand_conserves_energy_of_point_samples(steps, values):
    # irregular samples, the last one moved to the next whole 15 min (elapsed time from 0)
    t = np.concatenate(([0.0], np.cumsum(steps)))
    blocks = int(np.floor(t[-2] / 900.0)) + 1
    t[-1] = blocks * 900.0
    p = np.asarray(values[: t.size])
    s = pd.Series(p, index=pd.to_timedelta(t, unit="s").rename("elapsed"), name="x_kw")
    demand = demand_kw(s, kind="samples")
    assert len(demand) == blocks
    assert demand.sum() * 0.25 == pytest.approx(np.trapezoid(p, t) / 3600.0, rel=1e-9, abs=1e-9)
