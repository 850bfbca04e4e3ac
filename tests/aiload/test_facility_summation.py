"""Exact summation of job power: compiled and numpy paths against a brute-force integral.

``job_energy_per_bin_j`` places starts on the 0.1-s grid; it is checked against the exact
per-point reference ``job_energy_at_edges`` and the brute-force integral at the placed starts.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

from aiload.facility import facility, summation
from aiload.facility.summation import (
    CumulativeEnergy, job_energy_at_edges, job_energy_per_bin_j, numba_available, placement_grid,
    ramp_at_edges,
)

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

METHODS = ["numpy"] + (["numba"] if numba_available() else [])


def brute_force_bin_energy_j(edges_s, starts_s, nodes, power_w, step_s, duration_s):
    """Energy per bin [J] job by job: the profile tiled to the job length, integrated with
    ``np.interp`` of its cumulative energy (a second, independent method)."""
    reps = int(np.ceil(duration_s / (len(power_w) * step_s)))
    tiled = np.tile(power_w, reps)
    knots = np.arange(len(tiled) + 1) * step_s
    cum = np.concatenate(([0.0], np.cumsum(tiled * step_s)))
    total = np.zeros(len(edges_s) - 1)
    for s, n in zip(starts_s, nodes):
        tau = np.clip(edges_s - s, 0.0, duration_s)
        total += n * np.diff(np.interp(tau, knots, cum))
    return total


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("duration_s", [150.0, 37 * 7.3, 1000.0])  # shorter, equal, cyclic
def test_job_energy_matches_brute_force(method, duration_s):
    rng = np.random.default_rng(7)
    power_w = rng.uniform(500.0, 3000.0, 37)
    step_s = 7.3
    curve = CumulativeEnergy(np.arange(38) * step_s,
                             np.concatenate(([0.0], np.cumsum(power_w * step_s))), duration_s)
    edges_s = 5.0 + np.arange(401) * 10.0
    starts_s = np.sort(rng.uniform(-1200.0, 4100.0, 300))
    nodes = rng.integers(1, 9, 300).astype(float)
    got = np.diff(job_energy_at_edges(edges_s, starts_s, nodes, curve, method=method))
    want = brute_force_bin_energy_j(edges_s, starts_s, nodes, power_w, step_s, duration_s)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-6 * want.max())


@pytest.mark.skipif(not numba_available(), reason="numba not installed")
def test_compiled_and_numpy_paths_agree_on_many_jobs():
    rng = np.random.default_rng(3)
    power_w = rng.uniform(800.0, 6000.0, 500)
    curve = CumulativeEnergy(np.arange(501) * 1.3,
                             np.concatenate(([0.0], np.cumsum(power_w * 1.3))), 2000.0)
    edges_s = np.arange(8_001) * 1.0
    starts_s = np.sort(rng.uniform(-2000.0, 8_000.0, 2000))
    nodes = rng.integers(1, 65, 2000).astype(float)
    a = job_energy_at_edges(edges_s, starts_s, nodes, curve, method="numpy")
    b = job_energy_at_edges(edges_s, starts_s, nodes, curve, method="numba")
    np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-9 * a.max())


def test_unknown_method_is_refused():
    curve = CumulativeEnergy(np.array([0.0, 1.0]), np.array([0.0, 5.0]), 1.0)
    with pytest.raises(ValueError, match="expected 'auto', 'numba' or 'numpy', got 'fast'"):
        job_energy_at_edges(np.arange(3.0), np.array([0.5]), np.array([1.0]), curve,
                            method="fast")


def cyclic_curve(duration_s: float, seed: int = 7, samples: int = 37, step_s: float = 7.3):
    """A random per-node profile [W] and its cumulative-energy curve over ``duration_s``."""
    power_w = np.random.default_rng(seed).uniform(500.0, 3000.0, samples)
    knots = np.arange(samples + 1) * step_s
    return power_w, CumulativeEnergy(knots, np.concatenate(([0.0], np.cumsum(power_w * step_s))),
                                     duration_s)


def placed_by_hand(start_s: np.ndarray) -> np.ndarray:
    """The documented rule for output steps that are multiples of 0.1 s: nearest 0.1 s [s]."""
    return np.rint(start_s / 0.1) * 0.1


@pytest.mark.parametrize(("step_s", "want"), [
    (0.1, (0.1, 1)), (1.0, (0.1, 10)), (0.3, (0.1, 3)), (15.0, (0.1, 150)),
    (60.0, (0.1, 600)), (3600.0, (0.1, 36_000)), (0.25, (0.25 / 3, 3)), (7.3, (0.1, 73)),
])
def test_placement_grid_is_a_tenth_of_a_second_for_multiples_of_it(step_s, want):
    placement_s, per_bin = placement_grid(step_s)
    assert per_bin == want[1]
    assert placement_s == pytest.approx(want[0], rel=1e-15)
    assert placement_s <= 0.1 + 1e-15


def test_placement_grid_refuses_a_step_that_is_not_positive():
    with pytest.raises(ValueError, match=r"step_s: expected a positive number of seconds, got -1"):
        placement_grid(-1.0)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("step_s", [0.1, 1.0, 60.0, 0.25])
@pytest.mark.parametrize("start_s", [120.0, 120.04, 157.3333, 0.0])  # on and off the grid
@pytest.mark.parametrize("duration_s", [150.0, 1000.0])  # within one period, cyclic (3.7 periods)
def test_one_job_gets_exactly_its_energy(method, step_s, start_s, duration_s):
    power_w, curve = cyclic_curve(duration_s)
    # by hand: whole profile periods plus the first samples of the next one
    period_j = float(np.sum(power_w * 7.3))
    cycles, rest_s = divmod(duration_s, 37 * 7.3)
    whole, part = divmod(rest_s, 7.3)
    total_j = cycles * period_j + float(np.sum(power_w[:int(whole)] * 7.3)) + part * power_w[
        int(whole)]
    n_bins = int(np.ceil((start_s + duration_s + 1.0) / step_s)) + 2
    got = job_energy_per_bin_j(np.array([start_s]), np.array([5.0]), curve, step_s=step_s,
                               n_bins=n_bins, method=method)
    assert got.sum() == pytest.approx(5 * total_j, rel=1e-9)
    assert got.min() >= 0.0
    # the power sits where the placed start puts it: nothing before the bin of the start
    assert not got[: int(np.floor(placed_by_hand(start_s) / step_s + 1e-9))].any()


@pytest.mark.parametrize("method", METHODS)
def test_job_cut_by_window_edges_gets_its_energy_inside_the_window(method):
    power_w, curve = cyclic_curve(1000.0)
    start_s, step_s = np.array([83.46]), 2.0  # placed at 83.5 s, running to 1083.5 s
    # window of bins 100 .. 349, i.e. 200 .. 700 s: the job covers it entirely
    got = job_energy_per_bin_j(start_s, np.array([3.0]), curve, step_s=step_s, n_bins=250,
                               first_bin=100, method=method)
    edges_s = 200.0 + np.arange(251) * step_s
    want = brute_force_bin_energy_j(edges_s, [83.5], [3.0], power_w, 7.3, 1000.0)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * want.max())
    # windows side by side give the run in one piece (streaming = in memory)
    whole = job_energy_per_bin_j(start_s, np.array([3.0]), curve, step_s=step_s, n_bins=600,
                                 method=method)
    pieces = np.concatenate([
        job_energy_per_bin_j(start_s, np.array([3.0]), curve, step_s=step_s, n_bins=n,
                             first_bin=b, method=method)
        for b, n in [(0, 100), (100, 250), (350, 250)]])
    np.testing.assert_allclose(pieces, whole, rtol=1e-13, atol=0)
    assert whole.sum() == pytest.approx(3 * curve.total_j, rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    jobs=st.integers(1, 80),
    step_s=st.sampled_from([0.1, 0.5, 1.0, 15.0, 60.0]),
    duration_s=st.sampled_from([0.35, 20.0, 150.0, 270.1, 1000.0, 2400.0]),
    first_bin=st.integers(0, 40),
    n_bins=st.integers(1, 300),
)
def test_random_groups_equal_the_exact_reference_at_the_placed_starts(
        seed, jobs, step_s, duration_s, first_bin, n_bins):
    rng = np.random.default_rng(seed)
    power_w, curve = cyclic_curve(duration_s, seed=seed % 1000)
    t0 = first_bin * step_s
    span_s = n_bins * step_s
    starts_s = rng.uniform(max(0.0, t0 - duration_s - span_s), t0 + 1.5 * span_s, jobs)
    if jobs > 20:  # many jobs sharing a start slot: the 2-D blocks of the numpy path
        starts_s[:20] = np.round(starts_s[:20], 1)
    starts_s = np.sort(starts_s)
    nodes = rng.integers(1, 65, jobs).astype(float)
    results = {m: job_energy_per_bin_j(starts_s, nodes, curve, step_s=step_s, n_bins=n_bins,
                                       first_bin=first_bin, method=m) for m in METHODS}
    placed = placed_by_hand(starts_s)
    edges_s = t0 + np.arange(n_bins + 1) * step_s
    live = (placed < edges_s[-1]) & (placed + duration_s > edges_s[0])
    want = np.diff(job_energy_at_edges(edges_s, placed[live], nodes[live], curve,
                                       method="numpy"))
    scale = max(want.max(), 1.0)
    for got in results.values():
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * scale)
    # the compiled loop and numpy add the same products in the same order
    if len(results) == 2:
        np.testing.assert_array_equal(results["numba"], results["numpy"])


@pytest.mark.parametrize("duration_s", [400.0, 2000.0])  # jobs of 40 and 2000 bins: every
def test_many_jobs_match_brute_force_on_every_numpy_batching(duration_s):  # numpy batching
    power_w, curve = cyclic_curve(duration_s, samples=500, step_s=1.3)
    rng = np.random.default_rng(11)
    starts_s = np.sort(rng.uniform(-duration_s, 3000.0, 700))
    nodes = rng.integers(1, 9, 700).astype(float)
    got = {m: job_energy_per_bin_j(starts_s, nodes, curve, step_s=1.0, n_bins=2_500,
                                   first_bin=10, method=m) for m in METHODS}
    want = brute_force_bin_energy_j(10.0 + np.arange(2_501), placed_by_hand(starts_s), nodes,
                                    power_w, 1.3, duration_s)
    np.testing.assert_allclose(got["numpy"], want, rtol=1e-9, atol=1e-9 * want.max())
    if "numba" in got:
        np.testing.assert_array_equal(got["numba"], got["numpy"])


def test_unknown_method_is_refused_per_bin():
    curve = CumulativeEnergy(np.array([0.0, 1.0]), np.array([0.0, 5.0]), 1.0)
    with pytest.raises(ValueError, match="expected 'auto', 'numba' or 'numpy', got 'fast'"):
        job_energy_per_bin_j(np.array([0.5]), np.array([1.0]), curve, step_s=1.0, n_bins=3,
                             method="fast")


COLOCATION = dict(start=pd.Timestamp("2025-03-03", tz="UTC"), progress=False, utilization=0.8,
                  seed=4)


def test_one_second_run_aggregates_to_the_one_minute_run():
    fine = facility("colocation-10mw", end="12h", freq="1s", **COLOCATION).power
    coarse = facility("colocation-10mw", end="12h", freq="1min", **COLOCATION).power
    # both place every job at the same 0.1-s slot: energy per minute agrees to float rounding
    fine_kwh = fine["it_kw"].to_numpy().reshape(-1, 60).sum(axis=1) / 3600
    coarse_kwh = coarse["it_kw"].to_numpy() * 60 / 3600
    assert coarse["busy_nodes"].max() > 100  # many jobs ran
    np.testing.assert_allclose(fine_kwh, coarse_kwh, rtol=1e-9)


def test_facility_gives_the_same_power_on_either_path_and_per_seed(monkeypatch):
    kw = dict(end="2D", freq="1min", **COLOCATION)
    compiled = facility("colocation-10mw", **kw).power
    again = facility("colocation-10mw", **kw).power
    pd.testing.assert_frame_equal(again, compiled, check_exact=True)
    from aiload.facility import jobpower

    monkeypatch.setattr(summation, "_place_numba", lambda: None)  # numpy everywhere
    monkeypatch.setattr(jobpower, "numba_loaded", lambda: False)  # no fused compiled loop
    plain = facility("colocation-10mw", **kw).power
    pd.testing.assert_frame_equal(plain, compiled, check_exact=True)


def test_streamed_windows_give_the_in_memory_series(tmp_path, monkeypatch):
    from aiload.facility import model, read_facility

    kw = dict(end="3h", freq="1s", **COLOCATION)
    whole = facility("colocation-10mw", **kw).power
    # windows of 997 s: hundreds of jobs run across window edges
    monkeypatch.setattr(model, "STREAM_WINDOW_BINS", 997)
    facility("colocation-10mw", stream_to=tmp_path / "s.parquet", **kw)
    streamed = read_facility(tmp_path / "s.parquet").power
    assert whole["busy_nodes"].max() > 100
    np.testing.assert_allclose(streamed["it_kw"], whole["it_kw"], rtol=1e-12)


def test_jobs_summed_in_threads_give_the_same_bits(monkeypatch):
    """Threads split the output intervals and each adds every job in the same order, so the
    series is bit-for-bit the single-threaded one."""
    from aiload.facility import jobpower, kernels

    if not summation.numba_available():  # builds the compiled loops: threads need them
        pytest.skip("numba is not installed: jobs are summed in one thread")
    pools = []

    class CountingPool(kernels.ThreadPoolExecutor):
        def __init__(self, *args, **kwargs):
            pools.append(args)
            super().__init__(*args, **kwargs)

    # the planned adds and the fused loop both split the intervals in kernels.split_bins
    monkeypatch.setattr(kernels, "ThreadPoolExecutor", CountingPool)
    monkeypatch.setattr(jobpower, "OVERLAP_MIN_BINS", 10**12)  # summed after SimPy, in threads
    kw = dict(end="1D", freq="1s", **COLOCATION)
    monkeypatch.setattr(jobpower, "SUM_THREADS", 2)
    threaded = facility("colocation-10mw", **kw).power
    assert pools, "the threaded path was not taken"
    monkeypatch.setattr(jobpower, "SUM_THREADS", 1)
    single = facility("colocation-10mw", **kw).power
    pd.testing.assert_frame_equal(threaded, single, check_exact=True)


def test_summing_behind_the_simpy_clock_gives_the_same_bits(monkeypatch):
    """With numba loaded the in-memory 1-s run sums slices of the output in a second thread
    while SimPy runs; the series must be bit-for-bit the one summed after the schedule."""
    from aiload.facility import engine, jobpower, model

    if not summation.numba_available():
        pytest.skip("numba is not installed: no summing behind the clock")
    calls = []
    real = engine.schedule_jobs

    def counting(*args, on_checkpoint=None, **kwargs):
        def seen(t, starts):
            calls.append(t)
            on_checkpoint(t, starts)
        return real(*args, on_checkpoint=seen if on_checkpoint else None, **kwargs)

    monkeypatch.setattr(model, "schedule_jobs", counting)
    monkeypatch.setattr(jobpower, "SUM_THREADS", 2)
    monkeypatch.setattr(jobpower, "OVERLAP_MIN_BINS", 1 << 16)  # a day at 1 s is enough here
    kw = dict(end="1D", freq="1s", **COLOCATION)
    behind = facility("colocation-10mw", **kw).power
    assert len(calls) == jobpower.OVERLAP_SLICES - 1, "the slices were not summed behind the clock"
    monkeypatch.setattr(jobpower, "OVERLAP_MIN_BINS", 10**12)
    calls.clear()
    after = facility("colocation-10mw", **kw).power
    assert not calls
    pd.testing.assert_frame_equal(behind, after, check_exact=True)


def test_an_error_behind_the_clock_reaches_the_caller_and_no_thread_is_left(monkeypatch):
    import threading

    from aiload.facility import jobpower

    if not summation.numba_available():
        pytest.skip("numba is not installed: no summing behind the clock")

    def broken(self, out, start_s, first_bin, *, threads=1):
        raise RuntimeError(f"slice from bin {first_bin} failed")

    monkeypatch.setattr(summation.RunSums, "add", broken)
    monkeypatch.setattr(jobpower, "SUM_THREADS", 2)
    monkeypatch.setattr(jobpower, "OVERLAP_MIN_BINS", 1 << 16)  # summed behind the clock
    with pytest.raises(RuntimeError, match="slice from bin 0 failed"):
        facility("colocation-10mw", end="1D", freq="1s", **COLOCATION)
    # the executor's worker threads are gone (names "ThreadPoolExecutor-N_M")
    assert not [t.name for t in threading.enumerate() if t.name.startswith("ThreadPool")]


def test_several_curves_are_the_sum_of_each_curve_alone(monkeypatch):
    """Jobs of three curves in one call: each curve's jobs alone give their own energy (a
    second computation), the call adds them curve by curve in input order, and any number of
    threads gives the same bits."""
    rng = np.random.default_rng(5)
    curves = [cyclic_curve(d, seed=i)[1] for i, d in enumerate((150.0, 2400.0, 20.0))]
    which = rng.integers(0, 3, 500)
    starts_s = rng.uniform(-2400.0, 6000.0, 500)
    nodes = rng.integers(1, 33, 500).astype(float)
    kw = dict(step_s=1.0, n_bins=5000, first_bin=30)
    alone = [summation.job_energy_per_bin_j(starts_s[which == c], nodes[which == c], curve,
                                            method="numpy", **kw)
             for c, curve in enumerate(curves)]
    monkeypatch.setattr(summation, "_THREAD_MIN_VALUES", 0)
    for method in METHODS:
        got = [summation.jobs_energy_per_bin_j(starts_s, nodes, which, curves, method=method,
                                               threads=threads, **kw) for threads in (1, 2, 3)]
        np.testing.assert_allclose(got[0], alone[0] + alone[1] + alone[2], rtol=1e-12,
                                   atol=1e-9 * got[0].max())
        for other in got[1:]:
            np.testing.assert_array_equal(other, got[0])
    # a job whose curve index is off the list is refused
    with pytest.raises(ValueError, match="one index into the 3 curves per job"):
        summation.jobs_energy_per_bin_j(starts_s[:2], nodes[:2], np.array([0, 3]), curves,
                                        **kw)


@pytest.mark.parametrize("step_s", [1.0, 60.0, 0.1])
def test_kernel_cache_gives_the_same_bits_in_every_window(step_s):
    """Rows kept across windows (a job from an earlier window reads its row from k0) give
    exactly the figures computed without a cache, window by window, on either path."""
    rng = np.random.default_rng(9)
    curves = [cyclic_curve(d, seed=i)[1] for i, d in enumerate((150.0, 2400.0, 20.0))]
    which = rng.integers(0, 3, 400)
    starts_s = rng.uniform(0.0, 3000.0 * step_s, 400)
    nodes = rng.integers(1, 33, 400).astype(float)
    for method in METHODS:
        kernels = summation.KernelCache(curves, step_s)
        for first_bin, n_bins in ((0, 700), (700, 1300), (2000, 1500)):
            kw = dict(step_s=step_s, n_bins=n_bins, first_bin=first_bin, method=method)
            cached = summation.jobs_energy_per_bin_j(starts_s, nodes, which, curves,
                                                     kernels=kernels, **kw)
            plain = summation.jobs_energy_per_bin_j(starts_s, nodes, which, curves, **kw)
            np.testing.assert_array_equal(cached, plain)
        assert 0 < kernels.table.size <= summation.KernelCache.bound_values(curves, step_s, which)
    with pytest.raises(ValueError, match="built for other curves or another step_s"):
        summation.jobs_energy_per_bin_j(starts_s, nodes, which, curves, step_s=2 * step_s,
                                        n_bins=10, kernels=kernels)


@pytest.mark.parametrize("step_s", [1.0, 60.0, 0.1])
def test_run_sums_give_the_planned_adds_bit_for_bit(step_s):
    """RunSums fuses the live-job filter, the placement and the adds into one compiled loop;
    it must give exactly what the planned adds give for the same jobs, window by window, with
    any thread count, and leave out jobs not started (inf)."""
    if not summation.numba_available():
        pytest.skip("numba is not installed")
    rng = np.random.default_rng(12)
    curves = [cyclic_curve(d, seed=i)[1] for i, d in enumerate((150.0, 2400.0, 20.0, 9.0))]
    n = 600
    which = rng.integers(0, 3, n)  # curve 3 is never used: its rows are not built
    starts_s = np.sort(rng.uniform(0.0, 4000.0 * step_s, n))
    starts_s[rng.random(n) < 0.1] = np.inf
    duration_s = np.array([c.duration_s for c in curves])[which]
    nodes = rng.integers(1, 33, n).astype(float)
    assert summation.RunSums.fits(curves, step_s, which, 1 << 24)
    # every slot's row up front (summing behind the clock), or only the rows the starts need
    every = summation.RunSums(duration_s, nodes, which, summation.KernelCache(curves, step_s))
    needed = summation.RunSums(duration_s, nodes, which, summation.KernelCache(curves, step_s))
    every.prepare()
    needed.prepare(starts_s)
    assert needed.kernels.table.size <= every.kernels.table.size
    for w0, w1 in ((0, 1000), (1000, 2600), (2600, 4100)):
        t0, t1 = w0 * step_s, w1 * step_s
        live = (starts_s < t1 + step_s) & (starts_s + duration_s > t0 - step_s)
        want = {m: summation.jobs_energy_per_bin_j(starts_s[live], nodes[live], which[live],
                                                   curves, step_s=step_s, n_bins=w1 - w0,
                                                   first_bin=w0, method=m) for m in METHODS}
        for sums in (every, needed):
            for threads in (1, 2, 3):
                got = sums.add(np.zeros(w1 - w0), starts_s, w0, threads=threads)
                for plain in want.values():
                    np.testing.assert_array_equal(got, plain)
    with pytest.raises(ValueError, match="contiguous 1-D float64"):
        every.add(np.zeros((2, 5))[:, 0], starts_s, 0)
    # rows built for some starts do not serve others: refused, never a wrong sum
    few = summation.RunSums(duration_s, nodes, which, summation.KernelCache(curves, step_s))
    few.prepare(np.where(np.arange(n) == 0, starts_s, np.inf))
    with pytest.raises(ValueError, match="kernel row these starts need was not built"):
        few.add(np.zeros(4100), starts_s, 0)


def test_a_placement_adds_into_an_output_of_its_length_only():
    curve = CumulativeEnergy(np.array([0.0, 1.0]), np.array([0.0, 5.0]), 1.0)
    plan = summation.plan_jobs_energy(np.array([0.5]), np.array([2.0]), np.array([0]), [curve],
                                      step_s=1.0, n_bins=3)
    with pytest.raises(ValueError, match=r"expected float64 of shape \(3,\), got float64 of "
                                         r"shape \(4,\)"):
        plan.add_to(np.zeros(4))
    out = plan.add_to(np.zeros(3))
    np.testing.assert_allclose(out, [5.0, 5.0, 0.0])  # 2 nodes x 5 W over [0.5, 1.5) s


def test_ramp_is_the_integral_of_the_boxes_in_every_bin():
    rng = np.random.default_rng(7)
    edges = np.arange(0.0, 101.0, 2.5)
    start = rng.uniform(-10.0, 110.0, 300)
    end = start + rng.uniform(0.0, 30.0, 300)
    weight = rng.integers(1, 9, 300).astype(float)
    # overlap of each box with each bin, by hand
    lo, hi = edges[:-1], edges[1:]
    overlap = np.clip(np.minimum(end[:, None], hi) - np.maximum(start[:, None], lo), 0.0, None)
    want = (weight[:, None] * overlap).sum(axis=0)
    got = np.diff(ramp_at_edges(edges, start, end, weight))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("step_s", [2.5, 1.0, 0.1, 60.0])
def test_box_seconds_per_bin_is_the_overlap_of_each_box_with_each_bin(step_s):
    rng = np.random.default_rng(8)
    n_bins = 40
    span = n_bins * step_s
    start = rng.uniform(-0.2 * span, 1.1 * span, 400)
    end = start + rng.uniform(0.0, 0.4 * span, 400)
    start[:20] = np.round(start[:20] / step_s) * step_s  # ends exactly on bin edges
    end[:20] = start[:20] + step_s * rng.integers(0, 5, 20)
    end[20:25] = start[20:25] - 1.0  # empty boxes add nothing
    weight = rng.integers(1, 9, 400).astype(float)
    lo = np.arange(n_bins) * step_s
    overlap = np.clip(np.minimum(end[:, None], lo + step_s) - np.maximum(start[:, None], lo),
                      0.0, None)
    want = (weight[:, None] * overlap).sum(axis=0)  # by hand, box by box
    got = summation.box_seconds_per_bin(start, end, weight, step_s=step_s, n_bins=n_bins)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-9 * step_s)
    # the same figures as the cumulative ramp's differences
    ramp = np.diff(ramp_at_edges(np.arange(n_bins + 1) * step_s, start[25:], end[25:],
                                 weight[25:]))
    np.testing.assert_allclose(summation.box_seconds_per_bin(
        start[25:], end[25:], weight[25:], step_s=step_s, n_bins=n_bins), ramp, rtol=1e-9,
        atol=1e-9 * step_s)
    assert summation.box_seconds_per_bin(start, end, weight, step_s=step_s, n_bins=0).size == 0


@pytest.mark.parametrize("method", METHODS)
def test_jobs_outside_the_edges_add_nothing_or_their_whole_energy(method):
    curve = CumulativeEnergy(np.array([0.0, 1.0, 2.0]), np.array([0.0, 5.0, 10.0]), 2.0)
    edges = np.arange(5.0)
    inside = job_energy_at_edges(edges, np.array([0.5]), np.array([1.0]), curve, method=method)
    # a job after the last edge adds nothing; one that ended before the first edge adds its
    # whole energy (10 J) at every edge
    more = job_energy_at_edges(edges, np.array([-7.0, 0.5, 10.0]), np.array([1.0, 1.0, 1.0]),
                               curve, method=method)
    np.testing.assert_allclose(more, inside + 10.0, rtol=1e-12)


def test_summation_entry_points_refuse_bad_shapes_before_any_add():
    """The compiled loops read without bounds checks: mismatched arrays are refused with the
    shapes received, never read past their ends."""
    curve = CumulativeEnergy(np.array([0.0, 1.0]), np.array([0.0, 5.0]), 1.0)
    with pytest.raises(ValueError, match=r"one length .* got shapes \(3,\), \(2,\) and \(3,\)"):
        summation.jobs_energy_per_bin_j(np.zeros(3), np.ones(2), np.zeros(3, int), [curve],
                                        step_s=1.0, n_bins=4)
    plan = summation.plan_jobs_energy(np.array([0.5]), np.array([2.0]), np.array([0]), [curve],
                                      step_s=1.0, n_bins=6)
    with pytest.raises(ValueError, match="writeable, contiguous 1-D float64"):
        plan.add_to(np.zeros(12)[::2])  # a strided view: the compiled adds need contiguity
    with pytest.raises(ValueError, match=r"step_s > 0 \[s\] .* got step_s=0.0"):
        summation.box_seconds_per_bin(np.zeros(2), np.ones(2), 1.0, step_s=0.0, n_bins=3)
    with pytest.raises(ValueError, match=r"one shape .* got \(2,\) and \(3,\)"):
        summation.box_seconds_per_bin(np.zeros(2), np.ones(3), 1.0, step_s=1.0, n_bins=3)
    if not summation.numba_available():
        return
    kernels = summation.KernelCache([curve], 1.0)
    with pytest.raises(ValueError, match=r"one length each .* shapes \(2,\), \(3,\) and \(2,\)"):
        summation.RunSums(np.ones(2), np.ones(3), np.zeros(2, int), kernels)
    with pytest.raises(ValueError, match=r"index the 1 curves .* got values 0 … 1"):
        summation.RunSums(np.ones(2), np.ones(2), np.array([0, 1]), kernels)
    sums = summation.RunSums(np.ones(2), np.ones(2), np.zeros(2, int), kernels)
    with pytest.raises(ValueError, match=r"one start per job \(2, .*got shape \(1,\)"):
        sums.add(np.zeros(5), np.array([0.5]), 0)
    out = np.zeros(5)
    sums.add(out, np.array([0.5, np.inf]), 0)  # the second job never started
    np.testing.assert_allclose(out, [2.5, 2.5, 0.0, 0.0, 0.0])  # 5 W over [0.5, 1.5) s
