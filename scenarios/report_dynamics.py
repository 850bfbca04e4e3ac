"""The report's dynamic-study section (``[grid.dynamics]``): the event, what the grid felt, the
verdict in words, the plots.

Numbers go through :mod:`scenarios.formatting`; tables carry their units in the headers; the
simulated instant is named on the site's clock; the time axis of the plots is seconds from the
start of the simulation.
"""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from scenarios import report_parts
from scenarios.formatting import number

__all__ = ["section", "events_table", "figures_table", "verdict_html", "fault_scan_table",
           "fault_scan_html"]

_esc = report_parts.esc


def _pairs(pairs) -> str:
    """``[[0.7, 0.02], [0.8, 0.5]]`` as a reader writes it: ``below 0.7 pu for more than
    0.02 s or 0.8 pu for more than 0.5 s``."""
    items = [f"{number(v)} pu for more than {number(d)} s" for v, d in pairs]
    text = ", ".join(items[:-1]) + (" or " if len(items) > 1 else "") + items[-1]
    return "below " + text


def _event_text(e: dict) -> tuple[str, str]:
    if e["kind"] == "fault":
        what = (f"three-phase fault at bus {e['bus']}, cleared after {number(e['cycles'])} "
                f"cycles ({number(e['duration_s'] * 1e3)} ms)")
        impedance = ("bolted" if e["r_pu"] == 0 and e["x_pu"] <= 1e-4 else
                     f"fault impedance {number(e['r_pu'])} + j{number(e['x_pu'])} pu")
        detail = impedance + (f"; line {e['trip_line']} opened at clearing"
                              if e.get("trip_line") is not None else "")
        return what, detail
    if e["kind"] == "trip":
        return ("facility trip", f"{e['share'] * 100:g} % of the facility still online "
                "leaves and stays off")
    return ("load step", f"the facility's power changes by {number(e['delta_mw'])} MW")


def events_table(study) -> pd.DataFrame:
    """The events in time order: time [s], event, detail."""
    rows = [(e["t_s"], *_event_text(e)) for e in study.events]
    return pd.DataFrame(rows, columns=["time [s]", "event", "detail"])


def figures_table(study) -> pd.DataFrame:
    """What the grid felt, one row per figure, with its unit in its own column."""
    rows = [
        ("frequency nadir (centre of inertia)", study.frequency_nadir_hz, "Hz"),
        ("frequency zenith (centre of inertia)", study.frequency_zenith_hz, "Hz"),
        ("RoCoF, largest over 500 ms", study.rocof_hz_s, "Hz/s"),
        ("settling frequency (mean of the last second)", study.settling_frequency_hz, "Hz"),
        (f"lowest voltage at the facility bus {study.bus}", study.voltage_min_pu, "pu"),
        ("voltage recovery to 0.9 pu after the first event", study.voltage_recovery_s, "s"),
        ("facility power lost (largest)", study.mw_lost, "MW"),
        ("of it, back on the grid at the end", study.mw_restored, "MW"),
    ]
    for band, osc in study.oscillations.items():
        lo, hi = osc["band_hz"]
        rows.append((f"machine speed oscillation, {band} band ({number(lo)}–{number(hi)} Hz): "
                     f"amplitude at {number(osc['frequency_hz'])} Hz, damping ratio "
                     f"{number(osc['damping_ratio'])}", osc["amplitude_mhz"], "mHz"))
    return pd.DataFrame({"figure": [r[0] for r in rows],
                         "value": [number(r[1]) for r in rows],
                         "unit": [r[2] for r in rows]})


def _limits_text(limits: dict) -> str:
    parts = []
    lo, hi = limits.get("f_min_hz"), limits.get("f_max_hz")
    if lo is not None and hi is not None:
        parts.append(f"frequency within {number(lo)}–{number(hi)} Hz")
    elif lo is not None:
        parts.append(f"frequency above {number(lo)} Hz")
    elif hi is not None:
        parts.append(f"frequency below {number(hi)} Hz")
    if limits.get("rocof_max_hz_s") is not None:
        parts.append(f"RoCoF at most {number(limits['rocof_max_hz_s'])} Hz/s")
    if limits.get("voltage_curve"):
        parts.append(f"the facility-bus voltage not {_pairs(limits['voltage_curve'])} "
                     "(the ride-through curve)")
    return "; ".join(parts) or "nothing (every limit switched off)"


def verdict_html(study) -> str:
    """The verdict in a sentence, each breach stated plainly."""
    judged = _limits_text(study.limits)
    if study.verdict_passed:
        return (f"<p><b>Verdict: passes.</b> Judged against: {_esc(judged)}; the run stayed "
                "within every one of them.</p>")
    items = "".join(f"<li>{_esc(r)}</li>"
                    for r in study.verdict_reasons)
    n = len(study.verdict_reasons)
    return (f"<p><b>Verdict: fails, {n} breach{'es' if n != 1 else ''}.</b> Judged against: "
            f"{_esc(judged)}.</p><ul>{items}</ul>")


def _rule_text(study) -> str:
    rule = study.ride_through
    if rule is None:
        return ("No ride-through rule: the facility stays on through any voltage or frequency; "
                "only the trip and step events take load off.")
    back = ("does not return within the run" if rule["return_delay_s"] is None else
            f"returns after {number(rule['return_delay_s'])} s of healthy voltage and ramps "
            f"back over {number(rule['ramp_s'])} s")
    band = []
    if rule["f_low_hz"] is not None:
        band.append(f"below {number(rule['f_low_hz'])} Hz")
    if rule["f_high_hz"] is not None:
        band.append(f"above {number(rule['f_high_hz'])} Hz")
    during = ("at once" if rule["f_duration_s"] == 0 else
              f"for {number(rule['f_duration_s'])} s or more")
    freq = f", or when the bus frequency is {' or '.join(band)} {during}" if band else ""
    return (f"Ride-through rule ({rule['name']}): {rule['share'] * 100:g} % of the "
            f"facility transfers to backup when its bus voltage stays "
            f"{_pairs(rule['voltage_time'])}{freq}; it {back}.")


def _transfers_table(study) -> pd.DataFrame:
    frame = study.trajectories
    off = (1.0 - frame["facility_online_share"]) * frame["facility_scheduled_mw"]
    rows = [(t["t_s"], t["what"]) for t in study.transfers]
    # the trips and steps act on the first step after their time: the MW off then
    for e in study.events:
        if e["kind"] == "trip":
            rows.append((e["t_s"], "trip"))
    rows.sort()
    out = []
    for t, what in rows:
        after = off[off.index > t + 1e-9]
        out.append((t, what, float(after.iloc[0]) if len(after) else float("nan")))
    return pd.DataFrame(out, columns=["time [s]", "what", "facility off the grid after it [MW]"])


def fault_scan_table(study) -> pd.DataFrame:
    """``[grid.dynamics.fault_scan]``: one row per faulted bus, units in the headers."""
    rows = study.fault_scan or []
    return pd.DataFrame({
        "faulted bus": [str(r["fault_bus"]) for r in rows],
        "lowest facility-bus voltage [pu]": [number(r["voltage_min_pu"]) for r in rows],
        "facility leaves the grid": ["yes" if r["tripped"] else "no" for r in rows],
        "power lost [MW]": [number(r["mw_lost"]) for r in rows],
        "frequency zenith [Hz]": [f"{r['frequency_zenith_hz']:.3f}" for r in rows],
        "run": ["completed" if r["completed"] else
                f"stopped at {number(r['end_s'])} s: {r['message']}" for r in rows]})


def fault_scan_html(study) -> str:
    """Which fault locations make the facility leave the grid, in a sentence and a table
    (``""`` when no scan was asked for)."""
    if study.fault_scan is None:
        return ""
    st = study.fault_scan_settings
    if st.get("skipped"):
        return f"<p><b>Fault scan:</b> not run: {_esc(st['skipped'])}.</p>"
    tripping = [str(r["fault_bus"]) for r in study.fault_scan if r["tripped"]]
    which = (f"faults at {len(tripping)} of {st['buses']} buses make it leave the grid "
             f"(bus{'es' if len(tripping) != 1 else ''} {', '.join(tripping)})" if tripping
             else f"no fault at any of the {st['buses']} buses makes it leave the grid")
    stopped = sum(1 for r in study.fault_scan if not r["completed"])
    if stopped:
        which += (f"; {stopped} run{'s' if stopped != 1 else ''} stopped early (lost "
                  "synchronism, or a step ANDES could not solve): the rule judged the voltage "
                  "only up to there")
    head = (f"<p><b>Fault scan:</b> {_esc(which)}. Each row is one simulation: the facility "
            f"at {_esc(number(st['facility_mw']))} MW with its ride-through rule, a "
            f"three-phase fault (reactance {_esc(number(st['x_pu']))} pu) at the bus from "
            f"{_esc(number(st['t_fault_s']))} s, cleared after {_esc(number(st['cycles']))} "
            f"cycles ({_esc(number(st['duration_s'] * 1e3))} ms), "
            f"{_esc(number(st['t_end_s']))} s simulated at a "
            f"{_esc(number(st['dt_s'] * 1e3))} ms step.</p>")
    return (head + "<p class='muted'>fault locations</p>"
            + report_parts.table(fault_scan_table(study), max_rows=200))


def plot(study) -> Figure:
    """Frequency, facility-bus voltage and facility power over the run (three panels)."""
    from grid.dynamics.plots import plot_result
    from grid.dynamics.results import FrequencyLimits

    fig = Figure(figsize=(9, 7.5), constrained_layout=True)
    ax = fig.subplots(3, 1, sharex=True)
    lim = study.limits
    plot_result(study.result, ax=ax, limits=FrequencyLimits(
        f_min_hz=lim["f_min_hz"], f_max_hz=lim["f_max_hz"],
        rocof_max_hz_s=lim["rocof_max_hz_s"]))
    ax[2].set_xlabel("time from the start of the simulation [s]")
    for a in ax:
        for e in study.events:
            a.axvline(e["t_s"], color="#52606d", lw=0.6, ls=":")
        a.grid(alpha=0.3)
    return fig


def section(study, tz, figure_html) -> str:
    """The whole section as HTML (``""`` when the scenario has no ``[grid.dynamics]``).

    ``tz``: the site's clock; ``figure_html(items)``: the report's figure writer, items
    ``(caption, Figure)``.
    """
    if study is None:
        return ""
    parts = ["<h3>dynamic study (ANDES)</h3>"]
    at = ""
    if study.facility_at is not None:
        when = pd.Timestamp(study.facility_at).tz_convert(tz if tz is not None else "UTC")
        at = f", the interval from {when.strftime('%Y-%m-%d %H:%M')} ({report_parts.zone_name(tz)})"
    what = (f"driven by {study.facility_from} ({number(study.facility_mw)} MW in the first "
            "interval), each value held as constant power over its interval"
            if study.facility_from.startswith("its own series") else
            f"as a constant-power load of {number(study.facility_mw)} MW "
            f"({study.facility_from}{at})")
    parts.append(
        f"<p>The facility {_esc(what)} at bus {_esc(study.bus)} of ANDES's case "
        f"{_esc(study.case)}, simulated for {_esc(number(study.t_end_s))} s at a "
        f"{_esc(number(study.dt_s * 1e3))} ms step; the case's own loads are constant "
        "impedance, its own timed events are dropped. Times below are seconds from the start "
        "of the simulation.</p>")
    if not study.completed:
        parts.append(f'<p class="skip">The simulation stopped early: '
                     f"{_esc(study.message)}. The figures cover the run up to there.</p>")
    parts.append(verdict_html(study))
    parts.append("<p class='muted'>events</p>" + report_parts.table(events_table(study)))
    parts.append(f"<p>{_esc(_rule_text(study))}</p>")
    parts.append("<p class='muted'>what the grid felt</p>"
                 + report_parts.table(figures_table(study), max_rows=20))
    transfers = _transfers_table(study)
    if len(transfers):
        parts.append("<p class='muted'>load taken off the grid</p>"
                     + report_parts.table(transfers))
    else:
        parts.append("<p class='muted'>load taken off the grid: none; the facility rode "
                     "through.</p>")
    if study.loss_of_load is not None:
        lol = study.loss_of_load
        limit = (f"a zenith of {number(lol['f_max_hz'])} Hz" if lol["f_max_hz"] is not None
                 else f"a nadir of {number(lol['f_min_hz'])} Hz")
        parts.append(
            f"<p><b>Loss-of-load capacity at bus {_esc(study.bus)}: "
            f"{_esc(number(lol['facility_mw']))} MW</b> (a trip of "
            f"{_esc(number(lol['share'] * 100))} % of it, {_esc(number(lol['lost_mw']))} MW, "
            f"keeps the frequency within {_esc(limit)}; to within "
            f"{_esc(number(lol['tolerance_mw']))} MW, {lol['runs']} simulated trips). What "
            f"binds above it: {_esc(str(lol['binding']))}.</p>")
        runs = study.loss_of_load_runs
        if runs is not None and len(runs):
            shown = pd.DataFrame({
                "facility [MW]": runs["facility_mw"].astype(float),
                "zenith [Hz]": runs["zenith_hz"].astype(float),
                "nadir [Hz]": runs["nadir_hz"].astype(float),
                "within the limit": runs["passed"].astype(bool),
                "breach": [str(b) or "none" for b in runs["breach"]]})
            parts.append("<p class='muted'>sizes tried</p>" + report_parts.table(shown))
    parts.append(fault_scan_html(study))
    parts.append(figure_html([(
        f"Dynamic study, {study.case} bus {study.bus}: centre-of-inertia frequency (grey: each "
        "machine; dashed: the limits) [Hz], facility-bus voltage [pu] and facility power [MW]; "
        "dotted: the events", plot(study))]))
    parts.append("<p class='muted'>All traces (every machine's frequency, every bus voltage) "
                 "are in grid_dynamics_trajectories.parquet; the figures in summary.json "
                 "grid.dynamics.</p>")
    return "\n".join(parts)
