"""``[facility.flexibility]``: how the facility meets a power limit (``FlexibilitySpec``).

Optional in any ``[facility]`` table (preset or full spec)::

    [facility.flexibility]              # aiload.facility.FlexibilitySpec
    merit_order = ["battery", "power_cap", "deferral", "inference"]
    [facility.flexibility.battery]      # BatteryLever (absent: no battery)
    [facility.flexibility.power_cap]    # PowerCapLever (absent: its defaults)
    [facility.flexibility.deferral]     # DeferralLever
    [facility.flexibility.inference]    # InferenceLever

The keys, units and defaults are those of the dataclasses (a test checks they agree); every
table builds its dataclass while the file is validated, so a bad value is reported with the
file, the line and the key before anything runs. The settings apply to the facility runs that
take a power limit (``[grid.flexible]``: the curtailment cost and the closed loop); the
open-loop ``[facility]`` run does not use them.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, field_validator, model_validator

from scenarios.schema_facility import _SpecSection

__all__ = ["BatteryLeverSection", "DeferralLeverSection", "FlexibilitySection",
           "InferenceLeverSection", "PowerCapLeverSection"]

_SOURCE = "where the numbers come from; None: the lever's stated default source"


class _LeverSection(_SpecSection):
    _lever: ClassVar[str] = ""  # the dataclass's name in aiload.facility.flexspec

    def to_spec(self):
        """The lever's dataclass (``source`` left at its default when not given)."""
        from aiload.facility import flexspec  # heavy package: imported when used

        kwargs = {k: v for k, v in self._spec_kwargs().items()
                  if not (k == "source" and v is None)}
        return getattr(flexspec, self._lever)(**kwargs)

    @model_validator(mode="after")
    def _build(self):
        self.to_spec()
        return self


class BatteryLeverSection(_LeverSection):
    """A battery behind the meter (``aiload.facility.BatteryLever``); the meter reads site load
    minus discharge."""

    _lever: ClassVar[str] = "BatteryLever"
    power_kw: float = Field(gt=0.0, description="largest charge or discharge power [kW]")
    energy_kwh: float = Field(gt=0.0, description="usable energy between SOC 0 and 1 [kWh]")
    round_trip_efficiency: float = Field(
        0.85, gt=0.0, le=1.0, description="energy out per energy in, applied on charging [-]")
    soc_min: float = Field(0.1, ge=0.0, le=1.0, description="lowest state of charge [fraction]")
    soc_max: float = Field(0.9, ge=0.0, le=1.0, description="highest state of charge [fraction]")
    soc_initial: float = Field(0.9, ge=0.0, le=1.0,
                               description="state of charge at facility.start [fraction]")
    response_s: float = Field(1.0, ge=0.0, description="time from the limit being seen to the "
                              "battery delivering [s]")
    source: str | None = Field(None, description=_SOURCE)


class InferenceLeverSection(_LeverSection):
    """Inference throttling (``aiload.facility.InferenceLever``): fewer serving nodes, each at
    its capacity at the latency target; requests beyond wait up to the timeout, then unserved."""

    _lever: ClassVar[str] = "InferenceLever"
    min_node_fraction: float = Field(
        0.5, ge=0.0, le=1.0, description="fewest nodes kept serving, share of the pool [-]")
    response_s: float = Field(60.0, ge=0.0, description="time for the serving nodes to drain "
                              "and power down [s]")
    source: str | None = Field(None, description=_SOURCE)


class PowerCapLeverSection(_LeverSection):
    """Power caps on the running training and fine-tuning jobs
    (``aiload.facility.PowerCapLever``), along a measured power-cap curve."""

    _lever: ClassVar[str] = "PowerCapLever"
    curve: str = Field("gpu-llm-training", description="power-cap curve: 'gpu-llm-training', "
                       "'gpu-training-v100', 'gpu-llm-inference' or 'hpc-hpl'")
    min_power_fraction: float | None = Field(
        None, gt=0.0, le=1.0, description="deepest cap used, node power fraction [-]; None: "
        "the curve's lowest measured cap")
    gpu_share: float | None = Field(
        None, gt=0.0, le=1.0, description="a GPU curve: the GPUs' share of the node's uncapped "
        "power [-]; None: 0.88 of GPU + CPU power, 0.81 of the node's AC input")
    step: float = Field(0.05, gt=0.0, le=1.0, description="cap levels are multiples of this "
                        "fraction [-]")
    response_s: float = Field(5.0, ge=0.0, description="time for a new cap to act on every "
                              "node [s]")
    source: str | None = Field(None, description=_SOURCE)

    @field_validator("curve")
    @classmethod
    def _known_curve(cls, value: str) -> str:
        from aiload.facility.powercap import power_cap_curve

        power_cap_curve(value)  # InputError naming the known curves
        return value


class DeferralLeverSection(_LeverSection):
    """Deferral (``aiload.facility.DeferralLever``): deferrable jobs pause at a checkpoint and
    resume later; new starts are held while any job is paused."""

    _lever: ClassVar[str] = "DeferralLever"
    checkpoint_s: float = Field(120.0, ge=0.0, description="time to write a checkpoint [s]")
    restart_s: float = Field(300.0, ge=0.0, description="time from resuming to the first step "
                             "of progress [s]")
    response_s: float = Field(30.0, ge=0.0, description="time for the scheduler to signal the "
                              "jobs [s]")
    hold_submissions: bool = Field(True, description="hold new job starts while jobs are paused")
    source: str | None = Field(None, description=_SOURCE)


class FlexibilitySection(_SpecSection):
    """How the facility meets a power limit (``aiload.facility.FlexibilitySpec``): control
    period, merit order, deferrable streams and the levers (docs/flexibility.md)."""

    control_period_s: float = Field(
        60.0, gt=0.0, description="the limit is read and the levers set every control period "
        "[s]; in a scenario [grid.flexible] control_period replaces it when that key is given")
    merit_order: list[str] = Field(
        ["battery", "power_cap", "deferral", "inference"],
        description="levers in the order they are engaged, from 'battery', 'power_cap', "
        "'deferral', 'inference'; a lever left out is never used")
    deferrable_streams: list[str] | None = Field(
        None, description="job streams whose jobs may be paused; None: every job stream")
    release_margin: float = Field(
        0.02, ge=0.0, lt=0.5, description="levers are released only while the projected power "
        "stays this share below the limit (hysteresis) [-]")
    battery: BatteryLeverSection | None = Field(None, description="the battery; None: none")
    inference: InferenceLeverSection | None = Field(
        None, description="inference throttling; None: InferenceLever's defaults")
    power_cap: PowerCapLeverSection | None = Field(
        None, description="power caps; None: PowerCapLever's defaults")
    deferral: DeferralLeverSection | None = Field(
        None, description="deferral; None: DeferralLever's defaults")

    @field_validator("merit_order")
    @classmethod
    def _levers(cls, value: list[str]) -> list[str]:
        from aiload.facility.flexspec import FlexibilitySpec

        FlexibilitySpec(merit_order=value)  # InputError: the unknown name, the allowed ones
        return value

    def to_spec(self):
        """The ``FlexibilitySpec``."""
        from aiload.facility.flexspec import FlexibilitySpec

        kwargs: dict[str, Any] = {
            "control_period_s": self.control_period_s, "merit_order": tuple(self.merit_order),
            "deferrable_streams": (None if self.deferrable_streams is None
                                   else tuple(self.deferrable_streams)),
            "release_margin": self.release_margin,
            "battery": None if self.battery is None else self.battery.to_spec()}
        for name in ("inference", "power_cap", "deferral"):
            section = getattr(self, name)
            if section is not None:
                kwargs[name] = section.to_spec()
        return FlexibilitySpec(**kwargs)

    @model_validator(mode="after")
    def _build(self) -> FlexibilitySection:
        self.to_spec()
        return self
