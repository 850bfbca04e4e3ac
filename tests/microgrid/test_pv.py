"""PV availability: yield against pvlib's own ModelChain, time alignment, index mapping."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pvlib
import pytest

import microgrid as mg
from aiload.errors import InputError


@pytest.fixture(scope="module")
def hourly():
    return mg.pv_availability()


def test_annual_yield_matches_pvlib_modelchain(hourly):
    # The same system through pvlib's ModelChain (the reference tool): PVWatts DC with the
    # same losses, PVWatts inverter, Hay-Davies, SAPM temperature, no AOI/spectral loss.
    weather, meta = mg.default_weather()
    location = pvlib.location.Location(meta["latitude"], meta["longitude"], altitude=meta["altitude"])
    system = pvlib.pvsystem.PVSystem(
        surface_tilt=25, surface_azimuth=180,
        module_parameters={"pdc0": 1.0, "gamma_pdc": -0.004},
        inverter_parameters={"pdc0": 1 / 1.2 / 0.96, "eta_inv_nom": 0.96},
        temperature_model_parameters=pvlib.temperature.TEMPERATURE_MODEL_PARAMETERS["sapm"][
            "open_rack_glass_glass"
        ],
        losses_parameters={},
    )
    chain = pvlib.modelchain.ModelChain(
        system, location, aoi_model="no_loss", spectral_model="no_loss",
        losses_model="pvwatts", transposition_model="haydavies",
    )
    mid = weather.copy()
    mid.index = mid.index + pd.Timedelta("30min")  # ModelChain takes the sun at the label
    chain.run_model(mid)
    reference_kwh = float(chain.results.ac.clip(lower=0).sum())
    assert hourly.sum() == pytest.approx(reference_kwh, rel=5e-3)
    # and within the range STACK-NOTES measured for PVWatts on this file (1,369 kWh/kWdc)
    assert hourly.sum() == pytest.approx(1369, rel=0.03)


def test_labels_are_interval_starts(hourly):
    # TMY3 labels are hour-ENDING. After relabelling, the energy centroid of the mean day
    # (interval middles: label + 0.5 h) must sit at solar noon in local standard time:
    # 12 h - (longitude - 15 * TZ) / 15 h - mean equation of time (~0 over a year).
    _, meta = mg.default_weather()
    profile = hourly.groupby(hourly.index.hour).mean()
    centroid_h = float(np.sum(profile.to_numpy() * (profile.index.to_numpy() + 0.5)) / profile.sum())
    days = np.arange(1, 366)
    eot_h = pvlib.solarposition.equation_of_time_spencer71(days).mean() / 60
    solar_noon_h = 12 - (meta["longitude"] - 15 * meta["TZ"]) / 15 - eot_h
    assert centroid_h == pytest.approx(solar_noon_h, abs=0.1)


def test_mapping_to_a_15_minute_index_of_another_year_conserves_energy(hourly):
    index = pd.date_range("2025-01-01", "2026-01-01", freq="15min", tz="UTC", inclusive="left")
    mapped = mg.pv_availability(index=index)
    assert mapped.index.equals(index)
    assert mapped.sum() * 0.25 == pytest.approx(hourly.sum(), rel=1e-9)
    # a 15-min interval inside one weather hour carries that hour's mean: 2025-06-01 17:15
    # UTC is 12:15 at UTC-5, inside the weather hour starting 2023-06-01 12:00
    assert mapped["2025-06-01 17:15"] == pytest.approx(hourly["2023-06-01 12:00"], rel=1e-12)


def test_weather_without_columns_is_refused():
    weather, _ = mg.default_weather()
    with pytest.raises(InputError, match=r"weather lacks column\(s\) \['dni'\]"):
        mg.pv_availability(weather.drop(columns="dni"), latitude=36.1, longitude=-79.95)


def test_naive_target_index_is_refused():
    with pytest.raises(InputError, match="index: the DatetimeIndex has no time zone"):
        mg.pv_availability(index=pd.date_range("2025-01-01", periods=24, freq="1h"))
