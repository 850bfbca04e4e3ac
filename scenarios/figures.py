"""The report's figures, each a new :class:`matplotlib.figure.Figure` (no pyplot state).

The first week of the facility series by part and the facility load beside the voltage at its
bus are drawn here; everything else comes from the packages' own plot functions
(``aiload.metrics``, ``grid.plots``, ``microgrid.plots``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from aiload.errors import InputError
from aiload.metrics import plot_calendar_bands, plot_load_duration, plot_ramp_histogram
from aiload.metrics.plots import date_axis

__all__ = ["facility_figures", "grid_figures", "grid_tables", "contingency_table",
           "short_circuit_table", "hosting_table", "sizing_figures"]

_PARTS = (("it_kw", "IT", "#3e7cb1"), ("losses_kw", "distribution losses", "#f0b429"),
          ("cooling_kw", "cooling", "#81b29a"))


#: the bundled weather year (pvlib's 723170TYA.CSV) is Greensboro, North Carolina
BUNDLED_WEATHER_TZ = "America/New_York"


def site_timezone(site: Any) -> Any:
    """The site's clock for time-of-day charts: ``site.timezone`` when given; for the bundled
    Greensboro weather ``America/New_York``; for another TMY3 file its standard-time UTC
    offset (TMY files carry no daylight saving time); UTC when none of these is known."""
    import datetime as dt

    zone = getattr(site, "timezone", None)
    if zone:
        return zone
    weather = getattr(site, "weather", None)
    if weather is None:
        return BUNDLED_WEATHER_TZ
    try:
        import pvlib  # noqa: PLC0415

        _, meta = pvlib.iotools.read_tmy3(weather, map_variables=True)
        return dt.timezone(dt.timedelta(hours=float(meta["TZ"])))
    except Exception:  # an unreadable file is reported by the study that reads it
        return "UTC"


def _first_week(frame: pd.DataFrame | pd.Series):
    end = frame.index[0] + pd.Timedelta(days=7)
    return frame[frame.index < end]


def _axis_bottom(low: float, top: float) -> float:
    """Where a power axis should start so that the variation between ``low`` and ``top``
    fills most of it: half the span below ``low``, rounded down to a readable step (0 when
    that would be near 0 anyway)."""
    span = max(top - low, 0.02 * abs(top), 1e-9)
    bottom = low - 0.5 * span
    if bottom <= 0.25 * top:
        return 0.0
    step = 10 ** np.floor(np.log10(span)) / 2
    return float(np.floor(bottom / step) * step)


def _step_s(series: pd.Series) -> float:
    """The series' step [s] (its freq, else its first interval; 3600 for one value)."""
    if series.index.freq is not None:
        return pd.Timedelta(series.index.freq).total_seconds()
    if len(series) > 1:
        return (series.index[1] - series.index[0]).total_seconds()
    return 3600.0


def facility_figures(load: Any, tz: str | None = None) -> list[tuple[str, Figure]]:
    """Stacked parts of the first week [MW], then the metrics package's load-duration curve,
    calendar bands and ramp histogram of ``facility_kw``.

    ``tz``: the site's time zone; the week's dates and the hour-of-day and day-of-week bands
    are on its clock (the data stay in UTC). The stacked week starts its power axis near the
    week's lowest IT power (said on the axis), so the variation a planner cares about shows.
    """
    power = load.power
    week = _first_week(power)
    if tz is not None:
        week = week.tz_convert(tz)
    fig = Figure(figsize=(10, 3.8), layout="constrained")
    ax = fig.add_subplot()
    parts = [(c, label, colour) for c, label, colour in _PARTS if c in week]
    t = week.index.tz_localize(None)
    ax.stackplot(t, *[week[c].to_numpy() / 1000 for c, _, _ in parts],
                 labels=[label for _, label, _ in parts], colors=[c for _, _, c in parts],
                 step="post", alpha=0.9)
    ax.plot(t, week["facility_kw"] / 1000, color="#1f2933", lw=0.6, label="facility",
            drawstyle="steps-post")
    low_mw = float(week[parts[0][0]].min()) / 1000 if parts else 0.0
    top_mw = float(week["facility_kw"].max()) / 1000
    bottom = _axis_bottom(low_mw, top_mw)
    ax.set_ylim(bottom, top_mw + 0.05 * max(top_mw - bottom, 1e-9))
    ax.set_ylabel("power [MW]" if bottom == 0 else f"power [MW] (axis from {bottom:g})")
    date_axis(ax)
    ax.set_xlabel(f"time ({week.index.tz})")
    # a run shorter than a week is shown whole, and said so
    span = "first week" if len(week) < len(power) else "the whole run"
    ax.set_title(f"Facility power, {span} (interval means)")
    fig.legend(loc="outside right upper", fontsize=8, frameon=False)
    ax.grid(alpha=0.3)
    figs = [(f"Facility power by part over {span.replace('first', 'the first')} [MW]", fig)]

    facility_kw = power["facility_kw"]
    optional = [
        ("Load-duration curve of the facility power", lambda: plot_load_duration(facility_kw)),
        ("Ramp rates of the facility power per window", lambda: plot_ramp_histogram(facility_kw)),
    ]
    if len(facility_kw) * _step_s(facility_kw) >= 2 * 86400:
        # hour-of-day and day-of-week bands say nothing about a run of hours: one line
        optional.insert(1, (
            "Hour-of-day and day-of-week percentile bands of the facility power (site time)",
            lambda: plot_calendar_bands(facility_kw, tz=tz)))
    for title, make in optional:
        try:
            figs.append((title, make()))
        except InputError:
            continue  # a figure the horizon or resolution cannot support is left out
    return figs


#: the N-1 table's columns, in reading order, with short headers and their units
_N1_COLUMNS = {
    "element": "outage",
    "where": "joins",
    "min_vm_pu": "min V [pu]",
    "max_vm_pu": "max V [pu]",
    "max_line_loading_percent": "max line loading [%]",
    "max_trafo_loading_percent": "max trafo loading [%]",
    "facility_islanded": "facility islanded",
    "unserved_mw": "unserved [MW]",
    "islanded_buses": "islanded buses",
    "facility_unserved_mw": "facility unserved [MW]",
    "collapse_margin_mw": "margin to collapse [MW]",
    "low_margin": "low margin",
    "scr_min": "SCR min",
    "worst_time": "worst hour",
}


def _is_intact(element: Any) -> bool:
    return str(element).strip().lower() in {"none", "intact", "base", "base case", "n-0"}


def contingency_table(result: pd.DataFrame, tz: str | None = None, rows: int = 20,
                      short_circuit: Any = None) -> tuple[str, pd.DataFrame]:
    """The N-1 outages with the lowest voltage as a compact table, and its caption.

    The intact case is shown first when the result has one and is not counted as an outage;
    outages without a power-flow solution (no lowest voltage) rank first, then the lowest
    voltage. Columns that say nothing here (no outage islands anything, no margin computed)
    are left out; the worst hour is on the site's clock. ``short_circuit`` (a
    ``grid.ShortCircuitStrength`` of the same bus) adds each case's minimum-case SCR.
    """
    intact = result[result["element"].map(_is_intact)] if "element" in result else result.iloc[:0]
    outages = result.drop(intact.index)
    if "min_vm_pu" in outages:
        worst = outages.sort_values("min_vm_pu", na_position="first", kind="stable").head(rows)
    else:
        worst = outages.head(rows)
    table = pd.concat([intact, worst])
    if short_circuit is not None and "element" in table:
        scr = dict(zip(short_circuit.outages["element"], short_circuit.outages["scr_min"],
                       strict=True))
        table = table.assign(scr_min=[short_circuit.scr_min if _is_intact(e) else scr.get(e)
                                      for e in table["element"]])
    cols = [c for c in _N1_COLUMNS if c in table]
    for quiet in ("facility_islanded", "islanded_buses", "unserved_mw", "facility_unserved_mw"):
        if quiet in cols and not result[quiet].astype(float).fillna(0).any():
            cols.remove(quiet)
    for unknown in ("collapse_margin_mw", "low_margin", "scr_min"):
        if unknown in cols and table[unknown].isna().all():
            cols.remove(unknown)
    table = table[cols].copy()
    if "worst_time" in table:
        times = pd.to_datetime(table["worst_time"])
        if tz is not None and times.dt.tz is not None:
            times = times.dt.tz_convert(tz)
        table["worst_time"] = times.dt.strftime("%Y-%m-%d %H:%M")
    if "element" in table:
        table["element"] = [("intact network" if _is_intact(e) else e) for e in table["element"]]
    table = table.rename(columns=_N1_COLUMNS)
    zone = f", worst hour in {tz}" if tz and "worst hour" in table else ""
    notes = ""
    if "margin to collapse [MW]" in table:
        notes += ("; margin to collapse: the P-V nose less the peak, n/a where not computed, "
                  "negative beyond collapse")
    if "SCR min" in table:
        notes += "; SCR min: short-circuit ratio, IEC 60909 minimum case"
    caption = (f"the {len(worst)} outages with the lowest voltage (no solution first), of "
               f"{len(outages)} (the intact network first; all in grid_contingency.parquet"
               f"{zone}{notes})")
    return caption, table


def short_circuit_table(result: Any, rows: int = 5) -> tuple[str, pd.DataFrame]:
    """Sk'' and SCR at the point of interconnection: the intact network, then the ``rows``
    weakest N-1 outages (lowest minimum-case SCR), and the table's caption."""
    intact = pd.DataFrame([{"element": "intact network", "skss_max_mva": result.skss_max_mva,
                            "skss_min_mva": result.skss_min_mva, "scr_max": result.scr_max,
                            "scr_min": result.scr_min, "strength": result.strength}])
    outages = result.outages
    weakest = outages.head(rows)[list(intact.columns)] if len(outages) else outages
    table = pd.concat([intact, weakest], ignore_index=True) if len(weakest) else intact
    table = table.rename(columns={"element": "case", "skss_max_mva": "Sk'' max [MVA]",
                                  "skss_min_mva": "Sk'' min [MVA]", "scr_max": "SCR max",
                                  "scr_min": "SCR min"})
    of = (f"the intact network and the {len(weakest)} weakest of {len(outages)} N-1 outages"
          if len(outages) else "the intact network")
    caption = (f"short-circuit ratio at bus {result.bus}, SCR = Sk'' / {result.facility_mw:,.1f} MW "
               f"(IEC 60909, 3-phase fault), {of}; weak below {result.scr_weak:g}, very weak "
               f"below {result.scr_very_weak:g}"
               + ("; every outage in grid_short_circuit_outages.parquet" if len(outages) else "")
               + (f"; {len(result.assumed)} kinds of short-circuit data assumed (listed above)"
                  if result.assumed else ""))
    return caption, table


def hosting_table(result: Any) -> tuple[str, pd.DataFrame]:
    """The hosting capacity with its binding limit and, beside it, the voltage-collapse
    margin (the P-V nose less the hosting capacity) [MW]."""
    row = {"hosting capacity [MW]": result.p_mw, "binding element": result.element,
           "quantity": result.quantity, "value": result.value, "limit": result.limit}
    if getattr(result, "nose_p_mw", None) is not None:
        row["P-V nose [MW]"] = result.nose_p_mw
        row["margin to collapse [MW]"] = result.collapse_margin_mw
    caption = (f"bus {result.bus}: the limit that binds first and the distance from the hosting "
               "capacity to voltage collapse" + (" (generator Q limits enforced)"
                                                 if getattr(result, "enforce_q_lims", False)
                                                 else " (generator Q limits not enforced)"))
    return caption, pd.DataFrame([row])


def _header(column: Any) -> str:
    """``loading_pre_percent`` -> ``loading pre [%]``."""
    from scenarios.formatting import split_unit  # noqa: PLC0415

    base, unit = split_unit(str(column))
    return base.replace("_", " ") + (f" [{unit}]" if unit else "")


def grid_tables(result: Any, tz: str | None = None,
                results: dict[str, Any] | None = None) -> dict[str, pd.DataFrame]:
    """Small tables of a grid study result worth printing; the N-1 table as its 20 worst rows.

    Tables indexed by an element (lines relieved by a load loss, per line) keep that index
    as their first column. ``results`` (all of the run's grid results) lets the N-1 table
    show the short-circuit study's SCR beside each outage.
    """
    import dataclasses

    if isinstance(result, pd.DataFrame):
        if "min_vm_pu" in result and "element" in result:
            caption, table = contingency_table(
                result, tz, short_circuit=(results or {}).get("short_circuit"))
            return {caption: table}
        return {"": result}
    if not dataclasses.is_dataclass(result):
        return {}
    if hasattr(result, "scr_min") and hasattr(result, "outages"):
        caption, table = short_circuit_table(result)
        return {caption: table}
    if hasattr(result, "events") and hasattr(result, "violation_steps"):
        from scenarios.flexible_study import report_tables  # noqa: PLC0415

        return report_tables(_on_site_clock(result, tz))
    if hasattr(result, "headroom_mw") and not hasattr(result, "firm_mw") or hasattr(
            result, "open_loop_violation_steps") and not hasattr(result, "events"):
        return {}  # a queue's flexible studies: the queue section (scenarios.report_queue)
    if hasattr(result, "firm_mw") and hasattr(result, "headroom_mw"):
        from scenarios.flexible_study import interconnection_table

        caption, table = interconnection_table(result)
        return {caption: table}
    if hasattr(result, "p_mw") and hasattr(result, "quantity") and hasattr(result, "limit"):
        caption, table = hosting_table(result)
        return {caption: table}
    if hasattr(result, "violation_summary"):
        # a time-series power flow: its violations are the table (scenarios.report_parts);
        # its per-step frames are in the grid_timeseries_*.parquet files
        return {}
    out = {}
    for f in dataclasses.fields(result):
        value = getattr(result, f.name)
        if isinstance(value, pd.DataFrame) and value.shape[1] == 0:
            continue  # an element type the network does not have
        if isinstance(value, pd.DataFrame) and len(value) <= 200 and value.shape[1] <= 12:
            frame = value.head(20)
            if not isinstance(frame.index, pd.RangeIndex):
                name = frame.index.name or ("line" if "lines" in f.name else "element")
                frame = frame.rename_axis(name).reset_index()
            out[f.name.replace("_", " ")] = _times_on_clock(frame, tz).rename(columns=_header)
    return out


def _times_on_clock(frame: pd.DataFrame, tz: Any) -> pd.DataFrame:
    """Time columns of a result table on the site's clock, to the minute, the zone in the
    header (``time (America/Chicago)``); a frame without them is returned as it is."""
    stamped = [c for c in frame.columns
               if isinstance(frame[c].dtype, pd.DatetimeTZDtype)]
    if not stamped:
        return frame
    frame = frame.copy()
    zone = "UTC" if tz is None else str(tz)
    for col in stamped:
        frame[col] = frame[col].dt.tz_convert(zone).dt.strftime("%Y-%m-%d %H:%M")
    return frame.rename(columns={c: f"{c} ({zone})" for c in stamped})


def _on_site_clock(result: Any, tz: Any) -> Any:
    """A read-only view of a flexible study's result whose event and violation times are on
    the site's clock ``tz`` (the tables name the zone they are in)."""
    import dataclasses
    import types

    fields = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}
    if tz is None:
        return types.SimpleNamespace(**fields)
    events = fields.get("events")
    if isinstance(events, pd.DataFrame) and len(events):
        events = events.copy()
        for col in ("start", "end"):
            if col in events and getattr(events[col].dt, "tz", None) is not None:
                events[col] = events[col].dt.tz_convert(tz)
        fields["events"] = events
    table = fields.get("violations")
    if isinstance(table, pd.DataFrame) and "time" in table and len(table):
        times = pd.to_datetime(table["time"])
        if times.dt.tz is not None:
            zone = str(tz)
            table = table.assign(time=times.dt.tz_convert(tz).dt.strftime("%Y-%m-%d %H:%M"))
            fields["violations"] = table.rename(columns={"time": f"time ({zone})"})
    return types.SimpleNamespace(**fields)


def _on_figure(draw, figsize=(9, 4)) -> Figure:
    fig = Figure(figsize=figsize)
    draw(fig.add_subplot())
    fig.tight_layout()
    return fig


def _wall_clock(data: pd.Series | pd.DataFrame, tz: Any):
    """``data`` on the wall clock of ``tz`` without a zone (matplotlib draws tz-aware times in
    UTC) and the zone's name for the axis label."""
    local = data if tz is None else data.tz_convert(tz)
    return local.tz_localize(None), str(local.index.tz or "UTC")


def grid_figures(results: dict[str, Any], section: Any,
                 tz: Any = None) -> list[tuple[str, Figure]]:
    """Load and voltage at the facility bus, then the grid package's own plots [MW, pu, %];
    every time axis on the site's clock ``tz``, named on the axis."""
    from grid import plots

    figs = []
    ts = results.get("timeseries")
    if ts is not None and section.bus is not None:  # a queue: its own section's figure
        vm, zone = _wall_clock(ts.vm_pu[section.bus], tz)
        load, _ = _wall_clock(results["load_mw"], tz)
        fig = Figure(figsize=(10, 4.2))
        ax, ax2 = fig.subplots(2, 1, sharex=True)
        ax.plot(load.index, load, color="#3e7cb1", lw=0.7, drawstyle="steps-post")
        ax.set_ylabel("facility [MW]")
        ax.grid(alpha=0.3)
        ax2.plot(vm.index, vm, color="#c0392b", lw=0.7, drawstyle="steps-post")
        ax2.axhline(section.limits.vm_min_pu, color="#52606d", ls="--", lw=0.8)
        ax2.axhline(section.limits.vm_max_pu, color="#52606d", ls="--", lw=0.8)
        ax2.set_ylabel(f"voltage at bus {section.bus} [pu]")
        ax2.set_xlabel(f"time ({zone})")
        ax2.grid(alpha=0.3)
        ax.set_title("Facility load and the voltage at its bus (dashed: limits)")
        date_axis(ax2)
        fig.tight_layout()
        figs.append(("Facility load [MW] and voltage at the facility bus [pu]", fig))
    if ts is not None:
        figs.append(("Voltage envelope at the facility bus [pu]" if section.bus is not None
                     else "Voltage envelope at the facility buses [pu]",
                     _on_figure(lambda a: plots.voltage_envelope(ts, ax=a, tz=tz))))
        figs.append(("Loading duration curves of the most loaded branches [%]",
                     _on_figure(lambda a: plots.loading_duration(ts, ax=a))))
    hc = results.get("hosting_capacity")
    if hc is not None and section.bus is not None:
        peak = float(results["load_mw"].max())
        figs.append(("Hosting capacity at the facility bus against the facility's peak [MW]",
                     _on_figure(lambda a: plots.hosting_capacity_bars(
                         {f"bus {hc.bus}": hc}, peak_mw=peak, ax=a), figsize=(6, 4))))
    n1 = results.get("contingency")
    if n1 is not None and len(n1):
        figs.append(("N-1 at the peak hours: the worst outages' use of each limit",
                     _on_figure(lambda a: plots.n1_heatmap(n1, limits=ts.limits if ts else None,
                                                            ax=a), figsize=(8, 6.5))))
    figs.extend(_flexible_figures(results, tz))
    return figs


def _flexible_figures(results: dict[str, Any], tz: Any = None) -> list[tuple[str, Figure]]:
    """The flexible-interconnection curve, lever contributions, voltage with/without loop."""
    from grid import plots

    figs = []
    flex = results.get("flexible_interconnection")
    if flex is not None and hasattr(flex, "firm_mw"):  # a queue's: scenarios.report_queue
        figs.append(("Flexible interconnection: extra MW above the firm capacity against the "
                     "curtailment share", plots.plot_flexible_interconnection(flex).figure))
    cost = results.get("curtailment_cost")
    # no event: the events table says "none"; an empty plot would only repeat it
    if cost is not None and cost.events is not None and len(cost.events):
        figs.append((f"What each lever delivered under the implied limit of "
                     f"{cost.size_mw:,.1f} MW (the facility year) [MWh]",
                     plots.plot_lever_contributions(cost.events).figure))
    co = results.get("cosimulate")
    if co is not None and hasattr(co, "events"):  # a queue's: scenarios.report_queue
        figs.append(("Voltage at the facility bus with and without the closed loop [pu]",
                     plots.plot_cosimulation(co, tz=tz).figure))
        if co.events is not None and len(co.events):
            figs.append(("What each lever delivered in the closed-loop week [MWh]",
                         plots.plot_lever_contributions(co.events).figure))
    return figs


def sizing_figures(sizing: Any, pv: pd.Series | None, tz: Any = None) -> list[tuple[str, Figure]]:
    """The microgrid package's dispatch, state-of-charge, import-duration and cost plots;
    the first week on the site's clock ``tz``."""
    from microgrid import plots

    if sizing.dispatch is None or sizing.dispatch.empty:
        return []
    return [
        ("Dispatch of the sized microgrid over the first week [MW]",
         plots.plot_dispatch_week(sizing, tz=tz)),
        ("Battery state of charge over the first week [MWh]", plots.plot_soc(sizing, tz=tz)),
        ("Grid import duration curve [MW]", plots.plot_import_duration({"this scenario": sizing})),
        ("Annual cost by term [million USD/yr]", plots.plot_cost_breakdown({"this scenario": sizing})),
    ]
