"""Frozen, validated configuration of the facility model.

Every check runs in ``__post_init__``, so a bad specification fails before any simulation
starts. Power is per node in W (device layer); facility-level figures are kW.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from aiload._checks import check_finite_values, check_number
from aiload._suggest import suggest
from aiload.errors import InputError
from aiload.facility.flexspec import FlexibilitySpec
from aiload.facility.demand import DEFAULT_SHAPE, SHAPES

__all__ = [
    "FleetSpec",
    "JobStreamSpec",
    "InferenceSpec",
    "OverheadSpec",
    "FacilitySpec",
    "suggest",
]


def _positive_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise InputError(
            f"{what}: expected a positive whole number, got {value!r}. Give at least 1."
        )
    return int(value)


def _fraction(value: float | None, what: str) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not (isinstance(value, (int, float)) and 0.0 < float(value) <= 1.0):
        raise InputError(
            f"{what}: expected a fraction in (0, 1], got {value!r}; e.g. 0.6 for 60 %."
        )


def _distribution(items: Any, what: str) -> tuple[tuple[Any, float], ...]:
    """Normalise ``{value: weight}`` or ``[(value, weight), ...]`` to a weight-1 tuple."""
    try:
        if isinstance(items, (str, bytes)):
            raise TypeError
        pairs = list(items.items()) if isinstance(items, dict) else [tuple(p) for p in items]
        if any(len(p) != 2 for p in pairs):
            raise TypeError
    except TypeError:
        raise InputError(
            f"{what}: expected a dict {{value: weight}} or (value, weight) pairs, got {items!r}; "
            "e.g. {'llama2-70b-lora': 0.5, 'stable-diffusion-v2': 0.5} or {2: 0.7, 4: 0.3}."
        ) from None
    if not pairs:
        raise InputError(f"{what}: expected at least one (value, weight) pair, got none.")
    weights = np.array([w for _, w in pairs], dtype=float)
    if np.any(~np.isfinite(weights)) or np.any(weights < 0) or weights.sum() <= 0:
        raise InputError(
            f"{what}: weights must be non-negative with a positive sum, got {weights.tolist()}."
        )
    weights = weights / weights.sum()
    return tuple((v, float(w)) for (v, _), w in zip(pairs, weights))


def _arrivals(values: Any, what: str) -> tuple:
    """Arrival times as a tuple; every one a finite number of seconds or a real timestamp."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise InputError(
            f"{what}: expected a sequence of arrival times (seconds from start or tz-aware "
            f"timestamps), got {values!r}."
        )
    out = tuple(values)
    for i, value in enumerate(out):
        if isinstance(value, (np.datetime64, np.timedelta64)) or hasattr(value, "tzinfo"):
            if value != value or str(value) == "NaT":  # NaT compares unequal to itself
                raise InputError(f"{what}[{i}]: got NaT; expected a tz-aware timestamp.")
            continue
        check_number(value, f"{what}[{i}]", ge=0.0, unit="s from start",
                     hint="Give seconds from start or tz-aware timestamps.")
    return out


def _measured_at(hardware: str) -> str:
    """Where the bundled profiles of ``hardware`` are measured (``"component"`` if unknown)."""
    from aiload.profiles.boundary import node_boundary  # noqa: PLC0415 - facility -> profiles

    try:
        return node_boundary(hardware).measured_at
    except (InputError, OSError):
        return "component"


@dataclass(frozen=True)
class FleetSpec:
    """The nodes of the facility.

    Parameters
    ----------
    nodes : int
        Number of compute nodes [-].
    hardware : str
        Node type known to the workload catalogue, e.g. ``"4xH100"``.
    idle_w : float
        Power of an idle (powered, unallocated) node [W].
    nameplate_w : float
        Rated power of one node at the boundary of its profiles, for the UPS load fraction
        and the power cap [W].
    other_it_w_per_busy_node : float
        IT power added per busy node, at the rack input [W].
    other_it_base_kw : float
        Constant IT load besides the nodes (management network, ...), at the rack input [kW].
    measured_at : str, optional
        Where the profiles' power is measured: ``"component"`` (GPU + CPU, the NLR data) or
        ``"node-ac"`` (the node's AC input, MLPerf). Only ``"component"`` fleets add the rest
        of the node and the PSU conversion (``docs/facility.md``, "Boundaries"). Default:
        that of the bundled profiles of ``hardware`` (:func:`aiload.profiles.node_boundary`),
        ``"component"`` for a hardware they do not know.
    rest_of_node_w : float
        Memory, NICs, board: rest-of-node power per powered node at zero component power [W].
    rest_of_node_fraction : float
        Rest-of-node power per W of component power [-].
    psu_loss_fraction : float
        PSU/enclosure conversion: node AC input per DC node power, minus 1 [-].
    network_w_per_node : float
        Network switch power per installed node, busy or idle [W].
    storage_w_per_node : float
        Storage power per installed node [W].
    """

    nodes: int
    hardware: str = "4xH100"
    idle_w: float = 700.0
    nameplate_w: float = 3520.0
    other_it_w_per_busy_node: float = 0.0
    other_it_base_kw: float = 0.0
    measured_at: str | None = None
    rest_of_node_w: float = 0.0
    rest_of_node_fraction: float = 0.0
    psu_loss_fraction: float = 0.0
    network_w_per_node: float = 0.0
    storage_w_per_node: float = 0.0

    def __post_init__(self) -> None:
        _positive_int(self.nodes, "FleetSpec.nodes (node count)")
        for name, unit in (("idle_w", "W"), ("nameplate_w", "W"),
                           ("other_it_w_per_busy_node", "W"), ("other_it_base_kw", "kW"),
                           ("rest_of_node_w", "W"), ("network_w_per_node", "W"),
                           ("storage_w_per_node", "W")):
            check_number(getattr(self, name), f"FleetSpec.{name}", ge=0.0, unit=unit)
        for name in ("rest_of_node_fraction", "psu_loss_fraction"):
            check_number(getattr(self, name), f"FleetSpec.{name}", ge=0.0, lt=1.0, unit="-")
        if self.measured_at is None:
            object.__setattr__(self, "measured_at", _measured_at(self.hardware))
        if self.measured_at not in ("component", "node-ac"):
            raise InputError(
                f"FleetSpec.measured_at: expected 'component' or 'node-ac', got "
                f"{self.measured_at!r}.{suggest(self.measured_at, ['component', 'node-ac'])}"
            )
        added = {n: getattr(self, n) for n in ("rest_of_node_w", "rest_of_node_fraction",
                                                "psu_loss_fraction") if getattr(self, n)}
        if self.measured_at == "node-ac" and added:
            raise InputError(
                f"FleetSpec: measured_at='node-ac' profiles already hold the rest of the node and "
                f"the PSU losses, got {added}; set them to 0 (or measured_at='component' for "
                "GPU + CPU profiles) so nothing is counted twice."
            )
        check_number(self.nameplate_w, "FleetSpec.nameplate_w", gt=0.0, unit="W")
        if self.idle_w > self.nameplate_w:
            raise InputError(
                f"FleetSpec.idle_w: an idle node drawing {self.idle_w:g} W is above the node's "
                f"nameplate_w = {self.nameplate_w:g} W; expected idle_w <= nameplate_w. Check the "
                "units (W per node, not per GPU or per rack) or raise nameplate_w."
            )

    @property
    def fixed_it_kw(self) -> float:
        """IT power at the rack input that no node's state changes: network, storage and
        ``other_it_base_kw`` [kW]."""
        return self.nodes * (self.network_w_per_node + self.storage_w_per_node) / 1e3 \
            + self.other_it_base_kw

    def node_input_w(self, profile_w, powered_nodes):
        """AC input power of ``powered_nodes`` nodes drawing ``profile_w`` at the profiles'
        boundary [W] (array or float): for ``"component"`` fleets
        ``(P·(1 + rest_of_node_fraction) + n·rest_of_node_w)·(1 + psu_loss_fraction)``,
        else ``profile_w`` itself."""
        if self.measured_at == "node-ac":
            return profile_w
        return ((profile_w * (1.0 + self.rest_of_node_fraction)
                 + powered_nodes * self.rest_of_node_w) * (1.0 + self.psu_loss_fraction))

    def it_kw(self, profile_w, busy_nodes):
        """IT power at the rack input [kW] of the whole fleet, from its power at the profiles'
        boundary ``profile_w`` [W] (every node powered) and its busy nodes [-]."""
        node_w = self.node_input_w(profile_w, self.nodes)
        return (node_w + busy_nodes * self.other_it_w_per_busy_node) / 1e3 + self.fixed_it_kw

    @property
    def it_rated_kw(self) -> float:
        """Rated IT power at the rack input: every node at its nameplate [kW]."""
        return self.nodes * self.node_input_w(self.nameplate_w, 1) / 1e3 + self.fixed_it_kw


@dataclass(frozen=True)
class JobStreamSpec:
    """One stream of batch jobs (training or fine-tuning).

    Parameters
    ----------
    name : str
        Label of the stream in the event log.
    workloads : dict or sequence of (str, float)
        Workload mix: model name -> weight (normalised to 1).
    node_counts : dict or sequence of (int, float)
        Node-count distribution of one job: nodes -> weight.
    utilization : float, optional
        Target share of the *training pool's* node-time this stream keeps busy, in (0, 1].
        Sets the mean submission rate ``λ = u·N / E[nodes·duration]``. Give it, ``rate_per_h`` or
        ``arrivals``.
    rate_per_h : float, optional
        Mean arrival rate [jobs/h].
    arrivals : sequence, optional
        Replay: arrival times as seconds from ``start`` [s] or tz-aware timestamps.
    daily_amplitude, weekly_amplitude : float
        Relative modulation of the arrival rate (0 = none, < 1): ``1 + a·cos(2π(h − peak)/24)``
        by hour of day, and weekends at ``1 − weekly_amplitude`` of weekdays.
    peak_hour : float
        Local hour of the daily peak [h].
    duration_s : float, optional
        Fixed job duration [s]; the profile is repeated cyclically (a long-running job).
        Default: the profile's own length, i.e. the scaling fit's duration for that node count.
    profile_nodes : int, optional
        Take the per-node profile of this node count instead of the job's (e.g. the measured
        64-node shape for a larger job whose time axis should not be rescaled).
    arrival_process : str or CoxArrivals, optional
        Submissions as a log-Gaussian Cox process (:mod:`aiload.facility.arrivals`): a bundled
        fit by name (``"helios-earth"``) or a :class:`~aiload.facility.arrivals.CoxArrivals`.
        Its hour-of-week profile replaces the cosine, so leave ``daily_amplitude`` and
        ``weekly_amplitude`` at 0. Default None: Poisson arrivals modulated by the cosine.
    burn_in_s : float, optional
        Simulated time before ``start`` that is not part of the output, so that the run begins
        in the state the facility would be in at ``start`` [s]. Default
        :data:`aiload.facility.jobs.BURN_IN_S` for generated arrivals; replayed ``arrivals``
        have none (nothing is known before them).
    """

    name: str
    workloads: Any
    node_counts: Any
    utilization: float | None = None
    rate_per_h: float | None = None
    arrivals: Any = None
    daily_amplitude: float = 0.0
    weekly_amplitude: float = 0.0
    peak_hour: float = 14.0
    duration_s: float | None = None
    profile_nodes: int | None = None
    arrival_process: Any = None
    burn_in_s: float | None = None

    def __post_init__(self) -> None:
        if self.profile_nodes is not None:
            _positive_int(self.profile_nodes, f"{self.name}.profile_nodes")
        object.__setattr__(self, "workloads", _distribution(self.workloads, f"{self.name}.workloads"))
        counts = _distribution(self.node_counts, f"{self.name}.node_counts")
        for n, _ in counts:
            _positive_int(n, f"{self.name}.node_counts (nodes of one job)")
        object.__setattr__(self, "node_counts", tuple((int(n), w) for n, w in counts))
        _fraction(self.utilization, f"{self.name}.utilization")
        given = [self.utilization is not None, self.rate_per_h is not None, self.arrivals is not None]
        if sum(given) != 1:
            raise InputError(
                f"{self.name}: give exactly one of utilization=, rate_per_h= or arrivals= "
                f"(got {sum(given)})."
            )
        check_number(self.rate_per_h, f"{self.name}.rate_per_h", gt=0.0, unit="jobs/h",
                     optional=True)
        if self.arrivals is not None:
            object.__setattr__(self, "arrivals", _arrivals(self.arrivals, f"{self.name}.arrivals"))
        for name in ("daily_amplitude", "weekly_amplitude"):
            check_number(getattr(self, name), f"{self.name}.{name}", ge=0.0, lt=1.0)
        check_number(self.peak_hour, f"{self.name}.peak_hour", ge=0.0, lt=24.0, unit="h")
        check_number(self.duration_s, f"{self.name}.duration_s", gt=0.0, unit="s", optional=True,
                     hint="Leave it out to use the profile's own length.")
        check_number(self.burn_in_s, f"{self.name}.burn_in_s", ge=0.0, unit="s", optional=True)
        if self.arrival_process is not None:
            from aiload.facility.arrivals import CoxArrivals, fitted  # noqa: PLC0415

            process = self.arrival_process
            if isinstance(process, str):
                object.__setattr__(self, "arrival_process", fitted(process))
            elif not isinstance(process, CoxArrivals):
                raise InputError(
                    f"{self.name}.arrival_process: expected a bundled fit's name (e.g. "
                    f"'helios-earth') or a CoxArrivals, got {type(process).__name__}."
                )
            if self.arrivals is not None:
                raise InputError(f"{self.name}: arrival_process= draws arrivals and arrivals= "
                                 "replays them; give one of the two.")
            if self.daily_amplitude or self.weekly_amplitude:
                raise InputError(
                    f"{self.name}: arrival_process= brings its own hour-of-week profile; leave "
                    f"daily_amplitude and weekly_amplitude at 0 (got {self.daily_amplitude!r}, "
                    f"{self.weekly_amplitude!r})."
                )

    @property
    def max_nodes(self) -> int:
        """Largest job of the stream [nodes]."""
        return max(n for n, _ in self.node_counts)


@dataclass(frozen=True)
class InferenceSpec:
    """An online inference service on a dedicated pool of nodes.

    Parameters
    ----------
    nodes : int
        Nodes of the serving pool [-] (taken out of the fleet).
    utilization : float
        ``sizing="latency"``: the achieved mean share of the pool's nodes busy, in (0, 1]
        (the demand scale is solved for it); ``sizing="autoscaler"``: mean demand divided by
        the pool's capacity.
    model : str
        Served model (for the power curve), e.g. ``"llama3-70b"``.
    shape : str or pandas.Series
        Demand shape: ``"azure-2024-week"`` (default; bundled, the Azure 2024 LLM inference
        week digitised from its published plots, on the calendar: weekday and local time of
        ``start``'s zone, with a level for each day and the per-minute spread of the same
        plots, drawn from the seed), ``"servegen-m-large"`` (bundled, from the real ServeGen
        trace; 14 days from the run's first local midnight; the former default) or a
        tz-aware Series of relative rates (any positive scale; it is normalised to mean 1).
    bursts : bool
        Add sub-10-min burstiness from the Azure 2023/Mooncake per-minute arrivals (needs
        freq <= 1 min); with the Azure week it replaces the plots' minute spread.
    capacity_per_s : float, optional
        Requests a node serves at the latency target [requests/s]; default from the
        catalogue's curve at ``latency_target_s``.
    latency_target_s : float, optional
        Median end-to-end latency target [s]: the catalogue reads a node's capacity at it
        (:func:`aiload.facility.catalogue.capacity_at_latency`; 5.5 s gives 62.5 requests/s
        on the NLR runs). None: the saturation throughput (the former default, 40.6).
    sizing : str
        ``"latency"``: each decision interval runs the nodes its served requests need at the
        capacity, requests beyond the pool wait up to ``timeout_s`` and then count as
        unserved, and ``utilization`` is the achieved mean share of busy nodes (the NLR
        study's sizing). ``"autoscaler"``: the former replica controller (``target_load``,
        ``headroom``, ``reaction_s``) with ``utilization`` = mean demand / capacity.
    timeout_s : float
        Latency sizing: longest a request waits for a node before it gives up [s].
    target_load : float
        Autoscaling target: per-node load as a fraction of capacity, in (0, 1].
    headroom : float
        Extra replicas on top of the target [fraction, >= 0].
    reaction_s : float
        Delay between a demand change and the replica change taking effect [s].
    decision_s : float
        Interval between autoscaling decisions [s].
    min_replicas : int
        Replicas always on [-].
    curve_hardware : str, optional
        Hardware whose measured power curve is used (default: the fleet's).
    curve_nodes_per_node : float
        How many ``curve_hardware`` servers one fleet node counts as (e.g. 2 for an 8-GPU
        node serving with a 4-GPU curve): capacity and power scale by it [-].
    """

    nodes: int
    utilization: float
    model: str = "llama3-70b"
    shape: Any = DEFAULT_SHAPE
    bursts: bool = False
    capacity_per_s: float | None = None
    latency_target_s: float | None = 5.5
    sizing: str = "latency"
    timeout_s: float = 60.0
    target_load: float = 0.8
    headroom: float = 0.1
    reaction_s: float = 300.0
    decision_s: float = 60.0
    min_replicas: int = 1
    curve_hardware: str | None = None
    curve_nodes_per_node: float = 1.0

    def __post_init__(self) -> None:
        _positive_int(self.nodes, "InferenceSpec.nodes (node count)")
        check_number(self.curve_nodes_per_node, "InferenceSpec.curve_nodes_per_node", gt=0.0)
        for name, unit, low in (("headroom", "", "ge"), ("reaction_s", "s", "ge"),
                                ("decision_s", "s", "gt")):
            check_number(getattr(self, name), f"InferenceSpec.{name}", unit=unit,
                         **{low: 0.0})
        check_number(self.capacity_per_s, "InferenceSpec.capacity_per_s", gt=0.0,
                     unit="requests/s", optional=True,
                     hint="Leave it out to take the capacity from the fit.")
        check_number(self.latency_target_s, "InferenceSpec.latency_target_s", gt=0.0, unit="s",
                     optional=True)
        check_number(self.timeout_s, "InferenceSpec.timeout_s", ge=0.0, unit="s")
        if self.sizing not in ("latency", "autoscaler"):
            raise InputError(
                f"InferenceSpec.sizing: expected 'latency' or 'autoscaler', got {self.sizing!r}."
                f"{suggest(str(self.sizing), ['latency', 'autoscaler'])}"
            )
        if hasattr(self.shape, "index") and hasattr(self.shape, "to_numpy"):
            rates = check_finite_values(self.shape, "InferenceSpec.shape (relative demand)")
            if (rates < 0).any() or not rates.mean() > 0:
                raise InputError(
                    "InferenceSpec.shape: relative rates must be >= 0 with a positive mean, got "
                    f"minimum {rates.min():g} and mean {rates.mean():g}."
                )
            index = self.shape.index
            if isinstance(index, pd.DatetimeIndex) and len(index) > 1:
                # labels one fixed step apart in real time: a daily freq across a DST change
                # labels 23 h or 25 h days while pandas reports 24 h
                step = np.diff(index.as_unit("ns").asi8)
                bad = np.flatnonzero(step != step[0])
                if bad.size or step[0] <= 0:
                    i = int(bad[0]) + 1 if bad.size else 1
                    raise InputError(
                        f"InferenceSpec.shape: expected labels one fixed step apart in real time, "
                        f"but {index[i - 1]} -> {index[i]} is {step[i - 1] / 3.6e12:g} h after "
                        f"{step[0] / 3.6e12:g} h before (a gap, unsorted times or a daylight-saving "
                        "change in daily labels). Give the shape on a fixed step in real time, "
                        "e.g. hourly."
                    )
        _fraction(self.utilization, "InferenceSpec.utilization")
        if self.utilization is None:
            raise InputError("InferenceSpec.utilization: expected a fraction in (0, 1], got None.")
        if self.sizing == "latency" and self.utilization == 1:
            raise InputError(
                "InferenceSpec.utilization: got 1 with sizing='latency', i.e. every node busy in "
                "every interval; only a demand at full capacity in the quietest interval gives "
                "that, and at the peaks many times the capacity would go unserved. Give a share "
                "below 1, e.g. 0.8 (0.2-0.8 are the NLR cases)."
            )
        _fraction(self.target_load, "InferenceSpec.target_load")
        if self.headroom < 0 or self.reaction_s < 0 or self.decision_s <= 0:
            raise InputError(
                "InferenceSpec: headroom >= 0, reaction_s >= 0 and decision_s > 0 expected, got "
                f"{self.headroom!r}, {self.reaction_s!r}, {self.decision_s!r}."
            )
        if self.capacity_per_s is not None and not self.capacity_per_s > 0:
            raise InputError(f"InferenceSpec.capacity_per_s: expected > 0, got {self.capacity_per_s!r}.")
        if (isinstance(self.min_replicas, bool)
                or not isinstance(self.min_replicas, (int, np.integer))
                or not 0 <= self.min_replicas <= self.nodes):
            raise InputError(
                f"InferenceSpec.min_replicas: expected 0..{self.nodes}, got {self.min_replicas!r}."
            )
        if not isinstance(self.shape, (str, pd.Series)):
            raise InputError(
                f"InferenceSpec.shape: expected 'azure-2024-week', 'servegen-m-large' or a pandas "
                f"Series of relative rates on a tz-aware DatetimeIndex, got {type(self.shape).__name__}; e.g. "
                "pandas.Series(rates, index=pandas.date_range(start, periods=len(rates), "
                "freq='10min'))."
            )
        if isinstance(self.shape, str) and self.shape not in SHAPES:
            raise InputError(
                f"InferenceSpec.shape: unknown shape {self.shape!r}; expected one of "
                f"{', '.join(map(repr, SHAPES))} or a tz-aware pandas Series."
                f"{suggest(self.shape, list(SHAPES))}"
            )


#: dry-bulb readings outside this range are a unit error (K, °F), not weather [°C]
DRYBULB_RANGE_C = (-90.0, 60.0)


def _check_weather(weather: Any) -> None:
    """Refuse a dry-bulb Series the cooling model would read wrong: not a Series, naive,
    unsorted or repeated times, NaN/inf, outside :data:`DRYBULB_RANGE_C`, or an hour without
    a reading (its hourly mean would be NaN, and so would the facility's power)."""
    what = "OverheadSpec.weather"
    if not isinstance(weather, pd.Series):
        column = (" (one column of a DataFrame, e.g. frame['temp_air'])"
                  if isinstance(weather, pd.DataFrame) else "")
        raise InputError(
            f"{what}: expected 'pvlib-greensboro' or a pandas Series of hourly dry-bulb "
            f"temperature [°C] on a tz-aware DatetimeIndex, got {type(weather).__name__}{column}."
        )
    from aiload.timeseries import require_tz_aware  # noqa: PLC0415

    index = require_tz_aware(weather.index, what)
    temp = check_finite_values(weather, f"{what} (dry-bulb temperature [°C])")
    if len(index) == 0:
        raise InputError(f"{what}: the series is empty; expected hourly dry-bulb readings [°C].")
    back = np.flatnonzero(np.diff(index.as_unit("ns").asi8) <= 0)
    if back.size:
        i = int(back[0]) + 1
        raise InputError(
            f"{what}: times must strictly increase; {index[i]} follows {index[i - 1]}. Sort it "
            "and drop repeated times first (weather.sort_index(); "
            "weather[~weather.index.duplicated()])."
        )
    low, high = DRYBULB_RANGE_C
    if temp.min() < low or temp.max() > high:
        raise InputError(
            f"{what}: dry-bulb from {temp.min():g} to {temp.max():g}; expected °C within "
            f"{low:g} .. {high:g}. Kelvin? subtract 273.15. Fahrenheit? (F - 32) / 1.8."
        )
    # whole hours since 1970 (UTC, so a repeated local hour in autumn is two hours)
    hours = index.as_unit("ns").asi8 // 3_600_000_000_000
    missing = np.flatnonzero(np.diff(hours) > 1)
    if missing.size:
        i = int(missing[0])
        raise InputError(
            f"{what}: no reading between {index[i]} and {index[i + 1]}, so at least one hour "
            "has none; expected at least one per hour, each value the mean of the hour it "
            "labels. Fill the gap first, e.g. weather.resample('1h').mean().interpolate()."
        )


#: default time constant of the weather-driven cooling models' lag [s]
DEFAULT_COOLING_LAG_S = 3600.0


@dataclass(frozen=True)
class OverheadSpec:
    """Distribution/UPS losses and cooling between the IT load and the meter.

    UPS and distribution losses follow the no-load / proportional / square-law model
    ``loss = P_rated·(a + b·x + c·x²)`` with ``x`` the IT load fraction, i.e. the efficiency
    ``η(x) = x / (x + a + b·x + c·x²)`` (Rasmussen, "Electrical Efficiency Modeling for Data
    Centers", APC White Paper 113).

    Parameters
    ----------
    loss_a, loss_b, loss_c : float
        No-load, proportional and square-law loss coefficients [fraction of rated power].
    cooling : str
        ``"pue"`` (constant power usage effectiveness), ``"drybulb"`` (air cooling: an
        integrated economiser and chillers driven by the outdoor temperature) or ``"liquid"``
        (direct-to-chip: ``liquid_capture`` of the heat to a warm-water loop rejected by dry
        coolers, trim chillers only in the hottest hours, the rest air-cooled as in
        ``"drybulb"``; PUE ≈ 1.1, ``docs/facility.md``, "Cooling").
    pue : float
        Cooling-only PUE, ``(IT + cooling) / IT``; UPS/distribution losses come on top [-].
    weather : str or pandas.Series
        ``"pvlib-greensboro"`` (pvlib's bundled TMY3 723170) or a tz-aware hourly Series of
        dry-bulb temperature [°C].
    economiser_below_c : float
        Free cooling (economiser only) when the dry-bulb is at or below this [°C].
    economiser_band_c : float
        Dry-bulb range above ``economiser_below_c`` over which the chillers take the heat over
        linearly (an integrated economiser: outdoor air still carries part of the load);
        0 switches at the threshold, a step no plant makes [°C].
    economiser_fraction : float
        Cooling power per unit heat in economiser hours (fans, pumps) [-].
    cop_at_35c : float
        Chiller coefficient of performance at 35 °C dry-bulb [-].
    cop_slope_per_c : float
        COP gain per °C cooler outdoor air [1/°C].
    cooling_time_constant_s : float, optional
        First-order lag of the cooling power behind its steady-state value for the interval's
        IT heat and weather (chilled-water loop, thermal mass, chiller staging): applied
        exactly on the output grid with the state carried across streamed windows; 0 for
        none. Default (None): 3,600 s for ``"drybulb"`` and ``"liquid"``, 0 for ``"pue"`` (a
        constant PUE is instantaneous by definition) — see :attr:`cooling_lag_s` [s].
    liquid_capture : float
        ``"liquid"``: share of the heat taken by the cold plates [-].
    liquid_overhead : float
        ``"liquid"``: pumps, CDUs and dry-cooler fans per unit heat of the liquid loop [-].
    liquid_free_below_c : float
        ``"liquid"``: dry-bulb up to which dry coolers alone hold the loop's supply
        temperature; trim chillers take the loop over linearly across
        ``economiser_band_c`` above it [°C].
    power_cap_kw : float, optional
        Facility power cap [kW]: jobs wait rather than start when the meter power of the
        facility — every node idle, serving nodes and busy job nodes at nameplate, fixed IT,
        losses and worst-weather cooling — would exceed it (IT is never clipped).
    """

    loss_a: float = 0.02
    loss_b: float = 0.01
    loss_c: float = 0.02
    cooling: str = "pue"
    pue: float = 1.3
    weather: Any = "pvlib-greensboro"
    economiser_below_c: float = 18.0
    economiser_band_c: float = 8.0
    economiser_fraction: float = 0.05
    cop_at_35c: float = 4.0
    cop_slope_per_c: float = 0.15
    cooling_time_constant_s: float | None = None
    liquid_capture: float = 0.8
    liquid_overhead: float = 0.03
    liquid_free_below_c: float = 27.0
    power_cap_kw: float | None = None

    def __post_init__(self) -> None:
        for name, unit in (("loss_a", ""), ("loss_b", ""), ("loss_c", ""), ("pue", ""),
                           ("economiser_below_c", "°C"), ("economiser_band_c", "°C"),
                           ("economiser_fraction", ""), ("cop_at_35c", ""),
                           ("cop_slope_per_c", "1/°C")):
            check_number(getattr(self, name), f"OverheadSpec.{name}", unit=unit)
        for name in ("loss_a", "loss_b", "loss_c"):
            check_number(getattr(self, name), f"OverheadSpec.{name}", ge=0.0, lt=1.0,
                         hint="Loss coefficients are fractions of rated power, e.g. 0.02.")
        check_number(self.cop_slope_per_c, "OverheadSpec.cop_slope_per_c", ge=0.0, unit="1/°C",
                     hint="A chiller's COP rises as the outdoor air cools; a negative slope "
                     "would make it fall.")
        check_number(self.power_cap_kw, "OverheadSpec.power_cap_kw", gt=0.0, unit="kW",
                     optional=True)
        if not isinstance(self.weather, str):
            _check_weather(self.weather)
        if self.cooling not in ("pue", "drybulb", "liquid"):
            raise InputError(
                f"OverheadSpec.cooling: expected 'pue', 'drybulb' or 'liquid', got "
                f"{self.cooling!r}.{suggest(self.cooling, ['pue', 'drybulb', 'liquid'])}"
            )
        check_number(self.cooling_time_constant_s, "OverheadSpec.cooling_time_constant_s",
                     ge=0.0, unit="s", optional=True,
                     hint="0 lets cooling follow IT and weather at once.")
        check_number(self.liquid_capture, "OverheadSpec.liquid_capture", ge=0.0, le=1.0,
                     unit="-", hint="Cold plates take e.g. 0.8 of a GPU node's heat.")
        check_number(self.liquid_overhead, "OverheadSpec.liquid_overhead", ge=0.0, lt=1.0,
                     unit="-")
        check_number(self.liquid_free_below_c, "OverheadSpec.liquid_free_below_c", unit="°C")
        if not 1.0 <= self.pue < 5.0:
            raise InputError(f"OverheadSpec.pue: expected 1 <= PUE < 5, got {self.pue!r}.")
        if self.cop_at_35c <= 0 or self.economiser_fraction < 0:
            raise InputError("OverheadSpec: cop_at_35c > 0 and economiser_fraction >= 0 expected.")
        if not 0.0 <= self.economiser_band_c < 40.0:
            raise InputError(
                f"OverheadSpec.economiser_band_c: expected 0 <= band < 40 °C, got "
                f"{self.economiser_band_c!r} (0 switches the chillers on at economiser_below_c)."
            )
        if self.power_cap_kw is not None and not self.power_cap_kw > 0:
            raise InputError(f"OverheadSpec.power_cap_kw: expected > 0 kW, got {self.power_cap_kw!r}.")

    @property
    def cooling_lag_s(self) -> float:
        """Time constant of the cooling lag in use: ``cooling_time_constant_s``, or by default
        3,600 s for the weather-driven models and 0 for a constant PUE [s]."""
        if self.cooling_time_constant_s is not None:
            return float(self.cooling_time_constant_s)
        return 0.0 if self.cooling == "pue" else DEFAULT_COOLING_LAG_S


@dataclass(frozen=True)
class FacilitySpec:
    """A whole facility: fleet, job streams, inference services and overheads.

    Parameters
    ----------
    fleet : FleetSpec
    streams : tuple of JobStreamSpec
        Batch job streams; they share the nodes not taken by inference pools.
    inference : tuple of InferenceSpec
    overheads : OverheadSpec
    backfill : bool
        EASY backfilling on top of FIFO: a later job may start early when it fits now and does
        not delay the head of the queue.
    catalogue : object, optional
        Workload catalogue (see :mod:`aiload.facility.catalogue`); default: aiload.profiles.
    name : str
    flexibility : FlexibilitySpec
        How the facility meets a power limit (``facility(..., power_limit_kw=...)``): control
        period, merit order and levers (:mod:`aiload.facility.flexspec`); unused without one.
    """

    fleet: FleetSpec
    streams: tuple = ()
    inference: tuple = ()
    overheads: OverheadSpec = field(default_factory=OverheadSpec)
    backfill: bool = True
    catalogue: Any = None
    name: str = "custom"
    flexibility: FlexibilitySpec = field(default_factory=FlexibilitySpec)

    def __post_init__(self) -> None:
        if not isinstance(self.flexibility, FlexibilitySpec):
            raise InputError(f"FacilitySpec.flexibility: expected a FlexibilitySpec, got "
                             f"{type(self.flexibility).__name__}.")
        object.__setattr__(self, "streams", tuple(self.streams))
        object.__setattr__(self, "inference", tuple(self.inference))
        if not self.streams and not self.inference:
            raise InputError("FacilitySpec: give at least one job stream or inference service.")
        serving = sum(s.nodes for s in self.inference)
        pool = self.fleet.nodes - serving
        if pool < 0 or (self.streams and pool == 0):
            raise InputError(
                f"FacilitySpec: inference pools take {serving} nodes but the fleet has "
                f"{self.fleet.nodes}; leave nodes for the job streams or enlarge the fleet."
            )
        for stream in self.streams:
            if stream.max_nodes > pool:
                raise InputError(
                    f"{stream.name}: a job of {stream.max_nodes} nodes is larger than the "
                    f"{pool} nodes available to job streams (fleet {self.fleet.nodes} minus "
                    f"{serving} serving); it could never start. Shrink the job or grow the fleet."
                )
        share = sum(s.utilization or 0.0 for s in self.streams)
        if share > 1.0 + 1e-9:
            raise InputError(
                f"FacilitySpec: stream utilisations add up to {share:.3f} > 1 of the pool."
            )

    @property
    def pool_nodes(self) -> int:
        """Nodes available to batch job streams [-]."""
        return self.fleet.nodes - sum(s.nodes for s in self.inference)
