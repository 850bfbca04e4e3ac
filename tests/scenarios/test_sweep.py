"""`aiload sweep`: bands and tables from independent facility runs; kill and resume."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aiload.errors import InputError
from scenarios.sweep import run_sweep

END = "2025-01-01T12:00:00Z"
SETS = {"facility.utilization": [0.3, 0.7]}
ROOT = Path(__file__).resolve().parents[2]


def test_bands_are_percentiles_of_independent_runs(tmp_path, facility_fn):
    from distributed import LocalCluster

    # an existing cluster given by address (--scheduler); threads keep its start-up cheap
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                      dashboard_address=None) as cluster:
        res = run_sweep("colocation-10mw", tmp_path / "sw", sets={"facility.utilization": [0.5]},
                        overrides={"facility.end": END}, replicates=3,
                        scheduler=cluster.scheduler_address, progress=False)
    runs = [facility_fn("colocation-10mw", start=pd.Timestamp("2025-01-01T00:00:00Z"),
                        end=pd.Timestamp(END), freq="1min", seed=k, utilization=0.5,
                        progress=False).power["facility_kw"] for k in range(3)]
    stacked = np.column_stack([r.to_numpy() for r in runs])
    np.testing.assert_allclose(res.bands[("case-000", "p50")].to_numpy(),
                               np.median(stacked, axis=1), rtol=1e-12)
    np.testing.assert_allclose(res.bands[("case-000", "p10")].to_numpy(),
                               np.percentile(stacked, 10, axis=1), rtol=1e-12)
    assert res.computed == 3
    # identifying columns, the swept value, then the percentiles in order
    cols = list(res.comparison.columns)
    assert cols[:2] == ["case_id", "group"] and cols[-3:] == ["p10", "p50", "p90"]
    assert cols.index("facility.utilization") < cols.index("p10")
    page = (tmp_path / "sw" / "report.html").read_text()
    assert page.count('<img src="data:image/png;base64,') >= 2 and "<script" not in page
    # a second call finds everything on disk
    again = run_sweep("colocation-10mw", tmp_path / "sw", sets={"facility.utilization": [0.5]},
                      overrides={"facility.end": END}, replicates=3, workers=0, progress=False)
    assert again.computed == 0
    pd.testing.assert_frame_equal(again.comparison, res.comparison)


def test_other_sweep_in_folder_is_refused(tmp_path, facility_fn):
    run_sweep("colocation-10mw", tmp_path / "sw", sets={"facility.utilization": [0.5]},
              overrides={"facility.end": END}, replicates=1, workers=0, progress=False)
    with pytest.raises(InputError, match=r"holds a different sweep"):
        run_sweep("colocation-10mw", tmp_path / "sw", sets={"facility.utilization": [0.6]},
                  overrides={"facility.end": END}, replicates=1, workers=0, progress=False)


def test_only_facility_fields_can_be_swept(tmp_path):
    with pytest.raises(InputError, match=r"only facility fields can be swept"):
        run_sweep("colocation-10mw", tmp_path / "sw", sets={"grid.bus": [1, 2]}, workers=0,
                  progress=False)


def test_killed_sweep_resumes_to_the_same_result(tmp_path, facility_fn):
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    cmd = [sys.executable, "-m", "scenarios.cli", "sweep", "colocation-10mw", "-q", "--workers", "0",
           "--set", "facility.utilization=0.3,0.7", "--set", f"facility.end={END}",
           "--replicates", "2", "-o", str(killed)]
    proc = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline and not list(killed.glob("cases/*/rep-*.parquet")):
            assert proc.poll() is None, "the sweep ended before it could be interrupted"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    done = len(list(killed.glob("cases/*/rep-*.parquet")))
    assert 1 <= done < 4, f"expected an interrupted sweep, found {done} of 4 tasks done"
    assert not (killed / "bands.parquet").exists()

    resumed = run_sweep("colocation-10mw", killed, sets={**SETS, "facility.end": [END]},
                        replicates=2, workers=2, progress=False)
    assert resumed.computed == 4 - done
    whole = run_sweep("colocation-10mw", clean, sets={**SETS, "facility.end": [END]},
                      replicates=2, workers=0, progress=False)
    pd.testing.assert_frame_equal(resumed.bands, whole.bands)
    pd.testing.assert_frame_equal(resumed.comparison, whole.comparison)
    assert not list(killed.rglob("*.partial"))


def _allocator_env() -> dict:
    return {k: os.environ.get(k) for k in ("MALLOC_TRIM_THRESHOLD_", "OMP_NUM_THREADS",
                                           "OPENBLAS_NUM_THREADS")}


def test_local_cluster_workers_keep_glibcs_dynamic_allocator():
    """Dask's default MALLOC_TRIM_THRESHOLD_ pins glibc's mmap threshold (page faults in every
    task); spawned sweep workers must start without it but with one numeric thread each."""
    from distributed import Client

    from scenarios.sweep import local_cluster

    with local_cluster(1, start_method="spawn") as cluster, Client(cluster) as client:
        envs = list(client.run(_allocator_env).values())
    assert envs == [{"MALLOC_TRIM_THRESHOLD_": None, "OMP_NUM_THREADS": "1",
                     "OPENBLAS_NUM_THREADS": "1"}]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers are forked on Linux only")
def test_local_workers_are_forked_with_aiload_already_imported():
    # a spawned worker re-imports the scientific stack (~2.5 s) before its first task; a forked
    # one starts from this process, aiload imported (by this test module) and caches warm
    from distributed import Client

    import aiload.facility  # noqa: F401
    from scenarios.sweep import local_cluster

    # a lambda travels by value: unpickling it imports nothing (a module-level function would
    # import this test module, and with it aiload, in the worker)
    probe = lambda: ("aiload.facility" in sys.modules, os.getppid())  # noqa: E731
    with local_cluster(1) as cluster, Client(cluster) as client:
        (imported, parent), = client.run(probe).values()
    assert imported and parent == os.getpid()


def test_unknown_start_method_is_refused_before_anything_runs(tmp_path):
    expected = r"start_method: expected one of fork, spawn, forkserver .*got 'threads'"
    with pytest.raises(InputError, match=expected):
        run_sweep("colocation-10mw", tmp_path / "sw", replicates=1, start_method="threads",
                  progress=False)
    assert not (tmp_path / "sw").exists()
    from scenarios.sweep import local_cluster

    with pytest.raises(InputError, match=r"got 'threads'"):
        local_cluster(1, start_method="threads")


def test_cli_spawns_workers_when_asked(tmp_path):
    # --start-method reaches the local cluster: spawned workers give the same result
    out = tmp_path / "sw"
    cmd = [sys.executable, "-m", "scenarios.cli", "sweep", "colocation-10mw", "-q",
           "--workers", "1", "--start-method", "spawn", "--set", "facility.utilization=0.5",
           "--set", f"facility.end={END}", "--replicates", "1", "-o", str(out)]
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, timeout=300)
    run_sweep("colocation-10mw", tmp_path / "serial",
              sets={"facility.utilization": [0.5], "facility.end": [END]},
              replicates=1, workers=0, progress=False)
    got = pd.read_parquet(out / "cases" / "case-000" / "rep-0000.parquet")
    want = pd.read_parquet(tmp_path / "serial" / "cases" / "case-000" / "rep-0000.parquet")
    pd.testing.assert_frame_equal(got, want)


def test_start_method_reaches_the_local_cluster(tmp_path, monkeypatch):
    import scenarios.sweep as sweep

    seen = []
    real = sweep.local_cluster

    def recording(workers, *, start_method=None):
        seen.append(start_method)
        return real(workers, start_method=start_method)

    monkeypatch.setattr(sweep, "local_cluster", recording)
    run_sweep("colocation-10mw", tmp_path / "sw", sets={"facility.end": [END]}, replicates=1,
              workers=1, start_method="spawn", progress=False)
    assert seen == ["spawn"]
