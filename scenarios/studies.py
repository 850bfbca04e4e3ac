"""The study stages of a scenario, each a thin call into the package that does the work.

``prepare_*`` functions build every configuration object (network, limits, costs, weather)
*before* anything is computed, so a bad scenario fails in seconds; ``run_*`` functions then do
the computation. Units change only here, at the package boundary: the facility speaks kW, the
grid MW (``load_mw = facility_kw / 1000``), the microgrid kW.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from aiload.errors import InputError
from aiload.facility import facility
from aiload.resampling import resample
from scenarios.schema import FacilitySection, GridSection, MicrogridSection, Scenario, SiteSection

__all__ = [
    "StageSkipped",
    "facility_kwargs",
    "check_facility",
    "check_steps",
    "run_facility",
    "interval_means_kw",
    "GridPlan",
    "prepare_grid",
    "run_grid",
    "MicrogridPlan",
    "prepare_microgrid",
    "run_microgrid",
]


class StageSkipped(Exception):
    """A study section that cannot run here (its package is not installed); carries why."""


def _import(name: str, section: str):
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        raise StageSkipped(
            f"[{section}] skipped: the {name!r} package is not importable; install aiload with it "
            f"(python -m pip install -e .) to run this study"
        ) from None


def facility_kwargs(section: FacilitySection, *, seed: int | None = None,
                    replicates: int | None = None, progress: bool = True) -> dict[str, Any]:
    """Keyword arguments of ``aiload.facility`` for a facility section.

    Parameters
    ----------
    section : FacilitySection
        The validated ``[facility]`` table.
    seed, replicates : int, optional
        Replace the section's values (a sweep runs one replicate per task).
    progress : bool
        Show the facility model's progress bar.
    """
    kwargs: dict[str, Any] = dict(section.overrides)
    if section.utilization is not None:
        kwargs["utilization"] = section.utilization
    kwargs.update(
        start=pd.Timestamp(section.start),
        end=pd.Timestamp(section.end),
        freq=section.freq,
        seed=section.seed if seed is None else seed,
        replicates=section.replicates if replicates is None else replicates,
        progress=progress,
    )
    if section.iteration is not None:  # [facility.iteration]: sub-second job dynamics
        kwargs["dynamics"] = section.iteration.to_dynamics()
    return kwargs


def check_facility(section: FacilitySection) -> None:
    """Build the facility specification without simulating, so a bad preset, override or
    workload name fails before any computation; the message names the scenario field."""
    from aiload.facility.presets import resolve_spec

    if section.preset is None:
        _check_workloads(section)
        return
    overrides = dict(section.overrides)
    if section.utilization is not None:
        overrides["utilization"] = section.utilization
    try:
        resolve_spec(section.preset, overrides)
    except InputError as exc:
        raise InputError(f"[facility] preset = {section.preset!r} with {overrides}: {exc}") from None


def _check_workloads(section: FacilitySection) -> None:
    """Every workload of a full spec must be in the profile catalogue for the fleet's hardware."""
    from aiload.facility.catalogue import default_catalogue
    from aiload.facility.spec import suggest

    hardware = section.fleet.hardware
    known = default_catalogue().models(hardware)
    if not known:
        options = _known_hardware()
        raise InputError(
            f"facility.fleet.hardware = {hardware!r}: the profile library has no workloads for "
            f"this node type.{suggest(hardware, options)} Known node types: "
            f"{', '.join(options) or 'none'}."
        )
    for i, stream in enumerate(section.streams):
        for name in stream.workloads:
            if name not in known:
                raise InputError(
                    f"facility.streams[{i}] ({stream.name!r}).workloads: no profile of {name!r} "
                    f"on {hardware!r}; the profile library has {known or 'none'} for that "
                    f"hardware.{suggest(name, known)} Pick one of those or change "
                    "facility.fleet.hardware."
                )
    for i, service in enumerate(section.inference):
        _check_served_model(i, service, service.curve_hardware or hardware, suggest)


def _check_served_model(i: int, service: Any, hardware: str, suggest: Callable) -> None:
    """The power curve of a service must exist for its hardware, and the served model must
    be the one its runs measured: another name was only a label on that curve."""
    from aiload import profiles
    from aiload.facility.catalogue import default_catalogue

    where = f"facility.inference[{i}]"
    try:
        default_catalogue().inference_curve(service.model, hardware, service.latency_target_s)
    except InputError as exc:
        raise InputError(
            f"{where} (curve hardware {hardware!r}): {exc} In the scenario, set curve_hardware "
            "in this [[facility.inference]] table to hardware that has a curve, with "
            "curve_nodes_per_node (its servers one fleet node counts as)."
        ) from None
    table = profiles.catalog()
    rows = table[(table["workload"] == "online-inference") & (table["hardware"] == hardware)]
    served = sorted(set(rows["model"]))
    if served and service.model not in served:
        raise InputError(
            f"{where}.model = {service.model!r}: the power curve on {hardware!r} is measured "
            f"with {', '.join(served)}, not {service.model!r}.{suggest(service.model, served)} "
            "Set model to it; the library has no curve of other models on this hardware."
        )


def _known_hardware() -> list[str]:
    try:
        import aiload.profiles as profiles

        return sorted(profiles.catalog()["hardware"].unique())
    except (ImportError, AttributeError, KeyError):
        return []


def run_facility(section: FacilitySection, *, progress: bool = True, **replace: Any):
    """Run ``aiload.facility(preset or FacilitySpec, ...)`` for the section -> ``FacilityLoad``."""
    return facility(section.to_spec(), **facility_kwargs(section, progress=progress, **replace))


def check_steps(scenario: Scenario) -> None:
    """Each study step must be a whole multiple of the facility step; checked before computing."""
    step = pd.Timedelta(pd.tseries.frequencies.to_offset(scenario.facility.freq))
    for name, section in (("grid", scenario.grid), ("microgrid", scenario.microgrid)):
        if section is None:
            continue
        target = pd.Timedelta(pd.tseries.frequencies.to_offset(section.freq))
        if target < step or target % step:
            raise InputError(
                f"{name}.freq = {section.freq!r} is not a whole multiple of facility.freq = "
                f"{scenario.facility.freq!r}: the facility series is averaged to the study step, "
                f"never split. Set {name}.freq to a multiple of {scenario.facility.freq} or make "
                "facility.freq finer."
            )
        start, end = pd.Timestamp(scenario.facility.start), pd.Timestamp(scenario.facility.end)
        if (end - start) % target:
            # resample keeps whole steps only: the tail would be left out of the study unsaid
            ends = [_iso(start + (end - start) // target * target),
                    _iso(start + ((end - start) // target + 1) * target)]
            raise InputError(
                f"{name}.freq = {section.freq!r} does not divide the facility horizon "
                f"{_iso(start)} .. {_iso(end)}: the last "
                f"{((end - start) % target).total_seconds() / 60:g} min would be left out of "
                f"the {name} study. Set facility.end = {ends[0]} or {ends[1]}, or a {name}.freq "
                "that divides the horizon."
            )
    if scenario.grid is not None and scenario.grid.flexible is not None:
        from scenarios.flexible_study import control_period_of  # noqa: PLC0415

        period = control_period_of(scenario.grid.flexible, scenario.facility)  # tables agree
        _check_flexible_steps(scenario, period)


def _iso(stamp: pd.Timestamp) -> str:
    """A time as written in a scenario file (``Z`` for UTC)."""
    text = stamp.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _check_flexible_steps(scenario: Scenario, period: str) -> None:
    """The control period against the steps of the runs with a limit, and the closed-loop
    window, before anything runs (InputError)."""
    section, flex = scenario.grid, scenario.grid.flexible
    period_s = pd.Timedelta(pd.tseries.frequencies.to_offset(period)).total_seconds()
    runs = []
    if "flexible_interconnection" in section.studies and flex.curtailment_cost:
        runs.append(("grid.freq", section.freq))
    if "cosimulate" in section.studies:
        runs.append(("grid.flexible.cosim_freq", flex.cosim_freq))
        start = pd.Timestamp(flex.cosim_start or scenario.facility.start)
        end = pd.Timestamp(flex.cosim_end) if flex.cosim_end else start + pd.Timedelta("7D")
        if end <= start:
            raise InputError(f"grid.flexible: cosim_end = {end} is not after cosim_start = "
                             f"{start}; expected a later cosim_end (or leave it out: 7 days).")
    if runs and scenario.facility.flexibility is not None:
        import dataclasses

        from aiload.facility.flexout import check_flexibility
        from aiload.facility.presets import resolve_spec
        from scenarios.flexible_study import facility_call

        spec, kwargs = facility_call(scenario.facility)
        flex = kwargs.pop("flexibility")
        check_flexibility(dataclasses.replace(resolve_spec(spec, kwargs), flexibility=flex))
    for name, freq in runs:
        step_s = pd.Timedelta(pd.tseries.frequencies.to_offset(freq)).total_seconds()
        ratio = max(period_s, step_s) / min(period_s, step_s)
        if abs(ratio - round(ratio)) > 1e-9 * ratio:
            raise InputError(
                f"the control period {period!r} ({period_s:g} s) is neither a whole multiple nor "
                f"a whole divisor of {name} = {freq!r} ({step_s:g} s); expected e.g. "
                f"control_period = {freq!r} in [grid.flexible].")


def interval_means_kw(power_kw: pd.Series, freq: str) -> pd.Series:
    """Interval means of a facility series at a coarser ``freq`` [kW], energy conserved.

    The identity when ``freq`` equals the series' own step; a finer ``freq`` is an error,
    because interval means cannot be split without inventing detail.
    """
    step = pd.Timedelta(power_kw.index.freq)
    target = pd.Timedelta(pd.tseries.frequencies.to_offset(freq))
    if target == step:
        return power_kw
    if target < step or target % step:
        raise InputError(
            f"cannot average a {step} facility series to {freq}: the study step must be a whole "
            f"multiple of the facility step. Set facility.freq to {freq} or finer."
        )
    return resample(power_kw, freq)


# --------------------------------------------------------------------------------- grid


@dataclass(frozen=True)
class GridPlan:
    """Everything the grid stage needs, built before any computation."""

    section: GridSection
    net: Any
    limits: Any
    module: Any = field(repr=False)
    short_circuit_data: Any = None


def prepare_grid(section: GridSection) -> GridPlan:
    """Load the network and build the limits; raise when the bus does not exist."""
    grid = _import("grid", "grid")
    try:
        net = grid.networks.load(section.network)
    except InputError as exc:
        raise InputError(f"grid.network = {section.network!r}: {exc}") from None
    if section.bus is not None and section.bus not in net.bus.index:  # None: a queue
        index = sorted(int(i) for i in net.bus.index)
        if index == list(range(index[0], index[-1] + 1)):
            buses = f"numbered {index[0]} to {index[-1]}"
        else:
            buses = f"{', '.join(map(str, index[:30]))}{', ...' if len(index) > 30 else ''}"
        raise InputError(
            f"grid.bus = {section.bus}: network {section.network!r} has no such bus; its "
            f"{len(index)} buses are {buses} (pandapower indices, not MATPOWER bus numbers: "
            "case118's bus 16 is index 15). Set grid.bus to one of them."
        )
    limits = grid.Limits(
        vm_min_pu=section.limits.vm_min_pu,
        vm_max_pu=section.limits.vm_max_pu,
        loading_max_percent=section.limits.loading_max_percent,
    )
    sc_data = None
    if "short_circuit" in section.studies and section.bus is not None:
        sc_data = _short_circuit_data(grid, net, section)
    if section.dynamics is not None:  # [grid.dynamics]: its case, buses and lines
        from scenarios.dynamics_study import check_dynamics

        check_dynamics(section.dynamics)
    return GridPlan(section=section, net=net, limits=limits, module=grid,
                    short_circuit_data=sc_data)


def _short_circuit_data(grid, net, section: GridSection):
    """``grid.ShortCircuitData`` of ``[grid.short_circuit]``, checked on the intact network
    (two IEC 60909 solves) so that missing data fail before the facility is simulated."""
    data = grid.ShortCircuitData(**section.short_circuit.data_kwargs())
    try:
        grid.short_circuit_strength(net, bus=section.bus, facility_mw=1.0, data=data,
                                    outages=None)
    except InputError as exc:
        raise InputError(
            f"grid.studies has 'short_circuit': {exc} In a scenario, write these values in a "
            "[grid.short_circuit] table (keys ext_grid_sc_max_mva, ext_grid_sc_min_mva, "
            "ext_grid_rx, gen_xdss_pu, gen_rx, gen_cos_phi, line_end_temp_degree)."
        ) from None
    return data


def run_grid(plan: GridPlan, facility_kw: pd.Series,
             stage: Callable[[str], object] | None = None,
             facility: FacilitySection | None = None,
             progress: bool = False) -> dict[str, Any]:
    """Run the requested grid studies for the facility series [kW] -> dict of results.

    ``stage(name)`` is called before each study and before the long part of one (progress
    lines of ``aiload run``); ``progress`` shows the progress bars of the studies that run
    the facility model again.
    ``facility`` (the scenario's ``[facility]``) is needed by the studies that run the
    facility model again: ``flexible_interconnection`` (its cost run) and ``cosimulate``.
    """
    grid, section = plan.module, plan.section
    load_mw = (interval_means_kw(facility_kw, section.freq) / 1000.0).rename("facility_mw")
    out: dict[str, Any] = {"load_mw": load_mw}
    stage = stage or (lambda name: None)
    steps = len(load_mw)
    described = {"timeseries": f"time-series power flow, {steps:,} steps",
                 "hosting_capacity": "hosting capacity",
                 "contingency": f"N-1 at the {min(section.contingency_hours, steps)} peak steps",
                 "short_circuit": "short-circuit strength"
                 + ("" if section.short_circuit.outages == "none" else ", intact and N-1"),
                 "load_loss": "load loss",
                 "flexible_interconnection": "flexible interconnection: headroom per step",
                 "cosimulate": "closed loop facility + network"
                 + (f", {section.flexible.cosim_freq} steps" if section.flexible else "")}
    for name in described:  # a fixed order, each study once
        if name not in section.studies:
            continue
        stage(described[name])
        if name in ("flexible_interconnection", "cosimulate"):
            from scenarios.flexible_study import run_flexible_study

            out.update(run_flexible_study(grid, plan, section, name, load_mw, facility,
                                          stage=stage, progress=progress))
            continue
        out.update(_run_study(grid, plan, section, name, load_mw))
    if section.dynamics is not None:  # [grid.dynamics]: scenarios.dynamics_study
        from scenarios.dynamics_study import run_dynamics_study

        stage(f"dynamic study in ANDES, {section.dynamics.t_end_s:g} s")
        out.update(run_dynamics_study(section, load_mw, facility_kw))
    return out


def _run_study(grid, plan: GridPlan, section: GridSection, name: str,
               load_mw: pd.Series) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if name == "timeseries":
        out["timeseries"] = grid.timeseries(
            plan.net, load_mw, bus=section.bus, power_factor=section.power_factor,
            limits=plan.limits, enforce_q_lims=section.enforce_q_lims,
        )
    if name == "hosting_capacity":
        out["hosting_capacity"] = grid.hosting_capacity(
            plan.net, bus=section.bus, limits=plan.limits, power_factor=section.power_factor,
            enforce_q_lims=section.enforce_q_lims,
        )
    if name == "contingency":
        out["contingency"] = grid.contingency(
            plan.net, load_mw, bus=section.bus, n_peak=section.contingency_hours,
            power_factor=section.power_factor, enforce_q_lims=section.enforce_q_lims,
            min_margin_fraction=section.min_margin_fraction,
        )
    if name == "short_circuit":
        sc = section.short_circuit
        out["short_circuit"] = grid.short_circuit_strength(
            plan.net, bus=section.bus,
            facility_mw=sc.facility_mw if sc.facility_mw is not None else float(load_mw.max()),
            data=plan.short_circuit_data, outages=None if sc.outages == "none" else sc.outages,
            scr_weak=sc.scr_weak, scr_very_weak=sc.scr_very_weak,
        )
    if name == "load_loss":
        out["load_loss"] = grid.load_loss(
            plan.net, bus=section.bus, p_mw=float(load_mw.max()), power_factor=section.power_factor,
            enforce_q_lims=section.enforce_q_lims,
        )
    return out


# --------------------------------------------------------------------------- microgrid


@dataclass(frozen=True)
class MicrogridPlan:
    """Everything the sizing stage needs, built before any computation."""

    section: MicrogridSection
    site: SiteSection
    weather: Any
    costs: Any
    battery: Any
    generator: Any
    module: Any = field(repr=False)
    carbon: Any = None
    extra_generators: tuple = ()


def _check_keys(cls, kwargs: dict[str, Any], where: str) -> list:
    """The init fields of the dataclass ``cls``; an unknown key of ``kwargs`` named with the
    nearest field and the table's keys (was Python's 'unexpected keyword argument')."""
    import dataclasses
    import difflib

    fields = [f for f in dataclasses.fields(cls) if f.init]
    names = [f.name for f in fields]
    for key in kwargs:
        if key not in names:
            near = difflib.get_close_matches(key, names, n=1, cutoff=0.5)
            raise InputError(
                f"{where}: unknown key {key!r} (microgrid.{cls.__name__} has no such field)."
                + (f" Did you mean {near[0]!r}?" if near else "")
                + f" Allowed in [{where}]: {', '.join(names)}."
            )
    return fields


def _build(cls, kwargs: dict[str, Any], where: str, *, make: Callable | None = None,
           missing_hint: str = ""):
    """``cls(**kwargs)`` (or ``make(**kwargs)``, which fills the rest) of a [microgrid] table;
    unknown and missing keys named with the table's keys."""
    import dataclasses

    fields = _check_keys(cls, kwargs, where)
    required = [f.name for f in fields if f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING]
    missing = [k for k in required if k not in kwargs]
    if missing and make is None:
        raise InputError(
            f"[{where}] lacks {', '.join(missing)}, which microgrid.{cls.__name__} needs; add "
            f"{'them' if len(missing) > 1 else 'it'} to [{where}]{missing_hint}."
        )
    try:
        return (make or cls)(**kwargs)
    except TypeError as exc:
        raise InputError(f"{where}: {exc}; see the {cls.__name__} reference for its keys") from None
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None


def _microgrid_costs(mg, section: MicrogridSection):
    """Costs of the section: a named cost set with single prices overridden, or the table."""
    if section.cost_set is None:
        return _build(mg.Costs, section.costs, "microgrid.costs", missing_hint=(
            f", or set cost_set = {mg.cost_set_names()[0]!r} in [microgrid] for a bundled, "
            "cited cost set (the table then overrides single prices)"))
    if section.cost_set not in mg.cost_set_names():
        try:
            mg.cost_set(section.cost_set)
        except InputError as exc:
            raise InputError(f"microgrid.cost_set = {section.cost_set!r}: {exc}") from None
    _check_keys(mg.Costs, section.costs, "microgrid.costs")
    priced = {"generator_usd_per_kw_year", "fuel_usd_per_kwh"} <= set(section.costs)
    if (section.generator_technology is None and not priced
            and section.generator.get("max_power_kw") != 0):
        raise InputError(
            f"microgrid.cost_set = {section.cost_set!r} prices a generator only through "
            "generator_technology (one of "
            f"{list(mg.technology_names())}); got none. Set generator_technology, give "
            "generator_usd_per_kw_year and fuel_usd_per_kwh in [microgrid.costs], or forbid "
            "generators with [microgrid.generator] max_power_kw = 0."
        )
    try:
        return mg.costs(section.cost_set, year=section.cost_year,
                        discount_rate=section.discount_rate,
                        generator=section.generator_technology, **section.costs)
    except InputError as exc:
        raise InputError(f"microgrid.cost_set = {section.cost_set!r}, cost_year = "
                         f"{section.cost_year!r} with [microgrid.costs]: {exc}") from None


def prepare_microgrid(section: MicrogridSection, site: SiteSection) -> MicrogridPlan:
    """Build costs, battery, generator and read the weather year, before any computation."""
    mg = _import("microgrid", "microgrid")
    if section.generator_technology is not None:
        try:
            mg.technology(section.generator_technology)
        except InputError as exc:
            raise InputError(f"microgrid.generator_technology = "
                             f"{section.generator_technology!r}: {exc}") from None
    weather = None
    if site.weather is not None and section.pv is not None:
        weather = read_tmy3_weather(site.weather)
    return MicrogridPlan(
        section=section,
        site=site,
        weather=weather,
        costs=_microgrid_costs(mg, section),
        battery=_build(mg.Battery, section.battery, "microgrid.battery"),
        generator=(
            _build(mg.Generator, section.generator, "microgrid.generator")
            if section.generator_technology is None
            else _build(mg.Generator, section.generator, "microgrid.generator",
                        make=mg.technology(section.generator_technology).generator)
        ),
        module=mg,
        carbon=_microgrid_carbon(mg, section),
        extra_generators=_extra_generators(mg, section),
    )


def _extra_generators(mg, section: MicrogridSection) -> tuple:
    """The section's further generator technologies, priced by its cost set."""
    try:
        return tuple(mg.priced_generator(section.cost_set, name, year=section.cost_year,
                                         discount_rate=section.discount_rate)
                     for name in section.extra_generator_technologies)
    except InputError as exc:
        raise InputError(f"microgrid.extra_generator_technologies: {exc}") from None


def _microgrid_carbon(mg, section: MicrogridSection):
    """``microgrid.Carbon`` of the section's carbon table (None without one)."""
    if section.carbon is None:
        return None
    kwargs = dict(section.carbon)
    if kwargs.get("price_usd_per_t") == "cost_set":
        if section.cost_set is None:
            raise InputError(
                "microgrid.carbon.price_usd_per_t = 'cost_set' needs [microgrid] cost_set; set "
                "one or give the price as a number [USD/t]."
            )
        kwargs["price_usd_per_t"] = mg.cost_set(section.cost_set).carbon_price_usd_per_t(
            section.cost_year)
    return _build(mg.Carbon, kwargs, "microgrid.carbon")


def read_tmy3_weather(path: str) -> tuple[pd.DataFrame, dict]:
    """A TMY3 file relabelled to interval starts, as ``microgrid.default_weather`` does.

    Returns ``ghi, dni, dhi`` [W/m2], ``temp_air`` [degC], ``wind_speed`` [m/s] and the header.
    """
    import pvlib

    try:
        data, meta = pvlib.iotools.read_tmy3(path, coerce_year=2023, map_variables=True)
    except Exception as exc:  # pvlib raises several types on a malformed file
        raise InputError(
            f"site.weather = {path!r}: cannot be read as a TMY3 CSV ({type(exc).__name__}: {exc}); "
            "give a TMY3 file such as pvlib's data/723170TYA.CSV"
        ) from None
    # TMY labels are hour-ending; the load series is labelled by interval start
    data.index = data.index - pd.Timedelta(hours=1)
    data = data.sort_index()
    data.index.freq = pd.infer_freq(data.index)
    return data[["ghi", "dni", "dhi", "temp_air", "wind_speed"]], meta


def run_microgrid(plan: MicrogridPlan, facility_kw: pd.Series,
                  stage: Callable[[str], object] | None = None):
    """Size PV, battery and generator for the facility series [kW]; returns ``(Sizing, pv)``.

    ``stage(line)`` hears of the solve's phases (``microgrid.size(progress=)``)."""
    mg, section = plan.module, plan.section
    load_kw = interval_means_kw(facility_kw, section.freq).rename("load_kw")
    pv = None
    if section.pv is not None:
        weather, meta = plan.weather if plan.weather is not None else (None, {})
        lat = plan.site.latitude if plan.site.latitude is not None else meta.get("latitude")
        lon = plan.site.longitude if plan.site.longitude is not None else meta.get("longitude")
        pv = mg.pv_availability(
            weather,
            latitude=lat,
            longitude=lon,
            tilt=section.pv.tilt,
            azimuth=section.pv.azimuth,
            index=load_kw.index,
        )
    sizing = mg.size(
        load_kw,
        pv_availability=pv,
        costs=plan.costs,
        battery=plan.battery,
        generator=plan.generator,
        import_limit_kw=section.import_limit_kw,
        max_dump_load_kw=section.max_dump_load_kw,
        allow_simultaneous_charge_discharge=section.allow_simultaneous_charge_discharge,
        **({"carbon": plan.carbon} if plan.carbon is not None else {}),
        **({"extra_generators": plan.extra_generators,
            "generator_name": section.generator_technology or "generator"}
           if plan.extra_generators else {}),
        **({"progress": stage} if stage is not None else {}),
        **section.options,
    )
    return sizing, pv


def describe(scenario: Scenario) -> list[str]:
    """The stages a scenario asks for, in order (for progress lines)."""
    stages = ["facility", "metrics"]
    if scenario.grid is not None:
        stages.append("grid")
    if scenario.microgrid is not None:
        stages.append("microgrid")
    return stages
