"""The interconnection queue: several facilities at several buses on one time axis.

Every grid study takes either one facility series with ``bus=`` or a mapping bus ->
facility series (the queue, in queue order). Both become a :class:`Facilities`: one
column per facility, on one time axis. One series keeps its own index (the study's result
is on it, as before); several are aligned on one UTC axis: the same step, the same step
grid, their common span. A facility's values are never resampled or filled here; steps
outside the common span are left out with an :class:`~aiload.errors.InputWarning` that
says how many and how much energy.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from aiload.errors import InputError, InputWarning
from aiload.timeseries import validate_power_series
from grid.attach import check_bus, facility_mw

__all__ = ["Facilities", "facilities", "align"]


@dataclass(frozen=True)
class Facilities:
    """The facilities of a study on one time axis.

    Attributes
    ----------
    p_mw : pandas.DataFrame
        Facility active power [MW], time x facility; columns are the buses (name
        ``"bus"``), in queue order.
    single : bool
        True when given as one series with ``bus=`` (the result keeps that series' index).
    """

    p_mw: pd.DataFrame
    single: bool

    @property
    def buses(self) -> tuple[int, ...]:
        """The facilities' buses, in queue order."""
        return tuple(int(b) for b in self.p_mw.columns)

    @property
    def total_mw(self) -> pd.Series:
        """All facilities' power per step [MW], named ``facility_mw``; one facility: its own
        series, the same numbers."""
        if self.single:
            return self.p_mw.iloc[:, 0].rename("facility_mw")
        return self.p_mw.sum(axis=1).rename("facility_mw")


def facilities(load: object, bus: object, *, net, what: str = "load_mw") -> Facilities:
    """The study's facilities from one series and ``bus``, or from a mapping bus -> series.

    Parameters
    ----------
    load : pandas.Series, FacilityLoad or Mapping
        One facility (in [MW], or [kW] when named ``*_kw``; a ``FacilityLoad``'s
        ``facility_kw``) at ``bus``; or a mapping bus -> such a series (the queue, in its
        order), each on its own tz-aware fixed-step index.
    bus : int or None
        The one facility's bus; must be None (omitted) with a mapping.
    net : pandapower.pandapowerNet
        The study's network (buses checked; the unit-slip warning of
        :func:`grid.attach.facility_mw`).
    what : str
        The argument's name in messages.
    """
    if isinstance(load, Mapping):
        if bus is not None:
            raise InputError(
                f"{what}: got a mapping bus -> series (an interconnection queue) and also "
                f"bus={bus!r}; with a mapping each facility's bus is its key: omit bus=.")
        if len(load) == 0:
            raise InputError(f"{what}: the mapping bus -> facility series is empty; give at "
                             "least one facility, e.g. {49: load_kw}.")
        series = {}
        for key, value in load.items():
            b = check_bus(net, key)
            series[b] = facility_mw(value, f"{what}[{b}]", net=net)
        return Facilities(align(series, what), single=False)
    if bus is None:
        raise InputError(f"bus: missing; pass the facility's bus (bus=5), or pass {what} as "
                         "a mapping bus -> facility series for several facilities.")
    series = facility_mw(load, what, net=net)
    b = check_bus(net, bus)
    return Facilities(series.to_frame(name=b).rename_axis(columns="bus"), single=True)


def align(series: dict[int, pd.Series], what: str = "load_mw") -> pd.DataFrame:
    """Facility series [MW] on one UTC axis: one column per bus, in the mapping's order.

    Every series must have the same step and lie on the same step grid (labels a whole
    number of steps apart); the axis is their common span. Steps of a series outside it are
    left out with an :class:`~aiload.errors.InputWarning` naming the facility, the number
    of steps and the energy [MWh].
    """
    steps = {b: validate_power_series(s, f"{what}[{b}]") for b, s in series.items()}
    first = next(iter(series))
    if len(set(steps.values())) > 1:
        listed = ", ".join(f"bus {b}: {pd.Timedelta(seconds=v)}" for b, v in steps.items())
        raise InputError(
            f"{what}: the facility series have different steps ({listed}); a queue is "
            "studied on one time axis. Resample them to one step first, as interval means "
            "(e.g. aiload.resample(series, '1h', kind='means')).")
    step = pd.Timedelta(seconds=steps[first])
    utc = {b: s.tz_convert("UTC") for b, s in series.items()}
    start = max(s.index[0] for s in utc.values())
    end = min(s.index[-1] for s in utc.values())
    if start > end:
        spans = "; ".join(f"bus {b}: {s.index[0]} to {s.index[-1]}" for b, s in utc.items())
        raise InputError(
            f"{what}: the facility series do not overlap in time (UTC: {spans}); a queue "
            "is studied over the span they share. Generate them over the same period (each "
            "facility's own time zone is fine: they are aligned on UTC).")
    for b, s in utc.items():
        offset = (s.index[0] - utc[first].index[0]) % step
        if offset != pd.Timedelta(0):
            raise InputError(
                f"{what}: the series at bus {b} starts {offset} off the step grid of the "
                f"series at bus {first} ({utc[first].index[0]}, step {step}); its intervals "
                "would straddle theirs. Start every facility on the same grid, e.g. on the "
                "hour for hourly series.")
    axis = pd.date_range(start, end, freq=step, tz="UTC")
    columns = {}
    for b, s in utc.items():
        part = s.loc[start:end]
        if len(part) != len(s):
            left_mwh = (float(s.sum()) - float(part.sum())) * step.total_seconds() / 3600.0
            warnings.warn(
                f"{what}[{b}]: {len(s) - len(part)} of {len(s)} steps ({left_mwh:.6g} MWh) "
                f"lie outside the span all facilities share ({start} to {end}, UTC) and are "
                "left out of the study. Generate every facility over the same period to "
                "study them all.", InputWarning, stacklevel=4)
        columns[b] = part.to_numpy(dtype=np.float64)
    return pd.DataFrame(columns, index=axis).rename_axis(columns="bus")
