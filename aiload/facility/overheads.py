"""From IT power to the meter: UPS/distribution losses and cooling.

Losses follow the no-load / proportional / square-law model of Rasmussen (APC White Paper 113,
"Electrical Efficiency Modeling for Data Centers"): ``loss = P_rated·(a + b·x + c·x²)`` with
``x = P_IT / P_rated``, i.e. an efficiency ``η(x) = x / (x + a + b·x + c·x²)``. Cooling is either
a constant PUE or a dry-bulb-driven model: economiser (free cooling) at or below a threshold,
otherwise a chiller whose COP falls linearly with outdoor temperature, optionally taking the
heat over gradually across a band of temperatures (an integrated economiser).
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pandas as pd

from aiload.errors import InputError
from aiload.facility.spec import OverheadSpec
from aiload.timeseries import require_tz_aware

__all__ = ["losses_kw", "ups_efficiency", "cooling_kw", "drybulb_c", "design_overhead_factor"]


def ups_efficiency(load_fraction: np.ndarray, spec: OverheadSpec) -> np.ndarray:
    """Efficiency of UPS and distribution at IT load fraction ``x`` [-]."""
    x = np.asarray(load_fraction, dtype=float)
    return x / (x + spec.loss_a + spec.loss_b * x + spec.loss_c * x**2)


def losses_kw(it_kw: np.ndarray, rated_kw: float, spec: OverheadSpec) -> np.ndarray:
    """UPS and distribution losses [kW] at IT power ``it_kw`` [kW] of a ``rated_kw`` system."""
    x = np.asarray(it_kw, dtype=float) / rated_kw
    # a + b·x + c·x², as a + x·(b + c·x) in place: one array instead of five
    loss = x * spec.loss_c
    loss += spec.loss_b
    loss *= x
    loss += spec.loss_a
    loss *= rated_kw
    return loss


def drybulb_c(weather, edges: pd.DatetimeIndex) -> np.ndarray:
    """Outdoor dry-bulb temperature for each interval starting at ``edges[:-1]`` [°C].

    ``"pvlib-greensboro"`` reads pvlib's bundled TMY3 file 723170 (Greensboro, NC). TMY rows are
    hour-*ending*: the row labelled 01:00 describes 00:00–01:00, so labels are moved back one
    hour to the interval start. The typical year repeats for every simulated year (29 February
    takes 28 February's values). A user Series must be tz-aware and hourly (interval-start).
    """
    if isinstance(weather, str):
        if weather != "pvlib-greensboro":
            raise InputError(
                f"OverheadSpec.weather: unknown {weather!r}; expected 'pvlib-greensboro' or an "
                "hourly tz-aware Series of dry-bulb temperature [°C]."
            )
        table, tz = _greensboro_tmy()
    else:
        require_tz_aware(weather.index, "OverheadSpec.weather")
        tz = weather.index.tz
        hourly = weather.resample("1h").mean()
        if hourly.index[0] > edges[0] or hourly.index[-1] < edges[-2].floor("1h"):
            raise InputError(
                f"OverheadSpec.weather covers {hourly.index[0]} .. {hourly.index[-1]}, the run "
                f"needs {edges[0]} .. {edges[-1]}."
            )
        base = hourly.index[0]
        starts = edges[:-1].tz_convert(tz)
        pos = ((starts.floor("1h") - base).total_seconds() // 3600).astype(int)
        return hourly.to_numpy(dtype=float)[pos]
    starts = edges[:-1].tz_convert(tz)
    hour_epoch = starts.asi8 // 3_600_000_000_000
    unique, inverse = np.unique(hour_epoch, return_inverse=True)
    stamps = pd.DatetimeIndex(unique * 3_600_000_000_000, tz="UTC").tz_convert(tz)
    doy = stamps.dayofyear.to_numpy()
    leap = stamps.is_leap_year
    doy = np.where(leap & (doy >= 60), doy - 1, doy)  # 29 Feb -> 28 Feb, rest shifted back
    how = (doy - 1) * 24 + stamps.hour.to_numpy()
    return table[how][inverse]


@functools.cache
def _greensboro_tmy() -> tuple[np.ndarray, object]:
    """Dry-bulb of pvlib's TMY3 723170 by hour of a non-leap year [°C] and its time zone.

    Read once per process (a sweep or a campus run asks for it every run); read-only, since
    every caller shares it.
    """
    import pvlib  # noqa: PLC0415 - only for the dry-bulb model

    path = Path(pvlib.__file__).parent / "data" / "723170TYA.CSV"
    data, _meta = pvlib.iotools.read_tmy3(path, coerce_year=2001, map_variables=True)
    temp = data["temp_air"]
    temp.index = temp.index - pd.Timedelta(hours=1)  # hour-ending -> interval start
    tz = temp.index.tz
    # one value per hour of a non-leap year, ordered from 1 January 00:00 local standard time
    how = ((temp.index - pd.Timestamp("2001-01-01", tz=tz)).total_seconds() // 3600).astype(int)
    how = np.mod(how, 8760)
    table = np.empty(8760)
    table[how] = temp.to_numpy()
    table.setflags(write=False)
    return table, tz


def cooling_kw(
    it_kw: np.ndarray, loss_kw: np.ndarray, spec: OverheadSpec, temp_c: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray | None]:
    """Cooling power [kW] and, for the dry-bulb model, a mask of economiser intervals.

    Constant PUE: ``cooling = (PUE − 1)·IT`` (a cooling-only PUE; the electrical losses come on
    top, so the meter reads ``PUE·IT + losses``). Dry-bulb:
    ``cooling = heat·(f_econ + φ(T)/COP(T))``, heat = IT + losses,
    ``COP(T) = COP_35 + s·(35 − T)`` (at least 1), with the chillers' share of the heat
    ``φ(T) = clip((T − T_econ)/ΔT, 0, 1)`` over the band ``ΔT = economiser_band_c``, or
    ``[T > T_econ]`` when the band is 0. The mask marks full free cooling (``T <= T_econ``).
    """
    if spec.cooling == "pue":
        return (spec.pue - 1.0) * np.asarray(it_kw, dtype=float), None
    heat = it_kw + loss_kw
    economiser = temp_c <= spec.economiser_below_c
    cop = np.maximum(spec.cop_at_35c + spec.cop_slope_per_c * (35.0 - temp_c), 1.0)
    if spec.economiser_band_c > 0:
        chillers = np.clip((temp_c - spec.economiser_below_c) / spec.economiser_band_c, 0.0, 1.0)
    else:
        chillers = np.where(economiser, 0.0, 1.0)
    return heat * (spec.economiser_fraction + chillers / cop), economiser


def design_overhead_factor(spec: OverheadSpec) -> float:
    """Facility power per unit IT at full load, worst weather (for the power cap) [-]."""
    full_loss = spec.loss_a + spec.loss_b + spec.loss_c
    if spec.cooling == "pue":
        return spec.pue + full_loss
    worst_cop = max(spec.cop_at_35c + spec.cop_slope_per_c * (35.0 - 45.0), 1.0)
    return (1.0 + full_loss) * (1.0 + spec.economiser_fraction + 1.0 / worst_cop)
