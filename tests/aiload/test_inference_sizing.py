"""Inference sized as the NLR study does: capacity at a latency target, nodes per interval,
requests queued up to a timeout, utilisation as the achieved share of busy nodes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import aiload.facility.model as model_module
from aiload.errors import InputError
from aiload.facility import (
    DictCatalogue, FacilitySpec, FleetSpec, InferenceCurve, InferenceSpec, OverheadSpec,
    facility, read_facility,
)
from aiload.facility.catalogue import ProfilesCatalogue, capacity_at_latency
from aiload.facility.inference import latency_sizing, solve_demand_scale
from aiload.profiles._bundle import read_bundled_csv

START = pd.Timestamp("2025-03-03", tz="UTC")
CURVE = InferenceCurve(power_w=lambda r: 1000.0 + 30.0 * np.minimum(np.asarray(r), 20.0),
                       capacity_per_s=10.0, source="hand-made line")


def test_capacity_is_the_offered_rate_where_the_median_latency_reaches_the_target():
    table = pd.DataFrame({"request_rate_per_s": [10, 20, 30, 40, 200],
                          "median_e2e_latency_s": [3.0, 4.0, 3.5, 6.0, 9.0]})
    # envelope 3, 4, 4, 6 (200 req/s is beyond the sustained rates): 5 s half-way 30 -> 40
    assert capacity_at_latency(table, 5.0) == pytest.approx(35.0, rel=1e-15)
    assert capacity_at_latency(table, 3.5) == pytest.approx(15.0, rel=1e-15)
    with pytest.raises(InputError, match=r"latency_target_s=2\.0 s is outside .*\(3\.00 s at 10 "
                                         r"to 6\.00 s at 40 requests/s"):
        capacity_at_latency(table, 2.0)


def test_capacity_at_5_5_s_from_the_nlr_runs_by_hand_and_against_the_facility_results():
    runs = read_bundled_csv("nlr_online_finite.csv")
    runs = runs[(runs["dataset"] == "instructcoder") & (runs["output_tokens"] == 256)]
    lat = runs.groupby("request_rate_per_s")["median_e2e_latency_s"].median()
    assert lat[60] < 5.5 < lat[70] and (np.diff(lat.loc[:60].to_numpy()) > 0).all()
    by_hand = 60 + 10 * (5.5 - lat[60]) / (lat[70] - lat[60])
    curve = ProfilesCatalogue().inference_curve("llama3-70b", "4xH100", 5.5)
    assert curve.capacity_per_s == pytest.approx(by_hand, rel=1e-12)
    # NLR facility, u = 0.8: 14,011 requests/s served by 0.798 x 283 busy nodes
    assert curve.capacity_per_s == pytest.approx(14011 / (0.798 * 283), rel=0.02)


def test_latency_sizing_queues_up_to_the_timeout_by_hand():
    demand = np.array([50.0, 150.0, 50.0, 0.0])  # requests/s; 10 nodes of 10 req/s
    got = latency_sizing(demand, 60.0, 10.0, 10, timeout_s=60.0)
    # 3,000 then 9,000 arrivals against 6,000 per minute: 3,000 wait (<= 6,000 in a minute's
    # wait) and are served in the third minute with its 3,000
    np.testing.assert_array_equal(got["served_per_s"], [50.0, 100.0, 100.0, 0.0])
    np.testing.assert_array_equal(got["nodes"], [5, 10, 10, 0])
    np.testing.assert_array_equal(got["unserved_per_s"], 0.0)
    np.testing.assert_array_equal(got["queued"], [0.0, 1500.0, 1500.0, 0.0])
    none = latency_sizing(demand, 60.0, 10.0, 10, timeout_s=0.0, min_nodes=1)
    np.testing.assert_array_equal(none["served_per_s"], [50.0, 100.0, 50.0, 0.0])
    np.testing.assert_array_equal(none["unserved_per_s"], [0.0, 50.0, 0.0, 0.0])
    np.testing.assert_array_equal(none["nodes"], [5, 10, 5, 1])


def test_latency_sizing_conserves_requests_on_a_random_series():
    rng = np.random.default_rng(5)
    demand = rng.gamma(2.0, 60.0, size=5000)
    got = latency_sizing(demand, 60.0, 10.0, 12, timeout_s=300.0)
    arrived = demand.sum() * 60
    accounted = (got["served_per_s"].sum() + got["unserved_per_s"].sum()) * 60
    assert accounted + got["queue_end"][-1] == pytest.approx(arrived, rel=1e-12)
    assert (got["unserved_per_s"] > 0).any() and (got["queue_end"] <= 12 * 10 * 300 + 1e-6).all()
    assert (got["served_per_s"] <= got["nodes"] * 10.0 + 1e-9).all()


def test_demand_scale_gives_the_asked_share_of_busy_nodes():
    relative = np.array([0.5, 1.0, 1.5, 1.0] * 6)
    # nodes ceil(s/20), ceil(s/10), ceil(3s/20), ceil(s/10): 3, 5, 7, 5 (mean 5) for s in
    # (40, 46.67]; 2, 4, 6, 4 at 40 and 3, 5, 8, 5 above 46.67
    scale = solve_demand_scale(relative, 0.5, 60.0, 10.0, 10, timeout_s=0.0)
    busy = latency_sizing(relative * scale, 60.0, 10.0, 10, timeout_s=0.0)["nodes"]
    assert busy.mean() / 10 == 0.5 and 40.0 < scale <= 140.0 / 3
    with pytest.raises(InputError, match=r"utilization=0\.05: the pool keeps 0\.1000 of its "
                                         r"nodes busy with no demand"):
        solve_demand_scale(relative, 0.05, 60.0, 10.0, 10, timeout_s=0.0, min_nodes=1)


def _spec(utilization=0.6, shape="servegen-m-large", **kw) -> FacilitySpec:
    svc = InferenceSpec(nodes=10, utilization=utilization, model="line", shape=shape, **kw)
    return FacilitySpec(fleet=FleetSpec(nodes=10, idle_w=400.0), inference=(svc,),
                        catalogue=DictCatalogue({}, {"line": CURVE}),
                        overheads=OverheadSpec(cooling="drybulb"))


def test_latency_sizing_in_the_model_power_by_hand_and_the_achieved_utilisation():
    load = facility(_spec(), start=START, end=START + pd.Timedelta(days=14), freq="1h",
                    progress=False)
    p = load.power
    # 14 days from midnight = the shape's period: the achieved mean share is the one asked
    assert p["busy_nodes"].mean() / 10 == pytest.approx(0.6, abs=1e-4)
    assert (p["served_requests_per_s"] <= p["busy_nodes"] * 10.0 + 1e-9).all()
    minute = facility(_spec(), start=START, end=START + pd.Timedelta("1D"), freq="1min",
                      progress=False).power
    busy, served = minute["busy_nodes"], minute["served_requests_per_s"]
    # per busy node at most 10 req/s, below the line's 20 req/s knee
    power = busy * (1000.0 + 30.0 * served / busy) + (10 - busy) * 400.0
    np.testing.assert_allclose(minute["component_kw"] if "component_kw" in minute
                               else minute["it_kw"], power / 1e3, rtol=1e-12)


def test_streamed_latency_service_and_lagged_cooling_equal_the_in_memory_run(tmp_path,
                                                                             monkeypatch):
    spec = _spec(utilization=0.9, timeout_s=120.0)
    kw = dict(start=START, end=START + pd.Timedelta("2D"), freq="1min", progress=False)
    whole = facility(spec, **kw)
    monkeypatch.setattr(model_module, "STREAM_WINDOW_BINS", 700)
    facility(spec, stream_to=tmp_path / "s.parquet", **kw)
    streamed = read_facility(tmp_path / "s.parquet").power
    assert (whole.power["queued_requests"] > 0).any()
    for column in ("facility_kw", "cooling_kw", "served_requests_per_s",
                   "unserved_requests_per_s", "queued_requests", "busy_nodes"):
        np.testing.assert_array_equal(streamed[column].to_numpy(),
                                      whole.power[column].to_numpy())


def test_sizing_names_are_checked():
    with pytest.raises(InputError, match=r"sizing: expected 'latency' or 'autoscaler', got "
                                         r"'latancy'\. Did you mean 'latency'\?"):
        InferenceSpec(nodes=3, utilization=0.5, sizing="latancy")
