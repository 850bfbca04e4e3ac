"""load_loss reports the branches a trip loads up, and the overloads it leaves.

Expected values are pandapower's own (``pandapower.runpp`` with and without the facility).
"""

from __future__ import annotations

import copy
import math
import warnings

import pandapower as pp
import pytest

import grid
from aiload.errors import InputError

P_MW = 37.0


def reverse_flow_net() -> tuple[pp.pandapowerNet, int]:
    """Two 20 kV cables to a campus with 40 MW of local generation: the facility absorbs it."""
    net = pp.create_empty_network()
    b0, b1 = pp.create_bus(net, 110.0), pp.create_bus(net, 110.0)
    b2, b3 = pp.create_bus(net, 20.0), pp.create_bus(net, 20.0)
    mv2, lv2 = pp.create_bus(net, 20.0), pp.create_bus(net, 10.0)
    pp.create_ext_grid(net, b0)
    pp.create_line(net, b0, b1, 10.0, "149-AL1/24-ST1A 110.0")
    pp.create_transformer(net, b1, b2, "40 MVA 110/20 kV")
    pp.create_line(net, b2, b3, 3.0, "NA2XS2Y 1x240 RM/25 12/20 kV")
    pp.create_sgen(net, b3, p_mw=40.0, q_mvar=0.0)
    pp.create_load(net, b3, p_mw=2.0, q_mvar=0.5)
    # a 3-winding transformer with generation behind its 10 kV winding, next to the campus
    pp.create_transformer3w_from_parameters(
        net, b1, mv2, lv2, vn_hv_kv=110, vn_mv_kv=20, vn_lv_kv=10, sn_hv_mva=40,
        sn_mv_mva=40, sn_lv_mva=20, vk_hv_percent=10, vk_mv_percent=10, vk_lv_percent=10,
        vkr_hv_percent=0.3, vkr_mv_percent=0.3, vkr_lv_percent=0.3, pfe_kw=0, i0_percent=0,
        shift_mv_degree=150.0, shift_lv_degree=150.0)  # as the 40 MVA trafo's, for the loop
    pp.create_sgen(net, lv2, p_mw=2.0)
    pp.create_line(net, mv2, b3, 2.0, "NA2XS2Y 1x240 RM/25 12/20 kV")
    return net, b3


def solved(net, bus=None, p_mw=0.0):
    ref = copy.deepcopy(net)
    if bus is not None:
        pp.create_load(ref, bus, p_mw=p_mw, q_mvar=p_mw * math.tan(math.acos(0.99)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pp.runpp(ref, numba=False)
    return ref


def test_branches_the_trip_loads_up_match_runpp():
    net, bus = reverse_flow_net()
    ev = grid.load_loss(net, bus=bus, p_mw=P_MW)
    pre, post = solved(net, bus, P_MW), solved(net)
    table = {"line": "res_line", "trafo": "res_trafo", "trafo3w": "res_trafo3w"}
    expected = {}
    for kind, res in table.items():
        for i in net[kind].index:
            a, b = pre[res].loading_percent[i], post[res].loading_percent[i]
            if b - a > grid.loadloss.RELIEF_PERCENT:
                expected[f"{kind} {i}"] = (a, b)
    assert set(ev.branches_loaded.index) == set(expected)
    assert {"line 1", "trafo 0", "trafo3w 0"} <= set(expected)  # lines and both transformer kinds
    for name, (a, b) in expected.items():
        row = ev.branches_loaded.loc[name]
        assert row.loading_pre_percent == pytest.approx(a, abs=1e-6)
        assert row.loading_post_percent == pytest.approx(b, abs=1e-6)
        assert row.over_limit_post == (b > 100.0)
    assert ev.branches_loaded.change_percent.is_monotonic_decreasing
    # the cables: lightly loaded with the facility, overloaded after it trips
    over = {k for k, (_, b) in expected.items() if b > 100.0}
    assert set(ev.overloads_post.index) == over and {"line 1", "line 2"} <= over
    assert max(pre.res_line.loading_percent[[1, 2]]) < 50
    assert ev.overloads_post.loading_post_percent.is_monotonic_decreasing
    assert not set(ev.lines_relieved.index) & {"line 1", "line 2", 1, 2}


def test_the_study_limit_decides_what_is_an_overload():
    net, bus = reverse_flow_net()
    post = solved(net)
    ev = grid.load_loss(net, bus=bus, p_mw=P_MW, loading_max_percent=50.0)
    loads = {f"line {i}": v for i, v in post.res_line.loading_percent.items()}
    loads |= {f"trafo {i}": v for i, v in post.res_trafo.loading_percent.items()}
    loads |= {f"trafo3w {i}": v for i, v in post.res_trafo3w.loading_percent.items()}
    assert set(ev.overloads_post.index) == {k for k, v in loads.items() if v > 50.0}
    assert ev.loading_max_percent == 50.0
    with pytest.raises(InputError, match=r"loading_max_percent: expected a positive finite "
                                         r"loading limit \[%\], e.g. 100, got -1"):
        grid.load_loss(net, bus=bus, p_mw=P_MW, loading_max_percent=-1)


def test_overloads_post_lists_branches_overloaded_anyway():
    """cigre_mv's trafo 0 is above 100 % with or without a 2 MW facility; a trip relieves
    it but leaves it overloaded, and overloads_post says so."""
    net = grid.networks.load("cigre_mv")
    ev = grid.load_loss(net, bus=5, p_mw=2.0)
    post = solved(net)
    over = {f"line {i}" for i, v in post.res_line.loading_percent.items() if v > 100}
    over |= {f"trafo {i}" for i, v in post.res_trafo.loading_percent.items() if v > 100}
    assert set(ev.overloads_post.index) == over and over
    for name in over:
        kind, i = name.split()
        ref = post[f"res_{kind}"].loading_percent[int(i)]
        assert ev.overloads_post.at[name, "loading_post_percent"] == pytest.approx(ref, abs=1e-6)
        assert name not in ev.branches_loaded.index  # the trip lowers it
