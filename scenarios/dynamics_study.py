"""The dynamic study of a scenario (``[grid.dynamics]``): the facility in ANDES through events.

:func:`check_dynamics` reads the case and checks the buses and lines the table names while the
grid stage is prepared (before anything is computed); :func:`run_dynamics_study` runs
``grid.dynamics.simulate`` (and ``loss_of_load_capacity`` when asked) and returns a
:class:`DynamicsStudy`, whose scalar fields go to ``summary.json`` (``grid.dynamics``) and
whose tables to ``grid_dynamics_trajectories.parquet`` (and
``grid_dynamics_loss_of_load_runs.parquet``, ``grid_dynamics_fault_scan_runs.parquet``), as for
every grid study; :func:`digest_line` is its line in ``aiload run``'s closing summary. Units
change here: the scenario speaks MW, ``grid.dynamics`` takes the facility in kW.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from aiload.errors import InputError

__all__ = ["DynamicsStudy", "check_dynamics", "simulate_kwargs", "run_dynamics_study",
           "event_rows", "digest_line"]


@dataclass(frozen=True)
class DynamicsStudy:
    """What ``[grid.dynamics]`` produced.

    Scalars [units in the names] are the figures of ``grid.dynamics.DynamicResult`` for the
    one facility; ``events``, ``ride_through``, ``limits`` say what was simulated;
    ``transfers`` the rule's transfers and returns; ``fault_scan`` (``[grid.dynamics.fault_scan]``)
    one record per faulted bus: the facility-bus voltage minimum [pu], whether the facility
    transferred, the MW lost, the frequency zenith [Hz], whether ANDES completed the run (also
    as the table ``fault_scan_runs``); ``trajectories`` the traces on the
    simulation's time axis (seconds from its start): COI and facility-bus frequency [Hz],
    facility-bus voltage [pu], facility power [MW] and online share [-], every machine's
    frequency and every bus voltage. ``result`` is the ``DynamicResult`` itself (not written).
    """

    case: str
    source: str
    bus: Any
    facility_mw: float
    facility_from: str
    facility_at: str | None
    t_end_s: float
    dt_s: float
    completed: bool
    message: str
    events: list
    ride_through: dict | None
    limits: dict
    frequency_nadir_hz: float
    frequency_zenith_hz: float
    rocof_hz_s: float
    settling_frequency_hz: float
    voltage_min_pu: float
    voltage_recovery_s: float
    mw_lost: float
    mw_restored: float
    transfers: list
    oscillations: dict
    verdict_passed: bool
    verdict_reasons: list
    loss_of_load: dict | None
    trajectories: pd.DataFrame = field(repr=False)
    loss_of_load_runs: pd.DataFrame | None = field(default=None, repr=False)
    fault_scan: list | None = None
    fault_scan_settings: dict | None = None
    fault_scan_runs: pd.DataFrame | None = field(default=None, repr=False)
    result: Any = field(default=None, repr=False)


def _case(section):
    from grid.dynamics.cases import load_case

    try:
        return load_case(section.case, dyr=section.dyr)
    except ValueError as exc:
        raise InputError(f"grid.dynamics.case = {section.case!r}: {exc}") from None


def _buses(buses: list) -> str:
    ints = all(isinstance(b, int) for b in buses)
    if ints and sorted(buses) == list(range(min(buses), max(buses) + 1)):
        return f"numbered {min(buses)} to {max(buses)}"
    shown = ", ".join(map(str, buses[:30]))
    return shown + (", ..." if len(buses) > 30 else "")


def check_dynamics(section) -> None:
    """The case can be read and every bus and line ``[grid.dynamics]`` names is in it."""
    c = _case(section)
    buses = c.buses
    where = f"case {section.case!r} has no such bus; its {len(buses)} buses are {_buses(buses)}"
    if section.bus not in buses:
        raise InputError(f"grid.dynamics.bus = {section.bus!r}: {where} (ANDES bus ids; "
                         "for IEEE 39 the pandapower case39 index + 1). Set grid.dynamics.bus "
                         "to one of them.")
    lines = [r["idx"] for r in c.records.get("Line", ())]
    scan = section.fault_scan
    if scan is not None and scan.buses != "all":
        missing = [b for b in scan.buses if b not in buses]
        if missing:
            raise InputError(f"grid.dynamics.fault_scan.buses has {missing[0]!r}: {where}.")
    for i, e in enumerate(section.events):
        if e.kind == "fault" and e.bus not in buses:
            raise InputError(f"grid.dynamics.events[{i}].bus = {e.bus!r}: {where}.")
        if e.kind == "fault" and e.trip_line is not None and e.trip_line not in lines:
            raise InputError(f"grid.dynamics.events[{i}].trip_line = {e.trip_line!r}: case "
                             f"{section.case!r} has no such line; its lines are "
                             f"{_buses(lines)}.")


def _facility_load(section, load_mw: pd.Series, facility_kw: pd.Series | None):
    """``(load_kw, what it is, when)``: the constant or series the facility runs at."""
    if section.series:
        if facility_kw is None:
            raise InputError("grid.dynamics.series = true needs the facility series")
        start = facility_kw.index[0]
        window = facility_kw[facility_kw.index < start + pd.Timedelta(seconds=section.t_end_s)]
        return (window.astype(float), f"its own series from {start.isoformat()}, "
                f"{facility_kw.index.freqstr or 'its'} interval means", start.isoformat())
    if section.facility_mw is not None:
        return section.facility_mw * 1e3, "grid.dynamics.facility_mw", None
    at = load_mw.idxmax()
    return (float(load_mw.max()) * 1e3, "the peak of the facility series at grid.freq",
            pd.Timestamp(at).isoformat())


def simulate_kwargs(section, power_factor: float, load_kw) -> dict[str, Any]:
    """The keyword arguments of ``grid.dynamics.simulate`` for ``[grid.dynamics]``."""
    return dict(facility_bus=section.bus, load_kw=load_kw,
                event=[e.to_event() for e in section.events],
                ride_through=section.ride_through.to_rule(), t_end_s=section.t_end_s,
                dt_s=section.dt_s, power_factor=power_factor, dispatch=section.dispatch)


def event_rows(section, f_nominal_hz: float) -> list[dict[str, Any]]:
    """The events as plain records (JSON-safe), in time order."""
    rows = []
    for e in sorted(section.events, key=lambda e: e.t_s):
        ev = e.to_event()
        if e.kind == "fault":
            rows.append({"kind": "fault", "t_s": ev.t_s, "bus": ev.bus, "cycles": ev.cycles,
                         "duration_s": ev.duration_s(f_nominal_hz), "x_pu": ev.x_pu,
                         "r_pu": ev.r_pu, "trip_line": ev.trip_line})
        elif e.kind == "trip":
            rows.append({"kind": "trip", "t_s": ev.t_s, "share": ev.share})
        else:
            rows.append({"kind": "step", "t_s": ev.t_s, "delta_mw": ev.delta_kw / 1e3})
    return rows


def _rule(rule) -> dict | None:
    if rule is None:
        return None
    return {"name": rule.name, "voltage_time": [list(p) for p in rule.voltage_time],
            "f_low_hz": rule.f_low_hz, "f_high_hz": rule.f_high_hz,
            "f_duration_s": rule.f_duration_s, "share": rule.share,
            "return_delay_s": None if math.isinf(rule.return_delay_s) else rule.return_delay_s,
            "ramp_s": rule.ramp_s}


def _trajectories(r) -> pd.DataFrame:
    name = r.facilities[0].name
    frame = pd.DataFrame({
        "frequency_coi_hz": r.frequency_hz["coi"],
        "frequency_facility_bus_hz": r.facility_frequency_hz[name],
        "voltage_facility_bus_pu": r.voltage_pu[r.facilities[0].bus],
        "facility_mw": r.facility_mw[name],
        "facility_scheduled_mw": r.scheduled_mw[name],
        "facility_online_share": r.online[name],
    })
    machines = r.frequency_hz.drop(columns="coi").add_prefix("frequency_hz[machine ")
    machines.columns = [f"{c}]" for c in machines.columns]
    buses = r.voltage_pu.copy()
    buses.columns = [f"voltage_pu[bus {c}]" for c in buses.columns]
    out = pd.concat([frame, machines, buses], axis=1)
    out.index.name = "t_s"
    return out


def run_dynamics_study(section, load_mw: pd.Series,
                       facility_kw: pd.Series | None = None) -> dict[str, Any]:
    """Run ``[grid.dynamics]`` of the grid section ``section`` -> ``{"dynamics": DynamicsStudy}``.

    ``load_mw``: the facility series at ``grid.freq`` [MW] (its peak is the facility's power
    unless ``facility_mw`` or ``series`` says otherwise); ``facility_kw``: the facility's own
    series [kW] (for ``series = true``).
    """
    from grid.dynamics import loss_of_load_capacity, simulate

    dyn = section.dynamics
    c = _case(dyn)
    load_kw, what, at = _facility_load(dyn, load_mw, facility_kw)
    limits, curve = dyn.limits.to_limits(), dyn.limits.curve()
    try:
        r = simulate(c, **simulate_kwargs(dyn, section.power_factor, load_kw))
    except ValueError as exc:
        raise InputError(f"[grid.dynamics] at bus {dyn.bus!r} of {dyn.case!r}: {exc}") from None
    name = r.facilities[0].name
    verdict = r.verdict(limits, ride_through_curve=curve)
    osc = r.oscillations()
    loss = runs = None
    if dyn.loss_of_load is not None:
        lol = dyn.loss_of_load
        cap = loss_of_load_capacity(c, dyn.bus, f_max_hz=lol.f_max_hz, f_min_hz=lol.f_min_hz,
                                    share=lol.share, max_mw=lol.max_mw,
                                    tolerance_mw=lol.tolerance_mw, t_end_s=lol.t_end_s,
                                    dt_s=lol.dt_s, dispatch=dyn.dispatch)
        loss = {"facility_mw": cap.facility_mw, "lost_mw": cap.lost_mw, "share": cap.share,
                "f_max_hz": cap.f_max_hz, "f_min_hz": cap.f_min_hz, "binding": cap.binding,
                "tolerance_mw": cap.tolerance_mw, "runs": len(cap.runs)}
        runs = cap.runs
    scan = scan_runs = scan_settings = None
    if dyn.fault_scan is not None:
        scan_runs, scan_settings = _fault_scan(c, dyn, section.power_factor,
                                               float(r.scheduled_mw[name].iloc[0]))
        scan = [] if scan_runs is None else [
            {"fault_bus": b.item() if hasattr(b, "item") else b, **_scan_row(row)}
            for b, row in scan_runs.iterrows()]
    study = DynamicsStudy(
        case=c.name, source=c.source, bus=dyn.bus,
        facility_mw=float(r.scheduled_mw[name].iloc[0]), facility_from=what, facility_at=at,
        t_end_s=float(r.t_s[-1]), dt_s=dyn.dt_s, completed=r.completed, message=r.message,
        events=event_rows(dyn, r.f_nominal_hz), ride_through=_rule(dyn.ride_through.to_rule()),
        limits={"f_min_hz": limits.f_min_hz, "f_max_hz": limits.f_max_hz,
                "rocof_max_hz_s": limits.rocof_max_hz_s,
                "voltage_curve": None if curve is None else [list(p) for p in curve]},
        frequency_nadir_hz=r.frequency_nadir_hz(), frequency_zenith_hz=r.frequency_zenith_hz(),
        rocof_hz_s=r.rocof_hz_s(), settling_frequency_hz=r.settling_frequency_hz(),
        voltage_min_pu=r.voltage_dip_pu()[name], voltage_recovery_s=r.voltage_recovery_s()[name],
        mw_lost=r.mw_lost(), mw_restored=r.mw_restored(),
        transfers=[{"t_s": t, "what": what_} for t, _, what_ in r.log],
        oscillations={band: {"amplitude_mhz": float(row["amplitude_mhz"]),
                             "frequency_hz": float(row["frequency_hz"]),
                             "damping_ratio": float(row["damping_ratio"]),
                             "band_hz": list(row["band_hz"])}
                      for band, row in osc.iterrows()},
        verdict_passed=verdict.passed, verdict_reasons=list(verdict.reasons),
        loss_of_load=loss, trajectories=_trajectories(r), loss_of_load_runs=runs,
        fault_scan=scan, fault_scan_settings=scan_settings, fault_scan_runs=scan_runs, result=r)
    return {"dynamics": study}


def _scan_row(row) -> dict[str, Any]:
    """One row of ``which_faults_trip`` as JSON-safe scalars."""
    return {k: (bool(v) if k in ("tripped", "completed") else str(v) if k == "message"
                else float(v)) for k, v in row.items()}


def _fault_scan(c, dyn, power_factor: float, facility_mw: float):
    """``which_faults_trip`` for ``[grid.dynamics.fault_scan]``: the facility at the study's
    power at its start [MW], with the study's rule, power factor and dispatch."""
    from grid.dynamics import which_faults_trip

    scan = dyn.fault_scan
    rule = dyn.ride_through.to_rule()
    if rule is None:  # nothing to simulate: without a rule no fault takes the facility off
        return None, {"skipped": "no ride-through rule (ride_through.enabled = false): no "
                                 "fault takes the facility off the grid"}
    buses = None if scan.buses == "all" else list(scan.buses)
    table = which_faults_trip(c, dyn.bus, facility_mw * 1e3,
                              ride_through=rule, fault_buses=buses,
                              cycles=scan.cycles, x_pu=scan.x_pu, t_end_s=scan.t_end_s,
                              dt_s=scan.dt_s, power_factor=power_factor, dispatch=dyn.dispatch)
    settings = {"facility_mw": facility_mw, "cycles": scan.cycles,
                "duration_s": scan.cycles / c.freq_hz, "x_pu": scan.x_pu, "t_fault_s": 0.5,
                "t_end_s": scan.t_end_s, "dt_s": scan.dt_s, "buses": len(table),
                "tripping": int(table["tripped"].sum()),
                "stopped_early": int((~table["completed"]).sum())}
    return table, settings


def _hz(value) -> str:
    """A frequency [Hz] to the mHz (4 significant digits would round 59.985 to 59.99)."""
    return f"{value:.3f}" if isinstance(value, (int, float)) and math.isfinite(value) else "n/a"


def digest_line(record: dict[str, Any]) -> str:
    """The dynamic study's line in ``aiload run``'s closing summary, from its
    ``summary.json`` record (``grid.dynamics``): nadir, zenith, MW lost, the verdict, and the
    loss-of-load capacity and fault scan when computed."""
    from scenarios.formatting import number

    n = len(record.get("verdict_reasons") or ())
    verdict = ("passes" if record.get("verdict_passed") else
               f"fails ({n} breach{'es' if n != 1 else ''})")
    line = (f"dynamics ({record.get('case')} bus {record.get('bus')}, "
            f"{number(record.get('facility_mw', math.nan))} MW): nadir "
            f"{_hz(record.get('frequency_nadir_hz'))} Hz, zenith "
            f"{_hz(record.get('frequency_zenith_hz'))} Hz, "
            f"{number(record.get('mw_lost', math.nan))} MW lost; verdict {verdict}")
    if not record.get("completed", True):
        line += "; the simulation stopped early"
    lol = record.get("loss_of_load")
    if lol:
        line += f"; loss-of-load capacity {number(lol['facility_mw'])} MW"
    scan = record.get("fault_scan")
    if (record.get("fault_scan_settings") or {}).get("skipped"):
        line += "; fault scan skipped (no ride-through rule)"
    elif scan:
        tripping = [str(row["fault_bus"]) for row in scan if row["tripped"]]
        stopped = sum(1 for row in scan if not row["completed"])
        line += (f"; faults at {len(tripping)} of {len(scan)} buses trip it"
                 + (f" ({', '.join(tripping[:10])}{', ...' if len(tripping) > 10 else ''})"
                    if tripping else "")
                 + (f", {stopped} run{'s' if stopped != 1 else ''} stopped early" if stopped
                    else ""))
    return line
