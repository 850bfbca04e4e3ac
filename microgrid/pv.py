"""PV availability [kW AC per kWp DC] from a weather year, with a PVWatts-style pvlib chain.

The chain: solar position at the middle of each weather interval -> plane-of-array
irradiance (Hay-Davies transposition) -> SAPM cell temperature -> PVWatts DC power with a
temperature coefficient -> PVWatts system losses -> PVWatts inverter with a DC/AC ratio.
The default weather year is pvlib's bundled TMY3 file ``723170TYA.CSV`` (Greensboro, NC), so
the function runs offline.

TMY3 timestamps are hour-ENDING in a fixed UTC offset; aiload series are labelled by the START
of each interval. The chain therefore works on interval starts, and :func:`pv_availability`
maps the result onto any load index by exact interval-mean integration, so the PV energy
of the year is conserved at any step.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pandas as pd
import pvlib

from aiload._checks import check_finite_values, check_number
from aiload.errors import InputError, InputWarning
from aiload.timeseries import require_tz_aware, step_seconds

__all__ = ["pv_availability", "default_weather", "check_availability", "MAX_KW_PER_KWP"]

#: highest believable PV output per kWp of modules: 1 kW/m2 at standard test conditions is
#: rarely exceeded by more than a few percent (cloud-edge enhancement, cold modules)
MAX_KW_PER_KWP = 1.1


def check_availability(availability: pd.Series, what: str = "pv_availability") -> None:
    """Refuse PV availability outside ``[0, MAX_KW_PER_KWP]`` kW/kWp, naming the first bad label.

    Parameters
    ----------
    availability : pandas.Series
        AC output per kWp of modules [kW/kWp].
    what : str
        Name of the argument, for the message.
    """
    values = check_finite_values(availability, what)
    high = np.flatnonzero(values > MAX_KW_PER_KWP)
    if high.size:
        raise InputError(
            f"{what}: {high.size} value(s) above {MAX_KW_PER_KWP} kW/kWp, first "
            f"{float(values[high[0]])!r} at {availability.index[high[0]]}; one kWp of modules "
            "cannot deliver more. Is it in W/kWp, or kW for the whole array? Divide by the "
            "unit or by the array's kWp."
        )


_REQUIRED = ("ghi", "dni", "dhi", "temp_air", "wind_speed")
#: bounds of believable weather: the air-temperature records (-89.2 and 56.7 degC) with a
#: margin [degC], twice the solar constant [W/m2] and the gust record (113 m/s) [m/s]
MIN_TEMP_AIR_C, MAX_TEMP_AIR_C = -95.0, 65.0
MAX_IRRADIANCE_W_M2 = 2000.0
MAX_WIND_M_S = 120.0
_HOURS_PER_YEAR = 8760


def default_weather() -> tuple[pd.DataFrame, dict]:
    """pvlib's bundled TMY3 year for Greensboro, NC, relabelled to interval starts.

    Returns
    -------
    weather : pandas.DataFrame
        ``ghi, dni, dhi`` [W/m2], ``temp_air`` [degC], ``wind_speed`` [m/s], hourly,
        labelled by interval start in the file's fixed UTC offset (year 2023).
    meta : dict
        The file's header: ``latitude``, ``longitude`` [deg], ``altitude`` [m], ``TZ`` [h].
    """
    path = os.path.join(os.path.dirname(pvlib.__file__), "data", "723170TYA.CSV")
    data, meta = pvlib.iotools.read_tmy3(path, coerce_year=2023, map_variables=True)
    # hour-ending labels -> interval starts; coerce_year put the last hour on 2024-01-01 00:00
    data.index = data.index - pd.Timedelta(hours=1)
    data = data.sort_index()
    data.index.freq = pd.infer_freq(data.index)
    return data[list(_REQUIRED)], meta


def _chain_kw_per_kwp(
    weather: pd.DataFrame,
    *,
    latitude: float,
    longitude: float,
    altitude: float,
    tilt: float,
    azimuth: float,
    gamma_pdc: float,
    dc_ac_ratio: float,
    system_losses_percent: float,
    inverter_efficiency: float,
    check_timing: bool = False,
) -> pd.Series:
    step = pd.Timedelta(seconds=step_seconds(weather.index, "weather"))
    # sun position at the middle of each interval: its irradiance is an interval mean
    mid = weather.index + step / 2
    sun = pvlib.solarposition.get_solarposition(mid, latitude, longitude, altitude=altitude)
    if check_timing:
        _warn_timing(weather, mid, longitude, sun["equation_of_time"])
    dni_extra = pvlib.irradiance.get_extra_radiation(mid)
    poa = pvlib.irradiance.get_total_irradiance(
        tilt,
        azimuth,
        sun["apparent_zenith"].to_numpy(),
        sun["azimuth"].to_numpy(),
        weather["dni"].to_numpy(),
        weather["ghi"].to_numpy(),
        weather["dhi"].to_numpy(),
        dni_extra=dni_extra.to_numpy(),
        model="haydavies",
    )
    poa_global = np.nan_to_num(np.asarray(poa["poa_global"], dtype=float)).clip(min=0.0)
    params = pvlib.temperature.TEMPERATURE_MODEL_PARAMETERS["sapm"]["open_rack_glass_glass"]
    temp_cell = pvlib.temperature.sapm_cell(
        poa_global, weather["temp_air"].to_numpy(), weather["wind_speed"].to_numpy(), **params
    )
    dc_kw = pvlib.pvsystem.pvwatts_dc(poa_global, temp_cell, pdc0=1.0, gamma_pdc=gamma_pdc)
    dc_kw = dc_kw * (1.0 - system_losses_percent / 100.0)
    ac_rating_kw = 1.0 / dc_ac_ratio
    ac_kw = pvlib.inverter.pvwatts(
        dc_kw, pdc0=ac_rating_kw / inverter_efficiency, eta_inv_nom=inverter_efficiency
    )
    ac_kw = np.clip(np.nan_to_num(np.asarray(ac_kw, dtype=float)), 0.0, ac_rating_kw)
    return pd.Series(ac_kw, index=weather.index, name="pv_kw_per_kwp")


#: a weather year whose irradiance-weighted hour angle is further than this from solar noon
#: is shifted in time [deg] (15 deg = 1 h): 0.02 deg for the bundled TMY3, 15 for it read
#: hour-ending
MAX_MEAN_HOUR_ANGLE_DEG = 7.5


def _warn_timing(weather: pd.DataFrame, mid: pd.DatetimeIndex, longitude: float,
                 equation_of_time: pd.Series) -> None:
    """Warn when the irradiance is centred away from solar noon (labels shifted or mis-zoned).

    Over four weeks or more, clouds average out and the GHI-weighted mean hour angle is
    near 0; hour-ending labels read as interval starts put it near +15 deg (1 h late), a
    local clock labelled UTC hours away.
    """
    ghi = weather["ghi"].to_numpy(dtype=float)
    if weather.index[-1] - weather.index[0] < pd.Timedelta(days=28) or not ghi.sum() > 0:
        return
    hour_angle = pvlib.solarposition.hour_angle(mid, longitude, equation_of_time.to_numpy())
    mean_deg = float((ghi * np.asarray(hour_angle)).sum() / ghi.sum())
    if abs(mean_deg) > MAX_MEAN_HOUR_ANGLE_DEG:
        warnings.warn(
            f"pv_availability: the weather's irradiance is centred {mean_deg / 15:+.2f} h from "
            "solar noon (GHI-weighted); its labels look shifted. Label each row by the START "
            "of its interval (TMY files are hour-ending: shift them back one step) in the "
            "right time zone.", InputWarning, stacklevel=4)


def _map_to_index(avail: pd.Series, index: pd.DatetimeIndex) -> pd.Series:
    """Interval means of ``avail`` over the intervals of ``index`` by time of year."""
    require_tz_aware(index, "index")
    if len(index) == 0:
        raise InputError("pv_availability: index is empty; expected the load's index, e.g. "
                         "load_kw.index.")
    step_s = step_seconds(index, "index")
    src_step_h = step_seconds(avail.index, "pv availability") / 3600.0
    n_src = len(avail)
    if abs(n_src * src_step_h - _HOURS_PER_YEAR) > 1e-9:
        raise InputError(
            f"pv_availability: the weather covers {n_src * src_step_h:g} h, expected one "
            f"{_HOURS_PER_YEAR} h year to map onto another index; pass a full weather year"
            + (" (a leap year: drop 29 February and relabel the rest onto a non-leap year, "
               "e.g. w = weather[~((weather.index.month == 2) & (weather.index.day == 29))]; "
               "w.index = pd.date_range('2023-01-01', periods=len(w), freq=w.index[1] - "
               "w.index[0], tz=w.index.tz))." if abs(n_src * src_step_h - 8784) < 1e-9
               else ".")
        )
    # cumulative energy [kWh/kWp] at the edges of the weather intervals
    cum = np.concatenate([[0.0], np.cumsum(avail.to_numpy(dtype=float) * src_step_h)])
    edges_h = np.arange(n_src + 1) * src_step_h
    year_kwh = cum[-1]
    tz = avail.index.tz
    local = index.tz_convert(tz)
    year_start = pd.DatetimeIndex(
        [pd.Timestamp(year=y, month=1, day=1, tz=tz) for y in local.year]
    )
    origin_h = (avail.index[0] - pd.Timestamp(year=avail.index[0].year, month=1, day=1, tz=tz))
    pos_h = (local - year_start).total_seconds().to_numpy() / 3600.0 - origin_h.total_seconds() / 3600.0

    def cumulative(p: np.ndarray) -> np.ndarray:
        # a leap day or a horizon past one year wraps onto the same weather year
        wraps, rest = np.divmod(p, _HOURS_PER_YEAR)
        return wraps * year_kwh + np.interp(rest, edges_h, cum)

    dt_h = step_s / 3600.0
    mean_kw = (cumulative(pos_h + dt_h) - cumulative(pos_h)) / dt_h
    return pd.Series(mean_kw, index=index, name="pv_kw_per_kwp")


def _check_weather_units(weather: pd.DataFrame) -> None:
    """Refuse weather whose values are outside physics or in another unit, naming the column."""
    if (weather[["ghi", "dni", "dhi"]].to_numpy(dtype=float) < 0).any():
        raise InputError(
            "pv_availability: weather irradiance (ghi, dni, dhi) below 0 W/m2; expected "
            "irradiance >= 0. Clip night-time sensor offsets to 0 first."
        )
    for col, low, high, fix in (
        ("temp_air", MIN_TEMP_AIR_C, MAX_TEMP_AIR_C,
         "Is it in kelvin (subtract 273.15) or degF ((F - 32) / 1.8)?"),
        ("ghi", 0.0, MAX_IRRADIANCE_W_M2, "Is it in Wh/m2 per interval longer than 1 h?"),
        ("dni", 0.0, MAX_IRRADIANCE_W_M2, "Is it in Wh/m2 per interval longer than 1 h?"),
        ("dhi", 0.0, MAX_IRRADIANCE_W_M2, "Is it in Wh/m2 per interval longer than 1 h?"),
        ("wind_speed", 0.0, MAX_WIND_M_S, "Give the speed in m/s, >= 0."),
    ):
        values = weather[col].to_numpy(dtype=float)
        bad = np.flatnonzero((values < low) | (values > high))
        if bad.size:
            raise InputError(
                f"pv_availability: weather[{col!r}] has {bad.size} value(s) outside "
                f"[{low:g}, {high:g}], first {float(values[bad[0]])!r} at "
                f"{weather.index[bad[0]]}. {fix}"
            )
    span = weather.index[-1] - weather.index[0]
    peak_ghi = float(weather["ghi"].max())
    if span >= pd.Timedelta(days=364) and 0 < peak_ghi <= 2.0:
        # no place on Earth tops 2 W/m2 in a whole year: the year is in kW/m2
        raise InputError(
            f"pv_availability: weather['ghi'] peaks at {peak_ghi:g} over a whole year; "
            "expected W/m2 (a clear noon is near 1000). Multiply ghi, dni and dhi by 1000 if "
            "they are in kW/m2."
        )


def pv_availability(
    weather: pd.DataFrame | None = None,
    *,
    latitude: float | None = None,
    longitude: float | None = None,
    altitude: float = 0.0,
    tilt: float = 25.0,
    azimuth: float = 180.0,
    gamma_pdc: float = -0.004,
    dc_ac_ratio: float = 1.2,
    system_losses_percent: float = 14.08,
    inverter_efficiency: float = 0.96,
    index: pd.DatetimeIndex | None = None,
) -> pd.Series:
    """AC output of 1 kWp (DC) of fixed-tilt PV, interval means [kW/kWp].

    Parameters
    ----------
    weather : pandas.DataFrame, optional
        ``ghi, dni, dhi`` [W/m2], ``temp_air`` [degC], ``wind_speed`` [m/s] on a tz-aware,
        fixed-step index labelled by interval START (shift TMY hour-ending labels back one
        step first). None: pvlib's bundled Greensboro TMY3 (:func:`default_weather`).
    latitude, longitude : float, optional
        Site [deg]; required with ``weather``, taken from the TMY header otherwise.
    altitude : float
        Site altitude [m].
    tilt, azimuth : float
        Module tilt from horizontal and azimuth clockwise from north [deg].
    gamma_pdc : float
        Temperature coefficient of DC power [1/degC].
    dc_ac_ratio : float
        DC nameplate over inverter AC rating [-]; output is clipped at 1/dc_ac_ratio.
    system_losses_percent : float
        PVWatts default system losses (soiling, wiring, mismatch...) [%].
    inverter_efficiency : float
        Nominal inverter efficiency [-].
    index : pandas.DatetimeIndex, optional
        The load's index: the result is returned on it as interval means, the weather year
        mapped by time of year in the weather's time zone.

    Returns
    -------
    pandas.Series
        Availability a_t [kW/kWp], tz-aware, named ``pv_kw_per_kwp``.

    Examples
    --------
    >>> a = pv_availability()
    >>> bool(1200 < a.sum() < 1500)   # kWh per kWp per year in Greensboro, NC
    True
    """
    own_weather = weather is not None
    if weather is None:
        weather, meta = default_weather()
        latitude = meta["latitude"] if latitude is None else latitude
        longitude = meta["longitude"] if longitude is None else longitude
        altitude = meta["altitude"] if altitude == 0.0 else altitude
    else:
        if not isinstance(weather, pd.DataFrame):
            raise InputError(
                f"pv_availability: weather must be a DataFrame, got {type(weather).__name__}."
            )
        missing = [c for c in _REQUIRED if c not in weather.columns]
        if missing:
            raise InputError(
                f"pv_availability: weather lacks column(s) {missing}; expected {list(_REQUIRED)} "
                "(pvlib.iotools.read_tmy3(..., map_variables=True) gives these names)."
            )
        require_tz_aware(weather.index, "weather")
        if latitude is None or longitude is None:
            raise InputError(
                "pv_availability: give latitude and longitude [deg] with your own weather."
            )
        if len(weather) == 0:
            raise InputError("pv_availability: weather has no rows; expected a weather year "
                             "(e.g. 8760 hourly rows).")
        for col in _REQUIRED:
            if (not pd.api.types.is_numeric_dtype(weather[col])
                    or pd.api.types.is_bool_dtype(weather[col])):
                raise InputError(
                    f"pv_availability: weather[{col!r}] holds {weather[col].dtype} values; "
                    f"expected numbers. Convert it, e.g. pd.to_numeric(weather[{col!r}])."
                )
            check_finite_values(weather[col], f"pv_availability: weather[{col!r}]")
        _check_weather_units(weather)
    check_number(latitude, "pv_availability: latitude", ge=-90.0, le=90.0, unit="deg")
    check_number(longitude, "pv_availability: longitude", ge=-180.0, le=360.0, unit="deg")
    check_number(altitude, "pv_availability: altitude", ge=-500.0, le=9000.0, unit="m")
    check_number(tilt, "pv_availability: tilt", ge=0.0, le=90.0, unit="deg")
    check_number(azimuth, "pv_availability: azimuth", ge=0.0, le=360.0, unit="deg")
    check_number(gamma_pdc, "pv_availability: gamma_pdc", ge=-0.02, le=0.0, unit="1/degC")
    check_number(dc_ac_ratio, "pv_availability: dc_ac_ratio", gt=0.0)
    check_number(system_losses_percent, "pv_availability: system_losses_percent", ge=0.0,
                 lt=100.0, unit="%")
    check_number(inverter_efficiency, "pv_availability: inverter_efficiency", gt=0.0, le=1.0)
    avail = _chain_kw_per_kwp(
        weather,
        latitude=latitude,
        longitude=longitude,
        altitude=altitude,
        tilt=tilt,
        azimuth=azimuth,
        gamma_pdc=gamma_pdc,
        dc_ac_ratio=dc_ac_ratio,
        system_losses_percent=system_losses_percent,
        inverter_efficiency=inverter_efficiency,
        check_timing=own_weather,
    )
    if index is None:
        return avail
    return _map_to_index(avail, index)
