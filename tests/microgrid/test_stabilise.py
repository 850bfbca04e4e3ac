"""The stabilisation study (issue 28): hand-computed outputs of the ramp limiter, the battery
controller and GPU smoothing; the energy balance of every option; same input, same bits."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import microgrid
from aiload.errors import InputError
from microgrid.stabilise import (
    GpuSmoothing, PoiLimits, Prices, PsuStorage, SiteBattery, evaluate, smooth, stabilise,
    track_setpoint,
)
from microgrid.stabilise._loops import loops, python_loops
from microgrid.stabilise.battery import storage_energy

DT = 0.1
PRICES = Prices(energy_usd_per_kwh=0.08, battery_usd_per_kwh_year=40.0,
                battery_usd_per_kw_year=50.0, source="test")


def square(a=100.0, b=160.0, periods=3, low=40, high=40):
    return np.tile(np.r_[np.full(low, a), np.full(high, b)], periods)


def _amplitude(x, omega, dt):
    """Amplitude of the component at ``omega`` over whole periods (projection)."""
    k = np.arange(x.size)
    s, c = np.sin(omega * k * dt), np.cos(omega * k * dt)
    return np.hypot(2 / x.size * np.dot(x, s), 2 / x.size * np.dot(x, c))


def test_square_wave_through_the_ramp_limiter_and_battery_by_hand():
    load = square()
    g = track_setpoint(load, DT, ramp_up_kw_per_s=100.0, ramp_down_kw_per_s=100.0)
    # 10 kW per 0.1 s step: 110, 120 ... 160 after each rise, 150 ... 100 after each fall
    rise = 40
    assert g[rise:rise + 7].tolist() == [110.0, 120.0, 130.0, 140.0, 150.0, 160.0, 160.0]
    assert g[80:87].tolist() == [150.0, 140.0, 130.0, 120.0, 110.0, 100.0, 100.0]
    storage = load - g
    # discharge per rise: (50 + 40 + 30 + 20 + 10) kW x 0.1 s = 15 kW s
    #                    = (b-a)^2 / (2U) - (b-a) dt / 2 = 18 - 3
    assert storage[rise:rise + 7].sum() * DT == pytest.approx(15.0, rel=1e-12)
    eta_c, eta_d = 0.9, 0.8
    soc, loss = storage_energy(storage, DT, eta_c, eta_d)
    # each rise draws 15 / 0.8 kW s from the store, each fall puts 15 x 0.9 back
    assert soc[rise + 6] == pytest.approx(-15.0 / eta_d / 3600, rel=1e-12)
    assert soc[86] == pytest.approx((-15.0 / eta_d + 15.0 * eta_c) / 3600, rel=1e-12)
    # three rises (discharge loss 15 x (1/0.8 - 1)) and two falls (charge loss 15 x 0.1)
    assert loss.sum() * DT == pytest.approx(3 * 15.0 * (1 / eta_d - 1) + 2 * 15.0 * (1 - eta_c),
                                            rel=1e-12)


def test_sine_through_the_filter_equals_the_transfer_function():
    n, period = 8000, 40  # 4 s period (0.25 Hz), 0.1 s steps
    omega = 2 * np.pi / (period * DT)
    amp, tau = 30.0, 1.0
    k = np.arange(n)
    load = 500.0 + amp * np.sin(omega * k * DT)
    g = track_setpoint(load, DT, tau_s=tau)
    alpha = DT / (tau + DT)
    h = alpha / (1 - (1 - alpha) * np.exp(-1j * omega * DT))  # EMA's frequency response
    tail = slice(n - 20 * period, n)
    assert _amplitude(g[tail], omega, DT) == pytest.approx(amp * abs(h), rel=1e-9)
    storage = load - g
    assert _amplitude(storage[tail], omega, DT) == pytest.approx(amp * abs(1 - h), rel=1e-9)
    soc, _ = storage_energy(storage, DT, 1.0, 1.0)
    # the running sum of a sampled sine of amplitude A' swings with A' dt / (2 sin(w dt / 2))
    expected = amp * abs(1 - h) * DT / (2 * np.sin(omega * DT / 2)) / 3600
    assert _amplitude(soc[tail], omega, DT) == pytest.approx(expected, rel=1e-9)


def test_sine_slower_than_the_ramp_limit_passes_unchanged():
    k = np.arange(4000)
    load = 400.0 + 50.0 * np.sin(2 * np.pi * 0.2 * k * DT)  # slope at most 62.8 kW/s
    g = track_setpoint(load, DT, ramp_up_kw_per_s=63.0, ramp_down_kw_per_s=63.0)
    np.testing.assert_array_equal(g, load)
    # a limit below the slope: the output never moves faster than the limit
    g = track_setpoint(load, DT, ramp_up_kw_per_s=40.0, ramp_down_kw_per_s=40.0)
    assert np.max(np.abs(np.diff(g))) <= 40.0 * DT * (1 + 1e-12)


def test_gpu_smoothing_square_wave_by_hand():
    load = square()
    y, burned, withheld = smooth(load, DT, ramp_up_kw_per_s=100.0, ramp_down_kw_per_s=50.0,
                                 hysteresis_s=0.5)
    # fall at step 80: held 5 steps (0.5 s) at 160, then 5 kW per step down to 100
    assert y[80:86].tolist() == [160.0] * 5 + [155.0]
    assert y[96] == 100.0 and y[95] == 105.0
    # burned per fall: hysteresis (b-a) h = 30 kW s, ramp (b-a)^2/(2D) - (b-a) dt/2 = 33 kW s
    assert burned[80:120].sum() * DT == pytest.approx(63.0, rel=1e-12)
    # withheld per rise: (b-a)^2/(2U) - (b-a) dt/2 = 15 kW s
    assert withheld[40:80].sum() * DT == pytest.approx(15.0, rel=1e-12)
    # a floor above the low level: the power never goes below it
    y, burned, _ = smooth(load, DT, floor_kw=130.0)
    assert y.min() == 130.0
    assert burned.sum() * DT == pytest.approx(30.0 * 120 * DT, rel=1e-12)


def test_evaluate_by_hand():
    load = square()
    f = evaluate(load, DT, PoiLimits(ramp_up_mw_per_s=0.1, ramp_window_s=1.0, min_power_kw=100.0))
    # one 60 kW step inside a 1 s window: 60 kW/s = 0.06 MW/s, both ways
    assert f["ramp_up_mw_per_s"] == pytest.approx(0.06)
    assert f["ramp_down_mw_per_s"] == pytest.approx(0.06)
    assert f["met"] and f["min_power_kw"] == 100.0
    f = evaluate(load, DT, PoiLimits(ramp_down_mw_per_s=0.05, min_power_kw=101.0))
    assert not f["met_ramp_down"] and not f["met_min_power"] and f["met_ramp_up"]


def _load(seed=3, n=12_000):
    rng = np.random.default_rng(seed)
    base = 20_000.0 + 4_000.0 * (np.arange(n) // 25 % 2) + rng.normal(0, 100.0, n)
    base[6_000:6_600] = 12_000.0  # a failure: the job at idle for a minute
    idx = pd.date_range("2025-01-06", periods=n, freq="100ms", tz="UTC")
    return pd.Series(base, index=idx, name="facility_kw")


LIMITS = PoiLimits(ramp_up_mw_per_s=1.0, ramp_down_mw_per_s=1.0, band_amplitude_mw=0.3)


def test_every_option_balances_energy_and_the_cheapest_meets_the_limits():
    res = stabilise(_load(), LIMITS, gpus=30000, prices=PRICES)
    t = res.options.set_index("option")
    assert not t.loc["none", "limits_met"]
    assert (t["balance_error"] <= 1e-9).all()
    for name in t.index:
        s = res.series(name)
        h = DT / 3600
        lhs = s["poi_kw"].sum() * h
        soc_start = res._runs[name].soc_start_kwh
        rhs = ((s["load_kw"] + s["burned_kw"] - s["withheld_kw"] + s["losses_kw"]).sum() * h
               + s["soc_kwh"].iloc[-1] - soc_start)
        assert abs(lhs - rhs) <= 1e-9 * lhs, name
        # what evaluate says of the series is what the table says
        f = evaluate(s["poi_kw"].to_numpy(), DT, LIMITS)
        assert f["met"] == t.loc[name, "limits_met"]
    assert res.cheapest is not None
    met = t[t["limits_met"]]
    assert res.cheapest == met["cost_usd_per_year"].idxmin()
    # the sized battery's power is the largest |storage|, its energy the range over 0.8
    b = res.series("site battery")
    assert t.loc["site battery", "kw"] == pytest.approx(b["storage_kw"].abs().max())
    soc = b["soc_kwh"]
    assert t.loc["site battery", "kwh"] * 0.8 == pytest.approx(soc.max() - soc.min(), rel=1e-9)
    # cost = kWh x 40 + kW x 50 + losses x 0.08 (per year)
    row = t.loc["site battery"]
    assert row["cost_usd_per_year"] == pytest.approx(
        row["kwh"] * 40.0 + row["kw"] * 50.0 + row["losses_kwh_per_year"] * 0.08, rel=1e-12)


def test_sized_smoothing_is_the_lowest_floor_that_meets():
    load = _load().to_numpy()
    opt = GpuSmoothing(gpus=30000)
    m = opt.run(load, DT, LIMITS, PRICES)
    pct = m.parameters["floor_pct_of_tmp"]
    assert m.figures["met"]
    below = opt.run(load, DT, LIMITS, PRICES, floor_pct=pct - 0.01)
    assert not below.figures["met"]


def test_same_input_same_bits_and_both_loop_paths_agree():
    a = stabilise(_load(), LIMITS, gpus=30000, prices=PRICES)
    b = stabilise(_load(), LIMITS, gpus=30000, prices=PRICES)
    pd.testing.assert_frame_equal(a.options, b.options)
    for name in a.options["option"]:
        pd.testing.assert_frame_equal(a.series(name), b.series(name), check_exact=True)
    load = _load().to_numpy()
    fast, slow = loops(), python_loops()
    for lp in (fast, slow):
        out = np.empty(load.size)
        lp.smooth(load, DT, 15_000.0, 800.0, 600.0, 3, out)
        if lp is fast:
            y_fast = out.copy()
        else:
            np.testing.assert_array_equal(out, y_fast)
    g1, g2 = np.empty(load.size), np.empty(load.size)
    fast.track(load, DT, 0.05, 900.0, 700.0, g1)
    slow.track(load, DT, 0.05, 900.0, 700.0, g2)
    np.testing.assert_array_equal(g1, g2)


def test_psu_cap_per_gpu_fails_the_option():
    res = stabilise(_load(), LIMITS, options=[PsuStorage(gpus=30000, max_wh_per_gpu=1e-6)],
                    prices=PRICES, combinations=False)
    row = res.options.set_index("option").loc["psu storage"]
    assert not row["limits_met"] and "Wh per GPU" in row["notes"]


def test_exported_and_errors():
    assert microgrid.stabilise is stabilise or callable(microgrid.stabilise)
    assert microgrid.PoiLimits is PoiLimits
    with pytest.raises(InputError, match="band_energy_share: got 5"):
        PoiLimits(band_energy_share=5.0)
    with pytest.raises(InputError, match="ramp_window_s = 0.25 s is not a whole number"):
        evaluate(square(), DT, PoiLimits(ramp_window_s=0.25))
    with pytest.raises(InputError, match="gpus: got 0"):
        GpuSmoothing(gpus=0)
    with pytest.raises(InputError, match="expected a microgrid.PoiLimits"):
        stabilise(_load(), {"ramp": 1})
    with pytest.raises(InputError, match="option names repeat"):
        stabilise(_load(), LIMITS, options=[SiteBattery(), SiteBattery()], prices=PRICES)
