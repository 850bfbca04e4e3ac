"""The interconnection queue of a scenario (``[[facility]]`` tables), issue 30.

Each queued facility's series is generated with ``aiload.facility`` (serially, or one task
per facility on Dask), and the grid studies are called with the mapping bus -> facility
series [MW], in queue order -- the same ``grid`` functions as one facility's, no second code
path: ``grid.timeseries``, ``grid.hosting_capacity(queue=...)``, ``grid.contingency`` and
``grid.load_loss``. The queue's total (the sum on one UTC axis) stands where one facility's
series stands in the rest of the run: metrics, ``facility.parquet``, the report's figures.
Each facility's own ``facility_kw`` is written to ``facility_queue.parquet``, one column per
facility named by its bus (``bus 49``), UTC index.

Seeds: :mod:`scenarios.schema_queue`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from aiload.errors import InputError
from aiload.facility import facility
from aiload.facility.io import FacilityLoad
from scenarios import studies
from scenarios.schema import QueuedFacilitySection, Scenario
from scenarios.schema_queue import QUEUE_GRID_STUDIES, QueueSection, facility_seed

__all__ = ["sections", "lead_view", "check_queue", "check_buses", "run_facilities",
           "total_load", "series_kw", "run_grid", "summary_of", "digest_lines"]

_POWER_COLUMNS = ("it_kw", "losses_kw", "cooling_kw", "facility_kw")


def _queue(scenario: Scenario) -> QueueSection:
    return scenario.queue if scenario.queue is not None else QueueSection()


def sections(scenario: Scenario) -> list[tuple[int, QueuedFacilitySection]]:
    """``(position in the file, section with its seed resolved)`` in queue order."""
    queue = _queue(scenario)
    out = []
    for k, section in enumerate(scenario.facility):
        if "seed" not in section.model_fields_set:
            seed = queue.seed if queue.seeds == "in_phase" else facility_seed(queue.seed, k)
            section = section.model_copy(update={"seed": seed})
        out.append((k, section))
    if queue.order is not None:
        out = [out[k] for k in queue.order]
    return out


def lead_view(scenario: Scenario) -> Scenario:
    """The scenario seen through its first queued facility (same start, end and freq as all
    of them): for the parts of a run that read ``scenario.facility``'s time axis."""
    return scenario.model_copy(update={"facility": sections(scenario)[0][1]})


def _label(k: int, section: QueuedFacilitySection) -> str:
    return f"facility[{k}] (bus {section.bus})"


def check_queue(scenario: Scenario) -> None:
    """Every facility's preset or spec, and the studies a queue can run, before computing;
    every problem said at once (InputError)."""
    problems = []
    for k, section in sections(scenario):
        try:
            studies.check_facility(section)
        except InputError as exc:
            problems.append(f"{_label(k, section)}: {exc}")
        if section.replicates != 1:
            problems.append(
                f"{_label(k, section)}: replicates = {section.replicates}; a queue runs one "
                "replicate per facility. Remove replicates (Monte Carlo of a queue: `aiload "
                "sweep` over queue.seed)")
    grid = scenario.grid
    if grid is not None:
        refused = [s for s in grid.studies if s not in QUEUE_GRID_STUDIES]
        if refused:
            problems.append(
                f"grid.studies has {', '.join(map(repr, refused))}, which do not take an "
                "interconnection queue ([[facility]] tables) yet; a queue runs "
                f"{', '.join(map(repr, QUEUE_GRID_STUDIES))}. Remove the others, or study one "
                "facility with a [facility] table and grid.bus")
        from scenarios.flexible_queue_study import check_flexible  # noqa: PLC0415

        problems.extend(check_flexible(scenario, sections(scenario)))
        if grid.dynamics is not None:
            problems.append("[grid.dynamics] does not take an interconnection queue "
                            "([[facility]] tables) yet; remove it, or study one facility with "
                            "a [facility] table and grid.bus")
    for name in ("microgrid", "stabilise"):
        if getattr(scenario, name) is not None:
            problems.append(f"[{name}] does not take an interconnection queue ([[facility]] "
                            "tables): it sizes one site's supply; remove it, or run that "
                            "facility alone with a [facility] table")
    if problems:
        raise InputError("\n".join(problems) if len(problems) == 1 else
                         f"{len(problems)} problems with the queue:\n"
                         + "\n".join("  " + p for p in problems))


def check_buses(plan: studies.GridPlan, scenario: Scenario) -> None:
    """Every queued facility's bus exists in the network (InputError naming them)."""
    net = plan.net
    missing = [(k, s.bus) for k, s in sections(scenario) if s.bus not in net.bus.index]
    if missing:
        index = sorted(int(i) for i in net.bus.index)
        raise InputError(
            "; ".join(f"facility[{k}].bus = {b}" for k, b in missing)
            + f": network {plan.section.network!r} has no such bus; its {len(index)} buses are "
            f"numbered {index[0]} to {index[-1]} (pandapower indices, not MATPOWER bus "
            "numbers: case118's bus 16 is index 15). Set bus to one of them.")
    slack = set(int(b) for b in plan.net.ext_grid.bus)
    on_slack = [(k, s.bus) for k, s in sections(scenario) if s.bus in slack]
    if on_slack:
        raise InputError(
            "; ".join(f"facility[{k}].bus = {b}" for k, b in on_slack)
            + ": the external grid (slack) bus; a facility there sees no network between it "
            "and the source. Move it to another bus.")


def run_one(section: QueuedFacilitySection) -> FacilityLoad:
    """``aiload.facility`` for one queued facility, on its site's clock (a Dask task)."""
    kwargs = studies.facility_kwargs(section, progress=False)
    if section.timezone is not None:
        kwargs["start"] = kwargs["start"].tz_convert(section.timezone)
        kwargs["end"] = kwargs["end"].tz_convert(section.timezone)
    return facility(section.to_spec(), **kwargs)


def run_facilities(scenario: Scenario, *, workers: int = 0, scheduler: str | None = None,
                   stage: Callable[[str], object] | None = None) -> dict[int, FacilityLoad]:
    """Every queued facility's ``FacilityLoad`` by bus, in queue order: serially, or one task
    per facility on Dask (``workers`` local processes, or the ``scheduler`` at an address)."""
    ordered = sections(scenario)
    stage = stage or (lambda text: None)
    if not isinstance(workers, int) or workers < 0:
        raise InputError(f"workers = {workers!r}: expected a whole number >= 0 of local Dask "
                         "processes (0: the facilities one after another, here)")
    if scheduler is None and workers == 0:
        out = {}
        for k, section in ordered:
            stage(f"facility {k + 1}/{len(ordered)} at bus {section.bus}")
            out[section.bus] = run_one(section)
        return out
    from distributed import Client  # noqa: PLC0415

    from scenarios import sweep  # noqa: PLC0415  (its cluster settings and checks)

    cluster = None
    stage(f"{len(ordered)} facilities on Dask"
          + (f" ({scheduler})" if scheduler else f" ({workers} local workers)"))
    if scheduler is None:
        cluster = sweep.local_cluster(workers)
        client = Client(cluster)
    else:
        sweep._check_scheduler(scheduler)
        client = Client(scheduler)
    try:
        client.run(sweep._warm_worker, os.getpid())
        futures = [client.submit(run_one, section, pure=False) for _, section in ordered]
        loads = client.gather(futures)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return {section.bus: load for (_, section), load in zip(ordered, loads, strict=True)}


def total_load(loads: Mapping[int, FacilityLoad]) -> FacilityLoad:
    """The queue as one facility: ``it_kw``, ``losses_kw``, ``cooling_kw`` and
    ``facility_kw`` summed per step on one UTC axis [kW] (every facility has the same
    start, end and step, so no step is dropped and energy adds up); the job logs stacked
    with a ``bus`` column; each facility's ``meta`` under ``meta['queue']``."""
    frames = [load.power.tz_convert("UTC") for load in loads.values()]
    index = frames[0].index
    for frame in frames[1:]:
        if not frame.index.equals(index):
            raise InputError("queued facility series on different time axes; every "
                             "[[facility]] needs the same start, end and freq")
    power = pd.DataFrame({c: np.sum([f[c].to_numpy(dtype=np.float64) for f in frames], axis=0)
                          for c in _POWER_COLUMNS}, index=index)
    power.index.freq = frames[0].index.freq
    jobs = [load.jobs.assign(bus=bus) for bus, load in loads.items() if len(load.jobs)]
    jobs_table = (pd.concat(jobs, ignore_index=True) if jobs else
                  next(iter(loads.values())).jobs.assign(bus=pd.Series([], dtype=int)))
    meta = {"queue": {str(bus): load.meta for bus, load in loads.items()}}
    return FacilityLoad(power=power, jobs=jobs_table, meta=meta)


def series_kw(loads: Mapping[int, FacilityLoad]) -> pd.DataFrame:
    """Each facility's ``facility_kw`` [kW], one column per facility (``bus 49``), UTC."""
    return pd.DataFrame({f"bus {bus}": load.power["facility_kw"].tz_convert("UTC")
                         for bus, load in loads.items()})


def load_mapping(loads: Mapping[int, FacilityLoad], freq: str) -> dict[int, pd.Series]:
    """The mapping bus -> facility series [MW] at the grid step, in queue order: what the
    grid studies are called with."""
    return {bus: (studies.interval_means_kw(load.power["facility_kw"], freq) / 1000.0
                  ).rename("facility_mw") for bus, load in loads.items()}


def run_grid(plan: studies.GridPlan, loads: Mapping[int, FacilityLoad], queue: QueueSection,
             stage: Callable[[str], object] | None = None,
             ordered: list[tuple[int, QueuedFacilitySection]] | None = None) -> dict[str, Any]:
    """The requested grid studies of the queue -> dict of results (``load_mw``: the total).
    ``ordered``: :func:`sections` of the scenario, needed by ``cosimulate`` (each facility's
    spec and seed)."""
    grid, section = plan.module, plan.section
    mapping = load_mapping(loads, section.freq)
    total = pd.concat([s.tz_convert("UTC") for s in mapping.values()], axis=1).sum(axis=1)
    out: dict[str, Any] = {"load_mw": total.rename("facility_mw")}
    stage = stage or (lambda text: None)
    common = dict(power_factor=section.power_factor, enforce_q_lims=section.enforce_q_lims)
    n = len(mapping)
    if "timeseries" in section.studies:
        stage(f"time-series power flow, {len(total):,} steps, {n} facilities")
        out["timeseries"] = grid.timeseries(plan.net, mapping, limits=plan.limits, **common)
    if "hosting_capacity" in section.studies:
        stage(f"hosting capacity of the queue ({n} facilities: common scaling, then in order)")
        out["hosting_capacity"] = grid.hosting_capacity(plan.net, queue=mapping,
                                                        limits=plan.limits, **common)
    if "contingency" in section.studies:
        stage(f"N-1 at the queue's {min(section.contingency_hours, len(total))} peak steps")
        out["contingency"] = grid.contingency(
            plan.net, mapping, n_peak=section.contingency_hours,
            min_margin_fraction=section.min_margin_fraction, **common)
    if "load_loss" in section.studies:
        peak = total.idxmax()  # the queue's coincident peak: each facility at its power there
        stage(f"load loss of {'all' if queue.trip is None else len(queue.trip)} facilities "
              "at the queue's peak")
        out["load_loss"] = grid.load_loss(
            plan.net, p_mw={b: float(s.tz_convert("UTC").loc[peak]) for b, s in mapping.items()},
            trip=queue.trip, loading_max_percent=section.limits.loading_max_percent, **common)
    if any(s in section.studies for s in ("flexible_interconnection", "cosimulate")):
        from scenarios.flexible_queue_study import run_flexible  # noqa: PLC0415

        out.update(run_flexible(plan, mapping, ordered, stage))
    return out


def _kind(section: QueuedFacilitySection) -> str:
    return section.preset if section.preset is not None else "full spec"


def summary_of(scenario: Scenario, loads: Mapping[int, FacilityLoad],
               grid_results: Mapping[str, Any] | None) -> dict[str, Any]:
    """``summary.json``'s ``queue``: one row per facility in queue order (bus, name, kind,
    seed, requested and allocated MW, the binding constraint and where, violations at its
    bus) and the common scaling."""
    grid_results = grid_results or {}
    freq = scenario.grid.freq if scenario.grid is not None else None
    hosting = grid_results.get("hosting_capacity")
    run = grid_results.get("timeseries")
    at_bus = (run.violation_summary() if run is not None else pd.DataFrame())
    rows = []
    for k, section in sections(scenario):
        series = loads[section.bus].power["facility_kw"]
        peak_kw = float((studies.interval_means_kw(series, freq) if freq else series).max())
        row: dict[str, Any] = {
            "position": k, "bus": section.bus, "name": section.name or f"bus {section.bus}",
            "kind": _kind(section), "seed": section.seed,
            "timezone": section.timezone or str(pd.Timestamp(section.start).tz),
            "requested_mw": peak_kw / 1000.0}
        if hosting is not None:
            a = hosting.allocation.loc[section.bus]
            row.update(allocated_mw=float(a["allocated_mw"]), granted=bool(a["granted"]),
                       hosting_mw=float(a["hosting_mw"]), common_mw=float(a["common_mw"]),
                       binding_element=a["element"], binding_quantity=a["quantity"],
                       binding_value=float(a["value"]), binding_limit=float(a["limit"]),
                       binding_time=a["time"], nose_mw=float(a["nose_mw"]))
        if run is not None:
            mine = at_bus[at_bus["element"] == f"bus {section.bus}"] if len(at_bus) else at_bus
            row["violation_hours_at_bus"] = float(mine["hours"].sum()) if len(mine) else 0.0
            row["worst_vm_pu_at_bus"] = (float(mine["worst"].min()) if len(mine) else None)
            row["min_vm_pu_at_bus"] = float(run.vm_pu[section.bus].min())
        if any(s in grid_results for s in ("flexible_interconnection", "cosimulate")):
            from scenarios import flexible_queue_study  # noqa: PLC0415

            row.update(flexible_queue_study.facility_rows(grid_results, section.bus))
        rows.append(row)
    out: dict[str, Any] = {"facilities": rows, "order": [r["position"] for r in rows],
                           "seeds": _queue(scenario).seeds}
    if hosting is not None:
        out.update(common_scale=hosting.common_scale, common_element=hosting.common_element,
                   common_quantity=hosting.common_quantity, common_time=hosting.common_time)
    if "cosimulate" in grid_results:
        from scenarios import flexible_queue_study  # noqa: PLC0415

        out.update(flexible_queue_study.summary_of(grid_results))
    return out


def digest_lines(queue: Mapping[str, Any]) -> list[str]:
    """The closing summary's queue lines: how much of the queue is granted, who is cut and by
    what, and the common scaling."""
    from scenarios.formatting import number  # noqa: PLC0415

    from scenarios.flexible_queue_study import digest_lines as flexible_lines  # noqa: PLC0415

    rows = queue["facilities"]
    if not rows or "allocated_mw" not in rows[0]:
        return ([f"queue: {len(rows)} facilities (no hosting_capacity study: no allocation)"]
                + flexible_lines(queue))
    requested = sum(r["requested_mw"] for r in rows)
    allocated = sum(r["allocated_mw"] for r in rows)
    cut = [r for r in rows if not r["granted"]]
    line = (f"queue: {len(rows)} facilities, {number(allocated)} of {number(requested)} MW "
            f"allocated in queue order; {len(rows) - len(cut)} granted in full")
    if cut:
        line += "; cut: " + ", ".join(
            f"{r['name']} {number(r['allocated_mw'])}/{number(r['requested_mw'])} MW "
            f"({r['binding_element']} {_word(r['binding_quantity'])})" for r in cut)
    return [line, f"queue common scaling: {number(queue['common_scale'])} x every request "
            f"(binding: {queue['common_element']} {_word(queue['common_quantity'])})"
            ] + flexible_lines(queue)


def _word(quantity: Any) -> str:
    """A binding quantity as a planner says it: ``vm_pu`` -> ``voltage``."""
    return {"vm_pu": "voltage", "loading_percent": "loading",
            "converged": "power-flow convergence"}.get(str(quantity), str(quantity))
