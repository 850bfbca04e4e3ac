"""Figures of a sizing: dispatch week, state of charge, import duration curve, cost breakdown.

Each function returns a new :class:`matplotlib.figure.Figure` (pyplot's global state is not
touched), so scripts save it with ``fig.savefig(path, dpi=90)``. Power in MW on the axes
(the campus scale), energy in MWh, money in million USD per year.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from aiload._checks import check_number
from aiload.errors import InputError
from aiload.metrics.plots import date_axis
from microgrid.sizing import Sizing

__all__ = ["plot_dispatch_week", "plot_soc", "plot_import_duration", "plot_cost_breakdown"]

_SOURCES = {
    "pv_kw": ("PV", "#f2b701"),
    "battery_discharge_kw": ("battery discharge", "#3969ac"),
    "generator_kw": ("generator", "#7f3c8d"),
    "grid_import_kw": ("grid import", "#80ba5a"),
}
_SINKS = {
    "battery_charge_kw": ("battery charge", "#7fa6d9"),
    "grid_export_kw": ("grid export", "#b5d99c"),
    "pv_curtailed_kw": ("PV curtailed", "#f9dd80"),
}


def _check_sizing(sizing: object, what: str = "sizing") -> None:
    if not isinstance(sizing, Sizing):
        raise InputError(f"{what}: expected a microgrid.Sizing (the result of microgrid.size), "
                         f"got {type(sizing).__name__}.")


def _check_sizings(sizings: object) -> None:
    if not isinstance(sizings, Mapping) or not sizings:
        got = "an empty mapping" if isinstance(sizings, Mapping) else type(sizings).__name__
        raise InputError(f"sizings: expected a non-empty mapping of label -> microgrid.Sizing, "
                         f"e.g. {{'base': sizing}}, got {got}.")
    for label, s in sizings.items():
        _check_sizing(s, f"sizings[{label!r}]")


def _window(sizing: Sizing, start, days: float) -> pd.DataFrame:
    """The dispatch from ``start`` for ``days``; a naive start is read in the dispatch's zone."""
    _check_sizing(sizing)
    dispatch = sizing.dispatch
    days = check_number(days, "days", gt=0.0, unit="day")
    try:
        begin = dispatch.index[0] if start is None else pd.Timestamp(start)
    except (TypeError, ValueError):
        begin = pd.NaT
    if begin is pd.NaT:
        raise InputError(f"start: expected a timestamp such as '2025-07-01', got {start!r}.")
    if begin.tz is None:
        begin = begin.tz_localize(dispatch.index.tz)
    out = dispatch[(dispatch.index >= begin) & (dispatch.index < begin + pd.Timedelta(days=days))]
    if out.empty:
        raise InputError(
            f"start: the {days:g} day(s) from {begin} hold no step of the dispatch "
            f"({dispatch.index[0]} to {dispatch.index[-1]}); pick a start inside it."
        )
    return out


def _on_clock(d: pd.DataFrame, tz) -> tuple[pd.DatetimeIndex, str]:
    """The window's labels as wall-clock times of ``tz`` (default: the dispatch's own zone)
    and the axis label naming that zone; matplotlib would draw tz-aware times in UTC."""
    index = d.index if tz is None else d.index.tz_convert(tz)
    return index.tz_localize(None), f"time ({index.tz or 'UTC'})"


def plot_dispatch_week(
    sizing: Sizing, start: str | pd.Timestamp | None = None, *, days: float = 7.0,
    tz=None,
) -> Figure:
    """Stacked sources against the load over ``days`` from ``start`` [MW].

    Sources stack upwards; battery charge, export and curtailed PV are drawn below zero.
    Steps are drawn as steps (``post``): each value is the mean over the interval that starts
    at its label. ``tz`` (e.g. ``"America/Chicago"``): the clock of the time axis, named on
    it; default the dispatch's own zone.
    """
    d = _window(sizing, start, days)
    fig = Figure(figsize=(9, 4.2))
    ax = fig.add_subplot()
    t, xlabel = _on_clock(d, tz)
    # series below this [MW] are solver round-off and stay out of the legend
    tiny_mw = 1e-6 * max(float(d["load_kw"].max()) / 1000, 1e-9)
    base = np.zeros(len(d))
    for col, (label, color) in _SOURCES.items():
        top = base + d[col].to_numpy() / 1000
        if np.any(top - base > tiny_mw):
            ax.fill_between(t, base, top, step="post", color=color, label=label, linewidth=0)
        base = top
    low = np.zeros(len(d))
    for col, (label, color) in _SINKS.items():
        bottom = low - d[col].to_numpy() / 1000
        if np.any(low - bottom > tiny_mw):
            ax.fill_between(t, bottom, low, step="post", color=color, label=label, linewidth=0)
        low = bottom
    ax.step(t, d["load_kw"] / 1000, where="post", color="black", lw=1.2, label="load")
    ax.axhline(sizing.import_limit_kw / 1000, color="#e73f74", ls="--", lw=1,
               label="import limit")
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_ylabel("power [MW]")
    ax.set_title(f"Dispatch, {t[0]:%Y-%m-%d} + {days:g} days")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    ax.margins(x=0)
    date_axis(ax)
    ax.set_xlabel(xlabel)
    fig.tight_layout()
    return fig


def plot_soc(sizing: Sizing, start: str | pd.Timestamp | None = None, *, days: float = 7.0,
             tz=None) -> Figure:
    """Battery state of charge at each label over ``days`` from ``start`` [MWh]; ``tz``: the
    clock of the time axis (default the dispatch's own zone)."""
    d = _window(sizing, start, days)
    fig = Figure(figsize=(9, 2.8))
    ax = fig.add_subplot()
    t, xlabel = _on_clock(d, tz)
    ax.plot(t, d["battery_soc_kwh"] / 1000, color="#3969ac", lw=1.2)
    ax.axhline(sizing.battery_kwh / 1000, color="grey", ls="--", lw=1, label="capacity")
    ax.set_ylabel("state of charge [MWh]")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.margins(x=0)
    date_axis(ax)
    ax.set_xlabel(xlabel)
    fig.tight_layout()
    return fig


def plot_import_duration(sizings: Mapping[str, Sizing]) -> Figure:
    """Grid-import duration curves (sorted import against share of time) [MW]."""
    _check_sizings(sizings)
    fig = Figure(figsize=(7, 4))
    ax = fig.add_subplot()
    for label, s in sizings.items():
        imp = np.sort(s.dispatch["grid_import_kw"].to_numpy())[::-1] / 1000
        share = (np.arange(len(imp)) + 0.5) / len(imp) * 100
        line = ax.plot(share, imp, lw=1.5, label=label)[0]
        ax.axhline(s.import_limit_kw / 1000, color=line.get_color(), ls=":", lw=1)
    load = next(iter(sizings.values())).dispatch["load_kw"].to_numpy()
    ax.plot((np.arange(len(load)) + 0.5) / len(load) * 100, np.sort(load)[::-1] / 1000,
            color="black", lw=1, ls="--", label="load")
    ax.set_xlabel("share of time [%]")
    ax.set_ylabel("grid import [MW]")
    ax.set_xlim(0, 100)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


def plot_cost_breakdown(sizings: Mapping[str, Sizing]) -> Figure:
    """Annual cost by term for each case, stacked bars [million USD/year]."""
    _check_sizings(sizings)
    fig = Figure(figsize=(7, 4))
    ax = fig.add_subplot()
    terms = [k for k in next(iter(sizings.values())).annual_cost_usd
             if any(abs(s.annual_cost_usd.get(k, 0.0)) > 1 for s in sizings.values())]
    labels = list(sizings)
    x = np.arange(len(labels))
    pos = np.zeros(len(labels))
    neg = np.zeros(len(labels))
    colors = dict(zip(terms, _palette(len(terms))))
    for term in terms:
        v = np.array([sizings[lb].annual_cost_usd.get(term, 0.0) for lb in labels]) / 1e6
        bottom = np.where(v >= 0, pos, neg)
        ax.bar(x, v, bottom=bottom, color=colors[term], label=term.replace("_", " "), width=0.6)
        pos += np.clip(v, 0, None)
        neg += np.clip(v, None, 0)
    for xi, lb in zip(x, labels):
        s = sizings[lb]
        ax.annotate(f"{s.lcoe_usd_per_mwh:.1f} USD/MWh", (xi, pos[xi]), ha="center",
                    va="bottom", fontsize=8, xytext=(0, 2), textcoords="offset points")
    ax.set_xticks(x, labels)
    ax.set_ylabel("annual cost [million USD/yr]")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


def _palette(n: int) -> list:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return [cmap(i % 10) for i in range(n)]
