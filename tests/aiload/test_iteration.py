"""Sub-second synchronous-job power (issue 28): the iteration cycle, ramps, checkpoints and
failures by hand; off = the same bits; the start ramp against the WattAMeter 0.1 s log."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import aiload
from aiload.errors import InputError
from aiload.facility import (
    DictCatalogue, FacilitySpec, FleetSpec, IterationDynamics, JobStreamSpec, constant_profile,
    facility,
)
from aiload.facility.iteration import LLAMA3_FAILURES_PER_GPU_H, SOURCES

START = pd.Timestamp("2025-03-03 00:00", tz="UTC")
NODES, IDLE_W, BUSY_W = 256, 500.0, 1500.0
DATA = Path(__file__).resolve().parents[1] / "data"


def spec(duration_s=120.0):
    prof = constant_profile("flat", BUSY_W, duration_s, 1.0, model="flat", nodes=NODES)
    stream = JobStreamSpec(name="s", workloads={"flat": 1.0}, node_counts={NODES: 1.0},
                           arrivals=(0.0,), duration_s=duration_s)
    return FacilitySpec(fleet=FleetSpec(nodes=NODES, idle_w=IDLE_W, nameplate_w=3520.0),
                        streams=(stream,), catalogue=DictCatalogue({("flat", NODES): prof}))


QUIET = dict(failures_per_gpu_h=0.0, checkpoint_interval_s=None)


def run(dyn, end="3min", seed=0):
    return facility(spec(), start=START, end=end, freq="100ms", progress=False, dynamics=dyn,
                    seed=seed)


def job_kw(load):
    # the profile boundary (GPU + CPU of the NLR profiles), before any rack-input conversion
    return load.power["component_kw"].to_numpy()


def test_cycle_levels_ramps_and_energy_by_hand():
    d = IterationDynamics(**QUIET)
    hi, lo = d.levels
    assert hi == pytest.approx(1 / (0.75 + 0.25 * 0.5)) and lo == pytest.approx(0.5 * hi)
    p = job_kw(run(d))
    idle_kw, above_kw = NODES * IDLE_W / 1e3, NODES * (BUSY_W - IDLE_W) / 1e3
    # start ramp 0 -> lo over the first second: bin k has the mean lo (k + 0.5) / 10
    k = np.arange(10)
    np.testing.assert_allclose(p[:10], idle_kw + above_kw * lo * (k + 0.5) / 10, rtol=1e-9)
    # then the cycle from t = 1 s: a 0.1 s ramp lo -> hi, hi to 1 + 1.5 s, ramp, lo to 3 s
    assert p[10] == pytest.approx(idle_kw + above_kw * (lo + hi) / 2, rel=1e-9)
    np.testing.assert_allclose(p[11:25], idle_kw + above_kw * hi, rtol=1e-9)
    assert p[25] == pytest.approx(idle_kw + above_kw * (lo + hi) / 2, rel=1e-9)
    np.testing.assert_allclose(p[26:30], idle_kw + above_kw * lo, rtol=1e-9)
    # whole cycles keep the profile's energy: 50 cycles from 1 s to 101 s
    assert p[10:1010].sum() * 0.1 == pytest.approx((idle_kw + above_kw) * 100.0, rel=1e-12)
    # stop ramp to idle in the last second of the 120-s job, idle afterwards
    np.testing.assert_allclose(p[1200:], 0.0 + idle_kw, rtol=1e-12)


def test_checkpoint_stall_by_hand():
    d = IterationDynamics(failures_per_gpu_h=0.0, checkpoint_interval_s=41.0, checkpoint_s=5.0)
    p = job_kw(run(d))
    idle_kw, above_kw = NODES * IDLE_W / 1e3, NODES * (BUSY_W - IDLE_W) / 1e3
    # checkpoint at 41 s: 0.1 s ramp, 5 s at 0.2 x the power above idle
    np.testing.assert_allclose(p[411:461], idle_kw + 0.2 * above_kw, rtol=1e-9)


def test_failure_drops_the_job_to_idle_within_a_second_and_restarts():
    d = IterationDynamics(failures_per_gpu_h=2.0 / (NODES * 4), checkpoint_interval_s=None,
                          restart_s=20.0)  # 2 failures per job-hour
    load = facility(spec(3600.0), start=START, end="1h", freq="100ms", progress=False,
                    dynamics=d, seed=5)
    fails = load.meta["dynamics"]["failures"]
    assert fails, "expected at least one failure in the hour at this rate"
    p = job_kw(load)
    idle_kw = NODES * IDLE_W / 1e3
    f = fails[0]
    i_down = int(np.ceil((f["failure_s"] + d.drop_s) / 0.1))
    i_back = int(np.floor(f["restart_s"] / 0.1))
    np.testing.assert_allclose(p[i_down:i_back], idle_kw, rtol=1e-9)
    assert p[i_back + 20:i_back + 40].max() > idle_kw * 1.5  # running again after the ramp
    # the same seed gives the same bits; another seed other failures
    again = facility(spec(3600.0), start=START, end="1h", freq="100ms", progress=False,
                     dynamics=d, seed=5)
    np.testing.assert_array_equal(again.power["facility_kw"], load.power["facility_kw"])
    other = facility(spec(3600.0), start=START, end="1h", freq="100ms", progress=False,
                     dynamics=d, seed=6)
    assert other.meta["dynamics"]["failures"] != fails


def test_off_gives_the_same_bits_and_small_jobs_keep_their_profile():
    base = facility(spec(), start=START, end="3min", freq="100ms", progress=False)
    off = run(None)
    np.testing.assert_array_equal(off.power.to_numpy(), base.power.to_numpy())
    assert "dynamics" not in off.meta
    untouched = run(IterationDynamics(min_nodes=NODES + 1))
    np.testing.assert_array_equal(untouched.power["facility_kw"], base.power["facility_kw"])
    meta = untouched.meta["dynamics"]
    assert meta["jobs"] == 0 and set(meta["sources"]) == set(meta["parameters"]) - {"gpus_per_node"}


def test_parameters_carry_their_sources():
    assert LLAMA3_FAILURES_PER_GPU_H == pytest.approx(419 / (54 * 24 * 16384))
    assert "Llama 3" in SOURCES["failures_per_gpu_h"]
    assert SOURCES["step_time_s"].startswith("assumption")
    assert SOURCES["start_ramp_s"].startswith("measured")


def test_start_ramp_against_the_wattameter_log():
    """The default start ramp (1 s) against the 10-90 % rise of the measured 0.1 s log."""
    trace = aiload.read_trace(DATA / "wattameter-example-logs" / "nvml_wattameter.log")
    p = trace.total_w()
    t = (p.index - p.index[0]).total_seconds().to_numpy()
    v = p.to_numpy()
    low, high = np.median(v[:40]), np.median(v[-20:])
    start = low + 0.1 * (high - low)
    end = low + 0.9 * (high - low)
    rise_s = t[np.argmax(v >= end)] - t[np.argmax(v >= start)]
    assert 0.5 <= rise_s <= 1.5  # measured: about 1.2 s
    assert 0.5 * rise_s <= IterationDynamics().start_ramp_s <= 1.5 * rise_s


def test_errors():
    with pytest.raises(InputError, match="compute_share: got 1.2"):
        IterationDynamics(compute_share=1.2)
    with pytest.raises(InputError, match="transition_s = 0.6 s does not fit"):
        IterationDynamics(step_time_s=2.0, compute_share=0.75, transition_s=0.6)
    with pytest.raises(InputError, match="expected an aiload.facility.IterationDynamics"):
        facility(spec(), start=START, end="1min", freq="1s", progress=False, dynamics={"a": 1})
