"""The figures of a dynamic run computed from traces whose answer is known in closed form
(no ANDES): oscillation frequency and damping, RoCoF, settling frequency, voltage dip and
recovery, MW lost and restored."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from grid.dynamics import Facility
from grid.dynamics.results import DynamicResult, oscillation_band

T = np.arange(0.0, 20.0, 1 / 60)  # 20 s at one cycle, as a study records it


def _ringdown(f_hz: float, zeta: float, t0_s: float = 1.0, amp: float = 0.1) -> np.ndarray:
    """x(t) = A e^{-σ(t - t0)} sin(ω_d (t - t0)) from t0: a mode of natural frequency ω_n
    with ζ = σ / ω_n, ω_d = ω_n sqrt(1 - ζ²) = 2π f_hz."""
    wd = 2 * math.pi * f_hz
    sigma = zeta * wd / math.sqrt(1 - zeta ** 2)
    tau = T - t0_s
    return np.where(tau >= 0, amp * np.exp(-sigma * tau) * np.sin(wd * tau), 0.0)


@pytest.mark.parametrize("f_hz, zeta, band", [
    (0.5, 0.02, (0.1, 0.7)), (0.5, 0.05, (0.1, 0.7)), (0.3, 0.2, (0.1, 0.7)),
    (0.9, 0.03, (0.7, 2.0)), (1.2, 0.05, (0.7, 2.0)), (1.2, 0.15, (0.7, 2.0)),
])
def test_oscillation_frequency_and_damping_of_a_known_ringdown(f_hz, zeta, band):
    """ζ within 5 % and f within 0.01 Hz of the mode that made the trace (a second, smaller
    machine in the record does not change the answer)."""
    x = np.column_stack([_ringdown(f_hz, zeta), 0.3 * _ringdown(f_hz, zeta)])
    r = oscillation_band(T, x, band, t_from_s=1.0)
    assert r["frequency_hz"] == pytest.approx(f_hz, abs=0.01)
    assert r["damping_ratio"] == pytest.approx(zeta, rel=0.05)
    # the band-passed peak of the larger machine: near its raw first peak (the smaller
    # machine's is 0.3 of it)
    raw_peak = np.max(np.abs(x[:, 0]))
    assert 0.6 * raw_peak < r["amplitude"] <= 1.05 * raw_peak


def test_no_oscillation_and_a_record_too_short_for_the_band():
    flat = np.zeros((len(T), 2))
    r = oscillation_band(T, flat, (0.1, 0.7), t_from_s=1.0)
    assert r["amplitude"] == 0.0 and math.isnan(r["damping_ratio"])
    short = T[T < 10.0]  # 9 s after the event: under 1.5 periods of 0.1 Hz (15 s)
    r = oscillation_band(short, np.ones((len(short), 1)), (0.1, 0.7), t_from_s=1.0)
    assert math.isnan(r["amplitude"])


def _result(coi_hz: np.ndarray, v_pu: np.ndarray, online: np.ndarray,
            scheduled_mw: float = 50.0) -> DynamicResult:
    idx = pd.Index(T, name="t_s")
    fac = Facility(bus=5, load_kw=scheduled_mw * 1e3)
    name = fac.name
    return DynamicResult(
        case="synthetic", f_nominal_hz=60.0,
        frequency_hz=pd.DataFrame({"coi": coi_hz, "G1": coi_hz}, index=idx),
        voltage_pu=pd.DataFrame({5: v_pu}, index=idx),
        facility_mw=pd.DataFrame({name: online * scheduled_mw}, index=idx),
        online=pd.DataFrame({name: online}, index=idx),
        facility_frequency_hz=pd.DataFrame({name: coi_hz}, index=idx),
        facilities=(fac,), events=(), log=(), completed=True, t_event_s=1.0,
        scheduled_mw=pd.DataFrame({name: np.full(len(T), scheduled_mw)}, index=idx))


def test_rocof_settling_dip_recovery_and_mw_by_hand():
    """COI frequency: flat, then falls 0.4 Hz/s for 0.5 s, then holds 59.8 Hz: RoCoF
    0.4 Hz/s over 500 ms, nadir and settling 59.8 Hz. Voltage: 0.3 pu from 1.0 s to 1.1 s,
    0.85 pu to 1.5 s, then 1.0 pu: dip 0.3 pu, recovery 0.5 s (first sample at or above
    0.9 pu for good). Online: 60 % leaves at 1.1 s and 20 % comes back at 5 s: 30 MW lost of
    50, 10 MW restored."""
    coi = np.where(T < 2.0, 60.0, np.where(T < 2.5, 60.0 - 0.4 * (T - 2.0), 59.8))
    v = np.where(T < 1.0, 1.0, np.where(T < 1.1, 0.3, np.where(T < 1.5, 0.85, 1.0)))
    online = np.where(T < 1.1, 1.0, np.where(T < 5.0, 0.4, 0.6))
    r = _result(coi, v, online)
    assert r.rocof_hz_s() == pytest.approx(0.4, rel=1e-6)
    assert r.frequency_nadir_hz() == pytest.approx(59.8)
    assert r.settling_frequency_hz() == pytest.approx(59.8)
    assert r.voltage_dip_pu()["facility@5"] == pytest.approx(0.3)
    first_ok = T[np.argmax(T >= 1.5 - 1e-9)]
    assert r.voltage_recovery_s()["facility@5"] == pytest.approx(first_ok - 1.0)
    assert r.mw_lost() == pytest.approx(30.0)
    assert r.mw_restored() == pytest.approx(10.0)
    assert r.tripped() == ["facility@5"]
