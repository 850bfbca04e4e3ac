"""Inference services evaluated window by window: same numbers as the whole run, bounded memory."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import aiload.facility.model as model_module
from aiload.facility import (
    DictCatalogue, FacilitySpec, FleetSpec, InferenceCurve, InferenceSpec, facility, read_facility,
)
from aiload.facility.demand import DemandShape
from aiload.facility.inference import ServiceResult, step_means

START = pd.Timestamp("2025-03-03", tz="UTC")
CURVE = InferenceCurve(power_w=lambda r: 1000.0 + 30.0 * np.asarray(r), capacity_per_s=40.0,
                       source="test line")


def _spec(**kw) -> FacilitySpec:
    kw.setdefault("sizing", "autoscaler")
    svc = InferenceSpec(nodes=20, utilization=0.7, model="line", **kw)
    return FacilitySpec(fleet=FleetSpec(nodes=20, idle_w=500.0), inference=(svc,),
                        catalogue=DictCatalogue({}, {"line": CURVE}))


def test_step_means_are_the_time_weighted_means_by_hand():
    # value 2 from 0, 5 from 1.5, 1 from 1.75, 4 from 3.0 (on an edge), 0 from 7.2
    times = np.array([0.0, 1.5, 1.75, 3.0, 7.2])
    values = np.array([2.0, 5.0, 1.0, 4.0, 0.0])
    edges = np.arange(0.0, 9.0, 1.0)
    want = [2.0, 0.5 * 2 + 0.25 * 5 + 0.25 * 1, 1.0, 4.0, 4.0, 4.0, 4.0, 0.2 * 4 + 0.8 * 0]
    np.testing.assert_allclose(step_means(times, values, edges), want, rtol=1e-15)
    # any sub-range of the edges gives the same intervals, bit for bit
    np.testing.assert_array_equal(step_means(times, values, edges[3:8]),
                                  step_means(times, values, edges)[3:7])


def test_demand_slices_equal_the_whole_run_bit_for_bit():
    rng = np.random.default_rng(3)
    whole = DemandShape("servegen-m-large", START, 1.0, 7200, bursts=True,
                        rng=np.random.default_rng(3))()
    shape = DemandShape("servegen-m-large", START, 1.0, 7200, bursts=True, rng=rng)
    parts = np.concatenate([shape(a, min(a + 997, 7200)) for a in range(0, 7200, 997)])
    np.testing.assert_array_equal(parts, whole)


def test_streamed_service_equals_the_in_memory_run_and_never_holds_the_whole_series(
        tmp_path, monkeypatch):
    # reaction 45 s after 60-s decisions: replica changes fall inside 10-s bins
    spec = _spec(bursts=True, decision_s=60.0, reaction_s=45.0)
    kw = dict(start=START, end=START + pd.Timedelta("6h"), freq="10s", progress=False)
    whole = facility(spec, **kw)
    sizes = []
    real = ServiceResult.window

    def spy(self, first, stop):
        sizes.append(stop - first)
        return real(self, first, stop)

    monkeypatch.setattr(ServiceResult, "window", spy)
    monkeypatch.setattr(model_module, "STREAM_WINDOW_BINS", 500)
    facility(spec, stream_to=tmp_path / "s.parquet", **kw)
    streamed = read_facility(tmp_path / "s.parquet")
    # 6 h at 10 s = 2,160 bins on a 10-s fine grid: windows of at most 500 steps
    assert max(sizes) == 500 and sum(sizes) == 2160
    for column in ("facility_kw", "requests_per_s", "served_requests_per_s", "busy_nodes"):
        np.testing.assert_array_equal(streamed.power[column].to_numpy(),
                                      whole.power[column].to_numpy())
    assert streamed.meta["unserved_requests"] == pytest.approx(whole.meta["unserved_requests"],
                                                               rel=1e-12)
    # replicas change inside bins: their means are fractional there, and exact
    frac = whole.power["busy_nodes"] % 1
    assert (frac > 0).any()
