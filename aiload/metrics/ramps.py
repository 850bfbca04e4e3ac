"""Ramp rates on real time and swings within rolling windows.

The ramp over a window ``delta`` at time ``t`` is ``R(t) = [P(t) - P(t - delta)] / delta``
with ``P(t - delta)`` linearly interpolated between the readings around it, so irregular
sampling never turns into a fixed row lag (LLM-PowerTrace's definition). It is evaluated
at every label ``t`` with ``t - delta`` inside the series.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from aiload.errors import InputError
from aiload.metrics._input import PowerInput, as_power
from aiload.metrics._table import row, unavailable, window_label

__all__ = ["ramp_rates", "ramp_rates_kw_per_s", "window_seconds", "ramp_rows", "swing_rows", "swings_kw",
           "SECONDS_WINDOWS_S", "ramp_statistics", "dynamic_range", "ramp_duration_curve"]

#: windows of the seconds-scale ramp figures [s] (0.1 s, the finest facility step, to 1 min)
SECONDS_WINDOWS_S = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)

_TOL = 1e-9


def window_seconds(window: str | float | pd.Timedelta) -> float:
    """Length of a window given as ``"5s"``, ``"15min"``, a Timedelta or seconds [s]."""
    if isinstance(window, (int, float, np.integer, np.floating)) and not isinstance(window, bool):
        seconds = float(window)
    else:
        try:
            seconds = pd.Timedelta(window).total_seconds()
        except (ValueError, TypeError):
            raise InputError(
                f"window: got {window!r}; expected a duration such as '5s', '1min', '15min' "
                "or a number of seconds."
            ) from None
    if not seconds > 0:
        raise InputError(f"window: got {window!r}; expected a positive duration.")
    return seconds


def resolution_note(x: PowerInput, window_s: float) -> str | None:
    """Why a window cannot be evaluated on ``x`` (None when it can)."""
    what = "step" if x.kind == "intervals" else "median sampling interval"
    if window_s < x.step_s * (1 - _TOL):
        return f"window {window_label(window_s)} is shorter than the {what} {x.step_s:g} s"
    if window_s > x.t_s[-1] * (1 + _TOL):
        return f"window {window_label(window_s)} is longer than the series ({x.t_s[-1]:g} s)"
    return None


def ramp_rates_kw_per_s(x: PowerInput, window_s: float) -> tuple[np.ndarray, np.ndarray]:
    """Times [s] and ramp rates [kW/s] over ``window_s`` (no resolution check)."""
    keep = x.t_s >= x.t_s[0] + window_s * (1 - _TOL)
    t = x.t_s[keep]
    before = np.interp(np.maximum(t - window_s, 0.0), x.t_s, x.p_kw)
    rate = (x.p_kw[keep] - before) / window_s
    # interpolation round-off on a flat stretch must not count as a ramp
    noise = 1e-9 * float(np.max(np.abs(x.p_kw))) / window_s
    rate[np.abs(rate) <= noise] = 0.0
    return t, rate


def ramp_rates(
    power: pd.Series | pd.DataFrame,
    window: str | float = "1min",
    *,
    unit: str | None = None,
    kind: str = "auto",
) -> pd.Series:
    """Ramp rate ``R(t) = [P(t) - P(t - window)] / window`` on real time [kW/s].

    Parameters
    ----------
    power : pandas.Series
        Power [W, kW or MW] on a tz-aware DatetimeIndex or a TimedeltaIndex.
    window : str or float
        The window ``delta`` (``"5s"``, ``"1min"`` or seconds) [s].
    unit : str, optional
        Unit of ``power``; inferred from a ``_w``/``_kw``/``_mw`` name suffix if omitted.
    kind : {"auto", "intervals", "samples"}
        What a value means (see :func:`aiload.metrics.summary`).

    Returns
    -------
    pandas.Series
        Ramp rate [kW/s] named ``ramp_kw_per_s`` at each label at least ``window`` after the
        first; raises when the sampling is coarser than the window.
    """
    x = as_power(power, unit=unit, kind=kind)
    window_s = window_seconds(window)
    note = resolution_note(x, window_s)
    if note is not None:
        raise InputError(f"ramp_rates: {note}; expected a window the sampling supports.")
    keep = x.t_s >= window_s * (1 - _TOL)
    _, rate = ramp_rates_kw_per_s(x, window_s)
    return pd.Series(rate, index=x.index[keep], name="ramp_kw_per_s")


def ramp_rows(x: PowerInput, windows_s: list[float], threshold_kw_per_s: float | None) -> list[dict]:
    """Ramp figures per window as table rows (see :func:`aiload.metrics.summary`)."""
    g, u = "ramps", "kW/s"
    names = [
        ("ramp_up_p95_kw_per_s", u),
        ("ramp_up_p99_kw_per_s", u),
        ("ramp_down_p99_kw_per_s", u),
        ("ramp_up_max_kw_per_s", u),
        ("ramp_down_max_kw_per_s", u),
        ("ramp_events_per_h", "1/h"),
    ]
    rows: list[dict] = []
    for w in windows_s:
        label = window_label(w)
        note = resolution_note(x, w)
        if note is not None:
            rows += [unavailable(g, n, un, label, note) for n, un in names]
            continue
        _, rate = ramp_rates_kw_per_s(x, w)
        up, down = rate[rate > 0], -rate[rate < 0]
        up_note = "" if up.size else "no upward ramps"
        down_note = "" if down.size else "no downward ramps"
        p95 = float(np.percentile(up, 95)) if up.size else 0.0
        rows += [
            row(g, names[0][0], p95, u, label, up_note),
            row(g, names[1][0], np.percentile(up, 99) if up.size else 0.0, u, label, up_note),
            row(g, names[2][0], np.percentile(down, 99) if down.size else 0.0, u, label, down_note),
            row(g, names[3][0], up.max() if up.size else 0.0, u, label, up_note),
            row(g, names[4][0], down.max() if down.size else 0.0, u, label, down_note),
        ]
        if threshold_kw_per_s is None:
            threshold, how = p95, "threshold = P95 of upward ramps"
        else:
            threshold, how = threshold_kw_per_s, f"threshold = {threshold_kw_per_s:g} kW/s"
        count = np.count_nonzero(rate >= threshold) if (up.size and threshold > 0) else 0
        rows.append(row(g, names[5][0], count / (x.span_s / 3600.0), "1/h", label, how))
    return rows


def swings_kw(x: PowerInput, window_s: float) -> pd.Series:
    """Max minus min of the values whose labels lie within ``window_s`` of each other [kW].

    One value per label at least ``window_s`` after the first; indexed by time [s].
    """
    ns = np.rint(x.t_s * 1e9).astype(np.int64)
    s = pd.Series(x.p_kw, index=pd.to_datetime(ns))
    # closed="both": a window of one step spans two labels, so swing >= |ramp| * window
    roll = s.rolling(pd.Timedelta(seconds=window_s), closed="both")
    swing = (roll.max() - roll.min()).to_numpy()
    keep = x.t_s >= window_s * (1 - _TOL)
    return pd.Series(swing[keep], index=pd.Index(x.t_s[keep], name="t_s"), name="swing_kw")


def swing_rows(x: PowerInput, windows_s: list[float]) -> list[dict]:
    """Largest swing per window as table rows."""
    rows = []
    for w in windows_s:
        label = window_label(w)
        note = resolution_note(x, w)
        if note is not None:
            rows.append(unavailable("swings", "swing_max_kw", "kW", label, note))
        else:
            rows.append(row("swings", "swing_max_kw", swings_kw(x, w).max(), "kW", label))
    return rows


def ramp_statistics(
    power: pd.Series | pd.DataFrame,
    windows: tuple[str | float, ...] = SECONDS_WINDOWS_S,
    *,
    percentiles: tuple[float, ...] = (50.0, 90.0, 99.0, 99.9),
    unit: str | None = None,
    kind: str = "auto",
) -> pd.DataFrame:
    """Upward and downward ramp rates over windows from 0.1 s to minutes, in grid units [MW/s].

    The ramp is :func:`ramp_rates`' ``R(t) = [P(t) - P(t - window)] / window`` at every label.
    Upward figures are of ``{R > 0}``, downward ones of the magnitudes ``{-R : R < 0}`` (the
    convention of :func:`aiload.metrics.summary`); a direction without ramps gives 0.

    Parameters
    ----------
    power : pandas.Series
        Power [W, kW or MW] on a tz-aware DatetimeIndex or a TimedeltaIndex.
    windows : tuple of str or float
        Ramp windows (``"1s"`` or seconds) [s].
    percentiles : tuple of float
        Percentiles of each direction, in [0, 100] [%].
    unit, kind
        As in :func:`aiload.metrics.summary`.

    Returns
    -------
    pandas.DataFrame
        One row per window (index ``window_s`` [s]); columns ``up_max_mw_per_s``,
        ``down_max_mw_per_s``, ``up_p<q>_mw_per_s``, ``down_p<q>_mw_per_s`` [MW/s],
        ``available`` and ``note`` (a window the sampling cannot support: NaN and the reason).

    Examples
    --------
    >>> import pandas as pd
    >>> idx = pd.to_timedelta([0.0, 1.0, 2.0, 3.0], unit="s")
    >>> t = ramp_statistics(pd.Series([0.0, 1.0, 2.0, 2.0], index=idx, name="p_mw"), (1.0,))
    >>> float(t.loc[1.0, "up_max_mw_per_s"])
    1.0
    """
    x = as_power(power, unit=unit, kind=kind)
    for q in percentiles:
        if not 0.0 <= q <= 100.0:
            raise InputError(f"ramp_statistics(percentiles=): got {q!r}; expected values in [0, 100].")
    qs = [f"{q:g}".replace(".", "_") for q in percentiles]
    rows = []
    for window in windows:
        w = window_seconds(window)
        rec: dict = {"window_s": w}
        note = resolution_note(x, w)
        if note is not None:
            rec |= {"up_max_mw_per_s": np.nan, "down_max_mw_per_s": np.nan}
            rec |= {f"{d}_p{q}_mw_per_s": np.nan for d in ("up", "down") for q in qs}
            rec |= {"available": False, "note": note}
            rows.append(rec)
            continue
        _, rate = ramp_rates_kw_per_s(x, w)
        rate = rate / 1e3
        up, down = rate[rate > 0], -rate[rate < 0]
        rec["up_max_mw_per_s"] = float(up.max()) if up.size else 0.0
        rec["down_max_mw_per_s"] = float(down.max()) if down.size else 0.0
        for direction, values in (("up", up), ("down", down)):
            pct = np.percentile(values, percentiles) if values.size else np.zeros(len(qs))
            for q, v in zip(qs, np.atleast_1d(pct)):
                rec[f"{direction}_p{q}_mw_per_s"] = float(v)
        rec |= {"available": True, "note": ""}
        rows.append(rec)
    return pd.DataFrame(rows).set_index("window_s")


def ramp_duration_curve(
    power: pd.Series | pd.DataFrame, window: str | float = 1.0, *, unit: str | None = None,
    kind: str = "auto",
) -> pd.DataFrame:
    """Ramp magnitudes sorted from the largest, with the share of time they are exceeded.

    Returns
    -------
    pandas.DataFrame
        Columns ``exceedance`` (share of the ramp labels with a larger or equal magnitude
        [-]) and ``ramp_mw_per_s`` (|R| over ``window`` [MW/s]), largest first.
    """
    rate = ramp_rates(power, window, unit=unit, kind=kind).to_numpy() / 1e3
    mag = np.sort(np.abs(rate))[::-1]
    share = np.arange(1, mag.size + 1, dtype=np.float64) / mag.size
    return pd.DataFrame({"exceedance": share, "ramp_mw_per_s": mag})


def dynamic_range(
    power: pd.Series | pd.DataFrame,
    windows: tuple[str | float, ...] = (1.0, 10.0, 60.0),
    *,
    unit: str | None = None,
    kind: str = "auto",
) -> pd.DataFrame:
    """Short-term dynamic range: the largest ``max - min`` of the power within a window.

    The swing of :func:`swings_kw` (labels within ``window`` of each other, both ends
    included), the largest over the series, in MW and as a share of the series' peak — the
    "dynamic range" limit utilities state for large loads (Choukse et al. 2025,
    arXiv:2508.14318).

    Returns
    -------
    pandas.DataFrame
        Index ``window_s`` [s]; columns ``range_mw`` [MW], ``range_share_of_peak`` [-],
        ``available``, ``note``.
    """
    x = as_power(power, unit=unit, kind=kind)
    peak_kw = float(np.max(x.p_kw))
    rows = []
    for window in windows:
        w = window_seconds(window)
        note = resolution_note(x, w)
        if note is not None:
            rows.append({"window_s": w, "range_mw": np.nan, "range_share_of_peak": np.nan,
                         "available": False, "note": note})
            continue
        top = float(swings_kw(x, w).max())
        rows.append({"window_s": w, "range_mw": top / 1e3,
                     "range_share_of_peak": top / peak_kw if peak_kw > 0 else 0.0,
                     "available": True, "note": ""})
    return pd.DataFrame(rows).set_index("window_s")
