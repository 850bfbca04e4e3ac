"""Hosting capacity, N-1 and load loss, each confirmed by independent runpp runs."""

from __future__ import annotations

import copy
import math
import warnings

import numpy as np
import pandapower as pp
import pandas as pd
import pytest

import grid
from aiload.errors import InputError

TAN99 = math.tan(math.acos(0.99))


def violated(ref, limits: grid.Limits) -> bool:
    """Any limit broken in a solved pandapower net (checked on its own result tables)."""
    vm = ref.res_bus.vm_pu.dropna()
    return bool(
        (vm < limits.vm_min_pu).any()
        or (vm > limits.vm_max_pu).any()
        or (ref.res_line.loading_percent > limits.loading_max_percent).any()
        or (ref.res_trafo.loading_percent > limits.loading_max_percent).any()
    )


@pytest.mark.parametrize(
    ("name", "bus", "limits"),
    [("cigre_mv", 8, grid.Limits(vm_min_pu=0.90, loading_max_percent=120.0)),
     ("case118", 50, grid.Limits(vm_min_pu=0.94, vm_max_pu=1.06))],
)
def test_hosting_capacity_confirmed_just_below_and_above(name, bus, limits, runpp_ref):
    net = grid.networks.load(name)
    # the reference (runpp_ref) runs without Q limits; tests/grid/test_qlims.py has them
    hc = grid.hosting_capacity(net, bus=bus, limits=limits, tolerance_mw=0.01,
                               enforce_q_lims=False)
    assert hc.p_mw > 0
    below = runpp_ref(net, bus, hc.p_mw, hc.p_mw * TAN99)
    assert not violated(below, limits)
    above_p = hc.p_mw + 2 * hc.tolerance_mw
    try:
        above = runpp_ref(net, bus, above_p, above_p * TAN99)
    except pp.LoadflowNotConverged:
        assert hc.quantity == "converged"
        return
    assert violated(above, limits)
    kind, idx = hc.element.split()
    if hc.quantity == "vm_pu":
        value = above.res_bus.vm_pu.at[int(idx)]
        assert value < limits.vm_min_pu or value > limits.vm_max_pu
    else:
        assert above[f"res_{kind}"].loading_percent.at[int(idx)] > limits.loading_max_percent


def test_hosting_capacity_over_a_series_is_set_by_the_worst_hour(runpp_ref):
    net = grid.networks.load("cigre_mv")
    idx = pd.date_range("2024-01-01", periods=6, freq="h", tz="UTC")
    background = pd.Series([0.5, 0.7, 1.0, 0.9, 0.6, 0.4], index=idx)
    limits = grid.Limits(vm_min_pu=0.90, loading_max_percent=120.0)
    hc = grid.hosting_capacity(net, bus=8, limits=limits, background=background)
    single = grid.hosting_capacity(net, bus=8, limits=limits)
    assert hc.time == idx[2]  # the heaviest background hour binds
    assert hc.p_mw == pytest.approx(single.p_mw, abs=0.02)
    for k in range(6):
        assert not violated(runpp_ref(net, 8, hc.p_mw, hc.p_mw * TAN99, background.iloc[k]), limits)
    above = hc.p_mw + 0.02
    assert violated(runpp_ref(net, 8, above, above * TAN99, background.iloc[2]), limits)
    lighter = grid.hosting_capacity(net, bus=8, limits=limits, background=background * 0.5)
    assert lighter.p_mw > hc.p_mw


def test_n1_case_checked_by_taking_the_element_out_by_hand(lumi_kw, scale_to, runpp_ref):
    net = grid.networks.load("cigre_mv")
    load = scale_to(lumi_kw.iloc[:24], 2.0)
    table = grid.contingency(net, load, bus=8, n_peak=3).set_index("element")
    assert table.index[0] == "none"
    assert len(table) == 1 + len(net.line) + len(net.trafo)
    out = copy.deepcopy(net)
    out.line.at[9, "in_service"] = False  # the 3-8 tie
    peak = load.nlargest(3)
    vmins = []
    for t, p in peak.items():
        ref = runpp_ref(out, 8, float(p), float(p) * TAN99)
        vmins.append((ref.res_bus.vm_pu.min(), t, ref.res_line.loading_percent.max()))
    worst = min(vmins)
    row = table.loc["line 9"]
    assert row.min_vm_pu == pytest.approx(worst[0], abs=1e-6)
    assert row.worst_time == worst[1]
    assert row.max_line_loading_percent == pytest.approx(max(v[2] for v in vmins), abs=1e-4)
    assert row.converged_steps == 3


def test_n1_reports_islanding(lumi_kw, scale_to):
    net = grid.networks.load("cigre_mv")
    load = scale_to(lumi_kw.iloc[:6], 1.0)
    table = grid.contingency(net, load, bus=14, outages="lines", n_peak=2).set_index("element")
    # line 10 (bus 12-13) feeds buses 13 and 14 radially once it is out
    ref = copy.deepcopy(net)
    ref.line.at[10, "in_service"] = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pp.runpp(ref, numba=False)
    cut = ref.res_bus.vm_pu.isna()
    assert table.at["line 10", "islanded_buses"] == int(cut.sum()) == 2
    assert bool(table.at["line 10", "facility_islanded"]) is bool(cut.at[14]) is True
    assert table.at["line 12", "islanded_buses"] == 0


def test_load_loss_matches_runpp_with_and_without_the_facility(runpp_ref):
    net = grid.networks.load("case118")
    ev = grid.load_loss(net, bus=50, p_mw=120.0, enforce_q_lims=False)  # as runpp_ref
    pre = runpp_ref(net, 50, 120.0, 120.0 * TAN99)
    post = runpp_ref(net, 50, 0.0, 0.0)
    np.testing.assert_allclose(ev.vm_pre_pu, pre.res_bus.vm_pu, atol=1e-6)
    np.testing.assert_allclose(ev.vm_post_pu, post.res_bus.vm_pu, atol=1e-6)
    rise = post.res_bus.vm_pu - pre.res_bus.vm_pu
    assert ev.largest_rise_bus == int(rise.idxmax())
    assert ev.largest_rise_pu == pytest.approx(rise.max(), abs=1e-6)
    relief = post.res_line.loading_percent - pre.res_line.loading_percent
    assert set(ev.lines_relieved.index) == set(relief.index[relief < -1e-3])
    # sensitivity: a second difference with a different step, by runpp
    a = runpp_ref(net, 50, 125.0, 125.0 * TAN99)
    b = runpp_ref(net, 50, 115.0, 115.0 * TAN99)
    dvdp = (a.res_bus.vm_pu.at[50] - b.res_bus.vm_pu.at[50]) / 10.0
    assert ev.sensitivity_pu_per_mw.at[50] < 0
    assert ev.sensitivity_pu_per_mw.at[50] == pytest.approx(dvdp, rel=0.02)


def test_load_loss_rejects_negative_power():
    with pytest.raises(InputError, match=r"p_mw: expected a finite facility power >= 0"):
        grid.load_loss(grid.networks.load("cigre_mv"), bus=5, p_mw=-1.0)


def test_limits_validation():
    with pytest.raises(InputError, match="vm_min_pu .* must be below vm_max_pu"):
        grid.Limits(vm_min_pu=1.1, vm_max_pu=1.05)
    with pytest.raises(InputError, match="loading_max_percent: expected a positive"):
        grid.Limits(loading_max_percent=0)


@pytest.mark.parametrize(("name", "n_bus"), [("cigre_mv", 15), ("cigre_hv", 13), ("case33bw", 33),
                                             ("case118", 118), ("case300", 300)])
def test_networks_by_name(name, n_bus):
    assert len(grid.networks.load(name).bus) == n_bus


def test_network_from_pandapower_json(tmp_path):
    net = grid.networks.load("case33bw")
    path = tmp_path / "feeder.json"
    pp.to_json(net, str(path))
    again = grid.networks.load(path)
    assert len(again.bus) == 33 and again.load.p_mw.sum() == pytest.approx(net.load.p_mw.sum())


def test_unknown_network_lists_names_and_suggests():
    with pytest.raises(InputError, match=r"unknown network 'cigre-mv'\. Did you mean 'cigre_mv'\?"
                                         r".*case300"):
        grid.networks.load("cigre-mv")


def test_n1_fast_path_equals_runpp_path_for_every_outage(lumi_kw, scale_to, monkeypatch):
    net = grid.networks.load("cigre_mv")
    load = scale_to(lumi_kw.iloc[:12], 2.0)
    fast = grid.contingency(net, load, bus=14, n_peak=1)
    # force pandapower's own runpp for every outage (the reference path)
    from grid import engines

    monkeypatch.setattr(engines, "_fast_reason", lambda net: "forced reference path")
    slow = grid.contingency(net, load, bus=14, n_peak=1)
    cols = ["element", "islanded_buses", "facility_islanded", "converged_steps", "worst_time"]
    pd.testing.assert_frame_equal(fast[cols], slow[cols])
    for col in ("min_vm_pu", "max_vm_pu"):
        np.testing.assert_allclose(fast[col], slow[col], atol=1e-6)
    for col in ("max_line_loading_percent", "max_trafo_loading_percent"):
        np.testing.assert_allclose(fast[col], slow[col], atol=1e-4)
    assert slow.islanded_buses.max() > 0


# pandapower's own MATPOWER reader trips a pandas FutureWarning; it is theirs, not ours
@pytest.mark.filterwarnings("ignore:Setting an item of incompatible dtype:FutureWarning")
def test_network_from_matpower_mat(tmp_path):
    from pandapower.converter.matpower import to_mpc

    net = grid.networks.load("case33bw")
    path = tmp_path / "feeder.mat"
    to_mpc(net, str(path), init="flat")
    again = grid.networks.load(path)
    assert len(again.bus) == 33
    assert again.load.p_mw.sum() == pytest.approx(net.load.p_mw.sum(), rel=1e-9)


def test_missing_network_file(tmp_path):
    with pytest.raises(InputError, match=r"network file .*nope\.json' does not exist"):
        grid.networks.load(tmp_path / "nope.json")
