"""What the point of interconnection (POI) allows: ramp rates, a band limit, a floor.

Utilities now state limits for large computational loads in these terms (NERC Level 3 alert
of 2026-05-04 on large loads; ERCOT's large-load rules for loads of 75 MW and more; Choukse
et al. 2025, arXiv:2508.14318): the largest ramp up and down in MW/s over a short window, a
cap on the fluctuation in a critical band (e.g. 0.1-20 Hz) as an amplitude or as a share of
the fluctuation energy, and optionally a minimum power (no sudden drop to idle).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import signal

from aiload.errors import InputError

__all__ = ["PoiLimits", "evaluate", "LIMIT_TOLERANCE"]

#: relative slack of every comparison with a limit (floating-point round-off, not physics)
LIMIT_TOLERANCE = 1e-9


def _optional_positive(name: str, value) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            math.isfinite(value) and value >= 0):
        raise InputError(f"PoiLimits.{name}: got {value!r}; expected a finite number >= 0 or None.")


@dataclass(frozen=True)
class PoiLimits:
    """Limits a facility's power must respect at the POI.

    Parameters
    ----------
    ramp_up_mw_per_s, ramp_down_mw_per_s : float, optional
        Largest rise / fall of the interval-mean power over ``ramp_window_s`` [MW/s].
    ramp_window_s : float
        Window of the ramp ``[P(t) - P(t - window)] / window`` [s]; a whole number of the
        series' step (default 1 s).
    band_hz : (float, float)
        Critical band ``[low, high)`` [Hz]; above the Nyquist frequency of the series it is
        evaluated up to it (a 0.1 s series resolves 5 Hz).
    band_amplitude_mw : float, optional
        Largest amplitude of the fluctuation in the band, as the peak of a sine with the
        band's RMS (Welch PSD) [MW].
    band_energy_share : float, optional
        Largest share of the fluctuation energy (variance above 0 Hz) in the band [-].
    min_power_kw : float, optional
        Lowest interval-mean power at the POI [kW].

    Examples
    --------
    >>> PoiLimits(ramp_up_mw_per_s=2.0, ramp_down_mw_per_s=2.0, band_amplitude_mw=1.0).band_hz
    (0.1, 20.0)
    """

    ramp_up_mw_per_s: float | None = None
    ramp_down_mw_per_s: float | None = None
    ramp_window_s: float = 1.0
    band_hz: tuple[float, float] = (0.1, 20.0)
    band_amplitude_mw: float | None = None
    band_energy_share: float | None = None
    min_power_kw: float | None = None

    def __post_init__(self) -> None:
        for name in ("ramp_up_mw_per_s", "ramp_down_mw_per_s", "band_amplitude_mw",
                     "band_energy_share", "min_power_kw"):
            _optional_positive(name, getattr(self, name))
        if self.band_energy_share is not None and self.band_energy_share > 1:
            raise InputError(f"PoiLimits.band_energy_share: got {self.band_energy_share!r}; "
                             "expected a share in [0, 1] (e.g. 0.05 for 5 %).")
        if not (isinstance(self.ramp_window_s, (int, float)) and self.ramp_window_s > 0
                and math.isfinite(self.ramp_window_s)):
            raise InputError(f"PoiLimits.ramp_window_s: got {self.ramp_window_s!r}; expected a "
                             "window > 0 [s], e.g. 1.0.")
        band = tuple(float(b) for b in self.band_hz)
        if len(band) != 2 or not 0 <= band[0] < band[1]:
            raise InputError(f"PoiLimits.band_hz: got {self.band_hz!r}; expected (low_hz, high_hz) "
                             "with 0 <= low < high, e.g. (0.1, 20.0).")
        object.__setattr__(self, "band_hz", band)

    @property
    def has_band(self) -> bool:
        return self.band_amplitude_mw is not None or self.band_energy_share is not None


def _ramp_steps(limits: PoiLimits, dt_s: float) -> int:
    k = limits.ramp_window_s / dt_s
    if abs(k - round(k)) > 1e-9 * max(k, 1.0) or round(k) < 1:
        raise InputError(f"PoiLimits.ramp_window_s = {limits.ramp_window_s:g} s is not a whole "
                         f"number of the series' {dt_s:g} s step; expected a multiple of it.")
    return int(round(k))


def _nperseg(n: int) -> int:
    # the rule of aiload.metrics.spectrum.welch_psd (about 8 segments, at least 256 values)
    return min(n, max(256, 2 ** int(np.log2(max(n // 4, 1)))))


def band_figures(p_kw: np.ndarray, dt_s: float, band: tuple[float, float]) -> tuple[float, float, float]:
    """(amplitude [kW], share [-], evaluated top [Hz]) of the fluctuation of ``p_kw`` in
    ``band``, on the Welch PSD of :func:`aiload.metrics.band_fluctuation`."""
    freq, psd = signal.welch(p_kw, fs=1.0 / dt_s, nperseg=_nperseg(p_kw.size), detrend="constant")
    df = freq[1] - freq[0]
    nyquist = 0.5 / dt_s
    top = min(band[1], nyquist * (1 + 1e-12))
    if band[0] >= nyquist or band[0] < df * (1 - 1e-9):
        raise InputError(
            f"PoiLimits.band_hz = {band}: a {p_kw.size * dt_s:g} s series at {dt_s:g} s resolves "
            f"{df:.3g} Hz to {nyquist:g} Hz; expected a band inside it (a longer series or a "
            "higher band bottom).")
    inside = (freq >= band[0]) & (freq < top)
    var = float(psd[inside].sum() * df)
    total = float(psd[freq > 0].sum() * df)
    return math.sqrt(2.0 * var), (var / total if total > 0 else 0.0), min(band[1], nyquist)


def evaluate(p_kw: np.ndarray, dt_s: float, limits: PoiLimits) -> dict:
    """The figures the limits constrain and whether each is met.

    Returns
    -------
    dict
        ``ramp_up_mw_per_s``, ``ramp_down_mw_per_s`` (largest over ``ramp_window_s``, ≥ 0)
        [MW/s], ``band_amplitude_mw`` [MW], ``band_energy_share`` [-], ``min_power_kw`` [kW]
        and ``met`` (all limits) with ``met_ramp_up``, ``met_ramp_down``, ``met_band``,
        ``met_min_power``.
    """
    k = _ramp_steps(limits, dt_s)
    if p_kw.size <= k:
        raise InputError(f"evaluate: {p_kw.size} values cannot show a ramp over "
                         f"{limits.ramp_window_s:g} s; expected a longer series.")
    rate = (p_kw[k:] - p_kw[:-k]) / (k * dt_s) / 1e3
    up, down = max(float(rate.max()), 0.0), max(float(-rate.min()), 0.0)
    amp_kw, share, _ = band_figures(p_kw, dt_s, limits.band_hz)
    low = float(p_kw.min())
    tol = 1 + LIMIT_TOLERANCE

    def ok(value, limit):
        return True if limit is None else bool(value <= limit * tol + 1e-12)

    out = {
        "ramp_up_mw_per_s": up, "ramp_down_mw_per_s": down, "band_amplitude_mw": amp_kw / 1e3,
        "band_energy_share": share, "min_power_kw": low,
        "met_ramp_up": ok(up, limits.ramp_up_mw_per_s),
        "met_ramp_down": ok(down, limits.ramp_down_mw_per_s),
        "met_band": ok(amp_kw / 1e3, limits.band_amplitude_mw)
        and ok(share, limits.band_energy_share),
        "met_min_power": True if limits.min_power_kw is None
        else bool(low >= limits.min_power_kw * (1 - LIMIT_TOLERANCE) - 1e-12),
    }
    out["met"] = all(out[k] for k in ("met_ramp_up", "met_ramp_down", "met_band", "met_min_power"))
    return out
