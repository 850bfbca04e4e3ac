"""Exact summation of job power: compiled and numpy paths against a brute-force integral."""

from __future__ import annotations

import numpy as np
import pytest

from aiload.facility.summation import CumulativeEnergy, job_energy_at_edges, numba_available

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


@pytest.mark.skipif(not numba_available(), reason="numba not installed")
def test_facility_gives_the_same_power_on_either_path(monkeypatch):
    import pandas as pd

    from aiload.facility import facility
    from aiload.facility import summation

    kw = dict(start=pd.Timestamp("2025-03-03", tz="UTC"), end="2D", freq="1min", progress=False,
              utilization=0.8)
    monkeypatch.setattr(summation, "AUTO_NUMBA_MIN_POINTS", 10**12)  # numpy everywhere
    plain = facility("colocation-10mw", **kw).power
    monkeypatch.setattr(summation, "AUTO_NUMBA_MIN_POINTS", 0)  # compiled everywhere
    compiled = facility("colocation-10mw", **kw).power
    # both sum cumulative energies of order 1e10 J, then difference them: rounding ~1e-12
    np.testing.assert_allclose(compiled["it_kw"], plain["it_kw"], rtol=1e-9)
    pd.testing.assert_series_equal(compiled["busy_nodes"], plain["busy_nodes"])
