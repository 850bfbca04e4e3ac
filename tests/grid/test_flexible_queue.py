"""Flexible interconnection of a queue (issue 30): each step's headroom shared in queue order,
checked against an independent bisection on pandapower.runpp per facility at sampled steps,
and the first facility against one facility's flexible interconnection, bit for bit."""

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

PF = 0.99  # the default power factor
TAN = math.tan(math.acos(PF))
LIMITS = grid.Limits(vm_min_pu=0.9, loading_max_percent=120)
TOL_MW = 0.01  # the default tolerance
IDX = pd.date_range("2025-01-01", periods=8, freq="h", tz="UTC")
BACKGROUND = pd.Series([0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 0.8, 0.6], IDX)
# three facilities on CIGRE MV's feeder 1 (queue order 9, 5, 11), hourly shapes in MW
LOADS_MW = {9: [1.0, 1.2, 1.1, 0.9, 1.3, 1.2, 1.0, 0.8],
            5: [0.8, 1.1, 1.4, 1.5, 1.2, 1.0, 1.3, 0.9],
            11: [0.5, 0.6, 0.8, 0.7, 0.6, 0.8, 0.7, 0.4]}


@pytest.fixture(scope="module")
def cigre_mv():
    return grid.networks.load("cigre_mv")


@pytest.fixture(scope="module")
def study(cigre_mv):
    queue = {b: pd.Series(v, IDX, name="facility_mw") for b, v in LOADS_MW.items()}
    return queue, grid.flexible_interconnection(cigre_mv, queue, limits=LIMITS,
                                                background=BACKGROUND)


def violates(net, scale: float, loads_mw: dict[int, float]) -> bool:
    """runpp (no lightsim2grid, no numba) with the background applied by hand and every
    facility attached: any limit broken, or no solution."""
    ref = copy.deepcopy(net)
    ref.load["p_mw"] *= scale
    ref.load["q_mvar"] *= scale
    for bus, p in loads_mw.items():
        pp.create_load(ref, bus, p_mw=p, q_mvar=p * TAN)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pp.runpp(ref, lightsim2grid=False, numba=False, tolerance_mva=1e-8)
    except pp.LoadflowNotConverged:
        return True
    vm = ref.res_bus.vm_pu.dropna()
    loading = pd.concat([ref.res_line.loading_percent, ref.res_trafo.loading_percent])
    return bool((vm < LIMITS.vm_min_pu).any() or (vm > LIMITS.vm_max_pu).any()
                or (loading > LIMITS.loading_max_percent).any())


def largest_by_bisection(fails) -> float:
    """Written apart from grid's search: from 0.25 MW doubling, then halving to TOL_MW."""
    lo, hi = 0.0, 0.25
    while not fails(hi):
        lo, hi = hi, 2.0 * hi
    while hi - lo > TOL_MW:
        mid = (lo + hi) / 2.0
        lo, hi = (lo, mid) if fails(mid) else (mid, hi)
    return lo


def test_shared_headroom_equals_an_independent_bisection_in_queue_order(cigre_mv, study):
    _, res = study
    for k in (1, 5):  # every facility gets some headroom; the heaviest background
        scale = float(BACKGROUND.iloc[k])
        held: dict[int, float] = {}
        for b, values in LOADS_MW.items():
            head = largest_by_bisection(lambda p, b=b: violates(cigre_mv, scale,
                                                                {**held, b: p}))
            # both are within TOL_MW below the boundary; the facilities before were given
            # allocations within TOL_MW of each other's
            assert res.headroom_mw.iloc[k][b] == pytest.approx(head, abs=3 * TOL_MW), (k, b)
            held[b] = min(values[k], head)
        # with every facility at its allocation the step breaks no limit
        assert not violates(cigre_mv, scale, res.allocated_mw.iloc[k].to_dict())


def test_curtailment_series_and_energy_by_hand(study):
    queue, res = study
    load = pd.DataFrame(queue)
    head, allowed, cut = res.headroom_mw, res.allocated_mw, res.curtailed_mw
    np.testing.assert_array_equal(allowed.to_numpy(), np.minimum(load.to_numpy(),
                                                                 head.to_numpy()))
    np.testing.assert_allclose((allowed + cut).to_numpy(), load.to_numpy(), rtol=1e-15)
    assert (cut.to_numpy() >= 0).all() and cut.to_numpy().sum() > 0
    table = res.table
    assert list(table.index) == [9, 5, 11]  # queue order
    for b in LOADS_MW:
        on = cut[b].to_numpy() > 0
        assert table.at[b, "energy_mwh"] == pytest.approx(sum(LOADS_MW[b]), rel=1e-12)
        assert table.at[b, "curtailed_mwh"] == pytest.approx(cut[b].sum(), rel=1e-12)
        assert table.at[b, "curtailed_h"] == on.sum()  # hourly steps
        assert table.at[b, "firm_mw"] == head[b].min()
        assert table.at[b, "requested_mw"] == max(LOADS_MW[b])
        granted = res.allocation.xs(b, level="bus").granted.to_numpy()
        np.testing.assert_array_equal(granted, ~on)


def test_first_facility_is_one_facilitys_flexible_interconnection(cigre_mv, study):
    queue, res = study
    one = grid.flexible_interconnection(cigre_mv, queue[9], bus=9, limits=LIMITS,
                                        background=BACKGROUND, sizes_mw=[1.3])
    np.testing.assert_array_equal(res.headroom_mw[9].to_numpy(), one.headroom_mw.to_numpy())
    np.testing.assert_array_equal(res.allocation.xs(9, level="bus").element.to_numpy(),
                                  one.binding.to_numpy())
    alone = grid.flexible_interconnection(cigre_mv, {9: queue[9]}, limits=LIMITS,
                                          background=BACKGROUND)
    np.testing.assert_array_equal(alone.headroom_mw[9].to_numpy(),
                                  one.headroom_mw.to_numpy())


def test_queue_input_errors(cigre_mv, study):
    queue, _ = study
    with pytest.raises(InputError, match=r"got both bus=9 and a mapping .* omit bus="):
        grid.flexible_interconnection(cigre_mv, queue, bus=9, limits=LIMITS)
    with pytest.raises(InputError, match=r"sizes_mw=\[2\.0\] is for one facility's size "
                                         r"table.*scale each series"):
        grid.flexible_interconnection(cigre_mv, queue, sizes_mw=[2.0], limits=LIMITS)
    with pytest.raises(InputError, match=r"load_kw\[5\]: the facility series' peak is 0"):
        grid.flexible_interconnection(cigre_mv, {9: queue[9], 5: queue[5] * 0.0},
                                      limits=LIMITS)
