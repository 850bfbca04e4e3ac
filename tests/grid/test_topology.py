"""The network as it is: an unsupplied facility bus is refused with its cut named, an outage
that islands it is a reported outcome, a base network that already breaks the limits is
reported as such. Every verdict is confirmed with pandapower's own topology and runpp."""

from __future__ import annotations

import copy
import re
import warnings

import numpy as np
import pandapower as pp
import pandapower.topology as top
import pandas as pd
import pytest

import grid
from aiload.errors import InputError
from grid.topology import cut_of, supplied_buses


def _runpp(net, bus: int | None = None, p_mw: float = 0.0):
    ref = copy.deepcopy(net)
    if bus is not None:
        pp.create_load(ref, bus, p_mw=p_mw, q_mvar=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pp.runpp(ref, lightsim2grid=False, numba=False, tolerance_mva=1e-8)
    return ref


def _cut_networks():
    """CIGRE MV with bus 5 cut off in four different ways, and the elements that cut it."""
    out = []
    net = grid.networks.load("cigre_mv")  # bus 4-5-6 feeder end; S2 (switch 1) is open
    a = copy.deepcopy(net)
    a.line.loc[[3, 4], "in_service"] = False  # 4-5 and 5-6 out: bus 5 alone
    out.append(("lines out", a, {"line 3", "line 4"}))  # line 4 alone: bus 6 is cut too
    b = copy.deepcopy(net)
    b.line.loc[3, "in_service"] = False
    b.switch.loc[0, "closed"] = False  # line 12's switch at bus 6 opened too
    out.append(("line out + open switch", b, {"line 3", "line 12"}))
    c = copy.deepcopy(net)
    c.bus.loc[4, "in_service"] = False
    out.append(("bus out", c, {"line 3", "line 12"}))
    d = copy.deepcopy(net)
    d.trafo.loc[0, "in_service"] = False
    out.append(("trafo out", d, {"trafo 0", "line 14"}))
    return out


@pytest.mark.parametrize(("case", "net", "cut"), _cut_networks(), ids=lambda x: str(x)[:22])
def test_an_unsupplied_bus_is_what_pandapower_leaves_unsolved(case, net, cut):
    # pandapower's own verdicts: its topology calls the bus unsupplied, runpp converges
    # with NaN there and the slack does not see the 3 MW load
    assert 5 in top.unsupplied_buses(net)
    before = _runpp(net)
    after = _runpp(net, 5, 3.0)
    assert np.isnan(after.res_bus.vm_pu.at[5])
    assert after.res_ext_grid.p_mw.sum() == pytest.approx(before.res_ext_grid.p_mw.sum(), abs=1e-6)
    found = cut_of(net, 5)
    assert {" ".join(entry.split()[:2]) for entry in found} == cut
    # an element of the cut restored alone reconnects the bus (pandapower's topology)
    # unless the cut says the bus beyond it is not supplied either
    for entry in found:
        kind, idx = entry.split()[:2]
        fixed = copy.deepcopy(net)
        fixed[kind].loc[int(idx), "in_service"] = True
        fixed.bus.loc[:, "in_service"] = True
        sw = (fixed.switch.et == {"line": "l", "trafo": "t"}[kind]) & \
            (fixed.switch.element == int(idx))
        fixed.switch.loc[sw, "closed"] = True
        alone = "not supplied either" not in entry
        assert (5 not in top.unsupplied_buses(fixed)) == alone, entry


def test_every_study_refuses_an_unsupplied_bus_and_names_the_cut():
    net = _cut_networks()[1][1]
    idx = pd.date_range("2024-01-01", periods=3, freq="h", tz="UTC")
    load = pd.Series([1.0, 2.0, 1.5], idx)
    calls = [
        lambda: grid.timeseries(net, load, bus=5),
        lambda: grid.hosting_capacity(net, bus=5, limits=grid.Limits(0.9, 1.1, 150)),
        lambda: grid.contingency(net, load, bus=5, n_peak=1),
        lambda: grid.load_loss(net, bus=5, p_mw=2.0),
    ]
    for call in calls:
        with pytest.raises(InputError) as err:
            call()
        text = str(err.value)
        assert text.startswith("bus 5 is not supplied: no in-service path joins it to a slack")
        assert "line 3 (out of service)" in text
        assert "line 12 (switch 0 open, switch 1 open)" in text
        assert "Close the switch or put the element back in service" in text


def test_supplied_buses_match_pandapower_on_random_outages():
    base = grid.networks.load("case33bw")
    rng = np.random.default_rng(7)
    for _ in range(15):
        net = copy.deepcopy(base)
        out = rng.choice(net.line.index, size=3, replace=False)
        net.line.loc[out, "in_service"] = False
        expected = set(net.bus.index) - set(top.unsupplied_buses(net))
        assert supplied_buses(net) == {int(b) for b in expected}
        solved = _runpp(net)
        assert set(solved.res_bus.index[solved.res_bus.vm_pu.notna()]) == expected


def test_an_outage_that_islands_the_facility_is_a_reported_outcome():
    net = grid.networks.load("cigre_mv")
    idx = pd.date_range("2024-01-01", periods=3, freq="h", tz="UTC")
    load = pd.Series([1.0, 2.5, 1.5], idx)
    table = grid.contingency(net, load, bus=6, outages="lines", n_peak=2).set_index("element")
    assert table.loc["none"].facility_unserved_mw == 0.0
    islanding = 0
    for i in net.line.index[net.line.in_service]:
        case = copy.deepcopy(net)
        case.line.loc[i, "in_service"] = False
        cut = bool(np.isnan(_runpp(case, 6, 2.5).res_bus.vm_pu.at[6]))  # pandapower's verdict
        row = table.loc[f"line {i}"]
        assert bool(row.facility_islanded) == cut, i
        assert row.facility_unserved_mw == (pytest.approx(2.5) if cut else 0.0)
        islanding += cut
    assert islanding == 5  # the radial feeder from the substation to bus 6: lines 0-4


def test_a_base_network_that_breaks_the_limits_is_reported_as_such():
    net = grid.networks.load("cigre_mv")
    base = _runpp(net)
    vm = base.res_bus.vm_pu
    lowest = int(vm.idxmin())
    with pytest.raises(InputError) as err:
        grid.hosting_capacity(net, bus=8)  # default 0.95-1.05 band; the base is below it
    text = str(err.value)
    assert text.startswith("the network already violates the limits without the facility: "
                           f"bus {lowest} at ")
    value = float(re.search(rf"bus {lowest} at ([0-9.]+) pu", text).group(1))
    assert value == pytest.approx(vm.min(), abs=1e-5)
    by = float(re.search(rf"bus {lowest} at [0-9.]+ pu < vm_min_pu 0.95 \(by ([0-9.e-]+) pu",
                         text).group(1))
    assert by == pytest.approx(0.95 - vm.min(), rel=1e-2)
    # the limits it suggests are met by the base network, and then a capacity exists
    suggested = re.search(r"grid\.Limits\((.*)\)\.$", text).group(1)
    limits = eval(f"grid.Limits({suggested})", {"grid": grid})  # our own message's text
    assert vm.min() >= limits.vm_min_pu and vm.max() <= limits.vm_max_pu
    assert base.res_line.loading_percent.max() <= limits.loading_max_percent
    assert grid.hosting_capacity(net, bus=8, limits=limits).p_mw >= 0.0
