"""Hosting capacity of an interconnection queue (issue 30): the common scaling and the
allocation in queue order, each checked by an independent bisection on pandapower.runpp."""

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

PF = 0.97
TAN = math.tan(math.acos(PF))
LIMITS = grid.Limits(vm_min_pu=0.94, vm_max_pu=1.06)
TOL_MW = 0.5


def violates(net, loads_mw: dict[int, float], limits=LIMITS) -> bool:
    """pandapower.runpp with every facility attached (Q limits enforced): any limit broken,
    or no solution at all."""
    ref = copy.deepcopy(net)
    for bus, p in loads_mw.items():
        pp.create_load(ref, bus, p_mw=p, q_mvar=p * TAN)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pp.runpp(ref, lightsim2grid=False, numba=False, tolerance_mva=1e-8,
                     enforce_q_lims=True)
    except pp.LoadflowNotConverged:
        return True
    vm = ref.res_bus.vm_pu.dropna()
    loading = pd.concat([ref.res_line.loading_percent, ref.res_trafo.loading_percent])
    return bool((vm < limits.vm_min_pu).any() or (vm > limits.vm_max_pu).any()
                or (loading > limits.loading_max_percent).any())


def largest_by_bisection(fails, tolerance: float) -> float:
    """Written separately from grid's search: double from 1 MW, then halve the bracket."""
    lo, hi = 0.0, 1.0
    while not fails(hi):
        lo, hi = hi, 2.0 * hi
    while hi - lo > tolerance:
        mid = (lo + hi) / 2.0
        lo, hi = (lo, mid) if fails(mid) else (mid, hi)
    return lo


@pytest.fixture(scope="module")
def case118():
    return grid.networks.load("case118")


@pytest.fixture(scope="module")
def queue_result(case118):
    queue = {59: 200.0, 49: 200.0, 80: 300.0}
    return queue, grid.hosting_capacity(case118, queue=queue, limits=LIMITS, power_factor=PF,
                                        tolerance_mw=TOL_MW, enforce_q_lims=True)


def test_queue_order_allocation_equals_an_independent_bisection_per_facility(case118,
                                                                            queue_result):
    queue, qc = queue_result
    table = qc.allocation
    assert list(table.index) == [59, 49, 80]
    before: dict[int, float] = {}
    for bus, requested in queue.items():
        hosting = largest_by_bisection(
            lambda p, bus=bus: violates(case118, {**before, bus: p}), TOL_MW)
        # within the bracket, plus what the earlier facilities' brackets can shift
        assert table.at[bus, "hosting_mw"] == pytest.approx(hosting, abs=2 * TOL_MW), bus
        before[bus] = min(requested, hosting)
        assert table.at[bus, "allocated_mw"] == pytest.approx(before[bus], abs=2 * TOL_MW)
        assert table.at[bus, "granted"] == (hosting >= requested)
        # the binding constraint: just above the allocation search's answer it breaks
        assert violates(case118, {**{b: table.at[b, "allocated_mw"] for b in before
                                     if b != bus}, bus: table.at[bus, "hosting_mw"] + TOL_MW})
    # bus 49 cannot take its 200 MW: its own voltage binds
    assert not table.at[49, "granted"]
    assert table.at[49, "element"] == "bus 49" and table.at[49, "quantity"] == "vm_pu"
    assert table.at[49, "value"] < LIMITS.vm_min_pu == table.at[49, "limit"]


def test_common_scaling_holds_and_one_step_more_breaks(case118, queue_result):
    queue, qc = queue_result
    top = max(queue.values())
    at = {b: qc.common_scale * r for b, r in queue.items()}
    above = {b: (qc.common_scale + TOL_MW / top) * r for b, r in queue.items()}
    assert not violates(case118, at)
    assert violates(case118, above)
    np.testing.assert_allclose(qc.allocation.common_mw,
                               [qc.common_scale * r for r in queue.values()], rtol=1e-15)
    assert qc.common_element.startswith(("bus", "line", "trafo", "power flow"))


def test_one_facility_search_is_the_queue_of_one(case118):
    one = grid.hosting_capacity(case118, bus=49, limits=LIMITS, power_factor=PF,
                                tolerance_mw=TOL_MW)
    queue = grid.hosting_capacity(case118, queue={49: 50.0}, limits=LIMITS, power_factor=PF,
                                  tolerance_mw=TOL_MW)
    row = queue.allocation.loc[49]
    assert row.hosting_mw == one.p_mw  # the same search, the same bits
    assert (row.element, row.quantity, row.value) == (one.element, one.quantity, one.value)
    assert row.allocated_mw == 50.0 and row.granted


def test_queue_of_series_binds_at_the_worst_step(case118):
    idx = pd.date_range("2024-07-01", periods=4, freq="h", tz="America/Chicago")
    shape = pd.Series([0.5, 1.0, 0.8, 0.6], idx)
    qc = grid.hosting_capacity(case118, queue={49: shape * 100.0, 80: 150.0}, limits=LIMITS,
                               power_factor=PF, tolerance_mw=TOL_MW)
    row = qc.allocation.loc[49]
    assert row.requested_mw == 100.0
    assert row.time == idx[1].tz_convert("UTC")  # its peak step binds its own bus
    hosting = largest_by_bisection(lambda p: violates(case118, {49: p}), TOL_MW)
    assert row.hosting_mw == pytest.approx(hosting, abs=TOL_MW)


def test_queue_input_errors(case118):
    with pytest.raises(InputError, match=r"got both bus=49 and a queue"):
        grid.hosting_capacity(case118, bus=49, queue={49: 10.0})
    with pytest.raises(InputError, match=r"queue\[49\]: expected a finite requested size > 0"):
        grid.hosting_capacity(case118, queue={49: -5.0})
    with pytest.raises(InputError, match=r"queue: expected a non-empty mapping"):
        grid.hosting_capacity(case118, queue={})
    slack = int(case118.ext_grid.bus.iloc[0])
    with pytest.raises(InputError, match=rf"bus {slack} is the network's slack"):
        grid.hosting_capacity(case118, queue={49: 10.0, slack: 10.0})


def test_each_facility_nose_is_where_runpp_stops_solving(case118, queue_result):
    """The P-V nose of a queued facility, those before it at their allocations: runpp
    solves there and not 1 % beyond."""
    queue, qc = queue_result
    table = qc.allocation
    before = {59: table.at[59, "allocated_mw"]}
    nose = table.at[49, "nose_mw"]
    assert table.at[49, "collapse_margin_mw"] == nose - table.at[49, "hosting_mw"] > 0

    def solves(p: float) -> bool:
        ref = copy.deepcopy(case118)
        for bus, mw in {**before, 49: p}.items():
            pp.create_load(ref, bus, p_mw=mw, q_mvar=mw * TAN)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pp.runpp(ref, lightsim2grid=False, numba=False, tolerance_mva=1e-8,
                         enforce_q_lims=True, max_iteration=30)
        except pp.LoadflowNotConverged:
            return False
        return True

    assert solves(nose)
    assert not solves(1.01 * nose)


def test_one_facility_nose_is_the_queue_of_one(case118):
    one = grid.hosting_capacity(case118, bus=49, limits=LIMITS, power_factor=PF,
                                tolerance_mw=TOL_MW)
    queue = grid.hosting_capacity(case118, queue={49: 50.0}, limits=LIMITS, power_factor=PF,
                                  tolerance_mw=TOL_MW)
    # a limit binds (bus 49 vm_pu): both step the nose up from the capacity, the same bits
    assert one.quantity == "vm_pu"
    assert queue.allocation.at[49, "nose_mw"] == one.nose_p_mw
    assert queue.allocation.at[49, "collapse_margin_mw"] == one.collapse_margin_mw
