"""What the grid felt: frequency, voltage, load lost, oscillations; and a verdict.

:class:`DynamicResult` holds the recorded traces on the simulation's time axis (seconds from
the start) and computes the figures from them:

- frequency nadir / zenith [Hz] of the centre-of-inertia (COI) frequency, the inertia-weighted
  mean of the machines' speeds;
- RoCoF [Hz/s]: the largest change of COI frequency over a sliding window (*assumption*:
  500 ms, the window ENTSO-E's frequency-measurement guidance uses for RoCoF);
- settling frequency [Hz]: mean COI frequency over the last ``settle_window_s`` of the run;
- facility-bus voltage dip (minimum) [pu] and recovery time [s]: from the event until the
  voltage is back at or above ``v_recovered_pu`` (0.9 pu, the ITIC steady band) for good;
- MW lost and restored, from the facilities' online share (trips and ride-through transfers);
- generator speed oscillations per band: amplitude [mHz] and damping ratio [-] of the
  band-passed speed deviations (bands from Kundur, *Power System Stability and Control*, 1994,
  §12.1: inter-area 0.1–0.7 Hz, local 0.7–2.0 Hz).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from grid.dynamics.ridethrough import ITIC_VOLTAGE_TIME, longest_below_s

__all__ = ["DynamicResult", "FrequencyLimits", "Verdict", "OSCILLATION_BANDS_HZ",
           "oscillation_band"]

#: speed-oscillation bands [Hz] (Kundur 1994, §12.1)
OSCILLATION_BANDS_HZ: dict[str, tuple[float, float]] = {
    "inter-area": (0.1, 0.7),
    "local": (0.7, 2.0),
}
ROCOF_WINDOW_S = 0.5
V_RECOVERED_PU = 0.9


@dataclass(frozen=True)
class FrequencyLimits:
    """Frequency limits of the verdict.

    Defaults (*assumption*, set your planner's): 59.5–60.5 Hz, the band NERC PRC-024 asks
    Eastern Interconnection generators to stay connected in without time limit; RoCoF
    1 Hz/s over 500 ms (a common withstand figure for synchronous machines' protection).
    ``None`` disables a limit.
    """

    f_min_hz: float | None = 59.5
    f_max_hz: float | None = 60.5
    rocof_max_hz_s: float | None = 1.0

    def __post_init__(self):
        if (self.f_min_hz is not None and self.f_max_hz is not None
                and self.f_min_hz >= self.f_max_hz):
            raise ValueError(f"f_min_hz={self.f_min_hz} must be below f_max_hz={self.f_max_hz}")


@dataclass(frozen=True)
class Verdict:
    """Whether the run stayed within the limits; ``reasons`` names each breach."""

    passed: bool
    reasons: tuple[str, ...]

    def __bool__(self) -> bool:
        return self.passed


def _uniform(t: np.ndarray, y: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    # ANDES adds tiny steps at event times; bring the traces onto a uniform grid
    tu = np.arange(t[0], t[-1] + 1e-9, dt)
    if y.ndim == 1:
        return tu, np.interp(tu, t, y)
    return tu, np.column_stack([np.interp(tu, t, y[:, k]) for k in range(y.shape[1])])


def oscillation_band(t_s: np.ndarray, x: np.ndarray, band_hz: tuple[float, float],
                     t_from_s: float = 0.0) -> dict[str, float]:
    """Amplitude and damping of the oscillation of ``x`` within ``band_hz`` after ``t_from_s``.

    ``x`` is a 2-D array (one column per machine, the same units as the amplitude returned).
    The band-passed signal (4th-order Butterworth, forward-backward) of the machine with the
    largest amplitude gives the dominant frequency (FFT peak within the band) and the decay
    rate σ (least-squares slope of the log of its Hilbert envelope, from its peak while above
    5 % of it): damping ratio
    ``ζ = -σ / sqrt(σ² + ω²)``. ``NaN`` where the record is shorter than 1.5 periods of the
    band's lower edge or holds no oscillation.
    """
    from scipy.signal import butter, hilbert, sosfiltfilt

    lo, hi = band_hz
    dt = float(np.median(np.diff(t_s)))
    tu, xu = _uniform(t_s, x if x.ndim == 2 else x[:, None], dt)
    fs = 1.0 / dt
    out = {"amplitude": 0.0, "frequency_hz": math.nan, "damping_ratio": math.nan}
    if hi >= fs / 2 or (tu[-1] - t_from_s) < 1.5 / lo or len(tu) < 30:
        out["amplitude"] = math.nan
        return out
    sos = butter(4, [lo, hi], btype="band", fs=fs, output="sos")
    xd = xu - xu[0]  # deviation from the initial steady state
    filt = sosfiltfilt(sos, xd, axis=0)
    keep = tu >= t_from_s
    seg = filt[keep]
    if seg.size == 0:
        return out
    amps = np.max(np.abs(seg), axis=0)
    k = int(np.argmax(amps))
    out["amplitude"] = float(amps[k])
    if amps[k] < 1e-12:
        return out
    y = seg[:, k]
    # zero-padded 8x: the peak is read between the record's 1/T bins (1/T is 0.05 Hz for 20 s)
    n_fft = 8 * len(y)
    spec = np.abs(np.fft.rfft(y * np.hanning(len(y)), n=n_fft))
    freqs = np.fft.rfftfreq(n_fft, dt)
    inband = (freqs >= lo) & (freqs <= hi)
    if not inband.any():
        return out
    f_dom = float(freqs[inband][np.argmax(spec[inband])])
    env = np.abs(hilbert(y))
    tt = tu[keep]
    # fit from the envelope's peak to one period before the end (filter edge effects)
    i0 = int(np.argmax(env))
    i1 = len(tt) - int(round(1.0 / (f_dom * dt))) if f_dom > 0 else len(tt)
    if i1 - i0 < 10:
        return out | {"frequency_hz": f_dom}
    # ... and only while the envelope stays above 5 % of its peak: further down, the filter's
    # tails and the numerical floor flatten the log and bias ζ low (a synthetic ζ = 0.15 at
    # 1.2 Hz read as 0.02 when fitted down to 1e-9 of the peak; tests/grid/dynamics)
    above = env[i0:i1] > 0.05 * env[i0]
    n_fit = int(above.size if above.all() else np.argmin(above))
    if n_fit < 10:
        return out | {"frequency_hz": f_dom}
    sl = slice(i0, i0 + n_fit)
    sigma = float(np.polyfit(tt[sl], np.log(env[sl]), 1)[0])
    omega = 2 * math.pi * f_dom
    out.update(frequency_hz=f_dom, damping_ratio=float(-sigma / math.hypot(sigma, omega)))
    return out


@dataclass(frozen=True)
class DynamicResult:
    """Traces of one dynamic simulation and the figures computed from them.

    Attributes
    ----------
    frequency_hz
        Index ``t_s`` [s]; column ``coi`` (centre-of-inertia frequency) and one per machine
        [Hz].
    voltage_pu
        Bus voltage magnitudes [pu], one column per bus id.
    facility_mw
        Power each facility draws [MW] (column per facility name).
    online
        Share of each facility on the grid [0-1].
    facility_frequency_hz
        Frequency measured at each facility bus (ANDES ``BusFreq``) [Hz].
    facilities
        The :class:`~grid.dynamics.load.Facility` objects, in column order.
    events, log
        The events simulated; the ride-through log ``(t_s, facility, what)``.
    completed
        Whether ANDES reached ``t_end_s``; ``message`` says why not.
    """

    case: str
    f_nominal_hz: float
    frequency_hz: pd.DataFrame
    voltage_pu: pd.DataFrame
    facility_mw: pd.DataFrame
    online: pd.DataFrame
    facility_frequency_hz: pd.DataFrame
    facilities: tuple
    events: tuple
    log: tuple
    completed: bool
    message: str = ""
    t_event_s: float = 0.0
    scheduled_mw: pd.DataFrame = field(default=None, repr=False)
    meta: dict = field(default_factory=dict, repr=False)

    # ---------------------------------------------------------------- frequency
    @property
    def t_s(self) -> np.ndarray:
        return self.frequency_hz.index.to_numpy()

    def frequency_nadir_hz(self) -> float:
        """Lowest COI frequency [Hz]."""
        return float(self.frequency_hz["coi"].min())

    def frequency_zenith_hz(self) -> float:
        """Highest COI frequency [Hz]."""
        return float(self.frequency_hz["coi"].max())

    def rocof_hz_s(self, window_s: float = ROCOF_WINDOW_S) -> float:
        """Largest |Δf| / window of the COI frequency over a sliding ``window_s`` [Hz/s]."""
        t, f = self.t_s, self.frequency_hz["coi"].to_numpy()
        if t[-1] - t[0] < window_s:
            return math.nan
        tu, fu = _uniform(t, f, min(window_s / 10, float(np.median(np.diff(t)))))
        n = max(1, int(round(window_s / (tu[1] - tu[0]))))
        return float(np.max(np.abs(fu[n:] - fu[:-n])) / window_s)

    def settling_frequency_hz(self, settle_window_s: float = 1.0) -> float:
        """Mean COI frequency over the last ``settle_window_s`` of the run [Hz]."""
        f = self.frequency_hz["coi"]
        return float(f[f.index >= f.index[-1] - settle_window_s].mean())

    # ---------------------------------------------------------------- voltage
    def facility_voltage_pu(self) -> pd.DataFrame:
        """Voltage at each facility's bus [pu], one column per facility name."""
        return pd.DataFrame({f.name: self.voltage_pu[f.bus] for f in self.facilities})

    def voltage_dip_pu(self) -> dict[str, float]:
        """Lowest facility-bus voltage after the first event, per facility [pu]."""
        v = self.facility_voltage_pu()
        return {k: float(v[k][v.index >= self.t_event_s].min()) for k in v}

    def voltage_recovery_s(self, v_recovered_pu: float = V_RECOVERED_PU) -> dict[str, float]:
        """Time from the first event until the facility-bus voltage is back at or above
        ``v_recovered_pu`` for the rest of the run [s]; 0 if it never left; NaN if it never
        came back."""
        v = self.facility_voltage_pu()
        out = {}
        for k in v:
            s = v[k][v.index >= self.t_event_s]
            low = s.to_numpy() < v_recovered_pu
            if not low.any():
                out[k] = 0.0
            elif low[-1]:
                out[k] = math.nan
            else:
                last_low = np.nonzero(low)[0][-1]
                out[k] = float(s.index[last_low + 1] - self.t_event_s)
        return out

    # ---------------------------------------------------------------- load
    def mw_lost(self) -> float:
        """Facility load that left the grid (trips and transfers), at its largest [MW]."""
        off = (1.0 - self.online) * self.scheduled_mw
        return float(off.sum(axis=1).max())

    def mw_restored(self) -> float:
        """Of :meth:`mw_lost`, what is back on the grid at the end of the run [MW]."""
        off = ((1.0 - self.online) * self.scheduled_mw).sum(axis=1)
        return float(off.max() - off.iloc[-1])

    def tripped(self) -> list[str]:
        """Names of the facilities that transferred or tripped at any time."""
        return [c for c in self.online if (self.online[c] < 1.0 - 1e-12).any()]

    # ---------------------------------------------------------------- oscillations
    def oscillations(self, bands: dict[str, tuple[float, float]] | None = None) -> pd.DataFrame:
        """Machine speed oscillations per band: amplitude [mHz], frequency [Hz], damping [-].

        Computed on each machine's speed deviation relative to the COI frequency (so the
        common frequency excursion does not count as an oscillation).
        """
        bands = bands or OSCILLATION_BANDS_HZ
        f = self.frequency_hz
        rel = (f.drop(columns="coi").to_numpy() - f[["coi"]].to_numpy()) * 1e3  # mHz
        rows = {}
        for name, band in bands.items():
            r = oscillation_band(self.t_s, rel, band, t_from_s=self.t_event_s)
            rows[name] = {"amplitude_mhz": r["amplitude"], "frequency_hz": r["frequency_hz"],
                          "damping_ratio": r["damping_ratio"], "band_hz": band}
        return pd.DataFrame(rows).T

    # ---------------------------------------------------------------- verdict
    def verdict(self, limits: FrequencyLimits | None = None,
                ride_through_curve: tuple[tuple[float, float], ...] | None = ITIC_VOLTAGE_TIME
                ) -> Verdict:
        """Judge the run against frequency ``limits`` and a voltage ride-through curve.

        ``ride_through_curve``: ``(v_pu, duration_s)`` pairs the facility-bus voltage must not
        stay below for longer (default the ITIC envelope); ``None`` skips it.
        """
        limits = limits or FrequencyLimits()
        reasons = []
        if not self.completed:
            reasons.append(f"the simulation stopped early: {self.message}")
        if limits.f_min_hz is not None and self.frequency_nadir_hz() < limits.f_min_hz:
            reasons.append(f"frequency nadir {self.frequency_nadir_hz():.3f} Hz < "
                           f"{limits.f_min_hz} Hz")
        if limits.f_max_hz is not None and self.frequency_zenith_hz() > limits.f_max_hz:
            reasons.append(f"frequency zenith {self.frequency_zenith_hz():.3f} Hz > "
                           f"{limits.f_max_hz} Hz")
        rocof = self.rocof_hz_s()
        if limits.rocof_max_hz_s is not None and rocof > limits.rocof_max_hz_s:
            reasons.append(f"RoCoF {rocof:.3f} Hz/s > {limits.rocof_max_hz_s} Hz/s")
        if ride_through_curve:
            v = self.facility_voltage_pu()
            t = v.index.to_numpy()
            for name in v:
                for vp, d in ride_through_curve:
                    below = longest_below_s(t, v[name].to_numpy(), vp)
                    if below > d + 1e-9:
                        reasons.append(f"{name}: voltage below {vp} pu for {below:.3f} s "
                                       f"(curve allows {d} s)")
        return Verdict(passed=not reasons, reasons=tuple(reasons))

    # ---------------------------------------------------------------- reports
    def summary(self, limits: FrequencyLimits | None = None) -> dict[str, Any]:
        """The figures of the run in one flat dict (units in the keys)."""
        osc = self.oscillations()
        verdict = self.verdict(limits)
        out: dict[str, Any] = {
            "case": self.case,
            "completed": self.completed,
            "t_end_s": float(self.t_s[-1]),
            "facility_mw_initial": float(self.scheduled_mw.iloc[0].sum()),
            "frequency_nadir_hz": self.frequency_nadir_hz(),
            "frequency_zenith_hz": self.frequency_zenith_hz(),
            "rocof_hz_s": self.rocof_hz_s(),
            "settling_frequency_hz": self.settling_frequency_hz(),
            "mw_lost": self.mw_lost(),
            "mw_restored": self.mw_restored(),
            "facilities_tripped": self.tripped(),
        }
        for name, v in self.voltage_dip_pu().items():
            out[f"voltage_min_pu[{name}]"] = v
        for name, v in self.voltage_recovery_s().items():
            out[f"voltage_recovery_s[{name}]"] = v
        for band, row in osc.iterrows():
            out[f"oscillation_amplitude_mhz[{band}]"] = float(row["amplitude_mhz"])
            out[f"oscillation_damping_ratio[{band}]"] = float(row["damping_ratio"])
        out["verdict_passed"] = verdict.passed
        out["verdict_reasons"] = list(verdict.reasons)
        return out

    def plot(self, **kwargs):
        """Frequency, facility-bus voltage and facility power (see :func:`grid.dynamics.plots.plot_result`)."""
        from grid.dynamics.plots import plot_result

        return plot_result(self, **kwargs)
