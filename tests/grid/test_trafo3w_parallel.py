"""3-winding transformers in every limit check, and N-1 of parallel circuits.

Every expected value is pandapower's own (``pandapower.runpp`` / ``calc_sc`` on a copy of
the network with the facility added, or with the element taken out by hand).
"""

from __future__ import annotations

import copy
import math
import warnings

import numpy as np
import pandapower as pp
import pandas as pd
import pytest

import grid
import grid.plots
from aiload.errors import InputError

PF = 0.95
TAN = math.tan(math.acos(PF))


def three_winding(n_trafo3w: int = 1) -> tuple[pp.pandapowerNet, int]:
    """110/20/10 kV, 40/40/10 MVA 3-winding transformer(s); the facility at 10 kV."""
    net = pp.create_empty_network()
    hv = pp.create_bus(net, 110.0)
    mv = pp.create_bus(net, 20.0)
    lv = pp.create_bus(net, 10.0)
    pp.create_ext_grid(net, hv, vm_pu=1.0)
    for _ in range(n_trafo3w):
        pp.create_transformer3w_from_parameters(
            net, hv, mv, lv, vn_hv_kv=110, vn_mv_kv=20, vn_lv_kv=10, sn_hv_mva=40,
            sn_mv_mva=40, sn_lv_mva=10, vk_hv_percent=10, vk_mv_percent=10, vk_lv_percent=10,
            vkr_hv_percent=0.3, vkr_mv_percent=0.3, vkr_lv_percent=0.3, pfe_kw=20,
            i0_percent=0.1)
    pp.create_load(net, mv, p_mw=5.0, q_mvar=1.0)
    return net, lv


def runpp_with(net: pp.pandapowerNet, bus: int, p_mw: float, out: tuple = (),
               pf: float = PF):
    """pandapower's reference: the facility as a load, elements ``out`` out of service."""
    ref = copy.deepcopy(net)
    pp.create_load(ref, bus, p_mw=p_mw, q_mvar=p_mw * math.tan(math.acos(pf)))
    for kind, idx in out:
        ref[kind].at[idx, "in_service"] = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pp.runpp(ref, numba=False)
    return ref


IDX = pd.date_range("2025-01-01", periods=3, freq="h", tz="UTC")


@pytest.mark.parametrize("engine", ["auto", "newton", "runpp"])
def test_timeseries_trafo3w_loading_equals_runpp(engine):
    net, lv = three_winding()
    p = [5.0, 20.0, 8.0]
    res = grid.timeseries(net, pd.Series(p, IDX), bus=lv, power_factor=PF, engine=engine)
    ref = [runpp_with(net, lv, x).res_trafo3w.loading_percent.iloc[0] for x in p]
    got = res.trafo3w_loading_percent[0].to_numpy()
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-6)
    assert ref[1] > 200  # the 10 MVA winding at 20 MW: the check has something to catch
    bad = res.violations()
    row = bad[bad.element == "trafo3w 0"]
    assert list(row.time) == [IDX[1]]
    assert row.value.iloc[0] == pytest.approx(ref[1], abs=1e-6)


def test_hosting_capacity_binds_on_the_trafo3w_winding():
    net, lv = three_winding()
    lim = grid.Limits(vm_min_pu=0.90, vm_max_pu=1.10)
    hc = grid.hosting_capacity(net, bus=lv, limits=lim, power_factor=PF, tolerance_mw=0.01)
    assert hc.element == "trafo3w 0" and hc.quantity == "loading_percent"
    below = runpp_with(net, lv, hc.p_mw)
    above = runpp_with(net, lv, hc.p_mw + 0.01)
    assert below.res_trafo3w.loading_percent.iloc[0] <= 100.0
    assert above.res_trafo3w.loading_percent.iloc[0] > 100.0
    assert below.res_bus.vm_pu.min() > 0.90  # the voltage is not what binds


def test_flexible_headroom_binds_on_the_trafo3w_winding():
    from grid.flexible import headroom

    net, lv = three_winding()
    lim = grid.Limits(vm_min_pu=0.90, vm_max_pu=1.10)
    head, bind, _, _ = headroom(net, np.array([1.0]), bus=lv, limits=lim, power_factor=PF,
                                tolerance_mw=0.01)
    assert list(bind) == ["trafo3w 0"]
    assert runpp_with(net, lv, head[0]).res_trafo3w.loading_percent.iloc[0] <= 100.0
    assert runpp_with(net, lv, head[0] + 0.01).res_trafo3w.loading_percent.iloc[0] > 100.0


def test_contingency_outages_a_trafo3w_and_reports_its_loading():
    net, lv = three_winding(n_trafo3w=2)
    load = pd.Series([6.0, 9.0], IDX[:2])
    tab = grid.contingency(net, load, bus=lv, power_factor=PF, margins=False)
    assert list(tab.element) == ["none", "trafo3w 0", "trafo3w 1"]
    assert tab.set_index("element").at["trafo3w 0", "where"] == "bus 0-1-2"
    for name, out in (("none", ()), ("trafo3w 0", (("trafo3w", 0),))):
        ref = runpp_with(net, lv, 9.0, out)
        row = tab.set_index("element").loc[name]
        assert row.max_trafo_loading_percent == pytest.approx(
            ref.res_trafo3w.loading_percent.max(), abs=1e-6)
        assert row.min_vm_pu == pytest.approx(ref.res_bus.vm_pu.min(), abs=1e-9)
    # one transformer out: the other's 10 MVA winding carries the whole 9 MW
    assert tab.max_trafo_loading_percent.iloc[1] > 90.0


def test_short_circuit_n1_outages_a_trafo3w():
    import pandapower.shortcircuit as sc

    net, lv = three_winding(n_trafo3w=2)
    data = grid.ShortCircuitData(ext_grid_sc_max_mva=3000, ext_grid_sc_min_mva=2000,
                                 ext_grid_rx=0.1, line_end_temp_degree=80)
    s = grid.short_circuit_strength(net, bus=lv, facility_mw=5.0, data=data)
    assert list(s.outages.element) == ["trafo3w 0", "trafo3w 1"]
    ref = copy.deepcopy(net)
    ref.ext_grid["s_sc_max_mva"], ref.ext_grid["s_sc_min_mva"] = 3000.0, 2000.0
    ref.ext_grid["rx_max"], ref.ext_grid["rx_min"] = 0.1, 0.1
    ref.trafo3w.at[0, "in_service"] = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sc.calc_sc(ref, bus=lv, case="min", fault="3ph")
    assert s.outages.skss_min_mva.iloc[0] == pytest.approx(ref.res_bus_sc.at[lv, "skss_mw"],
                                                           rel=1e-9)
    assert s.outages.skss_min_mva.iloc[0] < s.skss_min_mva


@pytest.mark.parametrize("kind", ["impedance", "dcline"])
def test_unchecked_branch_elements_are_refused(kind):
    net, lv = three_winding()
    extra = pp.create_bus(net, 20.0)
    if kind == "impedance":
        pp.create_impedance(net, 1, extra, rft_pu=0.01, xft_pu=0.05, sn_mva=10)
    else:
        pp.create_dcline(net, 1, extra, p_mw=1.0, loss_percent=1.0, loss_mw=0.1,
                         vm_from_pu=1.0, vm_to_pu=1.0)
    with pytest.raises(InputError, match=rf"net.{kind} has 1 in-service element.*no loading "
                                         rf"limit and no N-1 case.*in_service = False"):
        grid.timeseries(net, pd.Series([1.0, 2.0, 1.0], IDX), bus=lv)
    net[kind]["in_service"] = False
    assert grid.timeseries(net, pd.Series([1.0, 2.0, 1.0], IDX), bus=lv).converged.all()


def double_circuit(rows: bool) -> tuple[pp.pandapowerNet, int]:
    """A double-circuit 110 kV line and two 40 MVA transformers: two rows each, or one row
    each with ``parallel=2`` (the same equipment)."""
    net = pp.create_empty_network()
    b0, b1 = pp.create_bus(net, 110.0), pp.create_bus(net, 110.0)
    b2 = pp.create_bus(net, 20.0)
    pp.create_ext_grid(net, b0)
    for _ in range(2 if rows else 1):
        pp.create_line(net, b0, b1, 20.0, "149-AL1/24-ST1A 110.0", parallel=1 if rows else 2)
        pp.create_transformer(net, b1, b2, "40 MVA 110/20 kV", parallel=1 if rows else 2)
    return net, b2


def test_n1_of_a_parallel_row_takes_out_one_circuit():
    load = pd.Series([30.0, 50.0, 40.0], IDX)
    cols = ["facility_islanded", "converged_steps", "min_vm_pu", "max_vm_pu",
            "max_line_loading_percent", "max_trafo_loading_percent"]
    net_p, bus = double_circuit(rows=False)
    net_r, _ = double_circuit(rows=True)
    par = grid.contingency(net_p, load, bus=bus, margins=False).set_index("element")
    two = grid.contingency(net_r, load, bus=bus, margins=False).set_index("element")
    assert list(par.index) == ["none", "line 0 (1 of 2 circuits)", "trafo 0 (1 of 2 circuits)"]
    for a, b in (("none", "none"), ("line 0 (1 of 2 circuits)", "line 0"),
                 ("trafo 0 (1 of 2 circuits)", "trafo 0")):
        for c in cols:
            assert par.at[a, c] == pytest.approx(two.at[b, c], abs=1e-9), (a, c)
    # and against pandapower: one transformer of the two out at the 50 MW peak
    ref = runpp_with(net_r, bus, 50.0, pf=0.99)
    ref_out = runpp_with(net_r, bus, 50.0, (("trafo", 0),), pf=0.99)
    row = par.loc["trafo 0 (1 of 2 circuits)"]
    assert row.max_trafo_loading_percent == pytest.approx(
        ref_out.res_trafo.loading_percent.max(), abs=1e-6)
    assert row.min_vm_pu == pytest.approx(ref_out.res_bus.vm_pu.min(), abs=1e-9)
    assert row.max_trafo_loading_percent > 130 and not row.facility_islanded
    assert ref.res_trafo.loading_percent.max() < 70  # intact: both share the load


def test_n1_of_a_parallel_row_on_the_runpp_path(monkeypatch):
    from grid import engines

    monkeypatch.setattr(engines, "_fast_reason", lambda net: "forced for the test")
    load = pd.Series([30.0, 50.0], IDX[:2])
    net_p, bus = double_circuit(rows=False)
    net_r, _ = double_circuit(rows=True)
    par = grid.contingency(net_p, load, bus=bus, margins=False).set_index("element")
    two = grid.contingency(net_r, load, bus=bus, margins=False).set_index("element")
    for c in ("min_vm_pu", "max_line_loading_percent", "max_trafo_loading_percent"):
        assert par.at["trafo 0 (1 of 2 circuits)", c] == pytest.approx(two.at["trafo 0", c],
                                                                       abs=1e-9)
        assert par.at["line 0 (1 of 2 circuits)", c] == pytest.approx(two.at["line 0", c],
                                                                      abs=1e-9)


def test_short_circuit_n1_of_a_parallel_row_takes_out_one_circuit():
    data = grid.ShortCircuitData(ext_grid_sc_max_mva=3000, ext_grid_sc_min_mva=2000,
                                 ext_grid_rx=0.1, line_end_temp_degree=80)
    net_p, bus = double_circuit(rows=False)
    net_r, _ = double_circuit(rows=True)
    par = grid.short_circuit_strength(net_p, bus=bus, facility_mw=50.0, data=data)
    two = grid.short_circuit_strength(net_r, bus=bus, facility_mw=50.0, data=data)
    a = par.outages.set_index("element")
    b = two.outages.set_index("element")
    assert not a.facility_islanded.any()
    for x, y in (("trafo 0 (1 of 2 circuits)", "trafo 0"), ("line 0 (1 of 2 circuits)", "line 0")):
        for c in ("skss_max_mva", "skss_min_mva", "scr_min"):
            assert a.at[x, c] == pytest.approx(b.at[y, c], rel=1e-9), (x, c)
    assert a.at["trafo 0 (1 of 2 circuits)", "scr_min"] < par.scr_min
    assert (net_p.line.parallel == 2).all()  # the input net is untouched


def test_pv_curve_takes_the_contingency_label_of_one_circuit():
    net_p, bus = double_circuit(rows=False)
    net_r, _ = double_circuit(rows=True)
    a = grid.pv_curve(net_p, bus=bus, outage="trafo 0 (1 of 2 circuits)")
    b = grid.pv_curve(net_r, bus=bus, outage="trafo 0")
    assert a.outage == "trafo 0 (1 of 2 circuits)"
    assert a.nose_p_mw == pytest.approx(b.nose_p_mw, rel=1e-9)


def test_cosimulate_loading_controller_holds_a_trafo3w_winding(monkeypatch):
    """The closed loop watches a 3-winding transformer's 10 MVA winding (checked by runpp)."""
    import grid.cosim as cosim
    from tests.grid.test_cosim import FakeFacility

    net, lv = three_winding()
    idx = pd.date_range("2025-01-01", periods=36, freq="10min", tz="UTC")
    demand = pd.Series(np.linspace(4.0, 14.0, len(idx)) * 1e3, idx, name="facility_kw")
    monkeypatch.setattr(cosim, "_facility_call", FakeFacility(demand, 600.0))
    limits = grid.Limits(vm_min_pu=0.85, vm_max_pu=1.15)
    for branches in (["trafo3w 0"], None):
        res = grid.cosimulate(net, "stand-in", bus=lv, start=idx[0], end="6h", freq="10min",
                              controller="loading", branches=branches, limits=limits,
                              power_factor=0.99)
        before = res.open_loop.trafo3w_loading_percent[0]
        after = res.grid.trafo3w_loading_percent[0]
        assert (before > 110).sum() > 5
        limited = np.isfinite(res.load.power["limit_kw"].to_numpy())
        assert limited.any() and not ((after > 100 + 1e-6).to_numpy() & limited).any()
        k = int(np.flatnonzero(limited)[-1])
        ref = runpp_with(net, lv, float(res.grid.facility_mw.iloc[k]), pf=0.99)
        assert ref.res_trafo3w.loading_percent.iloc[0] == pytest.approx(after.iloc[k], abs=1e-6)


def test_loading_duration_plot_shows_the_trafo3w():
    import matplotlib

    matplotlib.use("Agg")
    net, lv = three_winding()
    res = grid.timeseries(net, pd.Series([5.0, 20.0, 8.0], IDX), bus=lv)
    ax = grid.plots.loading_duration(res, top=1)
    assert [line.get_label() for line in ax.get_lines()][0] == "trafo3w 0"
