"""Disturbances of a dynamic study: facility trip, bus fault, load step.

Each is a frozen dataclass with its time ``t_s`` [s]. A :class:`BusFault` becomes ANDES's own
``Fault`` device (and a ``Toggle`` when it is cleared by tripping a line); a
:class:`FacilityTrip` and a :class:`LoadStep` act on the facility's power from the first solved
step after ``t_s`` (ANDES steps to ``t_s`` and 1e-4 s after it, as for its own events).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

__all__ = ["FacilityTrip", "BusFault", "LoadStep", "Event", "DEFAULT_CLEARING_CYCLES"]

#: fault clearing time (*assumption*: 5 cycles, a common design value for transmission
#: breakers and primary protection)
DEFAULT_CLEARING_CYCLES = 5.0


@dataclass(frozen=True)
class FacilityTrip:
    """The facility (or ``share`` of it) leaves the grid at ``t_s`` [s] and stays off.

    ``facility``: index of the facility in the study (``None``: all of them).
    """

    t_s: float = 1.0
    share: float = 1.0
    facility: int | None = None

    def __post_init__(self):
        if not 0.0 < self.share <= 1.0:
            raise ValueError(f"share={self.share} is not within (0, 1]")
        if self.t_s < 0:
            raise ValueError(f"t_s={self.t_s} is negative")


@dataclass(frozen=True)
class BusFault:
    """A three-phase fault at ``bus`` from ``t_s`` [s], cleared after ``cycles`` [cycles].

    ``x_pu``, ``r_pu``: fault impedance on the system base [pu] (ANDES's default 1e-4 and 0: a
    bolted fault). ``trip_line``: ANDES id of a line opened at clearing (the fault cleared by
    taking the faulted line out); ``None``: the fault simply disappears.
    """

    bus: Any
    t_s: float = 1.0
    cycles: float = DEFAULT_CLEARING_CYCLES
    x_pu: float = 1e-4
    r_pu: float = 0.0
    trip_line: Any = None

    def __post_init__(self):
        if self.cycles <= 0:
            raise ValueError(f"cycles={self.cycles} must be > 0")
        if self.x_pu < 0 or self.r_pu < 0 or self.x_pu + self.r_pu == 0:
            raise ValueError(f"fault impedance r_pu={self.r_pu}, x_pu={self.x_pu} must be "
                             f">= 0 and not both zero")
        if self.t_s < 0:
            raise ValueError(f"t_s={self.t_s} is negative")

    def duration_s(self, f_hz: float) -> float:
        """Fault duration at nominal frequency ``f_hz`` [s]."""
        return self.cycles / f_hz


@dataclass(frozen=True)
class LoadStep:
    """The facility's power changes by ``delta_kw`` [kW] at ``t_s`` [s] and stays changed."""

    t_s: float
    delta_kw: float
    facility: int | None = None

    def __post_init__(self):
        if self.t_s < 0:
            raise ValueError(f"t_s={self.t_s} is negative")


Event = Union[FacilityTrip, BusFault, LoadStep]
