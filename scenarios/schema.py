"""The scenario schema: what a scenario file may hold, with units and allowed ranges.

A scenario is a TOML file with one table per study stage::

    name = "colocation-10mw"          # free text
    [facility]                        # always: the facility model (aiload.facility)
    [site]                            # optional: location and weather year (PV, cooling)
    [grid]                            # optional: interconnection studies (grid package)
    [microgrid]                       # optional: on-site supply sizing (microgrid package)
    [sweep]                           # optional: parameter values and replicates for `aiload sweep`
    [outputs]                         # optional: which files `aiload run` writes

Every model forbids unknown keys, so a typo fails at load time with a "did you mean" (see
:mod:`scenarios.loader`). ``python -m scenarios.schema_doc`` renders this module as
``docs/scenario-schema.md``.
"""

from __future__ import annotations

import datetime as dt
import warnings
from typing import Annotated, Any, Literal

import pandas as pd
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from scenarios.schema_dynamics import DynamicsSection
from scenarios.schema_facility import (
    FleetSection,
    InferenceSection,
    JobStreamSection,
    OverheadsSection,
    refuse_non_finite,
)
from scenarios.schema_flexibility import FlexibilitySection
from scenarios.schema_queue import QueueSection, check_queue_fields
from scenarios.schema_stabilise import IterationSection, StabiliseSection

__all__ = [
    "Scenario",
    "FacilitySection",
    "QueuedFacilitySection",
    "QueueSection",
    "FleetSection",
    "JobStreamSection",
    "InferenceSection",
    "OverheadsSection",
    "FlexibilitySection",
    "SiteSection",
    "GridSection",
    "GridLimitsSection",
    "GridFlexibleSection",
    "GridBackgroundSection",
    "ShortCircuitSection",
    "MicrogridSection",
    "PVSection",
    "SweepSection",
    "OutputsSection",
    "GRID_STUDIES",
]

#: the grid studies a scenario can ask for, in the order the runner performs them
GRID_STUDIES = ("timeseries", "hosting_capacity", "contingency", "short_circuit", "load_loss",
                "flexible_interconnection", "cosimulate")

#: the studies run when ``studies`` is not given (short_circuit needs IEC 60909 data that
#: power-flow cases lack, so it is asked for by name)
DEFAULT_GRID_STUDIES = ("timeseries", "hosting_capacity", "contingency", "load_loss")


class _Section(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, validate_default=True, allow_inf_nan=False
    )

    _finite = field_validator("*", mode="before")(refuse_non_finite)


def _check_freq(value: str) -> str:
    """A fixed, positive pandas step; a deprecated alias ('15T', '1H') is written in today's
    spelling ('15min', '1h'), so that no FutureWarning is printed at every later use."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FutureWarning)
        try:
            offset = pd.tseries.frequencies.to_offset(value)
            step = pd.Timedelta(offset)
        except (ValueError, TypeError):
            raise ValueError(
                f"expected a fixed time step such as '1s', '1min', '15min' or '1h', got {value!r}"
            ) from None
    if step <= pd.Timedelta(0):
        raise ValueError(f"expected a positive time step, got {value!r}")
    if any(issubclass(w.category, FutureWarning) for w in caught):
        return f"{offset.n}{offset.freqstr.lstrip('0123456789')}"
    return value


#: the steps the facility model runs at [s] (aiload.facility.model.MIN_FREQ_S, MAX_FREQ_S)
FACILITY_FREQ_RANGE_S = (0.1, 3600.0)


def _check_facility_freq(value: str) -> str:
    """The steps ``aiload.facility`` runs at: 100 ms .. 1 h, dividing a minute or whole minutes."""
    step_s = pd.Timedelta(pd.tseries.frequencies.to_offset(value)).total_seconds()
    if not FACILITY_FREQ_RANGE_S[0] <= step_s <= FACILITY_FREQ_RANGE_S[1]:
        raise ValueError(
            f"the facility model runs at steps of 100ms to 1h, got {value!r} ({step_s:g} s); "
            "set freq = '1h' or finer (for coarser grid or sizing steps set grid.freq or "
            "microgrid.freq, to which the facility series is averaged)"
        )
    ms = round(step_s * 1000)
    if (ms < 60_000 and 60_000 % ms) or (ms > 60_000 and ms % 60_000):
        raise ValueError(
            f"{value!r} neither divides one minute nor is a whole number of minutes; expected "
            "e.g. '100ms', '1s', '15s', '30s', '1min', '15min' or '1h'"
        )
    return value


def _check_aware(value: dt.datetime, name: str) -> dt.datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(
            f"{name} has no time zone; write it with an offset, e.g. 2024-01-01T00:00:00Z "
            "or 2024-01-01T00:00:00-05:00"
        )
    return value


def _offset_datetime(value: dt.datetime | pd.Timestamp) -> str:
    """A date-time as a TOML offset date-time, ``Z`` for UTC."""
    text = pd.Timestamp(value).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


#: the keys of [facility] that make up a full specification (instead of a preset)
_SPEC_KEYS = ("fleet", "streams", "inference", "overheads", "backfill")


class FacilitySection(_Section):
    """The facility model run, ``aiload.facility(preset or FacilitySpec, start=, end=, ...)``:
    EITHER ``preset`` (with ``utilization``, ``overrides``) OR the full spec ``fleet``,
    ``streams``, ``inference``, ``overheads``, ``backfill``.

    The full spec maps onto ``aiload.facility.FacilitySpec`` and its sub-specs; see
    :mod:`scenarios.schema_facility`.
    """

    preset: str | None = Field(
        None,
        description="name of a bundled facility preset, e.g. 'colocation-10mw', 'inference-1mw', "
        "'campus-100mw'; leave it out to describe the facility with `fleet`, `streams`, "
        "`inference` and `overheads` instead",
    )
    utilization: float | None = Field(
        None,
        gt=0.0,
        le=1.0,
        description="target utilisation of the preset's fleet, (0, 1] [-]; None keeps the "
        "preset's (a full spec sets it per stream and service)",
    )
    start: dt.datetime = Field(description="first interval start, tz-aware (TOML offset datetime)")
    end: dt.datetime = Field(description="end of the horizon (exclusive), tz-aware")
    freq: str = Field("1min", description="output resolution, a pandas frequency ('1s' ... '1h')")
    seed: int = Field(0, ge=0, description="random seed; replicate k uses the facility's own seeding")
    replicates: int = Field(1, ge=1, le=1000, description="Monte Carlo replicates of `aiload run`")
    overrides: dict[str, Any] = Field(
        default_factory=dict,
        description="further keyword overrides of the preset passed to aiload.facility "
        "(e.g. nodes = 1000)",
    )
    fleet: FleetSection | None = Field(
        None, description="full spec: the nodes (instead of a preset)"
    )
    streams: list[JobStreamSection] = Field(
        default_factory=list, description="full spec: batch job streams (FIFO + backfill on the nodes not serving)"
    )
    inference: list[InferenceSection] = Field(
        default_factory=list,
        description="full spec: online inference services, each on its own nodes",
    )
    overheads: OverheadsSection | None = Field(
        None, description="full spec: losses and cooling; None: OverheadSpec's defaults"
    )
    backfill: bool | None = Field(
        None, description="full spec: EASY backfilling of the job queue; None: true"
    )
    flexibility: FlexibilitySection | None = Field(
        None, description="how the facility meets a power limit (preset or full spec): "
        "aiload.facility.FlexibilitySpec; used by the runs with a limit ([grid.flexible]); "
        "None: FlexibilitySpec's defaults"
    )
    iteration: IterationSection | None = Field(
        None, description="sub-second power of large synchronous training jobs: iteration "
        "cycles, checkpoint stalls, failures, start/stop ramps (aiload.facility's "
        "dynamics=IterationDynamics); None: off"
    )

    @field_validator("freq")
    @classmethod
    def _freq(cls, value: str) -> str:
        return _check_facility_freq(_check_freq(value))

    @field_validator("start", "end", mode="before")
    @classmethod
    def _parse_time(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return pd.Timestamp(value).to_pydatetime()
            except ValueError:
                raise ValueError(
                    f"expected an ISO-8601 date-time such as 2024-01-01T00:00:00Z, got {value!r}"
                ) from None
        return value

    @field_validator("start", "end")
    @classmethod
    def _aware(cls, value: dt.datetime, info) -> dt.datetime:
        return _check_aware(value, info.field_name)

    @model_validator(mode="after")
    def _preset_or_spec(self) -> FacilitySection:
        spec_keys = [k for k in _SPEC_KEYS if k in self.model_fields_set]
        if self.preset is not None and spec_keys:
            raise ValueError(
                f"give either preset = {self.preset!r} or the full spec ({', '.join(spec_keys)}), "
                "not both; remove one of them"
            )
        if self.preset is None:
            if self.fleet is None:
                raise ValueError(
                    "no facility given: set preset = 'colocation-10mw' (or 'inference-1mw', "
                    "'campus-100mw'), or describe the site with a [facility.fleet] table and "
                    "[[facility.streams]] and/or [[facility.inference]] tables"
                )
            preset_keys = [k for k in ("utilization", "overrides") if k in self.model_fields_set]
            if preset_keys:
                raise ValueError(
                    f"{' and '.join(preset_keys)}: for a preset only; with a full spec set "
                    "utilization in each [[facility.streams]] / [[facility.inference]] table "
                    "and write every other value in its table"
                )
            self.to_spec()  # the cross-checks of FacilitySpec (pool size, shares)
        return self

    def to_spec(self):
        """The ``aiload.facility.FacilitySpec`` of a full spec, or the preset name [str]."""
        if self.preset is not None:
            return self.preset
        from aiload.facility.spec import FacilitySpec, OverheadSpec  # noqa: PLC0415

        return FacilitySpec(
            fleet=self.fleet.to_spec(),
            streams=tuple(s.to_spec() for s in self.streams),
            inference=tuple(s.to_spec() for s in self.inference),
            overheads=self.overheads.to_spec() if self.overheads else OverheadSpec(),
            backfill=True if self.backfill is None else self.backfill,
        )

    @model_validator(mode="after")
    def _order(self) -> FacilitySection:
        if self.end <= self.start:
            raise ValueError(
                f"end ({self.end.isoformat()}) must be after start ({self.start.isoformat()})"
            )
        step = pd.Timedelta(pd.tseries.frequencies.to_offset(self.freq))
        horizon = pd.Timestamp(self.end) - pd.Timestamp(self.start)
        if horizon < step:
            raise ValueError(f"the horizon {self.start} .. {self.end} is shorter than one step {self.freq}")
        if horizon % step:
            start = pd.Timestamp(self.start)
            ends = [_offset_datetime(start + horizon // step * step),
                    _offset_datetime(start + (horizon // step + 1) * step)]
            raise ValueError(
                f"the horizon start = {_offset_datetime(start)} .. end = "
                f"{_offset_datetime(self.end)} ({horizon.total_seconds() / 3600:g} h) is not a "
                "whole number of "
                f"freq = {self.freq!r} steps; set end = {ends[0]} or {ends[1]}, or a freq that "
                "divides the horizon"
            )
        return self


class QueuedFacilitySection(FacilitySection):
    """One facility of an interconnection queue (a ``[[facility]]`` table): a ``[facility]``
    table with its ``bus``, a ``name`` and its site's clock (:mod:`scenarios.schema_queue`)."""

    bus: int = Field(ge=0, description="index of the bus this facility connects to [-]")
    name: str | None = Field(None, description="label in the report; None: 'bus N'")
    timezone: str | None = Field(
        None, description="the site's clock, an IANA name such as 'America/Chicago': the "
        "facility model runs on it (time-of-day demand); None: the offset of start")

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str | None) -> str | None:
        return SiteSection._timezone(value)


def _facility_kind(value: Any) -> str:
    return "[[facility]]" if isinstance(value, (list, tuple)) else "[facility]"


#: ``[facility]`` (one facility at grid.bus) or ``[[facility]]`` (a queue, a bus each); the
#: tags carry brackets so that the loader leaves them out of field paths in messages
FacilityTables = Annotated[
    Annotated[FacilitySection, Tag("[facility]")]
    | Annotated[list[QueuedFacilitySection], Tag("[[facility]]")],
    Discriminator(_facility_kind),
]


class SiteSection(_Section):
    """Where the facility is and which weather year drives PV (and weather-driven cooling)."""

    latitude: float | None = Field(
        None, ge=-90.0, le=90.0, description="site latitude [deg]; None: the weather file's"
    )
    longitude: float | None = Field(
        None, ge=-180.0, le=180.0, description="site longitude [deg]; None: the weather file's"
    )
    weather: str | None = Field(
        None,
        description="TMY3 weather file, absolute or relative to the scenario file; None: pvlib's "
        "bundled 723170TYA.CSV (Greensboro NC)",
    )
    timezone: str | None = Field(
        None,
        description="the site's clock for time-of-day charts, an IANA name such as "
        "'America/New_York' (data stay in UTC); None: 'America/New_York' for the bundled "
        "Greensboro weather, else the weather file's standard-time UTC offset",
    )

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str | None) -> str | None:
        if value is None:
            return value
        try:
            pd.Timestamp("2025-01-01", tz=value)
        except Exception:  # zoneinfo and pytz raise different types for an unknown zone
            raise ValueError(
                f"unknown time zone {value!r}; expected an IANA name such as 'America/New_York' "
                "or 'Europe/Berlin', or a fixed offset such as 'Etc/GMT+5' (UTC-5)"
            ) from None
        return value


class GridLimitsSection(_Section):
    """Operating limits of the grid studies."""

    vm_min_pu: float = Field(0.95, gt=0.5, lt=1.0, description="lowest allowed bus voltage [pu]")
    vm_max_pu: float = Field(1.05, gt=1.0, lt=1.5, description="highest allowed bus voltage [pu]")
    loading_max_percent: float = Field(
        100.0, gt=0.0, le=200.0, description="highest allowed line/transformer loading [%]"
    )


class GridBackgroundSection(_Section):
    """An ILLUSTRATIVE background: multipliers of the network's loads from two cosines
    (``grid.flexible_run.cosine_background``): ``mean + seasonal_amplitude cos(season, peak on
    peak_day) + daily_amplitude cos(day, peak at peak_hour_utc)``, rounded to ``decimals``.
    Made up, not measured: it stands in for a utility's hourly load forecast where a test
    network has one load snapshot. Used by the flexible_interconnection and cosimulate studies.
    """

    mean: float = Field(0.80, gt=0.0, le=2.0, description="mean multiplier [-]")
    seasonal_amplitude: float = Field(0.10, ge=0.0, le=1.0,
                                      description="amplitude of the yearly cosine [-]")
    daily_amplitude: float = Field(0.08, ge=0.0, le=1.0,
                                   description="amplitude of the daily cosine [-]")
    peak_day: str = Field("07-15", pattern=r"^\d\d-\d\d$",
                          description="month-day of the seasonal peak, 'MM-DD'")
    peak_hour_utc: float = Field(23.0, ge=0.0, lt=24.0, description="hour of the daily peak [h, UTC]")
    decimals: int = Field(2, ge=0, le=6, description="rounding of the multipliers (fewer distinct "
                          "levels: a faster flexible_interconnection) [-]")

    @field_validator("peak_day")
    @classmethod
    def _month_day(cls, value: str) -> str:
        try:
            dt.date(2001, int(value[:2]), int(value[3:]))  # a month-day every year has
        except ValueError:
            raise ValueError(f"peak_day = {value!r} is not a date of every year; expected "
                             "'MM-DD' such as '07-15' (not '02-29')") from None
        return value

    @model_validator(mode="after")
    def _non_negative(self) -> GridBackgroundSection:
        if self.mean - self.seasonal_amplitude - self.daily_amplitude < 0:
            raise ValueError(
                f"mean {self.mean} minus the amplitudes ({self.seasonal_amplitude}, "
                f"{self.daily_amplitude}) goes below 0; multipliers must stay non-negative")
        return self


class GridFlexibleSection(_Section):
    """The flexible_interconnection and cosimulate studies (issue 15).

    ``flexible_interconnection``: ``grid.flexible_interconnection`` on the facility series at
    ``grid.freq`` (hourly headroom, the curtailment each size needs), then
    ``grid.curtailment_cost`` for ``size_mw``: the implied limit run through the facility model
    (a second facility run over the whole horizon, at ``grid.freq``). ``cosimulate``:
    ``grid.cosimulate`` over ``cosim_start``..``cosim_end`` at ``cosim_freq`` (a third facility
    run, in closed loop with the network), against the same window without the loop.
    """

    background: GridBackgroundSection | None = Field(
        None, description="illustrative multipliers of the network's loads; absent: the "
        "loads as in the network at every step")
    sizes_mw: list[float] | None = Field(
        None, description="facility peaks to study [MW]; None: the firm capacity x 1.00, 1.05, "
        "..., 2.00")
    tolerance_mw: float = Field(0.01, gt=0.0, lt=1000.0,
                                description="bisection tolerance of the headroom [MW]")
    size_mw: float | None = Field(
        None, gt=0.0, description="size whose implied limit is run through the facility model "
        "[MW]; None: the facility's own peak at grid.freq (the facility as simulated)")
    curtailment_cost: bool = Field(
        True, description="run the chosen size's implied limit through the facility model")
    cosim_start: dt.datetime | None = Field(
        None, description="first instant of the closed-loop run (tz-aware); None: facility.start")
    cosim_end: dt.datetime | None = Field(
        None, description="end of the closed-loop run (tz-aware); None: 7 days after cosim_start")
    cosim_freq: str = Field("5min", description="output step of the closed-loop run")
    control_period: str = Field("5min", description="control period of the loop and of the "
                                "curtailment-cost run: a whole multiple or divisor of "
                                "cosim_freq and of grid.freq")
    controller: Literal["voltage", "loading"] = Field(
        "voltage", description="'voltage': hold the facility bus at or above limits.vm_min_pu; "
        "'loading': hold `branches` below limits.loading_max_percent")
    branches: list[str] | None = Field(
        None, description="branches the loading controller watches, e.g. ['line 3', 'trafo 0']; "
        "None: all")

    @field_validator("cosim_freq", "control_period")
    @classmethod
    def _freqs(cls, value: str) -> str:
        return _check_freq(value)

    @model_validator(mode="after")
    def _branches_for_loading(self) -> GridFlexibleSection:
        if self.branches is not None and self.controller != "loading":
            raise ValueError(f"branches = {self.branches} are watched only by controller = "
                             f"'loading', got controller = {self.controller!r}; remove branches "
                             "or set controller = 'loading'")
        return self

    @field_validator("sizes_mw")
    @classmethod
    def _sizes(cls, value: list[float] | None) -> list[float] | None:
        if value is not None and (not value or min(value) <= 0):
            raise ValueError(f"sizes_mw: expected one or more facility peaks > 0 [MW], got "
                             f"{value!r} (leave the key out for the firm capacity x 1.00 .. 2.00)")
        return value

    @field_validator("cosim_start", "cosim_end")
    @classmethod
    def _aware(cls, value: dt.datetime | None, info) -> dt.datetime | None:
        return value if value is None else _check_aware(value, info.field_name)


class ShortCircuitSection(_Section):
    """The ``short_circuit`` study: ``grid.short_circuit_strength`` (IEC 60909 Sk'' and the
    short-circuit ratio at the facility bus, intact and after each N-1 outage).

    The thresholds are inputs; the other keys are ``grid.ShortCircuitData``, used only where
    the network lacks the value (power-flow cases such as case118 carry none of them) and
    listed in the result's ``assumed``. Typical values, not a network's own: ext_grid_rx 0.1,
    gen_xdss_pu 0.2, gen_rx 0.07, gen_cos_phi 0.85, line_end_temp_degree 80; the grid's
    short-circuit power comes from its operator.
    """

    facility_mw: float | None = Field(
        None, gt=0.0, description="facility power the ratios are taken of [MW]; None: the peak of "
        "the facility series at grid.freq"
    )
    scr_weak: float = Field(3.0, gt=0.0, description="SCR below which the point is weak [-]")
    scr_very_weak: float = Field(
        2.0, gt=0.0, description="SCR below which the point is very weak [-]"
    )
    outages: Literal["lines", "trafos", "lines+trafos", "none"] = Field(
        "lines+trafos", description="branches taken out one at a time ('none': intact only)"
    )
    ext_grid_sc_max_mva: float | None = Field(
        None, gt=0.0, description="external grid's short-circuit power, maximum case [MVA]"
    )
    ext_grid_sc_min_mva: float | None = Field(
        None, gt=0.0, description="external grid's short-circuit power, minimum case [MVA]"
    )
    ext_grid_rx: float | None = Field(None, gt=0.0, description="external grid's R/X ratio [-]")
    gen_xdss_pu: float | None = Field(
        None, gt=0.0, description="generators' subtransient reactance X''d on their rating [pu]"
    )
    gen_rx: float | None = Field(None, gt=0.0, description="generators' R/X ratio [-]")
    gen_cos_phi: float | None = Field(
        None, gt=0.0, le=1.0, description="generators' rated power factor [-] (rating "
        "= max(max_p_mw, p_mw) / gen_cos_phi where none is given)"
    )
    line_end_temp_degree: float | None = Field(
        None, gt=0.0, description="conductor temperature at the end of the fault, minimum "
        "case [degC]"
    )

    @model_validator(mode="after")
    def _thresholds(self) -> ShortCircuitSection:
        if self.scr_very_weak > self.scr_weak:
            raise ValueError(
                f"scr_very_weak = {self.scr_very_weak} is above scr_weak = {self.scr_weak}; "
                "need scr_very_weak <= scr_weak (e.g. 2 and 3)"
            )
        return self

    def data_kwargs(self) -> dict[str, float | None]:
        """The ``grid.ShortCircuitData`` keyword arguments of this table."""
        return {k: getattr(self, k) for k in (
            "ext_grid_sc_max_mva", "ext_grid_sc_min_mva", "ext_grid_rx", "gen_xdss_pu",
            "gen_rx", "gen_cos_phi", "line_end_temp_degree")}


class GridSection(_Section):
    """Interconnection studies of the facility at one bus of a network (grid package)."""

    network: str = Field(
        description="bundled network name ('cigre_mv', 'cigre_hv', 'case33bw', 'case39', 'case118', "
        "'case300') or a pandapower JSON / MATPOWER file path"
    )
    bus: int | None = Field(None, ge=0, description="index of the bus the facility connects "
                            "to [-]; required with [facility], left out with [[facility]] "
                            "tables (each names its bus)")
    power_factor: float = Field(0.99, gt=0.0, le=1.0, description="facility power factor [-]")
    studies: list[Literal["timeseries", "hosting_capacity", "contingency", "short_circuit",
                          "load_loss", "flexible_interconnection", "cosimulate"]] = Field(
        default_factory=lambda: list(DEFAULT_GRID_STUDIES),
        description="which studies to run; short_circuit only when named (it needs the "
        "[grid.short_circuit] data a power-flow case lacks)",
    )
    enforce_q_lims: bool | None = Field(
        None, description="enforce generators' reactive-power limits in every study (PV->PQ "
        "switching, as pandapower's runpp(enforce_q_lims=True)); None: the network's default, "
        "on where generators have Q limits (case118, case300, MATPOWER files)",
    )
    min_margin_fraction: float = Field(
        0.05, ge=0.0, lt=10.0, description="contingency: flag (low_margin) a case whose "
        "voltage-collapse margin is below this share of the facility's peak [-]; 0.05 is WECC's "
        "5 % for N-1",
    )
    short_circuit: ShortCircuitSection = Field(
        default_factory=ShortCircuitSection,
        description="thresholds and IEC 60909 data of the short_circuit study",
    )
    limits: GridLimitsSection = Field(
        default_factory=GridLimitsSection, description="voltage band and loading limit"
    )
    flexible: GridFlexibleSection = Field(
        default_factory=GridFlexibleSection,
        description="the flexible_interconnection and cosimulate studies",
    )
    freq: str = Field(
        "1h", description="resolution of the power-flow time series (facility load averaged to it)"
    )
    contingency_hours: int = Field(
        24, ge=1, le=8760, description="number of peak-load hours at which N-1 is checked [-]"
    )
    dynamics: DynamicsSection | None = Field(
        None, description="a dynamic study in ANDES (grid.dynamics): the facility through a "
        "fault, a trip or a load step; absent: none"
    )

    @field_validator("freq")
    @classmethod
    def _freq(cls, value: str) -> str:
        return _check_freq(value)

    @field_validator("studies")
    @classmethod
    def _some_study(cls, value: list[str]) -> list[str]:
        if not value:  # a [grid] table that ran nothing, without a word
            raise ValueError(
                f"no study; expected one or more of {', '.join(map(repr, GRID_STUDIES))}, e.g. "
                "studies = [\"timeseries\"]; leave the key out for the default studies, or "
                "remove the [grid] table for none"
            )
        return value


class PVSection(_Section):
    """Fixed-tilt PV plant orientation for ``microgrid.pv_availability``."""

    tilt: float = Field(25.0, ge=0.0, le=90.0, description="module tilt [deg]")
    azimuth: float = Field(180.0, ge=0.0, lt=360.0, description="module azimuth, 180 = south [deg]")


class MicrogridSection(_Section):
    """On-site PV, battery and generators behind an import limit (microgrid package).

    ``costs``, ``battery``, ``generator`` and ``options`` are handed to the microgrid package's
    own dataclasses and ``size()``; their keys and units are those of that package and are
    checked before any computation starts.
    """

    import_limit_kw: float | None = Field(
        None, ge=0.0,
        description="largest grid import [kW]; None: sized too, priced by "
        "costs.import_capacity_usd_per_kw_year",
    )
    freq: str = Field("1h", description="resolution of the sizing problem (load averaged to it)")
    pv: PVSection | None = Field(
        default_factory=PVSection, description="PV plant; omit the table for no PV"
    )
    cost_set: str | None = Field(
        None, description="a bundled, cited cost set (microgrid.cost_set_names()); then the "
        "costs table overrides single prices: microgrid.costs(cost_set, year=cost_year, "
        "discount_rate=discount_rate, generator=generator_technology, **costs)",
    )
    cost_year: int | None = Field(None, description="cost year of the cost set; None: its first")
    discount_rate: float = Field(
        0.07, ge=0.0, lt=1.0,
        description="real discount rate of the cost set's annualisation [1/year]",
    )
    generator_technology: str | None = Field(
        None, description="a bundled generator technology (microgrid.technology_names()): "
        "its emissions and run-hour cap, and its prices when cost_set is given; the generator "
        "table overrides single fields",
    )
    extra_generator_technologies: list[str] = Field(
        default_factory=list,
        description="further bundled generator technologies beside generator_technology, "
        "each sized on its own and priced by cost_set (microgrid.priced_generator), e.g. "
        "[\"diesel\"] for emergency backup; needs cost_set",
    )
    costs: dict[str, Any] = Field(
        default_factory=dict,
        description="microgrid.Costs(**costs), or single prices over cost_set",
    )
    battery: dict[str, Any] = Field(
        default_factory=dict,
        description="microgrid.Battery(**battery); max_energy_kwh = 0 for no battery",
    )
    generator: dict[str, Any] = Field(
        default_factory=dict,
        description="microgrid.Generator(**generator); max_power_kw = 0 for no generator",
    )
    max_dump_load_kw: float = Field(
        0.0, ge=0.0, description="largest power a dump load (load bank) may burn [kW]: where a "
        "generator's minimum load or a ramp limit leaves supply the load cannot take; "
        "0: none (microgrid.size's max_dump_load_kw)",
    )
    allow_simultaneous_charge_discharge: bool = Field(
        False, description="let the battery charge and discharge in the same step (a pure LP, "
        "faster; the energy so burned is reported as burned_by_cycling_kwh); false: never"
    )
    carbon: dict[str, Any] | None = Field(
        None, description="microgrid.Carbon(**carbon): grid_kg_per_kwh, price_usd_per_t, "
        "cap_t_per_year; price_usd_per_t = \"cost_set\" takes the cost set's carbon price "
        "for cost_year; absent: no carbon accounting in the optimum",
    )
    options: dict[str, Any] = Field(
        default_factory=dict, description="further keyword arguments of microgrid.size()"
    )

    @field_validator("freq")
    @classmethod
    def _freq(cls, value: str) -> str:
        return _check_freq(value)

    @model_validator(mode="after")
    def _options_not_twice(self) -> MicrogridSection:
        twice = sorted({"max_dump_load_kw", "allow_simultaneous_charge_discharge",
                        "import_limit_kw", "extra_generators", "generator_name"}
                       & set(self.options))
        if twice:
            raise ValueError(
                f"options has {', '.join(twice)}, which [microgrid] sets itself; write "
                f"{twice[0]} = ... in [microgrid] and remove it from [microgrid.options]"
            )
        if self.extra_generator_technologies and self.cost_set is None:
            raise ValueError(
                f"extra_generator_technologies = {self.extra_generator_technologies} needs "
                "cost_set: further technologies are priced by a bundled cost set"
            )
        names = [self.generator_technology or "generator", *self.extra_generator_technologies]
        if len(set(names)) != len(names):
            raise ValueError(
                f"extra_generator_technologies = {self.extra_generator_technologies} repeats a "
                f"technology or the main generator's ({names[0]!r}); expected each further "
                "technology once, other than generator_technology"
            )
        method = self.options.get("method", "auto")
        if method not in ("auto", "exact", "decompose"):
            raise ValueError(f"options.method = {method!r}; expected 'auto' (the default: the "
                             "fastest certified method), 'exact' or 'decompose'")
        return self


class SweepSection(_Section):
    """Values for ``aiload sweep``: the cartesian product of ``values`` x ``replicates``."""

    values: dict[str, list[float | int | str]] = Field(
        default_factory=dict,
        description="dotted field -> list of values, e.g. 'facility.utilization' = [0.2, 0.4]",
    )
    replicates: int = Field(1, ge=1, le=10000, description="replicates per case [-]")
    percentiles: list[float] = Field(
        default_factory=lambda: [10.0, 50.0, 90.0],
        description="percentiles of the bands across replicates [%]",
    )

    @field_validator("percentiles")
    @classmethod
    def _pct(cls, value: list[float]) -> list[float]:
        bad = [p for p in value if not 0.0 <= p <= 100.0]
        if bad:
            raise ValueError(f"percentiles must lie in [0, 100], got {bad}")
        return value


class OutputsSection(_Section):
    """Which files ``aiload run`` writes besides ``summary.json`` (always written)."""

    report: bool = Field(True, description="write report.html")
    facility_parquet: bool = Field(True, description="write facility.parquet")
    jobs: bool = Field(
        False,
        description="also write facility.jobs.parquet, one row per batch job (arrival, start, "
        "end, nodes, workload, stream, replicate; ~14 bytes a job, ~62 MB for a campus year)",
    )
    dpi: int = Field(90, ge=40, le=300, description="resolution of the report's figures [dpi]")

    @model_validator(mode="after")
    def _jobs_with_power(self) -> OutputsSection:
        if self.jobs and not self.facility_parquet:
            raise ValueError(
                "jobs = true with facility_parquet = false: the job log is written next to "
                "facility.parquet; set facility_parquet = true or jobs = false"
            )
        return self


class Scenario(_Section):
    """A whole study: the facility, and optionally the site, grid, microgrid, sweep, outputs."""

    name: str = Field(description="short name of the scenario")
    description: str = Field("", description="one paragraph shown at the top of the report")
    facility: FacilityTables = Field(
        description="the facility model run (aiload.facility): one [facility] table, or one "
        "[[facility]] table per facility of an interconnection queue, each with its bus")
    queue: QueueSection | None = Field(
        None, description="with [[facility]] tables: seeds, queue order and which facilities "
        "trip together; absent: QueueSection's defaults")
    site: SiteSection = Field(default_factory=SiteSection, description="location and weather")
    grid: GridSection | None = Field(None, description="grid studies; absent: none")
    microgrid: MicrogridSection | None = Field(None, description="sizing; absent: none")
    stabilise: StabiliseSection | None = Field(
        None, description="what holds POI limits on ramps and band fluctuation "
        "(microgrid.stabilise) on the facility series at its own step; absent: none")
    sweep: SweepSection = Field(default_factory=SweepSection, description="sweep values")
    outputs: OutputsSection = Field(default_factory=OutputsSection, description="output files")

    @model_validator(mode="after")
    def _one_or_queue(self) -> Scenario:
        if isinstance(self.facility, list):
            check_queue_fields(self.facility, self.queue,
                               self.grid.bus if self.grid is not None else None)
            return self
        if self.queue is not None:
            raise ValueError("a [queue] table with one [facility] table: [queue] orders "
                             "[[facility]] tables (a queue, a bus each); remove [queue] or "
                             "write the facilities as [[facility]] tables")
        if self.grid is not None and self.grid.bus is None:
            raise ValueError("field 'grid.bus' is required but missing: the bus the "
                             "[facility] connects to; add bus = N to [grid] (or write "
                             "[[facility]] tables, each with its bus)")
        return self

    @property
    def queued(self) -> bool:
        """Whether the scenario is an interconnection queue (``[[facility]]`` tables)."""
        return isinstance(self.facility, list)
