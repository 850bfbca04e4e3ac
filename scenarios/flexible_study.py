"""The flexible_interconnection and cosimulate studies of a scenario (``[grid.flexible]``).

Both run the facility model again (with a power limit), so they need the scenario's
``[facility]`` table besides the facility series: ``flexible_interconnection`` runs the
chosen size's implied limit over the facility's horizon at ``grid.freq``
(``grid.curtailment_cost``); ``cosimulate`` runs the closed loop over a window
(``grid.cosimulate``).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from aiload.errors import InputError
from scenarios.formatting import split_unit

__all__ = ["background_of", "control_period_of", "facility_call", "interconnection_table",
           "run_flexible_study"]


def background_of(section, index: pd.DatetimeIndex) -> pd.Series | None:
    """The illustrative background of ``[grid.flexible.background]`` on ``index`` (or None)."""
    bg = section.flexible.background
    if bg is None:
        return None
    from grid.flexible_run import cosine_background

    return cosine_background(index, mean=bg.mean, seasonal_amplitude=bg.seasonal_amplitude,
                             daily_amplitude=bg.daily_amplitude, peak_day=bg.peak_day,
                             peak_hour_utc=bg.peak_hour_utc, decimals=bg.decimals)


def facility_call(facility) -> tuple[Any, dict[str, Any]]:
    """``(spec_or_preset, overrides)`` of a ``[facility]`` table (no run arguments)."""
    if facility is None:
        raise InputError("the flexible_interconnection and cosimulate studies run the facility "
                         "model again: call run_grid(..., facility=scenario.facility).")
    kwargs = dict(facility.overrides)  # as scenarios.studies.facility_kwargs, less the run's
    if facility.utilization is not None:
        kwargs["utilization"] = facility.utilization
    if getattr(facility, "flexibility", None) is not None:  # [facility.flexibility]
        kwargs["flexibility"] = facility.flexibility.to_spec()
    return facility.to_spec(), kwargs


def control_period_of(flex, facility) -> str:
    """The control period of the runs with a limit: ``[grid.flexible] control_period`` when
    the file gives it, else ``[facility.flexibility] control_period_s`` when given, else the
    grid section's default ("5min"); both given and different: InputError."""
    own = getattr(facility, "flexibility", None)
    own_s = (own.control_period_s if own is not None and "control_period_s" in own.model_fields_set
             else None)
    if own_s is None:
        return flex.control_period
    if "control_period" not in flex.model_fields_set:
        return f"{own_s:g}s"
    grid_s = pd.Timedelta(pd.tseries.frequencies.to_offset(flex.control_period)).total_seconds()
    if grid_s != own_s:
        raise InputError(
            f"[grid.flexible] control_period = {flex.control_period!r} ({grid_s:g} s) and "
            f"[facility.flexibility] control_period_s = {own_s:g} disagree; expected one of "
            "them, or the same period in both: remove one of the keys.")
    return flex.control_period


def run_flexible_study(grid, plan, section, name: str, load_mw: pd.Series,
                       facility, stage=None, progress: bool = False) -> dict[str, Any]:
    """Run ``name`` (``"flexible_interconnection"`` or ``"cosimulate"``) -> results by name.

    ``stage(name)`` is called before the facility run under the limit, the long part of the
    flexible study (a progress line of ``aiload run``); ``progress`` shows the facility
    runs' progress bars (``aiload run`` on a terminal).
    """
    stage = stage or (lambda name: None)
    flex = section.flexible
    spec, overrides = facility_call(facility)
    period = control_period_of(flex, facility)
    out: dict[str, Any] = {}
    if name == "flexible_interconnection":
        background = background_of(section, load_mw.index)
        study = grid.flexible_interconnection(
            plan.net, load_mw, bus=section.bus, limits=plan.limits, background=background,
            power_factor=section.power_factor, sizes_mw=flex.sizes_mw,
            tolerance_mw=flex.tolerance_mw, enforce_q_lims=section.enforce_q_lims)
        out["flexible_interconnection"] = study
        if flex.curtailment_cost:
            size = flex.size_mw if flex.size_mw is not None else float(load_mw.max())
            stage(f"flexible interconnection: firm {study.firm_mw:,.1f} MW; {size:,.1f} MW "
                  f"under its implied limit through the facility model ({len(load_mw):,} steps "
                  f"of {section.freq}, control period {period}), then the network cross-check")
            out["curtailment_cost"] = grid.curtailment_cost(
                study, size, plan.net, spec, freq=section.freq, seed=facility.seed,
                control_period=period, enforce_q_lims=section.enforce_q_lims,
                progress=progress, **overrides)
        return out
    start = pd.Timestamp(flex.cosim_start or facility.start)
    end = pd.Timestamp(flex.cosim_end) if flex.cosim_end else start + pd.Timedelta("7D")
    index = pd.date_range(start, end, freq=flex.cosim_freq, inclusive="left")
    out["cosimulate"] = grid.cosimulate(
        plan.net, spec, bus=section.bus, start=start, end=end, freq=flex.cosim_freq,
        control_period=period, controller=flex.controller, limits=plan.limits,
        power_factor=section.power_factor, background=background_of(section, index),
        seed=facility.seed, branches=flex.branches, enforce_q_lims=section.enforce_q_lims,
        progress=progress, **overrides)
    return out


#: columns of the facility's event table shown in the report
EVENT_COLUMNS = ("start", "end", "target_kw", "excess_kw", "battery_kw", "inference_kw",
                 "power_cap_kw", "deferral_kw", "response_s", "deferred_node_h", "job_delay_h",
                 "unserved_requests", "shortfall_kw")


def event_table(events: pd.DataFrame | None, rows: int = 20) -> pd.DataFrame:
    """The longest ``rows`` events (by duration), in time order, the report's columns."""
    if events is None or not len(events):
        return pd.DataFrame({"event": ["none"]})
    shown = events[[c for c in EVENT_COLUMNS if c in events]].copy()
    hours = (shown["end"] - shown["start"]) / pd.Timedelta(hours=1)
    shown.insert(2, "duration_h", hours)
    shown = shown.loc[hours.nlargest(rows).index].sort_values("start").reset_index(drop=True)
    # a reader's table: minutes on the run's clock, units in brackets
    tz = shown["start"].dt.tz
    for col in ("start", "end"):
        shown[col] = shown[col].dt.strftime("%Y-%m-%d %H:%M")
    names = {}
    for col in shown.columns:
        label, unit = (col[:-7], "node-h") if col.endswith("_node_h") else split_unit(col)
        names[col] = f"{label} ({tz})" if col in ("start", "end") else (
            f"{label.replace('_', ' ')} [{unit}]" if unit else col.replace("_", " "))
    return shown.rename(columns=names)


def report_tables(result) -> dict[str, pd.DataFrame]:
    """Tables of a ``CurtailmentCost`` or ``Cosimulation`` worth printing in the report."""
    out: dict[str, pd.DataFrame] = {}
    if hasattr(result, "costs"):
        out[f"what the curtailment costs at {result.size_mw:,.1f} MW (modelled facility x "
            f"{result.factor:.3f} = at size; per the facility run)"] = result.costs
    n = 0 if result.events is None else len(result.events)
    out[f"events of the facility under the limit ({n}; the 20 longest)"] = \
        event_table(result.events)
    if hasattr(result, "violations") and len(result.violations):
        out["violations left in the cross-check (grid.timeseries)"] = result.violations.head(20)
    return out


def _significant(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant figures, never with more decimals than that needs
    (``0.00339``, ``2.70``, ``135``, ``596,859``); ``n/a`` for NaN."""
    value = float(value)
    if not math.isfinite(value):
        return "n/a"
    if value == 0.0:
        return "0"
    decimals = max(digits - 1 - math.floor(math.log10(abs(value))), 0)
    return f"{value:,.{decimals}f}"


def _count(value: float) -> str:
    """A count or whole hours as an integer (``147``, not ``147.0``); a fractional one (a
    series shorter than a year, per year) to 3 significant figures."""
    value = float(value)
    if math.isfinite(value) and value == round(value):
        return f"{round(value):,}"
    return _significant(value)


#: the size table's columns: (header with its unit, how a value is written)
INTERCONNECTION_COLUMNS = {
    "size_mw": ("size [MW]", lambda v: f"{v:,.2f}"),
    "extra_mw": ("above firm [MW]", lambda v: f"{v:,.2f}"),
    "energy_mwh_per_yr": ("energy [MWh/yr]", _significant),
    "curtailed_h_per_yr": ("curtailed [h/yr]", _count),
    "curtailed_mwh_per_yr": ("curtailed [MWh/yr]", _significant),
    "curtailed_share_percent": ("curtailed [% of energy]", _significant),
    "events_per_yr": ("events [1/yr]", _count),
    "mean_event_h": ("mean event [h]", _count),
    "longest_event_h": ("longest event [h]", _count),
    "binding_element": ("binding element", str),
}


def interconnection_table(result) -> tuple[str, pd.DataFrame]:
    """The size table of a ``grid.FlexibleInterconnection`` as the report shows it, and its
    caption: MW to 2 decimals, percentages and energies to 3 significant figures, counts
    and whole hours as integers, units in the headers."""
    table = result.table
    shown = pd.DataFrame({
        header: [write(v) for v in table[col]]
        for col, (header, write) in INTERCONNECTION_COLUMNS.items() if col in table})
    caption = (f"candidate sizes above the firm capacity of {result.firm_mw:,.2f} MW: "
               "curtailment per year (totals over the series / its length in years)")
    return caption, shown
