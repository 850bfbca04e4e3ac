"""Issue 26: a power about 1,000x off the scale it belongs to gets one warning, in every layer.

The cases are the issue's: ``import_limit_kw=60`` for a campus peaking near 100 MW (MW typed
as kW), ``power_limit_kw=0.63`` for an 840 kW facility, an unnamed kW series handed to
``grid.contingency`` (read as MW: 100 GW on a network of 260 MW). The ratios are computed by
hand; a realistic value beside each (1/10 of the scale) must stay silent.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandapower.networks
import pandas as pd
import pytest

import aiload
import grid
import microgrid as mg
from aiload._checks import UNIT_SLIP_FACTOR, warn_unit_slip
from aiload.errors import InputWarning

IDX = pd.date_range("2025-01-06", periods=72, freq="1h", tz="UTC")


def _quiet(func, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)
        return func(*args, **kwargs)


def test_the_rule_by_hand():
    with pytest.warns(InputWarning, match=r"60 kW is 1/1,667 of .* If it is in MW, give 60,000 kW"):
        assert warn_unit_slip(60.0, "x", reference=100_000.0, reference_what="the peak")
    with pytest.warns(InputWarning, match=r"100,000 MW is 385x .* If it is in kW, give 100 MW"):
        warn_unit_slip(100_000.0, "y", reference=260.0, reference_what="the net", unit="MW")
    # the threshold: 300x either way
    assert UNIT_SLIP_FACTOR == 300.0
    assert not _quiet(warn_unit_slip, 100_000.0 / 299.0, "x", reference=100_000.0,
                      reference_what="p")
    assert not _quiet(warn_unit_slip, 0.0, "x", reference=100_000.0, reference_what="p")
    assert not _quiet(warn_unit_slip, float("inf"), "x", reference=1.0, reference_what="p")


def _campus_like_load():
    h = np.arange(len(IDX))
    return pd.Series(100_000.0 + 2_000.0 * np.sin(2 * np.pi * h / 24), index=IDX)


def test_size_warns_on_an_import_limit_in_mw():
    load = _campus_like_load()
    costs = mg.Costs(100, 40, 30, 120, import_usd_per_kwh=0.07, fuel_usd_per_kwh=0.08)
    with pytest.warns(InputWarning, match=r"size: import_limit_kw: 60 kW is 1/1,7\d\d .* "
                                          r"give 60,000 kW"):
        mg.size(load, pv_availability=None, costs=costs, import_limit_kw=60.0)
    _quiet(mg.size, load, pv_availability=None, costs=costs, import_limit_kw=10_000.0)


def test_facility_warns_on_a_power_limit_in_mw():
    kw = dict(start=pd.Timestamp("2025-01-06", tz="UTC"), end="6h", freq="1min", seed=0,
              progress=False)
    peak = aiload.facility("inference-1mw", **kw).power["facility_kw"].max()
    limit_mw = round(0.75 * peak / 1000.0, 2)  # 75 % of the peak, typed in MW
    with pytest.warns(InputWarning, match=r"power_limit_kw=\): .* If it is in MW"):
        aiload.facility("inference-1mw", power_limit_kw=limit_mw, **kw)
    # 75 % in kW: silent
    _quiet(aiload.facility, "inference-1mw", power_limit_kw=0.75 * peak, **kw)


def test_contingency_warns_on_an_unnamed_kw_series():
    net = pandapower.networks.case14()
    total_mw = float(net.load.p_mw.sum())  # 259 MW of load
    kw_values = pd.Series(100_000.0, index=IDX[:4])  # 100 MW, in kW, no name: read as MW
    assert 100_000.0 / max(total_mw, float(net.gen.p_mw.sum())) > UNIT_SLIP_FACTOR
    with pytest.warns(InputWarning, match=r"taken as MW.*name the series '\*_kw'"):
        try:
            grid.contingency(net, kw_values, bus=13, n_peak=1, margins=False)
        except Exception:  # 100 GW on case14 does not converge; the warning came first
            pass
    # named, it is 100 MW and no warning is given by the rule
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        grid.contingency(net, kw_values.rename("facility_kw") / 10, bus=13, n_peak=1,
                         margins=False)
    assert not [w for w in caught if "unit slip" in str(w.message)]
