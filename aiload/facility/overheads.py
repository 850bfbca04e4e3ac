"""From IT power to the meter: UPS/distribution losses and cooling.

Losses follow the no-load / proportional / square-law model of Rasmussen (APC White Paper 113,
"Electrical Efficiency Modeling for Data Centers"): ``loss = P_rated·(a + b·x + c·x²)`` with
``x = P_IT / P_rated``, i.e. an efficiency ``η(x) = x / (x + a + b·x + c·x²)``. Cooling is a
constant PUE, air cooling driven by the dry-bulb (an integrated economiser that hands the heat
to chillers across a band of temperatures, the chillers' COP falling linearly with outdoor
temperature) or direct-to-chip liquid cooling (a warm-water loop on dry coolers, trim
chillers in the hottest hours, the rest of the heat air-cooled). :class:`CoolingLag` makes the
cooling power follow its steady-state value with a first-order lag.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pandas as pd

from aiload.errors import InputError
from aiload.facility.spec import OverheadSpec
from aiload.timeseries import require_tz_aware

__all__ = ["losses_kw", "ups_efficiency", "cooling_kw", "drybulb_c", "design_overhead_factor",
           "max_it_under_cap_kw",
           "CoolingLag", "chiller_cop"]


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
    """Outdoor dry-bulb temperature, mean of each interval starting at ``edges[:-1]`` [°C].

    ``"pvlib-greensboro"`` reads pvlib's bundled TMY3 file 723170 (Greensboro, NC). A TMY3
    dry-bulb is the reading *at* the time of its row (NREL/TP-581-43156, TMY3 user's manual),
    so the temperature is interpolated linearly between the hourly readings and averaged over
    each interval (the mean of its two ends: exact for intervals that do not straddle a whole
    hour, e.g. any freq that divides one hour on an hour-aligned grid). The typical year
    repeats for every simulated year (29 February takes 28 February's values). A user Series
    must be tz-aware and hourly, each value the mean of the hour it labels (interval-start).
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
                f"needs {edges[0]} .. {edges[-1]}; give hourly readings that cover the run, or "
                "run a shorter period."
            )
        base = hourly.index[0]
        starts = edges[:-1].tz_convert(tz)
        pos = ((starts.floor("1h") - base).total_seconds() // 3600).astype(int)
        return hourly.to_numpy(dtype=float)[pos]
    ns = edges.as_unit("ns").asi8
    hour_ns = 3_600_000_000_000
    hour_epoch = ns // hour_ns
    frac = (ns - hour_epoch * hour_ns) / hour_ns
    # the edges increase: their hours are one contiguous range (no sort needed)
    first = int(hour_epoch[0])
    unique = np.arange(first, int(hour_epoch[-1]) + 2, dtype=np.int64)
    inverse = np.concatenate([hour_epoch, hour_epoch + 1]) - first
    stamps = pd.DatetimeIndex(unique * hour_ns, tz="UTC").tz_convert(tz)
    doy = stamps.dayofyear.to_numpy()
    leap = stamps.is_leap_year
    doy = np.where(leap & (doy >= 60), doy - 1, doy)  # 29 Feb -> 28 Feb, rest shifted back
    reading = table[(doy - 1) * 24 + stamps.hour.to_numpy()][inverse]
    n = len(ns)
    at_edges = reading[:n] + frac * (reading[n:] - reading[:n])
    return 0.5 * (at_edges[:-1] + at_edges[1:])


@functools.cache
def _greensboro_tmy() -> tuple[np.ndarray, object]:
    """Dry-bulb readings of pvlib's TMY3 723170 at each whole hour of a non-leap year [°C],
    and its time zone.

    Read once per process (a sweep or a campus run asks for it every run); read-only, since
    every caller shares it.
    """
    import pvlib  # noqa: PLC0415 - only for the dry-bulb model

    path = Path(pvlib.__file__).parent / "data" / "723170TYA.CSV"
    data, _meta = pvlib.iotools.read_tmy3(path, coerce_year=2001, map_variables=True)
    temp = data["temp_air"]  # each row: the reading at its own time
    tz = temp.index.tz
    # one value per hour of a non-leap year, ordered from 1 January 00:00 local standard time
    # (the row of 24:00 on 31 December, coerced to 1 January 00:00, is that hour's reading)
    how = ((temp.index - pd.Timestamp("2001-01-01", tz=tz)).total_seconds() // 3600).astype(int)
    how = np.mod(how, 8760)
    table = np.empty(8760)
    table[how] = temp.to_numpy()
    table.setflags(write=False)
    return table, tz


def chiller_cop(temp_c: np.ndarray, spec: OverheadSpec) -> np.ndarray:
    """Chiller COP at the dry-bulb: ``COP_35 + s·(35 − T)``, at least 1 [-]."""
    return np.maximum(spec.cop_at_35c + spec.cop_slope_per_c * (35.0 - temp_c), 1.0)


def _chiller_share(temp_c: np.ndarray, free_below_c: float, band_c: float) -> np.ndarray:
    """Share of the heat on chillers: 0 up to ``free_below_c``, linear across the band [-]."""
    if band_c > 0:
        return np.clip((temp_c - free_below_c) / band_c, 0.0, 1.0)
    return np.where(temp_c <= free_below_c, 0.0, 1.0)


def cooling_kw(
    it_kw: np.ndarray, loss_kw: np.ndarray, spec: OverheadSpec, temp_c: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray | None]:
    """Steady-state cooling power [kW] and, for the weather models, a mask of intervals with the
    air side on full free cooling.

    Constant PUE: ``cooling = (PUE − 1)·IT`` (a cooling-only PUE; the electrical losses come on
    top, so the meter reads ``PUE·IT + losses``). Dry-bulb (air):
    ``cooling = heat·(f_econ + φ(T)/COP(T))``, heat = IT + losses,
    ``COP(T) = COP_35 + s·(35 − T)`` (at least 1), with the chillers' share of the heat
    ``φ(T) = clip((T − T_econ)/ΔT, 0, 1)`` over the band ``ΔT = economiser_band_c`` (or a
    switch at ``T_econ`` when the band is 0). Liquid: ``heat·(c·(f_liq + ψ(T)/COP(T)) +
    (1 − c)·(f_econ + φ(T)/COP(T)))`` with ``c = liquid_capture``, ``f_liq = liquid_overhead``
    and ``ψ(T) = clip((T − T_liq)/ΔT, 0, 1)`` from ``T_liq = liquid_free_below_c``.
    """
    if spec.cooling == "pue":
        return (spec.pue - 1.0) * np.asarray(it_kw, dtype=float), None
    heat = it_kw + loss_kw
    cop = chiller_cop(temp_c, spec)
    air = spec.economiser_fraction + _chiller_share(
        temp_c, spec.economiser_below_c, spec.economiser_band_c) / cop
    economiser = temp_c <= spec.economiser_below_c
    if spec.cooling == "drybulb":
        return heat * air, economiser
    liquid = spec.liquid_overhead + _chiller_share(
        temp_c, spec.liquid_free_below_c, spec.economiser_band_c) / cop
    c = spec.liquid_capture
    return heat * (c * liquid + (1.0 - c) * air), economiser


class CoolingLag:
    """First-order lag of the cooling power behind its steady-state value, on the output grid.

    ``τ·dy/dt = u − y`` with ``u`` the steady-state cooling of each interval (constant over
    it). Exact for that input, whatever the step ``Δ``: with ``a = exp(−Δ/τ)`` the value at
    an interval's end is ``a·y_0 + (1 − a)·u`` and its mean ``u + (y_0 − u)·(τ/Δ)·(1 − a)``.
    The state is carried from one call to the next, so a run streamed in windows gives the
    same series as one in memory. The first interval starts at its own steady state (a
    facility that has run in that state before ``start``).

    Parameters
    ----------
    time_constant_s : float
        ``τ`` [s]; 0 passes the input through.
    step_s : float
        Output interval ``Δ`` [s].
    """

    def __init__(self, time_constant_s: float, step_s: float) -> None:
        self.time_constant_s, self.step_s = float(time_constant_s), float(step_s)
        self.state_kw: float | None = None
        if self.time_constant_s > 0:
            ratio = self.step_s / self.time_constant_s
            self._a = float(np.exp(-ratio))
            self._gain = float(-np.expm1(-ratio) / ratio)  # (τ/Δ)·(1 − a)

    def __call__(self, target_kw: np.ndarray) -> np.ndarray:
        """Interval means of the lagged cooling for the next intervals' targets [kW]."""
        u = np.asarray(target_kw, dtype=np.float64)
        if self.time_constant_s == 0 or not len(u):
            return u
        from scipy import signal  # noqa: PLC0415 - ~1 s to import, only when a lag runs

        y0 = float(u[0]) if self.state_kw is None else self.state_kw
        a = self._a
        y_end, _ = signal.lfilter([1.0 - a], [1.0, -a], u, zi=[a * y0])
        y_start = np.concatenate(([y0], y_end[:-1]))
        self.state_kw = float(y_end[-1])
        return u + (y_start - u) * self._gain


#: the outdoor temperature the power cap is designed for [°C]: chillers carry all the heat
DESIGN_TEMP_C = 45.0


def _worst_cooling_per_heat(spec: OverheadSpec) -> float:
    """Cooling power per kW of heat (IT + losses) at :data:`DESIGN_TEMP_C` [-] (weather
    models only)."""
    worst_cop = max(spec.cop_at_35c + spec.cop_slope_per_c * (35.0 - DESIGN_TEMP_C), 1.0)
    air = spec.economiser_fraction + 1.0 / worst_cop
    if spec.cooling == "liquid":
        c = spec.liquid_capture
        air = c * (spec.liquid_overhead + 1.0 / worst_cop) + (1.0 - c) * air
    return air


def design_overhead_factor(spec: OverheadSpec) -> float:
    """Facility power per unit IT at full load, worst weather [-]."""
    full_loss = spec.loss_a + spec.loss_b + spec.loss_c
    if spec.cooling == "pue":
        return spec.pue + full_loss
    return (1.0 + full_loss) * (1.0 + _worst_cooling_per_heat(spec))


def max_it_under_cap_kw(cap_kw: float, rated_kw: float, spec: OverheadSpec) -> float:
    """Largest IT power whose meter power stays at or below ``cap_kw`` in the worst weather
    (:data:`DESIGN_TEMP_C`) [kW], 0 if none does.

    The meter reads ``k_it·IT + k_loss·L(IT)`` with the losses ``L = R·(a + b·x + c·x²)``,
    ``x = IT/R``: ``k_it = PUE, k_loss = 1`` for a constant PUE, ``k_it = k_loss = 1 + air``
    for the weather models (cooling on the heat, IT + losses). Both grow with IT, so the
    root of ``k_loss·c/R·IT² + (k_it + k_loss·b)·IT + k_loss·a·R − cap = 0`` is the limit at
    every load, part load included (the no-load losses ``a·R`` make the meter-to-IT ratio
    largest at low load; a full-load factor understates it there). Lagged cooling never
    exceeds the steady state of the largest IT before it, so the bound holds with the lag.
    """
    if spec.cooling == "pue":
        k_it, k_loss = spec.pue, 1.0
    else:
        k_it = k_loss = 1.0 + _worst_cooling_per_heat(spec)
    quad = k_loss * spec.loss_c / rated_kw
    lin = k_it + k_loss * spec.loss_b
    const = k_loss * spec.loss_a * rated_kw - cap_kw
    if const >= 0.0:
        return 0.0
    if quad == 0.0:
        return -const / lin
    return 2.0 * -const / (lin + np.sqrt(lin * lin - 4.0 * quad * const))  # stable form
