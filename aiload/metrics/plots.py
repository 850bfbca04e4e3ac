"""The usual pictures of a load, each returned as a :class:`matplotlib.figure.Figure`.

Figures are built with :class:`~matplotlib.figure.Figure` directly, so nothing global
(pyplot's figure list, ``rcParams``) changes; save them with ``fig.savefig(path)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
from matplotlib.figure import Figure

from aiload.errors import InputError
from aiload.metrics._input import PowerInput, as_power, common_unit
from aiload.metrics._table import window_label
from aiload.metrics.level import hours_above_kw
from aiload.metrics.ramps import ramp_rates_kw_per_s, resolution_note, window_seconds
from aiload.metrics.spectrum import DEFAULT_BANDS_HZ, band_label, band_note, welch_psd
from aiload.metrics.summary import DEFAULT_WINDOWS

__all__ = [
    "plot_percentile_bands",
    "plot_calendar_bands",
    "plot_ramp_histogram",
    "plot_load_duration",
    "plot_psd",
    "plot_comparison",
]

#: colour-blind-safe palette (Okabe-Ito)
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")
_BAND = "#0072B2"
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def _figure(ncols: int = 1, width: float = 7.0, height: float = 3.6) -> tuple[Figure, list]:
    fig = Figure(figsize=(width, height), dpi=90, layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=False)[0].tolist()
    for ax in axes:
        ax.grid(True, alpha=0.3, linewidth=0.6)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    return fig, axes


def _power_scale(peak_kw: float) -> tuple[float, str]:
    """Factor from kW and unit label that keep the axis numbers readable."""
    if peak_kw >= 1e4:
        return 1e-3, "MW"
    if peak_kw < 1.0:
        return 1e3, "W"
    return 1.0, "kW"


def _time_axis(x: PowerInput) -> tuple[np.ndarray, str]:
    """x-coordinates and their label: wall-clock dates or elapsed minutes/hours."""
    if x.absolute:
        return x.index.tz_localize(None).to_numpy(), f"time ({x.index.tz})"
    if x.span_s > 3 * 3600:
        return x.t_s / 3600.0, "elapsed time [h]"
    return x.t_s / 60.0, "elapsed time [min]"


def date_axis(ax, maxticks: int = 8) -> None:
    """Readable wall-clock ticks on ``ax``'s x axis: at most ``maxticks`` labels, each naming only
    what changes (hours within a day, days within a month), the rest once at the axis' end."""
    locator = AutoDateLocator(minticks=3, maxticks=maxticks)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(ConciseDateFormatter(locator))


def _series_list(series, unit: str | None, kind: str = "auto") -> list[tuple[str, PowerInput]]:
    if isinstance(series, (pd.Series, pd.DataFrame)):
        items = {str(getattr(series, "name", None) or "power"): series}
    elif isinstance(series, Mapping):
        items = dict(series)
    else:
        items = {str(s.name): s for s in series}
    if not items:
        raise InputError("expected at least one power series to plot, got none.")
    plain = [s if isinstance(s, pd.Series) else s.iloc[:, 0] for s in items.values()]
    shared = common_unit(plain, unit)
    return [(str(name), as_power(s, unit=shared, kind=kind, what=str(name))) for name, s in items.items()]


def plot_percentile_bands(
    replicates: pd.DataFrame | Sequence[pd.Series],
    *,
    unit: str | None = None,
    percentiles: tuple[float, float, float, float, float] = (5, 25, 50, 75, 95),
    title: str | None = None,
) -> Figure:
    """A series as percentile bands across replicates (runs, nodes, Monte Carlo draws).

    Parameters
    ----------
    replicates : pandas.DataFrame or sequence of pandas.Series
        One column (or series) per replicate, all on the same index [W, kW or MW].
    unit : str, optional
        Unit of the values; inferred from ``_w``/``_kw``/``_mw`` column names if omitted.
    percentiles : 5 floats
        Outer band low, inner band low, median, inner band high, outer band high [%].
    title : str, optional
        Axes title.
    """
    frame = replicates if isinstance(replicates, pd.DataFrame) else pd.concat(list(replicates), axis=1)
    if frame.shape[1] < 2:
        raise InputError(
            f"plot_percentile_bands: got {frame.shape[1]} replicate(s); expected at least 2 "
            "columns on one index."
        )
    if frame.isna().any().any():
        raise InputError(
            "plot_percentile_bands: the replicates do not share one index (NaN after "
            "aligning them); interpolate them onto a common index first."
        )
    shared = common_unit([frame[c].rename(c) for c in frame.columns], unit)
    first = as_power(frame.iloc[:, 0].rename(str(frame.columns[0])), unit=shared)
    values = np.column_stack(
        [as_power(frame[c].rename(str(c)), unit=shared).p_kw for c in frame.columns]
    )
    lo, q1, mid, q3, hi = np.percentile(values, percentiles, axis=1)
    factor, label = _power_scale(float(hi.max()))
    fig, (ax,) = _figure()
    t, xlabel = _time_axis(first)
    ax.fill_between(t, lo * factor, hi * factor, color=_BAND, alpha=0.18, linewidth=0,
                    label=f"P{percentiles[0]:g}–P{percentiles[4]:g}")
    ax.fill_between(t, q1 * factor, q3 * factor, color=_BAND, alpha=0.38, linewidth=0,
                    label=f"P{percentiles[1]:g}–P{percentiles[3]:g}")
    ax.plot(t, mid * factor, color=_BAND, linewidth=1.1, label="median")
    if first.absolute:
        date_axis(ax)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(f"power [{label}]")
    ax.set_title(title or f"{values.shape[1]} replicates")
    fig.legend(loc="outside lower center", ncols=3, frameon=False, fontsize=8)
    return fig


def plot_calendar_bands(
    power: pd.Series | pd.DataFrame,
    *,
    unit: str | None = None,
    percentiles: tuple[float, float, float, float, float] = (5, 25, 50, 75, 95),
    title: str | None = None,
    kind: str = "auto",
    tz: str | None = None,
) -> Figure:
    """Hour-of-day and day-of-week percentile bands of a series on absolute time.

    Parameters
    ----------
    power : pandas.Series
        Power [W, kW or MW] on a tz-aware DatetimeIndex (hours and days in its time zone).
    unit : str, optional
        Unit of ``power``.
    tz : str, optional
        Time zone whose clock the hours and days are counted in (an IANA name such as
        ``"America/New_York"``, or a fixed offset such as ``"Etc/GMT+5"``); None: the series'
        own. The data are not changed, only where each interval falls.
    kind : {"auto", "intervals", "samples"}
        What a value means (see :func:`aiload.metrics.summary`).
    percentiles : 5 floats
        Outer low, inner low, median, inner high, outer high [%].
    title : str, optional
        Figure title.
    """
    x = as_power(power, unit=unit, kind=kind)
    if not x.absolute:
        raise InputError(
            "plot_calendar_bands: needs absolute time (a tz-aware DatetimeIndex), got elapsed "
            "time; add a start time, e.g. series.index = start + series.index."
        )
    factor, label = _power_scale(float(x.p_kw.max()))
    index = x.index
    if tz is not None:
        try:
            index = index.tz_convert(tz)
        except Exception as exc:  # pytz/zoneinfo raise several types for an unknown zone
            raise InputError(
                f"plot_calendar_bands: unknown time zone tz={tz!r} ({exc}); expected an IANA name "
                "such as 'America/New_York' or a fixed offset such as 'Etc/GMT+5'."
            ) from None
    s = pd.Series(x.p_kw * factor, index=index)
    fig, axes = _figure(2, width=8.5)
    groups = ((s.index.hour, np.arange(24), "hour of day"), (s.index.dayofweek, np.arange(7), "day of week"))
    for ax, (key, positions, name) in zip(axes, groups):
        stats = s.groupby(key).quantile(np.asarray(percentiles) / 100).unstack().reindex(positions)
        cols = stats.columns
        ax.fill_between(positions, stats[cols[0]], stats[cols[4]], color=_BAND, alpha=0.18,
                        step="mid", linewidth=0, label=f"P{percentiles[0]:g}–P{percentiles[4]:g}")
        ax.fill_between(positions, stats[cols[1]], stats[cols[3]], color=_BAND, alpha=0.38,
                        step="mid", linewidth=0, label=f"P{percentiles[1]:g}–P{percentiles[3]:g}")
        ax.plot(positions, stats[cols[2]], color=_BAND, drawstyle="steps-mid", label="median")
        ax.set_xlabel(f"{name} ({index.tz})")
        ax.set_ylabel(f"power [{label}]")
    axes[0].set_xticks(range(0, 24, 3))
    axes[1].set_xticks(range(7), _DAYS)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=3,
               frameon=False, fontsize=8)
    fig.suptitle(title or x.name)
    return fig


def plot_ramp_histogram(
    power: pd.Series | pd.DataFrame,
    *,
    windows: Sequence[str | float] = DEFAULT_WINDOWS,
    unit: str | None = None,
    bins: int = 60,
    title: str | None = None,
    kind: str = "auto",
) -> Figure:
    """Histogram of ramp rates ``[P(t) - P(t - w)] / w`` for each window ``w`` the sampling allows.

    Parameters
    ----------
    power : pandas.Series
        Power [W, kW or MW].
    windows : sequence of str or float
        Ramp windows (``"5s"``, ``"1min"`` or seconds) [s]; those the sampling cannot
        support are listed as not available on the figure.
    unit : str, optional
        Unit of ``power``.
    kind : {"auto", "intervals", "samples"}
        What a value means (see :func:`aiload.metrics.summary`).
    bins : int
        Number of bins, shared by all windows.
    title : str, optional
        Axes title.
    """
    x = as_power(power, unit=unit, kind=kind)
    rates, skipped = {}, []
    for w in windows:
        w_s = window_seconds(w)
        if resolution_note(x, w_s) is None:
            rates[window_label(w_s)] = ramp_rates_kw_per_s(x, w_s)[1]
        else:
            skipped.append(window_label(w_s))
    if not rates:
        raise InputError(
            f"plot_ramp_histogram: no window in {list(windows)} is supported by a series with "
            f"step {x.step_s:g} s over {x.span_s:g} s; give longer windows."
        )
    extent = max(float(np.max(np.abs(r))) for r in rates.values()) or 1.0
    factor, label = _power_scale(extent * 60)
    fig, axes = _figure(len(rates), width=2.2 + 2.3 * len(rates), height=3.2)
    for ax, colour, (name, rate) in zip(axes, PALETTE, rates.items()):
        # each window gets its own range: a 15-min ramp is far gentler than a 5-s one
        reach = float(np.max(np.abs(rate))) * factor or 1.0
        ax.hist(rate * factor, bins=np.linspace(-reach, reach, bins + 1), color=colour, alpha=0.85)
        ax.set_yscale("log")
        ax.set_title(f"{name} window", fontsize=9)
        ax.set_xlabel(f"ramp rate [{label}/s]")
        ax.text(0.98, 0.97, f"{rate.size:,} values", transform=ax.transAxes, ha="right",
                va="top", fontsize=7, color="0.35")
    axes[0].set_ylabel("count")
    note = ("  (not available at this sampling: " + ", ".join(skipped) + ")") if skipped else ""
    fig.suptitle((title or f"ramp rates: {x.name}") + note, fontsize=10)
    return fig


def _hours(seconds: float) -> str:
    hours = seconds / 3600.0
    return f"{hours:,.0f} h" if hours >= 10 else f"{hours:.3g} h"


def _duration_points(x: PowerInput) -> tuple[np.ndarray, np.ndarray]:
    """(share of time at or above [%], power [kW]) of the load-duration curve."""
    if x.kind == "intervals":
        values = np.sort(x.p_kw)[::-1]
        share = np.arange(1, values.size + 1) / values.size * 100.0
        return share, values
    values = np.linspace(x.p_kw.max(), x.p_kw.min(), 400)
    return hours_above_kw(x, values) * 3600.0 / x.span_s * 100.0, values


def plot_load_duration(
    power: pd.Series | Mapping[str, pd.Series] | Sequence[pd.Series],
    *,
    unit: str | None = None,
    title: str | None = None,
    kind: str = "auto",
) -> Figure:
    """Load-duration curve(s): the power reached or exceeded for a share of the time.

    Parameters
    ----------
    power : pandas.Series, mapping name -> Series, or sequence of Series
        One or several power series [W, kW or MW]; all in one unit.
    unit : str, optional
        Unit of the values; inferred from name suffixes if omitted.
    kind : {"auto", "intervals", "samples"}
        What the values mean (see :func:`aiload.metrics.summary`).
    title : str, optional
        Axes title.
    """
    items = _series_list(power, unit, kind)
    factor, label = _power_scale(max(float(x.p_kw.max()) for _, x in items))
    fig, (ax,) = _figure()
    for colour, (name, x) in zip(PALETTE, items):
        share, values = _duration_points(x)
        ax.plot(share, values * factor, color=colour, linewidth=1.5,
                label=f"{name} ({_hours(x.span_s)})")
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of time at or above [%]")
    ax.set_ylabel(f"power [{label}]")
    ax.legend(frameon=False, fontsize=8)
    ax.set_title(title or "load-duration curve")
    return fig


def plot_psd(
    power: pd.Series | pd.DataFrame,
    *,
    unit: str | None = None,
    bands: Sequence[tuple[float, float]] = DEFAULT_BANDS_HZ,
    segment_s: float | None = None,
    title: str | None = None,
    kind: str = "auto",
) -> Figure:
    """Power spectral density (Welch) with the oscillation bands shaded.

    Bands the sampling cannot resolve are hatched grey and marked "n/a".

    Parameters
    ----------
    power : pandas.Series
        Power [W, kW or MW].
    unit : str, optional
        Unit of ``power``.
    kind : {"auto", "intervals", "samples"}
        What a value means (see :func:`aiload.metrics.summary`).
    bands : sequence of (float, float)
        Bands to shade [Hz].
    segment_s : float, optional
        Welch segment length [s].
    title : str, optional
        Axes title.
    """
    x = as_power(power, unit=unit, kind=kind)
    freq, psd, seg = welch_psd(x, segment_s)
    fig, (ax,) = _figure()
    ax.loglog(freq[1:], psd[1:], color="0.15", linewidth=1.0)
    nyquist = 0.5 / x.step_s
    top = max(nyquist, max(b[1] for b in bands))
    ax.set_xlim(freq[1], top)
    for colour, band in zip(PALETTE[1:], bands):
        missing = band_note(band, 1.0 / x.step_s, seg) is not None
        if missing:
            ax.axvspan(*band, facecolor="none", edgecolor="0.6", hatch="//", linewidth=0)
        else:
            ax.axvspan(*band, color=colour, alpha=0.15, linewidth=0)
        text = band_label(band) + (" n/a" if missing else "")
        ax.text(np.sqrt(band[0] * band[1]), 0.97, text, transform=ax.get_xaxis_transform(),
                ha="center", va="top", fontsize=7, color="0.3")
    ax.axvline(nyquist, color="0.4", linestyle="--", linewidth=0.8)
    ax.text(nyquist, 0.03, " Nyquist", transform=ax.get_xaxis_transform(), fontsize=7, color="0.3")
    ax.set_xlabel("frequency [Hz]")
    ax.set_ylabel("PSD [kW²/Hz]")
    ax.set_title(title or f"power spectral density: {x.name}")
    return fig


def plot_comparison(
    series: Mapping[str, pd.Series] | Sequence[pd.Series],
    *,
    unit: str | None = None,
    ramp_window: str | float = "1min",
    title: str | None = None,
    kind: str = "auto",
) -> Figure:
    """Several series side by side: power over time, load-duration curve, ramp distribution.

    Parameters
    ----------
    series : mapping name -> Series, or sequence of Series
        The series to compare (e.g. training vs inference, or before/after a battery) [W,
        kW or MW], all in one unit. Time is shown as elapsed from each series' start.
    unit : str, optional
        Unit of the values.
    kind : {"auto", "intervals", "samples"}
        What the values mean (see :func:`aiload.metrics.summary`).
    ramp_window : str or float
        Window of the ramp distribution (right panel) [s].
    title : str, optional
        Figure title.
    """
    items = _series_list(series, unit, kind)
    factor, label = _power_scale(max(float(x.p_kw.max()) for _, x in items))
    w_s = window_seconds(ramp_window)
    fig, (ax_t, ax_ldc, ax_r) = _figure(3, width=11.0, height=3.6)
    long = max(x.span_s for _, x in items) > 3 * 3600
    for colour, (name, x) in zip(PALETTE, items):
        t = x.t_s / (3600.0 if long else 60.0)
        ax_t.plot(t, x.p_kw * factor, color=colour, linewidth=0.9, label=name)
        share, values = _duration_points(x)
        ax_ldc.plot(share, values * factor, color=colour, linewidth=1.5)
        if resolution_note(x, w_s) is None:
            rate = np.sort(np.abs(ramp_rates_kw_per_s(x, w_s)[1]))[::-1]
            exceed = np.arange(1, rate.size + 1) / rate.size * 100.0
            ax_r.plot(rate * factor * 60.0, exceed, color=colour, linewidth=1.5)
    ax_t.set_xlabel("elapsed time [h]" if long else "elapsed time [min]")
    ax_t.set_ylabel(f"power [{label}]")
    ax_t.legend(frameon=False, fontsize=8)
    ax_ldc.set_xlim(0, 100)
    ax_ldc.set_xlabel("share of time at or above [%]")
    ax_ldc.set_ylabel(f"power [{label}]")
    ax_r.set_xlabel(f"|ramp| over {window_label(w_s)} [{label}/min]")
    ax_r.set_ylabel("share of time exceeded [%]")
    ax_r.set_yscale("log")
    if title:
        fig.suptitle(title)
    return fig
