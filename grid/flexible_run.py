"""What a flexible connection costs the computing: the study's limit run through the facility.

:func:`grid.flexible_interconnection` assumes the facility holds ``min(load, headroom)``
exactly and at no cost. :func:`curtailment_cost` takes the chosen size's *implied limit* —
the hourly headroom, as a kW Series — and runs the facility model under it
(``aiload.facility(..., power_limit_kw=series)``): the levers (battery, inference
throttling, power caps, deferral) meet it with their response times, and the facility's
event table says what it cost (deferred node-hours, job delays, queued and unserved
requests, battery state of charge). :func:`grid.timeseries` on the result checks that no
violation is left.

The study scales one facility shape to every size; the facility model simulates one
facility. The size ``S`` is therefore run as the modelled facility under the limit
``headroom x peak / S`` (the same scaled-copy assumption as the study): the costs are the
modelled facility's, and scale by ``S / peak`` for the size (:attr:`CurtailmentCost.factor`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandapower as pp
import pandas as pd

from aiload._checks import check_number
from aiload.errors import InputError
from grid.flexible import FlexibleInterconnection
from grid.powerflow import GridResult, timeseries

__all__ = ["CurtailmentCost", "curtailment_cost", "implied_limit_kw", "cosine_background",
           "COST_ROWS"]

#: rows of :attr:`CurtailmentCost.costs`: (name, unit, scales with the size)
COST_ROWS = (
    ("events", "-", False),
    ("curtailed_energy_mwh", "MWh", True),
    ("battery_mwh", "MWh", True),
    ("inference_mwh", "MWh", True),
    ("power_cap_mwh", "MWh", True),
    ("deferral_mwh", "MWh", True),
    ("deferred_node_h", "node-h", True),
    ("job_delay_h", "h", False),
    ("queued_requests", "-", True),
    ("unserved_requests", "-", True),
    ("battery_soc_min", "fraction", False),
    ("shortfall_kw_max", "kW", True),
)


def cosine_background(index: pd.DatetimeIndex, *, mean: float = 0.80,
                      seasonal_amplitude: float = 0.10, daily_amplitude: float = 0.08,
                      peak_day: str = "07-15", peak_hour_utc: float = 23.0,
                      decimals: int | None = 2) -> pd.Series:
    """An ILLUSTRATIVE background: multipliers [-] of a network's loads, two cosines.

    ``mean + seasonal_amplitude cos(2 pi (day - peak_day) / 365) + daily_amplitude
    cos(2 pi (hour - peak_hour_utc) / 24)``, rounded to ``decimals`` (fewer distinct levels
    for :func:`grid.flexible_interconnection`). Made up, not measured: it stands in for a
    utility's load forecast where a test network has one snapshot and no profile.
    """
    if not isinstance(index, pd.DatetimeIndex) or index.tz is None:
        raise InputError(f"index: expected a tz-aware DatetimeIndex, got {type(index).__name__}"
                         f"{'' if not isinstance(index, pd.DatetimeIndex) else ' (naive)'}.")
    if len(index) == 0:
        raise InputError("index: the DatetimeIndex is empty; expected at least one step, e.g. "
                         "pd.date_range('2025-01-01', periods=8760, freq='h', tz='UTC').")
    for name, value in (("mean", mean), ("seasonal_amplitude", seasonal_amplitude),
                        ("daily_amplitude", daily_amplitude)):
        check_number(value, f"cosine_background: {name}", unit="-")
    check_number(peak_hour_utc, "cosine_background: peak_hour_utc", ge=0.0, lt=24.0, unit="h")
    if decimals is not None and (isinstance(decimals, bool) or not isinstance(
            decimals, (int, np.integer)) or decimals < 0):
        raise InputError(f"cosine_background: decimals: expected None or an int >= 0 (2 rounds "
                         f"to 0.01), got {decimals!r}.")
    low = mean - abs(seasonal_amplitude) - abs(daily_amplitude)
    if not low >= 0:
        raise InputError(f"cosine_background: mean {mean} minus the amplitudes "
                         f"({seasonal_amplitude}, {daily_amplitude}) goes below 0 ({low:.3g}); "
                         "multipliers must stay non-negative.")
    utc = index.tz_convert("UTC")
    try:
        peaks = pd.DatetimeIndex([pd.Timestamp(f"{y}-{peak_day}", tz="UTC") for y in utc.year])
    except ValueError:
        raise InputError(f"cosine_background: peak_day = {peak_day!r} is not a month-day of "
                         f"every year of the index; expected 'MM-DD' such as '07-15'.") from None
    day = np.asarray((utc - peaks) / pd.Timedelta(days=1))
    hour = utc.hour.to_numpy() + utc.minute.to_numpy() / 60.0
    m = (mean + seasonal_amplitude * np.cos(2 * np.pi * day / 365.0)
         + daily_amplitude * np.cos(2 * np.pi * (hour - peak_hour_utc) / 24.0))
    if decimals is not None:
        m = np.round(m, int(decimals))
    return pd.Series(m, index=index, name="background")


def implied_limit_kw(study: FlexibleInterconnection, size_mw: float) -> pd.Series:
    """The modelled facility's limit [kW] that stands for ``size_mw`` under the study.

    ``headroom_mw x 1000 x peak / size_mw`` at each step of the study (``peak`` = the
    study's facility series' peak [MW]): the modelled facility under this limit is the
    facility scaled to ``size_mw`` under the headroom, divided by ``size_mw / peak``.
    """
    if not isinstance(study, FlexibleInterconnection):
        raise InputError(f"study: expected a grid.FlexibleInterconnection, got "
                         f"{type(study).__name__}.")
    if isinstance(size_mw, (bool, np.bool_)) or not (
            isinstance(size_mw, (int, float, np.integer, np.floating))
            and math.isfinite(size_mw) and size_mw > 0):
        raise InputError(f"size_mw: expected a positive facility peak [MW], got {size_mw!r}.")
    factor = float(size_mw) / float(study.load_mw.max())
    return (study.headroom_mw * 1e3 / factor).rename("limit_kw")


@dataclass(frozen=True)
class CurtailmentCost:
    """Result of :func:`curtailment_cost`.

    Attributes
    ----------
    size_mw : float
        The facility size studied [MW].
    factor : float
        ``size_mw`` / the modelled facility's peak in the study [-].
    limit_kw : pandas.Series
        The modelled facility's limit [kW] (:func:`implied_limit_kw`).
    load : aiload.facility.FacilityLoad
        The facility run under ``limit_kw``.
    grid : GridResult
        :func:`grid.timeseries` of that run scaled by ``factor``, averaged to the study's
        step, at the study's background (the cross-check).
    violations : pandas.DataFrame
        ``grid.violations()`` of the cross-check (empty: none left).
    costs : pandas.DataFrame
        One row per quantity (:data:`COST_ROWS`): ``quantity``, ``unit``, ``modelled`` (the
        modelled facility over the run), ``at_size`` (scaled to ``size_mw`` where the
        quantity is extensive).
    violation_steps : int
        Steps of the cross-check with any violation (0: none left).
    events : pandas.DataFrame or None
        The facility's event table (``load.flexibility``).
    """

    size_mw: float
    factor: float
    limit_kw: pd.Series
    load: object
    grid: GridResult
    violations: pd.DataFrame
    costs: pd.DataFrame
    violation_steps: int = 0
    events: pd.DataFrame | None = None


def _costs(load, factor: float) -> pd.DataFrame:
    power = load.power
    step_h = pd.Timedelta(power.index.freq).total_seconds() / 3600.0
    events = getattr(load, "flexibility", None)
    if events is None:
        events = pd.DataFrame()
    hours = ((events["end"] - events["start"]) / pd.Timedelta(hours=1)).to_numpy() \
        if len(events) else np.zeros(0)

    def total(column: str) -> float:
        return float(events[column].sum()) if column in events else math.nan

    def lever_mwh(column: str) -> float:
        return float((events[column].to_numpy() * hours).sum() / 1e3) if column in events \
            else math.nan

    curtailed = power["curtailed_kw"].clip(lower=0.0) if "curtailed_kw" in power else None
    values = {
        "events": float(len(events)),
        "curtailed_energy_mwh": math.nan if curtailed is None
        else float(curtailed.sum() * step_h / 1e3),
        "battery_mwh": lever_mwh("battery_kw"),
        "inference_mwh": lever_mwh("inference_kw"),
        "power_cap_mwh": lever_mwh("power_cap_kw"),
        "deferral_mwh": lever_mwh("deferral_kw"),
        "deferred_node_h": total("deferred_node_h"),
        "job_delay_h": total("job_delay_h"),
        "queued_requests": total("queued_requests"),
        "unserved_requests": total("unserved_requests"),
        "battery_soc_min": float(events["battery_soc_min"].min())
        if "battery_soc_min" in events and len(events) else math.nan,
        "shortfall_kw_max": float(events["shortfall_kw"].max())
        if "shortfall_kw" in events and len(events) else 0.0,
    }
    return pd.DataFrame([(name, unit, values[name], values[name] * factor if scales
                          else values[name]) for name, unit, scales in COST_ROWS],
                        columns=["quantity", "unit", "modelled", "at_size"])


def curtailment_cost(study: FlexibleInterconnection, size_mw: float, net: pp.pandapowerNet,
                     spec_or_preset, *, start=None, end=None, freq: str | None = None,
                     seed: int = 0, control_period=None, enforce_q_lims: bool | None = None,
                     progress: bool = False, **facility_overrides) -> CurtailmentCost:
    """Run the facility under the implied limit of ``size_mw`` and cross-check the network.

    Parameters
    ----------
    study : FlexibleInterconnection
        The study (its headroom, background, bus, limits and power factor are used).
    size_mw : float
        The chosen facility size [MW] (e.g. ``study.size_at_share(1.0)``).
    net : pandapower.pandapowerNet
        The study's network; never modified.
    spec_or_preset : FacilitySpec or str
        The facility whose shape the study scaled.
    start, end, freq : optional
        The facility run; default the study's series (its first label, its end, its step).
    seed : int
        The facility's seed (the study's facility run's, to reproduce its shape).
    control_period : str, optional
        The facility's control period (replaces ``flexibility.control_period_s``; a year at
        the default 60 s is half a million periods); default the spec's.
    enforce_q_lims : bool, optional
        As in :func:`grid.timeseries`.
    progress : bool
        Show the facility run's progress bar (it is the long part); default off.
    **facility_overrides
        Preset parameters or FacilitySpec fields (e.g. ``flexibility=...``).

    Returns
    -------
    CurtailmentCost
    """
    limit = implied_limit_kw(study, size_mw)
    from grid.attach import check_bus

    check_bus(net, study.bus)  # before the facility runs
    index = study.load_mw.index
    freq0 = index.freq if index.freq is not None else (
        pd.infer_freq(index) if len(index) >= 3 else None)
    if freq0 is None:
        raise InputError("study: its facility series has no regular step (load_mw.index.freq is "
                         "None and none can be inferred); expected a series at a fixed step, "
                         "e.g. load_mw.asfreq('1h') before grid.flexible_interconnection.")
    step = pd.Timedelta(pd.tseries.frequencies.to_offset(freq0))
    start = index[0] if start is None else start
    end = index[-1] + step if end is None else end
    freq = freq if freq is not None else f"{int(step.total_seconds())}s"
    from grid.cosim import _facility_call, _period_s

    load = _facility_call(spec_or_preset, start=start, end=end, freq=freq, seed=seed,
                          period_s=_period_s(control_period), limit=limit,
                          overrides=facility_overrides, progress=progress)
    factor = float(size_mw) / float(study.load_mw.max())
    mean_kw = load.power["facility_kw"].resample(step).mean()
    if not mean_kw.index.equals(index):
        raise InputError(f"the facility run ({len(mean_kw)} steps of {step} from "
                         f"{mean_kw.index[0]}) does not cover the study's series ({len(index)} "
                         f"steps from {index[0]}); run it over the study's horizon.")
    check = timeseries(net, (mean_kw * factor / 1e3).rename("facility_mw"), bus=study.bus,
                       power_factor=study.power_factor, background=study.background,
                       limits=study.limits, enforce_q_lims=enforce_q_lims)
    violations = check.violations()
    events = getattr(load, "flexibility", None)
    return CurtailmentCost(size_mw=float(size_mw), factor=factor, limit_kw=limit, load=load,
                           grid=check, violations=violations, costs=_costs(load, factor),
                           violation_steps=int(violations["time"].nunique()),
                           events=events if isinstance(events, pd.DataFrame) else None)
