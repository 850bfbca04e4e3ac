"""Facility: bad input fails before any simulation, with messages that say how to fix it."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from aiload.errors import InputError
from aiload.facility import (
    DictCatalogue, FacilitySpec, FleetSpec, InferenceSpec, JobStreamSpec, constant_profile,
    facility,
)

# overflow/invalid-value warnings are bugs here (e.g. NaT handling of jobs that never start)
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

START = pd.Timestamp("2025-03-03", tz="UTC")


def _spec(node_counts=None, model="flat", fleet=8) -> FacilitySpec:
    cat = DictCatalogue({("flat", 2): constant_profile("f", 1000.0, 600.0, 60.0, model="flat")})
    stream = JobStreamSpec(name="s", workloads={model: 1}, node_counts=node_counts or {2: 1},
                           utilization=0.5)
    return FacilitySpec(fleet=FleetSpec(nodes=fleet), streams=(stream,), catalogue=cat)


@pytest.mark.parametrize("nodes", [0, -5])
def test_node_count_must_be_positive(nodes):
    with pytest.raises(InputError, match=r"FleetSpec.nodes .*positive whole number, got -?\d"):
        FleetSpec(nodes=nodes)


@pytest.mark.parametrize("u", [0.0, 1.5, -0.1])
def test_utilisation_outside_unit_interval(u):
    with pytest.raises(InputError, match=r"utilization: expected a fraction in \(0, 1\]"):
        JobStreamSpec(name="s", workloads={"x": 1}, node_counts={1: 1}, utilization=u)
    with pytest.raises(InputError, match=r"InferenceSpec.utilization"):
        InferenceSpec(nodes=4, utilization=u)
    with pytest.raises(InputError, match=r"utilization"):
        facility("colocation-10mw", start=START, end="1h", utilization=u, progress=False)


def test_unknown_workload_suggests_the_nearest():
    with pytest.raises(InputError, match=r"Unknown workload 'flta'.*Did you mean 'flat'\?"):
        facility(_spec(model="flta"), start=START, end="1h", progress=False)


def test_unknown_preset_and_parameter_suggest_the_nearest():
    with pytest.raises(InputError, match=r"Unknown facility preset 'colocation-10MW'.*"
                                         r"Did you mean 'colocation-10mw'\?"):
        facility("colocation-10MW", start=START, end="1h", progress=False)
    with pytest.raises(InputError, match=r"no parameter 'utilisation'.*Did you mean 'utilization'"):
        facility("inference-1mw", start=START, end="1h", utilisation=0.3, progress=False)


def test_job_larger_than_the_fleet():
    with pytest.raises(InputError, match=r"a job of 16 nodes is larger than the 8 nodes"):
        _spec(node_counts={16: 1})


def test_naive_start_is_refused():
    with pytest.raises(InputError, match=r"no time zone \(naive\).*tz='UTC'"):
        facility(_spec(), start="2025-03-03 00:00", end="1h", progress=False)


@pytest.mark.parametrize("freq", ["50ms", "2h", "7s"])
def test_freq_outside_range_or_not_dividing_a_minute(freq):
    with pytest.raises(InputError, match=r"facility\(freq=\)"):
        facility(_spec(), start=START, end="2h", freq=freq, progress=False)


def test_stream_needs_exactly_one_arrival_process():
    with pytest.raises(InputError, match=r"exactly one of utilization=, rate_per_h= or arrivals="):
        JobStreamSpec(name="s", workloads={"x": 1}, node_counts={1: 1}, utilization=0.3,
                      rate_per_h=2.0)


def test_naive_replay_timestamps_are_refused():
    cat = DictCatalogue({("flat", 2): constant_profile("f", 1000.0, 600.0, 60.0, model="flat")})
    stream = JobStreamSpec(name="s", workloads={"flat": 1}, node_counts={2: 1},
                           arrivals=[pd.Timestamp("2025-03-03 01:00")])
    spec = FacilitySpec(fleet=FleetSpec(nodes=4), streams=(stream,), catalogue=cat)
    with pytest.raises(InputError, match=r"arrivals: the timestamps are naive"):
        facility(spec, start=START, end="2h", progress=False)


def test_aiload_facility_is_callable_even_after_the_package_is_imported():
    import subprocess
    import sys

    code = (
        "import aiload.facility.model, aiload\n"
        "load = aiload.facility('inference-1mw', start='2025-01-06 00:00+00:00', end='1h',"
        " freq='15min', progress=False)\n"
        "print(len(load.power))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "4"


def test_preset_fleet_size_override_and_its_validation():
    load = facility("inference-1mw", start=START, end="1h", freq="15min", nodes=10,
                    progress=False)
    assert load.meta["spec"].fleet.nodes == 10
    with pytest.raises(InputError, match=r"FleetSpec.nodes .*got 0"):
        facility("colocation-10mw", start=START, end="1h", nodes=0, progress=False)


def test_memoised_bundled_profiles_cannot_be_altered_by_a_caller():
    from aiload.facility.catalogue import ProfilesCatalogue
    from aiload.profiles import job_profile

    first = ProfilesCatalogue().job_profile("llama2-70b-lora", "4xH100", 4)
    with pytest.raises(ValueError, match="read-only"):
        first.power_w.iloc[0, 0] = 0.0
    again = ProfilesCatalogue().job_profile("llama2-70b-lora", "4xH100", 4)
    # the library's own profile, replicate 0, is still what the cache holds
    direct = job_profile("llama2-70b-lora", "4xH100", 4, extrapolate=False)
    np.testing.assert_array_equal(again.power_w.iloc[:, 0].to_numpy(),
                                  direct.power_w.iloc[:, 0].to_numpy())


@pytest.mark.parametrize(("end", "match"), [
    ("2025-03-02 00:00+00:00", r"facility\(end=\): end = 2025-03-02 00:00:00\+00:00 is before "
                               r"start = 2025-03-03 00:00:00\+00:00.*a later end"),
    (START, r"facility\(end=\): end = 2025-03-03 00:00:00\+00:00 is equal to start"),
    ("-2h", r"facility\(end=\): got the negative duration '-2h'; expected a positive one "
            r"such as '2h'"),
    (7200, r"facility\(end=\): got the bare number 7200; .*a duration with a unit such as '2h'"),
    ("2025-03-03 02:07+00:00", r"facility\(end=\): end - start = 7620 s is not a whole number "
                               r"of freq = '15min' \(900 s\) intervals; give end = "
                               r"2025-03-03 02:00:00\+00:00 or 2025-03-03 02:15:00\+00:00"),
])
def test_end_not_after_start_or_off_the_grid_is_named(end, match):
    with pytest.raises(InputError, match=match):
        facility(_spec(), start=START, end=end, freq="15min", progress=False)


def test_bare_number_start_and_freq_are_refused_not_read_as_nanoseconds():
    with pytest.raises(InputError, match=r"facility\(start=\): got the bare number 0; expected "
                                         r"a tz-aware timestamp"):
        facility(_spec(), start=0, end="1h", progress=False)
    with pytest.raises(InputError, match=r"facility\(freq=\): got the bare number 60 without a "
                                         r"unit; give e.g. '60s'"):
        facility(_spec(), start=START, end="1h", freq=60, progress=False)


def test_end_as_a_python_timedelta_is_a_duration():
    import datetime

    a = facility(_spec(), start=START, end=datetime.timedelta(hours=2), freq="15min",
                 progress=False)
    b = facility(_spec(), start=START, end="2h", freq="15min", progress=False)
    pd.testing.assert_frame_equal(a.power, b.power)


@pytest.mark.parametrize(("day", "hours"), [("2025-03-09", 23), ("2025-11-02", 25)])
def test_a_local_dst_day_is_its_real_length_with_a_fixed_step(day, hours):
    start = pd.Timestamp(day, tz="America/Chicago")
    end = pd.Timestamp(day, tz="America/Chicago") + pd.DateOffset(days=1)
    power = facility(_spec(), start=start, end=end, freq="15min", progress=False).power
    assert len(power) == 4 * hours and power.index.freq == pd.Timedelta("15min")
    assert str(power.index.tz) == "America/Chicago" and power.index[-1] + pd.Timedelta("15min") == end
    # energy summed by hand at 15 min equals the hourly means' energy
    from aiload import resample

    hourly = resample(power["facility_kw"], "1h")
    assert len(hourly) == hours
    assert hourly.sum() == pytest.approx(power["facility_kw"].sum() * 0.25, rel=1e-12)


@pytest.mark.parametrize(("field", "value"), [("workloads", "flat"), ("node_counts", [2, 4])])
def test_a_distribution_that_is_not_pairs_is_named(field, value):
    # before: a raw ValueError / TypeError from unpacking
    kwargs = {"workloads": {"flat": 1}, "node_counts": {2: 1}} | {field: value}
    with pytest.raises(InputError, match=rf"s\.{field}: expected a dict \{{value: weight\}} or "
                                         rf"\(value, weight\) pairs, got {re.escape(repr(value))}"):
        JobStreamSpec(name="s", utilization=0.5, **kwargs)


@pytest.mark.parametrize("shape", [[1.0, 2.0, 3.0], np.ones(3)])
def test_an_inference_shape_that_is_not_a_series_is_named_at_construction(shape):
    # before: a list passed construction and failed in the run with "got builtin_function..."
    with pytest.raises(InputError, match=r"InferenceSpec.shape: expected 'azure-2024-week', 'servegen-m-large' or a "
                                         rf"pandas Series .*got {type(shape).__name__}"):
        InferenceSpec(nodes=4, utilization=0.5, shape=shape)


def test_a_fleet_hardware_the_catalogue_lacks_is_named_with_the_nearest():
    stream = JobStreamSpec(name="s", workloads={"llama2-70b-lora": 1}, node_counts={2: 1},
                           utilization=0.5)
    spec = FacilitySpec(fleet=FleetSpec(nodes=8, hardware="4xh100"), streams=(stream,))
    with pytest.raises(InputError, match=r"Unknown hardware '4xh100': the catalogue has no "
                                         r"workload for it.*Did you mean '4xH100'\?"):
        facility(spec, start=START, end="1h", progress=False)


def test_a_daily_inference_shape_across_a_dst_change_is_refused_not_misplaced():
    # pandas labels local midnights 23 h apart on 9 March 2025 in Chicago but reports 24 h
    days = pd.date_range("2025-03-07", periods=5, freq="D", tz="America/Chicago")
    with pytest.raises(InputError, match=r"InferenceSpec.shape: expected labels one fixed step "
                                         r"apart in real time, but 2025-03-09 00:00:00-06:00 -> "
                                         r"2025-03-10 00:00:00-05:00 is 23 h after 24 h before"):
        InferenceSpec(nodes=4, utilization=0.5, shape=pd.Series(1.0, index=days))
    hourly = pd.date_range("2025-03-07", periods=120, freq="h", tz="America/Chicago")
    InferenceSpec(nodes=4, utilization=0.5, shape=pd.Series(1.0, index=hourly))


def test_constant_profile_names_bad_values_and_says_when_it_rounds_the_duration():
    from aiload.errors import InputWarning

    with pytest.raises(InputError, match=r"duration_s = 20 s is less than half of step_s = 60 s"):
        constant_profile("f", 1000.0, 20.0, 60.0)
    with pytest.raises(InputError, match=r"constant_profile\(power_w=\): got -5.0; expected "
                                         r"per-node power >= 0 W"):
        constant_profile("f", -5.0, 120.0, 60.0)
    # 1234.5 s at a 60 s step: 21 steps = 1260 s, so each job held 25.5 s more than asked
    with pytest.warns(InputWarning, match=r"duration_s = 1234.5 s is not a whole number of "
                                          r"step_s = 60 s; the profile lasts 21 steps = 1260 s"):
        prof = constant_profile("f", 1000.0, 1234.5, 60.0)
    assert len(prof.power_w) == 21


def test_latency_sized_service_refuses_a_full_utilisation():
    # before: u = 1 solved a demand scale with 7.2e9 unserved requests in one day
    with pytest.raises(InputError, match=r"InferenceSpec.utilization: got 1 with "
                                         r"sizing='latency'.*Give a share below 1"):
        InferenceSpec(nodes=4, utilization=1.0)
    InferenceSpec(nodes=4, utilization=1.0, sizing="autoscaler")  # mean demand = capacity


@pytest.mark.parametrize("end", ["1M", "1Y", "2 months"])
def test_a_calendar_duration_for_end_says_to_give_days(end):
    with pytest.raises(InputError, match=r"facility\(end=\): cannot read .* months and years "
                                         r"have no fixed length, so give days \(e.g. '30D'"):
        facility(_spec(), start=START, end=end, progress=False)


@pytest.mark.parametrize(("end", "minutes"), [("1m", "'1min'"), ("6m", "'6min'"),
                                              (" 30 m ", "'30min'")])
def test_a_lone_m_for_end_is_refused_as_ambiguous(end, minutes):
    # pandas reads '6m' as six minutes; a planner means six months
    with pytest.raises(InputError, match=rf"facility\(end=\): .* is ambiguous: pandas reads 'm' "
                                         rf"as minutes, not months. Write {minutes} for minutes"):
        facility(_spec(), start=START, end=end, progress=False)
    # the unambiguous spellings run
    assert len(facility(_spec(), start=START, end="6min", freq="1min", progress=False).power) == 6
