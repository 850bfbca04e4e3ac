"""grid.timeseries under random and hostile facility series: an InputError naming what is
wrong, or results that agree with pandapower's own solver step by step (slack power = load +
losses, losses >= 0)."""

from __future__ import annotations

import copy
import math

import numpy as np
import pandapower as pp
import pandas as pd
import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from property_strategies import assert_clear_error, fast, hostile_floats, hostile_values

import grid
from aiload.errors import AiloadError


@pytest.fixture(scope="module")
def feeder():
    """A 20 kV slack bus and a 3 km cable to the facility bus (no other load)."""
    net = pp.create_empty_network()
    b0 = pp.create_bus(net, vn_kv=20.0)
    b1 = pp.create_bus(net, vn_kv=20.0)
    pp.create_ext_grid(net, b0, vm_pu=1.0)
    pp.create_line(net, b0, b1, length_km=3.0, std_type="NA2XS2Y 1x240 RM/25 12/20 kV")
    return net, b1


def _pandapower_slack_mw(net, bus, p_mw, pf):
    work = copy.deepcopy(net)
    pp.create_load(work, bus, p_mw=p_mw, q_mvar=p_mw * math.tan(math.acos(pf)))
    pp.runpp(work)
    return float(work.res_ext_grid.p_mw.iloc[0]), float(work.res_bus.vm_pu.iloc[bus])


@fast(4)
@given(
    p_mw=st.lists(st.floats(0.0, 10.0), min_size=1, max_size=4),
    pf=st.floats(0.85, 1.0),
)
def test_slack_power_matches_pandapower_and_covers_load_plus_losses(feeder, p_mw, pf):
    net, bus = feeder
    index = pd.date_range("2024-07-01", periods=len(p_mw), freq="1h", tz="UTC")
    res = grid.timeseries(net, pd.Series(p_mw, index=index), bus=bus, power_factor=pf)
    assert res.converged.all()
    slack = res.ext_grid_p_mw.to_numpy()
    assert (slack >= np.array(p_mw) - 1e-9).all()  # losses are not negative
    assert (slack <= np.array(p_mw) * 1.05 + 1e-4).all()  # and small on 3 km of cable
    k = int(np.argmax(p_mw))  # the hardest step, by pandapower's own Newton-Raphson
    ref_slack, ref_vm = _pandapower_slack_mw(net, bus, p_mw[k], pf)
    assert slack[k] == pytest.approx(ref_slack, abs=1e-6)
    assert res.vm_pu.iloc[k, bus] == pytest.approx(ref_vm, abs=1e-6)
    assert len(net.load) == 0  # the caller's network is not modified


@fast(40)
@given(
    values=st.lists(hostile_floats, min_size=0, max_size=4),
    pf=st.one_of(st.floats(0.85, 1.0), hostile_values),
    bus=st.one_of(st.sampled_from([1, 7, -1]), hostile_values),
)
def test_hostile_inputs_are_named_errors(feeder, values, pf, bus):
    net, _ = feeder
    index = pd.date_range("2024-07-01", periods=len(values), freq="1h", tz="UTC")
    try:
        res = grid.timeseries(net, pd.Series(values, index=index, dtype=float), bus=bus,
                              power_factor=pf)
    except AiloadError as err:
        assert_clear_error(err)
        event("refused")
        return
    event("solved")
    finite = np.array(values, dtype=float)
    assert np.isfinite(finite).all()  # nothing non-finite got through
    assert np.isfinite(res.ext_grid_p_mw[res.converged]).all()
