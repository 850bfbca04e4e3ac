"""The full facility specification of a scenario file: fleet, job streams, inference, overheads.

Instead of ``preset = "..."`` the ``[facility]`` table may describe the site itself::

    [facility.fleet]               # aiload.facility.FleetSpec
    [[facility.streams]]           # one aiload.facility.JobStreamSpec per table (any number)
    [[facility.inference]]         # one aiload.facility.InferenceSpec per table (any number)
    [facility.overheads]           # aiload.facility.OverheadSpec (optional)

Each table maps one to one onto the facility package's frozen dataclass of the same role; the
keys, units and defaults are those of the dataclass (a test checks the defaults agree). Every
table builds its dataclass while the file is validated, so a bad value is reported with the
file, the line and the field before anything is simulated.
"""

from __future__ import annotations

import datetime as dt
import math
import typing
from typing import Any, Literal

import pandas as pd
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

__all__ = ["FleetSection", "JobStreamSection", "InferenceSection", "OverheadsSection"]


def _non_finite_path(value: Any, path: str) -> str | None:
    """The dotted path of the first NaN or infinite number inside ``value``; None if none."""
    if isinstance(value, float) and not math.isfinite(value):
        return path
    if isinstance(value, dict):
        items = ((f".{k}", v) for k, v in value.items())
    elif isinstance(value, (list, tuple)):
        items = ((f"[{i}]", v) for i, v in enumerate(value))
    else:
        return None
    for key, item in items:
        found = _non_finite_path(item, f"{path}{key}")
        if found is not None:
            return found
    return None


def _holds_section(annotation: Any) -> bool:
    """True when a field's type is (or contains) a table of its own, checked there."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return True
    return any(_holds_section(a) for a in typing.get_args(annotation))


def refuse_non_finite(cls: type[BaseModel], value: Any, info: ValidationInfo) -> Any:
    """Field validator (mode "before") of every table: no NaN or inf anywhere in a value.

    TOML has ``nan`` and ``inf`` literals; no aiload setting means either, so one anywhere,
    free-form tables such as ``[microgrid.costs]`` included, is an error naming the key.
    """
    name = info.field_name or ""
    if _holds_section(cls.model_fields[name].annotation):
        return value  # a nested table: its own validator names the key inside it
    where = _non_finite_path(value, name)
    if where is not None:
        raise ValueError(
            f"{where} is NaN or infinite; every number in a scenario must be finite (leave "
            "the key out to use its default, or give a finite bound)"
        )
    return value


class _SpecSection(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, validate_default=True, allow_inf_nan=False
    )

    _finite = field_validator("*", mode="before")(refuse_non_finite)

    def _spec_kwargs(self) -> dict[str, Any]:
        return self.model_dump()


class FleetSection(_SpecSection):
    """The nodes of a custom facility (``aiload.facility.FleetSpec``)."""

    nodes: int = Field(ge=1, description="number of compute nodes [-]")
    hardware: str = Field(
        "4xH100", description="node type of the profile library: '4xH100', '8xH100-SXM', "
        "'8xH200-SXM'"
    )
    idle_w: float | None = Field(
        None, ge=0.0,
        description="power of an idle node [W]; None: the measured idle power of `hardware` "
        "(aiload.profiles.idle_power_w), 700 W where none is measured",
    )
    nameplate_w: float = Field(
        3520.0, gt=0.0, description="rated power of one node (UPS load fraction, power cap) [W]"
    )
    other_it_w_per_busy_node: float = Field(
        0.0, ge=0.0, description="network/storage power added per busy node [W]"
    )
    other_it_base_kw: float = Field(
        0.0, ge=0.0, description="constant IT load besides the nodes [kW]"
    )
    measured_at: str | None = Field(
        None, description="where the profiles' power is measured: 'component' (GPU + CPU) or "
        "'node-ac'; None: that of `hardware`'s bundled profiles (aiload.profiles.node_boundary)",
    )
    rest_of_node_w: float = Field(
        0.0, ge=0.0, description="rest-of-node power per powered node at zero component power [W]"
    )
    rest_of_node_fraction: float = Field(
        0.0, ge=0.0, lt=1.0, description="rest-of-node power per W of component power [-]"
    )
    psu_loss_fraction: float = Field(
        0.0, ge=0.0, lt=1.0, description="PSU conversion: AC input per DC node power, minus 1 [-]"
    )
    network_w_per_node: float = Field(
        0.0, ge=0.0, description="network switch power per installed node [W]"
    )
    storage_w_per_node: float = Field(
        0.0, ge=0.0, description="storage power per installed node [W]"
    )

    def to_spec(self):
        """The ``FleetSpec`` (the idle power looked up when not given)."""
        from aiload.facility.spec import FleetSpec  # noqa: PLC0415 - heavy package

        kwargs = self._spec_kwargs()
        if kwargs["idle_w"] is None:
            kwargs["idle_w"] = measured_idle_w(self.hardware)
        return FleetSpec(**kwargs)

    @model_validator(mode="after")
    def _build(self) -> FleetSection:
        self.to_spec()
        return self


def measured_idle_w(hardware: str) -> float:
    """Idle node power of ``hardware`` from the profile library, else FleetSpec's default [W]."""
    import dataclasses  # noqa: PLC0415

    from aiload.facility.spec import FleetSpec  # noqa: PLC0415

    try:
        import aiload.profiles as profiles  # noqa: PLC0415

        return float(profiles.idle_power_w(hardware))
    except (ImportError, AttributeError, LookupError, ValueError):
        return next(f.default for f in dataclasses.fields(FleetSpec) if f.name == "idle_w")


class JobStreamSection(_SpecSection):
    """One stream of batch jobs (``aiload.facility.JobStreamSpec``), a ``[[facility.streams]]``
    table; give exactly one of ``utilization``, ``rate_per_h`` or ``arrivals``."""

    name: str = Field(description="label of the stream in the event log")
    workloads: dict[str, float] = Field(
        min_length=1,
        description="workload mix, model -> weight (normalised to 1), e.g. "
        "{ llama2-70b-lora = 0.5, stable-diffusion-v2 = 0.5 }",
    )
    node_counts: dict[int, float] = Field(
        min_length=1,
        description="nodes of one job -> weight (normalised to 1), e.g. { 2 = 0.6, 8 = 0.4 }",
    )
    utilization: float | None = Field(
        None, gt=0.0, le=1.0,
        description="share of the job pool's node-time this stream keeps busy, (0, 1] [-]",
    )
    rate_per_h: float | None = Field(None, gt=0.0, description="mean arrival rate [jobs/h]")
    arrivals: list[float | dt.datetime] | None = Field(
        None,
        description="replayed arrivals: seconds after facility.start [s] or offset date-times",
    )
    daily_amplitude: float = Field(
        0.0, ge=0.0, lt=1.0, description="relative daily modulation of the arrival rate [-]"
    )
    weekly_amplitude: float = Field(
        0.0, ge=0.0, lt=1.0, description="weekend reduction of the arrival rate [-]"
    )
    peak_hour: float = Field(14.0, ge=0.0, lt=24.0, description="local hour of the daily peak [h]")
    duration_s: float | None = Field(
        None, gt=0.0,
        description="fixed job duration [s] (profile repeated); None: the profile's own length",
    )
    profile_nodes: int | None = Field(
        None, ge=1, description="take the per-node profile of this node count instead [-]"
    )
    arrival_process: str | None = Field(
        None,
        description="submissions as a log-Gaussian Cox process: a bundled fit's name "
        "('helios-earth', 'colocation'); None: Poisson with the cosine modulation",
    )
    burn_in_s: float | None = Field(
        None, ge=0.0,
        description="simulated time before facility.start, not output [s]; None: 4 days for "
        "generated arrivals, none for replays",
    )

    @model_validator(mode="after")
    def _one_rate(self) -> JobStreamSection:
        given = [k for k in ("utilization", "rate_per_h", "arrivals")
                 if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                f"stream {self.name!r}: give exactly one of utilization, rate_per_h or arrivals, "
                f"got {given or 'none'}"
            )
        stamps = [a for a in self.arrivals or () if isinstance(a, dt.datetime)]
        if stamps and len(stamps) != len(self.arrivals):
            raise ValueError(
                f"stream {self.name!r}: arrivals mix seconds and date-times; give all as seconds "
                "after facility.start or all as offset date-times"
            )
        naive = [a.isoformat() for a in stamps if a.utcoffset() is None]
        if naive:
            raise ValueError(
                f"stream {self.name!r}: arrivals {naive} have no time zone; write them with an "
                "offset, e.g. 2025-03-03T12:00:00Z"
            )
        self.to_spec()
        return self

    def to_spec(self):
        """The ``JobStreamSpec`` (date-time arrivals as UTC timestamps)."""
        from aiload.facility.spec import JobStreamSpec  # noqa: PLC0415

        kwargs = self._spec_kwargs()
        if kwargs["arrivals"] is not None:
            kwargs["arrivals"] = [a if isinstance(a, float) else pd.Timestamp(a).tz_convert("UTC")
                                  for a in kwargs["arrivals"]]
        return JobStreamSpec(**kwargs)


class InferenceSection(_SpecSection):
    """An online inference service on its own nodes (``aiload.facility.InferenceSpec``), a
    ``[[facility.inference]]`` table."""

    nodes: int = Field(ge=1, description="nodes of the serving pool, taken out of the fleet [-]")
    utilization: float = Field(
        gt=0.0, le=1.0, description="achieved mean share of busy nodes (sizing 'latency'), or "
        "mean demand / pool capacity (sizing 'autoscaler') [-]"
    )
    model: str = Field("llama3-70b", description="served model (for the power curve)")
    shape: Literal["azure-2024-week", "servegen-m-large"] = Field(
        "azure-2024-week", description="demand shape: 'azure-2024-week' (the Azure 2024 LLM "
        "inference week, digitised from its published plots, on the calendar: weekday and local "
        "time, with a level for each day and the per-minute spread of the plots, drawn from the "
        "seed) or 'servegen-m-large' (the real ServeGen trace, 14 days from the run's first "
        "local midnight; no random part)"
    )
    bursts: bool = Field(
        False, description="add sub-10-min burstiness from Azure 2023/Mooncake arrivals (freq "
        "<= 1min); replaces the Azure week's minute spread"
    )
    capacity_per_s: float | None = Field(
        None, gt=0.0, description="requests one node serves [requests/s]; None: from the fit"
    )
    latency_target_s: float | None = Field(
        5.5, gt=0.0, description="median end-to-end latency target the capacity is read at; "
        "None: the saturation throughput [s]"
    )
    sizing: Literal["latency", "autoscaler"] = Field(
        "latency", description="nodes per interval from the latency target (NLR), or the "
        "replica autoscaler with target_load/headroom/reaction_s"
    )
    timeout_s: float = Field(
        60.0, ge=0.0, description="latency sizing: longest wait before a request gives up [s]"
    )
    target_load: float = Field(
        0.8, gt=0.0, le=1.0, description="autoscaling target load per node [-]"
    )
    headroom: float = Field(0.1, ge=0.0, description="extra replicas on top of the target [-]")
    reaction_s: float = Field(300.0, ge=0.0, description="delay of a replica change [s]")
    decision_s: float = Field(60.0, gt=0.0, description="interval between decisions [s]")
    min_replicas: int = Field(1, ge=0, description="replicas always on [-]")
    curve_hardware: str | None = Field(
        None, description="hardware of the measured power curve; None: the fleet's"
    )
    curve_nodes_per_node: float = Field(
        1.0, gt=0.0, description="curve servers one fleet node counts as [-]"
    )

    @model_validator(mode="after")
    def _build(self) -> InferenceSection:
        self.to_spec()
        return self

    def to_spec(self):
        """The ``InferenceSpec``."""
        from aiload.facility.spec import InferenceSpec  # noqa: PLC0415

        return InferenceSpec(**self._spec_kwargs())


class OverheadsSection(_SpecSection):
    """UPS/distribution losses and cooling (``aiload.facility.OverheadSpec``); losses are
    ``P_rated·(a + b·x + c·x²)`` with ``x`` the IT load fraction."""

    loss_a: float = Field(0.02, ge=0.0, description="no-load loss coefficient [-]")
    loss_b: float = Field(0.01, ge=0.0, description="proportional loss coefficient [-]")
    loss_c: float = Field(0.02, ge=0.0, description="square-law loss coefficient [-]")
    cooling: Literal["pue", "drybulb", "liquid"] = Field(
        "pue", description="constant PUE, air cooling driven by the dry-bulb (economiser and "
        "chillers), or direct-to-chip liquid cooling"
    )
    pue: float = Field(1.3, ge=1.0, lt=5.0, description="cooling-only PUE [-]")
    weather: Literal["pvlib-greensboro"] = Field(
        "pvlib-greensboro", description="dry-bulb year of the 'drybulb' cooling (pvlib TMY3 723170)"
    )
    economiser_below_c: float = Field(
        18.0, description="free cooling at or below this dry-bulb [degC]"
    )
    economiser_band_c: float = Field(
        8.0, ge=0.0, lt=40.0, description="dry-bulb band above economiser_below_c over which the "
        "chillers take over linearly; 0 switches at the threshold [degC]"
    )
    economiser_fraction: float = Field(
        0.05, ge=0.0, description="cooling power per unit heat in economiser hours [-]"
    )
    cop_at_35c: float = Field(4.0, gt=0.0, description="chiller COP at 35 degC dry-bulb [-]")
    cop_slope_per_c: float = Field(0.15, description="COP gain per degC cooler air [1/degC]")
    cooling_time_constant_s: float | None = Field(
        None, ge=0.0, description="first-order lag of cooling behind IT and weather; None: "
        "3600 for 'drybulb'/'liquid', 0 for 'pue' [s]"
    )
    liquid_capture: float = Field(
        0.8, ge=0.0, le=1.0, description="'liquid': share of the heat on the cold plates [-]"
    )
    liquid_overhead: float = Field(
        0.03, ge=0.0, lt=1.0, description="'liquid': pumps and dry coolers per unit heat [-]"
    )
    liquid_free_below_c: float = Field(
        27.0, description="'liquid': dry-bulb up to which dry coolers alone suffice [degC]"
    )
    power_cap_kw: float | None = Field(
        None, gt=0.0, description="facility power cap: jobs wait rather than exceed it [kW]"
    )

    @model_validator(mode="after")
    def _build(self) -> OverheadsSection:
        self.to_spec()
        return self

    def to_spec(self):
        """The ``OverheadSpec``."""
        from aiload.facility.spec import OverheadSpec  # noqa: PLC0415

        return OverheadSpec(**self._spec_kwargs())
