"""Oscillation: power spectral density (Welch) and the variance in frequency bands.

Point samples are first interpolated linearly onto a uniform grid at their median
interval; interval means are used as they are. A band is reported only when the sampling
resolves it: its top must not exceed the Nyquist frequency ``fs / 2`` and its bottom must
be at least the frequency resolution ``1 / segment`` of the Welch segments.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import signal

from aiload.errors import InputError
from aiload.metrics._input import PowerInput, as_power
from aiload.metrics._table import row, unavailable

__all__ = ["DEFAULT_BANDS_HZ", "GRID_BANDS_HZ", "power_spectrum", "welch_psd", "band_label",
           "band_rms_kw", "spectrum_rows", "band_fluctuation", "band_variance_kw2"]

#: oscillation bands [Hz] of the summary
DEFAULT_BANDS_HZ = ((0.01, 0.1), (0.1, 1.0), (1.0, 5.0))
#: bands of the seconds-scale figures [Hz]: below 1 Hz (inter-area modes), 1-2.5 Hz (local
#: plant modes) and 2.5-20 Hz (towards torsional / control modes); Choukse et al. 2025,
#: arXiv:2508.14318, who find synchronous training's swings concentrated at 0.2-3 Hz
GRID_BANDS_HZ = ((0.1, 1.0), (1.0, 2.5), (2.5, 20.0))


def _uniform(x: PowerInput) -> tuple[np.ndarray, float]:
    if x.kind == "intervals":
        return x.p_kw, x.step_s
    grid = np.arange(0.0, x.t_s[-1] + x.step_s * 1e-9, x.step_s)
    return np.interp(grid, x.t_s, x.p_kw), x.step_s


def welch_psd(x: PowerInput, segment_s: float | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """Welch PSD of ``x``.

    Returns
    -------
    freq_hz, psd_kw2_per_hz, segment_s
        Frequencies [Hz], one-sided PSD [kW²/Hz] and the segment length used [s].
    """
    values, dt = _uniform(x)
    n = values.size
    if segment_s is None:
        # about 8 segments (50 % overlap) for a steady estimate, but at least 256 points
        nperseg = min(n, max(256, 2 ** int(np.log2(max(n // 4, 1)))))
    else:
        nperseg = min(n, max(2, int(round(segment_s / dt))))
    freq, psd = signal.welch(values, fs=1.0 / dt, nperseg=nperseg, detrend="constant")
    return freq, psd, nperseg * dt


def power_spectrum(
    power: pd.Series | pd.DataFrame,
    *,
    unit: str | None = None,
    kind: str = "auto",
    segment_s: float | None = None,
) -> pd.Series:
    """One-sided power spectral density of a power series (Welch, Hann window) [kW²/Hz].

    Parameters
    ----------
    power : pandas.Series
        Power [W, kW or MW] (see :func:`aiload.metrics.summary`).
    unit : str, optional
        Unit of ``power``; inferred from a ``_w``/``_kw``/``_mw`` name suffix if omitted.
    kind : {"auto", "intervals", "samples"}
        What a value means.
    segment_s : float, optional
        Welch segment length [s]; longer gives finer frequency resolution, noisier estimate.

    Returns
    -------
    pandas.Series
        PSD [kW²/Hz] named ``psd_kw2_per_hz``, indexed by frequency ``freq_hz`` [Hz]
        from 0 to the Nyquist frequency.
    """
    x = as_power(power, unit=unit, kind=kind)
    freq, psd, _ = welch_psd(x, segment_s)
    return pd.Series(psd, index=pd.Index(freq, name="freq_hz"), name="psd_kw2_per_hz")


def band_label(band: tuple[float, float]) -> str:
    """``(0.01, 0.1)`` -> ``'0.01-0.1Hz'``."""
    return f"{band[0]:g}-{band[1]:g}Hz"


def band_note(band: tuple[float, float], fs_hz: float, segment_s: float) -> str | None:
    """Why ``band`` cannot be resolved (None when it can)."""
    lo, hi = band
    if hi > fs_hz / 2 * (1 + 1e-9):
        return f"band top {hi:g} Hz above the Nyquist frequency {fs_hz / 2:g} Hz of the sampling"
    if lo < 1.0 / segment_s * (1 - 1e-9):
        return (
            f"band bottom {lo:g} Hz below the resolution {1 / segment_s:.3g} Hz "
            f"(series or segment of {segment_s:g} s too short)"
        )
    return None


def band_rms_kw(freq: np.ndarray, psd: np.ndarray, band: tuple[float, float]) -> float:
    """RMS of the power fluctuation in ``[lo, hi)`` [kW]: square root of the PSD integral."""
    df = freq[1] - freq[0]
    inside = (freq >= band[0]) & (freq < band[1])
    return float(np.sqrt(np.sum(psd[inside]) * df))


def spectrum_rows(x: PowerInput, bands: tuple[tuple[float, float], ...], n_periods: int = 3) -> list[dict]:
    """Band RMS/amplitude and dominant periods as table rows."""
    g = "oscillation"
    rows: list[dict] = []
    if x.p_kw.size < 8:
        note = f"only {x.p_kw.size} values; a spectrum needs at least 8"
        for band in bands:
            rows.append(unavailable(g, "osc_rms_kw", "kW", band_label(band), note))
        return rows
    freq, psd, segment_s = welch_psd(x)
    fs = 1.0 / x.step_s
    for band in bands:
        label = band_label(band)
        note = band_note(band, fs, segment_s)
        if note is not None:
            rows.append(unavailable(g, "osc_rms_kw", "kW", label, note))
            rows.append(unavailable(g, "osc_amplitude_kw", "kW", label, note))
            continue
        rms = band_rms_kw(freq, psd, band)
        rows.append(row(g, "osc_rms_kw", rms, "kW", label))
        rows.append(row(g, "osc_amplitude_kw", np.sqrt(2.0) * rms, "kW", label, "sine of equal RMS"))
    peaks, _ = signal.find_peaks(psd[1:])
    peaks = peaks + 1
    order = peaks[np.argsort(psd[peaks])[::-1]][:n_periods]
    for rank in range(n_periods):
        label = f"rank {rank + 1}"
        if rank < order.size:
            rows.append(row(g, "dominant_period_s", 1.0 / freq[order[rank]], "s", label))
        else:
            rows.append(unavailable(g, "dominant_period_s", "s", label, "no further spectral peak"))
    return rows


def band_variance_kw2(freq: np.ndarray, psd: np.ndarray, band: tuple[float, float]) -> float:
    """Variance of the fluctuation in ``[lo, hi)``: the Welch PSD summed over the band [kW²]."""
    return band_rms_kw(freq, psd, band) ** 2


def band_fluctuation(
    power: pd.Series | pd.DataFrame,
    bands: tuple[tuple[float, float], ...] = GRID_BANDS_HZ,
    *,
    unit: str | None = None,
    kind: str = "auto",
    segment_s: float | None = None,
) -> pd.DataFrame:
    """Share and amplitude of the power fluctuation in frequency bands (Welch).

    The one-sided Welch PSD (:func:`welch_psd`, Hann window, segment mean removed) is summed
    over each band ``[lo, hi)``: that is the variance of the fluctuation in the band; its
    square root the RMS, ``sqrt(2)·RMS`` the amplitude of a sine of equal RMS, and its ratio
    to the variance at all frequencies above 0 the band's share of the fluctuation energy.
    A band whose top lies above the Nyquist frequency is evaluated up to it (``high_used_hz``
    and a note say so); one that starts above it, or below the resolution of the segments,
    is not available.

    Parameters
    ----------
    power : pandas.Series
        Power [W, kW or MW] (see :func:`aiload.metrics.summary`).
    bands : tuple of (float, float)
        ``(low_hz, high_hz)`` pairs [Hz]; default :data:`GRID_BANDS_HZ`.
    unit, kind
        As in :func:`aiload.metrics.summary`.
    segment_s : float, optional
        Welch segment length [s] (default: about eight segments, at least 256 values).

    Returns
    -------
    pandas.DataFrame
        One row per band: ``band``, ``low_hz``, ``high_hz``, ``high_used_hz`` [Hz],
        ``variance_kw2`` [kW²], ``rms_kw``, ``amplitude_kw`` [kW], ``share`` [-],
        ``available``, ``note``.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> t = np.arange(6000) * 0.1
    >>> p = pd.Series(100 + 3 * np.sin(2 * np.pi * 0.5 * t),
    ...               index=pd.to_timedelta(t, unit="s"), name="p_kw")
    >>> round(float(band_fluctuation(p, ((0.1, 1.0),)).loc[0, "amplitude_kw"]), 2)
    3.0
    """
    x = as_power(power, unit=unit, kind=kind)
    for band in bands:
        if len(band) != 2 or not 0 <= band[0] < band[1]:
            raise InputError(f"bands: got {band!r}; expected (low_hz, high_hz) with 0 <= low < high.")
    if x.p_kw.size < 8:
        raise InputError(f"band_fluctuation: only {x.p_kw.size} values; a spectrum needs at least 8.")
    freq, psd, seg = welch_psd(x, segment_s)
    nyquist = 0.5 / x.step_s
    total = band_variance_kw2(freq, psd, (freq[1], np.inf)) if freq.size > 1 else 0.0
    rows = []
    for lo, hi in bands:
        used = min(hi, nyquist * (1 + 1e-12))
        rec = {"band": band_label((lo, hi)), "low_hz": lo, "high_hz": hi,
               "high_used_hz": min(hi, nyquist)}
        note = band_note((lo, min(hi, nyquist)), 1.0 / x.step_s, seg) if lo < nyquist else (
            f"band bottom {lo:g} Hz at or above the Nyquist frequency {nyquist:g} Hz")
        if note is not None:
            rows.append(rec | {"variance_kw2": np.nan, "rms_kw": np.nan, "amplitude_kw": np.nan,
                               "share": np.nan, "available": False, "note": note})
            continue
        var = band_variance_kw2(freq, psd, (lo, used))
        text = "" if hi <= nyquist else (
            f"evaluated to the Nyquist frequency {nyquist:g} Hz of the {x.step_s:g} s step; "
            "the rest of the band is not resolved")
        rows.append(rec | {"variance_kw2": var, "rms_kw": np.sqrt(var),
                           "amplitude_kw": np.sqrt(2.0 * var),
                           "share": var / total if total > 0 else 0.0, "available": True,
                           "note": text})
    return pd.DataFrame(rows)
