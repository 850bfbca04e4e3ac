"""Submission shapes on the calendar: each instant's own weekday and local hour in the site's
time zone, daylight-saving changes included (aiload.facility.arrivals.local_week_s), and the
measured day-of-week structure of the colocation process."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aiload.errors import InputError
from aiload.facility import JobStreamSpec
from aiload.facility.arrivals import (
    DATA,
    CoxArrivals,
    _days_of_week,
    hour_of_week_factor,
    local_week_s,
)
from aiload.facility.jobs import rate_modulation

NY = "America/New_York"
#: value k + 1 in local hour k of the week (Monday 00h = 1), normalised to mean 1 by CoxArrivals
RAMP = CoxArrivals(hour_of_week=tuple(np.arange(1.0, 169.0)), sigma2=0.0, tau_s=3600.0)
SCALE = 1.0 / 84.5  # 1 / mean(1..168)
HELIOS = (Path(__file__).resolve().parents[3] / "shared" / "data"
          / "helios-philly-cluster-occupancy" / "Earth_vcs" / "vc6YE" / "cluster_sequence_vc.csv")


def _centre(local: str) -> float:
    """Factor of RAMP at the centre of the local hour holding ``local`` (by hand)."""
    stamp = pd.Timestamp(local)
    return (stamp.dayofweek * 24 + stamp.hour + 1) * SCALE


def test_spring_forward_by_hand():
    # Saturday 2025-03-08 12:30 EST (17:30 UTC); clocks go 02:00 EST -> 03:00 EDT on Sunday
    start = pd.Timestamp("2025-03-08 12:30", tz=NY)
    # 14 h of real time later is 2025-03-09 07:30 UTC = 03:30 EDT (not 02:30 wall time)
    t_s = np.array([0.0, 13 * 3600.0, 14 * 3600.0, 24 * 3600.0])
    got = hour_of_week_factor(t_s, start, RAMP)
    expected = [_centre("2025-03-08 12:30"), _centre("2025-03-09 01:30"),
                _centre("2025-03-09 03:30"), _centre("2025-03-09 13:30")]
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    # and in seconds of the local week: Saturday 12:30 = 5 d 12.5 h; Sunday 03:30 = 6 d 3.5 h
    np.testing.assert_allclose(local_week_s(t_s[[0, 2]], start),
                               [5 * 86400 + 12.5 * 3600, 6 * 86400 + 3.5 * 3600], rtol=0,
                               atol=1e-6)


def test_fall_back_repeats_the_hour():
    # 2025-11-02: 01:00-02:00 happens twice in New York (EDT, then EST)
    start = pd.Timestamp("2025-11-02 00:30", tz=NY)
    week_h = local_week_s(np.array([0.0, 3600.0, 7200.0, 3 * 3600.0]), start) / 3600.0
    sunday = 6 * 24
    np.testing.assert_allclose(week_h, [sunday + 0.5, sunday + 1.5, sunday + 1.5, sunday + 2.5],
                               atol=1e-9)


def test_the_same_instant_has_the_same_factor_in_any_run():
    # instants around both 2025 changes, the repeated 01:30 twice (EDT 05:30 UTC, EST 06:30)
    instants = pd.DatetimeIndex(["2025-03-09 06:59", "2025-03-09 07:00", "2025-03-10 13:15",
                                 "2025-11-02 05:30", "2025-11-02 06:30", "2025-11-03 22:45"],
                                tz="UTC").tz_convert(NY)
    by_hand = [(i.dayofweek * 24 + i.hour + i.minute / 60.0) for i in instants]
    assert by_hand[3] == by_hand[4] == 6 * 24 + 1.5  # the hour that happens twice
    starts = [pd.Timestamp(s, tz=NY) for s in ("2025-01-01 00:00", "2025-03-08 23:10",
                                                "2025-03-09 04:00", "2025-10-30 06:00",
                                                "2025-11-04 00:00")]
    first = None
    for start in starts:
        t_s = (instants - start).total_seconds().to_numpy()  # negative: before start
        np.testing.assert_allclose(local_week_s(t_s, start) / 3600.0, by_hand, atol=1e-9)
        factor = hour_of_week_factor(t_s, start, RAMP)
        first = factor if first is None else first
        np.testing.assert_allclose(factor, first, rtol=1e-12)
    # a UTC start reads UTC hours for the same instants
    utc = pd.Timestamp("2025-03-01", tz="UTC")
    t_s = (instants - utc).total_seconds().to_numpy()
    in_utc = instants.tz_convert("UTC")
    np.testing.assert_allclose(local_week_s(t_s, utc) / 3600.0,
                               in_utc.dayofweek * 24 + in_utc.hour + in_utc.minute / 60.0,
                               atol=1e-9)


def test_cosine_stream_follows_the_calendar_across_dst():
    stream = JobStreamSpec(name="s", workloads={"x": 1}, node_counts={1: 1}, rate_per_h=1.0,
                           daily_amplitude=0.5, peak_hour=14.0, weekly_amplitude=0.2)
    start = pd.Timestamp("2025-03-07 14:00", tz=NY)  # Friday 14:00 EST
    # 3 days of real time later: Monday 2025-03-10 15:00 EDT (the clocks moved on Sunday)
    got = rate_modulation(np.array([0.0, 3 * 86400.0, 2 * 86400.0]), start, stream)
    weekday, weekend = 7.0 / 6.6, 7.0 / 6.6 * 0.8  # weekly mean 1 with the weekend at 0.8
    daily = lambda h: 1.0 + 0.5 * np.cos(2 * np.pi * (h - 14.0) / 24.0)  # noqa: E731
    np.testing.assert_allclose(got, [daily(14.0) * weekday, daily(15.0) * weekday,
                                     daily(15.0) * weekend], rtol=1e-12)


def test_days_of_week_kinds_and_error():
    fit = {"weekday_weekend": {"weekend_over_weekday": 0.5}}
    np.testing.assert_array_equal(_days_of_week("flat", fit), np.ones(7))
    # weekdays w, weekend 0.5 w, mean 1: w = 7 / 6
    np.testing.assert_allclose(_days_of_week("weekday-weekend", fit),
                               [7 / 6] * 5 + [7 / 12] * 2, rtol=1e-12)
    with pytest.raises(InputError, match=r"days_of_week 'weekday-weekend ' is not known; "
                                         r"expected one of \['flat', 'weekday-weekend'\]"):
        _days_of_week("weekday-weekend ", fit)


@pytest.mark.skipif(not HELIOS.is_file(), reason="needs ../shared/data (the Helios trace)")
def test_weekend_ratio_is_the_traces_by_a_second_count():
    # the stored ratio, recounted with numpy from the raw column: submissions = positive
    # steps of the running + pending GPU-job count, summed per calendar date
    frame = pd.read_csv(HELIOS, usecols=["time", "total_gpujob_num"])
    steps = np.diff(frame["total_gpujob_num"].to_numpy(), prepend=np.nan)
    steps = np.where(np.isnan(steps) | (steps < 0), 0.0, steps)
    dates = frame["time"].str.slice(0, 10).to_numpy()
    per_date = {d: steps[dates == d].sum() for d in np.unique(dates)}
    weekend = [v for d, v in per_date.items() if pd.Timestamp(d).dayofweek >= 5]
    weekday = [v for d, v in per_date.items() if pd.Timestamp(d).dayofweek < 5]
    stored = json.loads((DATA / "arrivals_helios_earth.json").read_text())["fit"]
    ww = stored["weekday_weekend"]
    assert (len(weekday), len(weekend)) == (21, 10)
    assert ww["weekend_over_weekday"] == pytest.approx(np.median(weekend) / np.median(weekday),
                                                       abs=5e-4)
    assert ww["interval_90"][0] < ww["weekend_over_weekday"] < ww["interval_90"][1]
