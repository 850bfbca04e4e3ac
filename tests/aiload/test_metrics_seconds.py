"""Seconds-scale grid-facing figures (issue 28): ramps 0.1 s-60 s, band shares, dynamic range.

Every expected value is computed by hand from the synthetic signal, or by scipy.signal.welch
called directly.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import signal

from aiload.errors import InputError
from aiload.metrics import (
    GRID_BANDS_HZ, band_fluctuation, dynamic_range, ramp_duration_curve, ramp_statistics,
)

DT = 0.1


def _series(values, name="p_kw", dt=DT):
    t = np.arange(len(values)) * dt
    return pd.Series(np.asarray(values, float), index=pd.to_timedelta(t, unit="s"), name=name)


def test_ramp_of_a_known_ramp_by_hand():
    # 20 kW flat, a 50 kW/s rise for 4 s (to 220 kW), 10 s flat, a 100 kW/s fall for 2 s
    p = np.concatenate([np.full(100, 20.0), 20.0 + 5.0 * np.arange(1, 41), np.full(100, 220.0),
                        220.0 - 10.0 * np.arange(1, 21), np.full(100, 20.0)])
    t = ramp_statistics(_series(p), (0.1, 1.0, 2.0, 10.0), percentiles=(50.0,))
    # windows inside one edge see the edge's slope: 0.05 MW/s up, 0.1 MW/s down
    assert t.loc[0.1, "up_max_mw_per_s"] == pytest.approx(0.05, rel=1e-12)
    assert t.loc[1.0, "up_max_mw_per_s"] == pytest.approx(0.05, rel=1e-12)
    assert t.loc[0.1, "down_max_mw_per_s"] == pytest.approx(0.1, rel=1e-12)
    assert t.loc[2.0, "down_max_mw_per_s"] == pytest.approx(0.1, rel=1e-12)
    # a 10 s window spans the whole 4 s rise (200 kW) -> 20 kW/s; the 2 s fall -> 20 kW/s
    assert t.loc[10.0, "up_max_mw_per_s"] == pytest.approx(0.02, rel=1e-12)
    assert t.loc[10.0, "down_max_mw_per_s"] == pytest.approx(0.02, rel=1e-12)
    # median of the upward 0.1 s ramps: all 40 of them are 50 kW/s
    assert t.loc[0.1, "up_p50_mw_per_s"] == pytest.approx(0.05, rel=1e-12)
    assert bool(t["available"].all())


def test_ramp_window_finer_than_the_step_is_not_available():
    t = ramp_statistics(_series(np.arange(50.0), dt=1.0), (0.1, 1.0))
    assert not t.loc[0.1, "available"] and "shorter than the step" in t.loc[0.1, "note"]
    assert np.isnan(t.loc[0.1, "up_max_mw_per_s"])
    assert t.loc[1.0, "up_max_mw_per_s"] == pytest.approx(1e-3)


def test_ramp_percentiles_checked():
    with pytest.raises(InputError, match=r"percentiles=\): got 101"):
        ramp_statistics(_series(np.arange(50.0)), (1.0,), percentiles=(101.0,))


def test_ramp_duration_curve_by_hand():
    # 0, 10, 10, 40 kW at 1 s: 1-s ramps +10, 0, +30 kW/s
    curve = ramp_duration_curve(_series([0.0, 10.0, 10.0, 40.0], dt=1.0), 1.0)
    assert curve["ramp_mw_per_s"].tolist() == pytest.approx([0.03, 0.01, 0.0])
    assert curve["exceedance"].tolist() == pytest.approx([1 / 3, 2 / 3, 1.0])


def test_band_shares_and_amplitudes_equal_welch_and_hand_values():
    # 0.5 Hz of 3 kW, 1.75 Hz of 1 kW, 4 Hz of 2 kW on 500 kW, 0.1 s interval means, 20 min
    n = 12_000
    t = np.arange(n) * DT
    amps = {0.5: 3.0, 1.75: 1.0, 4.0: 2.0}
    p = 500.0 + sum(a * np.sin(2 * np.pi * f * t) for f, a in amps.items())
    table = band_fluctuation(_series(p), GRID_BANDS_HZ).set_index("band")
    # by hand: a sine of amplitude A has variance A²/2; the shares are A²/ΣA²
    total = sum(a * a for a in amps.values())
    for band, (f, a) in zip(table.index, amps.items()):
        assert table.loc[band, "amplitude_kw"] == pytest.approx(a, rel=1e-3)
        assert table.loc[band, "share"] == pytest.approx(a * a / total, rel=1e-3)
    # independently: scipy.signal.welch on the same values with the same segment
    nperseg = 2 ** int(np.log2(n // 4))
    f, psd = signal.welch(p, fs=1 / DT, nperseg=nperseg, detrend="constant")
    df = f[1] - f[0]
    whole = psd[f > 0].sum() * df
    for band, (lo, hi) in zip(table.index, GRID_BANDS_HZ):
        inside = (f >= lo) & (f < min(hi, 5.0 * (1 + 1e-12)))
        var = psd[inside].sum() * df
        assert table.loc[band, "variance_kw2"] == pytest.approx(var, rel=1e-12)
        assert table.loc[band, "share"] == pytest.approx(var / whole, rel=1e-12)
    # the 2.5-20 Hz band is evaluated up to the 5 Hz Nyquist frequency, and says so
    assert table.loc["2.5-20Hz", "high_used_hz"] == 5.0
    assert "Nyquist" in table.loc["2.5-20Hz", "note"]


def test_any_band_and_unresolved_bands():
    t = np.arange(6000) * DT
    p = _series(100 + 2 * np.sin(2 * np.pi * 0.3 * t))
    table = band_fluctuation(p, ((0.2, 0.4), (6.0, 8.0), (0.0001, 0.2))).set_index("band")
    assert table.loc["0.2-0.4Hz", "amplitude_kw"] == pytest.approx(2.0, rel=1e-3)
    assert not table.loc["6-8Hz", "available"]
    assert "Nyquist" in table.loc["6-8Hz", "note"]
    assert not table.loc["0.0001-0.2Hz", "available"]
    assert "resolution" in table.loc["0.0001-0.2Hz", "note"]
    with pytest.raises(InputError, match="expected \\(low_hz, high_hz\\)"):
        band_fluctuation(p, ((1.0, 0.5),))


def test_dynamic_range_of_a_square_wave_by_hand():
    # 100 kW / 160 kW, 1 s each: within 0.5 s no edge is seen twice, the range is 60 kW
    p = np.tile(np.r_[np.full(10, 100.0), np.full(10, 160.0)], 10)
    table = dynamic_range(_series(p), (0.5, 5.0))
    assert table.loc[0.5, "range_mw"] == pytest.approx(0.06)
    assert table.loc[5.0, "range_share_of_peak"] == pytest.approx(60.0 / 160.0)
