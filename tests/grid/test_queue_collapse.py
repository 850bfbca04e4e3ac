"""The queue's hosting capacity uses one facility's collapse rule (issue 30): a step that does
not converge is walked up to by continuation (grid.collapse), along the direction the search
grows, with those before it in the queue held at their allocations.

Before, the queue counted any non-converging step as collapse: on cigre_hv with a day's
background the queue of one {3: 100 MW} stopped at 215.703 MW (14:00, nose 236.05 MW) while
one facility's search gave 215.727 MW (11:00) at its nose."""

from __future__ import annotations

import copy
import math
import warnings

import numpy as np
import pandapower as pp
import pandas as pd
import pytest

import grid
from grid.networks import load

TOL = 0.01  # the searches' default tolerance [MW]
PF = 0.99  # the default power factor
TAN = math.tan(math.acos(PF))
NO_LIMITS = grid.Limits(vm_min_pu=0.3, vm_max_pu=1.5, loading_max_percent=1e6)
DAY = pd.date_range("2025-01-01", periods=24, freq="h", tz="UTC")
BACKGROUND = pd.Series(np.round(0.5 + 0.5 * np.sin(np.arange(24) / 24 * np.pi), 2), DAY)


@pytest.fixture(scope="module")
def cigre_hv():
    return load("cigre_hv")


def runpp_nose(net, held_mw: dict[int, float], bus: int, start_mw: float) -> float:
    """pandapower's own runpp walked up from ``start_mw`` at ``bus`` (``held_mw`` attached),
    each point warm-started from the last solved one (``init="results"``), the step doubled
    after a success and halved after a failure until narrower than TOL: the last solved
    power [MW]. Written apart from grid.collapse."""
    ref = copy.deepcopy(net)
    for b, p in held_mw.items():
        pp.create_load(ref, b, p_mw=p, q_mvar=p * TAN)
    idx = pp.create_load(ref, bus, p_mw=start_mw, q_mvar=start_mw * TAN)
    kw = dict(lightsim2grid=False, numba=False, tolerance_mva=1e-8, max_iteration=30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pp.runpp(ref, **kw)  # the start must solve from a flat start
        p, step, bracketed = start_mw, 8.0, False
        while step >= TOL:
            last = copy.deepcopy(ref)  # the last solved point, to start again from
            ref.load.loc[idx, ["p_mw", "q_mvar"]] = [p + step, (p + step) * TAN]
            try:
                pp.runpp(ref, init="results", **kw)
            except pp.LoadflowNotConverged:
                ref, bracketed, step = last, True, step / 2
                continue
            p += step
            if not bracketed:
                step *= 2
    return p


def test_queue_of_one_collapse_is_one_facility_bit_for_bit(cigre_hv):
    one = grid.hosting_capacity(cigre_hv, bus=3, limits=NO_LIMITS, background=BACKGROUND)
    queue = grid.hosting_capacity(cigre_hv, queue={3: 100.0}, limits=NO_LIMITS,
                                  background=BACKGROUND)
    row = queue.allocation.loc[3]
    assert one.element == row.element == "power flow" and row.quantity == "converged"
    assert row.hosting_mw == one.p_mw  # was 215.703 MW, a cold start that gave up
    assert row.time == one.time and BACKGROUND[row.time] == 1.0  # the heaviest hour
    assert row.nose_mw == one.nose_p_mw and row.collapse_margin_mw == one.collapse_margin_mw


def test_second_facility_collapses_at_runpps_nose_with_the_first_held(cigre_hv):
    queue = grid.hosting_capacity(cigre_hv, queue={3: 100.0, 7: 500.0}, limits=NO_LIMITS)
    table = queue.allocation
    assert (table.element == "power flow").all() and table.granted.all()
    # bus 3 alone: its nose; bus 7 with bus 3 at 100 MW: the nose of that curve
    nose_3 = runpp_nose(cigre_hv, {}, 3, 0.0)
    nose_7 = runpp_nose(cigre_hv, {3: 100.0}, 7, 1000.0)
    assert abs(table.at[3, "hosting_mw"] - nose_3) <= 2 * TOL
    assert abs(table.at[7, "hosting_mw"] - nose_7) <= 2 * TOL
    for b in (3, 7):  # collapse binds: the nose reported is right at the capacity
        assert 0 <= table.at[b, "collapse_margin_mw"] <= 2 * TOL


def test_common_scaling_collapse_is_walked_up_to_in_proportion(cigre_hv):
    queue = grid.hosting_capacity(cigre_hv, queue={3: 100.0, 7: 500.0}, limits=NO_LIMITS)
    s = queue.common_scale
    assert queue.common_element == "power flow"
    # runpp walked up along the requests' proportion from s - 0.1: it solves up to s and
    # not one tolerance on the largest request beyond
    ref = copy.deepcopy(cigre_hv)
    loads = {b: pp.create_load(ref, b, p_mw=0.0, q_mvar=0.0) for b in (3, 7)}
    kw = dict(lightsim2grid=False, numba=False, tolerance_mva=1e-8, max_iteration=30)

    def at(scale: float, init: str) -> bool:
        for b, mw in ((3, 100.0), (7, 500.0)):
            ref.load.loc[loads[b], ["p_mw", "q_mvar"]] = [scale * mw, scale * mw * TAN]
        try:
            pp.runpp(ref, init=init, **kw)
        except pp.LoadflowNotConverged:
            return False
        return True

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert at(s - 0.1, "flat")
        for x in np.linspace(s - 0.1, s, 11)[1:]:
            assert at(x, "results"), x
        assert not at(s + 2 * TOL / 500.0, "results")
