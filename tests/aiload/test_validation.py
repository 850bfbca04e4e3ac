"""The colocation preset against the NLR study's facility statistics (the given cases).

The full comparison (one year at 1 min, seed 1) is ``python -m benchmarks --only validation``
(~2 min). Here a 28-day run at 1 min of each given case (seed 1) is held to the NLR figures,
with issue 13's tolerances widened by three standard deviations of the 28-day figure across
seeds 1-6 (measured, see each constant): a shorter run spreads more around the year's value.
Queue figures at u = 0.4 vary too much over 28 days (share queued: sd 0.108 of the NLR figure
across the six seeds, 0.64-0.95; mean wait sd 0.31) to be held here; the benchmark reports them
for the year.
"""

from __future__ import annotations

import pandas as pd
import pytest

from benchmarks import bench_validation as bv

END = "2018-01-29 00:00+00:00"  # 28 days from 2018-01-01

#: relative tolerance = issue 13's + 3 sd of the 28-day ratio to NLR over seeds 1-6 (measured
#: 2026-12-02 with the calibrated process, sigma2 0.3, level 0.45 / 18 h; an sd below 0.001 is
#: entered as 0.001)
TOLERANCE = {
    0.4: {"mean_mw": 0.05 + 3 * 0.011, "median_mw": 0.05 + 3 * 0.018,
          "p90_mw": 0.05 + 3 * 0.023, "max_mw": 0.05 + 3 * 0.002, "std_mw": 0.10 + 3 * 0.029,
          "jobs_per_day": 0.05 + 3 * 0.016},
    0.8: {"mean_mw": 0.05 + 3 * 0.021, "median_mw": 0.05 + 3 * 0.001,
          "p90_mw": 0.05 + 3 * 0.001, "max_mw": 0.05 + 3 * 0.001, "std_mw": 0.10 + 3 * 0.043,
          "jobs_per_day": 0.05 + 3 * 0.017, "fraction_jobs_queued": 0.25 + 3 * 0.040},
}


@pytest.fixture(scope="module")
def runs():
    return {u: bv.colocation_case(u, END, "1min", seed=1) for u in (0.4, 0.8)}


@pytest.fixture(scope="module")
def nlr(data_dir):
    return pd.read_csv(data_dir / "nlr-whole-facility-statistics" / "colocation_10mw.csv"
                       ).set_index("avg_utilization")


@pytest.mark.parametrize("u", [0.4, 0.8])
def test_colocation_holds_the_nlr_statistics(runs, nlr, u):
    stats, _ = runs[u]
    for key, tol in TOLERANCE[u].items():
        assert stats[key] == pytest.approx(nlr.loc[u, key], rel=tol), key


@pytest.mark.parametrize("u", [0.4, 0.8])
def test_achieved_utilisation_is_the_requested_one(runs, u):
    stats, load = runs[u]
    # the intensity is scaled to the requested mean over the run; what remains is the Poisson
    # count, the jobs running across the ends and, at 0.8, the backlog left at the end: a
    # busy spell of the activity level at the end of 28 days leaves up to ~10 h of the full
    # facility's work waiting (seeds 1-6: 0.388-0.407 at u = 0.4, 0.766-0.823 at u = 0.8,
    # seed 1 the lowest of both; the year: 0.398 and 0.797)
    assert stats["util_mean"] == pytest.approx(u, rel=0.04 if u < 0.5 else 0.05)
    # the busy fraction is the jobs' node-time over the run, read from the event log
    jobs = load.jobs.dropna(subset=["start"])
    t0, t1 = pd.Timestamp(bv.START), pd.Timestamp(END)
    node_s = ((jobs["end"].clip(upper=t1) - jobs["start"].clip(lower=t0)).dt.total_seconds()
              .clip(lower=0) * jobs["nodes"]).sum()
    assert node_s / (2840 * (t1 - t0).total_seconds()) == pytest.approx(stats["util_mean"],
                                                                         rel=1e-6)


def test_queueing_grows_with_utilisation_as_in_the_nlr_study(runs, nlr):
    low, high = runs[0.4][0], runs[0.8][0]
    assert high["fraction_jobs_queued"] > 2 * low["fraction_jobs_queued"]
    assert high["util_median"] == pytest.approx(nlr.loc[0.8, "util_median"], abs=0.01)
    # power at the NLR boundary: idle nodes included, so even u = 0.4 stays above all-idle
    assert low["mean_mw"] > 2840 * 0.3e-3
