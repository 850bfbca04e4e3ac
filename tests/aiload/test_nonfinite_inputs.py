"""No non-finite number gets through, and values outside physics are refused (issue 14,
class 4); a run too large for memory is refused up front (class 7).

Each case is one the issue names (``capacity_per_s = inf`` wrote ``it_kw = -1.35e19`` with
exit 0; ``loss_a = nan``; ``cop_at_35c = nan``; ``duration_s = inf``; ``arrivals = [nan]``; a
NaN in an inference demand shape; prices; PV availability) or its neighbour; each asserts the
error names the field.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from aiload._checks import check_number, require_facility_memory
from aiload.errors import InputError
from aiload.facility.spec import FleetSpec, InferenceSpec, JobStreamSpec, OverheadSpec
from aiload.timeseries import validate_power_series

NAN, INF = math.nan, math.inf
HOURS = pd.date_range("2025-01-06", periods=48, freq="1h", tz="UTC")


def stream(**kwargs):
    base = {"name": "ft", "workloads": {"llama2-70b-lora": 1.0}, "node_counts": {2: 1.0}}
    return JobStreamSpec(**{**base, **kwargs})


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: FleetSpec(nodes=8, idle_w=NAN), r"FleetSpec\.idle_w: expected a finite number >= 0 \[W\], got nan"),
        (lambda: FleetSpec(nodes=8, nameplate_w=INF), r"FleetSpec\.nameplate_w: .*got inf"),
        (lambda: FleetSpec(nodes=8, other_it_base_kw=-INF), r"FleetSpec\.other_it_base_kw: .*got -inf"),
        (lambda: FleetSpec(nodes=8, idle_w="700"), r"FleetSpec\.idle_w: .*got '700' \(str\)"),
        (lambda: stream(utilization=0.5, duration_s=INF), r"ft\.duration_s: expected a finite number > 0 \[s\], got inf"),
        (lambda: stream(arrivals=[0.0, NAN]), r"ft\.arrivals\[1\]: expected a finite number >= 0 \[s from start\], got nan"),
        (lambda: stream(arrivals=[pd.NaT]), r"ft\.arrivals\[0\]: got NaT"),
        (lambda: stream(rate_per_h=INF), r"ft\.rate_per_h: .*got inf"),
        (lambda: stream(utilization=NAN), r"ft\.utilization: expected a fraction in \(0, 1\], got nan"),
        (lambda: stream(utilization=0.5, peak_hour=NAN), r"ft\.peak_hour: expected a finite number >= 0 and < 24 \[h\]"),
        (lambda: stream(utilization=0.5, daily_amplitude=INF), r"ft\.daily_amplitude: .*got inf"),
        (lambda: InferenceSpec(nodes=4, utilization=0.5, capacity_per_s=INF), r"InferenceSpec\.capacity_per_s: expected a finite number > 0 \[requests/s\], got inf"),
        (lambda: InferenceSpec(nodes=4, utilization=0.5, reaction_s=NAN), r"InferenceSpec\.reaction_s: .*got nan"),
        (lambda: InferenceSpec(nodes=4, utilization=0.5, latency_target_s=INF), r"InferenceSpec\.latency_target_s: .*got inf"),
        (lambda: InferenceSpec(nodes=4, utilization=0.5, curve_nodes_per_node=NAN), r"InferenceSpec\.curve_nodes_per_node: .*got nan"),
        (lambda: InferenceSpec(nodes=4, utilization=0.5, shape=pd.Series(np.r_[1.0, NAN, np.ones(46)], index=HOURS)),
         r"InferenceSpec\.shape \(relative demand\): 1 NaN and 0 infinite value\(s\), first nan at 2025-01-06 01:00:00\+00:00"),
        (lambda: OverheadSpec(loss_a=NAN), r"OverheadSpec\.loss_a: expected a finite number, got nan"),
        (lambda: OverheadSpec(loss_c=2.0), r"OverheadSpec\.loss_c: expected a finite number >= 0 and < 1, got 2\.0"),
        (lambda: OverheadSpec(cop_at_35c=NAN), r"OverheadSpec\.cop_at_35c: .*got nan"),
        (lambda: OverheadSpec(pue=INF), r"OverheadSpec\.pue: .*got inf"),
        (lambda: OverheadSpec(economiser_below_c=NAN), r"OverheadSpec\.economiser_below_c: .*\[°C\], got nan"),
        (lambda: OverheadSpec(power_cap_kw=INF), r"OverheadSpec\.power_cap_kw: .*got inf"),
        (lambda: OverheadSpec(cooling="drybulb", weather=pd.Series(np.r_[INF, np.zeros(47)], index=HOURS)),
         r"OverheadSpec\.weather \(dry-bulb temperature \[°C\]\): 0 NaN and 1 infinite"),
    ],
)
def test_non_finite_spec_fields_are_errors_naming_the_field(build, match):
    with pytest.raises(InputError, match=match):
        build()


def test_idle_power_above_nameplate_is_refused():
    with pytest.raises(InputError, match=r"FleetSpec\.idle_w: an idle node drawing 4000 W is above the node's nameplate_w = 3520 W"):
        FleetSpec(nodes=8, idle_w=4000.0, nameplate_w=3520.0)
    assert FleetSpec(nodes=8, idle_w=3520.0, nameplate_w=3520.0).idle_w == 3520.0  # the limit


def test_a_negative_cop_slope_is_refused():
    with pytest.raises(InputError, match=r"OverheadSpec\.cop_slope_per_c: expected a finite number >= 0 \[1/°C\], got -0\.1"):
        OverheadSpec(cop_slope_per_c=-0.1)


def test_capacity_inf_in_a_facility_run_is_refused_before_simulation():
    import aiload  # noqa: PLC0415

    with pytest.raises(InputError, match=r"capacity_per_s: .*got inf"):
        spec = aiload.facility.FacilitySpec(
            fleet=FleetSpec(nodes=8),
            inference=(InferenceSpec(nodes=8, utilization=0.5, capacity_per_s=INF),),
        )
        aiload.facility(spec, start="2025-01-06 00:00+00:00", end="1h", freq="15min", progress=False)


@pytest.mark.parametrize(("value", "kwargs"), [(True, {}), (NAN, {"optional": True}), (-INF, {"allow_inf": True})])
def test_check_number_refuses_bool_nan_and_minus_inf(value, kwargs):
    with pytest.raises(InputError, match=r"^x: expected a "):
        check_number(value, "x", **kwargs)


def test_check_number_lets_plus_inf_through_only_for_caps():
    assert check_number(INF, "cap", ge=0.0, allow_inf=True) == INF
    with pytest.raises(InputError, match=r"cap: expected a finite number >= 0, got inf"):
        check_number(INF, "cap", ge=0.0)


@pytest.mark.parametrize("bad", [INF, -INF])
def test_power_series_for_grid_and_microgrid_refuse_inf(bad):
    load = pd.Series(np.full(48, 500.0), index=HOURS, name="load_kw")
    load.iloc[7] = bad
    with pytest.raises(InputError, match=r"load_kw: 1 infinite value\(s\), first -?inf at 2025-01-06 07:00:00\+00:00"):
        validate_power_series(load, "load_kw", allow_negative=True)


def test_microgrid_prices_and_quantities_refuse_inf_but_caps_may_be_unlimited():
    from microgrid.inputs import Battery, Carbon, Costs, Generator  # noqa: PLC0415

    prices = dict(pv_usd_per_kwp_year=110.0, battery_usd_per_kwh_year=30.0,
                  battery_usd_per_kw_year=20.0, generator_usd_per_kw_year=60.0)
    with pytest.raises(InputError, match=r"Costs\.import_usd_per_kwh: expected a finite non-negative number, got inf"):
        Costs(**prices, import_usd_per_kwh=INF)
    tariff = pd.Series(0.1, index=HOURS)
    tariff.iloc[3] = NAN
    with pytest.raises(InputError, match=r"Costs\.export_usd_per_kwh: 1 NaN and 0 infinite value\(s\), first nan at 2025-01-06 03:00"):
        Costs(**prices, import_usd_per_kwh=0.1, export_usd_per_kwh=tariff)
    with pytest.raises(InputError, match=r"Generator\.unit_size_kw: .*got inf"):
        Generator(min_load_fraction=0.3, unit_size_kw=INF)
    with pytest.raises(InputError, match=r"Carbon\.price_usd_per_t: expected a finite non-negative number, got inf"):
        Carbon(grid_kg_per_kwh=0.4, price_usd_per_t=INF)
    with pytest.raises(InputError, match=r"Battery\.min_soc_fraction: expected a fraction in \[0, 1\), got nan"):
        Battery(min_soc_fraction=NAN)
    assert Battery(max_energy_kwh=INF).max_energy_kwh == INF  # no cap, as documented
    assert Generator(max_power_kw=INF).max_power_kw == INF


def test_pv_availability_above_one_point_one_kw_per_kwp_is_a_unit_error():
    from microgrid.pv import check_availability  # noqa: PLC0415

    watts = pd.Series(np.r_[np.zeros(12), np.full(12, 850.0), np.zeros(24)], index=HOURS)  # W/kWp
    with pytest.raises(InputError, match=r"pv_availability: 12 value\(s\) above 1\.1 kW/kWp, first 850\.0 at 2025-01-06 12:00"):
        check_availability(watts)
    check_availability(watts / 1000.0)  # the same in kW/kWp is fine


def test_pv_availability_from_weather_refuses_nan_irradiance():
    from microgrid.pv import pv_availability  # noqa: PLC0415

    weather = pd.DataFrame({"ghi": 500.0, "dni": 600.0, "dhi": 100.0, "temp_air": 20.0,
                            "wind_speed": 2.0}, index=HOURS)
    weather.iloc[5, 1] = NAN
    with pytest.raises(InputError, match=r"pv_availability: weather\['dni'\]: 1 NaN"):
        pv_availability(weather, latitude=36.0, longitude=-80.0)
    with pytest.raises(InputError, match=r"pv_availability: tilt: expected a finite number >= 0 and <= 90 \[deg\], got nan"):
        pv_availability(tilt=NAN)


def test_a_run_too_large_for_memory_is_refused_with_size_and_way_out():
    # a year at 100 ms: 315,360,000 intervals x 7 float64 columns (6 + the index) = 16.4 GiB
    # per series; with 3 working copies and the kept one, 4 x 16.4 = 65.8 GiB > 16 GiB free
    n = 365 * 24 * 3600 * 10
    with pytest.raises(InputError, match=r"year: needs an estimated 65\.8 GiB of memory, but only 16\.0 GiB is free.*stream_to=.*one series is 16\.4 GiB"):
        require_facility_memory(n, 6, 1, False, "year", available_bytes=16 * 2**30)
    # streamed to disk, one replicate: nothing held in memory, nothing refused
    assert require_facility_memory(n, 6, 1, True, "year", available_bytes=16 * 2**30) == 0.0
    # a day at 1 min fits easily
    assert require_facility_memory(1440, 6, 1, False, "day", available_bytes=16 * 2**30) < 2**20


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"seed": -1}, r"facility\(seed=\): expected a whole number >= 0, got -1"),
        ({"seed": NAN}, r"facility\(seed=\): expected a whole number >= 0, got nan"),
        ({"end": "inf"}, r"facility\(end=\): got 'inf'; expected a real value"),
        ({"end": NAN}, r"facility\(end=\): got nan"),
        ({"end": "soon"}, r"facility\(end=\): cannot read 'soon' as a duration or a timestamp"),
        ({"start": "NaT"}, r"facility\(start=\): got 'NaT'"),
        ({"freq": None}, r"facility\(freq=\): got None"),
    ],
)
def test_facility_call_arguments_that_no_run_can_use_are_named(kwargs, match):
    import aiload  # noqa: PLC0415

    args = {"start": "2025-01-06 00:00+00:00", "end": "1h", "freq": "15min", "progress": False,
            **kwargs}
    with pytest.raises(InputError, match=match):
        aiload.facility("inference-1mw", **args)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"import_limit_kw": INF}, r"size: import_limit_kw=inf is not a limit; give a finite value \[kW\] or None"),
        ({"ramp_limit_kw_per_h": INF}, r"size: ramp_limit_kw_per_h=inf is not a limit"),
        ({"time_limit_s": NAN}, r"size: time_limit_s: expected a number \(inf for no limit\) > 0 \[s\], got nan; NaN and -inf are not accepted"),
        ({"mip_gap": -1.0}, r"size: mip_gap: expected a finite number >= 0 and < 1, got -1\.0"),
    ],
)
def test_sizing_options_that_are_not_limits_are_named(kwargs, match):
    import microgrid  # noqa: PLC0415
    from microgrid.inputs import Costs  # noqa: PLC0415

    load = pd.Series(np.full(6, 500.0), index=HOURS[:6], name="load_kw")
    costs = Costs(pv_usd_per_kwp_year=110.0, battery_usd_per_kwh_year=30.0,
                  battery_usd_per_kw_year=20.0, generator_usd_per_kw_year=60.0,
                  import_usd_per_kwh=0.1)
    args = {"pv_availability": None, "costs": costs, "import_limit_kw": 1000.0, **kwargs}
    with pytest.raises(InputError, match=match):
        microgrid.size(load, **args)


def test_an_infinite_ramp_threshold_is_refused():
    from aiload.metrics import summary  # noqa: PLC0415

    power = pd.Series(np.arange(48.0), index=HOURS, name="it_kw")
    with pytest.raises(InputError, match=r"ramp_threshold: got inf; expected a positive rate \[kW/s\], finite"):
        summary(power, ramp_threshold=INF)


def test_energy_of_daily_means_across_a_dst_change_is_refused_not_taken_as_24_h_days():
    from aiload.timeseries import energy_kwh

    # 9 March 2025 in Chicago is 23 h; pandas reports freq 'D' as 24 h, so the energy was
    # 24 h x 100 kW = 2400 kWh where the labels hold 24 + 24 + 23 h (+ the last day)
    days = pd.date_range("2025-03-07", periods=4, freq="D", tz="America/Chicago")
    with pytest.raises(InputError, match=r"freq 'D' says each interval is 24 h, but labels "
                                         r"2025-03-09 00:00:00-06:00 -> 2025-03-10 00:00:00-05:00 "
                                         r"are 23 h apart"):
        energy_kwh(pd.Series([10.0, 20.0, 30.0, 40.0], index=days))
    utc = pd.date_range("2025-03-07", periods=4, freq="D", tz="UTC")
    assert energy_kwh(pd.Series([10.0, 20.0, 30.0, 40.0], index=utc)) == 24 * 100.0


@pytest.mark.parametrize("step_s", [-1.0, 0.0, float("nan"), "900"])
def test_energy_of_a_bare_array_needs_a_positive_step(step_s):
    from aiload.timeseries import energy_kwh

    # before: a negative step gave a negative energy, NaN a NaN energy, silently
    with pytest.raises(InputError, match=r"energy_wh\(step_s=\): expected a finite number > 0 \[s\]"):
        energy_kwh(np.ones(4), step_s)
