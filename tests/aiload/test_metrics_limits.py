"""aiload.metrics.check: violations of interconnection limits, found independently."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aiload.metrics import Limits, check


def step_up_series() -> pd.Series:
    """1-min interval means [MW]: 10 MW, a 6-MW rise in one minute at 00:10, flat, then down."""
    idx = pd.date_range("2024-06-01", periods=40, freq="1min", tz="UTC")
    p = np.full(40, 10.0)
    p[10:30] = 16.0
    p[30:] = 13.0
    return pd.Series(p, index=idx, name="site_mw")


def test_ramp_and_range_violations_by_hand():
    s = step_up_series()
    out = check(s, Limits(ramp_up_mw_per_min=5.0, ramp_down_mw_per_min=2.5, p_max_mw=15.0))
    up = out[out.quantity == "ramp_up (1min)"]
    assert len(up) == 1 and up.start.iloc[0] == s.index[10] and up.value.iloc[0] == pytest.approx(6.0)
    down = out[out.quantity == "ramp_down (1min)"]
    assert len(down) == 1 and down.start.iloc[0] == s.index[30] and down.value.iloc[0] == pytest.approx(3.0)
    high = out[out.quantity == "power above p_max"]
    # one run of 20 consecutive minutes at 16 MW
    assert len(high) == 1
    assert (high.start.iloc[0], high.end.iloc[0]) == (s.index[10], s.index[29])
    assert high.value.iloc[0] == 16.0 and high.limit.iloc[0] == 15.0
    assert list(out.columns) == ["start", "end", "quantity", "value", "limit", "unit", "note"]


def test_percent_of_capacity_and_clean_series():
    s = step_up_series()
    # 5 %/min of 100 MW = 5 MW/min: the 6-MW rise violates, the 3-MW fall does not
    out = check(s, Limits(ramp_pct_per_min=5.0, capacity_mw=100.0))
    assert list(out.quantity) == ["ramp_up (1min, 5 % of 100 MW)"]
    assert out.limit.iloc[0] == pytest.approx(5.0)
    assert check(s, Limits(p_max_mw=20.0, ramp_up_mw_per_min=10.0)).empty
    # a 2-min window halves the rate: 3 MW/min
    out = check(s, Limits(ramp_up_mw_per_min=2.0, ramp_window="2min"))
    assert out.value.max() == pytest.approx(3.0)


def test_unverifiable_limits_are_reported_not_skipped():
    idx = pd.date_range("2024-06-01", periods=48, freq="1h", tz="UTC")
    s = pd.Series(np.linspace(1, 2, 48), index=idx, name="site_mw")
    out = check(s, Limits(ramp_up_mw_per_min=1.0, oscillation_mw=((0.1, 1.0, 0.5),)))
    assert len(out) == 2 and out.value.isna().all()
    assert out.note.str.contains("cannot be checked").all()
    assert "shorter than the step 3600 s" in out.note.iloc[0]
    assert "Nyquist" in out.note.iloc[1]


def test_oscillation_amplitude_of_a_square_wave():
    step_s, n = 0.1, 6000
    t = np.arange(n) * step_s
    p_kw = np.where(((t + 0.05) % 20.0) < 10.0, 110.0, 90.0)
    idx = pd.date_range("2024-06-01", periods=n, freq="100ms", tz="UTC")
    s = pd.Series(p_kw, index=idx, name="it_kw")
    out = check(s, Limits(oscillation_mw=((0.01, 0.1, 0.005), (0.01, 0.1, 0.02))))
    # only the 5-kW limit is exceeded; the amplitude is the fundamental's 4A/pi (A = 10 kW)
    assert len(out) == 1 and out.limit.iloc[0] == 0.005
    assert out.value.iloc[0] == pytest.approx(4 * 10.0 / np.pi / 1e3, rel=0.01)


def test_ramp_violations_on_real_gpt3_run(data_dir):
    """Sum of the 64 GPT-3 nodes on a 1-s grid; runs of 1-min ramps above 0.1 MW/min."""
    import re

    folder = data_dir / (
        "mlperf-training-v4.0-smc-power/smc-ac-power/results/64xSMC-H100-SXM-80GB/gpt3/power/"
        "result_5848-240517221859825376616_2"
    )
    pattern = re.compile(r'"time_ms": (\d+).*"key": "power_reading", "value": ([0-9.]+)')
    nodes = [np.array(pattern.findall(p.read_text()), dtype=float) for p in folder.glob("node_*.txt")]
    start = max(a[0, 0] for a in nodes) / 1e3
    stop = min(a[-1, 0] for a in nodes) / 1e3
    grid = np.arange(np.ceil(start), np.floor(stop) + 1)
    total_mw = sum(np.interp(grid, a[:, 0] / 1e3, a[:, 1]) for a in nodes) / 1e6
    s = pd.Series(total_mw, index=pd.to_datetime(grid, unit="s", utc=True), name="gpt3_mw")
    out = check(s, Limits(ramp_up_mw_per_min=0.1), kind="samples")
    rate = (total_mw[60:] - total_mw[:-60])  # MW per minute on the 1-s grid
    over = rate > 0.1
    runs = np.count_nonzero(np.diff(np.concatenate(([0], over.astype(int)))) == 1)
    assert len(out) == runs > 0
    assert out.value.max() == pytest.approx(rate.max(), rel=1e-9)
