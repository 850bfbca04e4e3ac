"""GridResult.violation_summary: hours outside the limits per bus and branch, the worst value
and when, checked against a numpy count of the result's own arrays and against
pandapower.runpp at the worst step (issue 26)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import grid

PF = 0.99
TAN = math.tan(math.acos(PF))
LIMITS = grid.Limits(vm_min_pu=0.92, loading_max_percent=80.0)


@pytest.fixture(scope="module")
def violated(lumi_kw):
    load = (lumi_kw.iloc[:36] / lumi_kw.iloc[:36].max() * 6.0).rename("facility_mw")
    net = grid.networks.load("cigre_mv")
    return net, load, grid.timeseries(net, load, bus=11, power_factor=PF, limits=LIMITS)


def test_counts_and_worst_values_match_numpy_on_the_results_arrays(violated):
    _, load, res = violated
    table = res.violation_summary()
    step_h = 10 / 60  # the LUMI window is 10-min
    vm = res.vm_pu.to_numpy()
    low = vm < 0.92
    assert low.any(), "the case must violate the voltage band"
    under = table[table.quantity == "undervoltage"].set_index("element")
    expected = {f"bus {res.vm_pu.columns[j]}": j for j in np.flatnonzero(low.sum(axis=0))}
    assert set(under.index) == set(expected)
    for element, j in expected.items():
        row = under.loc[element]
        assert row.steps == int(low[:, j].sum())
        assert row.hours == pytest.approx(low[:, j].sum() * step_h, rel=1e-12)
        k = int(np.argmin(vm[:, j]))
        assert row.worst == vm[k, j] < row.limit == 0.92
        assert row.worst_time == res.vm_pu.index[k]
    lines = res.line_loading_percent.to_numpy()
    over = lines > 80.0
    assert over.any(), "the case must overload a line"
    overloaded = table[(table.kind == "line")].set_index("element")
    assert len(overloaded) == int((over.sum(axis=0) > 0).sum())
    for j in np.flatnonzero(over.sum(axis=0)):
        row = overloaded.loc[f"line {res.line_loading_percent.columns[j]}"]
        assert row.steps == int(over[:, j].sum())
        assert row.worst == lines[:, j].max()
        assert row.unit == "%" and row.quantity == "overloading"
    assert table.hours.is_monotonic_decreasing
    # every violation step of the per-step table is counted once
    per_step = res.violations()
    assert table.steps.sum() == len(per_step)


def test_worst_step_agrees_with_pandapower_runpp(violated, runpp_ref):
    net, load, res = violated
    table = res.violation_summary()
    row = table[table.quantity == "undervoltage"].sort_values("worst").iloc[0]
    bus = int(row.element.split()[1])
    p = float(load.loc[row.worst_time])
    ref = runpp_ref(net, 11, p, p * TAN)
    assert ref.res_bus.vm_pu.at[bus] == pytest.approx(row.worst, abs=1e-6)
    assert ref.res_bus.vm_pu.at[bus] < 0.92
    line = table[table.kind == "line"].iloc[0]
    p = float(load.loc[line.worst_time])
    ref = runpp_ref(net, 11, p, p * TAN)
    assert ref.res_line.loading_percent.at[int(line.element.split()[1])] == pytest.approx(
        line.worst, abs=1e-4)


def test_worst_time_on_the_site_clock_and_other_limits(violated):
    _, _, res = violated
    utc = res.violation_summary()
    chicago = res.violation_summary(tz="America/Chicago")
    assert str(chicago.worst_time.dt.tz) == "America/Chicago"
    assert (chicago.worst_time.dt.tz_convert("UTC") == utc.worst_time).all()
    # limits passed here replace the study's: a wide band and a high loading limit -> none
    assert res.violation_summary(grid.Limits(vm_min_pu=0.5, vm_max_pu=1.5,
                                             loading_max_percent=1e4)).empty


def test_no_violation_gives_an_empty_table_with_the_columns():
    net = grid.networks.load("cigre_mv")
    idx = pd.date_range("2024-01-01", periods=3, freq="h", tz="UTC")
    res = grid.timeseries(net, pd.Series([1.0, 2.0, 1.5], idx), bus=5)
    assert not res.violation_summary().empty  # cigre_mv's own trafo is above 100 %
    table = res.violation_summary(grid.Limits(vm_min_pu=0.5, vm_max_pu=1.5,
                                              loading_max_percent=1e4))
    assert table.empty
    assert list(table.columns) == ["element", "kind", "quantity", "limit", "unit", "steps",
                                   "hours", "worst", "worst_time"]


def test_non_converged_steps_are_counted(lumi_kw):
    load = (lumi_kw.iloc[:5] / lumi_kw.iloc[:5].max() * 2.0).rename("facility_mw")
    load.iloc[2] = 500.0
    res = grid.timeseries(grid.networks.load("cigre_mv"), load, bus=5)
    row = res.violation_summary().set_index("quantity").loc["not converged"]
    assert row.steps == 1 and row.worst_time == load.index[2]
    assert row.hours == pytest.approx(10 / 60)
