"""Facility: inference services, demand shapes from the real traces, weather, I/O, presets."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import aiload.facility.model as model_module
from aiload.errors import InputError
from aiload.facility import (
    DictCatalogue, FacilitySpec, FleetSpec, InferenceCurve, InferenceSpec, OverheadSpec,
    facility, read_facility,
)
from aiload.facility.demand import servegen_shape

# overflow/invalid-value warnings are bugs here (e.g. NaT handling of jobs that never start)
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

START = pd.Timestamp("2025-03-03", tz="UTC")
CURVE = InferenceCurve(power_w=lambda r: 2000.0 + 20.0 * np.asarray(r), capacity_per_s=40.0,
                       source="hand-made line")


def service_spec(shape="servegen-m-large", u=0.5, nodes=20, **kw) -> FacilitySpec:
    # these tests hold the autoscaler option; latency sizing: test_inference_sizing.py
    kw.setdefault("sizing", "autoscaler")
    svc = InferenceSpec(nodes=nodes, utilization=u, model="line", shape=shape, **kw)
    return FacilitySpec(fleet=FleetSpec(nodes=nodes, idle_w=500.0), inference=(svc,),
                        catalogue=DictCatalogue({}, {"line": CURVE}))


def test_bundled_shape_matches_the_real_servegen_files(data_dir: Path):
    folder = data_dir / "servegen-bailian/data/language/m-large"
    total = sum(pd.read_csv(p, header=None)[1].to_numpy() for p in folder.glob("chunk-*-trace.csv"))
    # SOURCE.md: summed mean 183 req/s, peak 573 req/s (peak/mean 3.1)
    assert total.mean() == pytest.approx(183, abs=0.5)
    assert total.max() / total.mean() == pytest.approx(573 / 183, rel=0.01)
    # the bundled shape: running median over five windows, wrapping around the 14 days
    wrapped = pd.Series(np.concatenate([total[-2:], total, total[:2]]))
    median = wrapped.rolling(5, center=True).median().to_numpy()[2:-2]
    np.testing.assert_allclose(servegen_shape(), median / median.mean(), atol=2e-6)
    assert servegen_shape().max() == pytest.approx(2.506, abs=0.001)


def test_demand_mean_equals_utilisation_times_capacity_over_the_shape():
    load = facility(service_spec(), start=START, end=START + pd.Timedelta(days=14), freq="1h",
                    progress=False)
    # 14 days = one whole period of the shape, whose mean is 1
    assert load.power["requests_per_s"].mean() == pytest.approx(0.5 * 20 * 40.0, rel=1e-9)


def test_constant_demand_sets_replicas_served_and_power_by_hand():
    index = pd.date_range(START, periods=48, freq="1h")
    flat = pd.Series(1.0, index=index)
    load = facility(service_spec(shape=flat, u=0.5), start=START, end=START + pd.Timedelta("6h"),
                    freq="15min", progress=False)
    p = load.power
    demand = 0.5 * 20 * 40.0  # 400 req/s
    replicas = np.ceil(demand * 1.1 / (0.8 * 40.0))  # 14
    np.testing.assert_allclose(p["requests_per_s"], demand)
    np.testing.assert_allclose(p["served_requests_per_s"], demand)
    np.testing.assert_allclose(p["busy_nodes"], replicas)
    it_kw = (replicas * (2000 + 20 * demand / replicas) + (20 - replicas) * 500.0) / 1000
    np.testing.assert_allclose(p["it_kw"], it_kw, rtol=1e-12)
    assert load.meta["unserved_requests"] == 0.0


def test_demand_beyond_capacity_is_counted_as_unserved():
    load = facility(service_spec(u=1.0), start=START, end=START + pd.Timedelta(days=2),
                    freq="1min", progress=False)
    p = load.power
    assert (p["served_requests_per_s"] <= p["requests_per_s"] + 1e-9).all()
    assert (p["served_requests_per_s"] <= p["busy_nodes"] * 40.0 + 1e-6).all()
    unserved = ((p["requests_per_s"] - p["served_requests_per_s"]) * 60).sum()
    assert unserved > 0
    assert load.meta["unserved_requests"] == pytest.approx(unserved, rel=1e-9)


def test_replicas_follow_demand_after_the_reaction_time():
    index = pd.date_range(START, periods=4, freq="1h")
    step = pd.Series([0.25, 0.25, 1.0, 1.0], index=index)  # demand quadruples at 02:00
    load = facility(service_spec(shape=step, reaction_s=300.0, u=0.5), start=START,
                    end=START + pd.Timedelta("4h"), freq="1min", progress=False)
    scale = load.scaling
    up = scale[scale["replicas"] == scale["replicas"].max()]["time"].iloc[0]
    # decided at 02:01 (first decision after a minute of high demand), effective 5 min later
    assert up == START + pd.Timedelta("2h") + pd.Timedelta("1min") + pd.Timedelta("5min")


def test_bursts_keep_the_ten_minute_mean():
    kw = dict(start=START, end=START + pd.Timedelta("1D"), freq="1min", progress=False)
    smooth = facility(service_spec(), **kw).power["requests_per_s"].to_numpy()
    bursty = facility(service_spec(bursts=True), **kw).power["requests_per_s"].to_numpy()
    np.testing.assert_allclose(bursty.reshape(-1, 10).mean(1), smooth.reshape(-1, 10).mean(1),
                               rtol=1e-9)
    assert bursty.std() > smooth.std()


def test_drybulb_cooling_interpolates_the_tmy_readings_between_hours():
    import pvlib

    tmy, _ = pvlib.iotools.read_tmy3(Path(pvlib.__file__).parent / "data" / "723170TYA.CSV",
                                     coerce_year=2001, map_variables=True)
    spec = service_spec()
    step = OverheadSpec(cooling="drybulb", economiser_band_c=0.0, cooling_time_constant_s=0.0)
    spec = FacilitySpec(fleet=spec.fleet, inference=spec.inference, catalogue=spec.catalogue,
                        overheads=step)
    tz = tmy.index.tz
    start = pd.Timestamp("2025-07-01 00:00", tz=tz)
    load = facility(spec, start=start, end=start + pd.Timedelta("1D"), freq="1h", progress=False)
    # a TMY3 dry-bulb is the reading at its row's time: 13:00-14:00 has the mean of the two
    expected = tmy["temp_air"].loc[["2001-07-01 13:00", "2001-07-01 14:00"]].mean()
    assert load.power["drybulb_c"].iloc[13] == pytest.approx(expected, abs=1e-12)
    quarter = facility(spec, start=start, end=start + pd.Timedelta("1D"), freq="15min",
                       progress=False).power["drybulb_c"]
    t13, t14 = tmy["temp_air"].loc["2001-07-01 13:00"], tmy["temp_air"].loc["2001-07-01 14:00"]
    # 13:15-13:30 lies a quarter to half-way: the mean is 3/8 of the way
    assert quarter.iloc[53] == pytest.approx(t13 + 0.375 * (t14 - t13), abs=1e-12)
    np.testing.assert_allclose(quarter.to_numpy().reshape(-1, 4).mean(1),
                               load.power["drybulb_c"], atol=1e-12)
    p = load.power
    heat = p["it_kw"] + p["losses_kw"]
    t = p["drybulb_c"]
    cop = np.maximum(4.0 + 0.15 * (35 - t), 1.0)
    by_hand = heat * (0.05 + np.where(t <= 18.0, 0.0, 1.0 / cop))
    np.testing.assert_allclose(p["cooling_kw"], by_hand, rtol=1e-12)


def test_integrated_economiser_hands_the_heat_to_the_chillers_across_its_band():
    spec = service_spec()
    band = OverheadSpec(cooling="drybulb", economiser_below_c=15.0, economiser_band_c=8.0,
                        cooling_time_constant_s=0.0)
    spec = FacilitySpec(fleet=spec.fleet, inference=spec.inference, catalogue=spec.catalogue,
                        overheads=band)
    start = pd.Timestamp("2025-05-01 00:00", tz="UTC")
    p = facility(spec, start=start, end=start + pd.Timedelta("3D"), freq="1h",
                 progress=False).power
    heat = p["it_kw"] + p["losses_kw"]
    t = p["drybulb_c"]
    assert ((t > 15.0) & (t < 23.0)).sum() >= 10  # hours inside the band were simulated
    cop = np.maximum(4.0 + 0.15 * (35 - t), 1.0)
    share = np.minimum(np.maximum((t - 15.0) / 8.0, 0.0), 1.0)  # 0 at 15 °C, 1 from 23 °C
    np.testing.assert_allclose(p["cooling_kw"], heat * (0.05 + share / cop), rtol=1e-12)
    with pytest.raises(InputError, match=r"economiser_band_c: expected 0 <= band < 40"):
        OverheadSpec(cooling="drybulb", economiser_band_c=-1.0)


def test_parquet_round_trip_and_streaming_match(tmp_path, monkeypatch):
    spec = service_spec()
    kw = dict(start=START, end=START + pd.Timedelta("6h"), freq="1min", progress=False)
    load = facility(spec, **kw)
    path = tmp_path / "f.parquet"
    load.to_parquet(path)
    meta = json.loads(pq.read_schema(path).metadata[b"aiload"])
    assert meta["kind"] == "facility" and meta["seed"] == 0
    back = read_facility(path)
    pd.testing.assert_frame_equal(back.power, load.power, check_freq=False)
    assert not list(tmp_path.glob(".*tmp"))
    monkeypatch.setattr(model_module, "STREAM_WINDOW_BINS", 100)
    streamed = facility(spec, stream_to=tmp_path / "s.parquet", **kw)
    assert streamed.power is None
    again = read_facility(tmp_path / "s.parquet").power
    np.testing.assert_allclose(again["facility_kw"], load.power["facility_kw"], rtol=1e-12)


@pytest.mark.parametrize("name,kw,lo_kw,hi_kw", [
    ("colocation-10mw", {"utilization": 0.6}, 3000, 12000),
    ("inference-1mw", {"utilization": 0.5}, 150, 1400),
    ("campus-100mw", {}, 40000, 120000),
])
def test_presets_run_and_stay_within_the_fleet(name, kw, lo_kw, hi_kw):
    load = facility(name, start=START, end=START + pd.Timedelta("12h"), freq="15min",
                    progress=False, **kw)
    p = load.power
    nodes = load.meta["spec"].fleet.nodes
    assert (p["busy_nodes"] <= nodes + 1e-9).all()
    assert lo_kw < p["facility_kw"].mean() < hi_kw
    np.testing.assert_allclose(p["facility_kw"], p["it_kw"] + p["losses_kw"] + p["cooling_kw"])
    assert p.index.tz is not None and p.index.freq == pd.Timedelta("15min")


def test_job_log_parquet_is_lossless_and_compact(tmp_path):
    # fully loaded (u = 1): the queue builds up, so the last jobs never start (NaT start/end)
    load = facility("colocation-10mw", start=START, end=START + pd.Timedelta("2D"), freq="15min",
                    progress=False, utilization=1.0)
    jobs = load.jobs
    assert jobs["start"].isna().any() and jobs["start"].notna().any()
    assert jobs["nodes"].dtype == np.int32 and isinstance(jobs["workload"].dtype, pd.CategoricalDtype)
    load.to_parquet(tmp_path / "f.parquet", jobs=True)
    back = read_facility(tmp_path / "f.parquet").jobs
    pd.testing.assert_frame_equal(back, jobs)  # every value, dtype and NaT survives
    # reference in the same run: the same frame with 64-bit integers, pandas' default writer
    plain = jobs.astype({"nodes": np.int64, "replicate": np.int64})
    plain.to_parquet(tmp_path / "plain.parquet")
    compact_b = (tmp_path / "f.jobs.parquet").stat().st_size
    assert compact_b < 0.75 * (tmp_path / "plain.parquet").stat().st_size


def test_time_of_day_follows_the_wall_clock_at_start_on_a_dst_day():
    # 05:00 CDT on 9 March 2025 is 4 h of real time after local midnight (02:00 was skipped);
    # the daily cycle must see 05:00, as it does for the same instant in a fixed -05:00 zone
    from aiload.facility import JobStreamSpec
    from aiload.facility.demand import DemandShape
    from aiload.facility.jobs import rate_modulation

    chicago = pd.Timestamp("2025-03-09 05:00", tz="America/Chicago")
    fixed = pd.Timestamp("2025-03-09 05:00-05:00")
    assert chicago == fixed
    stream = JobStreamSpec(name="s", workloads={"x": 1}, node_counts={1: 1}, rate_per_h=1.0,
                           daily_amplitude=0.5, peak_hour=14.0)
    t_s = np.array([0.0, 3600.0])
    got = rate_modulation(t_s, chicago, stream)
    np.testing.assert_array_equal(got, rate_modulation(t_s, fixed, stream))
    # by hand: weekday (Sunday is weekend: x (1 - 0) = 1 with weekly_amplitude 0), 05:00, 06:00
    np.testing.assert_allclose(got, 1 + 0.5 * np.cos(2 * np.pi * (np.array([5.0, 6.0]) - 14) / 24))
    a = DemandShape("servegen-m-large", chicago, 60.0, 120, bursts=False, rng=None)
    b = DemandShape("servegen-m-large", fixed, 60.0, 120, bursts=False, rng=None)
    np.testing.assert_array_equal(a(0, 120), b(0, 120))
