"""Bad input to the grid studies is refused before any power flow, by name, with the fix.

Each case was a raw pandas/numpy traceback, a hang or a silently wrong result before; the
good-input counterparts check that the fix changed nothing for input that was right.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import grid
from aiload.errors import InputError
from grid import cosim, plots
from grid.flexible_run import cosine_background

IDX = pd.date_range("2024-01-01", periods=6, freq="h", tz="UTC")
LOAD_MW = pd.Series([1.0, 2.0, 3.0, 2.0, 1.0, 1.5], IDX, name="facility_mw")
LIMITS = grid.Limits(vm_min_pu=0.90, loading_max_percent=120.0)


@pytest.fixture(scope="module")
def net():
    return grid.networks.load("cigre_mv")


@pytest.fixture(scope="module")
def result(net):
    return grid.timeseries(net, LOAD_MW, bus=5)


def test_a_reversed_series_is_refused_not_solved_backwards(net):
    # a reversed index keeps freq = -1 h; it was solved as given, in reverse time
    with pytest.raises(InputError, match=r"load_mw: expected equally spaced, increasing labels; "
                                         r"the step changes at label 1 \(2024-01-01 05:00"):
        grid.timeseries(net, LOAD_MW.iloc[::-1], bus=5)


def test_a_calendar_step_is_refused_by_name(net):
    monthly = pd.Series([1.0, 2.0, 3.0],
                        pd.date_range("2024-01-01", periods=3, freq="MS", tz="UTC"))
    with pytest.raises(InputError, match="load_mw: the index's freq 'MS' has no fixed length"):
        grid.timeseries(net, monthly, bus=5)


def test_a_kw_suffix_in_capitals_is_read_as_kw(net, result):
    res = grid.timeseries(net, (LOAD_MW * 1e3).rename("load_KW"), bus=5)
    assert res.facility_mw.max() == 3.0  # 3,000 kW, not 3,000 MW
    pd.testing.assert_frame_equal(res.vm_pu, result.vm_pu)
    with pytest.raises(InputError, match="the series is named 'power_W'; grid studies take MW"):
        grid.timeseries(net, (LOAD_MW * 1e6).rename("power_W"), bus=5)


@pytest.mark.parametrize(("background", "message"), [
    (pd.Series(list("abcdef"), IDX), "background: expected numeric multipliers [-] of the "
                                     "existing loads (e.g. 0.8), got dtype object"),
    (pd.Series(True, IDX), "got dtype bool"),
    (pd.Series([1.0, 1.0, -0.5, 1.0, 1.0, 1.0], IDX),
     "background: multipliers must be finite and non-negative; got 1 that are not, first "
     "-0.5 at 2024-01-01 02:00:00+00:00"),
    (pd.Series([1.0, np.nan, 1.0, 1.0, 1.0, np.inf], IDX), "got 2 that are not, first nan at "
                                                           "2024-01-01 01:00:00+00:00"),
])
def test_timeseries_background_names_the_bad_value(net, background, message):
    with pytest.raises(InputError) as err:
        grid.timeseries(net, LOAD_MW, bus=5, background=background)
    assert message in str(err.value)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"limits": {"vm_min_pu": 0.9}}, "limits: expected a grid.Limits (e.g. "
                                     "grid.Limits(vm_min_pu=0.94)) or None, got dict"),
    ({"power_factor": True}, "power_factor: expected a number in (0, 1]"),
])
def test_timeseries_refuses_bad_options(net, kwargs, message):
    with pytest.raises(InputError) as err:
        grid.timeseries(net, LOAD_MW, bus=5, **kwargs)
    assert message in str(err.value)


def test_a_numpy_power_factor_is_a_number(net):
    a = grid.timeseries(net, LOAD_MW, bus=5, power_factor=np.float32(0.95))
    b = grid.timeseries(net, LOAD_MW, bus=5, power_factor=float(np.float32(0.95)))
    pd.testing.assert_frame_equal(a.vm_pu, b.vm_pu)


def test_limits_refuse_a_bool():
    with pytest.raises(InputError, match="Limits.loading_max_percent: expected a positive "
                                         "finite number, got True"):
        grid.Limits(loading_max_percent=True)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"limits": {}}, "limits: expected a grid.Limits"),
    ({"tolerance_mw": "0.1"}, "tolerance_mw: expected a number [MW], got '0.1' (str)"),
    ({"background": pd.Series(1.0, IDX.tz_localize(None))},
     "background: the DatetimeIndex has no time zone (naive)"),
    ({"background": pd.Series([1.0, 0.8])},
     "background: expected a pandas DatetimeIndex with a time zone, got RangeIndex"),
    ({"background": pd.Series("a", IDX)}, "background: expected numeric multipliers"),
    ({"background": pd.Series(1.0, IDX).to_frame()},
     "background: expected a non-empty pandas Series of multipliers [-] on a tz-aware "
     "DatetimeIndex, got DataFrame"),
    ({"background": pd.Series([], dtype=float)}, "got an empty Series"),
])
def test_hosting_capacity_refuses_bad_options(net, kwargs, message):
    with pytest.raises(InputError) as err:
        grid.hosting_capacity(net, bus=8, **({"limits": LIMITS} | kwargs))
    assert message in str(err.value)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"p_mw": True}, "p_mw: expected a finite facility power >= 0 [MW]"),
    ({"p_mw": LOAD_MW}, "(one number; for a series, e.g. its peak: float(load_mw.max())), got "
                        "Series."),
    ({"p_mw": 5.0, "dp_mw": "x"}, "dp_mw: expected a finite positive step [MW], got 'x'"),
])
def test_load_loss_refuses_bad_numbers(net, kwargs, message):
    with pytest.raises(InputError) as err:
        grid.load_loss(net, bus=5, **kwargs)
    assert message in str(err.value)


def test_numpy_numbers_are_numbers(net):
    assert grid.load_loss(net, bus=5, p_mw=np.int64(5)).dv_pu.equals(
        grid.load_loss(net, bus=5, p_mw=5.0).dv_pu)
    table = grid.contingency(net, LOAD_MW, bus=5, n_peak=np.int64(2), margins=False)
    assert table.converged_steps.max() == 2


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"n_peak": True}, "n_peak: expected a positive int, got True"),
    ({"margins": "no"}, "margins: expected True or False, got 'no'"),
])
def test_contingency_refuses_bad_options(net, kwargs, message):
    with pytest.raises(InputError) as err:
        grid.contingency(net, LOAD_MW, bus=5, **kwargs)
    assert message in str(err.value)


def test_pv_curve_refuses_a_text_step(net):
    with pytest.raises(InputError, match=r"step_mw: expected a number \[MW\], got '1' \(str\)"):
        grid.pv_curve(net, bus=5, step_mw="1")


@pytest.fixture(scope="module")
def study(net):
    idx = pd.date_range("2025-01-01", periods=4, freq="h", tz="UTC")
    load = pd.Series([1.0, 2.0, 2.0, 1.0], idx, name="facility_mw")
    return grid.flexible_interconnection(net, load, bus=9, limits=grid.Limits(vm_min_pu=0.9),
                                         background=pd.Series(0.7, idx), sizes_mw=[2.0])


@pytest.mark.parametrize("name", [None, "power", "load_MW2"])
def test_flexible_study_refuses_a_series_of_unknown_unit(net, study, name):
    # an unnamed kW series was read as MW: the size table looked right (only the shape is
    # used) but implied_limit_kw was 1000x too loose and curtailment_cost found nothing
    load = study.load_mw.rename(name)
    with pytest.raises(InputError, match=rf"load_kw: a Series named {name!r}; its unit "
                       r"decides .* '\*_kw' for kW .* '\*_mw' for MW"):
        grid.flexible_interconnection(net, load, bus=9, limits=grid.Limits(vm_min_pu=0.9),
                                      background=pd.Series(0.7, load.index), sizes_mw=[2.0])
    # named in kW: the same table as the MW series (the shape is what the table uses)
    res = grid.flexible_interconnection(net, (load * 1e3).rename("facility_kw"), bus=9,
                                        limits=grid.Limits(vm_min_pu=0.9),
                                        background=pd.Series(0.7, load.index), sizes_mw=[2.0])
    pd.testing.assert_frame_equal(res.table, study.table)


def test_flexible_study_of_a_series_without_freq_has_no_nan(net, study):
    # a regular series whose index lost its freq (e.g. rebuilt from a list) gave NaN per year
    load = study.load_mw
    bare = pd.Series(load.to_numpy(), pd.DatetimeIndex(list(load.index)), name="facility_mw")
    assert bare.index.freq is None
    res = grid.flexible_interconnection(net, bare, bus=9, limits=grid.Limits(vm_min_pu=0.9),
                                        background=pd.Series(0.7, bare.index), sizes_mw=[2.0])
    pd.testing.assert_frame_equal(res.table, study.table)
    # 4 h of a 2 MW-peak shape (1, 2, 2, 1 MW): 6 MWh in 4 h, scaled to 8,760 h
    assert res.table.energy_mwh_per_yr.iloc[0] == pytest.approx(6.0 * 8760 / 4)


@pytest.mark.parametrize(("call", "message"), [
    (lambda s: s.size_at_share(1.0, tolerance_mw=0),
     "tolerance_mw: expected a finite number > 0 [MW]"),
    (lambda s: s.size_at_share(1.0, tolerance_mw=float("nan")), "got nan"),
    (lambda s: s.curtailed_share_percent(0), "size_mw: expected a facility peak > 0 [MW], got 0"),
    (lambda s: s.scaled_load_mw("2"), "size_mw: expected a facility peak > 0 [MW], got '2'"),
])
def test_flexible_result_methods_refuse_bad_sizes(study, call, message):
    # tolerance 0 bisected forever; size 0 gave a NaN share
    with pytest.raises(InputError) as err:
        call(study)
    assert message in str(err.value)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"sizes_mw": ["a"]}, "sizes_mw: expected facility peaks [MW] as numbers, e.g. [20.0, "
                          "30.0], got ['a']"),
    ({"sizes_mw": -2.0}, "sizes_mw: expected positive finite sizes [MW], got -2.0"),
    ({"tolerance_mw": True}, "tolerance_mw: expected a number in (0, 1000) MW, got True"),
])
def test_flexible_interconnection_refuses_bad_options(net, study, kwargs, message):
    with pytest.raises(InputError) as err:
        grid.flexible_interconnection(net, study.load_mw, bus=9, limits=study.limits,
                                      background=study.background, **kwargs)
    assert message in str(err.value)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"mean": float("inf")}, "cosine_background: mean: expected a finite number [-], got inf"),
    ({"mean": "0.8"}, "cosine_background: mean: expected a finite number [-], got '0.8'"),
    ({"peak_hour_utc": float("nan")}, "peak_hour_utc: expected a finite number >= 0 and < 24"),
    ({"decimals": -1}, "decimals: expected None or an int >= 0 (2 rounds to 0.01), got -1"),
])
def test_cosine_background_refuses_bad_parameters(kwargs, message):
    with pytest.raises(InputError) as err:
        cosine_background(IDX, **kwargs)
    assert message in str(err.value)


def test_cosine_background_refuses_an_empty_index():
    with pytest.raises(InputError, match="index: the DatetimeIndex is empty"):
        cosine_background(IDX[:0])


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"start": "garbage"}, "start: expected a tz-aware timestamp, got 'garbage'"),
    ({"end": "garbage"}, "end: expected a tz-aware timestamp or a duration such as '1D', got "
                         "'garbage'"),
    ({"end": "2025-01-02"}, "end: expected a tz-aware timestamp or a duration such as '1D', "
                            "got '2025-01-02'"),
    ({"freq": "MS"}, "freq: expected an interval such as '5min' or '1h' (a fixed, positive "
                     "duration), got 'MS'"),
    ({"freq": "0h"}, "got '0h'"),
    ({"freq": "-1h"}, "got '-1h'"),
    ({"freq": 3600}, "got 3600"),
    ({"open_loop": "no"}, "open_loop: expected True or False, got 'no'"),
])
def test_cosimulate_refuses_bad_times_before_the_facility_runs(monkeypatch, net, kwargs,
                                                               message):
    monkeypatch.setattr(cosim, "_facility_call", lambda *a, **k: pytest.fail("ran"))
    args = {"bus": 5, "start": pd.Timestamp("2025-01-01", tz="UTC"), "end": "1D",
            "freq": "1h"} | kwargs
    with pytest.raises(InputError) as err:
        grid.cosimulate(net, "colocation-10mw", **args)
    assert message in str(err.value)


def test_cosimulate_reads_an_end_in_another_zone_as_the_same_instant():
    # it was reported as a bad freq (pandas refuses two zones in one date_range)
    start = pd.Timestamp("2025-01-01", tz="UTC")
    index = cosim._horizon(start, pd.Timestamp("2025-01-01 03:00", tz="Europe/Paris"), "1h")
    assert list(index) == [start, start + pd.Timedelta("1h")]
    assert cosim._horizon(start, "2h", "1h").equals(index)


@pytest.mark.parametrize(("draw", "message"), [
    (lambda r: plots.voltage_envelope(r, buses=[99]),
     "buses: [99] are not buses of the result (its buses: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, "
     "12, 13, 14]); give indices of net.bus as ints."),
    (lambda r: plots.voltage_envelope(r, freq="x"),
     "freq: expected a pandas offset such as 'D' or 'W', got 'x'"),
    (lambda r: plots.voltage_envelope(r, limits={"vm_min_pu": 0.9}),
     "limits: expected a grid Limits (e.g. grid.Limits(vm_min_pu=0.94), or None), got dict"),
    (lambda r: plots.voltage_envelope(5), "result: expected a grid GridResult (from "
                                          "grid.timeseries), got int"),
    (lambda r: plots.loading_duration(r, top="3"),
     "top: expected a positive int (how many to draw), got '3'"),
    (lambda r: plots.hosting_capacity_bars([]), "results: expected at least one "
                                                "HostingCapacity"),
    (lambda r: plots.hosting_capacity_bars({"bus 5": 5}),
     "results['bus 5']: expected a grid HostingCapacity"),
    (lambda r: plots.n1_heatmap(pd.DataFrame({"a": [1]})),
     "table: lacks column(s) ['element', 'min_vm_pu', 'max_vm_pu', "
     "'max_line_loading_percent', 'max_trafo_loading_percent'] of grid.contingency's table"),
    (lambda r: plots.pv_curves({}), "curves: expected a non-empty mapping of label -> "
                                    "grid.pv_curve result"),
    (lambda r: plots.pv_curves({"a": 1}), "curves['a']: expected a grid PVCurve"),
    (lambda r: plots.plot_flexible_interconnection(r),
     "result: expected a grid FlexibleInterconnection (from grid.flexible_interconnection), "
     "got GridResult"),
    (lambda r: plots.plot_cosimulation(r), "result: expected a grid Cosimulation (from "
                                           "grid.cosimulate), got GridResult"),
])
def test_plots_refuse_bad_arguments(result, draw, message):
    # each was a KeyError, AttributeError or pandas parse error from inside the plot
    with pytest.raises(InputError) as err:
        draw(result)
    assert message in str(err.value)


def test_a_kw_series_read_as_mw_is_named_in_the_warning(net, caplog):
    # 1,000-3,000 'MW' at a 20 kV bus: no step solves; the warning says how the series was read
    with caplog.at_level("WARNING", logger="grid.powerflow"):
        res = grid.timeseries(net, (LOAD_MW * 1e3).rename(None), bus=5)
    assert not res.converged.any()
    assert ("6 of 6 steps did not converge (first at 2024-01-01 00:00:00+00:00); the series is "
            "read as MW (peak 3000 MW): name it '*_kw' if it is in kW") in caplog.text
    with pytest.raises(InputError, match="p_mw is in MW: divide a power in kW by 1000"):
        grid.load_loss(net, bus=5, p_mw=5000.0)


def test_short_circuit_data_refuses_min_above_max():
    with pytest.raises(InputError, match=r"ShortCircuitData: ext_grid_sc_min_mva \(500\) exceeds "
                                         r"ext_grid_sc_max_mva \(100\); the minimum case is the "
                                         r"weaker grid. Swap them."):
        grid.ShortCircuitData(ext_grid_sc_max_mva=100, ext_grid_sc_min_mva=500)
    assert grid.ShortCircuitData(ext_grid_sc_max_mva=500, ext_grid_sc_min_mva=500)


def test_the_slack_bus_has_no_hosting_capacity_to_find(net, study):
    # the search doubled to p_max_mw and said 'raise p_max_mw', which never helps there
    message = ("bus 0 is the network's slack (external grid) bus: a facility there is served "
               "by the external grid directly and changes no voltage or branch flow")
    with pytest.raises(InputError) as err:
        grid.hosting_capacity(net, bus=0, limits=LIMITS)
    assert message in str(err.value)
    with pytest.raises(InputError) as err:
        grid.flexible_interconnection(net, study.load_mw, bus=0, limits=study.limits)
    assert message in str(err.value)


@pytest.mark.parametrize("dtype", ["Float64", "Int64", "double[pyarrow]"])
def test_pandas_own_number_dtypes_are_numbers(net, result, dtype):
    # np.issubdtype raised a raw TypeError ('Cannot interpret Float64Dtype()')
    res = grid.timeseries(net, (LOAD_MW * 2).round().astype(dtype) / 2, bus=5)
    pd.testing.assert_frame_equal(res.vm_pu, result.vm_pu)


def test_a_pandas_na_is_named_like_nan(net):
    with_na = pd.Series([1.0, None, 2.0, 2.0, 1.0, 1.0], IDX, dtype="Float64")
    with pytest.raises(InputError, match="load_mw: 1 NaN value.s., first at 2024-01-01 01:00"):
        grid.timeseries(net, with_na, bus=5)
    with pytest.raises(InputError, match="background: multipliers must be finite and "
                                         "non-negative; got 1 that are not, first nan at "
                                         "2024-01-01 01:00"):
        grid.timeseries(net, LOAD_MW, bus=5, background=with_na)
