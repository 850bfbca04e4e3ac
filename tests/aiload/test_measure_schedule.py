"""Fixed-interval polling on absolute deadlines: no drift, overruns skipped and counted."""

from __future__ import annotations

import numpy as np

from aiload.measure.schedule import next_tick, run_fixed_interval

INTERVAL_NS = 100_000_000  # 0.1 s


class SimulatedTime:
    """A clock whose sleeps overshoot and whose reads take time, as on a loaded machine."""

    def __init__(self, n_samples, read_ns, oversleep_ns, seed=0):
        self.now = 5_000_000_000
        self.rng = np.random.default_rng(seed)
        self.read_ns, self.oversleep_ns = read_ns, oversleep_ns
        self.n_samples = n_samples
        self.sample_times = []

    def clock(self):
        return self.now

    def wait(self, timeout_s):
        if len(self.sample_times) >= self.n_samples:
            return True
        self.now += int(timeout_s * 1e9) + int(self.rng.integers(0, self.oversleep_ns))
        return False

    def action(self):
        self.sample_times.append(self.now)
        self.now += self.read_ns


def test_next_tick_on_time_and_after_overrun():
    assert next_tick(0, 100, 150, 1) == 2
    assert next_tick(0, 100, 200, 1) == 2  # exactly due: serve it
    assert next_tick(0, 100, 201, 1) == 3
    assert next_tick(0, 100, 420, 1) == 5


def test_no_drift_over_many_samples_despite_jitter():
    sim = SimulatedTime(n_samples=1000, read_ns=2_000_000, oversleep_ns=5_000_000)
    start = sim.now
    missed = run_fixed_interval(
        sim.action, start_ns=start, interval_ns=INTERVAL_NS, clock_ns=sim.clock, wait_s=sim.wait
    )
    assert missed == 0
    times = np.array(sim.sample_times)
    lateness = times - (start + INTERVAL_NS * np.arange(1, len(times) + 1))
    # every sample is late by one oversleep at most, whatever came before: no accumulation
    assert lateness.min() >= 0 and lateness.max() < 5_000_000
    # a sleep(interval - read) loop would end ~1000 * 2.5 ms = 2.5 s late; here < 5 ms
    assert times[-1] - (start + 1000 * INTERVAL_NS) < 5_000_000


def test_overrun_ticks_are_skipped_and_counted():
    sim = SimulatedTime(n_samples=10, read_ns=250_000_000, oversleep_ns=1)  # 0.25 s reads
    start = sim.now
    missed = run_fixed_interval(
        sim.action, start_ns=start, interval_ns=INTERVAL_NS, clock_ns=sim.clock, wait_s=sim.wait
    )
    ticks = (np.array(sim.sample_times) - start) / INTERVAL_NS
    # each read covers 2.5 intervals: samples land on ticks 1, 4, 7, ... and every read,
    # the last one included, runs past 2 ticks
    np.testing.assert_allclose(ticks, 1 + 3 * np.arange(10), atol=1e-7)
    assert missed == 2 * 10
