"""Frozen, validated settings of the facility's flexibility levers (:class:`FlexibilitySpec`).

A facility given a power limit (``aiload.facility(..., power_limit_kw=...)``) meets it with
levers engaged in a merit order, by default: a battery behind the meter, power caps on the
running training and fine-tuning jobs, deferral of deferrable jobs, and last inference
throttling (the user-facing service goes last: it saves little power for many unserved
requests; the 2025 Phoenix demonstration held a 25 % reduction "while meeting service
targets"). Each lever has a
response time (the time from the limit being seen to the lever acting) with its stated source;
where no measurement is at hand the number is an assumption and says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aiload._checks import check_number
from aiload._suggest import suggest
from aiload.errors import InputError
from aiload.facility.powercap import POWER_CAP_CURVES

__all__ = ["FlexibilitySpec", "BatteryLever", "InferenceLever", "PowerCapLever",
           "DeferralLever", "LEVERS", "DEFAULT_MERIT_ORDER", "GPU_SHARE", "GPU_SHARE_SOURCE"]

#: the levers a merit order may name
LEVERS = ("battery", "inference", "power_cap", "deferral")
#: the default merit order: the user-facing service last
DEFAULT_MERIT_ORDER = ("battery", "power_cap", "deferral", "inference")
#: default share of a busy node's uncapped power its GPUs draw, by where the profiles are
#: measured: of GPU + CPU power, and of the node's AC input
GPU_SHARE = {"component": 0.88, "node-ac": 0.81}
GPU_SHARE_SOURCE = (
    "Harvard FASRC IPMI snapshot 2025-05-29 (hpc_sustainability_dataset, MIT), 4-GPU nodes "
    "holygpu8a* drawing > 1.5 kW of GPU board power (71 nodes): median GPU / (GPU + CPU) power "
    "0.88 (IQR 0.86-0.90); median GPU / node Sys Power 0.84, over the 3.5 % enclosure "
    "conversion 0.81 of the AC input (readings not simultaneous; transferred to other "
    "hardware)")


@dataclass(frozen=True)
class BatteryLever:
    """A battery behind the meter: the meter reads site load minus discharge.

    Parameters
    ----------
    power_kw : float
        Largest charge or discharge power [kW].
    energy_kwh : float
        Usable energy between SOC 0 and 1 [kWh].
    round_trip_efficiency : float
        Energy out per energy in, applied on charging [-].
    soc_min, soc_max : float
        State-of-charge window [fraction 0..1].
    soc_initial : float
        State of charge at ``start`` [fraction 0..1].
    response_s : float
        Time from the limit being seen to the battery delivering [s].
    source : str
        Where the numbers come from.
    """

    power_kw: float
    energy_kwh: float
    round_trip_efficiency: float = 0.85
    soc_min: float = 0.1
    soc_max: float = 0.9
    soc_initial: float = 0.9
    response_s: float = 1.0
    source: str = ("round-trip efficiency 85 %: NREL Annual Technology Baseline, utility-scale "
                   "Li-ion; response 1 s: assumption (inverter set-point change)")

    def __post_init__(self) -> None:
        check_number(self.power_kw, "BatteryLever.power_kw", gt=0.0, unit="kW")
        check_number(self.energy_kwh, "BatteryLever.energy_kwh", gt=0.0, unit="kWh")
        check_number(self.round_trip_efficiency, "BatteryLever.round_trip_efficiency",
                     gt=0.0, le=1.0, unit="-", hint="e.g. 0.85 for 85 %.")
        for name in ("soc_min", "soc_max", "soc_initial"):
            check_number(getattr(self, name), f"BatteryLever.{name}", ge=0.0, le=1.0,
                         unit="fraction", hint="State of charge is a fraction 0..1, e.g. 0.9.")
        if not self.soc_min <= self.soc_initial <= self.soc_max or self.soc_min >= self.soc_max:
            raise InputError(
                f"BatteryLever: expected soc_min < soc_max and soc_min <= soc_initial <= "
                f"soc_max, got soc_min={self.soc_min!r}, soc_initial={self.soc_initial!r}, "
                f"soc_max={self.soc_max!r}."
            )
        check_number(self.response_s, "BatteryLever.response_s", ge=0.0, unit="s")


@dataclass(frozen=True)
class InferenceLever:
    """Inference throttling: fewer serving nodes, each at its capacity at the latency target.

    Requests beyond the throttled pool's capacity wait (first come first served) up to the
    service's ``timeout_s`` and are then unserved; both are counted.

    Parameters
    ----------
    min_node_fraction : float
        Fewest nodes kept serving, as a share of the service's pool [-].
    response_s : float
        Time for the serving nodes to drain and power down [s].
    source : str
    """

    min_node_fraction: float = 0.5
    response_s: float = 60.0
    source: str = ("response 60 s: assumption (a replica finishes its in-flight requests, "
                   "the InferenceSpec.decision_s default)")

    def __post_init__(self) -> None:
        check_number(self.min_node_fraction, "InferenceLever.min_node_fraction", ge=0.0,
                     le=1.0, unit="-")
        check_number(self.response_s, "InferenceLever.response_s", ge=0.0, unit="s")


@dataclass(frozen=True)
class PowerCapLever:
    """Power caps on the running training and fine-tuning jobs.

    A job capped to node power fraction ``r`` (capped / uncapped node power at the profiles'
    boundary) runs at speed ``s(r)`` of the curve :func:`aiload.facility.powercap.power_cap_curve`
    and draws ``r`` times its profile power at its (slower) progress: its energy per unit of
    work is ``r/s(r)`` times the uncapped one.

    Parameters
    ----------
    curve : str
        Name of the power-cap curve, one of
        :data:`~aiload.facility.powercap.POWER_CAP_CURVES` (checked here).
    min_power_fraction : float, optional
        Deepest cap used, as a node power fraction [-]; default: the curve's lowest measured
        cap (seen at the node).
    gpu_share : float, optional
        A GPU curve (``power_scope="gpu"``) is seen at the node through
        :meth:`~aiload.facility.powercap.PowerCapCurve.for_node`: the share of the node's
        uncapped power (at the profiles' boundary) its GPUs draw [-]. Default
        :data:`GPU_SHARE` for the fleet's boundary (:data:`GPU_SHARE_SOURCE`).
    step : float
        Cap levels are multiples of this fraction [-].
    response_s : float
        Time for a new cap to act on every node [s].
    source : str
    """

    curve: str = "gpu-llm-training"
    min_power_fraction: float | None = None
    gpu_share: float | None = None
    step: float = 0.05
    response_s: float = 5.0
    source: str = ("response 5 s: assumption (a GPU power limit set through NVML takes effect "
                   "within the driver's control loop; seconds for the command to reach every "
                   "node)")

    def __post_init__(self) -> None:
        if not isinstance(self.curve, str) or not self.curve:
            raise InputError(f"PowerCapLever.curve: expected a curve name such as "
                             f"'gpu-llm-training', got {self.curve!r}.")
        if self.curve not in POWER_CAP_CURVES:  # refused here, not when a run starts
            raise InputError(
                f"PowerCapLever.curve: unknown power-cap curve {self.curve!r}; known: "
                f"{', '.join(POWER_CAP_CURVES)}.{suggest(self.curve, POWER_CAP_CURVES)}")
        check_number(self.min_power_fraction, "PowerCapLever.min_power_fraction", gt=0.0,
                     le=1.0, unit="-", optional=True)
        check_number(self.gpu_share, "PowerCapLever.gpu_share", gt=0.0, le=1.0, unit="-",
                     optional=True, hint="e.g. 0.88 when the GPUs draw 88 % of the node.")
        check_number(self.step, "PowerCapLever.step", gt=0.0, le=1.0, unit="-")
        check_number(self.response_s, "PowerCapLever.response_s", ge=0.0, unit="s")

    def node_curve(self, measured_at: str):
        """The curve at the node: a GPU curve through ``gpu_share`` (default by the fleet's
        boundary ``measured_at``), a node curve as it is."""
        from aiload.facility.powercap import power_cap_curve  # noqa: PLC0415

        curve = power_cap_curve(self.curve)
        if curve.power_scope == "gpu":
            share = self.gpu_share if self.gpu_share is not None else GPU_SHARE[measured_at]
            curve = curve.for_node(share)
        return curve


@dataclass(frozen=True)
class DeferralLever:
    """Deferral: deferrable jobs pause at a checkpoint and resume later; new job starts are
    held while any job is paused.

    A pausing job draws its mean profile power while it writes the checkpoint
    (``checkpoint_s``), then its nodes idle; on resuming they idle for ``restart_s``
    (reload, re-initialise) before progress resumes where the checkpoint left it.

    Parameters
    ----------
    checkpoint_s : float
        Time to write a checkpoint [s].
    restart_s : float
        Time from resuming to the first step of progress [s].
    response_s : float
        Time for the scheduler to signal the jobs [s].
    hold_submissions : bool
        Hold new job starts while jobs are paused.
    source : str
    """

    checkpoint_s: float = 120.0
    restart_s: float = 300.0
    response_s: float = 30.0
    hold_submissions: bool = True
    source: str = ("assumptions, not measured: checkpoint 120 s (tens of GB of model and "
                   "optimizer state to a parallel file system), restart 300 s (reload and "
                   "re-initialise the collective), scheduler signal 30 s")

    def __post_init__(self) -> None:
        for name in ("checkpoint_s", "restart_s", "response_s"):
            check_number(getattr(self, name), f"DeferralLever.{name}", ge=0.0, unit="s")
        if not isinstance(self.hold_submissions, (bool, np.bool_)):
            raise InputError(f"DeferralLever.hold_submissions: expected True or False, got "
                             f"{self.hold_submissions!r}.")


@dataclass(frozen=True)
class FlexibilitySpec:
    """How the facility meets a power limit: control period, merit order and the levers.

    Parameters
    ----------
    control_period_s : float
        The limit is read and the levers set at the start of every control period [s]; a
        whole multiple or a whole divisor of the output ``freq``.
    merit_order : sequence of str
        Levers in the order they are engaged (released in the reverse order): any of
        ``"battery"``, ``"inference"``, ``"power_cap"``, ``"deferral"``; a lever left out
        is never used. Default :data:`DEFAULT_MERIT_ORDER`: battery, power caps, deferral,
        then inference throttling (the user-facing service last: in the campus-100mw-flexible
        year with inference second it cut 21 MWh for 2.39e9 unserved requests).
    deferrable_streams : sequence of str, optional
        Job streams whose jobs may be paused; None: every job stream.
    battery : BatteryLever, optional
        None: no battery.
    inference, power_cap, deferral : lever settings
    release_margin : float
        Levers are released only while the projected power stays this share below the
        limit (hysteresis) [-].
    """

    control_period_s: float = 60.0
    merit_order: Any = DEFAULT_MERIT_ORDER
    deferrable_streams: Any = None
    battery: BatteryLever | None = None
    inference: InferenceLever = field(default_factory=InferenceLever)
    power_cap: PowerCapLever = field(default_factory=PowerCapLever)
    deferral: DeferralLever = field(default_factory=DeferralLever)
    release_margin: float = 0.02

    def __post_init__(self) -> None:
        check_number(self.control_period_s, "FlexibilitySpec.control_period_s", gt=0.0,
                     unit="s", hint="e.g. 60 for one minute.")
        order = self.merit_order
        # a mapping iterates over its keys and a set in no fixed order; a string over letters
        if (isinstance(order, (str, bytes, Mapping, AbstractSet))
                or not hasattr(order, "__iter__")):
            raise InputError(
                f"FlexibilitySpec.merit_order: expected a sequence (tuple or list) of lever "
                f"names from {list(LEVERS)} in the order they are engaged, got "
                f"{type(order).__name__} {order!r}. Pass the names in order, e.g. "
                f"merit_order=('battery', 'power_cap').")
        order = tuple(order)
        for name in order:
            if name not in LEVERS:
                raise InputError(
                    f"FlexibilitySpec.merit_order: unknown lever {name!r}; expected names from "
                    f"{list(LEVERS)}.{suggest(str(name), list(LEVERS))}"
                )
        if len(set(order)) != len(order):
            raise InputError(f"FlexibilitySpec.merit_order: {order!r} names a lever twice.")
        object.__setattr__(self, "merit_order", order)
        if self.deferrable_streams is not None:
            streams = self.deferrable_streams
            # a string iterates over letters, a mapping over its keys
            if (isinstance(streams, (str, bytes, Mapping)) or not hasattr(streams, "__iter__")
                    or not all(isinstance(name, str) for name in streams)):
                raise InputError(f"FlexibilitySpec.deferrable_streams: expected a sequence of "
                                 f"stream names (str) or None, got {type(streams).__name__} "
                                 f"{streams!r}. Pass the names, e.g. "
                                 f"deferrable_streams=('training',).")
            names = sorted(streams) if isinstance(streams, AbstractSet) else streams
            object.__setattr__(self, "deferrable_streams", tuple(names))
        for name, kind in (("battery", BatteryLever), ("inference", InferenceLever),
                           ("power_cap", PowerCapLever), ("deferral", DeferralLever)):
            value = getattr(self, name)
            if not (isinstance(value, kind) or (name == "battery" and value is None)):
                raise InputError(f"FlexibilitySpec.{name}: expected a {kind.__name__}"
                                 f"{' or None' if name == 'battery' else ''}, got "
                                 f"{type(value).__name__}.")
        check_number(self.release_margin, "FlexibilitySpec.release_margin", ge=0.0, lt=0.5,
                     unit="-")

    def response_s(self, lever: str) -> float:
        """Response time of ``lever`` [s] (deferral: the scheduler's signal only; its power
        falls after the checkpoint as well)."""
        lever_spec = getattr(self, lever)
        return 0.0 if lever_spec is None else float(lever_spec.response_s)
