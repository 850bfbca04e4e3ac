"""Sub-second dynamics streamed (issue 28): a run written window by window with
``stream_to=`` gives the same bits as the run in memory, failures, checkpoints and ramps
included, and the same seed gives the same bits again."""

from __future__ import annotations

import numpy as np
import pandas as pd

from aiload.facility import (
    DictCatalogue, FacilitySpec, FleetSpec, IterationDynamics, JobStreamSpec, constant_profile,
    facility, read_facility,
)
from aiload.facility import model as facility_model

START = pd.Timestamp("2025-03-03 00:00", tz="UTC")
NODES = 256


def _spec(duration_s: float) -> FacilitySpec:
    prof = constant_profile("flat", 1500.0, duration_s, 1.0, model="flat", nodes=NODES)
    stream = JobStreamSpec(name="s", workloads={"flat": 1.0}, node_counts={NODES: 1.0},
                           arrivals=(0.0,), duration_s=duration_s)
    return FacilitySpec(fleet=FleetSpec(nodes=NODES, idle_w=500.0, nameplate_w=3520.0),
                        streams=(stream,), catalogue=DictCatalogue({("flat", NODES): prof}))


def test_streamed_equals_in_memory_bit_for_bit(tmp_path, monkeypatch):
    # small windows, so the 20-min run is written in several (failures and a checkpoint
    # fall across window edges)
    monkeypatch.setattr(facility_model, "STREAM_WINDOW_BINS", 2000)
    d = IterationDynamics(failures_per_gpu_h=6.0 / (NODES * 4), restart_s=30.0,
                          checkpoint_interval_s=400.0, checkpoint_s=20.0)
    kwargs = dict(start=START, end="20min", freq="100ms", progress=False, dynamics=d, seed=4)
    memory = facility(_spec(1200.0), **kwargs)
    assert memory.meta["dynamics"]["failures"], "expected failures at this rate"
    path = tmp_path / "dyn.parquet"
    facility(_spec(1200.0), stream_to=path, **kwargs)
    streamed = read_facility(path)
    cols = list(memory.power.columns)
    np.testing.assert_array_equal(streamed.power[cols].to_numpy(), memory.power.to_numpy())
    again = facility(_spec(1200.0), **kwargs)
    np.testing.assert_array_equal(again.power.to_numpy(), memory.power.to_numpy())
