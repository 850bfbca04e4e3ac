"""Run a scenario: facility -> metrics -> grid studies -> sizing -> files and report.

The output folder is checked before anything is computed (:class:`aiload.outputs.OutputDir`:
never the current folder, never a folder holding the scenario file, never a non-empty folder
that is not an earlier aiload output unless ``overwrite``). Everything is written into a
staging folder inside it and moved into place at the end, replacing only the files an earlier
aiload run wrote there, so a failed or interrupted run leaves no half-written output behind.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import aiload
from aiload.errors import InputError
from aiload.metrics import summary as metrics_summary
from aiload.outputs import OutputDir, unmarked_output
from aiload.timeseries import energy_kwh
from scenarios import figures, report, report_parts, studies
from scenarios.jsonsafe import jsonable
from scenarios.loader import load_scenario, resolve_source
from scenarios.schema import Scenario

__all__ = ["RunResult", "run_scenario", "jsonable", "write_frame", "digest"]


@dataclass(frozen=True)
class RunResult:
    """What ``aiload run`` produced.

    Attributes
    ----------
    out_dir : pathlib.Path
        The output folder.
    scenario : Scenario
        The validated scenario (overrides applied).
    files : tuple of str
        Names of the files written in ``out_dir``.
    summary : dict
        The content of ``summary.json``.
    facility : aiload.FacilityLoad
        The facility model's result.
    grid : dict or None
        Grid study results by study name (``None`` when no ``[grid]``).
    sizing : object or None
        The ``microgrid.Sizing`` (``None`` when no ``[microgrid]``).
    skipped : dict
        Sections that could not run here, with the reason.
    """

    out_dir: Path
    scenario: Scenario
    files: tuple[str, ...]
    summary: dict
    facility: Any
    grid: dict | None = None
    sizing: Any = None
    skipped: dict = field(default_factory=dict)


def scalars_of(obj: Any) -> dict[str, Any]:
    """The non-tabular fields of a result dataclass (tables are written as files)."""
    if not dataclasses.is_dataclass(obj):
        return {}
    out = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, (pd.Series, pd.DataFrame)) or value is None:
            continue
        if isinstance(value, Mapping) and any(dataclasses.is_dataclass(v) for v in
                                              value.values()):
            continue  # results per facility (a queue's loops): summarised by their study
        if isinstance(value, (int, float, str, bool, np.generic, Mapping, list, tuple)):
            out[f.name] = value
    return out


def tables_of(obj: Any) -> dict[str, pd.DataFrame | pd.Series]:
    """The Series/DataFrame fields of a result (dataclass or DataFrame itself); a field
    without columns (an element type the network does not have, e.g. no 3-winding
    transformers) is left out rather than written as an empty file."""
    if isinstance(obj, (pd.Series, pd.DataFrame)):
        return {"": obj}
    if not dataclasses.is_dataclass(obj):
        return {}
    return {
        f.name: value
        for f in dataclasses.fields(obj)
        if isinstance(value := getattr(obj, f.name), (pd.Series, pd.DataFrame))
        and not (isinstance(value, pd.DataFrame) and value.shape[1] == 0)
    }


def write_frame(data: pd.Series | pd.DataFrame, path: Path) -> None:
    """Write a table as Parquet (columns made strings, as Parquet requires)."""
    frame = data.to_frame() if isinstance(data, pd.Series) else data.copy()
    frame.columns = [str(c) for c in frame.columns]
    frame.to_parquet(path)


def _stage(name: str, progress: bool) -> float:
    if progress:
        print(f"aiload run: {name} ...", file=sys.stderr, flush=True)
    return time.perf_counter()


_RUN_FILE = re.compile(r"^(facility(\.jobs|\.flexibility|_bands|_queue)?|grid_\w+|microgrid_\w+)"
                       r"\.parquet$|^(metrics\.csv|summary\.json|report\.html)$")


def _earlier_run(folder: Path) -> list[str] | None:
    """The files of an ``aiload run`` output written before aiload marked its folders."""
    return unmarked_output(folder, lambda name: bool(_RUN_FILE.match(name)), "summary.json")


def _steps(power: pd.DataFrame, freq: str) -> str:
    """How many steps the series has at ``freq`` (for a progress line)."""
    try:
        return f"{int(len(power) * power.index.freq / pd.Timedelta(freq)):,}"
    except (TypeError, ValueError, ZeroDivisionError):
        return "?"


def _on_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


def _facility_summary(load: Any) -> dict[str, Any]:
    table = metrics_summary(load.power["facility_kw"])
    return {"metrics": table.to_dict(orient="records"), "table": table}


def _metric(summary: Mapping[str, Any], metric: str) -> float:
    for row in summary.get("facility", {}).get("metrics", []):
        if row.get("metric") == metric and not row.get("window") and row.get("value") is not None:
            return float(row["value"])
    return float("nan")


def _power(kw: float) -> str:
    """A facility power [kW] in MW from 1 MW up, else in kW."""
    from scenarios.formatting import number  # noqa: PLC0415

    return f"{number(kw / 1000)} MW" if abs(kw) >= 1000 else f"{number(kw)} kW"


def _violation_line(name: str, record: Mapping[str, Any]) -> str:
    from scenarios.formatting import number  # noqa: PLC0415

    lim = record["limits"]
    band = (f"{lim['vm_min_pu']:g}-{lim['vm_max_pu']:g} pu, <= "
            f"{lim['loading_max_percent']:g} %")
    if not record["elements"] and not record["by_element"]:
        return f"{name}: no violations ({band}, {record['steps']:,} steps)"
    worst = []
    rows = record["by_element"]
    for quantity, pick in (("undervoltage", min), ("overvoltage", max), ("overloading", max)):
        found = [r for r in rows if r["quantity"] == quantity and r["worst"] is not None]
        if found:
            r = pick(found, key=lambda r: r["worst"])
            worst.append(f"{quantity} {r['element']} {number(r['worst'])} {r['unit']} at "
                         f"{str(r['worst_time'])[:16].replace('T', ' ')}")
    failed = [r for r in rows if r["quantity"] == "not converged"]
    if failed:
        worst.append(f"no power-flow solution in {failed[0]['steps']:,} steps")
    n = record["elements"]
    return (f"{name}: {n:,} element{'' if n == 1 else 's'} outside the limits ({band}), "
            f"{number(record['hours_with_any'])} h with a violation; worst: "
            + "; ".join(worst) + f" ({record['time_zone']})")


_STUDY_NAMES = {"timeseries": "time-series power flow",
                "curtailment_cost": "curtailed facility (cross-check)"}
_RUN_NAMES = {("cosimulate", ""): "closed loop",
              ("cosimulate", "open loop"): "the same window without the loop"}
_QUANTITY_NAMES = {"vm_pu": "voltage", "loading_percent": "loading",
                   "converged": "power-flow convergence"}


def digest(summary: Mapping[str, Any]) -> list[str]:
    """The few lines ``aiload run`` ends with: peak and energy of the facility, hosting
    capacity, violations per grid study, the sized microgrid and its cost (from
    ``summary.json``)."""
    from scenarios.formatting import number  # noqa: PLC0415

    peak, mean = _metric(summary, "max_kw"), _metric(summary, "mean_kw")
    energy = summary.get("facility", {}).get("energy_kwh")
    lines = [f"facility: peak {_power(peak)}, mean {_power(mean)}"
             + (f", energy {number(energy / 1000)} MWh" if energy is not None else "")]
    for study, values in (summary.get("grid") or {}).items():
        name = _STUDY_NAMES.get(study, study.replace("_", " "))
        if study == "hosting_capacity" and values.get("p_mw") is not None:
            lines.append(f"hosting capacity at bus {values.get('bus')}: "
                         f"{number(values['p_mw'])} MW (binding: {values.get('element')} "
                         f"{_QUANTITY_NAMES.get(values.get('quantity'), values.get('quantity'))}"
                         "); facility peak "
                         f"{number(peak / 1000)} MW")
        if study == "flexible_interconnection" and values.get("firm_mw") is not None:
            lines.append(f"flexible interconnection: firm {number(values['firm_mw'])} MW")
        if study == "dynamics":  # [grid.dynamics]: nadir, MW lost, verdict
            from scenarios.dynamics_study import digest_line  # noqa: PLC0415

            lines.append(digest_line(values))
        for key, record in values.items():
            if key.endswith("violations") and isinstance(record, Mapping):
                label = key[:-len("violations")].rstrip("_").replace("_", " ")
                run = _RUN_NAMES.get((study, label), f"{name}{f' ({label})' if label else ''}")
                lines.append(_violation_line(run, record))
    mg = summary.get("microgrid")
    if mg:
        lines.append(
            f"microgrid ({mg.get('status', '?')}): PV {number(mg.get('pv_kwp', 0.0))} kWp, "
            f"battery {number(mg.get('battery_kwh', 0.0))} kWh / "
            f"{number(mg.get('battery_kw', 0.0))} kW, generator "
            f"{number(mg.get('generator_kw', 0.0))} kW; cost "
            f"{number(mg.get('total_annual_cost_usd', float('nan')))} USD/yr, LCOE "
            f"{number(mg.get('lcoe_usd_per_mwh', float('nan')))} USD/MWh")
    stab = summary.get("stabilise")
    if stab:  # [stabilise]: the cheapest option that meets every limit
        best = next((r for r in stab["options"] if r["option"] == stab["cheapest"]), None)
        lines.append("stabilisation: " + (
            f"cheapest that meets every limit {best['option']}, {number(best['kw'])} kW / "
            f"{number(best['kwh'])} kWh, {number(best['cost_usd_per_year'])} USD/yr"
            if best else "no option meets every limit"))
    if summary.get("queue"):  # [[facility]]: who is granted, who is cut and by what
        from scenarios.queue_study import digest_lines  # noqa: PLC0415

        lines.extend(digest_lines(summary["queue"]))
    for section, reason in (summary.get("skipped") or {}).items():
        lines.append(f"{section}: skipped")
    timings = summary.get("timings") or {}
    if timings:
        lines.append("time: " + ", ".join(f"{k.removesuffix('_s').replace('_', ' ')} "
                                          f"{v:,.1f} s" for k, v in timings.items()))
    return lines


def _violations_of(result: Any, tz: Any) -> dict[str, Any]:
    """``violations`` (and ``open_loop_violations``, ...) of a grid study's power flows:
    hours outside the limits per bus and branch, worst value and when (site time)."""
    return {("violations" if label == "" else f"{label.replace(' ', '_')}_violations"):
            report_parts.violation_record(run, tz)
            for label, run in report_parts.grid_runs(result).items()}


def run_scenario(
    source: str | Path | Scenario,
    out_dir: str | Path,
    *,
    overrides: Mapping[str, Any] | None = None,
    progress: bool = True,
    overwrite: bool = False,
    create_parents: bool = False,
    workers: int = 0,
    scheduler: str | None = None,
) -> RunResult:
    """Run every section of a scenario and write its outputs.

    Parameters
    ----------
    source : str, pathlib.Path or Scenario
        A scenario file, the name of a bundled scenario, or a validated :class:`Scenario`.
    out_dir : str or pathlib.Path
        Output folder: new, empty, or an earlier ``aiload run`` output (recognised by its
        marker file ``.aiload-output.json``), whose files are replaced when the run succeeds
        and untouched when it fails. Its parent folder must exist.
    overrides : mapping, optional
        Dotted field -> value, applied before validation (``--set``).
    progress : bool
        Print stage lines and progress bars on stderr.
    overwrite : bool
        Also write into a non-empty folder that is not an aiload output; only files of the
        names this run writes are replaced there, nothing else is touched (``--overwrite``).
    create_parents : bool
        Create a missing parent folder (the command line's default ``aiload-out/NAME``).
    workers, scheduler : int, str, optional
        An interconnection queue (``[[facility]]`` tables): generate the facilities on
        Dask, ``workers`` local processes or the scheduler at an address; default serial.

    Returns
    -------
    RunResult
        The results, also written to ``out_dir``: ``facility.parquet``, ``metrics.csv``,
        ``grid_*.parquet``/``.csv``, ``microgrid_*.parquet``, ``summary.json``, ``report.html``;
        ``facility_bands.parquet`` with replicates, ``facility.jobs.parquet`` with
        ``[outputs] jobs = true``.
    """
    if isinstance(source, Scenario):
        scenario, source_path = source, None
    else:
        source_path = resolve_source(source)
        scenario = load_scenario(source_path, overrides=overrides)
    output = OutputDir(out_dir, kind="run", overwrite=overwrite, create_parents=create_parents,
                       protect=[source_path] if source_path is not None else [],
                       recognise=_earlier_run, owns=lambda name: bool(_RUN_FILE.match(name)))
    out_dir = output.path

    # build every configuration object before computing anything
    skipped: dict[str, str] = {}
    problems: list[InputError] = []  # every section is checked; all problems said at once

    def check(step, *args):
        try:
            return step(*args)
        except InputError as exc:
            problems.append(exc)
        return None

    queued = scenario.queued  # [[facility]] tables: scenarios.queue_study
    view = scenario
    if queued:
        from scenarios import queue_study  # noqa: PLC0415

        view = queue_study.lead_view(scenario)  # the queue's one time axis
        check(queue_study.check_queue, scenario)
    else:
        check(studies.check_facility, scenario.facility)
    check(studies.check_steps, view)
    grid_plan = mg_plan = None
    if scenario.grid is not None:
        try:
            grid_plan = check(studies.prepare_grid, scenario.grid)
            if queued and grid_plan is not None:
                check(queue_study.check_buses, grid_plan, scenario)
        except studies.StageSkipped as exc:
            skipped["grid"] = str(exc)
    if scenario.microgrid is not None:
        try:
            mg_plan = check(studies.prepare_microgrid, scenario.microgrid, scenario.site)
        except studies.StageSkipped as exc:
            skipped["microgrid"] = str(exc)
    stab_plan = None
    if scenario.stabilise is not None:  # [stabilise]: scenarios.stabilise_study
        from scenarios.stabilise_study import prepare_stabilise  # noqa: PLC0415

        stab_plan = check(prepare_stabilise, scenario)
    if len(problems) == 1:
        raise problems[0]
    if problems:
        raise InputError(f"{len(problems)} problems in the scenario"
                         + (f" {str(source_path)!r}" if source_path else "") + ":\n"
                         + "\n".join("  " + str(p).replace("\n", "\n    ") for p in problems))

    timings: dict[str, float] = {}
    t0 = _stage("facility", progress)
    # a bar only on a terminal: in a log file its carriage returns pile up into one line
    loads = None
    if queued:
        loads = queue_study.run_facilities(scenario, workers=workers, scheduler=scheduler,
                                           stage=lambda name: _stage(name, progress))
        load = queue_study.total_load(loads)
    else:
        load = studies.run_facility(scenario.facility, progress=progress and _on_terminal())
    timings["facility_s"] = time.perf_counter() - t0
    t0 = _stage("metrics", progress)
    fsum = _facility_summary(load)
    timings["metrics_s"] = time.perf_counter() - t0
    grid_results = sizing = pv = None
    if grid_plan is not None:
        t0 = time.perf_counter()  # a line per study follows
        if queued:
            grid_results = queue_study.run_grid(
                grid_plan, loads, scenario.queue or queue_study.QueueSection(),
                stage=lambda name: _stage(f"grid studies: {name}", progress),
                ordered=queue_study.sections(scenario))
        else:
            grid_results = studies.run_grid(
                grid_plan, load.power["facility_kw"],
                stage=lambda name: _stage(f"grid studies: {name}", progress),
                facility=scenario.facility, progress=progress and _on_terminal())
        timings["grid_s"] = time.perf_counter() - t0
    if mg_plan is not None:
        t0 = _stage(f"microgrid sizing, {_steps(load.power, scenario.microgrid.freq)} steps",
                    progress)
        sizing, pv = studies.run_microgrid(
            mg_plan, load.power["facility_kw"],
            stage=lambda name: _stage(f"microgrid sizing: {name}", progress))
        timings["microgrid_s"] = time.perf_counter() - t0
    stabilisation = None
    if stab_plan is not None:
        from scenarios import stabilise_study  # noqa: PLC0415

        t0 = _stage(f"stabilisation at the POI, {len(load.power):,} steps", progress)
        stabilisation = stabilise_study.run_stabilise(stab_plan, load.power["facility_kw"])
        timings["stabilise_s"] = time.perf_counter() - t0

    summary: dict[str, Any] = {
        "scenario": scenario.name,
        "source": str(source_path) if source_path else None,
        "aiload_version": aiload.__version__,
        "seed": (scenario.queue or queue_study.QueueSection()).seed if queued
        else scenario.facility.seed,
        "inputs": scenario.model_dump(mode="json"),
        "facility": {
            "energy_kwh": energy_kwh(load.power["facility_kw"]),
            "metrics": fsum["metrics"],
            "meta": getattr(load, "meta", {}),
        },
        "skipped": skipped,
    }
    tz = figures.site_timezone(scenario.site)
    if grid_results is not None:
        summary["grid"] = {k: {**scalars_of(v), **_violations_of(v, tz)}
                           for k, v in grid_results.items() if k != "load_mw"}
    if queued:
        summary["queue"] = queue_study.summary_of(scenario, loads, grid_results)
    if sizing is not None:
        summary["microgrid"] = scalars_of(sizing)
    if stabilisation is not None:
        summary["stabilise"] = stabilise_study.summary_of(stab_plan, stabilisation)

    with output:
        tmp = output.staging
        t0 = _stage("writing outputs", progress)
        if scenario.outputs.facility_parquet:
            load.to_parquet(tmp / "facility.parquet", jobs=scenario.outputs.jobs)
        if queued and scenario.outputs.facility_parquet:  # one facility_kw column per bus
            write_frame(queue_study.series_kw(loads), tmp / "facility_queue.parquet")
        if getattr(load, "bands", None) is not None:
            load.bands.add_suffix("_kw").to_parquet(tmp / "facility_bands.parquet")
        fsum["table"].to_csv(tmp / "metrics.csv", index=False)
        if grid_results is not None:
            for study, result in grid_results.items():
                for name, table in tables_of(result).items():
                    stem = f"grid_{study}" + (f"_{name}" if name else "")
                    write_frame(table, tmp / f"{stem}.parquet")
        if sizing is not None:
            for name, table in tables_of(sizing).items():
                write_frame(table, tmp / f"microgrid_{name}.parquet")
        if stabilisation is not None:
            write_frame(stabilise_study.series_of(stabilisation),
                        tmp / "microgrid_stabilise_series.parquet")
        summary["timings"] = timings
        if scenario.outputs.report:
            t0 = _stage("report", progress)
            html = report.render(view, summary, load, fsum["table"], grid_results, sizing, pv,
                                 stabilisation=stabilisation)
            (tmp / "report.html").write_text(html, encoding="utf-8")
            timings["report_s"] = time.perf_counter() - t0
        (tmp / "summary.json").write_text(
            json.dumps(jsonable(summary), indent=2, allow_nan=False), encoding="utf-8"
        )
        files = tuple(output.commit())
    if progress:
        print(f"aiload run: wrote {len(files)} files to {out_dir}", file=sys.stderr, flush=True)
    return RunResult(out_dir, scenario, files, json.loads((out_dir / "summary.json").read_text()),
                     load, grid_results, sizing, skipped)

