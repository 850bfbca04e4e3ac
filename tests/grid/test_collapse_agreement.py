"""Issue 26, hostile inputs: a solver failure reported as voltage collapse, and
flexible_interconnection disagreeing with hosting_capacity on the same network.

Both searches now settle a step that does not converge the way grid.pv_curve finds the nose
(grid.collapse): walked up to by continuation, it is either solved (and its limits checked)
or beyond the nose. So on the same network, bus, limits and background they give the same
firm size, and a collapse they report lies at pv_curve's nose."""

from __future__ import annotations

import warnings

import numpy as np
import pandapower as pp
import pandapower.networks as pn
import pandas as pd
import pytest

import grid
from grid import engines
from grid.attach import attach
from grid.collapse import Continuation
from grid.networks import load

TOL = 0.01  # both searches' default tolerance [MW]
# limits that never bind: what binds is the power flow itself (collapse, or a failure)
NO_LIMITS = grid.Limits(vm_min_pu=0.3, vm_max_pu=1.5, loading_max_percent=1e6)
DAY = pd.date_range("2025-01-01", periods=24, freq="h", tz="UTC")
# a day of background multipliers, 0.5 at night to 1.0 at noon, on 0.01 steps
BACKGROUND = pd.Series(np.round(0.5 + 0.5 * np.sin(np.arange(24) / 24 * np.pi), 2), DAY)


def _both(net, bus, limits, background=None):
    index = DAY if background is not None else DAY[:2]
    flat = pd.Series(1.0, index, name="facility_mw")  # a constant facility: firm = hosting
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        hc = grid.hosting_capacity(net, bus=bus, limits=limits, background=background)
        fx = grid.flexible_interconnection(net, flat, bus=bus, limits=limits,
                                           background=background, sizes_mw=[1.0])
    return hc, fx


@pytest.mark.parametrize("bus", [3, 7])
def test_cigre_hv_collapse_is_found_alike_by_both_and_at_the_pv_nose(bus):
    # before: hosting 215.703 MW bound by "power flow" at 14:00 with its nose at 236.05 MW
    # there (a cold Newton start that gave up), flexible firm 215.727 MW at 11:00
    net = load("cigre_hv")
    hc, fx = _both(net, bus, NO_LIMITS, BACKGROUND)
    assert abs(hc.p_mw - fx.firm_mw) <= TOL
    assert hc.element == "power flow" and hc.quantity == "converged"
    # the collapse binds at the heaviest background (1.0 at 11:00 and 12:00), where the
    # network is the bundled one: grid.pv_curve's nose, found by its own stepping
    assert BACKGROUND[hc.time] == BACKGROUND.max() == 1.0
    k = int(np.argmin(fx.headroom_mw.to_numpy()))
    assert BACKGROUND.iloc[k] == 1.0 and fx.binding.iloc[k] == "power flow"
    nose = grid.pv_curve(net, bus=bus, tolerance_mw=TOL).nose_p_mw
    assert abs(hc.p_mw - nose) <= 2 * TOL and abs(fx.firm_mw - nose) <= 2 * TOL
    assert 0 <= hc.collapse_margin_mw <= 2 * TOL  # collapse binds: the nose is right above


def test_case39_nose_follows_the_load_not_a_cold_start():
    # generator Q limits make the solution path-dependent: a cold start at the capacity
    # found a nose at 937.8 MW, while the load growing from 0 MW collapses at 925.7 MW
    net = load("case39")
    hc, fx = _both(net, 0, NO_LIMITS)
    pv = grid.pv_curve(net, bus=0, tolerance_mw=TOL)
    assert hc.enforce_q_lims and pv.enforce_q_lims
    assert abs(hc.nose_p_mw - pv.nose_p_mw) <= 2 * TOL
    assert abs(hc.p_mw - fx.firm_mw) <= TOL and abs(hc.p_mw - pv.nose_p_mw) <= 2 * TOL


@pytest.mark.parametrize("bus", [3, 9, 13])
def test_case14_voltage_limit_gives_one_firm_size(bus):
    net = pn.case14()
    limits = grid.Limits(vm_min_pu=0.9, vm_max_pu=1.1)
    hc, fx = _both(net, bus, limits)
    assert abs(hc.p_mw - fx.firm_mw) <= TOL
    assert hc.quantity == "vm_pu" and fx.binding.iloc[0] == hc.element
    # just below the firm size pandapower's own runpp finds every voltage inside the band
    check = pn.case14()
    pp.create_load(check, bus, p_mw=hc.p_mw, q_mvar=hc.p_mw * np.tan(np.arccos(0.99)))
    pp.runpp(check, enforce_q_lims=hc.enforce_q_lims)
    assert check.res_bus.vm_pu.between(0.9, 1.1).all()


def test_a_continued_step_is_pandapowers_solution():
    # the continuation's voltages at 90 % of the nose equal runpp's (a point it solves cold)
    net = load("cigre_mv")
    work, load_index = attach(net, 5, power_factor=0.99)
    model = engines.prepare(work, load_index, False)
    cont = Continuation(model, 0.99, TOL)
    nose = cont.nose_mw(1.0, 1e4)
    assert abs(nose - grid.pv_curve(net, bus=5, tolerance_mw=TOL).nose_p_mw) <= 2 * TOL
    kind, v = cont.reach(0.9 * nose, 1.0)
    assert kind == "solved"
    flows = engines.flows(model, v[None, :], np.array([0.9 * nose]),
                          np.array([0.9 * nose * np.tan(np.arccos(0.99))]), np.ones(1))
    check = load("cigre_mv")
    pp.create_load(check, 5, p_mw=0.9 * nose, q_mvar=0.9 * nose * np.tan(np.arccos(0.99)))
    pp.runpp(check)
    np.testing.assert_allclose(flows["vm_pu"][0], check.res_bus.vm_pu.to_numpy(), atol=1e-8)
    assert cont.reach(nose + 2 * TOL, 1.0) == ("collapse", None)
