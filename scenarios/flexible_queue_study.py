"""Flexibility of an interconnection queue in a scenario (``[[facility]]`` + ``[grid.flexible]``).

The same ``grid`` functions as one facility's, called with the mapping bus -> facility, in
queue order (:mod:`scenarios.flexible_study` for one facility):

- ``flexible_interconnection``: ``grid.flexible_interconnection(net, {bus: series})``, each
  step's headroom shared in queue order (:mod:`grid.flexible_queue`), on the series the
  other grid studies see (:func:`scenarios.queue_study.load_mapping`) and the
  ``[grid.flexible.background]``;
- ``cosimulate``: ``grid.cosimulate(net, {bus: spec}, seed={bus: seed})`` over the
  ``[grid.flexible]`` window, each facility's spec with its own overrides, utilization and
  ``[facility.flexibility]``, and the seed the queue gives it (:mod:`scenarios.schema_queue`).

What has no queue form is refused before anything runs: ``sizes_mw`` (the queue's grid
function takes the facilities' series as they are), ``size_mw`` and ``curtailment_cost``
(the implied limit of one size, run through one facility's model), and a closed loop of
facilities on different site clocks (``grid.cosimulate`` runs every facility from one start).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from aiload.errors import InputError

__all__ = ["FLEXIBLE_STUDIES", "check_flexible", "cosim_window", "cosim_specs", "run_flexible",
           "facility_rows", "summary_of", "digest_lines"]

FLEXIBLE_STUDIES = ("flexible_interconnection", "cosimulate")


def _label(k: int, section) -> str:
    return f"facility[{k}] (bus {section.bus})"


def check_flexible(scenario, ordered: Sequence[tuple[int, Any]]) -> list[str]:
    """The problems of a queue's ``[grid.flexible]`` studies (texts with the fix; empty: none)."""
    grid = scenario.grid
    wanted = [s for s in FLEXIBLE_STUDIES if grid is not None and s in grid.studies]
    if not wanted:
        return []
    flex, given = grid.flexible, grid.flexible.model_fields_set
    problems = []
    if flex.sizes_mw is not None:
        problems.append(
            f"grid.flexible.sizes_mw = {flex.sizes_mw}: a queue's flexible interconnection "
            "shares each step's headroom among the facilities as they are "
            "(grid.flexible_interconnection takes no sizes_mw with a mapping); remove "
            "sizes_mw, and scale a facility (its utilization or nodes) or sweep it instead")
    if "flexible_interconnection" in wanted:
        if flex.size_mw is not None:
            problems.append(
                f"grid.flexible.size_mw = {flex.size_mw:g}: it picks one facility's size for "
                "the curtailment cost, which has no queue form; remove size_mw")
        if flex.curtailment_cost and "curtailment_cost" in given:
            problems.append(
                "grid.flexible.curtailment_cost = true: grid.curtailment_cost runs one "
                "facility under one size's implied limit and has no queue form; set it to "
                "false or remove it (a queue reports each facility's curtailment from the "
                "shared headroom), or study that facility alone with a [facility] table")
    if "cosimulate" in wanted:
        clocks = {str(section.timezone) for _, section in ordered}
        if len(clocks) > 1:
            problems.append(
                "cosimulate: the queued facilities are on different site clocks ("
                + ", ".join(f"{_label(k, s)} {s.timezone}" for k, s in ordered)
                + "); grid.cosimulate runs every facility from one start, so their site "
                "hours would not be their own. Give every facility the same timezone (or none) "
                "for the closed loop, or remove 'cosimulate'")
        try:
            cosim_period(flex, ordered)
        except InputError as exc:
            problems.append(str(exc))
        from aiload.facility.flexout import check_flexibility

        for (k, section), spec in zip(ordered, cosim_specs(ordered)[0].values()):
            if getattr(section, "flexibility", None) is not None:
                try:  # every facility's levers, before anything runs
                    check_flexibility(spec)
                except InputError as exc:
                    problems.append(f"{_label(k, section)}: {exc}")
        start, end = cosim_window(flex, ordered)
        if end <= start:
            problems.append(f"grid.flexible: cosim_end = {end} is not after cosim_start = "
                            f"{start}; expected a later cosim_end (or leave it out: 7 days).")
    return problems


def cosim_period(flex, ordered: Sequence[tuple[int, Any]]) -> str:
    """The control period of the closed loop: the one of every facility
    (:func:`scenarios.flexible_study.control_period_of`); InputError when they differ."""
    from scenarios.flexible_study import control_period_of

    periods = {k: control_period_of(flex, section) for k, section in ordered}
    if len(set(periods.values())) > 1:
        raise InputError(
            "cosimulate: the queued facilities' control periods differ ("
            + ", ".join(f"facility[{k}] {p}" for k, p in periods.items())
            + "); grid.cosimulate closes every loop at one period: set control_period in "
            "[grid.flexible], or the same control_period_s in every [facility.flexibility]")
    return next(iter(periods.values()))


def cosim_window(flex, ordered: Sequence[tuple[int, Any]]) -> tuple[pd.Timestamp, pd.Timestamp]:
    """``(start, end)`` of the closed loop: ``[grid.flexible]`` cosim_start (default: the
    queue's start) to cosim_end (default: 7 days later), on the facilities' site clock."""
    first = ordered[0][1]
    start = pd.Timestamp(flex.cosim_start or first.start)
    end = pd.Timestamp(flex.cosim_end) if flex.cosim_end else start + pd.Timedelta("7D")
    if first.timezone is not None:  # the site clock, as queue_study.run_one runs them
        start, end = start.tz_convert(first.timezone), end.tz_convert(first.timezone)
    return start, end


def cosim_specs(ordered: Sequence[tuple[int, Any]]) -> tuple[dict[int, Any], dict[int, int]]:
    """``({bus: FacilitySpec}, {bus: seed})`` in queue order: each facility's spec with its
    overrides, utilization and flexibility applied (as ``aiload.facility`` applies them)."""
    from aiload.facility.presets import resolve_spec
    from scenarios.flexible_study import facility_call

    specs, seeds = {}, {}
    for _, section in ordered:
        spec, kwargs = facility_call(section)
        flexibility = kwargs.pop("flexibility", None)
        spec = resolve_spec(spec, kwargs)
        if flexibility is not None:
            spec = dataclasses.replace(spec, flexibility=flexibility)
        specs[section.bus], seeds[section.bus] = spec, int(section.seed)
    return specs, seeds


def run_flexible(plan, mapping: Mapping[int, pd.Series], ordered: Sequence[tuple[int, Any]],
                 stage: Callable[[str], object] | None = None) -> dict[str, Any]:
    """The queue's ``[grid.flexible]`` studies that ``plan.section.studies`` names -> results."""
    from scenarios.flexible_study import background_of

    grid, section = plan.module, plan.section
    flex, stage = section.flexible, stage or (lambda text: None)
    out: dict[str, Any] = {}
    if "flexible_interconnection" in section.studies:
        index = next(iter(mapping.values())).index
        stage(f"flexible interconnection of the queue ({len(mapping)} facilities, "
              f"{len(index):,} steps: headroom shared in queue order)")
        out["flexible_interconnection"] = grid.flexible_interconnection(
            plan.net, dict(mapping), limits=plan.limits,
            background=background_of(section, index), power_factor=section.power_factor,
            tolerance_mw=flex.tolerance_mw, enforce_q_lims=section.enforce_q_lims)
    if "cosimulate" in section.studies:
        if not ordered:
            raise InputError("cosimulate of a queue runs each facility's model again: call "
                             "run_grid(..., ordered=queue_study.sections(scenario)).")
        start, end = cosim_window(flex, ordered)
        specs, seeds = cosim_specs(ordered)
        index = pd.date_range(start, end, freq=flex.cosim_freq, inclusive="left")
        stage(f"closed loop of the queue ({len(specs)} facilities in queue order, "
              f"{len(index):,} steps of {flex.cosim_freq})")
        out["cosimulate"] = grid.cosimulate(
            plan.net, specs, start=start, end=end, freq=flex.cosim_freq,
            control_period=cosim_period(flex, ordered), controller=flex.controller,
            limits=plan.limits, power_factor=section.power_factor,
            background=background_of(section, index), seed=seeds, branches=flex.branches,
            enforce_q_lims=section.enforce_q_lims)
    return out


def facility_rows(grid_results: Mapping[str, Any], bus: int) -> dict[str, Any]:
    """One facility's fields of ``summary.json``'s queue row from the flexible studies."""
    row: dict[str, Any] = {}
    flex = grid_results.get("flexible_interconnection")
    if flex is not None:
        t = flex.table.loc[bus]
        row["flexible"] = {
            "firm_mw": float(t["firm_mw"]), "energy_mwh": float(t["energy_mwh"]),
            "curtailed_mwh": float(t["curtailed_mwh"]),
            "curtailed_share_percent": float(t["curtailed_share_percent"]),
            "curtailed_h": float(t["curtailed_h"]), "events": int(t["events"]),
            "longest_event_h": float(t["longest_event_h"]),
            "binding_element": str(t["binding_element"])}
    co = grid_results.get("cosimulate")
    if co is not None:
        loop = co.facilities[bus]
        power = loop.load.power
        hours = pd.Timedelta(power.index.freq).total_seconds() / 3600.0
        curtailed = power["curtailed_kw"] if "curtailed_kw" in power else power["facility_kw"] * 0
        row["cosimulate"] = {
            "seed": int(co.seeds[bus]),
            "energy_mwh": float(power["facility_kw"].sum() * hours / 1e3),
            "curtailed_mwh": float(curtailed.sum() * hours / 1e3),
            "events": 0 if loop.events is None else int(len(loop.events)),
            "violation_steps": int(loop.violation_steps)}
    return row


def summary_of(grid_results: Mapping[str, Any]) -> dict[str, Any]:
    """The queue-wide figures of the flexible studies (for ``summary.json``'s queue)."""
    out: dict[str, Any] = {}
    co = grid_results.get("cosimulate")
    if co is not None:
        index = co.grid.vm_pu.index
        out["cosimulate"] = {
            "violation_steps": int(co.violation_steps),
            "open_loop_violation_steps": int(co.open_loop_violation_steps),
            "steps": int(len(index)), "start": index[0].isoformat(),
            "end": (index[-1] + index.freq).isoformat() if index.freq else None}
    return out


def digest_lines(queue: Mapping[str, Any]) -> list[str]:
    """``aiload run``'s closing lines for a queue's flexible studies."""
    from scenarios.formatting import number

    rows, lines = queue["facilities"], []
    if rows and "flexible" in rows[0]:
        parts = []
        for r in rows:
            f = r["flexible"]
            parts.append(f"{r['name']} firm {number(f['firm_mw'])} MW, curtailed "
                         f"{number(f['curtailed_share_percent'])} % in "
                         f"{number(f['curtailed_h'])} h"
                         + (f" ({f['binding_element']})" if f["binding_element"] else ""))
        lines.append("queue flexible interconnection (headroom shared in queue order): "
                     + "; ".join(parts))
    co = queue.get("cosimulate")
    if co is not None:
        lines.append(f"queue closed loop: {co['violation_steps']:,} of {co['steps']:,} steps with "
                     f"a violation (open loop {co['open_loop_violation_steps']:,})")
    return lines
