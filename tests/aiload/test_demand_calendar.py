"""The calendar-anchored inference demand shape ``"azure-2024-week"`` (issue 27): the bundled
week rebuilt from the digitised Azure 2024 files, each step on its own weekday and local time
(daylight-saving changes included), the same value for an instant in any run, hourly steps as
means of the 10-min windows, and the latency sizing's utilisation over a whole week."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aiload.errors import InputError
from aiload.facility import (
    DictCatalogue, FacilitySpec, FleetSpec, InferenceCurve, InferenceSpec, facility,
)
from aiload.facility.demand import DemandShape, azure_week_shape

WEEK = "azure-2024-week"
FOLDER = "azure-llm-inference-2024-digitised"


def _shape(start, step_s, n):
    return DemandShape(WEEK, pd.Timestamp(start), step_s, n, bursts=False, rng=None)


def test_bundled_week_rebuilt_from_the_digitised_files(data_dir: Path):
    # a second construction: the services' clock as the fixed zone Etc/GMT+4 (= UTC-4), both
    # services on one axis of (weekday, hour, 10-min) and summed by pandas groupby
    frames = []
    for name in ("azure_llm_2024_code_10min_digitized.csv",
                 "azure_llm_2024_conv_10min_digitized.csv"):
        table = pd.read_csv(data_dir / FOLDER / name, parse_dates=["start_utc"])
        local = table["start_utc"].dt.tz_convert("Etc/GMT+4")
        frames.append(pd.DataFrame({"day": local.dt.dayofweek, "hour": local.dt.hour,
                                    "tenth": local.dt.minute // 10,
                                    "rate": table["req_per_min"]}))
    both = pd.concat(frames).groupby(["day", "hour", "tenth"])["rate"].sum()
    assert len(both) == 7 * 24 * 6  # each service covers the whole week once
    # SOURCE.md: the digitised means were rescaled to the notebook's row counts
    assert both.sum() / 1008 == pytest.approx(4374.6, abs=0.1)
    np.testing.assert_allclose(azure_week_shape(), both.to_numpy() / both.mean(), atol=2e-6)
    # what the shape is about: weekends quiet, business hours busy (by hand from the file)
    days = azure_week_shape().reshape(7, 144)
    assert days[5:].mean() / days[:5].mean() == pytest.approx(0.495, abs=0.001)
    assert days[:5, 72:120].mean() / days[:5, :36].mean() == pytest.approx(1.734, abs=0.001)


def test_each_step_takes_its_own_weekday_and_local_time_across_a_dst_change():
    base = azure_week_shape()
    # a fixed UTC-05:00 clock: Friday 2025-03-07 00:00, Monday 00:00 is 72 h later (step 432)
    fixed = _shape("2025-03-07 00:00-05:00", 600.0, 7 * 144)()
    np.testing.assert_array_equal(fixed[:3 * 144], base[4 * 144:7 * 144])  # Fri, Sat, Sun
    np.testing.assert_array_equal(fixed[432:432 + 4 * 144], base[:4 * 144])
    # New York: the same start instant, but clocks go forward on Sunday 2025-03-09 at 02:00,
    # so Monday 00:00 EDT is 71 h of real time after Friday 00:00 EST: step 426 is window 0
    zoned = _shape(pd.Timestamp("2025-03-07", tz="America/New_York"), 600.0, 7 * 144)()
    np.testing.assert_array_equal(zoned[:2 * 144 + 12], fixed[:2 * 144 + 12])  # to 02:00 Sun
    np.testing.assert_array_equal(zoned[426:426 + 4 * 144], base[:4 * 144])
    # the skipped hour: Sunday 01:50 EST is followed by 03:00 EDT
    np.testing.assert_array_equal(zoned[2 * 144 + 12], base[6 * 144 + 18])


def test_an_instant_has_the_same_demand_in_any_run():
    a = _shape(pd.Timestamp("2025-06-02 13:00", tz="Europe/Berlin"), 60.0, 3 * 1440)()
    b = _shape(pd.Timestamp("2025-06-03 00:00", tz="Europe/Berlin"), 60.0, 1440)()
    np.testing.assert_array_equal(a[660:660 + 1440], b)  # 11 h later in the first run
    # and a slice of a run equals the whole run's values
    whole = _shape("2025-06-02 13:00+02:00", 60.0, 3 * 1440)
    np.testing.assert_array_equal(whole(1000, 2500), whole()[1000:2500])


def test_hourly_steps_are_the_means_of_their_six_windows_and_a_week_has_mean_one():
    base = azure_week_shape()
    hourly = _shape("2025-01-06 00:00+00:00", 3600.0, 168)()  # a Monday, UTC
    np.testing.assert_allclose(hourly, base.reshape(168, 6).mean(axis=1), rtol=1e-15)
    assert hourly.mean() == pytest.approx(1.0, rel=1e-12)
    # 0.1-s steps stay exact at window edges: 6,000 steps a window
    fine = _shape("2025-01-06 00:00+00:00", 0.1, 12_000)()
    np.testing.assert_array_equal(fine, np.repeat(base[:2], 6000))


def test_a_week_of_latency_sizing_holds_the_utilisation():
    curve = InferenceCurve(power_w=lambda r: 2000.0 + 20.0 * np.asarray(r), capacity_per_s=40.0,
                           source="hand-made line")
    svc = InferenceSpec(nodes=40, utilization=0.5, model="line", shape=WEEK,
                        latency_target_s=None)
    spec = FacilitySpec(fleet=FleetSpec(nodes=40, idle_w=500.0), inference=(svc,),
                        catalogue=DictCatalogue({}, {"line": curve}))
    start = pd.Timestamp("2025-01-06", tz="America/New_York")
    load = facility(spec, start=start, end=start + pd.Timedelta(days=7), freq="10min",
                    progress=False, seed=0)
    demand = load.power["requests_per_s"]
    # weekdays carry more demand than the weekend, as the shape says
    local = demand.tz_convert("America/New_York")
    weekend = local[local.index.dayofweek >= 5].mean() / local[local.index.dayofweek < 5].mean()
    assert weekend < 0.7
    # the demand scale is solved over one week of the shape: a week-long run achieves u
    assert load.power["busy_nodes"].mean() / 40 == pytest.approx(0.5, abs=0.005)


def test_unknown_shape_names_the_bundled_ones():
    with pytest.raises(InputError, match=r"unknown shape 'azure-2024'.*'azure-2024-week', "
                                         r"'servegen-m-large'.*Did you mean"):
        InferenceSpec(nodes=4, utilization=0.5, shape="azure-2024")
