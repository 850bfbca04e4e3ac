"""The report's figures, each a new :class:`matplotlib.figure.Figure` (no pyplot state).

Small views of the results the report needs (a week of the facility series and its parts, a
load-duration curve, the voltage at the facility bus, a week of dispatch); the packages' own
plot functions are used where they exist.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from aiload.errors import InputError
from aiload.metrics import plot_calendar_bands, plot_load_duration, plot_ramp_histogram

__all__ = ["facility_figures", "grid_figures", "grid_tables", "sizing_figures"]

_PARTS = (("it_kw", "IT", "#3e7cb1"), ("losses_kw", "distribution losses", "#f0b429"),
          ("cooling_kw", "cooling", "#81b29a"))


def _first_week(frame: pd.DataFrame | pd.Series):
    end = frame.index[0] + pd.Timedelta(days=7)
    return frame[frame.index < end]


def facility_figures(load: Any) -> list[tuple[str, Figure]]:
    """Stacked parts of the first week [MW], then the metrics package's load-duration curve,
    calendar bands and ramp histogram of ``facility_kw``."""
    power = load.power
    week = _first_week(power)
    fig = Figure(figsize=(10, 3.6))
    ax = fig.add_subplot()
    parts = [(c, label, colour) for c, label, colour in _PARTS if c in week]
    ax.stackplot(week.index, *[week[c].to_numpy() / 1000 for c, _, _ in parts],
                 labels=[label for _, label, _ in parts], colors=[c for _, _, c in parts],
                 step="post", alpha=0.9)
    ax.plot(week.index, week["facility_kw"] / 1000, color="#1f2933", lw=0.6, label="facility")
    ax.set_ylabel("power [MW]")
    ax.set_title("Facility power, first week (interval means)")
    ax.legend(loc="upper right", ncols=4, fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    figs = [("Facility power by part over the first week [MW]", fig)]

    facility_kw = power["facility_kw"]
    optional = [
        ("Load-duration curve of the facility power", lambda: plot_load_duration(facility_kw)),
        ("Hour-of-day and day-of-week percentile bands of the facility power",
         lambda: plot_calendar_bands(facility_kw)),
        ("Ramp rates of the facility power per window", lambda: plot_ramp_histogram(facility_kw)),
    ]
    for title, make in optional:
        try:
            figs.append((title, make()))
        except InputError:
            continue  # a figure the horizon or resolution cannot support is left out
    return figs


def grid_tables(result: Any) -> dict[str, pd.DataFrame]:
    """Small tables of a grid study result worth printing (at most a few hundred rows)."""
    import dataclasses

    if isinstance(result, pd.DataFrame):
        return {"": result} if len(result) <= 500 else {}
    if not dataclasses.is_dataclass(result):
        return {}
    out = {}
    for f in dataclasses.fields(result):
        value = getattr(result, f.name)
        if isinstance(value, pd.DataFrame) and len(value) <= 200 and value.shape[1] <= 12:
            out[f.name] = value
    return out


def grid_figures(results: dict[str, Any], section: Any) -> list[tuple[str, Figure]]:
    """Voltage at the facility bus and the facility load over time [pu, MW]."""
    ts = results.get("timeseries")
    if ts is None:
        return []
    vm = ts.vm_pu[section.bus] if section.bus in ts.vm_pu else ts.vm_pu.iloc[:, 0]
    fig = Figure(figsize=(10, 4.2))
    ax, ax2 = fig.subplots(2, 1, sharex=True)
    ax.plot(results["load_mw"].index, results["load_mw"], color="#3e7cb1", lw=0.7)
    ax.set_ylabel("facility [MW]")
    ax.grid(alpha=0.3)
    ax2.plot(vm.index, vm, color="#c0392b", lw=0.7)
    ax2.axhline(section.limits.vm_min_pu, color="#52606d", ls="--", lw=0.8)
    ax2.axhline(section.limits.vm_max_pu, color="#52606d", ls="--", lw=0.8)
    ax2.set_ylabel(f"vm at bus {section.bus} [pu]")
    ax2.grid(alpha=0.3)
    ax.set_title("Facility load and the voltage at its bus (dashed: limits)")
    fig.tight_layout()
    return [("Facility load [MW] and voltage at the facility bus [pu]", fig)]


def sizing_figures(sizing: Any, pv: pd.Series | None) -> list[tuple[str, Figure]]:
    """The first week of the least-cost dispatch [MW]."""
    dispatch = getattr(sizing, "dispatch", None)
    if dispatch is None or dispatch.empty:
        return []
    week = _first_week(dispatch)
    supply = [c for c in ("grid_import_kw", "pv_kw", "battery_discharge_kw", "generator_kw")
              if c in week]
    fig = Figure(figsize=(10, 3.6))
    ax = fig.add_subplot()
    ax.stackplot(week.index, *[week[c].to_numpy() / 1000 for c in supply],
                 labels=[c.removesuffix("_kw").replace("_", " ") for c in supply], step="post",
                 alpha=0.85)
    if "battery_charge_kw" in week:
        ax.fill_between(week.index, -week["battery_charge_kw"] / 1000, step="post",
                        color="#81b29a", alpha=0.6, label="battery charge")
    ax.set_ylabel("power [MW]")
    ax.set_title("Least-cost dispatch, first week (supply stacked, charging below zero)")
    ax.legend(loc="upper right", ncols=3, fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return [("Dispatch of the sized microgrid over the first week [MW]", fig)]
