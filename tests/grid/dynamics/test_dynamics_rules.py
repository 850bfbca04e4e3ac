"""The ride-through rule and the facility's schedule, step by step (no ANDES needed)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from grid.dynamics import Facility, RideThrough
from grid.dynamics.load import schedule_mw
from grid.dynamics.ridethrough import RuleState, longest_below_s


def feed(rule, v, dt=0.01, f=60.0):
    state = RuleState(rule)
    out = [state.update(k * dt, vk, f) for k, vk in enumerate(v)]
    return np.array(out), state


def test_transfer_when_below_for_longer_than_the_duration():
    rule = RideThrough(voltage_time=((0.7, 0.05),), f_low_hz=None, f_high_hz=None)
    # 0.5 pu for samples 10..15: first to last 0.05 s, not longer -> rides through
    v = np.ones(40)
    v[10:16] = 0.5
    on, _ = feed(rule, v)
    assert np.all(on == 1.0)
    # one sample more -> 0.06 s -> transfers at that sample, for good (no return by default)
    v[16] = 0.5
    on, state = feed(rule, v)
    assert np.all(on[:16] == 1.0) and np.all(on[16:] == 0.0)
    assert state.log == [(pytest.approx(0.16), "transfer")]
    assert longest_below_s(np.arange(40) * 0.01, v, 0.7) == pytest.approx(0.06)


def test_share_return_delay_and_ramp():
    rule = RideThrough(voltage_time=((0.8, 0.0),), share=0.6, return_delay_s=0.1, ramp_s=0.2,
                       f_low_hz=None, f_high_hz=None)
    v = np.ones(60)
    v[5:8] = 0.5
    on, state = feed(rule, v)
    # transfers at the second low sample (below for 0.01 s > 0 s), 40 % stays online
    assert on[6] == pytest.approx(0.4)
    # healthy from sample 8; back after 0.1 s (sample 18), ramp 0.2 s -> full at sample 38
    assert on[17] == pytest.approx(0.4)
    assert on[28] == pytest.approx(1.0 - 0.6 * 0.5)
    assert on[38:] == pytest.approx(1.0)
    assert [w for _, w in state.log] == ["transfer", "return", "restored"]


def test_frequency_band_transfers():
    rule = RideThrough(f_high_hz=61.0, f_duration_s=0.02)
    state = RuleState(rule)
    assert state.update(0.00, 1.0, 61.5) == 1.0
    assert state.update(0.01, 1.0, 61.5) == 1.0
    assert state.update(0.02, 1.0, 61.5) == 0.0
    assert state.log[-1][1] == "transfer (frequency)"


def test_no_rule_never_transfers():
    on, _ = feed(None, np.zeros(10))
    assert np.all(on == 1.0)


@pytest.mark.parametrize("kwargs, match", [
    ({"share": 1.5}, "share=1.5 is not within"),
    ({"voltage_time": ((0.0, 0.1),)}, "voltage_time pair"),
    ({"f_low_hz": 61.0, "f_high_hz": 60.0}, "must be below"),
    ({"return_delay_s": -1.0}, "must be >= 0"),
])
def test_bad_rules_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RideThrough(**kwargs)


def test_defaults_are_the_itic_envelope_without_return():
    rule = RideThrough()
    assert rule.voltage_time == ((0.7, 0.02), (0.8, 0.5), (0.9, 10.0))
    assert math.isinf(rule.return_delay_s)


def test_schedule_holds_interval_means():
    idx = pd.date_range("2025-01-01", periods=4, freq="100ms", tz="UTC")
    t, p = schedule_mw(pd.Series([1000.0, 2000.0, 3000.0, 4000.0], index=idx), 0.05)
    assert t == pytest.approx([0.0, 0.1, 0.2, 0.3])
    assert p == pytest.approx([1.0, 2.0, 3.0, 4.0])  # kW -> MW
    t, p = schedule_mw(5000.0, 0.05)
    assert list(t) == [0.0] and list(p) == [5.0]


def test_schedule_errors_say_how_to_fix():
    naive = pd.Series([1.0, 2.0], index=pd.date_range("2025-01-01", periods=2, freq="1s"))
    with pytest.raises(ValueError, match="tz_localize"):
        schedule_mw(naive, 0.1)
    fast = pd.Series([1.0, 2.0], index=pd.timedelta_range("0s", periods=2, freq="10ms"))
    with pytest.raises(ValueError, match="shorter than the integration step"):
        schedule_mw(fast, 0.05)
    with pytest.raises(ValueError, match="negative"):
        schedule_mw(pd.Series([-1.0], index=pd.timedelta_range("0s", periods=1)), 0.1)
    with pytest.raises(ValueError, match="power_factor"):
        Facility(1, 10.0, power_factor=1.2)
