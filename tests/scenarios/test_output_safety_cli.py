"""`aiload run -o` and `aiload sweep -o`: nothing aiload did not write is lost; kills leave
no debris and no worker processes; a damaged task file is named and recomputed."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aiload.outputs import MARKER
from scenarios.cli import main
from scenarios.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[2]
END = "2025-01-01T06:00:00Z"
SCENARIO = textwrap.dedent("""\
    name = "mine"
    [facility]
    preset = "inference-1mw"
    start = 2025-01-01T00:00:00Z
    end = 2025-01-01T06:00:00Z
    freq = "15min"
""")


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


@pytest.fixture
def no_simulation(monkeypatch):
    def must_not_run(*args, **kwargs):
        raise AssertionError("the facility model ran before the output path was checked")

    monkeypatch.setattr("scenarios.studies.facility", must_not_run)


@pytest.mark.parametrize("case", ["project_folder", "scenario_file", "cwd", "missing_parent"])
def test_run_refuses_before_running(tmp_path, monkeypatch, capsys, no_simulation, case):
    project = tmp_path / "project"
    project.mkdir()
    scenario = project / "mine.toml"
    scenario.write_text(SCENARIO)
    (project / "notes.md").write_text("my notes")
    monkeypatch.chdir(project)
    out, message = {
        "project_folder": (project, "is the current folder or holds it"),
        "scenario_file": (scenario, "is a file, not a folder"),
        "cwd": (".", "is the current folder or holds it"),
        "missing_parent": (tmp_path / "nowhere" / "out", "does not exist; create it first"),
    }[case]
    before = _tree(tmp_path)
    assert main(["run", str(scenario), "-o", str(out), "-q"]) == 2
    assert message in capsys.readouterr().err
    assert _tree(tmp_path) == before


def test_run_into_a_folder_holding_the_scenario_is_refused(tmp_path, capsys, no_simulation):
    project = tmp_path / "project"
    project.mkdir()
    (project / "mine.toml").write_text(SCENARIO)
    assert main(["run", str(project / "mine.toml"), "-o", str(project), "-q"]) == 2
    assert "holds the scenario file" in capsys.readouterr().err
    # --overwrite does not change that: the scenario must not sit among the outputs
    assert main(["run", str(project / "mine.toml"), "-o", str(project), "-q", "--overwrite"]) == 2
    assert _tree(project) == {"mine.toml": SCENARIO.encode()}


def test_run_overwrite_keeps_the_users_files(tmp_path, capsys, facility_fn):
    scenario = tmp_path / "mine.toml"
    scenario.write_text(SCENARIO)
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "notes.md").write_text("my notes")
    (folder / "metrics.csv").write_text("an older hand-made table")
    assert main(["run", str(scenario), "-o", str(folder), "-q"]) == 2
    assert "not an aiload output" in capsys.readouterr().err
    assert main(["run", str(scenario), "-o", str(folder), "-q", "--overwrite"]) == 0
    assert (folder / "notes.md").read_text() == "my notes"
    table = pd.read_csv(folder / "metrics.csv")
    assert "metric" in table and len(table) > 5  # aiload's file of that name replaced it
    # a second run needs no --overwrite: the folder is now an aiload output
    assert main(["run", str(scenario), "-o", str(folder), "-q",
                 "--set", "outputs.report=false"]) == 0
    names = {p.name for p in folder.iterdir()}
    assert "report.html" not in names  # the first run's file, not written again, is gone
    assert {"notes.md", MARKER, "facility.parquet", "summary.json"} <= names


def test_run_default_output_folder_is_created(tmp_path, monkeypatch, facility_fn):
    scenario = tmp_path / "mine.toml"
    scenario.write_text(SCENARIO)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert main(["run", str(scenario), "-q", "--set", "outputs.report=false"]) == 0
    assert (work / "aiload-out" / "mine" / "summary.json").is_file()


_KILL_IN_WRITE = textwrap.dedent("""
    import sys, time
    import scenarios.report
    from scenarios.cli import main

    def slow_render(*args, **kwargs):
        print("writing", flush=True)
        time.sleep(60)

    scenarios.report.render = slow_render
    sys.exit(main(["run", sys.argv[1], "-o", sys.argv[2], "-q"]))
""")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_run_stopped_while_writing_leaves_the_earlier_output(tmp_path, facility_fn, signum):
    scenario = tmp_path / "mine.toml"
    scenario.write_text(SCENARIO)
    out = tmp_path / "out"
    assert main(["run", str(scenario), "-o", str(out), "-q", "--set", "outputs.report=false"]) == 0
    before = _tree(out)
    script = tmp_path / "kill.py"
    script.write_text(_KILL_IN_WRITE)
    proc = subprocess.Popen([sys.executable, str(script), str(scenario), str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "writing", proc.stderr.read()
    proc.send_signal(signum)
    assert proc.wait(timeout=60) == 128 + signum
    assert f"stopped by {signal.Signals(signum).name}" in proc.stderr.read()
    assert _tree(out) == before  # the staging folder and its files are gone
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kill.py", "mine.toml", "out"]


# ------------------------------------------------------------------ sweeps


def test_sweep_refuses_a_users_folder(tmp_path, no_simulation):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "data.csv").write_text("1,2")
    with pytest.raises(Exception, match=r"not an aiload output"):
        run_sweep("inference-1mw", folder, overrides={"facility.end": END}, workers=0,
                  progress=False)
    assert _tree(folder) == {"data.csv": b"1,2"}


def test_truncated_replicate_is_named_and_recomputed(tmp_path, capsys, facility_fn):
    kw = dict(sets={"facility.utilization": [0.4]}, overrides={"facility.end": END},
              replicates=2, workers=0, progress=False)
    first = run_sweep("inference-1mw", tmp_path / "sw", **kw)
    task = tmp_path / "sw" / "cases" / "case-000" / "rep-0001.parquet"
    data = task.read_bytes()
    task.write_bytes(data[: len(data) // 2])  # a copy cut short, a full disk
    again = run_sweep("inference-1mw", tmp_path / "sw", **kw)
    err = capsys.readouterr().err
    assert f"{task} is damaged (not a readable Parquet file" in err and "computing it again" in err
    assert again.computed == 1
    # the same seed gives the same replicate: the bands equal the first sweep's
    pd.testing.assert_frame_equal(again.bands, first.bands)
    direct = facility_fn("inference-1mw", start=pd.Timestamp("2025-01-01T00:00:00Z"),
                         end=pd.Timestamp(END), freq="1min", seed=1, utilization=0.4,
                         progress=False).power["facility_kw"]
    np.testing.assert_array_equal(pd.read_parquet(task)["facility_kw"].to_numpy(),
                                  direct.to_numpy())


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_killed_sweep_leaves_no_worker_processes(tmp_path, signum):
    psutil = pytest.importorskip("psutil")
    cmd = [sys.executable, "-m", "scenarios.cli", "sweep", "inference-1mw", "-q",
           "--set", "facility.utilization=0.2,0.4,0.6,0.8", "--replicates", "2",
           "--set", "facility.end=2025-03-01T00:00:00Z", "--workers", "2",
           "-o", str(tmp_path / "sw")]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    parent = psutil.Process(proc.pid)
    deadline = time.monotonic() + 120
    workers = []
    while time.monotonic() < deadline and proc.poll() is None:
        workers = parent.children(recursive=True)
        if len(workers) >= 2:
            break
        time.sleep(0.1)
    assert len(workers) >= 2, f"no worker processes seen: {proc.stderr.read() if proc.poll() is not None else ''}"
    time.sleep(0.5)
    workers = parent.children(recursive=True)
    proc.send_signal(signum)
    proc.wait(timeout=60)
    gone, alive = psutil.wait_procs(workers, timeout=20)

    def describe(p):  # what a left-over process was, for a failure that is hard to reproduce
        try:
            return f"{p.pid} {p.status()} {' '.join(p.cmdline())[:160]!r}"
        except psutil.Error as exc:
            return f"{p.pid} ({type(exc).__name__})"

    left = [describe(p) for p in alive]
    for p in alive:
        p.kill()
    assert alive == [], (f"worker processes left running 20 s after the sweep got signal "
                         f"{signum}: {left}; all seen: {[describe(p) for p in workers]}")
    if signum == signal.SIGTERM:
        assert proc.returncode == 128 + signum
        assert not [p for p in (tmp_path / "sw").rglob("*") if p.name.endswith(".tmp")]


# The client is SIGKILLed right after its workers started, each fork made 1 s late (a slow
# fork) so that both nannies' parent-alive pipes exist before the first fork. With
# Dask alone each forked worker then holds the other's write end, and neither ever sees its
# client die: the rare failure of the test above (5 of 20 unloaded tries before the fix).
KILLED_AFTER_LATE_FORKS = textwrap.dedent("""\
    import multiprocessing.popen_fork as popen_fork, os, signal, time
    from scenarios.sweep import local_cluster

    launch = popen_fork.Popen._launch

    def late(self, process_obj):
        time.sleep(1.0)
        return launch(self, process_obj)

    popen_fork.Popen._launch = late
    cluster = local_cluster(2, start_method="fork")
    print(*[nanny.pid for nanny in cluster.workers.values()], flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork start method")
def test_workers_forked_together_exit_when_their_client_is_killed(tmp_path):
    psutil = pytest.importorskip("psutil")
    with open(tmp_path / "stderr.txt", "w") as err:
        proc = subprocess.Popen([sys.executable, "-c", KILLED_AFTER_LATE_FORKS], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=err, text=True)
    with proc.stdout:  # not communicate(): a left-over worker holds this pipe open
        line = proc.stdout.readline()
    proc.wait(timeout=120)
    pids = [int(pid) for pid in line.split()]
    assert proc.returncode == -signal.SIGKILL and len(pids) == 2, (
        f"{proc.returncode} {line!r} {(tmp_path / 'stderr.txt').read_text()[-2000:]}")
    workers = []
    for pid in pids:
        try:
            workers.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            pass  # already gone
    _, alive = psutil.wait_procs(workers, timeout=20)
    left = [p.pid for p in alive]
    for p in alive:
        p.kill()
    assert alive == [], f"worker processes {left} of {pids} left running 20 s after the kill"


def test_output_of_an_aiload_without_markers_is_recognised(tmp_path, capsys, no_simulation,
                                                           monkeypatch):
    from scenarios.runner import _earlier_run

    old = tmp_path / "out"
    old.mkdir()
    (old / "summary.json").write_text('{"aiload_version": "0.1.0"}')
    (old / "facility.parquet").write_bytes(b"PAR1")
    (old / "grid_timeseries_vm_pu.parquet").write_bytes(b"PAR1")
    assert _earlier_run(old) == ["facility.parquet", "grid_timeseries_vm_pu.parquet",
                                 "summary.json"]
    # one file that is not aiload's makes it the user's folder
    (old / "notes.md").write_text("mine")
    assert _earlier_run(old) is None
    assert main(["run", "inference-1mw", "-o", str(old), "-q"]) == 2
    assert "not an aiload output" in capsys.readouterr().err
    (old / "notes.md").unlink()
    # a summary.json that is not aiload's is not enough either
    (old / "summary.json").write_text('{"mine": 1}')
    assert _earlier_run(old) is None
