"""The report's stabilisation section (``[stabilise]``): the limits, the options table, the
cheapest option that meets every limit, and four plots — a minute at the POI before and
after, the spectrum with the limit band, the ramp-rate duration curve, the stored energy.

Numbers go through :mod:`scenarios.formatting`; tables carry their units in the headers;
times are on the site's clock.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from scenarios import report_parts
from scenarios.formatting import number

__all__ = ["section", "options_table", "limits_text", "busiest_minute", "plots"]

_esc = report_parts.esc
_BEFORE, _AFTER = "#52606d", "#0b7285"


def limits_text(lim: dict) -> str:
    """The limits in words."""
    parts = []
    w = number(lim["ramp_window_s"])
    if lim.get("ramp_up_mw_per_s") is not None:
        parts.append(f"ramps up at most {number(lim['ramp_up_mw_per_s'])} MW/s")
    if lim.get("ramp_down_mw_per_s") is not None:
        parts.append(f"ramps down at most {number(lim['ramp_down_mw_per_s'])} MW/s")
    if parts:
        parts[-1] += f" (over {w} s)"
    lo, hi = lim["band_hz"]
    band = f"{number(lo)}–{number(hi)} Hz"
    if lim.get("band_amplitude_mw") is not None:
        parts.append(f"fluctuation in {band} of at most {number(lim['band_amplitude_mw'])} MW "
                     "amplitude")
    if lim.get("band_energy_share") is not None:
        parts.append(f"at most {number(lim['band_energy_share'] * 100)} % of the fluctuation "
                     f"energy in {band}")
    if lim.get("min_power_kw") is not None:
        parts.append(f"never below {number(lim['min_power_kw'])} kW")
    return "; ".join(parts)


def options_table(summary: dict) -> pd.DataFrame:
    """One row per option, units in the headers."""
    rows = summary["options"]
    return pd.DataFrame({
        "option": [r["option"] for r in rows],
        "meets every limit": ["yes" if r["limits_met"] else "no" for r in rows],
        "power [kW]": [number(r["kw"]) for r in rows],
        "energy [kWh]": [number(r["kwh"]) for r in rows],
        "burned [MWh/yr]": [number(r["energy_burned_kwh_per_year"] / 1e3) for r in rows],
        "withheld [MWh/yr]": [number(r["energy_withheld_kwh_per_year"] / 1e3) for r in rows],
        "losses [MWh/yr]": [number(r["losses_kwh_per_year"] / 1e3) for r in rows],
        "cost [USD/yr]": [number(r["cost_usd_per_year"]) for r in rows],
        "ramp up [MW/s]": [number(r["ramp_up_mw_per_s"]) for r in rows],
        "ramp down [MW/s]": [number(r["ramp_down_mw_per_s"]) for r in rows],
        "band amplitude [MW]": [number(r["band_amplitude_mw"]) for r in rows],
        "band share [%]": [number(r["band_energy_share"] * 100) for r in rows],
    })


def busiest_minute(load_kw: pd.Series, window_s: float) -> pd.Timestamp:
    """Start of the minute around the largest ramp of ``load_kw`` over ``window_s``."""
    step_s = (load_kw.index[1] - load_kw.index[0]).total_seconds()
    k = max(int(round(window_s / step_s)), 1)
    v = load_kw.to_numpy()
    i = int(np.argmax(np.abs(v[k:] - v[:-k]))) + k
    first = max(min(i - int(round(20.0 / step_s)), len(v) - int(round(60.0 / step_s))), 0)
    return load_kw.index[first]


def _welch(p_kw: np.ndarray, dt_s: float):
    from scipy import signal  # noqa: PLC0415

    from microgrid.stabilise.limits import _nperseg  # noqa: PLC0415 - the limits' own rule

    return signal.welch(p_kw / 1e3, fs=1.0 / dt_s, nperseg=_nperseg(p_kw.size),
                        detrend="constant")


def plots(result, summary: dict, tz) -> list[tuple[str, Figure]]:
    """The four figures, each ``(caption, Figure)``."""
    from aiload.metrics import ramp_duration_curve  # noqa: PLC0415

    shown = summary["shown"]
    series = result.series(shown)
    lim = summary["limits"]
    dt_s = summary["step_s"]
    load, poi = series["load_kw"], series["poi_kw"]
    zone = report_parts.zone_name(tz)
    out = []

    start = busiest_minute(load, lim["ramp_window_s"])
    minute = series.loc[start:start + pd.Timedelta(seconds=60) - pd.Timedelta(seconds=dt_s / 2)]
    t = (minute.index - start).total_seconds()
    fig = Figure(figsize=(9, 4), constrained_layout=True)
    ax = fig.subplots()
    ax.plot(t, minute["load_kw"] / 1e3, color=_BEFORE, lw=0.9, label="before (the load)")
    ax.plot(t, minute["poi_kw"] / 1e3, color=_AFTER, lw=1.4, label=f"after ({shown})")
    ax.set_xlabel(f"seconds from {start.tz_convert(tz).strftime('%Y-%m-%d %H:%M:%S')} ({zone})")
    ax.set_ylabel("power at the POI [MW]")
    ax.legend(loc="best")
    ax.grid(alpha=0.3)
    out.append((f"The minute around the largest ramp, at the POI before and after "
                f"({shown})", fig))

    fig = Figure(figsize=(9, 4), constrained_layout=True)
    ax = fig.subplots()
    for values, color, label in ((load, _BEFORE, "before"), (poi, _AFTER, f"after ({shown})")):
        f, psd = _welch(values.to_numpy(), dt_s)
        ax.loglog(f[1:], np.maximum(psd[1:], 1e-12), color=color, lw=1.0, label=label)
    lo, hi = lim["band_hz"]
    top = min(hi, 0.5 / dt_s)
    # a band above the Nyquist frequency of the step cannot be seen: say where it is cut
    cut = f" (to {number(hi)} Hz; {number(top)} Hz is the step's limit)" if top < hi else ""
    ax.axvspan(lo, top, color="#f08c00", alpha=0.15,
               label=f"limit band {number(lo)}–{number(top)} Hz{cut}")
    ax.set_xlabel("frequency [Hz]")
    ax.set_ylabel("power spectral density [MW²/Hz]")
    ax.legend(loc="best")
    ax.grid(alpha=0.3, which="both")
    out.append(("Spectrum of the POI power (Welch) with the limit band", fig))

    fig = Figure(figsize=(9, 4), constrained_layout=True)
    ax = fig.subplots()
    for values, color, label in ((load, _BEFORE, "before"), (poi, _AFTER, f"after ({shown})")):
        curve = ramp_duration_curve(values, lim["ramp_window_s"], unit="kW")
        ax.plot(curve["exceedance"] * 100, curve["ramp_mw_per_s"], color=color, lw=1.2,
                label=label)
    for key, word in (("ramp_up_mw_per_s", "up"), ("ramp_down_mw_per_s", "down")):
        if lim.get(key) is not None:
            ax.axhline(lim[key], color="#c92a2a", ls="--", lw=0.9,
                       label=f"limit {word} {number(lim[key])} MW/s")
    ax.set_xscale("log")
    ax.set_xlabel(f"share of time the ramp over {number(lim['ramp_window_s'])} s is exceeded [%]")
    ax.set_ylabel("ramp magnitude [MW/s]")
    ax.legend(loc="best")
    ax.grid(alpha=0.3, which="both")
    out.append(("Ramp-rate duration curve before and after", fig))

    stored = [r["option"] for r in summary["options"] if r["kwh"] > 0]
    if stored:
        fig = Figure(figsize=(9, 4), constrained_layout=True)
        ax = fig.subplots()
        for name in stored:
            soc = result.series(name)["soc_kwh"]
            ax.plot(soc.index.tz_convert(tz), soc / 1e3, lw=1.0, label=name)
        ax.set_xlabel(f"time ({zone})")
        ax.set_ylabel("stored energy [MWh]")
        ax.legend(loc="best")
        ax.grid(alpha=0.3)
        out.append(("Stored energy of each storage option", fig))
    return out


def section(result, summary: dict, tz, figure_html) -> str:
    """The whole section as HTML (``""`` without a ``[stabilise]`` study).

    ``summary``: summary.json's ``stabilise``; ``figure_html(items)``: the report's figure
    writer.
    """
    if result is None:
        return ""
    shown = summary["shown"]
    span = summary["span_s"]
    parts = ["<h2>Stabilisation at the point of interconnection</h2>"]
    parts.append(
        f"<p>The facility's power at its own {_esc(number(summary['step_s']))} s step, "
        f"{_esc(number(span / 60))} min of it, against these limits: "
        f"{_esc(limits_text(summary['limits']))}. Each option is sized to the smallest that "
        f"meets them on this series (GPU smoothing and PSU storage for "
        f"{summary['gpus']:,} GPUs); energies and costs are scaled from the "
        f"{_esc(number(span / 60))} min to a year. Energy price "
        f"{_esc(number(summary['energy_usd_per_kwh']))} USD/kWh "
        f"({_esc(summary['price_source'])}).</p>")
    cheapest = summary["cheapest"]
    if cheapest is None:
        parts.append('<p class="skip"><b>No option meets every limit.</b> The plots show '
                     f"{_esc(shown)}, the cheapest of them.</p>")
    else:
        row = next(r for r in summary["options"] if r["option"] == cheapest)
        parts.append(f"<p><b>Cheapest that meets every limit: {_esc(cheapest)}</b>, "
                     f"{_esc(number(row['cost_usd_per_year']))} USD per year "
                     f"({_esc(number(row['kw']))} kW, {_esc(number(row['kwh']))} kWh).</p>")
    parts.append("<p class='muted'>options (none: the load as it is)</p>"
                 + report_parts.table(options_table(summary), max_rows=20))
    notes = [(r["option"], r["notes"]) for r in summary["options"] if r["notes"]]
    if notes:
        parts.append("<details><summary>assumptions and notes of each option</summary><ul>"
                     + "".join(f"<li>{_esc(o)}: {_esc(n)}</li>" for o, n in notes)
                     + "</ul></details>")
    parts.append(figure_html(plots(result, summary, tz)))
    parts.append("<p class='muted'>The shown option's series at every step: "
                 "microgrid_stabilise_series.parquet.</p>")
    return "\n".join(parts)
