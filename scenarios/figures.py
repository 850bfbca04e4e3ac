"""The report's figures, each a new :class:`matplotlib.figure.Figure` (no pyplot state).

The first week of the facility series by part and the facility load beside the voltage at its
bus are drawn here; everything else comes from the packages' own plot functions
(``aiload.metrics``, ``grid.plots``, ``microgrid.plots``).
"""

from __future__ import annotations

from typing import Any

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
    ax.plot(week.index, week["facility_kw"] / 1000, color="#1f2933", lw=0.6, label="facility",
            drawstyle="steps-post")
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
    """Small tables of a grid study result worth printing; the N-1 table as its 20 worst rows."""
    import dataclasses

    if isinstance(result, pd.DataFrame):
        if "min_vm_pu" in result and len(result) > 20:
            worst = result.sort_values("min_vm_pu").head(20)
            return {f"the 20 outages with the lowest voltage, of {len(result)} "
                    "(all in grid_contingency.parquet)": worst}
        return {"": result}
    if not dataclasses.is_dataclass(result):
        return {}
    out = {}
    for f in dataclasses.fields(result):
        value = getattr(result, f.name)
        if isinstance(value, pd.DataFrame) and len(value) <= 200 and value.shape[1] <= 12:
            out[f.name] = value.head(20)
    return out


def _on_figure(draw, figsize=(9, 4)) -> Figure:
    fig = Figure(figsize=figsize)
    draw(fig.add_subplot())
    fig.tight_layout()
    return fig


def grid_figures(results: dict[str, Any], section: Any) -> list[tuple[str, Figure]]:
    """Load and voltage at the facility bus, then the grid package's own plots [MW, pu, %]."""
    from grid import plots

    figs = []
    ts = results.get("timeseries")
    if ts is not None:
        vm = ts.vm_pu[section.bus]
        fig = Figure(figsize=(10, 4.2))
        ax, ax2 = fig.subplots(2, 1, sharex=True)
        ax.plot(results["load_mw"].index, results["load_mw"], color="#3e7cb1", lw=0.7,
                drawstyle="steps-post")
        ax.set_ylabel("facility [MW]")
        ax.grid(alpha=0.3)
        ax2.plot(vm.index, vm, color="#c0392b", lw=0.7, drawstyle="steps-post")
        ax2.axhline(section.limits.vm_min_pu, color="#52606d", ls="--", lw=0.8)
        ax2.axhline(section.limits.vm_max_pu, color="#52606d", ls="--", lw=0.8)
        ax2.set_ylabel(f"vm at bus {section.bus} [pu]")
        ax2.grid(alpha=0.3)
        ax.set_title("Facility load and the voltage at its bus (dashed: limits)")
        fig.tight_layout()
        figs.append(("Facility load [MW] and voltage at the facility bus [pu]", fig))
        figs.append(("Voltage envelope at the facility bus [pu]",
                     _on_figure(lambda a: plots.voltage_envelope(ts, ax=a))))
        figs.append(("Loading duration curves of the most loaded branches [%]",
                     _on_figure(lambda a: plots.loading_duration(ts, ax=a))))
    hc = results.get("hosting_capacity")
    if hc is not None:
        peak = float(results["load_mw"].max())
        figs.append(("Hosting capacity at the facility bus against the facility's peak [MW]",
                     _on_figure(lambda a: plots.hosting_capacity_bars(
                         {f"bus {hc.bus}": hc}, peak_mw=peak, ax=a), figsize=(6, 4))))
    n1 = results.get("contingency")
    if n1 is not None and len(n1):
        figs.append(("N-1 at the peak hours: the worst outages' use of each limit",
                     _on_figure(lambda a: plots.n1_heatmap(n1, limits=ts.limits if ts else None,
                                                            ax=a), figsize=(8, 6.5))))
    return figs


def sizing_figures(sizing: Any, pv: pd.Series | None) -> list[tuple[str, Figure]]:
    """The microgrid package's dispatch, state-of-charge, import-duration and cost plots."""
    from microgrid import plots

    if sizing.dispatch is None or sizing.dispatch.empty:
        return []
    return [
        ("Dispatch of the sized microgrid over the first week [MW]",
         plots.plot_dispatch_week(sizing)),
        ("Battery state of charge over the first week", plots.plot_soc(sizing)),
        ("Grid import duration curve [MW]", plots.plot_import_duration({"this scenario": sizing})),
        ("Annual cost by term [million USD/yr]", plots.plot_cost_breakdown({"this scenario": sizing})),
    ]
