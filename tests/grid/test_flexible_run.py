"""grid.flexible_run: the illustrative background and the implied limit, by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import grid
from aiload.errors import InputError
from grid.flexible_run import cosine_background, implied_limit_kw


def test_cosine_background_by_hand():
    idx = pd.DatetimeIndex(["2025-07-15 23:00", "2025-07-15 11:00", "2026-01-14 11:00"],
                           tz="UTC")
    bg = cosine_background(idx, decimals=None)
    # days count from 15 July 00:00 UTC; the daily cosine peaks at 23:00, is -1 at 11:00
    assert bg.iloc[0] == pytest.approx(0.80 + 0.10 * math.cos(2 * math.pi * (23 / 24) / 365)
                                       + 0.08)
    assert bg.iloc[1] == pytest.approx(0.80 + 0.10 * math.cos(2 * math.pi * (11 / 24) / 365)
                                       - 0.08)
    day = (pd.Timestamp("2026-01-14 11:00", tz="UTC")
           - pd.Timestamp("2026-07-15", tz="UTC")) / pd.Timedelta(days=1)
    assert bg.iloc[2] == pytest.approx(0.80 + 0.10 * math.cos(2 * math.pi * day / 365) - 0.08)
    assert cosine_background(idx).iloc[0] == 0.98  # rounded to 0.01 by default


def test_cosine_background_refuses_negative_and_naive():
    idx = pd.date_range("2025-01-01", periods=3, freq="h", tz="UTC")
    with pytest.raises(InputError, match=r"goes below 0 \(-0.1\)"):
        cosine_background(idx, mean=0.1, seasonal_amplitude=0.1, daily_amplitude=0.1)
    with pytest.raises(InputError, match="tz-aware DatetimeIndex, got DatetimeIndex \\(naive\\)"):
        cosine_background(idx.tz_localize(None))
    with pytest.raises(InputError, match="peak_day = '13-45' is not a month-day"):
        cosine_background(idx, peak_day="13-45")


def test_implied_limit_is_the_headroom_over_the_factor():
    idx = pd.date_range("2025-01-01", periods=4, freq="h", tz="UTC")
    load = pd.Series([1.0, 2.0, 2.0, 1.0], idx, name="facility_mw")
    study = grid.flexible_interconnection(grid.networks.load("cigre_mv"), load, bus=9,
                                          limits=grid.Limits(vm_min_pu=0.9),
                                          background=pd.Series(0.7, idx), sizes_mw=[2.0])
    limit = implied_limit_kw(study, 4.0)  # twice the modelled peak: half the headroom, in kW
    np.testing.assert_allclose(limit.to_numpy(), study.headroom_mw.to_numpy() * 1e3 / 2.0)
    assert limit.name == "limit_kw"
    with pytest.raises(InputError, match="size_mw: expected a positive facility peak"):
        implied_limit_kw(study, -1.0)
    with pytest.raises(InputError, match=r"size_mw: expected a positive facility peak \[MW\], "
                                         "got True"):
        implied_limit_kw(study, True)
    np.testing.assert_allclose(implied_limit_kw(study, np.int64(4)).to_numpy(), limit.to_numpy())
    with pytest.raises(InputError, match="net: expected a pandapower network .*, got str"):
        grid.curtailment_cost(study, 4.0, "cigre_mv", "colocation-10mw")
    # a regular series whose index carries no freq: the step is inferred (was a ValueError)
    bare = pd.Series(load.to_numpy(), pd.DatetimeIndex(list(idx)), name="facility_mw")
    assert bare.index.freq is None
    study = grid.flexible_interconnection(grid.networks.load("cigre_mv"), bare, bus=9,
                                          limits=grid.Limits(vm_min_pu=0.9),
                                          background=pd.Series(0.7, bare.index), sizes_mw=[2.0])
    cost = grid.curtailment_cost(study, 4.0, grid.networks.load("cigre_mv"), "colocation-10mw")
    assert len(cost.load.power) == 4 and cost.load.power.index[1] - cost.load.power.index[0] \
        == pd.Timedelta("1h")
    with pytest.raises(InputError, match="study: expected a grid.FlexibleInterconnection, got "
                                         "DataFrame"):
        implied_limit_kw(study.table, 1.0)
