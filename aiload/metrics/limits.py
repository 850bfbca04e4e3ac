"""Interconnection limits and the check of a power series against them.

What a utility writes into an interconnection agreement for a large flexible load: a
power range, ramp-rate limits (MW/min, or % of the contracted capacity per minute) and
limits on oscillation amplitude in frequency bands. Limits are in grid units (MW); the
series may be in W, kW or MW.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from aiload.errors import InputError
from aiload.metrics._input import PowerInput, as_power
from aiload.metrics.ramps import ramp_rates_kw_per_s, resolution_note, window_seconds
from aiload.metrics.spectrum import band_label, band_note, band_rms_kw, welch_psd

__all__ = ["Limits", "check", "VIOLATION_COLUMNS"]

#: columns of the table :func:`check` returns
VIOLATION_COLUMNS = ["start", "end", "quantity", "value", "limit", "unit", "note"]


def _non_negative(name: str, value: float | None) -> None:
    if value is not None and not (np.isfinite(value) and value >= 0):
        raise InputError(f"Limits.{name}: got {value!r}; expected a finite number >= 0 or None.")


@dataclass(frozen=True)
class Limits:
    """Limits a power series must respect (grid units).

    Parameters
    ----------
    p_min_mw, p_max_mw : float, optional
        Allowed power range [MW].
    ramp_up_mw_per_min, ramp_down_mw_per_min : float, optional
        Largest upward / downward ramp over ``ramp_window`` [MW/min] (magnitudes).
    ramp_pct_per_min : float, optional
        Largest ramp either way as a share of ``capacity_mw`` per minute [%/min].
    capacity_mw : float, optional
        Contracted capacity the percentage refers to [MW].
    ramp_window : str
        Window ``delta`` of the ramp ``[P(t) - P(t - delta)] / delta`` (default ``"1min"``).
    oscillation_mw : tuple of (float, float, float)
        ``(low_hz, high_hz, amplitude_mw)``: largest amplitude of the oscillation in the
        band, as the peak of a sine with the band's RMS [MW].

    Examples
    --------
    >>> Limits(p_max_mw=100.0, ramp_pct_per_min=10.0, capacity_mw=100.0).ramp_pct_per_min
    10.0
    """

    p_min_mw: float | None = None
    p_max_mw: float | None = None
    ramp_up_mw_per_min: float | None = None
    ramp_down_mw_per_min: float | None = None
    ramp_pct_per_min: float | None = None
    capacity_mw: float | None = None
    ramp_window: str = "1min"
    oscillation_mw: tuple[tuple[float, float, float], ...] = ()

    def __post_init__(self) -> None:
        for name in (
            "p_min_mw",
            "p_max_mw",
            "ramp_up_mw_per_min",
            "ramp_down_mw_per_min",
            "ramp_pct_per_min",
            "capacity_mw",
        ):
            _non_negative(name, getattr(self, name))
        if self.p_min_mw is not None and self.p_max_mw is not None and self.p_min_mw > self.p_max_mw:
            raise InputError(
                f"Limits: p_min_mw={self.p_min_mw} is above p_max_mw={self.p_max_mw}; "
                "expected p_min_mw <= p_max_mw."
            )
        if self.ramp_pct_per_min is not None and not self.capacity_mw:
            raise InputError(
                f"Limits: ramp_pct_per_min={self.ramp_pct_per_min} needs capacity_mw (> 0), the "
                "capacity the percentage refers to; got capacity_mw="
                f"{self.capacity_mw!r}."
            )
        window_seconds(self.ramp_window)
        bands = tuple(tuple(b) for b in self.oscillation_mw)
        for band in bands:
            if len(band) != 3 or not (0 <= band[0] < band[1]) or not band[2] >= 0:
                raise InputError(
                    f"Limits.oscillation_mw: got {band!r}; expected (low_hz, high_hz, "
                    "amplitude_mw) with 0 <= low_hz < high_hz and amplitude_mw >= 0."
                )
        object.__setattr__(self, "oscillation_mw", bands)


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """(first, last) positions of each run of True."""
    edges = np.diff(np.concatenate(([0], mask.astype(np.int8), [0])))
    return list(zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1))


def _exceed(times, values, mask, quantity, limit, unit, worst) -> list[dict]:
    out = []
    for a, b in _runs(mask):
        segment = values[a : b + 1]
        out.append(
            {
                "start": times[a],
                "end": times[b],
                "quantity": quantity,
                "value": float(worst(segment)),
                "limit": float(limit),
                "unit": unit,
                "note": f"{b - a + 1} value(s) in a row",
            }
        )
    return out


def _ramp_checks(x: PowerInput, limits: Limits) -> list[dict]:
    checks = []
    if limits.ramp_up_mw_per_min is not None:
        checks.append(("ramp_up", limits.ramp_up_mw_per_min, f"({limits.ramp_window})"))
    if limits.ramp_down_mw_per_min is not None:
        checks.append(("ramp_down", limits.ramp_down_mw_per_min, f"({limits.ramp_window})"))
    if limits.ramp_pct_per_min is not None:
        pct_limit = limits.ramp_pct_per_min / 100.0 * limits.capacity_mw
        share = f"({limits.ramp_window}, {limits.ramp_pct_per_min:g} % of {limits.capacity_mw:g} MW)"
        checks += [("ramp_up", pct_limit, share), ("ramp_down", pct_limit, share)]
    if not checks:
        return []
    window_s = window_seconds(limits.ramp_window)
    note = resolution_note(x, window_s)
    if note is not None:
        base = {"start": x.index[0], "end": x.index[-1], "value": np.nan, "unit": "MW/min"}
        return [
            {**base, "quantity": f"{q} {label}", "limit": lim, "note": f"cannot be checked: {note}"}
            for q, lim, label in checks
        ]
    keep = x.t_s >= window_s * (1 - 1e-9)
    _, rate_kw_s = ramp_rates_kw_per_s(x, window_s)
    rate = rate_kw_s * 60.0 / 1e3  # kW/s -> MW/min
    times = x.index[keep]
    out = []
    for quantity, limit, label in checks:
        if quantity == "ramp_up":
            out += _exceed(times, rate, rate > limit, f"ramp_up {label}", limit, "MW/min", np.max)
        else:
            out += _exceed(times, -rate, -rate > limit, f"ramp_down {label}", limit, "MW/min", np.max)
    return out


def _oscillation_checks(x: PowerInput, limits: Limits) -> list[dict]:
    if not limits.oscillation_mw:
        return []
    freq, psd, segment_s = welch_psd(x)
    out = []
    for lo, hi, amplitude_mw in limits.oscillation_mw:
        quantity = f"oscillation {band_label((lo, hi))}"
        note = band_note((lo, hi), 1.0 / x.step_s, segment_s)
        base = {"start": x.index[0], "end": x.index[-1], "quantity": quantity,
                "limit": amplitude_mw, "unit": "MW"}
        if note is not None:
            out.append({**base, "value": np.nan, "note": f"cannot be checked: {note}"})
            continue
        value = np.sqrt(2.0) * band_rms_kw(freq, psd, (lo, hi)) / 1e3
        if value > amplitude_mw:
            out.append({**base, "value": value, "note": "whole series (Welch)"})
    return out


def check(
    power: pd.Series | pd.DataFrame,
    limits: Limits,
    *,
    unit: str | None = None,
    kind: str = "auto",
) -> pd.DataFrame:
    """Every violation of ``limits`` by ``power``.

    Parameters
    ----------
    power : pandas.Series
        Power [W, kW or MW] (see :func:`aiload.metrics.summary`).
    limits : Limits
        The limits [MW, MW/min, %/min].
    unit, kind
        As in :func:`aiload.metrics.summary`.

    Returns
    -------
    pandas.DataFrame
        One row per violation, with columns ``start, end`` (first and last offending label;
        consecutive offending values form one violation), ``quantity``, ``value`` (the worst
        value in grid units), ``limit``, ``unit`` and ``note``. A limit the sampling cannot
        check (a 1-min ramp on hourly data) gives a row with ``value`` NaN and the reason.
        Empty when everything is within the limits.
    """
    if not isinstance(limits, Limits):
        raise InputError(f"check: limits must be an aiload.metrics.Limits, got {type(limits).__name__}.")
    x = as_power(power, unit=unit, kind=kind)
    p_mw = x.p_kw / 1e3
    rows: list[dict] = []
    if limits.p_max_mw is not None:
        high = p_mw > limits.p_max_mw
        rows += _exceed(x.index, p_mw, high, "power above p_max", limits.p_max_mw, "MW", np.max)
    if limits.p_min_mw is not None:
        low = p_mw < limits.p_min_mw
        rows += _exceed(x.index, p_mw, low, "power below p_min", limits.p_min_mw, "MW", np.min)
    rows += _ramp_checks(x, limits)
    rows += _oscillation_checks(x, limits)
    table = pd.DataFrame(rows, columns=VIOLATION_COLUMNS)
    return table.sort_values("start", kind="stable").reset_index(drop=True) if rows else table
