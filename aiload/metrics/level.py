"""Level figures: percentiles, peak, load factor, energy, time above a level, duration curve.

Interval-mean series are integrated exactly (each value holds for its interval); point
samples are joined by straight lines, so energy is the trapezoid rule over the real time
steps, as in LLM-PowerTrace: ``E = sum(0.5 (P_k + P_k+1) dt_k)``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from aiload.metrics._input import PowerInput, as_power
from aiload.metrics._table import row, unavailable
from aiload.timeseries import energy_kwh as _interval_energy_kwh

__all__ = [
    "energy_kwh",
    "cumulative_energy_kwh",
    "hours_above_kw",
    "load_duration_curve",
    "level_rows",
]


def energy_kwh(x: PowerInput) -> float:
    """Energy of the whole series [kWh]: interval-exact or trapezoid on point samples."""
    if x.kind == "intervals":
        return _interval_energy_kwh(x.p_kw, x.step_s)
    return float(np.trapezoid(x.p_kw, x.t_s) / 3600.0)


def cumulative_energy_kwh(x: PowerInput, at_s: np.ndarray) -> np.ndarray:
    """Energy from the first label to each time in ``at_s`` [kWh] (exact for the model).

    Parameters
    ----------
    x : PowerInput
        The series.
    at_s : numpy.ndarray
        Times from the first label [s], within ``[0, span_s]``.
    """
    at_s = np.asarray(at_s, dtype=np.float64)
    if x.kind == "intervals":
        # a step function integrates to a piecewise-linear energy curve: interp is exact
        knots = np.append(x.t_s, x.t_s[-1] + x.step_s)
        cum = np.concatenate(([0.0], np.cumsum(x.p_kw * x.step_s)))
        return np.interp(at_s, knots, cum) / 3600.0
    t, p = x.t_s, x.p_kw
    cum = np.concatenate(([0.0], np.cumsum(0.5 * (p[1:] + p[:-1]) * np.diff(t))))
    k = np.clip(np.searchsorted(t, at_s, side="right") - 1, 0, len(t) - 2)
    dt = at_s - t[k]
    p_at = p[k] + (p[k + 1] - p[k]) * dt / (t[k + 1] - t[k])
    return (cum[k] + 0.5 * (p[k] + p_at) * dt) / 3600.0


def hours_above_kw(x: PowerInput, level_kw: np.ndarray | float) -> np.ndarray:
    """Time the power is at or above each level [h].

    For point samples the straight line between samples is followed, so a crossing inside
    a step counts the exact part of the step above the level.
    """
    levels = np.atleast_1d(np.asarray(level_kw, dtype=np.float64))
    out = np.empty(levels.size)
    if x.kind == "intervals":
        for i, level in enumerate(levels):
            out[i] = np.count_nonzero(x.p_kw >= level) * x.step_s / 3600.0
        return out
    p0, p1, dt = x.p_kw[:-1], x.p_kw[1:], np.diff(x.t_s)
    lo, hi = np.minimum(p0, p1), np.maximum(p0, p1)
    spread = np.where(hi > lo, hi - lo, 1.0)
    for i, level in enumerate(levels):
        share = np.where(hi > lo, np.clip((hi - level) / spread, 0.0, 1.0), (lo >= level) * 1.0)
        out[i] = float(np.sum(share * dt)) / 3600.0
    return out


def load_duration_curve(
    power: pd.Series | pd.DataFrame, *, unit: str | None = None, kind: str = "auto", points: int = 400
) -> pd.Series:
    """Load-duration curve: the power reached or exceeded for a given number of hours.

    Parameters
    ----------
    power : pandas.Series
        Power [W, kW or MW] (see :func:`aiload.metrics.summary`).
    unit : str, optional
        Unit of ``power``; inferred from a ``_w``/``_kw``/``_mw`` name suffix if omitted.
    kind : {"auto", "intervals", "samples"}
        What a value means (see :func:`aiload.metrics.summary`).
    points : int
        Number of levels evaluated for point samples (interval series use every value).

    Returns
    -------
    pandas.Series
        Power [kW] named ``power_kw``, indexed by the hours at or above it (``hours_h``),
        decreasing power with increasing hours.
    """
    x = as_power(power, unit=unit, kind=kind)
    if x.kind == "intervals":
        values = np.sort(x.p_kw)[::-1]
        hours = np.arange(1, values.size + 1) * x.step_s / 3600.0
    else:
        values = np.linspace(x.p_kw.max(), x.p_kw.min(), points)
        hours = hours_above_kw(x, values)
    return pd.Series(values, index=pd.Index(hours, name="hours_h"), name="power_kw")


def level_rows(x: PowerInput, fractions: tuple[float, ...]) -> list[dict]:
    """Level figures of ``x`` as table rows (see :func:`aiload.metrics.summary`)."""
    p = x.p_kw
    energy = energy_kwh(x)
    mean_kw = energy * 3600.0 / x.span_s
    peak_kw = float(p.max())
    g = "level"
    rows = [
        row(g, "duration_h", x.span_s / 3600.0, "h"),
        row(g, "energy_kwh", energy, "kWh"),
        row(g, "mean_kw", mean_kw, "kW"),
        row(g, "median_kw", np.median(p), "kW"),
    ]
    for q in (90, 95, 99):
        rows.append(row(g, f"p{q}_kw", np.percentile(p, q), "kW"))
    rows += [
        row(g, "max_kw", peak_kw, "kW"),
        row(g, "min_kw", p.min(), "kW"),
        row(g, "std_kw", p.std(), "kW"),
        row(g, "load_factor", mean_kw / peak_kw, "1") if peak_kw > 0 else
        unavailable(g, "load_factor", "1", "", "the peak is 0 kW: mean / peak is undefined"),
        row(g, "peak_to_average", peak_kw / mean_kw, "1") if mean_kw > 0 else
        unavailable(g, "peak_to_average", "1", "", "the mean is 0 kW: peak / mean is undefined"),
    ]
    hours = hours_above_kw(x, np.asarray(fractions) * peak_kw)
    for frac, h in zip(fractions, hours):
        rows.append(row("billing", "hours_above_fraction_of_peak_h", h, "h", f"{frac:.0%}"))
    return rows
