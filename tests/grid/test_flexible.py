"""grid.flexible_interconnection: hand case, runpp at sampled hours, time-series cross-check."""

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
from grid.flexible import flexible_interconnection

CASE118_LIMITS = grid.Limits(vm_min_pu=0.94, vm_max_pu=1.06)


def two_bus(i_max_ka: float = 0.1) -> pp.pandapowerNet:
    """20 kV slack, a 1 km line of negligible impedance (no charging), 1 MW at the far bus."""
    net = pp.create_empty_network()
    b0 = pp.create_bus(net, vn_kv=20.0)
    b1 = pp.create_bus(net, vn_kv=20.0)
    pp.create_ext_grid(net, b0, vm_pu=1.0)
    pp.create_line_from_parameters(net, b0, b1, length_km=1.0, r_ohm_per_km=1e-4,
                                   x_ohm_per_km=1e-4, c_nf_per_km=0.0, max_i_ka=i_max_ka)
    pp.create_load(net, b1, p_mw=1.0, q_mvar=0.0)
    return net


@pytest.fixture(scope="module")
def hourly():
    return pd.date_range("2025-03-01", periods=8, freq="h", tz="UTC")


def test_two_bus_headroom_is_the_thermal_limit_by_hand(hourly):
    # at unity power factor and 1.0 pu the line carries P / (sqrt(3) * 20 kV): the limit
    # 0.1 kA is reached at sqrt(3) * 20 * 0.1 = 3.4641 MW, of which the background load
    # (1 MW x multiplier) takes its share
    background = pd.Series([0.0, 0.5, 1.0, 1.0, 0.5, 0.0, 1.0, 1.0], hourly)
    load = pd.Series([1.0, 2.0, 3.0, 3.0, 3.0, 2.0, 1.0, 3.0], hourly, name="facility_mw")
    res = flexible_interconnection(two_bus(), load, bus=1, power_factor=1.0,
                                   limits=grid.Limits(vm_min_pu=0.5, vm_max_pu=1.5),
                                   background=background, sizes_mw=[2.0, 3.0, 4.0])
    by_hand = math.sqrt(3) * 20.0 * 0.1 - background.to_numpy()
    assert res.levels == 3
    np.testing.assert_allclose(res.headroom_mw.to_numpy(), by_hand, atol=2 * res.tolerance_mw)
    assert (res.headroom_mw.to_numpy() <= by_hand + 1e-4).all()  # the lower, safe end
    assert set(res.binding) == {"line 0"}
    assert res.firm_mw == pytest.approx(math.sqrt(3) * 2.0 - 1.0, abs=2 * res.tolerance_mw)
    for size, row in zip([2.0, 3.0, 4.0], res.table.itertuples(), strict=True):
        scaled = load.to_numpy() / 3.0 * size
        cut = np.maximum(scaled - by_hand, 0.0)
        on = cut > 1e-3
        assert row.curtailed_h_per_yr == pytest.approx(on.sum() * 8760 / 8)
        assert row.curtailed_mwh_per_yr == pytest.approx(cut.sum() * 8760 / 8, abs=0.2 * 1095)
        assert row.curtailed_share_percent == pytest.approx(100 * cut.sum() / scaled.sum(),
                                                            abs=0.5)
    # size 3: hours 2-3 (headroom 2.46 < 3), 4 (2.96 < 3) and 7 -> events of 3 h and 1 h
    row = res.table.iloc[1]
    assert row.events_per_yr == pytest.approx(2 * 8760 / 8)
    assert row.longest_event_h == 3.0 and row.mean_event_h == 2.0
    assert row.binding_element == "line 0"
    # size 2 fits under the headroom everywhere (largest need: 2 MW at 1 MW background)
    assert res.table.curtailed_h_per_yr.iloc[0] == 0 and res.table.binding_element.iloc[0] == ""
    assert res.size_at_share(0.0) == pytest.approx(3 * (math.sqrt(3) * 2 - 1) / 3.0, abs=0.03)


@pytest.fixture(scope="module")
def case118_study(lumi_kw):
    # two days of LUMI's measured power (10-min steps) as the facility shape; a background
    # cycle rounded to 0.05 (illustrative, not measured) so that the headroom moves
    net = grid.networks.load("case118")
    n = len(lumi_kw)
    phase = 2 * np.pi * np.arange(n) / 144
    background = pd.Series(np.round((0.85 + 0.15 * np.sin(phase)) / 0.05) * 0.05,
                           lumi_kw.index)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        res = flexible_interconnection(net, lumi_kw, bus=15, limits=CASE118_LIMITS,
                                       background=background)
    return net, background, res


def test_case118_firm_capacity_equals_hosting_capacity(case118_study):
    net, background, res = case118_study
    hc = grid.hosting_capacity(net, bus=15, limits=CASE118_LIMITS, background=background)
    assert res.firm_mw == pytest.approx(hc.p_mw, abs=2 * res.tolerance_mw)
    assert res.levels == background.nunique()
    assert res.headroom_mw.max() > res.firm_mw + 10  # the background moves the headroom


def test_case118_monotone_in_size(case118_study):
    table = case118_study[2].table
    assert len(table) == 21 and table.size_mw.is_monotonic_increasing
    for column in ("curtailed_share_percent", "curtailed_h_per_yr", "curtailed_mwh_per_yr"):
        assert (np.diff(table[column]) >= 0).all(), column
    assert table.curtailed_share_percent.iloc[0] == 0
    assert table.curtailed_share_percent.iloc[-1] > 0


def test_size_at_share_agrees_with_the_table(case118_study):
    # a second route to the same number: the table's sizes against the bisection on size
    res = case118_study[2]
    for row in res.table.itertuples():
        if 0 < row.curtailed_share_percent < 50:
            found = res.size_at_share(row.curtailed_share_percent)
            assert found >= row.size_mw - 0.01
            assert res.curtailed_share_percent(found + 0.02) > row.curtailed_share_percent
    with pytest.raises(InputError, match=r"share_percent: expected a number in \[0, 100\) %, "
                                         r"got 120"):
        res.size_at_share(120)


def test_case118_headroom_against_runpp_at_sampled_hours(case118_study):
    # independent reference: pandapower.runpp with Q limits (the case's default), loads
    # scaled by hand; at the headroom no limit breaks, 2 tolerances above it one does
    net, background, res = case118_study
    q_per_p = math.tan(math.acos(res.power_factor))
    for k in (0, 37, 100, 200):
        scale = background.iloc[k]
        for p, broken in ((res.headroom_mw.iloc[k], False),
                          (res.headroom_mw.iloc[k] + 2 * res.tolerance_mw, True)):
            ref = copy.deepcopy(net)
            ref.load["p_mw"] *= scale
            ref.load["q_mvar"] *= scale
            pp.create_load(ref, 15, p_mw=p, q_mvar=p * q_per_p)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pp.runpp(ref, lightsim2grid=False, numba=False, tolerance_mva=1e-8,
                         enforce_q_lims=True)
            vm = ref.res_bus.vm_pu
            low = bool((vm < CASE118_LIMITS.vm_min_pu).any() or
                       (vm > CASE118_LIMITS.vm_max_pu).any())
            assert low == broken, (k, p, vm.min())
        assert res.binding.iloc[k] == "bus 15"


def test_case118_curtailed_load_passes_timeseries_uncurtailed_does_not(case118_study):
    net, background, res = case118_study
    size = float(res.table.size_mw.iloc[10])  # 1.5 x firm
    full = grid.timeseries(net, res.scaled_load_mw(size), bus=15, limits=CASE118_LIMITS,
                           background=background)
    capped = grid.timeseries(net, res.curtailed_load_mw(size), bus=15,
                             limits=CASE118_LIMITS, background=background)
    over = full.violations()
    assert len(over) > 0
    curtailed_steps = res.scaled_load_mw(size) > res.headroom_mw
    assert set(over.time) <= set(res.headroom_mw.index[curtailed_steps])
    left = capped.violations()
    # the same engine solves both: nothing left beyond solver noise
    assert left.empty or (left.value - left.limit).abs().max() < 1e-6
    assert capped.converged.all()


def test_plot_labels_do_not_collide(case118_study):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from grid.plots import plot_flexible_interconnection

    ax = plot_flexible_interconnection(case118_study[2])
    canvas = FigureCanvasAgg(ax.figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    texts = ([t for t in ax.texts if t.get_text()] + [ax.xaxis.label, ax.yaxis.label, ax.title]
             + [ax.get_legend()])
    boxes = [t.get_window_extent(renderer) for t in texts]
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            assert not boxes[i].overlaps(boxes[j]), (texts[i], texts[j])
    assert sum("Duke" in (t.get_label() or "") for t in ax.lines) == 1
    assert len([line for line in ax.lines if line.get_linestyle() == "--"]) == 3


def test_errors_name_the_input(hourly):
    load = pd.Series(1.0, hourly, name="facility_mw")
    with pytest.raises(InputError, match=r"sizes_mw: expected positive finite sizes"):
        flexible_interconnection(two_bus(), load, bus=1, sizes_mw=[2.0, -1.0],
                                 limits=grid.Limits(vm_min_pu=0.5, vm_max_pu=1.5))
    with pytest.raises(InputError, match=r"already violates the limits without the facility: "
                                         r"line 0 at"):
        # the 1 MW background alone needs 28.9 A: over a 0.02 kA line
        flexible_interconnection(two_bus(0.02), load, bus=1,
                                 limits=grid.Limits(vm_min_pu=0.5, vm_max_pu=1.5))
    with pytest.raises(InputError, match=r"background: its index"):
        flexible_interconnection(two_bus(), load, bus=1, background=pd.Series([1.0, 1.0]))
    with pytest.raises(InputError, match=r"the series' peak is 0.0"):
        flexible_interconnection(two_bus(), load * 0, bus=1)
