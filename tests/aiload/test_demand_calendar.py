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
from aiload.facility.demand import (
    DAY_LEVEL_SIGMA, DemandShape, azure_week_shape, burst_blocks, day_levels,
)

WEEK = "azure-2024-week"
FOLDER = "azure-llm-inference-2024-digitised"


def _shape(start, step_s, n, seed=None, bursts=False):
    rng = None if seed is None else np.random.default_rng(seed)
    return DemandShape(WEEK, pd.Timestamp(start), step_s, n, bursts=bursts, rng=rng)


def _digitised(data_dir: Path) -> list[tuple[pd.DataFrame, pd.Series]]:
    """Each digitised service with its start times on the fixed UTC-4 clock."""
    out = []
    for name in ("azure_llm_2024_code_10min_digitized.csv",
                 "azure_llm_2024_conv_10min_digitized.csv"):
        table = pd.read_csv(data_dir / FOLDER / name, parse_dates=["start_utc"])
        out.append((table, table["start_utc"].dt.tz_convert("Etc/GMT+4")))
    return out


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


# --- the random part: a level for each local day and the plots' per-minute spread ----------


def test_day_level_sigma_is_the_weekday_peaks_variation_in_the_digitised_files(data_dir: Path):
    # a second computation: per service, the complete local Monday-Thursday days (144 windows)
    # and their highest 10-min rate; squared log deviations about each service's mean pooled
    squares, dof = 0.0, 0
    for table, local in _digitised(data_dir):
        frame = pd.DataFrame({"day": local.dt.date, "weekday": local.dt.dayofweek,
                              "rate": table["req_per_min"]})
        days = frame.groupby("day").agg(peak=("rate", "max"), n=("rate", "size"),
                                        weekday=("weekday", "first"))
        peaks = days[(days["n"] == 144) & (days["weekday"] <= 3)]["peak"]
        squares += float(((np.log(peaks) - np.log(peaks).mean()) ** 2).sum())
        dof += len(peaks) - 1
    assert dof == 5  # code Mon-Wed (its Thursday ends at 19:50 local), conversation Mon-Thu
    assert DAY_LEVEL_SIGMA == pytest.approx(np.sqrt(squares / dof), abs=5e-5)


def test_minute_spread_is_the_plotted_lines_edges_in_quadrature(data_dir: Path):
    # 1-min steps of one local week: each window's ten minutes / (the week's value x the day's
    # level) are 1 + h * (-1, -7/9, ..., 1) in some order, h from the files by hand
    mid, var = np.zeros(1008), np.zeros(1008)
    for table, local in _digitised(data_dir):
        window = (local.dt.dayofweek * 144 + local.dt.hour * 6 + local.dt.minute // 10)
        np.add.at(mid, window.to_numpy(), table["req_per_min"].to_numpy())
        half = (table["req_per_min_col_high"] - table["req_per_min_col_low"]) / 2
        np.add.at(var, window.to_numpy(), half.to_numpy() ** 2)
    h = np.sqrt(var) / mid
    start = pd.Timestamp("2025-01-06", tz="Etc/GMT+4")  # a Monday, on the plots' clock
    minutes = _shape(start, 60.0, 7 * 1440, seed=3)().reshape(1008, 10)
    typical = _shape(start, 600.0, 1008)()
    levels = minutes.mean(axis=1) / typical  # the window keeps its mean: only the day's level
    np.testing.assert_allclose(levels.reshape(7, 144), levels.reshape(7, 144)[:, :1] *
                               np.ones((1, 144)), rtol=1e-12)
    ratios = np.sort(minutes / minutes.mean(axis=1, keepdims=True), axis=1)
    np.testing.assert_allclose(ratios, 1 + h[:, None] * np.linspace(-1, 1, 10), atol=2e-6)
    # the order differs between windows (a drawn permutation, not one fixed pattern)
    assert len({tuple(np.argsort(row)) for row in minutes}) > 900


def test_day_levels_are_log_normal_with_mean_one():
    levels = day_levels(12345, np.arange(200_000))
    # 200,000 draws: the mean's standard error is 0.054 / 447 = 1.2e-4
    assert levels.mean() == pytest.approx(1.0, abs=6e-4)
    assert np.log(levels).std() == pytest.approx(DAY_LEVEL_SIGMA, rel=0.01)
    assert np.log(levels).mean() == pytest.approx(-DAY_LEVEL_SIGMA**2 / 2, abs=6e-4)
    # another key, other levels
    assert not np.allclose(day_levels(54321, np.arange(100)), levels[:100])


def test_with_one_seed_a_date_has_the_same_demand_in_any_run():
    zone = "America/Chicago"
    long = _shape(pd.Timestamp("2025-03-01", tz=zone), 60.0, 12 * 1440, seed=11)
    # 2025-03-09 is a DST day: 23 h; the later run starts on 2025-03-08 at 06:00 local
    short = _shape(pd.Timestamp("2025-03-08 06:00", tz=zone), 60.0, 3 * 1440, seed=11)
    offset = 7 * 1440 + 360
    np.testing.assert_array_equal(long()[offset:offset + 3 * 1440], short())
    # slices of a run equal the whole run
    np.testing.assert_array_equal(long(5000, 9000), long()[5000:9000])
    # another seed: other days and minutes, the same typical week underneath
    other = _shape(pd.Timestamp("2025-03-01", tz=zone), 60.0, 12 * 1440, seed=12)()
    assert not np.array_equal(other, long())


@pytest.mark.parametrize("step_s", [0.1, 15.0, 40.0, 300.0, 3600.0])
def test_any_step_is_the_mean_of_the_minutes_it_covers(step_s):
    start = pd.Timestamp("2025-07-01 00:00", tz="Europe/Paris")
    minutes = _shape(start, 60.0, 2 * 1440, seed=5)()
    n = int(round(2 * 86400 / step_s))
    got = _shape(start, step_s, n, seed=5)()
    if 60.0 / step_s == round(60.0 / step_s):  # steps inside minutes: the minute's value
        np.testing.assert_array_equal(got, np.repeat(minutes, round(60.0 / step_s)))
        return
    # by hand: each step's mean of the piecewise-constant minute values over its interval
    edges = np.arange(n + 1) * step_s
    cum = np.concatenate(([0.0], np.cumsum(minutes * 60.0)))
    at = np.interp(edges, np.arange(len(cum)) * 60.0, cum)
    np.testing.assert_allclose(got, np.diff(at) / step_s, rtol=1e-10)  # cumsum rounding


def test_measured_bursts_replace_the_plots_minute_spread():
    start = pd.Timestamp("2025-01-07", tz="UTC")
    plain = _shape(start, 60.0, 1440, seed=2)().reshape(144, 10)
    bursty = _shape(start, 60.0, 1440, seed=2, bursts=True)().reshape(144, 10)
    # the same windows' means (the day's level), each window one measured block of ten ratios
    np.testing.assert_allclose(bursty.mean(axis=1), plain.mean(axis=1), rtol=1e-12)
    blocks = burst_blocks()
    for row in bursty / bursty.mean(axis=1, keepdims=True):
        assert np.isclose(blocks, row, rtol=1e-12, atol=0).all(axis=1).any()


def test_presets_take_the_shape_by_name():
    # inference-1mw with ServeGen has no random part: two seeds give the same demand; with the
    # Azure week (the default) the seed draws the day levels and the minute spread
    def demand(seed, **kw):
        return facility("inference-1mw", start="2025-03-04 00:00+00:00",
                        end="2025-03-05 00:00+00:00", freq="1min", seed=seed, progress=False,
                        utilization=0.5, **kw).power["requests_per_s"].to_numpy()
    np.testing.assert_array_equal(demand(0, shape="servegen-m-large"),
                                  demand(1, shape="servegen-m-large"))
    assert not np.array_equal(demand(0), demand(1))
    from aiload.facility import presets
    assert presets.campus_100mw(inference_shape="servegen-m-large").inference[0].shape == \
        "servegen-m-large"
    assert presets.campus_100mw().inference[0].shape == WEEK
