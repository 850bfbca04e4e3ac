"""The facility as a dynamic load at a bus: constant power, or driven by an aiload series.

ANDES's own PQ loads become constant impedance in a time-domain run (its default); the
facility keeps its power. It is an ANDES ``PQ`` (for the power flow) replaced in the
time-domain run by a ``ZIP`` load whose current coefficient aiload sets before every
integration step: ``P = P_set · V / max(V_prev, v_brk)``, where ``V_prev`` is the bus voltage
of the last solved step. In steady state that is exactly ``P_set`` (constant power); it lags
the voltage by one step; below ``v_brk_pu`` it becomes constant current, as PSS/E's ``PQBRAK``
does for constant-power loads (default 0.7 pu), which keeps a bolted fault at the facility bus
solvable. ``P_set`` follows the facility's power series (interval means held over their
interval) times the share the ride-through rule keeps online.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from grid.dynamics.ridethrough import RideThrough

__all__ = ["Facility", "schedule_mw"]

#: default power factor of an AI campus at its point of interconnection (*assumption*: active
#: front ends run near unity; 0.99 lagging)
DEFAULT_POWER_FACTOR = 0.99
#: voltage below which the facility's constant power turns to constant current [pu]
#: (PSS/E's default PQBRAK, 0.7 pu)
DEFAULT_V_BRK_PU = 0.7


@dataclass(frozen=True)
class Facility:
    """One AI facility at a bus of a dynamic case.

    Parameters
    ----------
    bus
        ANDES bus id (``idx``) of the point of interconnection.
    load_kw
        Constant power [kW], or an aiload power series [kW] (a ``facility_kw`` column of
        :class:`aiload.FacilityLoad.power`, or any Series on a tz-aware ``DatetimeIndex`` or a
        ``TimedeltaIndex``, fixed frequency, each value the mean over its interval). Time 0 of
        the simulation is the series' first label.
    power_factor
        Lagging power factor [-]; reactive power follows active power.
    ride_through
        The facility's protection rule; ``None``: it never transfers (rides through anything).
    v_brk_pu
        Voltage below which constant power turns to constant current [pu].
    name
        Label in results; ``facility@<bus>`` when not given.
    """

    bus: Any
    load_kw: float | pd.Series
    power_factor: float = DEFAULT_POWER_FACTOR
    ride_through: RideThrough | None = None
    v_brk_pu: float = DEFAULT_V_BRK_PU
    name: str | None = None

    def __post_init__(self):
        if not 0.0 < self.power_factor <= 1.0:
            raise ValueError(f"power_factor={self.power_factor} is not within (0, 1]")
        if not 0.0 < self.v_brk_pu <= 1.0:
            raise ValueError(f"v_brk_pu={self.v_brk_pu} is not within (0, 1]")
        if isinstance(self.load_kw, pd.DataFrame):
            raise ValueError("load_kw is a DataFrame; pass one column, e.g. "
                             "facility.power['facility_kw']")
        if not isinstance(self.load_kw, pd.Series):
            p = float(self.load_kw)
            if not math.isfinite(p) or p < 0:
                raise ValueError(f"load_kw={self.load_kw!r} is not a finite power >= 0 [kW]")
        if self.name is None:
            object.__setattr__(self, "name", f"facility@{self.bus}")

    @property
    def q_per_p(self) -> float:
        """Reactive over active power, tan(acos(pf)) [-]."""
        return math.tan(math.acos(self.power_factor))

    def schedule(self, dt_s: float) -> tuple[np.ndarray, np.ndarray]:
        """Interval start times [s] and powers [MW] (see :func:`schedule_mw`)."""
        return schedule_mw(self.load_kw, dt_s)

    def p0_mw(self) -> float:
        """Power at time 0, the power-flow operating point [MW]."""
        return float(schedule_mw(self.load_kw, None)[1][0])


def schedule_mw(load_kw: float | pd.Series, dt_s: float | None) -> tuple[np.ndarray, np.ndarray]:
    """A power [kW] or power series [kW] as interval starts [s] and interval powers [MW].

    A constant gives one interval from 0. A series is read as interval means: each value holds
    from its label to the next (energy conserved). Its intervals must not be shorter than the
    integration step ``dt_s`` [s], or the step would average them away unseen.
    """
    if not isinstance(load_kw, pd.Series):
        return np.array([0.0]), np.array([float(load_kw) / 1e3])
    s = load_kw
    if len(s) == 0:
        raise ValueError("load_kw is an empty series")
    idx = s.index
    if isinstance(idx, pd.DatetimeIndex):
        if idx.tz is None:
            raise ValueError("load_kw has a naive DatetimeIndex; localise it "
                             "(series.tz_localize('UTC')) or pass a TimedeltaIndex")
        t = (idx - idx[0]).total_seconds().to_numpy()
    elif isinstance(idx, pd.TimedeltaIndex):
        t = (idx - idx[0]).total_seconds().to_numpy()
    else:
        raise ValueError(f"load_kw has a {type(idx).__name__}; expected a tz-aware "
                         f"DatetimeIndex or a TimedeltaIndex (elapsed time)")
    values = s.to_numpy(dtype=float)
    if not np.all(np.isfinite(values)) or np.any(values < 0):
        raise ValueError("load_kw holds NaN, infinite or negative values; fill or drop them "
                         "before the study (consumption is positive)")
    if len(t) > 1:
        step = np.diff(t)
        if np.any(step <= 0):
            raise ValueError("load_kw's index is not strictly increasing")
        if dt_s is not None and step.min() < dt_s - 1e-9:
            raise ValueError(f"load_kw has {step.min():g} s intervals, shorter than the "
                             f"integration step dt_s={dt_s:g} s; resample the series to "
                             f">= dt_s or pass a smaller dt_s")
    return t, values / 1e3
