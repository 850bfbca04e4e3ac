"""Cooling a plant engineer would recognise: economiser blending over a band, a first-order
lag behind IT and weather (exact on any output grid, carried across streamed windows), and
direct-to-chip liquid cooling."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aiload.errors import InputError
from aiload.facility import OverheadSpec, facility
from aiload.facility.overheads import CoolingLag, cooling_kw

START = pd.Timestamp("2025-03-03", tz="UTC")


def test_lag_of_a_step_is_the_exponential_by_hand():
    lag = CoolingLag(600.0, 600.0)  # Δ = τ
    lag.state_kw = 0.0  # steady at 0 before a step to 1
    got = lag(np.ones(3))
    e = np.exp(-1.0)
    # mean over [kτ, (k+1)τ) of 1 − exp(−t/τ): 1 − e^−k·(1 − e^−1)
    np.testing.assert_allclose(got, [1 - (1 - e), 1 - e * (1 - e), 1 - e**2 * (1 - e)],
                               rtol=1e-14)
    assert lag.state_kw == pytest.approx(1 - e**3, rel=1e-14)


def test_lag_is_exact_on_any_grid_and_carries_its_state_across_windows():
    rng = np.random.default_rng(2)
    quarter = rng.uniform(10.0, 30.0, size=96)  # target, constant over each 15 min
    coarse = CoolingLag(3600.0, 900.0)(quarter)
    fine = CoolingLag(3600.0, 60.0)(np.repeat(quarter, 15))
    # the 1-min lagged series averaged to 15 min is the 15-min lagged series
    np.testing.assert_allclose(fine.reshape(-1, 15).mean(axis=1), coarse, rtol=1e-12)
    pieces = CoolingLag(3600.0, 900.0)
    parts = np.concatenate([pieces(quarter[a:a + 7]) for a in range(0, 96, 7)])
    np.testing.assert_allclose(parts, coarse, rtol=1e-13)
    # energy: what is not yet delivered sits in the state, τ·(u_0 − y_end)
    assert (coarse.sum() * 900 + 3600 * (pieces.state_kw - quarter[0])
            == pytest.approx(quarter.sum() * 900, rel=1e-12))


def test_economiser_band_blends_without_a_step():
    spec = OverheadSpec(cooling="drybulb", cooling_time_constant_s=0.0)
    temp = np.array([17.99, 18.0, 18.01, 22.0, 26.0, 26.01])
    heat = np.full(6, 1000.0)
    cool, econ = cooling_kw(heat, np.zeros(6), spec, temp)
    cop = 4.0 + 0.15 * (35.0 - temp)
    share = np.clip((temp - 18.0) / 8.0, 0, 1)
    np.testing.assert_allclose(cool, 1000.0 * (0.05 + share / cop), rtol=1e-14)
    assert abs(cool[2] - cool[1]) < 0.2  # 0.01 °C moves 1 MW of heat's cooling by < 0.2 kW
    np.testing.assert_array_equal(econ, [True, True, False, False, False, False])


def test_liquid_cooling_by_hand_and_its_pue():
    spec = OverheadSpec(cooling="liquid", cooling_time_constant_s=0.0)
    temp = np.array([10.0, 20.0, 30.0, 36.0])
    heat = np.full(4, 1000.0)
    cool, _ = cooling_kw(heat, np.zeros(4), spec, temp)
    cop = 4.0 + 0.15 * (35.0 - temp)
    air = 0.05 + np.clip((temp - 18.0) / 8.0, 0, 1) / cop
    liquid = 0.03 + np.clip((temp - 27.0) / 8.0, 0, 1) / cop
    np.testing.assert_allclose(cool, 1000.0 * (0.8 * liquid + 0.2 * air), rtol=1e-14)
    with pytest.raises(InputError, match=r"OverheadSpec\.cooling: expected 'pue', 'drybulb' or "
                                         r"'liquid', got 'liquide'\. Did you mean 'liquid'\?"):
        OverheadSpec(cooling="liquide")


def test_campus_cooling_moves_less_than_3_mw_per_15_min_across_the_years_largest_drop():
    # 20 July of the Greensboro TMY: 33.3 -> 22.2 °C within an hour, the largest drop of the
    # year; with the on/off economiser the campus year jumped ~10 MW in one interval
    load = facility("campus-100mw", start=pd.Timestamp("2025-07-18 00:00", tz="Etc/GMT+5"),
                    end="4D", freq="15min", seed=1, progress=False)
    p = load.power
    t = p["drybulb_c"].to_numpy()
    assert np.abs(np.diff(t)).max() > 2.5  # the drop is in the horizon (2.8 °C per 15 min)
    assert np.abs(np.diff(p["cooling_kw"].to_numpy())).max() < 3000.0
    pue = (p["facility_kw"].sum()) / p["it_kw"].sum()
    assert 1.05 < pue < 1.2  # a hot July week of direct-to-chip cooling


def test_the_lag_defaults_to_an_hour_for_weather_models_and_none_for_a_constant_pue():
    assert OverheadSpec(cooling="drybulb").cooling_lag_s == 3600.0
    assert OverheadSpec(cooling="liquid").cooling_lag_s == 3600.0
    assert OverheadSpec(cooling="pue").cooling_lag_s == 0.0  # PUE·IT + losses, every interval
    assert OverheadSpec(cooling="pue", cooling_time_constant_s=900.0).cooling_lag_s == 900.0
    with pytest.raises(InputError, match=r"OverheadSpec\.cooling_time_constant_s"):
        OverheadSpec(cooling_time_constant_s=-1.0)


_WX_HOURS = pd.date_range("2025-03-03", periods=48, freq="h", tz="UTC")


@pytest.mark.parametrize(("weather", "match"), [
    # before: each of these ran, with NaN facility power (gap, 2 h step), a duplicate hour
    # averaged, 293 "°C", or a raw TypeError (DataFrame)
    (pd.Series(np.arange(47.0), index=_WX_HOURS.delete(3)),
     r"no reading between 2025-03-03 02:00:00\+00:00 and 2025-03-03 04:00:00\+00:00"),
    (pd.Series(np.arange(24.0), index=pd.date_range("2025-03-03", periods=24, freq="2h", tz="UTC")),
     r"no reading between .* at least one per hour"),
    (pd.Series(np.arange(49.0), index=_WX_HOURS.append(_WX_HOURS[:1])),
     r"times must strictly increase; 2025-03-03 00:00:00\+00:00 follows"),
    (pd.Series(np.arange(48.0) + 293.15, index=_WX_HOURS),
     r"dry-bulb from 293.15 to 340.15; expected °C within -90 .. 60\. Kelvin\? subtract 273.15"),
    (pd.DataFrame({"temp_air": np.zeros(48)}, index=_WX_HOURS),
     r"got DataFrame \(one column of a DataFrame"),
    (pd.Series(np.zeros(48), index=_WX_HOURS.tz_localize(None)), r"no time zone \(naive\)"),
])
def test_a_weather_series_the_cooling_would_misread_is_refused(weather, match):
    with pytest.raises(InputError, match=rf"OverheadSpec\.weather.*{match}"):
        OverheadSpec(cooling="drybulb", weather=weather)


def test_a_weather_series_across_a_dst_change_is_accepted():
    # hourly in America/Chicago over both switches: every real hour has its reading
    for day in ("2025-03-08", "2025-11-01"):
        idx = pd.date_range(day, periods=72, freq="h", tz="America/Chicago")
        OverheadSpec(cooling="drybulb", weather=pd.Series(20.0, index=idx))
