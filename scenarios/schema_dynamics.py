"""``[grid.dynamics]``: a dynamic study of the facility in ANDES (``grid.dynamics``).

Optional in a ``[grid]`` table::

    [grid.dynamics]                     # grid.dynamics.simulate
    case = "ieee39"                     # a bundled ANDES case, or an ANDES / PSS/E file
    bus = 16                            # ANDES bus id of the facility (not grid.bus)
    t_end_s = 20.0
    [[grid.dynamics.events]]            # FacilityTrip / BusFault / LoadStep, all in one run
    kind = "fault"
    bus = 17
    t_s = 1.0
    cycles = 5
    [grid.dynamics.ride_through]        # grid.dynamics.RideThrough (absent: its defaults)
    [grid.dynamics.limits]              # grid.dynamics.FrequencyLimits and the voltage curve
    [grid.dynamics.loss_of_load]        # grid.dynamics.loss_of_load_capacity (absent: none)
    [grid.dynamics.fault_scan]          # grid.dynamics.which_faults_trip (absent: none)
    buses = "all"                       # or a list of ANDES bus ids, e.g. [15, 17]

The keys, units and defaults are those of ``grid.dynamics`` (docs/dynamics.md); every table
builds its ``grid.dynamics`` object while the file is validated, so a bad value is reported
with the file, the line and the key. Whether the buses exist in the case is checked when the
grid stage is prepared, before anything is computed (reading the case takes seconds).
A case or dyr file path is relative to the scenario file's folder (made absolute by
``scenarios.loader``, as ``grid.network`` and ``site.weather`` are).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from scenarios.schema_facility import refuse_non_finite

__all__ = ["DynamicsSection", "DynamicsEventSection", "RideThroughSection",
           "FrequencyLimitsSection", "LossOfLoadSection", "FaultScanSection", "BUNDLED_CASES"]

#: ANDES's bundled cases (grid.dynamics.cases.BUNDLED; repeated so validating a file does not
#: import ANDES, and checked equal by tests/scenarios/test_dynamics_scenario.py)
BUNDLED_CASES = ("ieee14", "ieee39", "kundur", "npcc", "wecc")

#: the ITIC (CBEMA) envelope, grid.dynamics.ITIC_VOLTAGE_TIME, as TOML writes it
_ITIC = [[0.7, 0.02], [0.8, 0.5], [0.9, 10.0]]


class _Section(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, validate_default=True, allow_inf_nan=False
    )

    _finite = field_validator("*", mode="before")(refuse_non_finite)


def _pairs(value: list[list[float]], key: str) -> list[list[float]]:
    for pair in value:
        if len(pair) != 2 or not 0.0 < pair[0] < 1.5 or pair[1] < 0.0:
            raise ValueError(
                f"{key}: {pair!r} is not a [v_pu, duration_s] pair with 0 < v_pu < 1.5 and "
                "duration_s >= 0; write e.g. [[0.7, 0.02], [0.8, 0.5], [0.9, 10.0]] "
                "(below 0.7 pu for more than 20 ms, ...)")
    return value


class DynamicsEventSection(_Section):
    """One disturbance, a ``[[grid.dynamics.events]]`` table: ``kind = "fault"`` (a
    three-phase fault at ``bus``, cleared after ``cycles``; ``grid.dynamics.BusFault``),
    ``"trip"`` (``share`` of the facility leaves and stays off; ``FacilityTrip``) or ``"step"``
    (the facility's power changes by ``delta_mw``; ``LoadStep``). All events of the table act
    in one simulation."""

    kind: Literal["fault", "trip", "step"] = Field(
        description="'fault' (bus fault), 'trip' (facility trip) or 'step' (load step)")
    t_s: float = Field(1.0, ge=0.0, description="time of the event from the start of the "
                       "simulation [s]")
    bus: int | str | None = Field(None, description="fault: ANDES bus id of the faulted bus "
                                  "(required for a fault, not allowed otherwise)")
    cycles: float | None = Field(
        None, description="fault: clearing time [cycles of the case's nominal frequency]; "
        "None: 5 cycles (grid.dynamics.events.DEFAULT_CLEARING_CYCLES, an assumption)")
    x_pu: float = Field(1e-4, ge=0.0, description="fault: fault reactance on the system base "
                        "[pu]; 1e-4: a bolted fault")
    r_pu: float = Field(0.0, ge=0.0, description="fault: fault resistance on the system base "
                        "[pu]")
    trip_line: int | str | None = Field(
        None, description="fault: ANDES id of a line opened when the fault clears; None: the "
        "fault simply disappears")
    share: float | None = Field(
        None, description="trip: share of the facility still online that trips, in (0, 1] "
        "[-]; None: 1 (all of it)")
    delta_mw: float | None = Field(None, description="step: change of the facility's power "
                                   "[MW] (negative: less load); required for a step")

    @model_validator(mode="after")
    def _keys_of_kind(self) -> DynamicsEventSection:
        own = {"fault": {"bus", "cycles", "x_pu", "r_pu", "trip_line"}, "trip": {"share"},
               "step": {"delta_mw"}}
        given = self.model_fields_set - {"kind", "t_s"}
        foreign = sorted(given - own[self.kind])
        if foreign:
            owner = {k: kind for kind, keys in own.items() for k in keys}
            raise ValueError(
                f"kind = {self.kind!r} does not take {', '.join(foreign)} (a key of a "
                f"{owner[foreign[0]]!r} event); the keys of a {self.kind!r} event are t_s, "
                f"{', '.join(sorted(own[self.kind]))}")
        if self.kind == "fault":
            if self.bus is None:
                raise ValueError("kind = 'fault' needs bus = the ANDES id of the faulted bus, "
                                 "e.g. bus = 17")
            if self.cycles is not None and not self.cycles > 0:
                raise ValueError(f"cycles = {self.cycles}: the clearing time must be > 0 "
                                 "cycles (e.g. 5 for 83 ms at 60 Hz); leave it out for 5")
            if self.x_pu + self.r_pu == 0:
                raise ValueError("x_pu = 0 and r_pu = 0: a fault impedance of exactly zero "
                                 "cannot be solved; leave x_pu out for a bolted fault (1e-4 pu)")
        if self.kind == "trip" and self.share is not None and not 0.0 < self.share <= 1.0:
            raise ValueError(f"share = {self.share}: expected a share in (0, 1] of the facility "
                             "still online (1: all of it)")
        if self.kind == "step" and self.delta_mw is None:
            raise ValueError("kind = 'step' needs delta_mw = the change of the facility's "
                             "power [MW], e.g. delta_mw = -20.0")
        self.to_event()
        return self

    def to_event(self):
        """The ``grid.dynamics`` event."""
        from grid.dynamics.events import DEFAULT_CLEARING_CYCLES, BusFault, FacilityTrip, LoadStep

        if self.kind == "fault":
            return BusFault(bus=self.bus, t_s=self.t_s,
                            cycles=DEFAULT_CLEARING_CYCLES if self.cycles is None
                            else self.cycles, x_pu=self.x_pu, r_pu=self.r_pu,
                            trip_line=self.trip_line)
        if self.kind == "trip":
            return FacilityTrip(t_s=self.t_s, share=1.0 if self.share is None else self.share)
        return LoadStep(t_s=self.t_s, delta_kw=self.delta_mw * 1e3)


class RideThroughSection(_Section):
    """The facility's protection rule (``grid.dynamics.RideThrough``): its UPS transfers to
    backup when the bus voltage stays below a level for longer than a time, or the frequency
    leaves a band; defaults and their sources in docs/dynamics.md."""

    enabled: bool = Field(True, description="false: no rule, the facility rides through "
                          "anything (only the trip and step events take load off)")
    voltage_time: list[list[float]] = Field(
        default_factory=lambda: [list(p) for p in _ITIC],
        description="[v_pu, duration_s] pairs: transfer when the voltage stays below v_pu [pu] "
        "for longer than duration_s [s]; default the ITIC (CBEMA) lower envelope")
    f_low_hz: float | None = Field(57.8, gt=0.0, description="transfer below this bus "
                                   "frequency [Hz]; None: never (PRC-024 bound, an assumption)")
    f_high_hz: float | None = Field(61.8, gt=0.0, description="transfer above this bus "
                                    "frequency [Hz]; None: never")
    f_duration_s: float = Field(0.0, ge=0.0, description="time outside the frequency band "
                                "before the transfer [s]")
    share: float = Field(1.0, ge=0.0, le=1.0, description="voltage-sensitive share of the "
                         "facility that transfers [-]")
    return_delay_s: float | None = Field(
        None, ge=0.0, description="healthy voltage needed before the load returns [s]; None: "
        "it does not return within the run (NERC's 2025 incident review)")
    ramp_s: float = Field(10.0, ge=0.0, description="linear ramp back to full load once it "
                          "returns [s]")
    name: str | None = Field(None, description="label of the rule in the report; None: "
                             "RideThrough's own")

    @field_validator("voltage_time")
    @classmethod
    def _pairs(cls, value: list[list[float]]) -> list[list[float]]:
        return _pairs(value, "voltage_time")

    @model_validator(mode="after")
    def _build(self) -> RideThroughSection:
        if (self.f_low_hz is not None and self.f_high_hz is not None
                and self.f_low_hz >= self.f_high_hz):
            raise ValueError(f"f_low_hz = {self.f_low_hz} is not below f_high_hz = "
                             f"{self.f_high_hz}; expected a band, e.g. 57.8 and 61.8")
        self.to_rule()
        return self

    def to_rule(self):
        """The ``grid.dynamics.RideThrough`` (``None`` when ``enabled = false``)."""
        if not self.enabled:
            return None
        from grid.dynamics.ridethrough import RideThrough

        kwargs = dict(voltage_time=tuple(tuple(p) for p in self.voltage_time),
                      f_low_hz=self.f_low_hz, f_high_hz=self.f_high_hz,
                      f_duration_s=self.f_duration_s, share=self.share,
                      return_delay_s=math.inf if self.return_delay_s is None
                      else self.return_delay_s, ramp_s=self.ramp_s)
        if self.name is not None:
            kwargs["name"] = self.name
        return RideThrough(**kwargs)


class FrequencyLimitsSection(_Section):
    """What the run is judged against (``grid.dynamics.FrequencyLimits`` and the verdict's
    voltage ride-through curve at the facility bus); defaults are assumptions, set your
    planner's."""

    f_min_hz: float | None = Field(59.5, gt=0.0, description="lowest frequency allowed [Hz]; "
                                   "None: not judged (PRC-024's no-time-limit band)")
    f_max_hz: float | None = Field(60.5, gt=0.0, description="highest frequency allowed [Hz]; "
                                   "None: not judged")
    rocof_max_hz_s: float | None = Field(1.0, gt=0.0, description="largest RoCoF over 500 ms "
                                         "allowed [Hz/s]; None: not judged")
    voltage_curve: list[list[float]] | None = Field(
        default_factory=lambda: [list(p) for p in _ITIC],
        description="[v_pu, duration_s] pairs the facility-bus voltage must not stay below for "
        "longer; default the ITIC envelope; [] or None: not judged")

    @field_validator("voltage_curve")
    @classmethod
    def _pairs(cls, value: list[list[float]] | None) -> list[list[float]] | None:
        return value if value is None else _pairs(value, "voltage_curve")

    @model_validator(mode="after")
    def _build(self) -> FrequencyLimitsSection:
        if (self.f_min_hz is not None and self.f_max_hz is not None
                and self.f_min_hz >= self.f_max_hz):
            raise ValueError(f"f_min_hz = {self.f_min_hz} is not below f_max_hz = "
                             f"{self.f_max_hz}; expected a band, e.g. 59.5 and 60.5")
        self.to_limits()
        return self

    def to_limits(self):
        """The ``grid.dynamics.FrequencyLimits``."""
        from grid.dynamics.results import FrequencyLimits

        return FrequencyLimits(f_min_hz=self.f_min_hz, f_max_hz=self.f_max_hz,
                               rocof_max_hz_s=self.rocof_max_hz_s)

    def curve(self) -> tuple[tuple[float, float], ...] | None:
        """The voltage curve as ``(v_pu, duration_s)`` pairs (``None``: not judged)."""
        return tuple(tuple(p) for p in self.voltage_curve) if self.voltage_curve else None


class LossOfLoadSection(_Section):
    """The loss-of-load hosting capacity at the facility bus
    (``grid.dynamics.loss_of_load_capacity``): the largest facility whose trip keeps the
    frequency within the limit; each size tried is one simulation of ``t_end_s``."""

    f_max_hz: float | None = Field(60.5, gt=0.0, description="zenith limit [Hz]; None: "
                                   "judge the nadir against f_min_hz")
    f_min_hz: float | None = Field(None, gt=0.0, description="nadir limit [Hz]; None: not "
                                   "judged")
    share: float = Field(1.0, gt=0.0, le=1.0, description="share of the facility that trips "
                         "[-] (the voltage-sensitive share, for a fault)")
    max_mw: float | None = Field(None, gt=0.0, description="upper end of the search [MW]; "
                                 "None: half the case's generator rating")
    tolerance_mw: float | None = Field(None, gt=0.0, description="search stops when the "
                                       "bracket is narrower [MW]; None: 1 % of max_mw")
    t_end_s: float = Field(10.0, gt=0.0, le=600.0, description="simulated time per size [s]")
    dt_s: float = Field(1 / 30, gt=0.0, le=0.1, description="integration step [s]")

    @model_validator(mode="after")
    def _some_limit(self) -> LossOfLoadSection:
        if self.f_max_hz is None and self.f_min_hz is None:
            raise ValueError("f_max_hz and f_min_hz are both None: give a frequency limit "
                             "(f_max_hz = 60.5 judges the zenith after the trip)")
        if self.dt_s > self.t_end_s:
            raise ValueError(f"dt_s = {self.dt_s} is longer than t_end_s = {self.t_end_s}")
        return self


class FaultScanSection(_Section):
    """Which fault locations make the facility leave the grid
    (``grid.dynamics.which_faults_trip``): one simulation per faulted bus, a three-phase fault
    (bolted by default) at 0.5 s cleared after ``cycles``, the facility at the study's power
    with its ride-through rule; the facility-bus voltage minimum, whether it transferred and
    the MW lost, per bus."""

    buses: list[int | str] | Literal["all"] = Field(
        description="ANDES bus ids to fault, e.g. [15, 17]; \"all\": every bus of the case "
        "(one run each)")
    cycles: float = Field(5.0, gt=0.0, description="clearing time [cycles of the case's "
                          "nominal frequency] (5: an assumption, as for the events)")
    x_pu: float = Field(1e-4, gt=0.0, description="fault reactance on the system base [pu]; "
                        "1e-4: a bolted fault")
    t_end_s: float = Field(2.0, gt=0.5, le=600.0, description="simulated time per fault [s] "
                           "(the fault starts at 0.5 s)")
    dt_s: float = Field(1 / 120, gt=0.0, le=0.1, description="integration step [s]; the "
                        "ride-through timers resolve to it")

    @field_validator("buses")
    @classmethod
    def _some(cls, value):
        if isinstance(value, list) and not value:
            raise ValueError("buses = []: list the ANDES bus ids to fault, e.g. [15, 17], or "
                             "write \"all\"")
        if isinstance(value, list) and len(set(map(str, value))) != len(value):
            raise ValueError(f"buses = {value!r} names a bus twice; list each once")
        return value

    @model_validator(mode="after")
    def _steps(self) -> FaultScanSection:
        if self.dt_s > self.t_end_s:
            raise ValueError(f"dt_s = {self.dt_s} is longer than t_end_s = {self.t_end_s}")
        return self


class DynamicsSection(_Section):
    """A dynamic study of the facility in ANDES (``grid.dynamics.simulate``): the facility as
    a constant-power load at an ANDES bus, through the events, with its ride-through rule;
    frequency, voltage, MW lost and a verdict (docs/dynamics.md)."""

    case: str = Field(
        "ieee39", description="a bundled ANDES case ('ieee14', 'ieee39', 'kundur', 'npcc', "
        "'wecc'), or an ANDES xlsx/json case or PSS/E .raw file path (relative to the scenario "
        "file)")
    dyr: str | None = Field(None, description="PSS/E dynamic data (.dyr) of a .raw case "
                            "(relative to the scenario file)")
    bus: int | str = Field(
        description="ANDES bus id of the facility (IEEE 39: 1-39; pandapower's case39 index "
        "is this id - 1)")
    facility_mw: float | None = Field(
        None, gt=0.0, description="the facility's constant power [MW]; None: the peak of the "
        "facility series at grid.freq")
    series: bool = Field(
        False, description="drive the facility by its own series from facility.start (its "
        "interval means over the first t_end_s, at facility.freq >= dt_s) instead of a "
        "constant; facility_mw then must be left out")
    dispatch: Literal["share", "slack"] = Field(
        "share", description="'share': the facility's power is added to the generators' set "
        "points in proportion to their rating; 'slack': the slack machine takes it")
    t_end_s: float = Field(20.0, gt=0.0, le=600.0, description="simulated time [s]")
    dt_s: float = Field(1 / 60, gt=0.0, le=0.1, description="fixed integration step [s]; "
                        "ride-through timers resolve to it")
    events: list[DynamicsEventSection] = Field(
        default_factory=list, description="the disturbances, all in one simulation")
    ride_through: RideThroughSection = Field(
        default_factory=RideThroughSection, description="the facility's protection rule")
    limits: FrequencyLimitsSection = Field(
        default_factory=FrequencyLimitsSection, description="frequency limits and the "
        "voltage ride-through curve of the verdict")
    loss_of_load: LossOfLoadSection | None = Field(
        None, description="the loss-of-load hosting capacity at the facility bus; absent: "
        "not computed")
    fault_scan: FaultScanSection | None = Field(
        None, description="which fault locations make the facility leave the grid under its "
        "ride-through rule; absent: not computed (nor with ride_through.enabled = false: "
        "then no fault takes the facility off)")

    @field_validator("case")
    @classmethod
    def _case(cls, value: str) -> str:
        # a path (it has a suffix) is made absolute and checked by scenarios.loader, against
        # the scenario file's folder; only a name without one must be a bundled case
        if value in BUNDLED_CASES or Path(value).suffix:
            return value
        import difflib

        near = difflib.get_close_matches(value.lower(), BUNDLED_CASES, n=1, cutoff=0.5)
        raise ValueError(
            f"{value!r} is neither a bundled ANDES case nor a file."
            + (f" Did you mean {near[0]!r}?" if near else "")
            + f" Bundled cases: {', '.join(BUNDLED_CASES)}; or give the path of an ANDES "
            "xlsx/json case or a PSS/E .raw file (with dyr = its .dyr)")

    @model_validator(mode="after")
    def _whole(self) -> DynamicsSection:
        if self.case.lower().endswith(".raw") and self.dyr is None:
            raise ValueError(f"case = {self.case!r} is a PSS/E .raw file, which holds no "
                             "dynamic models; give its dynamic data as dyr = '....dyr'")
        if self.dt_s > self.t_end_s:
            raise ValueError(f"dt_s = {self.dt_s} is longer than t_end_s = {self.t_end_s}")
        if self.series and self.facility_mw is not None:
            raise ValueError(f"series = true drives the facility by its own series; "
                             f"facility_mw = {self.facility_mw} would be ignored: remove one")
        if not self.events and not self.series:
            raise ValueError("no event: add a [[grid.dynamics.events]] table (kind = 'fault', "
                             "'trip' or 'step'), or set series = true to let the facility's "
                             "own power be the disturbance")
        late = [e.t_s for e in self.events if e.t_s >= self.t_end_s]
        if late:
            raise ValueError(f"an event at t_s = {late[0]} s is not before the end of the run, "
                             f"t_end_s = {self.t_end_s} s; move it earlier or run longer")
        return self
